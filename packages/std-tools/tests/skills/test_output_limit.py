"""DPTTOOLS_OUTPUT_TRUNCATION_LIMIT holds for every tool answer, and the answer says what
was cut: plain text ends with a marker, JSON stays valid JSON with a note."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools._text import TRUNCATED_KEY, fit_json, limit_output, truncate
from doc_processing_std_tools.config import get_settings, reset_settings
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

LIMIT = 300
WIDE_FRONTMATTER = "name: wide\ndescription: d\n" + "".join(f"k{n}: a: b\n" for n in range(3000))
LONG_DIR = "/".join(c * 100 for c in "xyz")


def says_cut(text: str) -> bool:
    """True when the answer states that something was left out."""
    if text.startswith("{"):
        payload = json.loads(text)
        return TRUNCATED_KEY in payload or any(key.endswith("_cut") for key in payload)
    return "truncated" in text


# ---- The helpers themselves.


@pytest.mark.parametrize("limit", [1, 5, 11, 20, 45, 60, 100, 1000])
def test_truncate_never_exceeds_the_limit_and_marks_the_cut(limit: int) -> None:
    text = "word " * 1000
    cut = truncate(text, limit, hint="read on with read_file")
    assert len(cut) <= limit
    if limit >= 11:
        assert "truncated" in cut
    if limit >= 100:
        assert cut.endswith("; read on with read_file]")
        dropped = int(cut.split("truncated: ")[1].split(" ")[0])
        assert len(cut) - len(cut.split("\n[... truncated")[0]) + dropped >= len(text) - limit
        assert cut.startswith(text[: len(cut.split("\n[...")[0])])
    assert truncate("short", limit if limit >= 5 else 5) == "short"


def random_payload(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "int", "list", "dict"] if depth < 3 else ["str", "int"])
    if kind == "str":
        return 'é"\n' * rng.randrange(0, 400)
    if kind == "int":
        return rng.randrange(10**9)
    if kind == "list":
        return [random_payload(rng, depth + 1) for _ in range(rng.randrange(0, 40))]
    return {f"key{i}": random_payload(rng, depth + 1) for i in range(rng.randrange(0, 20))}


@pytest.mark.parametrize("seed", range(16))
def test_fit_json_gives_valid_json_within_any_limit_of_30_or_more(seed: int) -> None:
    rng = random.Random(seed)
    payload = {"items": random_payload(rng), "name": "x", "more": random_payload(rng)}
    whole = json.dumps(payload, ensure_ascii=False, indent=2)
    for limit in (30, 120, 300, 2000, len(whole) // 2, len(whole)):
        text = fit_json(payload, limit, hint="ask for less")
        assert len(text) <= limit
        cut = json.loads(text)
        assert (cut == payload) == (text == whole)
        if text != whole:
            assert TRUNCATED_KEY in cut


def test_fit_json_keeps_the_top_level_and_names_each_cut() -> None:
    payload = {
        "skills": [{"name": f"s{i}", "description": "d" * 50} for i in range(40)],
        "count": 40,
        "diagnostics": [{"skill": "w", "message": "m" * 200} for _ in range(300)],
    }
    cut = json.loads(fit_json(payload, 5000, hint="Run dpt-skills list to see all."))
    assert cut["count"] == 40
    assert 0 < len(cut["skills"]) <= 40
    assert 0 < len(cut["diagnostics"]) < 300
    assert cut["skills"] == payload["skills"][: len(cut["skills"])]
    assert f"diagnostics keeps {len(cut['diagnostics'])} of 300 entries" in cut[TRUNCATED_KEY]
    assert cut[TRUNCATED_KEY].endswith("Run dpt-skills list to see all.")


def test_limit_output_keeps_json_valid_and_cuts_other_text_with_a_marker() -> None:
    as_json = json.dumps({"stdout": "o" * 5000, "stderr": "", "exit_code": 0})
    fitted = limit_output(as_json, 400)
    assert len(fitted) <= 400
    assert json.loads(fitted)["exit_code"] == 0
    assert limit_output("{" + "o" * 5000, 10**6) == "{" + "o" * 5000
    text = limit_output("{" + "o" * 5000, 400)
    assert len(text) <= 400 and "truncated" in text


# ---- The two answers that broke the limit.


def test_list_skills_of_a_huge_frontmatter_fits_and_stays_valid_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills = tmp_path / "skills"
    for name, frontmatter in [
        ("wide", WIDE_FRONTMATTER),
        *((f"normal-{i}", f"name: normal-{i}\ndescription: Normal {i}.\n") for i in range(5)),
    ]:
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(f"---\n{frontmatter}---\n", encoding="utf-8")
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(skills))
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "50000")
    reset_settings()
    try:
        catalog = skills_state.scan(get_settings())
        text = catalog.json_within(50_000)
    finally:
        reset_settings()
    assert len(catalog.json) > 500_000
    assert len(text) <= 50_000
    payload = json.loads(text)
    assert [s["name"] for s in payload["skills"]] == [f"normal-{i}" for i in range(5)] + ["wide"]
    assert payload["count"] == 6
    assert 0 < len(payload["diagnostics"]) < 3000
    assert "of 3000 diagnostics were left out" in payload[TRUNCATED_KEY]
    assert "dpt-skills" in payload[TRUNCATED_KEY]
    assert catalog.json_within(50_000) is text


def test_load_skill_with_many_long_file_names_fits_a_small_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "skills" / "many-files"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: many-files\ndescription: d\n---\n" + "Step.\n" * 1000, encoding="utf-8"
    )
    for i in range(60):
        (folder / "references" / f"{i:02d}-{'r' * 180}.md").write_text("x", encoding="utf-8")
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "skills"))
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "2000")
    reset_settings()
    try:
        text = actions.load_skill(skills_state, get_settings(), "many-files")
    finally:
        reset_settings()
    assert len(text) <= 2000
    assert text.startswith('<skill_content name="many-files"')
    assert text.endswith("</skill_content>")
    assert "more files are not listed" in text
    assert "truncated" in text and "load_skill_resource('many-files', 'SKILL.md')" in text


# ---- Every tool of the composed server, through a real MCP session.


@pytest.fixture
def oversized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A skills folder and a workspace where every tool has more to say than LIMIT."""
    skills = tmp_path / "skills"
    (skills / "wide").mkdir(parents=True)
    (skills / "wide" / "SKILL.md").write_text(f"---\n{WIDE_FRONTMATTER}---\n", encoding="utf-8")
    big = skills / "big"
    (big / "references").mkdir(parents=True)
    (big / "scripts").mkdir()
    (big / "SKILL.md").write_text(
        "---\nname: big\ndescription: d\n---\n" + "Do the step.\n" * 500, encoding="utf-8"
    )
    for i in range(60):
        (big / "references" / f"{i:02d}-{'r' * 100}.md").write_text(
            "r\n" * (i == 0) * 2000, "utf-8"
        )
    (big / "scripts" / "loud.py").write_text(
        "import sys\nprint('o' * 5000)\nprint('e' * 5000, file=sys.stderr)\n", encoding="utf-8"
    )
    for i in range(30):
        (skills / f"needle-{i:02d}").mkdir()
        (skills / f"needle-{i:02d}" / "SKILL.md").write_text(
            f"---\nname: needle-{i:02d}\n"
            f"description: Finds needle {i}. {'Long text. ' * 80}\n---\n",
            encoding="utf-8",
        )
    work = tmp_path / "work"
    (work / "many").mkdir(parents=True)
    for i in range(40):
        (work / "many" / f"file-{i:03d}.txt").write_text("needle\n" * 50, encoding="utf-8")
    (work / LONG_DIR).mkdir(parents=True)
    (work / LONG_DIR / "edit.txt").write_text("old marker\n", encoding="utf-8")
    (work / "doc.md").write_text(
        "".join(f"# Heading {i} needle\n\nText of section {i}.\n\n" for i in range(300)),
        encoding="utf-8",
    )
    (work / "table.csv").write_text(
        "a,b,c\n" + "".join(f"{i},{i * 2},{i * 3}\n" for i in range(500)), encoding="utf-8"
    )
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(skills))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(work))
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", str(LIMIT))
    monkeypatch.setenv("DPTTOOLS_SANDBOX_TIMEOUT", "30")
    reset_settings()
    skills_state.clear()
    yield tmp_path
    reset_settings()
    skills_state.clear()


CALLS: dict[str, dict[str, Any]] = {
    "list_skills": {},
    "search_skills": {"query": "needle", "limit": 50},
    "load_skill": {"skill_name": "big"},
    "load_skill_resource": {"skill_name": "big", "resource_path": f"references/00-{'r' * 100}.md"},
    "execute_skill_script": {"skill_name": "big", "script_path": "scripts/loud.py"},
    "create_skill": {"skill_name": "fresh-skill", "description": "A new skill."},
    "read_file": {"path": "many/file-000.txt"},
    "write_file": {"path": f"{LONG_DIR}/written.txt", "content": "new"},
    "edit_file": {"path": f"{LONG_DIR}/edit.txt", "old_text": "old", "new_text": "new"},
    "list_directory": {"path": "many"},
    "find_files": {"pattern": "**/*.txt"},
    "search_text": {"pattern": "needle", "path": "many"},
    "get_file_info": {"path": f"{LONG_DIR}/edit.txt"},
    "get_file_overview": {"path": "doc.md"},
    "read_document": {"path": "doc.md"},
    "extract_tables": {"path": "table.csv"},
    "search_document": {"path": "doc.md", "query": "needle"},
}


@pytest.mark.anyio
async def test_the_composed_server_has_exactly_the_tools_checked_here() -> None:
    async with Client(make_composed_server()) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == set(CALLS)


@pytest.mark.anyio
@pytest.mark.parametrize("tool", list(CALLS))
async def test_every_answer_fits_the_limit_and_says_what_was_cut(
    oversized: Path, tool: str
) -> None:
    async with Client(make_composed_server()) as client:
        result = await client.call_tool(tool, CALLS[tool])
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    assert len(block.text) <= LIMIT, (len(block.text), block.text[:200])
    assert says_cut(block.text), block.text


@pytest.mark.anyio
async def test_an_error_message_fits_the_limit_too(oversized: Path) -> None:
    async with Client(make_composed_server()) as client:
        result = await client.call_tool(
            "load_skill_resource", {"skill_name": "big", "resource_path": "a/" * 400 + "x.md"}
        )
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert result.is_error
    assert len(block.text) <= LIMIT
    assert "resource_path" in block.text and "truncated" in block.text


@pytest.mark.parametrize("limit", [2_000, 20_000, 50_000, 120_000])
def test_a_catalog_too_large_to_show_whole_is_cut_as_if_every_skill_were_weighed(
    tmp_path: Path, limit: int
) -> None:
    """The cut that weighs only the skills that can still fit gives the very answer of the
    cut that weighs them all."""
    from doc_processing_std_tools.skills.catalog.scan import scan_once
    from doc_processing_std_tools.skills.core.records import _fit_catalog

    root = tmp_path / "skills"
    for index in range(1500):
        extra = "metadata:\n  owner: team\n" if index % 3 else ""
        (root / f"skill-{index:04d}").mkdir(parents=True)
        (root / f"skill-{index:04d}" / "SKILL.md").write_text(
            f"---\nname: skill-{index:04d}\ndescription: Handles case {index}. "
            f"{'More words. ' * (index % 17)}\n{extra}---\n",
            encoding="utf-8",
        )
    (root / "broken").mkdir()
    (root / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n", encoding="utf-8")
    catalog = scan_once(root, max_bytes=1 << 20)
    fast = catalog.json_within(limit)
    assert len(fast) <= limit
    assert fast == _fit_catalog(catalog.to_payload(), limit)
    payload = json.loads(fast)
    assert payload["count"] == 1500
    assert "search_skills" in payload[TRUNCATED_KEY]
