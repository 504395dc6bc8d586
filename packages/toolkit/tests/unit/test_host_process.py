"""The agent's host process is closed to the other processes of its user once it starts
local servers (or as ``dpt-agent``): a skill script running unsandboxed under such a
server cannot read the host's environment (where the model's API key usually is), nor
open its descriptors. Checked with a real second process of the same user (see the
std-tools tests' `process_access`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from process_access import as_plain_user, peek

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SECRET = "sk-host-secret-for-no-script-91c2"

_AGENT = f"""
import sys, anyio
from doc_processing_toolkit import Agent, TestModel

async def main():
    entry = {{"type": "mcp_command", "command": sys.executable,
             "args": [{str(SERVERS / "stdio_server.py")!r}], "name": "demo"}}
    async with Agent(model=TestModel(), tools=[entry]):
        print("connected", flush=True)
        sys.stdin.readline()

anyio.run(main)
"""


def _started(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        as_plain_user(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
    )


def _finish(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


def test_an_agent_with_a_local_server_closes_its_process() -> None:
    process = _started([sys.executable, "-c", _AGENT])
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "connected", process.stderr
        seen = peek(process.pid)
        assert SECRET not in seen
        assert "environ-refused:13" in seen and "stdin-refused:13" in seen, seen
    finally:
        _finish(process)


def test_dpt_agent_closes_its_process_before_reading_anything() -> None:
    code = "from doc_processing_toolkit.cli import main; raise SystemExit(main())"
    # The prompt comes from standard input, held open: the CLI waits there.
    process = _started([sys.executable, "-c", code, "run", "--model", "test", "-"])
    try:
        time.sleep(1.5)
        assert process.poll() is None, process.communicate()
        seen = peek(process.pid)
        assert SECRET not in seen
        assert "environ-refused:13" in seen, seen
    finally:
        _finish(process)
