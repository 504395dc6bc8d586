"""Every stdio entry the host pages document starts a working server, exactly as written.

The JSON blocks of docs/hosts/*.md and the `claude mcp add` command are read from the
pages themselves; only the placeholder paths are replaced (the environment by the one
running these tests, the folders by temporary ones). Each entry is then launched the way
a host launches it, through the MCP SDK's stdio client, and must list the skill.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[4] / "docs"
PAGES = [
    *sorted((DOCS / "hosts").glob("*.md")),
    DOCS / "installation.md",
    DOCS / "std-tools" / "composed-server.md",
]
BLOCK = re.compile(r"```(json|bash)\n(.*?)```", re.DOTALL)


def documented_entries() -> list[Any]:
    """(page, server name, {command, args, env}) for every stdio entry on the pages."""
    found = []
    for page in PAGES:
        for kind, body in BLOCK.findall(page.read_text(encoding="utf-8")):
            if kind == "json":
                document = json.loads(body)
                servers = document.get("mcpServers", document.get("servers", {}))
                for name, entry in servers.items():
                    if "command" in entry:
                        found.append(pytest.param(entry, id=f"{page.stem}:{name}"))
            elif body.lstrip().startswith("claude mcp add") and "--transport" not in body:
                found.append(pytest.param(claude_mcp_add(body), id=f"{page.stem}:claude"))
    return found


def claude_mcp_add(command: str) -> dict[str, Any]:
    """The entry that `claude mcp add NAME -e K=V ... -- COMMAND ARGS...` creates."""
    words = shlex.split(command.replace("\\\n", " "))
    options, launched = words[: words.index("--")], words[words.index("--") + 1 :]
    env = dict(
        options[i + 1].split("=", 1) for i, word in enumerate(options) if word in ("-e", "--env")
    )
    return {"command": launched[0], "args": launched[1:], "env": env}


def test_the_pages_document_entries_for_every_host() -> None:
    ids = {param.id.split(":")[0] for param in documented_entries()}
    assert {"claude-desktop", "claude-code", "vscode", "cursor", "composed-server"} <= ids


@pytest.mark.parametrize("entry", documented_entries())
async def test_a_documented_entry_starts_the_server(entry: dict[str, Any], tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    skills = tmp_path / "skills"
    (skills / "greeting").mkdir(parents=True)
    (skills / "greeting" / "SKILL.md").write_text(
        "---\nname: greeting\ndescription: Says hello.\n---\n# Hello\n", encoding="utf-8"
    )
    documents = tmp_path / "documents"
    documents.mkdir()

    def substitute(text: str) -> str:
        return (
            text.replace("/path/to/venv", str(venv))
            .replace("/path/to/skills", str(skills))
            .replace("/path/to/documents", str(documents))
        )

    command = substitute(entry["command"])
    assert Path(command).is_absolute(), "a host entry must name its program by absolute path"
    params = StdioServerParameters(
        command=command,
        args=[substitute(arg) for arg in entry.get("args", [])],
        env={key: substitute(value) for key, value in entry.get("env", {}).items()},
        # A host starts the server from a folder of its own, not from the project.
        cwd=str(tmp_path),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.call_tool("list_skills", {})
        assert not listed.is_error, listed
        assert "greeting" in str(listed.content[0])
