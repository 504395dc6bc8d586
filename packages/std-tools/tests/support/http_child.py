"""A server as a real child process over streamable HTTP on 127.0.0.1: started on a free
port with none of this process's DPTTOOLS_* settings, waited for until it listens (or has
exited), stopped (terminated, killed if it does not stop), and its stderr collected.

The tests import it through pytest's `pythonpath` setting; the HTTP benchmark too.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: How long a server may take to listen, and to stop once terminated.
START_SECONDS = 30.0
STOP_SECONDS = 10.0


class NotServing(RuntimeError):
    """The server exited early, or did not listen in time; the message holds its stderr."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Started:
    """A server child process: it listens on `port`, unless it has exited already."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    """The file the child's stderr goes to, until `stop` removes it."""
    address: str = "127.0.0.1"
    """The loopback address the child listens on (127.0.0.1 unless told otherwise)."""
    _stderr: str | None = field(default=None, repr=False)

    @property
    def authority(self) -> str:
        """``address:port`` as a URL writes it (an IPv6 address in brackets)."""
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"{shown}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://{self.authority}/mcp"

    @property
    def base(self) -> str:
        """The server's root, for the other routes (such as /.well-known/...)."""
        return f"http://{self.authority}"

    def stderr(self) -> str:
        """What the child has written on stderr so far; all of it once stopped."""
        if self._stderr is not None:
            return self._stderr
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> str:
        """Terminate the child if it still runs (kill it if it does not stop in time) and
        return everything it wrote on stderr. Calling it again returns the same text."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._stderr is None:
            self._stderr = self.stderr()
            self.log.unlink(missing_ok=True)
        return self._stderr


def launch(
    arguments: Sequence[str],
    port: int,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    address: str = "127.0.0.1",
) -> Started:
    """Run `python <arguments>`, a server that listens on `address`:`port` (a loopback
    address: 127.0.0.1 by default), and return once it listens or has exited. Its
    environment is this one without any DPTTOOLS_* name, plus `env`; its stderr goes to a
    file (see `Started.stderr`). Raises `NotServing` (after stopping it) when it neither
    listens nor exits within `START_SECONDS`."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("DPTTOOLS_")}
    environ.update(env or {})
    handle, name = tempfile.mkstemp(prefix="server-", suffix=".stderr")
    with os.fdopen(handle, "wb") as errors:
        process = subprocess.Popen(
            [sys.executable, *arguments],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=environ,
            cwd=cwd,
        )
    started = Started(process, port, Path(name), address)
    deadline = time.monotonic() + START_SECONDS
    while process.poll() is None:
        try:
            with socket.create_connection((address, port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                stderr = started.stop()
                raise NotServing(
                    f"the HTTP server did not start listening within {START_SECONDS:.0f} s; "
                    f"its stderr:\n{stderr}"
                ) from None
            time.sleep(0.05)
    return started


def start_server(
    *args: str,
    host: str = "127.0.0.1",
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    address: str = "127.0.0.1",
) -> Started:
    """Start the composed server, `python -m doc_processing_std_tools --transport
    streamable-http --host <host>` on a free port with `args` added; see `launch`.
    `address` is where the server is reached (when `host` is another loopback form)."""
    port = free_port()
    command = ["-m", "doc_processing_std_tools", "--transport", "streamable-http"]
    command += ["--host", host, "--port", str(port), *args]
    return launch(command, port, env=env, cwd=cwd, address=address)


@contextmanager
def listening(started: Started) -> Iterator[Started]:
    """`started` for the block, stopped after it; a server that has exited already raises
    `NotServing` with its exit code and stderr."""
    try:
        code = started.process.poll()
        if code is not None:
            raise NotServing(
                f"the HTTP server exited early (exit code {code}); its stderr:\n{started.stop()}"
            )
        yield started
    finally:
        started.stop()


@contextmanager
def serving(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Started]:
    """The composed server (`start_server`), listening for the block and stopped after it."""
    with listening(start_server(*args, env=env, cwd=cwd)) as started:
        yield started
