"""`TerminalApproval`, the ``ask`` approval policy: the person at the terminal answers
``y`` or ``n`` for each gated call. It belongs to the command line (``dpt-agent``), and
`approval` imports it only when a gate names the ``ask`` policy.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import unicodedata
from typing import Any, ClassVar, TextIO

import anyio
import anyio.to_thread

from .decisions import HIDDEN_CATEGORIES, ApprovalDecision, ApprovalRequest

__all__ = ["TerminalApproval", "describe_request"]

logger = logging.getLogger("doc_processing_toolkit.approval")

_PREVIEW_CHARS = 2000
_ASK_ATTEMPTS = 3


class TerminalApproval:
    """The ``ask`` policy: ask the person at the terminal, ``y`` or ``n``.

    The call (tool, server and arguments, pretty-printed) is shown on `output` and the
    answer read from `input`. Keys typed before the question appears are discarded, so
    an earlier keystroke cannot answer it. When `input` is not a terminal nobody can
    answer, so the call is denied, as it is when `input` closes. Calls are asked about
    one at a time.

    Args:
        input: where answers are read (default: ``sys.stdin`` at the time of the call).
        output: where the question is written (default: ``sys.stderr``).
    """

    policy_name: ClassVar[str] = "ask"
    """The name this policy has in a configuration."""

    def __init__(self, *, input: TextIO | None = None, output: TextIO | None = None) -> None:
        self._input = input
        self._output = output
        self._lock = threading.Lock()  # one question at a time, whatever the event loop

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask about `request`; deny when no one can answer."""
        source = self._input if self._input is not None else sys.stdin
        if source is None or not source.isatty():
            return ApprovalDecision.deny(
                "no one could approve it: the agent is not running at a terminal",
                decided_by="terminal (not interactive)",
            )
        return await anyio.to_thread.run_sync(self._ask, request, source, abandon_on_cancel=True)

    def _ask(self, request: ApprovalRequest, source: TextIO) -> ApprovalDecision:
        with self._lock:
            return self._ask_alone(request, source)

    def _ask_alone(self, request: ApprovalRequest, source: TextIO) -> ApprovalDecision:
        sink = self._output if self._output is not None else sys.stderr
        _discard_typed_ahead(source)
        sink.write(describe_request(request))
        for _ in range(_ASK_ATTEMPTS):
            sink.write("Allow this call? [y/n] ")
            sink.flush()
            line = source.readline()
            if not line:
                sink.write("\n")
                sink.flush()
                return ApprovalDecision.deny(
                    "no answer: the terminal's input was closed", decided_by="terminal"
                )
            answer = line.strip().lower()
            if answer in ("y", "yes"):
                return ApprovalDecision.approve("approved at the terminal", decided_by="terminal")
            if answer in ("n", "no"):
                return ApprovalDecision.deny(
                    "the person at the terminal refused it", decided_by="terminal"
                )
            sink.write("Please answer y or n.\n")
        return ApprovalDecision.deny(
            f"no y/n answer after {_ASK_ATTEMPTS} questions", decided_by="terminal"
        )


def _discard_typed_ahead(source: TextIO) -> None:
    """Drop what was typed on the terminal `source` but not read yet."""
    if sys.platform == "win32":
        return
    import termios

    try:
        termios.tcflush(source.fileno(), termios.TCIFLUSH)
    except (termios.error, OSError, ValueError) as exc:
        logger.debug("could not discard the terminal's pending input: %s", exc)


def _visible(text: str) -> str:
    """`text` with every character that a terminal would not show as itself (control
    and format characters such as escape sequences or right-to-left overrides, line and
    paragraph separators) written as ``\\uXXXX``, so arguments cannot disguise the
    question. Line breaks stay."""
    return "".join(
        f"\\u{ord(ch):04x}" if ch != "\n" and unicodedata.category(ch) in HIDDEN_CATEGORIES else ch
        for ch in text
    )


def describe_request(request: ApprovalRequest) -> str:
    """The call as a person should see it: tool, server and the arguments as indented
    JSON, long values shortened (the text says how much was left out), characters a
    terminal would hide or act on escaped."""
    shown: list[str] = []

    def shorten(value: Any) -> Any:
        if isinstance(value, str) and len(value) > _PREVIEW_CHARS:
            shown.append(f"{len(value) - _PREVIEW_CHARS} characters")
            return value[:_PREVIEW_CHARS] + "..."
        if isinstance(value, dict):
            return {key: shorten(item) for key, item in value.items()}
        if isinstance(value, list):
            return [shorten(item) for item in value]
        return value

    arguments = json.dumps(shorten(request.arguments), indent=2, ensure_ascii=False)
    body = "\n".join("  " + line for line in _visible(arguments).splitlines())
    cut = f"  ({', '.join(shown)} not shown)\n" if shown else ""
    return (
        f"\nThe model wants to call {request.tool!r} on server {request.server!r} "
        f"with these arguments:\n{body}\n{cut}"
    )
