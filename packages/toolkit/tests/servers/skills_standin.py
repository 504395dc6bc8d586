"""A stand-in skills server with std-tools' wire contract, for the toolkit's own tests.

It exposes the five skills tools under their std-tools names and argument names. What
`list_skills` answers comes from the JSON file named by STANDIN_CATALOG, read on every
call so a test can change the catalog between runs. Besides a catalog payload the file may
hold one directive: {"__raw__": text} answers text as is, {"__error__": message} fails the
call, {"__sleep__": seconds} answers late. Every call is appended to the file named by
STANDIN_CALLS, when set, so tests can count calls made in another process.

Run as a script it serves over stdio, or over streamable HTTP with `--http PORT`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def _record(tool: str) -> None:
    calls = os.environ.get("STANDIN_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as handle:
            handle.write(tool + "\n")


def _catalog() -> Any:
    return json.loads(Path(os.environ["STANDIN_CATALOG"]).read_text(encoding="utf-8"))


async def list_skills() -> str:
    """List the skills."""
    _record("list_skills")
    payload = _catalog()
    if isinstance(payload, dict) and "__raw__" in payload:
        return str(payload["__raw__"])
    if isinstance(payload, dict) and "__error__" in payload:
        raise ToolError(str(payload["__error__"]))
    if isinstance(payload, dict) and "__sleep__" in payload:
        await anyio.sleep(float(payload["__sleep__"]))
        return json.dumps({"skills": [], "count": 0})
    return json.dumps(payload)


def load_skill(skill_name: str) -> str:
    """Load one skill's SKILL.md."""
    _record("load_skill")
    return f'<skill_content name="{skill_name}" directory="/x">body</skill_content>'


def load_skill_resource(skill_name: str, resource_path: str) -> str:
    """Read a file of a skill."""
    _record("load_skill_resource")
    return f"{skill_name}/{resource_path}"


def execute_skill_script(skill_name: str, script_path: str, args: str = "") -> str:
    """Run a skill's script."""
    _record("execute_skill_script")
    return json.dumps(
        {"stdout": f"{skill_name} {script_path} {args}", "stderr": "", "exit_code": 0}
    )


def create_skill(skill_name: str, description: str) -> str:
    """Create a skill."""
    _record("create_skill")
    return f"created {skill_name}"


SKILL_FUNCTIONS = (list_skills, load_skill, load_skill_resource, execute_skill_script, create_skill)


def build_server(name: str = "stand-in") -> MCPServer:
    """An in-process MCPServer with the five skills tools."""
    server = MCPServer(name)
    for function in SKILL_FUNCTIONS:
        server.tool()(function)
    return server


def main() -> None:
    """Serve the stand-in over stdio, or over HTTP with --http PORT."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="stand-in")
    parser.add_argument("--http", type=int, default=0)
    options = parser.parse_args()
    server = build_server(options.name)
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)
    else:
        server.run()


if __name__ == "__main__":
    main()
