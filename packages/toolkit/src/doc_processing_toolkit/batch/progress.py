"""Progress of a batch on a stream (standard error for ``dpt-agent batch``).

On a terminal, with the ``rich`` extra installed, a live bar: done of total, failed,
rate and time left. Otherwise (a log file, CI, no rich) a plain line every `interval`
seconds and one at the end, so that logs stay readable.
"""

from __future__ import annotations

import importlib.util
import time
from typing import Protocol, TextIO

from .results import ItemResult

__all__ = ["PlainProgress", "Progress", "RichProgress", "make_progress", "rich_available"]


class Progress(Protocol):
    """Shows how far a batch has got."""

    def advance(self, result: ItemResult) -> None:
        """Count one finished item."""
        ...

    def close(self) -> None:
        """Show the final state and stop."""
        ...


def _eta(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class _Counts:
    def __init__(self, total: int | None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.first: float | None = None

    def add(self, result: ItemResult) -> None:
        if self.first is None:
            self.first = time.monotonic()
        self.done += 1
        if result.status == "failed":
            self.failed += 1

    def rate(self) -> float:
        """Items per second since the first item finished (start-up is not counted)."""
        elapsed = time.monotonic() - self.first if self.first is not None else 0.0
        return (self.done - 1) / elapsed if self.done > 1 and elapsed > 0 else 0.0

    def line(self) -> str:
        rate = self.rate()
        of = f"/{self.total}" if self.total is not None else ""
        text = f"batch: {self.done}{of} done, {self.failed} failed, {rate:.2f} items/s"
        if self.total is not None and rate > 0 and self.done < self.total:
            text += f", about {_eta((self.total - self.done) / rate)} left"
        return text


class PlainProgress:
    """A line on `stream` at most every `interval` seconds, and one at `close`."""

    def __init__(self, stream: TextIO, total: int | None, *, interval: float = 10.0) -> None:
        self._stream = stream
        self._counts = _Counts(total)
        self._interval = interval
        self._last = time.monotonic()

    def advance(self, result: ItemResult) -> None:
        """Count one item; print a line when `interval` has passed since the last."""
        self._counts.add(result)
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._write()

    def close(self) -> None:
        """Print the last line (none when no item finished)."""
        if self._counts.done:
            self._write()

    def _write(self) -> None:
        self._stream.write(self._counts.line() + "\n")
        self._stream.flush()


class RichProgress:
    """A rich progress bar on `stream` (a terminal); needs the ``rich`` extra."""

    def __init__(self, stream: TextIO, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self._counts = _Counts(total)
        self._bar = Bar(
            TextColumn("batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            TextColumn("{task.fields[rate]:.2f} items/s"),
            TimeRemainingColumn(),
            console=Console(file=stream),
        )
        self._task = self._bar.add_task("batch", total=total, failed=0, rate=0.0)
        self._bar.start()

    def advance(self, result: ItemResult) -> None:
        """Move the bar by one item."""
        self._counts.add(result)
        self._bar.update(
            self._task, advance=1, failed=self._counts.failed, rate=self._counts.rate()
        )

    def close(self) -> None:
        """Stop the bar, leaving its last state on screen."""
        self._bar.stop()


def rich_available() -> bool:
    """True when the ``rich`` extra (the live progress bar) can be imported."""
    try:
        return importlib.util.find_spec("rich") is not None
    except (ImportError, ValueError):
        return False


def make_progress(stream: TextIO, total: int | None, *, interval: float = 10.0) -> Progress:
    """A `RichProgress` when `stream` is a terminal and rich is installed, else a
    `PlainProgress` printing every `interval` seconds."""
    if stream.isatty() and rich_available():
        try:
            return RichProgress(stream, total)
        except ImportError:
            pass  # found, but broken: plain lines still show the progress
    return PlainProgress(stream, total, interval=interval)
