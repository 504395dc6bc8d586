"""``Agent(skills_lock=PATH)``: skills served through the Skills extension are used only
when the lock (as ``dpt-skills lock`` writes it) names them with the files and digests the
server lists; others are rejected like a skill whose file fails verification. Against
std-tools' own extension server, in process, and a lock written by std-tools' CLI."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent, ConfigError, TestModel
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio

SKILLS_LOGGER = "doc_processing_toolkit.skills"
KEPT = "skill://invoice-extraction/SKILL.md"
CHANGED = "skill://contract-review/SKILL.md"
UNLOCKED = "skill://late-addition/SKILL.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_skill(root: Path, name: str, body: str) -> Path:
    folder = root / name
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Handles {name}.\n---\n# {name}\n{body}\n",
        encoding="utf-8",
    )
    (folder / "references" / "guide.md").write_text(f"Guide of {name}.\n", encoding="utf-8")
    return folder


@pytest.fixture
def locked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """(the skills folder, its lock): two skills locked, then one of them changed and a
    third added."""
    from doc_processing_std_tools.skills.cli import main

    root = tmp_path / "skills"
    write_skill(root, "invoice-extraction", "Read the totals.")
    changed = write_skill(root, "contract-review", "Check the dates.")
    lock_file = tmp_path / "skills.lock"
    assert main(["lock", "--skills-dir", str(root), "--output", str(lock_file)]) == 0
    capsys.readouterr()
    (changed / "references" / "guide.md").write_text("Send it elsewhere.\n", encoding="utf-8")
    write_skill(root, "late-addition", "Not audited.")
    return root, lock_file


@pytest.fixture
def server(locked: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """std-tools' skills server serving the extension, without its five tools."""
    from doc_processing_std_tools.config import reset_settings
    from doc_processing_std_tools.skills.server import new_skills_server

    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(locked[0]))
    reset_settings()
    try:
        yield new_skills_server(tools=[])
    finally:
        reset_settings()


def calls_then_done(*uris: str) -> Callable[[ModelRequest], ModelResponse]:
    """``load_skill`` on each uri in turn, within the latest prompt, then "done"."""

    def script(request: ModelRequest) -> ModelResponse:
        answered = 0
        for message in reversed(request.messages):
            if not any(isinstance(p, ToolResultPart) for p in message.parts):
                if message.role == "user":
                    break
                continue
            answered += 1
        if answered < len(uris):
            return tool_call("load_skill", {"uri": uris[answered]})
        return reply("done")

    return script


async def test_only_the_skills_the_lock_pins_as_listed_are_used(
    server: Any, locked: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    _, lock_file = locked
    model = TestModel(calls_then_done(CHANGED, UNLOCKED, KEPT))
    with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
        async with Agent(model=model, tools=[server], skills_lock=lock_file) as agent:
            first = await agent.run("review the documents")
            second = await agent.run("again")
    changed, unlocked, kept = first.tool_calls
    assert sorted(first.skills.rejected) == [CHANGED, UNLOCKED]
    assert "differ from the skills lock" in first.skills.rejected[CHANGED]
    assert "references/guide.md" in first.skills.rejected[CHANGED]
    assert "does not name skill 'late-addition'" in first.skills.rejected[UNLOCKED]
    # The model is told, and nothing of a rejected skill is read.
    assert changed.is_error and "was rejected" in changed.content
    assert unlocked.is_error and "does not name skill" in unlocked.content
    assert "Check the dates" not in str(first.messages)
    assert not kept.is_error and "Read the totals." in kept.content
    # The catalog shows the pinned skill only.
    assert first.system_prompt is not None
    assert "invoice-extraction" in first.system_prompt
    assert "contract-review" not in first.system_prompt
    assert "late-addition" not in first.system_prompt
    # One WARNING per rejected skill, not one per run.
    warnings = [r.getMessage() for r in caplog.records if r.name == SKILLS_LOGGER]
    assert len(warnings) == 2, warnings
    assert sorted(second.skills.rejected) == [CHANGED, UNLOCKED]


async def test_without_a_lock_every_verified_skill_is_used(server: Any) -> None:
    model = TestModel(calls_then_done(CHANGED))
    async with Agent(model=model, tools=[server]) as agent:
        result = await agent.run("review")
    assert result.skills.rejected == {}
    assert not result.tool_calls[0].is_error


def test_a_missing_or_malformed_lock_is_a_configuration_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.lock"
    with pytest.raises(ConfigError) as raised:
        Agent("test", skills_lock=missing)
    assert str(missing) in str(raised.value) and "dpt-skills lock" in str(raised.value)
    other = tmp_path / "other.lock"
    other.write_text(json.dumps({"format": 2, "skills": {}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not a skills lock of format 1 \(its 'format' is 2\)"):
        Agent.builder().model("test").skills_lock(str(other)).build()
    broken = tmp_path / "broken.lock"
    broken.write_text('{"format": 1, "skills": {"a": {"files": {"SKILL.md": {}}}}}', "utf-8")
    with pytest.raises(ConfigError, match=r"file 'SKILL.md' of skill 'a' needs a string"):
        Agent("test", skills_lock=str(broken))
    with pytest.raises(ConfigError, match="is not JSON"):
        (tmp_path / "text.lock").write_text("not json", encoding="utf-8")
        Agent("test", skills_lock=tmp_path / "text.lock")


def test_a_yaml_configuration_names_the_lock_relative_to_its_folder(
    locked: tuple[Path, Path],
) -> None:
    _, lock_file = locked
    config = lock_file.parent / "agent.yaml"
    config.write_text(f"model: test\nskills_lock: {lock_file.name}\n", encoding="utf-8")
    agent = Agent.from_yaml(config)
    assert agent.settings.values.skills_lock == str(lock_file)
    assert agent.settings.skills_lock is not None
    assert sorted(agent.settings.skills_lock.skills) == ["contract-review", "invoice-extraction"]
