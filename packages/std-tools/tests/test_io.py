"""The one I/O layer: confined walks, bounded reads, one wording, locks and stale temporaries."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from doc_processing_std_tools import _io
from doc_processing_std_tools.config import load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import (
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    NotRegularFileError,
    PathOutsideRootError,
)
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.catalog.scan import scan_once
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

LIMIT = 1024 * 1024


def _read(root: Path, relative: str) -> tuple[Path, bytes, int]:
    return _io.read_bytes(
        root,
        relative,
        what="path",
        shown=repr(relative),
        limit=LIMIT,
        missing=NotFoundError("missing"),
        folder=InvalidArgumentError("folder"),
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = (tmp_path / "root").resolve()
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "real.txt").write_text("real\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret\n", encoding="utf-8")
    return folder


def test_links_inside_the_root_are_walked_whatever_their_form(root: Path) -> None:
    (root / "absolute").symlink_to(root / "sub" / "real.txt")
    (root / "relative").symlink_to("sub/real.txt")
    (root / "sub" / "up").symlink_to("../sub/./real.txt")
    # Out through the root's parent and straight back in is still inside.
    (root / "around").symlink_to(f"../{root.name}/sub/real.txt")
    (root / "folder").symlink_to("sub")
    for name in ["absolute", "relative", "sub/up", "around", "folder/real.txt"]:
        path, data, size = _read(root, name)
        assert (path, data, size) == (root / "sub" / "real.txt", b"real\n", 5), name


def test_links_leading_out_are_refused_in_every_form(root: Path) -> None:
    secret = root.parent / "secret.txt"
    (root / "absolute").symlink_to(secret)
    (root / "relative").symlink_to("../secret.txt")
    (root / "sub" / "deep").symlink_to("../../secret.txt")
    (root / "folder").symlink_to(root.parent)
    (root / "chain").symlink_to("absolute")
    for name in ["absolute", "relative", "sub/deep", "folder/secret.txt", "chain"]:
        with pytest.raises(PathOutsideRootError, match="leads outside"):
            _read(root, name)


def test_a_loop_of_links_is_named(root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to(root / "self")
    for name in ["a", "self", "a/inner.txt"]:
        with pytest.raises(InvalidArgumentError, match="loop of symbolic links"):
            _read(root, name)


def test_missing_files_and_folders_used_as_folders_are_missing(root: Path) -> None:
    (root / "dangling").symlink_to("gone.txt")
    for name in ["nothing.txt", "sub/real.txt/inner", "nothing/inner.txt", "dangling"]:
        with pytest.raises(NotFoundError):
            _read(root, name)
    with pytest.raises(InvalidArgumentError, match="folder"):
        _read(root, "sub")


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_refused(root: Path) -> None:
    (root / "exact.txt").write_bytes(b"a" * LIMIT)
    (root / "over.txt").write_bytes(b"a" * (LIMIT + 1))
    assert len(_read(root, "exact.txt")[1]) == LIMIT
    with pytest.raises(FileTooLargeError) as caught:
        _read(root, "over.txt")
    assert str(caught.value) == (
        "'over.txt' is 1.0 MB (1,048,577 bytes), over the limit of 1,048,576 bytes "
        "(DPTTOOLS_MAX_FILE_SIZE_MB=1); raise DPTTOOLS_MAX_FILE_SIZE_MB to read it."
    )


def test_the_plain_read_steps_aside_for_anything_but_a_plain_way(root: Path) -> None:
    (root / "exact.txt").write_bytes(b"a" * LIMIT)
    (root / "over.txt").write_bytes(b"a" * (LIMIT + 1))
    (root / "link.txt").symlink_to("sub/real.txt")
    (root / "folder").symlink_to("sub")
    (root / "out").symlink_to(root.parent)
    os.mkfifo(root / "pipe")

    def plain(*parts: str) -> bytes | None:
        return _io.read_plain(root, list(parts), limit=LIMIT)

    assert plain("sub", "real.txt") == b"real\n"
    assert plain("exact.txt") == b"a" * LIMIT
    # A link anywhere on the way, whether it leads in or out, is left to `read_bytes`.
    for parts in [("link.txt",), ("folder", "real.txt"), ("out", "secret.txt")]:
        assert plain(*parts) is None, parts
    for parts in [("over.txt",), ("pipe",), ("sub",), ("nothing.txt",), ("sub", "no", "x")]:
        assert plain(*parts) is None, parts
    assert _io.read_plain(root / "nothing", ["real.txt"], limit=LIMIT) is None


def test_every_reader_words_too_large_and_not_regular_the_same_way(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    skills = tmp_path / "skills"
    folder = skills / "big"
    folder.mkdir(parents=True)
    workspace.mkdir()
    body = "x" * (LIMIT + 10)
    for place in (workspace / "big.md", folder / "big.md"):
        place.write_text(body, encoding="utf-8")
    (folder / "SKILL.md").write_text("---\nname: big\ndescription: d\n---\nx\n", "utf-8")
    # A skill whose own SKILL.md is too large is left out of the catalog (and so out of
    # reach of the tools): its diagnostic words the limit the same way.
    (skills / "huge").mkdir()
    (skills / "huge" / "SKILL.md").write_text(
        f"---\nname: huge\ndescription: d\n---\n{body}", "utf-8"
    )
    os.mkfifo(workspace / "pipe.md")
    os.mkfifo(folder / "pipe.md")
    settings = load_settings(
        {
            "DPTTOOLS_WORKSPACE_DIR": str(workspace),
            "DPTTOOLS_SKILLS_DIR": str(skills),
            "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
        }
    )
    reset_settings(settings)
    try:
        ws = Workspace.from_settings(settings)
        large: list[str] = []
        irregular: list[str] = []
        for call in (
            lambda name: ops.read_file(ws, name),
            lambda name: api.read_document(ws, name),
            lambda name: actions.load_skill_resource(skills_state, settings, "big", name),
        ):
            with pytest.raises(FileTooLargeError) as too_large:
                call("big.md")
            large.append(str(too_large.value))
            with pytest.raises(NotRegularFileError) as not_regular:
                call("pipe.md")
            irregular.append(str(not_regular.value))
        catalog = scan_once(skills, max_bytes=settings.max_file_size_bytes)
        checked = scan_once(skills, max_bytes=settings.max_file_size_bytes, lint=True)
    finally:
        reset_settings()
    tail = "over the limit of 1,048,576 bytes (DPTTOOLS_MAX_FILE_SIZE_MB=1); raise"
    assert all(tail in message and "(1,048,586 bytes)" in message for message in large)
    assert all("is not a regular file (a named pipe, socket or device)" in m for m in irregular)
    # The file too large to audit is a warning of validate (an audit finding), not of
    # list_skills; the SKILL.md too large to read is an error of both.
    assert [(d.code, tail in d.message) for d in catalog.diagnostics] == [
        ("skill_md_too_large", True),
    ]
    assert ("not_audited", True) in [(d.code, tail in d.message) for d in checked.diagnostics]


def test_threads_editing_one_file_lose_no_edit(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    lines = [f"line-{t}-{n}: old\n" for t in range(8) for n in range(10)]
    (workspace / "shared.md").write_text("".join(lines), encoding="utf-8")
    ws = Workspace(workspace.resolve(), LIMIT, 10_000)

    def worker(number: int) -> None:
        for n in range(10):
            ops.edit_file(ws, "shared.md", f"line-{number}-{n}: old", f"line-{number}-{n}: new")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (workspace / "shared.md").read_text(encoding="utf-8").count(": new\n") == 80


def test_writes_racing_to_create_the_same_new_folders_all_succeed(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ws = Workspace(workspace.resolve(), LIMIT, 10_000)
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def writer(number: int) -> None:
        barrier.wait()
        try:
            ops.write_file(ws, f"new/deeper/file-{number}.txt", f"text {number}")
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(p.name for p in (workspace / "new" / "deeper").iterdir()) == [
        f"file-{n}.txt" for n in range(8)
    ]


_HOLD_LOCK = r"""
import sys, time
from pathlib import Path
from doc_processing_std_tools import _io
with _io.locate(Path(sys.argv[1]), "shared.md", what="path") as location, _io.locked(location):
    print("locked", flush=True)
    time.sleep(1.0)
"""


def test_the_write_lock_holds_across_processes(tmp_path: Path) -> None:
    (tmp_path / "shared.md").write_text("a\n", encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "locked"
    start = time.monotonic()
    with _io.locate(tmp_path, "shared.md", what="path") as location, _io.locked(location):
        waited = time.monotonic() - start
    child.wait(10)
    child.stdout.close()
    assert waited > 0.5, "the lock of another process was not waited for"


def test_the_sweep_removes_only_our_temporaries_of_gone_writers(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    mine = _io.temporary_name("notes.md")
    host = mine.split(".dpt-")[1].split("-")[0]
    names = {
        "of_a_dead_writer": f".notes.md.dpt-{host}-{dead_pid}-0123abcd.tmp",
        "of_this_process": mine,
        "of_another_host": f".notes.md.dpt-ffffffff-{dead_pid}-0123abcd.tmp",
        "old_of_another_host": f".old.md.dpt-ffffffff-{dead_pid}-0123abcd.tmp",
        "not_ours": ".notes.md.k2j3h4.tmp",
        "old_not_ours": ".notes.md.dpt-0123.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_text("x", encoding="utf-8")
    two_hours_ago = time.time() - 7200
    for key in ("old_of_another_host", "old_not_ours"):
        os.utime(tmp_path / names[key], (two_hours_ago, two_hours_ago))
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        removed = _io.sweep_stale_temporaries(fd)
    finally:
        os.close(fd)
    assert sorted(removed) == sorted([names["of_a_dead_writer"], names["old_of_another_host"]])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(
        names[k] for k in ("of_this_process", "of_another_host", "not_ours", "old_not_ours")
    )
