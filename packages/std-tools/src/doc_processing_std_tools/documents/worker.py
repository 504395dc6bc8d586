"""Document calls in worker processes: under a memory limit, and stopped when abandoned.

The readers of PDF, DOCX and XLSX are libraries that can take gigabytes and minutes on a
hostile file (a package that unpacks a hundredfold, half a gigabyte of shared strings),
and Python cannot stop a thread that is inside them. So the servers never run `api` in
their own process: each call goes to a worker process that

- runs one call at a time, with its address space limited to DPTTOOLS_DOC_MEMORY_MB
  (set again before every call, so a changed setting applies at once);
- is killed, with everything it started, when the client gives up on the call (the
  request is cancelled), when extract_tables outlives its own time bound by a margin, or
  when it ran close to its memory limit; the next call starts a fresh one;
- answers in JSON, never in pickle: the worker parses hostile files, so nothing it sends
  is trusted further than text and the name of one of our errors;
- takes its requests as JSON too (the tool's name, its arguments and the settings as
  plain data), never pickle: a request is data, never code, even if something else
  manages to write into the worker's request pipe;
- is not dumpable (``PR_SET_DUMPABLE`` 0, its first statement) and starts with a small
  environment (`WORKER_ENVIRONMENT`), so a skill script running as the same user finds
  no secret of the server in its ``/proc/<pid>/environ`` and cannot open its memory or
  its pipes.

At most DPTTOOLS_DOC_WORKERS calls run at once; further calls wait for a free worker.
Workers start on the first call, stay for the next ones, and end with the server (their
request pipe closes, or they see that their parent is gone).

Data flow: `run_tool(name, arguments, settings)` -> a free worker -> the child sets the
memory limit and runs `api.<name>` with the workspace and the settings of the call ->
{"text"} or {"error"} -> the text, or the error raised again here as the same
`StdToolsError` class (or `OSError`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

import anyio
import anyio.to_thread

from .. import errors
from ..config import Settings
from ._wire import TOOL_NAMES, decode_request, encode_request

__all__ = [
    "STOP_GRACE_SECONDS",
    "TOOL_NAMES",
    "WORKER_ENVIRONMENT",
    "run_tool",
    "serve",
]

logger = logging.getLogger(__name__)

#: Seconds extract_tables may run past DPTTOOLS_TABLE_CALL_SECONDS before its worker is
#: killed (the bound is kept inside the worker; this catches work it cannot interrupt).
STOP_GRACE_SECONDS = 15.0
_WAIT_STEP = 0.02
_HEADER = 8
#: A worker whose address space is over this share of its limit after a call is replaced:
#: the allocator may keep the memory a large document took, leaving too little for the next.
_RETIRE_SHARE = 0.5
#: A failed call counts as out of memory when it took the address space this close to
#: the limit (a library may report a failed allocation as a parse error).
_NEAR_LIMIT_SHARE = 0.8

#: Bytes of an answer besides the tool's text: the error message, the JSON around it.
_ANSWER_ROOM = 1024 * 1024

_BOOT = (
    # Not dumpable before anything else runs (Linux; elsewhere there is no prctl).
    "try:\n import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"
    "except Exception:\n pass\n"
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1])\n"
    "from doc_processing_std_tools.documents.worker import serve; serve()\n"
)

#: The variables of the server's environment a worker gets: what the interpreter and the
#: readers need (locale, time zone, temporary folder), nothing that may hold a secret.
WORKER_ENVIRONMENT = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "PYTHONHOME",
    "PYTHONPATH",
)


def _worker_env() -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name in WORKER_ENVIRONMENT or name.startswith("LC_")
    }
    # One malloc arena: each thread's own arena would reserve 64 MiB of the address space
    # the limit counts.
    env["MALLOC_ARENA_MAX"] = os.environ.get("MALLOC_ARENA_MAX", "1")
    return env


def _send(stream: IO[bytes], data: bytes) -> None:
    stream.write(len(data).to_bytes(_HEADER, "big") + data)
    stream.flush()


class _Oversize(Exception):
    """A message announces more bytes than the reader accepts."""


def _receive(stream: IO[bytes], most: int | None = None) -> bytes | None:
    """One message, or None when the other side has closed the pipe.

    Raises:
        _Oversize: the message announces more than `most` bytes (nothing more is read).
    """
    header = stream.read(_HEADER)
    if len(header) < _HEADER:
        return None
    size = int.from_bytes(header, "big")
    if most is not None and size > most:
        raise _Oversize
    data = stream.read(size)
    return data if len(data) == size else None


# --- The parent: a small pool of workers -------------------------------------------------


class _WorkerGone(Exception):
    """The worker ended (killed, crashed) before it answered."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how
        """How it ended, in words: "killed by SIGABRT", "exit status 1"."""


@dataclass
class _Worker:
    """One worker process and its two pipes."""

    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls) -> _Worker:
        """A new worker, in a session of its own so that it is killed with its children."""
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(sys.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_worker_env(),
            start_new_session=True,
        )
        return cls(process)

    def exchange(self, request: bytes, most: int) -> dict[str, Any]:
        """Send `request`, wait for the answer of at most `most` bytes (blocking).

        Raises:
            _WorkerGone: the worker ended before it answered, or answered with something
                other than an answer (it is then killed).
        """
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            _send(self.process.stdin, request)
            data = _receive(self.process.stdout, most)
        except _Oversize:
            self.stop()
            raise _WorkerGone("stopped: its answer was too long") from None
        except (ConnectionError, ValueError, OSError):
            data = None
        if data is None:
            raise _WorkerGone(self._ending())
        try:
            answer = json.loads(data)
        except ValueError:
            answer = None
        if not _well_formed(answer):
            self.stop()
            raise _WorkerGone("stopped: its answer was not readable")
        return dict(answer)

    def _ending(self) -> str:
        """How the worker ended, once it has (waiting a moment for it)."""
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "its answer pipe closed"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit status {code}"

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Kill the worker and whatever it started; wait for it."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Pool:
    """Idle workers and the count of busy ones, shared by every call in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy = 0
        self._exit_hook = False

    async def take(self, limit: int, reuse: bool = True) -> tuple[_Worker, bool]:
        """An idle worker (unless `reuse` is false), or a new one once fewer than `limit`
        are busy, and whether it is new; waits (and can be cancelled while it waits)
        when `limit` are busy."""
        while True:
            with self._lock:
                while reuse and self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        self._busy += 1
                        return worker, False
                    worker.stop()
                if self._busy < limit:
                    self._busy += 1
                    if not self._exit_hook:
                        atexit.register(self.close)
                        self._exit_hook = True
                    break
            await anyio.sleep(_WAIT_STEP)
        try:
            return _Worker.start(), True
        except BaseException:
            with self._lock:
                self._busy -= 1
            raise

    def give_back(self, worker: _Worker, keep: bool, limit: int) -> None:
        """Return `worker` after a call: kept for the next call, or stopped."""
        with self._lock:
            self._busy -= 1
            if keep and worker.alive() and len(self._idle) + self._busy < limit:
                self._idle.append(worker)
                return
        worker.stop()

    def close(self) -> None:
        """Stop every idle worker (busy ones are stopped by their calls)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()


_pool = _Pool()


def _well_formed(answer: object) -> bool:
    """True for {"text": str, ...} and {"error": {"kind": str, ...}, ...}."""
    if not isinstance(answer, dict):
        return False
    if isinstance(answer.get("text"), str):
        return True
    error = answer.get("error")
    return isinstance(error, dict) and isinstance(error.get("kind"), str)


def _error(answer: dict[str, Any]) -> BaseException:
    """The exception a worker's error answer stands for; only our own classes."""
    error = answer["error"]
    if error["kind"] == "OSError" and isinstance(error.get("errno"), int):
        return OSError(error["errno"], str(error.get("strerror")), error.get("filename"))
    kind = getattr(errors, str(error["kind"]), None)
    if not (isinstance(kind, type) and issubclass(kind, errors.StdToolsError)):
        kind = errors.DocumentError
    return kind(str(error.get("message", "The document could not be read.")))


async def run_tool(name: str, arguments: dict[str, Any], settings: Settings) -> str:
    """Run `api.<name>(workspace, **arguments)` in a worker, under `settings` (the
    workspace, the limits, the bounds), which travel with the call: the worker reads no
    settings of its own.

    Cancelling the calling task kills the worker at once.

    Raises:
        StdToolsError: what the tool raised (the same class and message), or a
            `DocumentError` when the worker ran out of memory, ran past its time, or died.
        OSError: what the tool raised.
    """
    if name not in TOOL_NAMES:
        raise ValueError(f"{name!r} is not a document tool")
    request = encode_request(name, arguments, settings)
    seconds = settings.table_call_seconds + STOP_GRACE_SECONDS if name == "extract_tables" else None
    path = str(arguments.get("path", ""))
    # An answer is the tool's text (held to the output limit) as JSON: at most six bytes
    # a character (a \uXXXX escape), plus room for the rest.
    most = 6 * settings.output_truncation_limit + _ANSWER_ROOM
    reuse = True
    while True:
        worker, new = await _pool.take(settings.doc_workers, reuse)
        keep = False
        try:
            with anyio.fail_after(seconds):
                answer = await anyio.to_thread.run_sync(
                    worker.exchange, request, most, abandon_on_cancel=True
                )
            keep = not answer.get("retire", False)
            break
        except TimeoutError:
            raise errors.DocumentError(
                f"extract_tables on {path!r} did not finish within {seconds:g} s "
                f"(DPTTOOLS_TABLE_CALL_SECONDS={settings.table_call_seconds:g} plus "
                f"{STOP_GRACE_SECONDS:g} s for work that cannot be interrupted) and was "
                "stopped; pass a smaller pages range."
            ) from None
        except _WorkerGone as gone:
            if new:
                raise errors.DocumentError(
                    f"Reading {path!r} stopped: the process that parses documents ended "
                    f"({gone.how}) before it answered, most likely out of memory "
                    f"(DPTTOOLS_DOC_MEMORY_MB={settings.doc_memory_mb}); raise "
                    "DPTTOOLS_DOC_MEMORY_MB to read it. The server goes on, and the next call "
                    "starts a new process."
                ) from None
            # A worker that had waited for this call died in the meantime: the tools
            # only read, so the call is run once more, in a new worker.
            reuse = False
        finally:
            _pool.give_back(worker, keep, settings.doc_workers)
    if "error" in answer:
        raise _error(answer)
    return str(answer["text"])


# --- The child: one call at a time -------------------------------------------------------


def _status_kib(field: str) -> int:
    """A size from /proc/self/status in KiB (0 where there is no /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _limit_memory(megabytes: int) -> None:
    import resource

    limit = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _memory_answer(path: str, settings: Settings) -> dict[str, Any]:
    return {
        "error": {
            "kind": "DocumentError",
            "message": (
                f"{path!r} needs more memory than the document tools may use "
                f"(DPTTOOLS_DOC_MEMORY_MB={settings.doc_memory_mb}), so reading it was "
                "stopped. Raise DPTTOOLS_DOC_MEMORY_MB to read it, or read a smaller part "
                "with pages."
            ),
        },
        "retire": True,
    }


def _answer(tool: str, arguments: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Run one call and describe its outcome as JSON-ready data."""
    from ..workspace import Workspace
    from . import api

    limit_kib = settings.doc_memory_mb * 1024
    _limit_memory(settings.doc_memory_mb)
    peak_before = _status_kib("VmPeak")
    path = str(arguments.get("path", ""))

    def ran_out() -> bool:
        peak = _status_kib("VmPeak")
        return peak > peak_before and peak >= limit_kib * _NEAR_LIMIT_SHARE

    try:
        workspace = Workspace.from_settings(settings)
        text = getattr(api, tool)(workspace, **arguments, settings=settings)
    except MemoryError:
        return _memory_answer(path, settings)
    except errors.StdToolsError as exc:
        if ran_out():
            return _memory_answer(path, settings)
        return {"error": {"kind": type(exc).__name__, "message": str(exc)}}
    except OSError as exc:
        if ran_out():
            return _memory_answer(path, settings)
        return {
            "error": {
                "kind": "OSError",
                "errno": exc.errno,
                "strerror": exc.strerror,
                "filename": None if exc.filename is None else str(exc.filename),
            }
        }
    except Exception as exc:
        if ran_out():
            return _memory_answer(path, settings)
        logger.exception("%s on %s failed", tool, path)
        return {
            "error": {
                "kind": "DocumentError",
                "message": (
                    f"{path!r} could not be read: the document reader failed unexpectedly "
                    f"({type(exc).__name__}); the server log has the details."
                ),
            }
        }
    return {"text": text, "retire": _status_kib("VmSize") > limit_kib * _RETIRE_SHARE}


def _watch_parent(parent: int) -> None:
    """Exit as soon as the parent is gone, even in the middle of a call."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _preload() -> None:
    """Import the readers now, between calls, rather than inside the first call."""
    for module in ("pypdfium2", "docx", "openpyxl"):
        with contextlib.suppress(ImportError):
            __import__(module)


def serve() -> None:
    """The worker's main loop: read a request from stdin, answer on stdout, until stdin
    closes. Entry point of the worker process only; it takes over the process's standard
    streams (libraries that print would otherwise garble the answers)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    logging.basicConfig(
        level=logging.WARNING, format="doc-tools worker %(levelname)s %(name)s: %(message)s"
    )
    threading.Thread(
        target=_watch_parent, args=(os.getppid(),), name="parent-watch", daemon=True
    ).start()
    _preload()
    while (data := _receive(requests)) is not None:
        try:
            tool, arguments, settings = decode_request(data)
        except (ValueError, TypeError) as exc:
            # Not a request the server wrote: stop rather than guess (the server starts a
            # new worker for its next call).
            logger.error("not a request (%s); the worker stops", exc)
            return
        answer = _answer(tool, arguments, settings)
        _send(answers, json.dumps(answer).encode())
        if answer.get("retire"):
            return
