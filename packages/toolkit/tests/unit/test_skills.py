"""The pure pieces of skills auto-injection: parsing, rendering, detection, the step."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from doc_processing_toolkit.skills import (
    ACTIVATION_TOOLS,
    CatalogReplyError,
    SkillEntry,
    find_skills_server,
    has_own_catalog,
    parse_catalog,
    prepare_skills,
    render_catalog,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


def test_detection_needs_both_tools_on_one_server_and_takes_the_first() -> None:
    servers = {
        "only-list": {"list_skills"},
        "only-load": {"load_skill"},
        "first": {"list_skills", "load_skill", "x"},
        "second": {"list_skills", "load_skill"},
    }
    order = list(servers)
    assert find_skills_server(order, lambda s: servers[s]) == "first"
    assert find_skills_server(order[:2], lambda s: servers[s]) is None


def test_own_catalog_is_recognised() -> None:
    assert has_own_catalog("x <available_skills> y")
    assert not has_own_catalog(None)
    assert not has_own_catalog("nothing")


@pytest.mark.anyio
async def test_step_logs_each_diagnostic_and_injects(caplog: pytest.LogCaptureFixture) -> None:
    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        assert (name, args) == ("list_skills", {})
        return catalog_result(
            {
                "skills": [{"name": "a", "description": "A.", "path": "/a/SKILL.md"}],
                "diagnostics": [
                    {"skill": "b", "level": "error", "code": "missing_description", "message": "m"},
                    {"skill": "c", "level": "warning", "code": "name_mismatch", "message": "n"},
                ],
            }
        )

    with caplog.at_level(logging.INFO, logger="doc_processing_toolkit.skills"):
        outcome = await prepare_skills(
            enabled=True, instructions=None, server_name="s", call_tool=call, timeout_s=5
        )
    assert outcome.status == "injected"
    assert outcome.prompt_block == render_catalog([SkillEntry("a", "A.", "/a/SKILL.md")])
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "skills: b: error [missing_description]: m"),
        ("WARNING", "skills: c: warning [name_mismatch]: n"),
    ]


@pytest.mark.anyio
async def test_step_hides_activation_tools_on_an_empty_catalog() -> None:
    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        return catalog_result({"skills": [], "count": 0})

    outcome = await prepare_skills(
        enabled=True, instructions=None, server_name="s", call_tool=call, timeout_s=5
    )
    assert outcome.status == "empty"
    assert outcome.prompt_block is None
    assert (
        outcome.hidden_tools
        == ACTIVATION_TOOLS
        == {
            "load_skill",
            "load_skill_resource",
            "execute_skill_script",
        }
    )


@pytest.mark.anyio
async def test_step_times_out_as_a_failure_not_an_empty_catalog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        await anyio.sleep(10)
        raise AssertionError("unreachable")

    with caplog.at_level(logging.INFO, logger="doc_processing_toolkit.skills"):
        outcome = await prepare_skills(
            enabled=True, instructions=None, server_name="slow", call_tool=call, timeout_s=0.05
        )
    assert outcome.status == "failed"
    assert outcome.hidden_tools == frozenset()
    assert outcome.prompt_block is None
    assert len(caplog.records) == 1
    assert caplog.records[0].levelname == "WARNING"
    assert "'slow'" in caplog.records[0].getMessage()
    assert "within 0.05 s" in caplog.records[0].getMessage()


@pytest.mark.anyio
async def test_step_survives_an_exception() -> None:
    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        raise ConnectionError("pipe closed")

    outcome = await prepare_skills(
        enabled=True, instructions=None, server_name="s", call_tool=call, timeout_s=1
    )
    assert outcome.status == "failed"
    assert outcome.warning is not None and "ConnectionError: pipe closed" in outcome.warning


@pytest.mark.anyio
async def test_step_does_nothing_when_disabled_or_own_catalog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        calls.append(name)
        return catalog_result({"skills": []})

    off = await prepare_skills(
        enabled=False, instructions=None, server_name="s", call_tool=call, timeout_s=1
    )
    with caplog.at_level(logging.INFO, logger="doc_processing_toolkit.skills"):
        own = await prepare_skills(
            enabled=True,
            instructions="<available_skills></available_skills>",
            server_name="s",
            call_tool=call,
            timeout_s=1,
        )
    assert (off.status, own.status) == ("disabled", "own_catalog")
    assert calls == []
    assert [r.levelname for r in caplog.records] == ["INFO"]
