"""Skills at scale: a catalog the server cut, or one over skills_catalog_budget, is never
injected silently, and the block holds the skills that best match the run's prompt.

Real MCP sessions throughout: the stand-in skills server (skills_standin.py, with its
optional search_skills) in process and over stdio, and the tests' extension server
(extension_peer.py) for the MCP Skills extension.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.skills import SkillEntry, parse_catalog, render_catalog
from doc_processing_toolkit.skills.ranking import MAX_TERMS, SkillIndex, match_expression

SERVERS = Path(__file__).parents[1] / "servers"
STANDIN = SERVERS / "skills_standin.py"
SKILLS_LOGGER = "doc_processing_toolkit.skills"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, SERVERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


standin = _load("skills_standin")
peer = _load("extension_peer")

pytestmark = pytest.mark.anyio

# 1,000 skills whose descriptions share a dull vocabulary; skill-0905 alone is about
# earthquakes. A prompt about earthquakes must bring it into a block that cannot show all.
_WORDS = ("ledger", "invoice", "memo", "report", "table", "chart", "letter", "form")
_VERBS = ("Sorts", "Checks", "Merges", "Renames", "Counts", "Splits", "Tags", "Stamps")
SEISMIC = "Turns seismograph waveform recordings into earthquake magnitude estimates."
PROMPT = "Estimate the earthquake magnitude from these seismograph recordings."


def skill(index: int) -> dict[str, str]:
    name = f"skill-{index:04d}"
    if index == 905:
        description = SEISMIC
    else:
        verb = _VERBS[index % len(_VERBS)]
        first, second = _WORDS[index % 7], _WORDS[(index // 7) % len(_WORDS)]
        description = f"{verb} {first} and {second} files of batch {index}."
    return {"name": name, "description": description, "path": f"/srv/skills/{name}/SKILL.md"}


SKILLS = [skill(i) for i in range(1000)]
#: What std-tools' list_skills says when its output limit cut the list after 308 skills.
CUT_NOTE = (
    "The answer was longer than the output limit (40000 characters, "
    "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT), so parts of it were left out: skills keeps 308 of "
    "1000 entries."
)


def cut_payload(**extra: Any) -> dict[str, Any]:
    return {
        "skills": SKILLS[:308],
        "skills_dir": "/srv/skills",
        "count": 1000,
        "truncated": CUT_NOTE,
        "__search__": SKILLS,
        **extra,
    }


def whole_payload(skills: list[dict[str, str]] = SKILLS, **extra: Any) -> dict[str, Any]:
    return {"skills": skills, "skills_dir": "/srv/skills", "count": len(skills), **extra}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Catalog:
    """The stand-in's catalog file and call log."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "catalog.json"
        self.calls_file = folder / "calls.log"
        self.calls_file.write_text("", encoding="utf-8")

    def set(self, payload: Any) -> None:
        self.file.write_text(json.dumps(payload), encoding="utf-8")

    @property
    def env(self) -> dict[str, str]:
        return {"STANDIN_CATALOG": str(self.file), "STANDIN_CALLS": str(self.calls_file)}

    def calls(self) -> list[str]:
        return self.calls_file.read_text(encoding="utf-8").split()


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    cat = Catalog(tmp_path)
    for key, value in cat.env.items():
        monkeypatch.setenv(key, value)
    return cat


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(parts=(TextPart("done"),))


def skill_names(block: str) -> list[str]:
    return [line.split('"', 2)[1] for line in block.splitlines() if line.startswith("  <skill ")]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == SKILLS_LOGGER and r.levelno == logging.WARNING
    ]


async def run(
    server: Any, prompt: str = PROMPT, *, budget: int | None = None, runs: int = 1
) -> tuple[list[Any], TestModel]:
    model = TestModel(answer)
    async with Agent(model=model, tools=[server], skills_catalog_budget=budget) as agent:
        results = [await agent.run(prompt) for _ in range(runs)]
    return results, model


# --- the server cut its list ----------------------------------------------------------------


async def test_a_cut_list_says_how_many_are_not_shown_and_names_search_skills(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(cut_payload())
    server = standin.build_server("std_tools", search=True)
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), _ = await run(server)
    skills = result.skills
    block = skills.prompt_block
    names = skill_names(block)
    # The search found skill-0905 although the cut list never named it; it comes first.
    assert names[0] == "skill-0905"
    assert skills.ranking == "search_skills"
    assert skills.total == 1000
    assert skills.left_out == ()  # no budget: every skill known is shown
    assert skills.left_out_count == 1000 - len(names)
    assert {s.name for s in skills.skills} == set(names)
    assert (
        f"{1000 - len(names)} of the 1000 skills are not shown here; those shown are the "
        "ones that best match this request. To find another, call `search_skills` with a few "
        "words about what you need; `load_skill` loads any skill by its exact name."
    ) in block
    assert catalog.calls() == ["list_skills", "search_skills"]
    [warning] = warnings_of(caplog)
    assert warning == skills.warning
    assert "server 'std_tools'" in warning
    assert f"{skills.left_out_count} of its 1000 skills are not shown" in warning
    assert "its list_skills answer, cut at its output limit, listed 308 of 1000 skills" in warning
    assert "ranked by its search_skills" in warning
    assert result.warnings == []  # the run went well; the WARNING is the operator's


async def test_a_cut_list_without_search_ranks_what_was_listed(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(cut_payload())
    prompt = "Please count the ledger files of batch 250."
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), model = await run(standin.build_server("std_tools"), prompt)
    skills = result.skills
    block = skills.prompt_block
    names = skill_names(block)
    assert len(names) == 308
    assert names[0] == "skill-0250"  # the listed skill that matches best comes first
    assert sorted(names) == [s["name"] for s in SKILLS[:308]]
    assert (skills.ranking, skills.total, skills.left_out_count) == ("local", 1000, 692)
    assert "search_skills" not in block
    assert (
        "692 of the 1000 skills are not shown here; those shown are the ones that best match "
        "this request. `list_skills` cannot list them all either (its answer is cut short "
        "too), but `load_skill` loads any skill by its exact name."
    ) in block
    assert catalog.calls() == ["list_skills"]
    assert len(warnings_of(caplog)) == 1
    assert "ranked by the toolkit's own index" in warnings_of(caplog)[0]
    assert [spec.name for spec in model.requests[0].tools] == [
        "list_skills",
        "load_skill",
        "load_skill_resource",
        "execute_skill_script",
        "create_skill",
    ]


async def test_one_warning_per_run(catalog: Catalog, caplog: pytest.LogCaptureFixture) -> None:
    catalog.set(cut_payload())
    server = standin.build_server("std_tools", search=True)
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        results, _ = await run(server, runs=3)
    assert len(warnings_of(caplog)) == 3
    assert all(r.skills.left_out_count == results[0].skills.left_out_count for r in results)
    assert catalog.calls() == ["list_skills", "search_skills"] * 3
    assert not [r for r in caplog.records if r.name == "root"]


async def test_a_cut_list_over_stdio_with_search(catalog: Catalog) -> None:
    catalog.set(cut_payload())
    entry = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(STANDIN), "--name", "std_tools", "--search"],
        "name": "std_tools",
        "env": catalog.env,
    }
    results, _ = await run(entry, runs=2)
    for result in results:
        assert skill_names(result.skills.prompt_block)[0] == "skill-0905"
        assert result.skills.ranking == "search_skills"
        assert result.skills.total == 1000


async def test_a_cut_list_without_a_count_still_says_skills_are_missing(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    payload = cut_payload()
    del payload["count"]
    catalog.set(payload)
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), _ = await run(standin.build_server("std_tools"))
    skills = result.skills
    assert skills.total is None
    assert skills.left_out_count == 0  # none of the skills known is left out
    assert "Not every skill is shown here: the server cut its list short" in (
        skills.prompt_block or ""
    )
    [warning] = warnings_of(caplog)
    assert "an unknown number of its skills" in warning


# --- over the budget -------------------------------------------------------------------------


async def test_over_budget_the_skill_that_matches_the_prompt_is_shown(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(whole_payload())
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), _ = await run(standin.build_server("std_tools"), budget=8000)
    skills = result.skills
    block = skills.prompt_block
    names = skill_names(block)
    assert len(block) <= 8000
    assert names[0] == "skill-0905"
    assert 0 < len(names) < 1000
    assert skills.ranking == "local"
    assert skills.total == 1000
    assert len(skills.left_out) == skills.left_out_count == 1000 - len(names)
    assert "skill-0905" not in skills.left_out
    assert set(skills.left_out) | set(names) == {s["name"] for s in SKILLS}
    assert (
        f"{1000 - len(names)} of the 1000 skills are not shown here; those shown are the ones "
        "that best match this request. Call `list_skills` to see them all; `load_skill` loads "
        "any skill by its exact name."
    ) in block
    [warning] = warnings_of(caplog)
    assert "skills_catalog_budget=8000 characters" in warning
    assert "cut at its output limit" not in warning


async def test_over_budget_with_search_asks_the_server_first(catalog: Catalog) -> None:
    catalog.set(whole_payload())
    (result,), _ = await run(
        standin.build_server("std_tools", search=True), "seismograph", budget=8000
    )
    names = skill_names(result.skills.prompt_block)
    assert names[0] == "skill-0905"
    assert result.skills.ranking == "search_skills"
    assert "call `search_skills`" in result.skills.prompt_block
    assert catalog.calls() == ["list_skills", "search_skills"]


async def test_a_failing_search_falls_back_to_local_ranking(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(whole_payload(__search__={"__error__": "the index is rebuilding"}))
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), _ = await run(standin.build_server("std_tools", search=True), budget=8000)
    assert result.output == "done"
    assert skill_names(result.skills.prompt_block)[0] == "skill-0905"
    assert result.skills.ranking == "local"
    # The model is still told about search_skills: the server offers it.
    assert "call `search_skills`" in result.skills.prompt_block
    [warning] = warnings_of(caplog)
    assert "search_skills failed (search_skills returned an error:" in warning
    assert "the index is rebuilding" in warning


async def test_a_search_reply_that_is_not_json_falls_back_too(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(whole_payload(__search__={"__raw__": "no idea"}))
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), _ = await run(standin.build_server("std_tools", search=True), budget=8000)
    assert skill_names(result.skills.prompt_block)[0] == "skill-0905"
    [warning] = warnings_of(caplog)
    assert "search_skills did not return JSON" in warning


async def test_a_blank_prompt_is_not_searched_and_keeps_the_server_order(
    catalog: Catalog,
) -> None:
    catalog.set(whole_payload())
    (result,), _ = await run(standin.build_server("std_tools", search=True), "   ", budget=8000)
    names = skill_names(result.skills.prompt_block)
    assert names == [s["name"] for s in SKILLS[: len(names)]]
    assert catalog.calls() == ["list_skills"]
    assert result.skills.ranking == "local"


@pytest.mark.parametrize(
    "prompt",
    [
        'earthquake" OR name:* AND (NOT NEAR(',
        "seismograph^2 -- '; DROP TABLE skills; --",
        "???",
        "_ _ __ ——",
    ],
)
async def test_no_prompt_is_an_index_syntax_error(catalog: Catalog, prompt: str) -> None:
    catalog.set(whole_payload())
    (result,), _ = await run(standin.build_server("std_tools"), prompt, budget=8000)
    assert result.skills.status == "injected"
    assert result.skills.left_out_count > 0


# --- nothing changes when every skill fits ---------------------------------------------------

TWO = [
    {
        "name": "invoice-extraction",
        "description": "Extracts fields from invoices <PDF & scans>.",
        "path": "/srv/skills/invoice-extraction/SKILL.md",
    },
    {
        "name": "table-cleanup",
        "description": 'Cleans "messy" tables.',
        "path": "/srv/skills/table-cleanup/SKILL.md",
    },
]


@pytest.mark.parametrize("budget", [None, 100_000])
async def test_when_every_skill_fits_the_block_is_the_seeds(
    catalog: Catalog, caplog: pytest.LogCaptureFixture, budget: int | None
) -> None:
    catalog.set(whole_payload(TWO))
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), model = await run(
            standin.build_server("std_tools", search=True), "clean the invoice table", budget=budget
        )
    expected = render_catalog([SkillEntry(s["name"], s["description"], s["path"]) for s in TWO])
    assert result.skills.prompt_block == expected
    assert model.requests[0].system == expected
    assert (result.skills.left_out, result.skills.left_out_count) == ((), 0)
    assert (result.skills.total, result.skills.ranking, result.skills.warning) == (2, None, None)
    assert catalog.calls() == ["list_skills"]  # no search when nothing is left out
    assert warnings_of(caplog) == []


async def test_a_server_that_cut_only_descriptions_is_shown_whole(catalog: Catalog) -> None:
    catalog.set(whole_payload(TWO, truncated="descriptions were cut to 80 characters"))
    (result,), _ = await run(standin.build_server("std_tools", search=True))
    expected = render_catalog([SkillEntry(s["name"], s["description"], s["path"]) for s in TWO])
    assert result.skills.prompt_block == expected
    assert result.skills.ranking is None


# --- an empty catalog ------------------------------------------------------------------------


async def test_an_empty_catalog_hides_search_skills_with_the_activation_tools(
    catalog: Catalog,
) -> None:
    catalog.set(whole_payload([]))
    (result,), model = await run(standin.build_server("std_tools", search=True))
    assert result.skills.status == "empty"
    assert [spec.name for spec in model.requests[0].tools] == ["list_skills", "create_skill"]
    assert result.skills.hidden_tools == {
        "load_skill",
        "load_skill_resource",
        "execute_skill_script",
        "search_skills",
    }
    catalog.set(whole_payload(TWO))
    (result,), model = await run(standin.build_server("std_tools", search=True))
    assert "search_skills" in [spec.name for spec in model.requests[0].tools]


# --- an extension server ---------------------------------------------------------------------


async def test_an_extension_server_over_budget_is_ranked_locally(
    caplog: pytest.LogCaptureFixture,
) -> None:
    skills = {s["name"]: s["description"] for s in SKILLS[850:950]}
    server, extension = peer.build("skills-ext", skills)
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        results, _ = await run(server, budget=3000, runs=2)
    for result in results:
        outcome = result.skills
        names = skill_names(outcome.prompt_block)
        assert len(outcome.prompt_block) <= 3000
        assert outcome.source == "extension"
        assert names[0] == "skill-0905"
        assert outcome.ranking == "local"
        assert outcome.total == 100
        assert len(outcome.left_out) == outcome.left_out_count == 100 - len(names)
        assert 'uri="skill://skill-0905/SKILL.md"' in outcome.prompt_block
        assert (
            f"{100 - len(names)} of the 100 skills are not shown here; those shown are the ones "
            "that best match this request. Call `list_skills` to see them all; `load_skill` "
            "loads any of them by its `uri`."
        ) in outcome.prompt_block
    assert len(warnings_of(caplog)) == 2
    assert extension.list_calls == 2 * 100  # one page per skill, asked again each run


async def test_an_unchanged_extension_catalog_is_reused() -> None:
    server, _ = peer.build("skills-ext", {"alpha": "A.", "beta": "B."})
    results, _ = await run(server, runs=2)
    first, second = (r.skills for r in results)
    assert first.skills is second.skills  # the same catalog object: rendered once


# --- the index ---------------------------------------------------------------------------


def test_the_query_is_quoted_words_joined_with_or() -> None:
    assert match_expression('Find "PDF" tables, AND (merge) them*') == (
        '"find" OR "pdf" OR "tables" OR "and" OR "merge" OR "them"'
    )
    assert match_expression("--- ?? _") is None
    many = " ".join(f"w{i}" for i in range(200))
    expression = match_expression(many)
    assert expression is not None and expression.count(" OR ") == MAX_TERMS - 1


def test_a_name_match_outranks_a_description_match() -> None:
    entries = [
        SkillEntry("table-cleanup", "Cleans spreadsheets."),
        SkillEntry("csv-tools", "Works on a table or two."),
        SkillEntry("other", "Unrelated."),
    ]
    index = SkillIndex(entries)
    assert index.rank("table") == [0, 1]
    assert index.rank("tables") == [0, 1]  # porter: word endings do not matter
    assert index.rank("nothing here") == []
    assert index.builds == 1


def _result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload))])


async def test_a_warm_unchanged_catalog_keeps_its_index(catalog: Catalog) -> None:
    catalog.set(whole_payload())
    results, _ = await run(standin.build_server("std_tools"), budget=8000, runs=3)
    # The reply's text is the same each run, so it is read into the same catalog object,
    # whose index was built once for the three runs.
    parsed = parse_catalog(_result(whole_payload()))
    assert parsed.index.builds == 1
    assert all(skill_names(r.skills.prompt_block)[0] == "skill-0905" for r in results)


async def test_a_warm_run_over_budget_stays_cheap(catalog: Catalog) -> None:
    catalog.set(whole_payload())
    model = TestModel(answer)
    server = standin.build_server("std_tools")
    async with Agent(model=model, tools=[server], skills_catalog_budget=8000) as agent:
        await agent.run(PROMPT)  # cold: parses, renders and indexes the catalog once
        started = time.perf_counter()
        for _ in range(5):
            result = await agent.run(PROMPT)
        per_run = (time.perf_counter() - started) / 5
    assert skill_names(result.skills.prompt_block)[0] == "skill-0905"
    # A generous bound (a shared machine): the selection itself is a few milliseconds.
    assert per_run < 0.5, per_run


# --- std-tools itself ------------------------------------------------------------------------


@pytest.fixture
def std_tools_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """std-tools' own skills server over 1,000 skill folders, with an output limit that
    cuts its list_skills answer."""
    settings = pytest.importorskip("doc_processing_std_tools.config")
    from doc_processing_std_tools.skills.server import new_skills_server

    root = tmp_path / "skills"
    for entry in SKILLS:
        folder = root / entry["name"]
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {entry['name']}\ndescription: {entry['description']}\n---\n# Body\n",
            encoding="utf-8",
        )
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(root))
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "20000")
    settings.reset_settings()
    try:
        yield new_skills_server()
    finally:
        settings.reset_settings()


async def test_std_tools_cut_list_is_never_injected_silently(
    std_tools_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        (result,), model = await run(std_tools_server)
    skills = result.skills
    block = skills.prompt_block or ""
    names = skill_names(block)
    assert skills.status == "injected"
    assert skills.total == 1000
    assert 0 < len(names) < 1000
    assert skills.left_out_count == 1000 - len(names)
    assert f"{1000 - len(names)} of the 1000 skills are not shown here" in block
    assert len(warnings_of(caplog)) == 1
    offered = [spec.name for spec in model.requests[0].tools]
    if "search_skills" in offered:
        assert skills.ranking == "search_skills"
        assert names[0] == "skill-0905"
        assert "call `search_skills`" in block
    else:
        assert skills.ranking == "local"
        assert "`load_skill` loads any skill by its exact name" in block


async def test_the_cli_skills_line_says_how_many_are_shown(catalog: Catalog) -> None:
    from doc_processing_toolkit.cli import _skills_line

    catalog.set(cut_payload())
    (result,), _ = await run(standin.build_server("std_tools", search=True))
    line = _skills_line(result.skills)
    shown = len(result.skills.skills)
    assert line is not None
    first = (result.skills.prompt_block or "").split('<skill name="', 1)[1].split('"', 1)[0]
    assert line.startswith(
        f"skills: {shown} of 1000 from 'std_tools' (the best match for the prompt; "
        f"{1000 - shown} not shown): {first}, "  # the block's order: best match first
    )
    assert len(line) < 300


def test_only_the_start_of_a_long_prompt_is_read() -> None:
    document = "seismograph " + "word " * 300_000 + "earthquake"
    assert match_expression(document) == '"seismograph" OR "word"'
