"""Whatever list_skills shows, load_skill serves: both read SKILL.md by the same rules.

Checked on a real in-memory MCP session, for SKILL.md files that one reader could accept
and the other refuse: NUL bytes in the body, invalid UTF-8, a byte-order mark, Windows line
endings, and a file exactly at the size limit.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import skills_server
from doc_processing_std_tools.config import get_settings

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio


async def _call(client: Client, name: str, **arguments: Any) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


def _skill(name: str, body: bytes) -> bytes:
    return f"---\nname: {name}\ndescription: Does {name} things.\n---\n\n".encode() + body


async def test_a_skill_md_with_a_nul_byte_is_not_listed_and_says_why(
    skills: SkillsFolder,
) -> None:
    skills.write("plain")
    skills.write_bytes("nul-body", _skill("nul-body", b"# Steps\n\nstep one\x00 step two\n"))
    async with Client(skills_server) as client:
        listing = json.loads((await _call(client, "list_skills"))[0])
        text, is_error = await _call(client, "load_skill", skill_name="nul-body")
    assert [s["name"] for s in listing["skills"]] == ["plain"]
    assert [(d["skill"], d["level"], d["code"]) for d in listing["diagnostics"]] == [
        ("nul-body", "error", "binary_skill_md")
    ]
    assert "NUL" in listing["diagnostics"][0]["message"]
    assert is_error and "binary" in text


async def test_every_listed_skill_loads_and_every_unlisted_one_is_refused(
    skills: SkillsFolder,
) -> None:
    limit = get_settings().max_file_size_bytes
    head = _skill("at-limit", b"")
    variants = {
        "nul-body": _skill("nul-body", b"text\x00more\n"),
        "latin-body": _skill("latin-body", "caf\xe9\n".encode("latin-1")),
        "bom-crlf": b"\xef\xbb\xbf" + _skill("bom-crlf", b"line\r\n").replace(b"\n", b"\r\n"),
        "at-limit": head + b"x" * (limit - len(head)),
        "over-limit": _skill("over-limit", b"x" * limit),
    }
    for name, data in variants.items():
        skills.write_bytes(name, data)
    async with Client(skills_server) as client:
        listing = json.loads((await _call(client, "list_skills"))[0])
        listed = {s["name"] for s in listing["skills"]}
        refused = {d["skill"] for d in listing.get("diagnostics", []) if d["level"] == "error"}
        loads = {name: await _call(client, "load_skill", skill_name=name) for name in variants}
    assert listed == {"bom-crlf", "at-limit"}
    assert refused == {"nul-body", "latin-body", "over-limit"}
    for name, (text, is_error) in loads.items():
        assert is_error == (name not in listed), (name, text[:200])
