"""Helpers for the HTTP tests: the composed server as a real child process on a free
local port, and in-process JOSE material (keys, a JWKS, tokens)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp.types import Tool


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Folders:
    """A skills folder with one skill and a workspace with one file."""

    skills: Path
    workspace: Path


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    skills = tmp_path / "skills"
    (skills / "invoice-check" / "scripts").mkdir(parents=True)
    (skills / "invoice-check" / "SKILL.md").write_text(
        "---\nname: invoice-check\ndescription: Checks invoice totals.\n---\n\n# Steps\n",
        encoding="utf-8",
    )
    (skills / "invoice-check" / "scripts" / "hello.py").write_text(
        "print('hello from the script')\n", encoding="utf-8"
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first line\n", encoding="utf-8")
    return Folders(skills.resolve(), workspace.resolve())


@dataclass
class Started:
    """A server child process that has exited or is listening."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_server(
    folders: Folders,
    *args: str,
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
) -> Started:
    """Start `python -m doc_processing_std_tools --transport streamable-http` and wait
    until it listens on 127.0.0.1 or exits (whichever comes first, within 30 s)."""
    port = free_port()
    environ = {key: value for key, value in os.environ.items() if not key.startswith("DPTTOOLS_")}
    environ.update(env or {})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "doc_processing_std_tools",
            "--transport",
            "streamable-http",
            "--host",
            host,
            "--port",
            str(port),
            "--skills-dir",
            str(folders.skills),
            "--workspace",
            str(folders.workspace),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environ,
    )
    deadline = time.monotonic() + 30
    while process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                stop(process)
                pytest.fail("the HTTP server did not start listening within 30 s")
            time.sleep(0.05)
    return Started(process, port)


def stop(process: subprocess.Popen[bytes]) -> str:
    """Stop the child (if it still runs) and return what it wrote on stderr."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    return stderr


@contextmanager
def serving(
    folders: Folders, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[Started]:
    """A listening server for the block; fails the test when it exits early."""
    started = start_server(folders, *args, env=env)
    if started.process.poll() is not None:
        pytest.fail(f"the HTTP server exited early: {stop(started.process)}")
    try:
        yield started
    finally:
        stop(started.process)


def tool_names(tools: Sequence[Tool]) -> set[str]:
    return {tool.name for tool in tools}
