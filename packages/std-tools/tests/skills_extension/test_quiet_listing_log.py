"""A host's log of skills/list (issue 20, item 7): the skills the MCP Skills extension leaves
out are logged one per line at DEBUG only, with one INFO line that counts them by code,
and a listing that finds nothing new to leave out logs nothing. The composed server runs
as a real process over stdio; its standard error is the host's log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from .support import RawResult

pytestmark = pytest.mark.anyio

LEFT_OUT = 29


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    """Two skills the extension serves and `LEFT_OUT` whose name differs from the folder."""
    root = tmp_path / "skills"
    for index in range(LEFT_OUT + 2):
        folder = root / f"skill-{index:02d}"
        folder.mkdir(parents=True)
        name = folder.name if index < 2 else f"other-{index:02d}"
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Skill {index}.\n---\n\n# Steps\n", encoding="utf-8"
        )
    return root


async def _listings_log(skills: Path, tmp_path: Path, *extra: str) -> list[str]:
    """The server's log lines of the publisher after two skills/list requests."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(tmp_path), *extra],
        env={"DPTTOOLS_SKILLS_DIR": str(skills)},
    )
    log = tmp_path / "host.log"
    request = types.Request[dict[str, Any], str](method="skills/list", params={})
    with log.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(2):
                page = await session.send_request(request, RawResult)
                assert len(page.model_dump()["skills"]) == 2
    lines = log.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if "skills.extension.publisher" in line]


async def test_left_out_skills_get_one_info_line_per_new_batch(
    skills: Path, tmp_path: Path
) -> None:
    lines = await _listings_log(skills, tmp_path)
    assert len(lines) == 1, "\n".join(lines)
    assert " INFO " in lines[0]
    assert f"{LEFT_OUT} skill(s)" in lines[0]
    assert "name_mismatch" in lines[0]


async def test_at_debug_each_left_out_skill_is_named_once(skills: Path, tmp_path: Path) -> None:
    lines = await _listings_log(skills, tmp_path, "--log-level", "debug")
    each = [line for line in lines if " DEBUG " in line and "is not published" in line]
    assert len(each) == LEFT_OUT
    assert len([line for line in lines if " INFO " in line]) == 1
