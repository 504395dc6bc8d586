"""What std-tools adds to the span of the request it serves: the skill, a script's exit
code and sandbox, and the settings of the limits reached. The span here stands in for the
MCP SDK's SERVER span (the current span while a tool runs); the end-to-end trace over
every route is tested with the toolkit (test_tracing_routes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools._tooling import limited
from doc_processing_std_tools._tracing import (
    LIMITS_HIT,
    SCRIPT_EXIT_CODE,
    SCRIPT_SANDBOX,
    SKILL_NAME,
    note_skill,
)
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script

pytestmark = pytest.mark.anyio


class Served:
    """A recording span made current, as the SDK's span of a request is."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("test")

    def attributes(self) -> dict[str, Any]:
        (span,) = self.exporter.get_finished_spans()
        return dict(span.attributes or {})


@pytest.fixture
def served() -> Served:
    return Served()


def write_script(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "skill" / "scripts"
    folder.mkdir(parents=True)
    path = folder / "run.py"
    path.write_text(source)
    return path


@without_bwrap_as_root
async def test_a_script_that_exits_records_its_exit_code_and_sandbox(
    served: Served, tmp_path: Path
) -> None:
    script = write_script(tmp_path, "import sys\nsys.exit(3)\n")
    with served.tracer.start_as_current_span("tools/call execute_skill_script"):
        result = await run_script(
            script, [], time_limit=20, output_limit=100, policy=ScriptPolicy(sandbox="none")
        )
    assert result.exit_code == 3
    attributes = served.attributes()
    assert attributes[SCRIPT_EXIT_CODE] == 3
    assert attributes[SCRIPT_SANDBOX] == "none"
    assert LIMITS_HIT not in attributes


@without_bwrap_as_root
async def test_a_script_stopped_by_the_timeout_names_its_setting(
    served: Served, tmp_path: Path
) -> None:
    script = write_script(tmp_path, "import time\ntime.sleep(30)\n")
    with served.tracer.start_as_current_span("tools/call execute_skill_script"):
        result = await run_script(
            script, [], time_limit=0.5, output_limit=100, policy=ScriptPolicy(sandbox="none")
        )
    assert result.timed_out
    attributes = served.attributes()
    assert attributes[SCRIPT_EXIT_CODE] == -1
    assert list(attributes[LIMITS_HIT]) == ["DPTTOOLS_SANDBOX_TIMEOUT"]


def test_an_answer_cut_to_the_output_limit_names_that_limit(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from doc_processing_std_tools.config import reset_settings

    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "200")
    reset_settings()
    try:
        with served.tracer.start_as_current_span("tools/call load_skill"):
            note_skill("greet")
            limited("x" * 50, 200)
            limited("y" * 500, 200)
            limited("z" * 500, 200)
    finally:
        reset_settings()
    attributes = served.attributes()
    assert attributes[SKILL_NAME] == "greet"
    assert list(attributes[LIMITS_HIT]) == ["DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"]


def test_without_a_recording_span_nothing_is_noted() -> None:
    note_skill("greet")  # the current span is the API's invalid one: a no-op
