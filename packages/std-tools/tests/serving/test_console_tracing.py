"""A stdio server whose process exports spans to the console (what
``OTEL_TRACES_EXPORTER=console`` under ``opentelemetry-instrument`` sets up: a batch span
processor over the SDK's ConsoleSpanExporter, which writes to standard output) keeps the
MCP stream clean: every span, the last ones written at exit included, goes to standard
error, the host's log (issue 28). Real servers over stdio, driven by the SDK's client."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the OpenTelemetry SDK")

LAUNCHER = """\
import runpy
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("module", ["doc_processing_std_tools", "doc_processing_std_tools.skills"])
async def test_console_spans_go_to_standard_error_not_into_the_stream(
    tmp_path: Path, module: str, caplog: pytest.LogCaptureFixture
) -> None:
    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(launcher), module],
        env={"DPTTOOLS_SKILLS_DIR": str(tmp_path), "DPTTOOLS_WORKSPACE_DIR": str(tmp_path)},
        cwd=str(tmp_path),
    )
    log = tmp_path / "host.log"
    caplog.set_level(logging.DEBUG, logger="mcp")
    with log.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("list_skills", {})
            assert not result.is_error
    assert not [r for r in caplog.records if "Failed to parse" in r.getMessage()]
    assert '"name": "tools/call list_skills"' in log.read_text(encoding="utf-8")
