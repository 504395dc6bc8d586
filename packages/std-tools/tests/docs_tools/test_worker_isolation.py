"""Document workers take data only and keep nothing for a script of the same user to take:
requests are JSON (a pickle written into a worker's request pipe runs nothing), and the
server and its workers are not dumpable (their environment, memory and pipes are closed
to other processes of the user), with a worker environment free of the server's secrets.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent
from process_access import as_plain_user, children, command_line, peek

from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.documents import worker
from doc_processing_std_tools.documents._wire import decode_request, encode_request


class _Planted:
    """A pickle that runs a command when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_in_the_request_pipe_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    payload = pickle.dumps(("read_document", {"path": "x"}, _Planted(marker)))
    started = worker._Worker.start()
    try:
        assert started.process.stdin is not None and started.process.stdout is not None
        worker._send(started.process.stdin, payload)
        # The worker refuses what is not a request of ours and stops.
        assert worker._receive(started.process.stdout) is None
        assert started.process.wait(timeout=30) == 0
    finally:
        started.stop()
    assert not marker.exists()


def test_requests_carry_every_setting_as_data(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "DPTTOOLS_WORKSPACE_DIR": str(tmp_path),
            "DPTTOOLS_SKILLS_DIR": f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}",
            "DPTTOOLS_SCRIPT_ENV": "TZ,LANG",
            "DPTTOOLS_DOC_MEMORY_MB": "700",
            "DPTTOOLS_CACHE_DIR": "off",
        }
    )
    data = encode_request("read_document", {"path": "a.pdf", "pages": "1-2"}, settings)
    assert b"\x80" not in data  # JSON text, not a pickle
    assert decode_request(data) == ("read_document", {"path": "a.pdf", "pages": "1-2"}, settings)


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x04K\x01.",
        b'{"tool": "eval", "arguments": {}, "settings": {}}',
        b'{"tool": "read_document", "arguments": [], "settings": {}}',
        b'{"tool": "read_document", "arguments": {}, "settings": {"x": 1}}',
        b'{"tool": "read_document", "arguments": {}, "settings": {}, "more": 1}',
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_request(data)


async def _text(client: Client, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _environ(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")


def _worker_of(server: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in children(server):
            if "documents.worker" in command_line(pid):
                return pid
        time.sleep(0.05)
    raise AssertionError("the server started no document worker")


@pytest.mark.anyio
async def test_the_server_and_its_workers_are_closed_to_the_users_other_processes(
    library: Path, tmp_path: Path
) -> None:
    secret = "sk-test-not-for-scripts-7f3a"
    workspace = tmp_path / "own-workspace"  # names this test's server among the children
    workspace.mkdir()
    shutil.copy(library / "report.pdf", workspace / "report.pdf")
    params = StdioServerParameters(
        command=as_plain_user([sys.executable])[0],
        args=[
            *as_plain_user([sys.executable])[1:],
            "-m",
            "doc_processing_std_tools",
            "--workspace",
            str(workspace),
        ],
        env={**os.environ, "MODEL_API_KEY": secret},
    )
    async with Client(params) as client:
        text = await _text(client, "get_file_overview", path="report.pdf")
        assert "report.pdf" in text or "PDF" in text
        mine = children(os.getpid())
        servers = [p for p in mine if str(workspace) in command_line(p)]
        assert len(servers) == 1
        server = servers[0]
        work = _worker_of(server)
        for pid in (server, work):
            seen = peek(pid)
            assert secret not in seen
            assert "environ-refused:13" in seen, seen
            assert "stdin-refused:13" in seen, seen
        if os.geteuid() == 0:
            # Root can still look: the worker's environment holds none of the server's.
            assert secret not in _environ(work)
