"""A stand-in skills server with std-tools' wire contract, for the toolkit's own tests.

It exposes the five skills tools under their std-tools names and argument names. What
`list_skills` answers comes from the JSON file named by STANDIN_CATALOG, read on every
call so a test can change the catalog between runs. Besides a catalog payload the file may
hold one directive: {"__raw__": text} answers text as is, {"__error__": message} fails the
call, {"__sleep__": seconds} answers late. Every call is appended to the file named by
STANDIN_CALLS, when set, so tests can count calls made in another process.

With ``search=True`` (``--search`` as a script) it also offers std-tools' `search_skills`
contract: ``{"query", "skills": [{"name", "description", "path", "score"}], "count"}``,
best first, a blank query being a tool error. It searches the catalog payload's
``__search__`` list when there is one (so a test can serve a list_skills answer cut short
while the search sees every skill), else its ``skills``; ``__search__`` may also be
{"__error__": message} (the call fails) or {"__raw__": text} (answered as is). Its
ranking is a plain count of shared words: a stand-in, not std-tools' own.

Run as a script it serves over stdio, or over streamable HTTP with `--http PORT`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
    if isinstance(payload, dict):
        payload = {k: v for k, v in payload.items() if k != "__search__"}
    return json.dumps(payload)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def search_skills(query: str, limit: int = 10) -> str:
    """Find skills by words of the task, best match first."""
    _record("search_skills")
    if not query.strip():
        raise ToolError("query is empty; describe the task in a few words")
    if not 1 <= limit <= 50:
        raise ToolError("limit must be between 1 and 50")
    payload = _catalog()
    pool = payload.get("__search__", payload.get("skills", []))
    if isinstance(pool, dict) and "__error__" in pool:
        raise ToolError(str(pool["__error__"]))
    if isinstance(pool, dict) and "__raw__" in pool:
        return str(pool["__raw__"])
    wanted = _words(query)
    scored = [(len(wanted & _words(f"{s['name']} {s['description']}")), s["name"], s) for s in pool]
    hits = sorted((item for item in scored if item[0]), key=lambda item: (-item[0], item[1]))
    skills = [
        {
            "name": s["name"],
            "description": s["description"],
            "path": s.get("path", ""),
            "score": float(score),
        }
        for score, _, s in hits[:limit]
    ]
    return json.dumps({"query": query, "skills": skills, "count": len(skills)})


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


def build_server(name: str = "stand-in", *, search: bool = False) -> MCPServer:
    """An in-process MCPServer with the five skills tools, and `search_skills` when
    `search`."""
    server = MCPServer(name)
    for function in SKILL_FUNCTIONS:
        server.tool()(function)
    if search:
        server.tool()(search_skills)
    return server


def main() -> None:
    """Serve the stand-in over stdio, or over HTTP with --http PORT."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="stand-in")
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--search", action="store_true")
    options = parser.parse_args()
    server = build_server(options.name, search=options.search)
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)
    else:
        server.run()


if __name__ == "__main__":
    main()
