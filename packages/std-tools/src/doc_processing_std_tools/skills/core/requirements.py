"""What tools a skill needs, as list_skills reports it in its top-level ``requires``.

The Agent Skills specification has no field for this yet; this stack reads two places:

- the frontmatter ``metadata`` key ``requires-tools``: tool names separated by spaces,
  each ``tool`` (any server may have it) or ``server:tool`` (that server must);
- the skill's ``agents/openai.yaml`` (the file other clients read for a skill's
  interface and dependencies): every entry of ``dependencies.tools`` whose ``type`` is
  ``mcp`` names, in ``value``, an MCP server the skill needs.

`requirements` answers ``{"tools": [...], "servers": [...]}`` for a skill that declares
anything (None otherwise). The file is read without following a link and at most
`MAX_OPENAI_YAML` bytes; one that cannot be read or parsed declares nothing. This module
imports no MCP and reads no setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from ..._io.reading import read_plain
from .safe_yaml import Loaded, load_yaml

__all__ = ["MAX_OPENAI_YAML", "OPENAI_YAML", "REQUIRES_KEY", "requirements"]

REQUIRES_KEY: Final = "requires-tools"
"""The frontmatter ``metadata`` key that lists the tools a skill needs."""
OPENAI_YAML: Final = ("agents", "openai.yaml")
"""Where, inside a skill's folder, the file naming its MCP server dependencies is."""
MAX_OPENAI_YAML: Final = 64 * 1024
"""The most bytes of ``agents/openai.yaml`` read."""


def _tools(metadata: dict[str, str] | None) -> list[str]:
    if not metadata:
        return []
    value = metadata.get(REQUIRES_KEY)
    if not isinstance(value, str):
        return []
    return list(dict.fromkeys(word for word in value.replace(",", " ").split() if word))


def _servers(root: Path | None, folder: str) -> list[str]:
    if root is None or not folder:
        return []
    parts = [*folder.split("/"), *OPENAI_YAML]
    try:
        # One lstat for the many skills without the file; the read itself is confined.
        os.lstat(os.sep.join((str(root), *parts)))  # noqa: PTH118 (a string is cheaper)
    except OSError:
        return []
    data = read_plain(root, parts, limit=MAX_OPENAI_YAML)
    if data is None:
        return []
    loaded = load_yaml(data.decode("utf-8", "replace"))
    if not isinstance(loaded, Loaded):
        return []
    return _mcp_servers(loaded.value)


def _mcp_servers(document: Any) -> list[str]:
    dependencies = document.get("dependencies") if isinstance(document, dict) else None
    tools = dependencies.get("tools") if isinstance(dependencies, dict) else None
    if not isinstance(tools, list):
        return []
    found = [
        entry["value"].strip()
        for entry in tools
        if isinstance(entry, dict)
        and entry.get("type") == "mcp"
        and isinstance(entry.get("value"), str)
        and entry["value"].strip()
    ]
    return list(dict.fromkeys(found))


def requirements(
    metadata: dict[str, str] | None, root: Path | None, folder: str
) -> dict[str, list[str]] | None:
    """What a skill needs: ``{"tools": [...], "servers": [...]}``, or None when it
    declares nothing. `metadata` is its frontmatter's, `root` the skills folder it was
    found in and `folder` its folder relative to `root` (``/`` between parts)."""
    tools, servers = _tools(metadata), _servers(root, folder)
    if not tools and not servers:
        return None
    return {"tools": tools, "servers": servers}
