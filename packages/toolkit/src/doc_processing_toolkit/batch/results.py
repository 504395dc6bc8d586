"""What a batch yields per item (`ItemResult`, one JSONL line each) and what it adds up to
(`BatchSummary`)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ModelAPIError
from ..messages import Usage
from .items import BatchItem

if TYPE_CHECKING:
    from ..result import RunResult

__all__ = ["BatchSummary", "ItemResult", "ItemStatus", "ToolCallSummary", "describe_cause"]

ItemStatus = Literal["ok", "failed", "skipped"]


@dataclass(frozen=True, slots=True)
class ToolCallSummary:
    """One tool call of an item's run, as the results file records it (the result text
    the model received is left out: it can be large, and the answer is what counts)."""

    name: str
    server: str | None
    arguments: dict[str, Any]
    is_error: bool
    duration: float


@dataclass(frozen=True, slots=True)
class ItemResult:
    """The outcome of one batch item.

    Attributes:
        id: the item's stable identity (`BatchItem.id`).
        item: the item as given (a path or a mapping of fields).
        status: ``ok`` (the model answered), ``failed`` (`error` says why) or ``skipped``
            (not run in this invocation: recorded as ok by an earlier one when resuming,
            or cancelled by an interrupt).
        answer: the model's final text (``ok`` only).
        tool_calls: the tool calls of the run that produced the answer.
        usage: tokens and requests of the run that answered (a failed attempt's are not
            known: its run raised).
        duration: seconds from the first attempt's start to the end.
        warnings: the run's warnings, and one per retried attempt.
        error: what went wrong (``failed``), or why the item was skipped.
        cause: a short class of the error for summaries: the exception type, with the HTTP
            status for a provider error (``ModelAPIError 429``).
        attempts: how many times the item was run.
        run: the whole `RunResult` (messages and all) when the item ran in this process
            (the local engine); None otherwise. Not written to the results file.
    """

    id: str
    item: str | dict[str, Any]
    status: ItemStatus
    answer: str | None = None
    tool_calls: tuple[ToolCallSummary, ...] = ()
    usage: Usage = field(default_factory=Usage)
    duration: float = 0.0
    warnings: tuple[str, ...] = ()
    error: str | None = None
    cause: str | None = None
    attempts: int = 0
    run: RunResult | None = field(default=None, compare=False, repr=False)

    @classmethod
    def succeeded(
        cls,
        item: BatchItem,
        run: RunResult,
        *,
        usage: Usage,
        duration: float,
        warnings: list[str],
        attempts: int,
    ) -> ItemResult:
        """The result of an item whose run ended with an answer."""
        return cls(
            id=item.id,
            item=item.source,
            status="ok",
            answer=run.output,
            tool_calls=tuple(
                ToolCallSummary(
                    name=call.name,
                    server=call.server,
                    arguments=dict(call.arguments),
                    is_error=call.is_error,
                    duration=round(call.duration, 6),
                )
                for call in run.tool_calls
            ),
            usage=usage,
            duration=duration,
            warnings=(*warnings, *run.warnings),
            attempts=attempts,
            run=run,
        )

    @classmethod
    def failed(
        cls,
        item: BatchItem,
        error: BaseException | str,
        *,
        usage: Usage | None = None,
        duration: float = 0.0,
        warnings: list[str] | None = None,
        attempts: int = 0,
        cause: str | None = None,
        status: ItemStatus = "failed",
    ) -> ItemResult:
        """The result of an item that failed (or, with `status`, was skipped)."""
        text = error if isinstance(error, str) else _error_text(error)
        return cls(
            id=item.id,
            item=item.source,
            status=status,
            usage=usage or Usage(),
            duration=duration,
            warnings=tuple(warnings or ()),
            error=text,
            cause=cause or (None if isinstance(error, str) else describe_cause(error)),
            attempts=attempts,
        )

    def to_json(self) -> dict[str, Any]:
        """The item's line of the results file, as a JSON-compatible dict."""
        return {
            "id": self.id,
            "item": self.item,
            "status": self.status,
            "answer": self.answer,
            "tool_calls": [
                {
                    "name": call.name,
                    "server": call.server,
                    "arguments": call.arguments,
                    "is_error": call.is_error,
                    "duration": call.duration,
                }
                for call in self.tool_calls
            ],
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "requests": self.usage.requests,
            },
            "duration": round(self.duration, 6),
            "warnings": list(self.warnings),
            "error": self.error,
            "cause": self.cause,
            "attempts": self.attempts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        """A result back from its `to_json` form (a results line, or a Ray actor's reply).

        Raises:
            KeyError, TypeError, ValueError: `data` is not such a dict.
        """
        status = data["status"]
        if status not in ("ok", "failed", "skipped"):
            raise ValueError(f"unknown status {status!r}")
        usage = data.get("usage") or {}
        return cls(
            id=str(data["id"]),
            item=data["item"],
            status=status,
            answer=data.get("answer"),
            tool_calls=tuple(
                ToolCallSummary(
                    name=call["name"],
                    server=call.get("server"),
                    arguments=dict(call.get("arguments") or {}),
                    is_error=bool(call.get("is_error")),
                    duration=float(call.get("duration") or 0.0),
                )
                for call in data.get("tool_calls") or ()
            ),
            usage=Usage(
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
                requests=int(usage.get("requests", 0)),
            ),
            duration=float(data.get("duration") or 0.0),
            warnings=tuple(data.get("warnings") or ()),
            error=data.get("error"),
            cause=data.get("cause"),
            attempts=int(data.get("attempts") or 0),
        )


def describe_cause(error: BaseException) -> str:
    """A short class of `error` for grouping failures: its type name, with the HTTP status
    of a provider error."""
    if isinstance(error, ModelAPIError):
        status = "no response" if error.status_code is None else str(error.status_code)
        return f"ModelAPIError {status}"
    return type(error).__name__


def _error_text(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_error_text(inner) for inner in error.exceptions)
    return str(error) or type(error).__name__


@dataclass(slots=True)
class BatchSummary:
    """Counts, failures by cause, usage and throughput of a batch, added up from its
    results as they arrive (`add`); `format` renders it for a terminal.

    `throughput` counts the items run in this invocation (ok or failed) per second of
    wall time; items skipped because an earlier run finished them do not count.
    """

    ok: int = 0
    failed: int = 0
    skipped: int = 0
    already_done: int = 0
    causes: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    def add(self, result: ItemResult) -> None:
        """Count one result."""
        self.usage = self.usage + result.usage
        if result.status == "ok":
            self.ok += 1
        elif result.status == "failed":
            self.failed += 1
            self.causes[result.cause or "unknown"] += 1
        elif result.error is None:
            self.already_done += 1
        else:
            self.skipped += 1

    @property
    def total(self) -> int:
        """Every result counted."""
        return self.ok + self.failed + self.skipped + self.already_done

    @property
    def elapsed(self) -> float:
        """Seconds from the start to `ended` (or to now)."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def throughput(self) -> float:
        """Items run (ok or failed) per second."""
        elapsed = self.elapsed
        return (self.ok + self.failed) / elapsed if elapsed > 0 else 0.0

    def finish(self) -> None:
        """Stop the clock."""
        self.ended = time.monotonic()

    def format(self) -> str:
        """The summary as a few lines of text."""
        lines = [
            f"batch: {self.total} items: {self.ok} ok, {self.failed} failed, "
            f"{self.skipped} skipped, {self.already_done} already done",
            f"time: {self.elapsed:.1f} s, {self.throughput:.2f} items/s",
            f"usage: {self.usage.requests} requests, {self.usage.input_tokens} input + "
            f"{self.usage.output_tokens} output tokens",
        ]
        if self.causes:
            lines.append("failures by cause:")
            lines.extend(f"  {count:>6}  {cause}" for cause, count in self.causes.most_common())
        return "\n".join(lines)
