"""When bubblewrap cannot run, the start-up line and the refusals name the real cause (its
own last line of error and what it means here), not a guess; and calls beyond
DPTTOOLS_SCRIPT_MAX_CALLS wait their turn."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from script_user_access import interpreter_out_of_reach

from doc_processing_std_tools.skills.scripts import start
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status
from doc_processing_std_tools.skills.scripts.start import announce_sandbox

pytestmark = pytest.mark.anyio


@pytest.fixture
def refusing_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A ``bwrap`` first on PATH that fails the way a container without namespaces makes
    the real one fail (a real program, run by the probe)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    line = "bwrap: Creating new namespace failed: Operation not permitted"
    fake.write_text(f"#!/bin/sh\necho '{line}' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    sandbox_status.cache_clear()
    yield line
    sandbox_status.cache_clear()


def test_the_cause_bubblewrap_gives_is_the_cause_reported(refusing_bwrap: str) -> None:
    status = sandbox_status()
    assert status.bwrap is None and status.problem is not None
    assert refusing_bwrap in status.problem
    # Named for what it is: namespaces refused, and what to do about it.
    assert "namespaces" in status.problem


def test_the_start_up_warning_names_the_cause(
    refusing_bwrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    start._announce.cache_clear()  # once per process and mode: say it again here
    announce_sandbox("auto", "nobody")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(refusing_bwrap in message for message in warnings), warnings


SLEEPER = """\
import sys, time
start = time.monotonic()
time.sleep(1.0)
print(f"{start} {time.monotonic()}")
"""


@pytest.mark.skipif(
    sandbox_status().bwrap is None and interpreter_out_of_reach() is not None,
    reason=f"no bubblewrap, and without it: {interpreter_out_of_reach()}",
)
async def test_calls_beyond_the_limit_wait_their_turn(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    script = skill / "scripts" / "sleep.py"
    script.write_text(SLEEPER, encoding="utf-8")
    policy = ScriptPolicy(sandbox="auto", max_calls=1)
    spans: list[tuple[float, float]] = []

    async def one() -> None:
        result = await run_script(
            script, [], time_limit=30, output_limit=1000, policy=policy, skill_dir=skill
        )
        assert result.exit_code == 0, result.stderr
        first, last = map(float, result.stdout.split())
        spans.append((first, last))

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        group.start_soon(one)
        group.start_soon(one)
    assert time.monotonic() - started >= 2.0
    (_, a_end), (b_start, _) = sorted(spans)
    assert b_start >= a_end  # one after the other, never both at once
