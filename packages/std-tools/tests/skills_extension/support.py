"""What the MCP Skills extension tests share: raw requests through the MCP SDK's own client,
and an independent reading of a skill folder to compare the server's answers with."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from pydantic import ConfigDict

EXTENSION = "io.modelcontextprotocol/skills"
SKIPPED_NAMES = {"__pycache__", "node_modules"}


class RawResult(types.Result):
    """Any result, every field kept as sent."""

    model_config = ConfigDict(extra="allow")


async def raw(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send `method` as a raw request (a parameterised `types.Request`, so the SDK keeps the
    params) and return the result as the JSON object the server sent."""
    request = types.Request[dict[str, Any], str](method=method, params=params or {})
    result = await client.session.send_request(request, RawResult)
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


async def list_all(client: Client) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every skill entry across the pages of skills/list, and every page as sent."""
    entries: list[dict[str, Any]] = []
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await raw(client, "skills/list", {} if cursor is None else {"cursor": cursor})
        pages.append(page)
        entries.extend(page["skills"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries, pages


def expected_files(folder: Path) -> dict[str, bytes]:
    """Every file a skill publishes, worked out with os.walk: hidden names, __pycache__ and
    node_modules left out; relative path -> bytes."""
    found: dict[str, bytes] = {}
    for directory, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in SKIPPED_NAMES]
        for name in files:
            if name.startswith("."):
                continue
            path = Path(directory) / name
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def manifest(files: dict[str, bytes], skill: str) -> list[dict[str, Any]]:
    """The resources array a conforming server lists for these files."""
    from urllib.parse import quote

    return [
        {
            "uri": f"skill://{skill}/{quote(relative, safe='/')}",
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }
        for relative, data in sorted(files.items())
    ]
