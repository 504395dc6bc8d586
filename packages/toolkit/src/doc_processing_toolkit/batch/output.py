"""The JSONL results file: one whole line per item, and what ``--resume`` finds in it.

Each line is written with one ``write`` of the complete line on a file opened for
appending, so a crash (even ``kill -9``) leaves only whole lines behind, except in the
rare case of a line the kernel took in part; `ResultsFile.open` repairs that by dropping a
last line that has no newline. The file is synced to disk at most every `sync_interval`
seconds and on close.

On resume the file is rewritten (to a temporary file, then renamed over it) with only its
``ok`` lines, one per item: failed and interrupted items are run again and get a single new
line, so the file ends with every item exactly once.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path

from ..errors import BatchError
from .results import ItemResult

__all__ = ["ResultsFile"]

logger = logging.getLogger(__name__)


class ResultsFile:
    """A results file being written.

    Args:
        path: the JSONL file.
        resume: keep the items an earlier run recorded as ok (see `open`); without it an
            existing non-empty file is refused rather than overwritten.
        sync_interval: the most seconds between two syncs to disk.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, resume: bool = False, sync_interval: float = 1.0
    ) -> None:
        self.path = Path(path)
        self.resume = resume
        self.sync_interval = sync_interval
        self._fd: int | None = None
        self._last_sync = 0.0
        self.repaired = False
        """Whether `open` dropped a partial last line or lines that were not JSON."""

    def open(self) -> set[str]:
        """Open the file for appending and return the ids recorded as ok.

        With `resume`, the ok lines of the file are kept (the first one of an item seen
        twice) and every other line is dropped; without it the file must be absent or
        empty.

        Raises:
            BatchError: the file exists and is not empty without `resume`, its folder does
                not exist, or it cannot be read or written.
        """
        if not self.path.parent.is_dir():
            raise BatchError(
                f"the folder of the output file {str(self.path)!r} does not exist; create it "
                "or choose another --output."
            )
        done: set[str] = set()
        try:
            exists = self.path.is_file() and self.path.stat().st_size > 0
            if exists and not self.resume:
                raise BatchError(
                    f"the output file {str(self.path)!r} already holds results; pass --resume "
                    "(resume=True) to continue it, or choose another output file."
                )
            if exists:
                done = self._keep_ok_lines()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BatchError(f"cannot open the output file {str(self.path)!r}: {exc}") from None
        self._last_sync = time.monotonic()
        return done

    def _keep_ok_lines(self) -> set[str]:
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        if lines and lines[-1]:
            logger.warning(
                "%s ends with a partial line (an interrupted write); it is dropped", self.path
            )
            self.repaired = True
        kept: list[bytes] = []
        done: set[str] = set()
        for number, line in enumerate(lines[:-1], start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                item_id, status = str(record["id"]), record["status"]
            except (ValueError, KeyError, TypeError):
                logger.warning("%s line %d is not a result line; it is dropped", self.path, number)
                self.repaired = True
                continue
            if status == "ok" and item_id not in done:
                done.add(item_id)
                kept.append(line + b"\n")
        if sum(map(len, kept)) != len(data):
            self._replace_with(b"".join(kept))
        return done

    def _replace_with(self, content: bytes) -> None:
        """Swap the file's content for `content` in one rename, synced."""
        handle, temporary = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(content)
                file.flush()
                os.fsync(file.fileno())
            Path(temporary).replace(self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _sync_folder(self.path.parent)

    def write(self, result: ItemResult) -> None:
        """Append `result` as one line.

        Raises:
            BatchError: the file is not open, or the write failed (disk full, ...).
        """
        if self._fd is None:
            raise BatchError("the results file is not open; call open() first.")
        line = json.dumps(result.to_json(), ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8")
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # only for lines larger than the kernel takes at once
                written += os.write(self._fd, data[written:])
            now = time.monotonic()
            if now - self._last_sync >= self.sync_interval:
                os.fsync(self._fd)
                self._last_sync = now
        except OSError as exc:
            raise BatchError(f"cannot write to the output file {str(self.path)!r}: {exc}") from None

    def close(self) -> None:
        """Sync the file to disk and close it (again: nothing happens)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        logger.debug("could not sync folder %s", folder, exc_info=True)
    finally:
        os.close(fd)
