"""A host's log of the composed server gets no INFO line per failed tool call (issue 20,
item 7): the SDK's line for each is shown at DEBUG, after one INFO line that says so.
The server runs as a real process over stdio; its standard error is the host's log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

FAILING_CALLS = 6


async def _host_log(tmp_path: Path, *extra: str) -> list[str]:
    """The server's log lines after `FAILING_CALLS` calls that fail (missing files) and
    one that succeeds."""
    (tmp_path / "present.txt").write_text("here\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(tmp_path), *extra],
        env={"DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills")},
    )
    log = tmp_path / "host.log"
    with log.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for index in range(FAILING_CALLS):
                result = await session.call_tool("read_file", {"path": f"missing-{index}.txt"})
                assert result.is_error
            assert not (await session.call_tool("read_file", {"path": "present.txt"})).is_error
    return log.read_text(encoding="utf-8").splitlines()


async def test_failed_tool_calls_get_one_info_line_in_all(tmp_path: Path) -> None:
    lines = await _host_log(tmp_path)
    failures = [line for line in lines if "missing-" in line]
    assert len(failures) == 1, "\n".join(lines)
    assert " INFO " in failures[0]
    assert "missing-0.txt" in failures[0]
    assert "--log-level debug" in failures[0]


async def test_at_debug_every_failed_call_is_shown(tmp_path: Path) -> None:
    lines = await _host_log(tmp_path, "--log-level", "debug")
    failures = [line for line in lines if "Tool 'read_file' failed" in line]
    assert len(failures) == FAILING_CALLS
    assert all(" DEBUG " in line for line in failures)
