"""skills_catalog_budget against a real collection of 129 skills served by std-tools.

The collection (k-dense-scientific-skills: github.com/K-Dense-AI/claude-scientific-skills,
MIT, (c) 2025 K-Dense Inc.) lives in ../shared/corpora next to the repository; a fresh
clone has no such folder, so these tests skip then.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.skills import SHORTENED_MARK, render_catalog

REPO = Path(__file__).resolve().parents[4]
COLLECTION = REPO.parent / "shared" / "corpora" / "k-dense-scientific-skills" / "scientific-skills"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def skills_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    if not COLLECTION.is_dir():
        pytest.skip(
            f"the 129-skill collection is not next to this checkout ({COLLECTION}); put "
            "github.com/K-Dense-AI/claude-scientific-skills at "
            "../shared/corpora/k-dense-scientific-skills to run this test"
        )
    from doc_processing_std_tools.config import reset_settings
    from doc_processing_std_tools.skills.server import new_skills_server

    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(COLLECTION))
    reset_settings()
    try:
        yield new_skills_server(tools=["list_skills", "load_skill"])
    finally:
        reset_settings()


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(parts=(TextPart("done"),))


def skill_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("  <skill ")]


async def run_with(server: Any, budget: int | None) -> tuple[Any, str]:
    model = TestModel(answer)
    async with Agent(model=model, tools=[server], skills_catalog_budget=budget) as agent:
        result = await agent.run("go")
    return result, result.skills.prompt_block or ""


async def test_without_a_budget_the_whole_catalog_is_injected(skills_server: Any) -> None:
    result, block = await run_with(skills_server, None)
    assert len(result.skills.skills) == 129
    assert len(skill_lines(block)) == 129
    assert (result.skills.shortened, result.skills.left_out) == ((), ())
    assert block == render_catalog(result.skills.skills)
    assert "to fit" not in block


async def test_a_budget_shortens_descriptions_evenly_before_leaving_skills_out(
    skills_server: Any,
) -> None:
    full_result, full = await run_with(skills_server, None)
    budget = len(full) * 2 // 3
    result, block = await run_with(skills_server, budget)
    assert len(block) <= budget
    lines = skill_lines(block)
    assert len(lines) == 129  # every skill is still there
    assert result.skills.left_out == ()
    shortened = set(result.skills.shortened)
    assert shortened
    descriptions = {s.name: s.description for s in full_result.skills.skills}
    for line in lines:
        name = line.split('"', 2)[1]
        text = line.split(">", 1)[1].rsplit("</skill>", 1)[0]
        if name in shortened:
            assert text.endswith(SHORTENED_MARK)
            kept = text[: -len(SHORTENED_MARK)]
            # Cut at a word boundary of the original description.
            original = descriptions[name]
            assert original.startswith(
                kept.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
            )
            following = original[
                len(kept.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")) :
            ]
            assert following[:1] in (" ", ",", ";", ":", ".", "-")
    # Evenly: every shortened description has about the same length.
    cut_lengths = [
        len(line) - len(line.split(">", 1)[0])
        for line in lines
        if line.split('"', 2)[1] in shortened
    ]
    assert max(cut_lengths) - min(cut_lengths) < 60
    assert "shortened to fit; `list_skills` gives them in full." in block
    assert "are not shown here" not in block


async def test_a_small_budget_leaves_skills_out_and_says_how_many(skills_server: Any) -> None:
    result, block = await run_with(skills_server, 6000)
    assert len(block) <= 6000
    shown = len(skill_lines(block))
    left_out = result.skills.left_out
    assert 0 < shown < 129
    assert len(left_out) == 129 - shown == result.skills.left_out_count
    assert result.skills.total == 129
    names = [s.name for s in result.skills.skills]
    assert set(names) - set(left_out) == {line.split('"', 2)[1] for line in skill_lines(block)}
    assert (
        f"{129 - shown} of the 129 skills are not shown here; those shown are the ones that "
        "best match this request. Call `list_skills` to see them all; `load_skill` loads any "
        "skill by its exact name."
    ) in block
    for name in left_out:
        assert f'name="{name}"' not in block


async def test_a_small_budget_keeps_the_skills_that_match_the_prompt(skills_server: Any) -> None:
    model = TestModel(answer)
    async with Agent(model=model, tools=[skills_server], skills_catalog_budget=6000) as agent:
        last = (await agent.run("go")).skills.skills[-1]
        result = await agent.run(f"I need help with {last.description}")
    block = result.skills.prompt_block or ""
    # The last skill of the list, left out for a prompt that matches nothing, is shown
    # first once the prompt is about it.
    assert skill_lines(block)[0].startswith(f'  <skill name="{last.name}"')
    assert last.name not in result.skills.left_out
