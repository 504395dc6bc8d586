"""The pure pieces of skills auto-injection: parsing and rendering (the wrapper itself is
driven through real sessions in test_skills_auto_injection_routes.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from doc_processing_toolkit.skills import (
    CatalogReplyError,
    SkillEntry,
    has_own_catalog,
    parse_catalog,
    render_catalog,
)


def text_result(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def catalog_result(payload: Any) -> CallToolResult:
    return text_result(json.dumps(payload))


EXPECTED_TWO = """## Available Agent Skills

Each skill below packages instructions, and often reference files and scripts, for one
kind of task. Before you start a task that matches a skill's description, load that skill
and follow it.

To load a skill:
- Call `load_skill` with the skill's name (preferred). Its result holds the
  skill's instructions inside <skill_content>, the files bundled with it inside
  <skill_resources>, and the skill's folder. Paths mentioned in the instructions are
  relative to that folder.
- Or, if you have a tool that reads files, read the SKILL.md at the skill's `path`.
  Relative paths inside it are resolved from the folder that contains that SKILL.md.

<available_skills>
  <skill name="code-review" path="/s/code-review/SKILL.md">Reviews code.</skill>
  <skill name="legacy">No path here.</skill>
</available_skills>"""


def test_render_lists_each_skill_and_omits_a_missing_path() -> None:
    skills = [
        SkillEntry("code-review", "Reviews code.", "/s/code-review/SKILL.md"),
        SkillEntry("legacy", "No path here.", None),
    ]
    assert render_catalog(skills) == EXPECTED_TWO


def test_render_escapes_attributes_and_descriptions() -> None:
    block = render_catalog([SkillEntry('a"b<c', "x < y & z > w", '/p/"q"&<r>')])
    line = next(ln for ln in block.splitlines() if ln.startswith("  <skill "))
    assert line == (
        '  <skill name="a&quot;b&lt;c" path="/p/&quot;q&quot;&amp;&lt;r&gt;">'
        "x &lt; y &amp; z &gt; w</skill>"
    )


def test_parse_reads_the_std_tools_payload() -> None:
    catalog = parse_catalog(
        catalog_result(
            {
                "skills": [{"name": "a", "description": "A.", "path": "/x/a/SKILL.md"}],
                "skills_dir": "/x",
                "count": 1,
                "diagnostics": [{"skill": "b", "level": "error", "code": "c", "message": "m"}],
            }
        )
    )
    assert catalog.skills == (SkillEntry("a", "A.", "/x/a/SKILL.md"),)
    assert catalog.skills_dir == "/x"
    assert catalog.diagnostics == ({"skill": "b", "level": "error", "code": "c", "message": "m"},)


def test_parse_accepts_an_old_payload_without_path_or_diagnostics() -> None:
    catalog = parse_catalog(catalog_result({"skills": [{"name": "a", "description": "A."}]}))
    assert catalog.skills == (SkillEntry("a", "A.", None),)
    assert catalog.diagnostics == ()


def test_parse_prefers_text_over_structured_content() -> None:
    payload = json.dumps({"skills": [{"name": "a", "description": "A."}]})
    result = CallToolResult(
        content=[TextContent(type="text", text=payload)],
        structured_content={"result": payload},
    )
    assert parse_catalog(result).skills[0].name == "a"


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (text_result("not json"), "did not return JSON"),
        (catalog_result([1, 2]), "without a 'skills' array"),
        (catalog_result({"skills": "none"}), "without a 'skills' array"),
        (catalog_result({"skills": [3]}), "skills[0] is not an object"),
        (catalog_result({"skills": [{"name": "a"}]}), "lacks a string"),
        (text_result("boom", is_error=True), "returned an error: boom"),
        (CallToolResult(content=[]), "no text content"),
    ],
)
def test_parse_rejects_what_is_not_the_catalog(result: CallToolResult, reason: str) -> None:
    with pytest.raises(CatalogReplyError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse_catalog(result)


def test_own_catalog_is_recognised() -> None:
    assert has_own_catalog("x <available_skills> y")
    assert not has_own_catalog(None)
    assert not has_own_catalog("nothing")
