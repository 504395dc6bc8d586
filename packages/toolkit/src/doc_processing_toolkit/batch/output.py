"""The JSONL results file: one whole line per item, and what ``--resume`` finds in it.

Each line is written with one ``write`` of the complete line on a file opened for
appending, so a crash (even ``kill -9``) leaves only whole lines behind, except in the
rare case of a line the kernel took in part; `ResultsFile.open` repairs that by dropping a
last line that has no newline and is the start of a result line. The file is synced to
disk at most every `sync_interval` seconds and on close.

The file never destroys what is not ours. Before anything is written, `ResultsFile.open`
refuses an output that is one of the batch's input files (compared by device and inode,
or by real path when the output does not exist yet, so links and ``..`` do not hide it),
an output link that leads nowhere, and a file holding a line that is not a result line
(unless `force`). A symbolic link is followed: the results go to the file it leads to, and
the link stays a link.

On resume the file is rewritten with only its ``ok`` lines, one per item: failed and
interrupted items are run again and get a single new line, so the file ends with every
item exactly once. The rewrite goes to a temporary file next to the real file, with the
real file's mode, then is renamed over it in one step.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Final, Literal

from ..errors import BatchError
from .items import id_identity
from .results import ItemResult

__all__ = ["READER", "ResultsFile", "is_result_line"]

logger = logging.getLogger(__name__)

#: How every line of ours begins (`ItemResult.to_json` puts ``id`` first): a last line
#: without its newline that begins so is a write cut short, anything else is not ours.
_RESULT_START = b'{"id": '
_STATUSES = frozenset({"ok", "failed", "skipped"})
_SHOWN_CHARS = 80
#: How many times `ResultsFile.open` tries to lock a file that another batch replaces.
_LOCK_TRIES = 5


READER: ContextVar[Literal["python", "command line"]] = ContextVar(
    "doc_processing_toolkit_batch_reader", default="python"
)
"""Who reads the messages about the output file: a program calling `Agent.run_batch`
(they name its arguments, ``resume=True``) or a person running ``dpt-agent batch`` (they
name its options, ``--resume``). ``dpt-agent`` sets it for its batch."""

_OPTIONS: Final = {
    "output": ("--output", "output="),
    "resume": ("--resume", "resume=True"),
    "force": ("--force", "force=True"),
}


def _option(name: str) -> str:
    """How the reader (`READER`) sets the batch option `name`."""
    flag, argument = _OPTIONS[name]
    return flag if READER.get() == "command line" else argument


def is_result_line(record: object) -> bool:
    """Whether `record` (a parsed JSON line) is a results line: an object with a string
    ``id``, an ``item`` and a ``status`` of ``ok``, ``failed`` or ``skipped``."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and "item" in record
        and record.get("status") in _STATUSES
    )


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\r")
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


class ResultsFile:
    """A results file being written.

    Args:
        path: the JSONL file (a symbolic link is followed; the link stays).
        resume: keep the items an earlier run recorded as ok (see `open`); without it an
            existing non-empty file is refused rather than overwritten.
        force: with `resume`, go on even though the file holds lines that are not result
            lines (they are dropped); without it such a file is refused.
        sync_interval: the most seconds between two syncs to disk.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        resume: bool = False,
        force: bool = False,
        sync_interval: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.resume = resume
        self.force = force
        self.sync_interval = sync_interval
        self._fd: int | None = None
        self._last_sync = 0.0
        self.repaired = False
        """Whether `open` dropped a partial last line or (with `force`) lines that were not
        result lines."""

    def open(self, *, inputs: Iterable[str | os.PathLike[str]] = ()) -> set[str]:
        """Open the file for appending and return the ids recorded as ok.

        With `resume`, the ok lines of the file are kept (the first one of an item seen
        twice) and the other result lines are dropped; without it the file must be
        absent or empty.

        Args:
            inputs: the batch's input files (see `ItemSource.files`): an output that is
                one of them is refused.

        Raises:
            BatchError: the output is one of `inputs`; it is a link to nothing; its folder
                does not exist; it is not a regular file; it is not empty without
                `resume`; it holds a line that is not a result line (without `force`); or
                it cannot be read or written. The file is left as it was.
        """
        name = str(self.path)
        real = self._real_target()
        same_file = _same_file_test(real)
        for source in inputs:
            if same_file(Path(source)):
                raise BatchError(
                    f"the output file {name!r} is also the input ({os.fspath(source)!r}): "
                    f"writing results there would destroy the items. Choose another "
                    f"{_option('output')}."
                )
        done: set[str] = set()
        fd: int | None = None
        try:
            info = real.stat() if real.exists() else None
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise BatchError(
                    f"the output file {name!r} is not a regular file; choose a file path "
                    f"for {_option('output')}."
                )
            fd = self._open_locked(real)
            info = os.fstat(fd)
            if info.st_size > 0:
                data = _read_all(fd)
                if not self.resume:
                    raise BatchError(self._not_empty(name, data))
                done, content = self._keep_ok_lines(data)
                if content != data:
                    if info.st_nlink > 1:
                        raise BatchError(
                            f"the output file {name!r} has {info.st_nlink} hard links; "
                            "resuming rewrites it by a rename, which would leave the other "
                            "names with the old content. Copy it to a file of its own and "
                            "resume into that."
                        )
                    fd = _replace(real, content, info, fd)
        except OSError as exc:
            if fd is not None:
                os.close(fd)
            raise BatchError(f"cannot open the output file {name!r}: {exc}") from None
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        self._fd = fd
        self._last_sync = time.monotonic()
        return done

    def _open_locked(self, real: Path) -> int:
        """The file at `real`, opened for appending (created when missing) and holding an
        exclusive lock for as long as it stays open: one batch at a time writes a results
        file, so two ``--resume`` runs never run the same items nor lose each other's
        lines.

        Raises:
            BatchError: another batch holds the lock.
            OSError: the file cannot be opened.
        """
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        for _ in range(_LOCK_TRIES):
            fd = os.open(real, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise BatchError(
                    f"another batch is writing to the output file {str(self.path)!r} (it "
                    "holds the file's lock); wait until it ends, then --resume (resume=True), "
                    "or choose another --output (output=)."
                ) from None
            except BaseException:
                os.close(fd)
                raise
            # The lock holds the file that was opened; a batch that resumed meanwhile may
            # have replaced the file at this path (its rewrite is a rename): then lock that.
            try:
                same = os.path.samestat(os.fstat(fd), real.stat())
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)
        raise BatchError(
            f"the output file {str(self.path)!r} keeps being replaced while this batch opens "
            "it; another batch is writing to it. Choose another --output (output=)."
        )

    def _real_target(self) -> Path:
        """The file the results go to: the path itself, or where its links lead."""
        name = str(self.path)
        try:
            is_link = self.path.is_symlink()
            real = Path(os.path.realpath(self.path))
        except OSError as exc:
            raise BatchError(f"cannot use the output file {name!r}: {exc}") from None
        if is_link and not real.exists():
            raise BatchError(
                f"the output file {name!r} is a symbolic link to {str(self.path.readlink())!r}, "
                "which does not exist; a batch does not create a file through a link. "
                f"Create that file, remove the link, or choose another {_option('output')}."
            )
        if not real.parent.is_dir():
            raise BatchError(
                f"the folder of the output file {name!r} does not exist; create it "
                f"or choose another {_option('output')}."
            )
        return real

    def _not_empty(self, name: str, data: bytes) -> str:
        first = _first_foreign_line(data)
        if first is None:
            return (
                f"the output file {name!r} already holds results; pass {_option('resume')} "
                f"to continue it, or choose another {_option('output')}."
            )
        number, line = first
        return (
            f"the output file {name!r} is not empty and is not a results file: line {number} "
            f"is not a result line ({_shown(line)!r}); it is left as it is. Choose another "
            f"{_option('output')}."
        )

    def _keep_ok_lines(self, data: bytes) -> tuple[set[str], bytes]:
        """The ids recorded as ok in `data` and the content to keep: the first ok line of
        each item (see `open`)."""
        lines = data.split(b"\n")
        last = lines.pop()  # b"" when the file ends with a newline
        if last and last.startswith(_RESULT_START) and not is_result_line(_parse(last)):
            logger.warning(
                "%s ends with a partial line (an interrupted write); it is dropped", self.path
            )
            self.repaired = True
        elif last:
            lines.append(last)
        kept: list[bytes] = []
        done: set[str] = set()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = _parse(line)
            if not is_result_line(record):
                if not self.force:
                    raise BatchError(
                        f"the output file {str(self.path)!r} holds lines that are not results: "
                        f"line {number} is not a result line ({_shown(line)!r}). Resuming "
                        "would drop them, so the file is left as it is. Choose another "
                        f"{_option('output')}, or pass {_option('force')} to resume into it "
                        "and drop such lines."
                    )
                logger.warning(
                    "%s line %d is not a result line; dropped (force)", self.path, number
                )
                self.repaired = True
                continue
            item_id = result_identity(record)
            if record["status"] == "ok" and item_id not in done:
                done.add(item_id)
                kept.append(line + b"\n")
        return done, b"".join(kept)

    def write(self, result: ItemResult) -> None:
        """Append `result` as one line.

        Raises:
            BatchError: the file is not open, or the write failed (disk full, ...).
        """
        if self._fd is None:
            raise BatchError("the results file is not open; call open() first.")
        data = _line(result.to_json())
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


def _line(record: dict[str, Any]) -> bytes:
    """`record` as one line of UTF-8 JSON. Text that UTF-8 cannot hold (a lone surrogate
    such as ``"\ud800"``, which a JSON input line may carry) is written as a JSON escape
    instead, so the line is valid JSON and reads back as the same text."""
    try:
        return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")


def result_identity(record: dict[str, Any]) -> str:
    """The identity of the item a results line records: its ``id``, except that an id of
    the form earlier versions wrote for a mapping's ``id`` field (``id:7`` for both 7 and
    "7") is read as the typed identity of the item the line holds."""
    recorded = str(record["id"])
    item = record.get("item")
    if isinstance(item, dict):
        own = item.get("id")
        if isinstance(own, str | int) and recorded == f"id:{own}":
            return id_identity(own)
    return recorded


def _first_foreign_line(data: bytes) -> tuple[int, bytes] | None:
    """The number and text of the first line of `data` that is not a result line (a last
    line without its newline counts only when it is not a cut result line)."""
    lines = data.split(b"\n")
    last = lines.pop()
    for number, line in enumerate(lines, start=1):
        if line.strip() and not is_result_line(_parse(line)):
            return number, line
    if last and not last.startswith(_RESULT_START):
        return len(lines) + 1, last
    return None


def _same_file_test(output: Path) -> Callable[[Path], bool]:
    """A test of whether a path names the file `output` (a real path): the same device
    and inode when `output` exists, else the same real path. Made once for all the
    inputs: a pattern may match a million files."""
    try:
        info = output.stat()
    except OSError:
        # Only a path with the same name can lead to a file that does not exist yet.
        return lambda source: (
            source.name == output.name and Path(os.path.realpath(source)) == output
        )
    identity = (info.st_dev, info.st_ino)

    def same(source: Path) -> bool:
        try:
            other = source.stat()
        except OSError:
            return False
        return (other.st_dev, other.st_ino) == identity

    return same


def _read_all(fd: int) -> bytes:
    """Every byte of the open file `fd`, from its start."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _replace(real: Path, content: bytes, info: os.stat_result, held: int) -> int:
    """Swap the content of the regular file `real` for `content` in one rename: a
    temporary file next to it, with its mode (and owner, where allowed), synced, and
    locked before the rename, so the file at `real` is never unlocked. Returns the new
    file, open for appending with its lock; `held` (the old file, locked) is closed."""
    handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content)
            file.flush()
            os.fchmod(file.fileno(), stat.S_IMODE(info.st_mode))
            if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.fchown(file.fileno(), info.st_uid, info.st_gid)
                except OSError:
                    logger.debug("could not keep the owner of %s", real, exc_info=True)
            os.fsync(file.fileno())
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temporary, flags | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            Path(temporary).replace(real)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    os.close(held)
    _sync_folder(real.parent)
    return fd


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
