"""Regular expressions from tool callers, matched with a time bound.

Python's `re` cannot be interrupted from another thread and keeps the interpreter lock
while it matches, so one pattern that backtracks catastrophically (``(a+)+$`` against a
long run of ``a``) would freeze the whole server, not just its own call. A caller's
pattern is therefore matched in a small child interpreter: texts go to it in batches,
and a batch that takes longer than the time bound gets the child killed and the call
refused with an error that says why. The child starts on the first batch, so a search
with nothing to look at costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TypeVar

from ..errors import InvalidArgumentError

__all__ = ["BATCH_CHARS", "BATCH_ITEMS", "MATCH_SECONDS", "BoundedRegex", "compile_pattern"]

logger = logging.getLogger(__name__)

#: Seconds one batch of texts may take to match before the pattern is given up on.
MATCH_SECONDS = 5.0
#: Most texts sent to the child in one batch.
BATCH_ITEMS = 2000
#: Most characters sent to the child in one batch (a longer single text goes alone).
BATCH_CHARS = 1_000_000

T = TypeVar("T")

# The child: reads the pattern, then batches of texts, and answers each batch with the
# indices of the texts the pattern finds something in. Messages are a decimal length on
# a line of its own followed by that many bytes of JSON.
_CHILD = """
import json, re, sys
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
def receive():
    header = stdin.readline()
    return json.loads(stdin.read(int(header))) if header.strip() else None
first = receive()
search = re.compile(first["pattern"], first["flags"]).search
while True:
    texts = receive()
    if texts is None:
        break
    found = json.dumps([i for i, text in enumerate(texts) if search(text)]).encode()
    stdout.write(b"%d\\n" % len(found) + found)
    stdout.flush()
"""


def compile_pattern(pattern: str, ignore_case: bool, what: str) -> re.Pattern[str]:
    """`pattern` compiled (syntax check only), or an error naming the argument `what`."""
    if not pattern:
        raise InvalidArgumentError(f"{what} is empty; pass a regular expression such as 'TODO'.")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError) as exc:
        raise InvalidArgumentError(
            f"{what} {pattern!r} is not a valid regular expression: {exc}."
        ) from None


def _send(stream: IO[bytes], payload: object) -> None:
    data = json.dumps(payload).encode()
    stream.write(b"%d\n" % len(data) + data)
    stream.flush()


def _receive_all(stream: IO[bytes], answers: queue.Queue[list[int] | None]) -> None:
    """Reader thread: put each answer of the child on `answers`; None when it ends."""
    try:
        while header := stream.readline():
            answers.put(json.loads(stream.read(int(header))))
    except (OSError, ValueError):
        logger.debug("The regular-expression child's output ended abruptly", exc_info=True)
    answers.put(None)


class BoundedRegex:
    """A caller's regular expression, matched in a child process under a time bound.

    Use it as a context manager (or call `close`) so the child never outlives the call.
    """

    def __init__(
        self,
        pattern: str,
        *,
        ignore_case: bool,
        what: str,
        label: str | None = None,
        unit: str = "lines",
    ) -> None:
        """Check `pattern` (the argument called `what` in errors); start nothing yet.

        Each batch may take `MATCH_SECONDS` seconds (its value at the time of this call).
        `label` names the pattern in errors when the caller wrote it in another form
        (a glob, say); by default the regular expression itself is named. `unit` says
        what the texts are ("lines", "paths") in the time-out message.
        """
        self.regex = compile_pattern(pattern, ignore_case, what)
        self.label = label or f"The regular expression {pattern!r} ({what})"
        self.seconds = MATCH_SECONDS
        self.unit = unit
        self._process: subprocess.Popen[bytes] | None = None
        self._answers: queue.Queue[list[int] | None] = queue.Queue()

    def __enter__(self) -> BoundedRegex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._answers = queue.Queue()
        threading.Thread(
            target=_receive_all,
            args=(process.stdout, self._answers),
            name="bounded-regex-reader",
            daemon=True,
        ).start()
        _send(process.stdin, {"pattern": self.regex.pattern, "flags": self.regex.flags})
        return process

    def _match_batch(self, texts: list[str]) -> list[int]:
        try:
            process = self._process or self._start()
            assert process.stdin is not None
            _send(process.stdin, texts)
            answer = self._answers.get(timeout=self.seconds)
        except queue.Empty:
            self.close()
            raise InvalidArgumentError(
                f"{self.label} took more than {self.seconds:g} s on {len(texts)} "
                f"{self.unit} and was stopped; it probably backtracks catastrophically "
                "(nested repeats such as '(a+)+' or "
                "overlapping alternatives such as '(a|a)*'). Simplify it, or search for "
                "plain text."
            ) from None
        except OSError as exc:
            self.close()
            raise InvalidArgumentError(
                f"{self.label} could not be matched: its worker process failed ({exc})."
            ) from None
        if answer is None:
            self.close()
            raise InvalidArgumentError(
                f"{self.label} could not be matched: its worker process stopped (out of "
                "memory?). Simplify the pattern."
            )
        return answer

    def filter(self, items: Iterable[T], text_of: Callable[[T], str]) -> Iterator[T]:
        """The items whose text the pattern finds something in, in order, drawn lazily.

        Raises:
            InvalidArgumentError: a batch took longer than the time bound.
        """
        batch: list[T] = []
        texts: list[str] = []
        size = 0
        for item in items:
            text = text_of(item)
            batch.append(item)
            texts.append(text)
            size += len(text)
            if len(batch) >= BATCH_ITEMS or size >= BATCH_CHARS:
                yield from (batch[i] for i in self._match_batch(texts))
                batch, texts, size = [], [], 0
        if batch:
            yield from (batch[i] for i in self._match_batch(texts))

    def close(self) -> None:
        """Stop the child, if it runs."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
