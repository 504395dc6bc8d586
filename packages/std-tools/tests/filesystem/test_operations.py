"""The file operations, called directly: confinement, limits, atomic writes, searching."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from doc_processing_std_tools import _io
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import (
    BinaryFileError,
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    PathOutsideRootError,
)
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace, glob_to_regex


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# read_file


def test_read_file_returns_the_whole_text(ws: Workspace, root: Path) -> None:
    (root / "notes.md").write_text("one\ntwo\nthree\n", encoding="utf-8")
    assert ops.read_file(ws, "notes.md") == "one\ntwo\nthree\n"


def test_read_file_returns_an_inclusive_line_range(ws: Workspace, root: Path) -> None:
    (root / "notes.md").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    assert ops.read_file(ws, "notes.md", 2, 3) == "two\nthree\n"
    assert ops.read_file(ws, "notes.md", start_line=3) == "three\nfour\n"
    assert ops.read_file(ws, "notes.md", end_line=1) == "one\n"


def test_read_file_refuses_a_range_past_the_end(ws: Workspace, root: Path) -> None:
    (root / "notes.md").write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="has 2 lines"):
        ops.read_file(ws, "notes.md", 5)
    with pytest.raises(InvalidArgumentError, match="before start_line"):
        ops.read_file(ws, "notes.md", 2, 1)
    with pytest.raises(InvalidArgumentError, match="1 or more"):
        ops.read_file(ws, "notes.md", 0)


def test_read_file_strips_a_byte_order_mark(ws: Workspace, root: Path) -> None:
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\r\n")
    assert ops.read_file(ws, "bom.txt") == "hello\r\n"


def test_read_file_cuts_long_text_and_says_where_to_go_on(ws: Workspace, root: Path) -> None:
    lines = [f"line {i:04d} " + "x" * 40 for i in range(1, 201)]
    (root / "long.txt").write_text("\n".join(lines), encoding="utf-8")
    out = ops.read_file(ws, "long.txt")
    assert len(out) <= ws.output_limit
    assert "truncated" in out
    next_line = int(out.rsplit("start_line=", 1)[1].split()[0])
    shown = out.split("\n[... truncated")[0]
    complete_lines = shown.count("\n")
    # Reading on from the named line skips nothing and repeats only a few lines.
    assert complete_lines - 10 <= next_line <= complete_lines + 1
    assert ops.read_file(ws, "long.txt", next_line, next_line).startswith(f"line {next_line:04d}")


@pytest.mark.parametrize("ending", ["\r", "\x0c", "\u2028", "\r\n"])
def test_read_file_hints_count_lines_as_start_line_does(
    ws: Workspace, root: Path, ending: str
) -> None:
    # start_line counts lines with str.splitlines, which also ends them at "\r", "\f",
    # "\u2028"...; the hint must count the same way, or the reader never gets past line 1.
    lines = [f"line {i:04d} " + "x" * 40 + ending for i in range(1, 201)]
    (root / "old-mac.txt").write_bytes("".join(lines).encode("utf-8"))
    seen: list[str] = []
    start = 1
    for _ in range(len(lines)):
        out = ops.read_file(ws, "old-mac.txt", start_line=start)
        assert len(out) <= ws.output_limit
        if "\n[... truncated" not in out:
            seen.extend(out.splitlines(keepends=True))
            break
        next_line = int(out.rsplit("start_line=", 1)[1].split()[0])
        assert next_line > start
        # Keep the complete lines before the restart line; the rest comes again.
        seen.extend(out.splitlines(keepends=True)[: next_line - start])
        start = next_line
    else:
        pytest.fail("reading on by the hints never reached the end of the file")
    assert seen == lines


def test_read_file_refuses_binary_and_non_utf8_files(ws: Workspace, root: Path) -> None:
    (root / "image.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(BinaryFileError, match="binary"):
        ops.read_file(ws, "image.bin")
    with pytest.raises(BinaryFileError, match="not UTF-8"):
        ops.read_file(ws, "latin1.txt")


def test_read_file_refuses_a_file_over_the_size_limit(ws: Workspace, root: Path) -> None:
    (root / "big.txt").write_bytes(b"a" * (ws.max_file_bytes + 1))
    with pytest.raises(FileTooLargeError, match="DPTTOOLS_MAX_FILE_SIZE_MB"):
        ops.read_file(ws, "big.txt")


def test_read_file_names_missing_files_and_folders(ws: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "notes.txt").write_text("notes", encoding="utf-8")
    (root / "gone").symlink_to(root / "nowhere.txt")
    for path in ["missing.txt", "gone", "notes.txt/inner.txt"]:
        with pytest.raises(NotFoundError) as caught:
            ops.read_file(ws, path)
        assert str(caught.value) == (
            f"There is no file {path!r} in the workspace {root}; "
            "use list_directory or find_files to see what exists."
        )
    with pytest.raises(InvalidArgumentError) as caught:
        ops.read_file(ws, "sub")
    assert str(caught.value) == (
        "'sub' is a folder, not a file; use list_directory to see what it holds and pass "
        "the path of a file in it."
    )


def test_existing_file_keeps_the_real_file_open_with_its_path_and_size(
    ws: Workspace, root: Path
) -> None:
    (root / "data").mkdir()
    (root / "data" / "exact.txt").write_bytes(b"a" * ws.max_file_bytes)
    (root / "link.txt").symlink_to(root / "data" / "exact.txt")
    with ops.existing_file(ws, "link.txt") as (path, fd, status):
        (root / "data" / "exact.txt").unlink()  # the open file stays readable
        assert path == root / "data" / "exact.txt"
        assert status.st_size == ws.max_file_bytes
        assert os.pread(fd, 2, 0) == b"aa"
    with pytest.raises(OSError):
        os.fstat(fd)  # closed after the block


def test_paths_outside_the_workspace_are_refused(ws: Workspace, root: Path, outside: Path) -> None:
    for bad in ("../secret.txt", str(outside), "sub/../../secret.txt"):
        with pytest.raises(PathOutsideRootError):
            ops.read_file(ws, bad)
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(outside.parent)
    with pytest.raises(PathOutsideRootError, match="outside"):
        ops.read_file(ws, "link.txt")
    with pytest.raises(PathOutsideRootError):
        ops.write_file(ws, "link.txt", "overwritten")
    with pytest.raises(PathOutsideRootError):
        ops.write_file(ws, "linkdir/new.txt", "x")
    with pytest.raises(PathOutsideRootError):
        ops.edit_file(ws, "link.txt", "top", "bottom")
    with pytest.raises(PathOutsideRootError):
        ops.get_file_info(ws, "link.txt")
    with pytest.raises(PathOutsideRootError):
        ops.list_directory(ws, "linkdir")
    assert outside.read_text(encoding="utf-8") == "top secret\n"
    assert not (outside.parent / "new.txt").exists()


def test_a_symlink_inside_the_workspace_is_followed(ws: Workspace, root: Path) -> None:
    (root / "real.txt").write_text("real\n", encoding="utf-8")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert ops.read_file(ws, "alias.txt") == "real\n"
    ops.write_file(ws, "alias.txt", "changed\n")
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text(encoding="utf-8") == "changed\n"


# write_file


def test_write_file_creates_a_file_and_missing_folders(ws: Workspace, root: Path) -> None:
    message = ops.write_file(ws, "notes/new/plan.md", "---\nname: new\n---\n")
    assert "created" in message
    assert (root / "notes/new/plan.md").read_text(encoding="utf-8") == "---\nname: new\n---\n"


def test_write_file_replaces_content_and_keeps_permissions(ws: Workspace, root: Path) -> None:
    target = root / "notes.txt"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    message = ops.write_file(ws, "notes.txt", "new")
    assert "replaced" in message and "permissions" not in message
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in root.iterdir()) == ["notes.txt"]


def test_write_file_refuses_content_over_the_limit_and_writes_nothing(
    ws: Workspace, root: Path
) -> None:
    (root / "keep.txt").write_text("keep", encoding="utf-8")
    before = snapshot(root)
    with pytest.raises(FileTooLargeError, match="nothing was written"):
        ops.write_file(ws, "keep.txt", "x" * (ws.max_file_bytes + 1))
    assert snapshot(root) == before


def test_write_file_refuses_a_folder(ws: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    with pytest.raises(InvalidArgumentError, match="is a folder"):
        ops.write_file(ws, "sub", "x")


def test_a_failed_atomic_write_leaves_the_target_and_no_temporary(
    ws: Workspace, root: Path
) -> None:
    folder = root / "folder"
    folder.mkdir()
    (folder / "inside.txt").write_text("kept", encoding="utf-8")
    with pytest.raises(OSError), _io.locate(root, "folder", what="path") as location:
        _io.write_atomically(location, b"new content", mode=0o644)
    assert sorted(p.name for p in root.iterdir()) == ["folder"]
    assert (folder / "inside.txt").read_text(encoding="utf-8") == "kept"


def test_write_file_in_a_read_only_folder_fails_without_leftovers(
    ws: Workspace, root: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    locked = root / "locked"
    locked.mkdir()
    (locked / "a.txt").write_text("a", encoding="utf-8")
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            ops.write_file(ws, "locked/a.txt", "b")
        assert [p.name for p in locked.iterdir()] == ["a.txt"]
        assert (locked / "a.txt").read_text(encoding="utf-8") == "a"
    finally:
        locked.chmod(0o700)


def tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_content_that_cannot_be_encoded_writes_nothing(ws: Workspace, root: Path) -> None:
    (root / "kept.md").write_text("old\n", encoding="utf-8")
    before = tree(root)
    with pytest.raises(InvalidArgumentError, match=r"lone surrogate.*Nothing was written"):
        ops.write_file(ws, "new/deeper/file.md", "ok \ud800 not ok")
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        ops.write_file(ws, "kept.md", "\udfff")
    with pytest.raises(InvalidArgumentError, match=r"new_text.*lone surrogate"):
        ops.edit_file(ws, "kept.md", "old", "\ud800")
    assert tree(root) == before
    assert (root / "kept.md").read_text(encoding="utf-8") == "old\n"


# A child process whose files may not grow past 1000 bytes: the write of a larger file
# fails half way with EFBIG, as it would on a full disk.
_FAILING_WRITE = """
import resource, signal, sys
from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem import operations as ops
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
settings = load_settings({"DPTTOOLS_WORKSPACE_DIR": sys.argv[1]})
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
ws = ops.Workspace.from_settings(settings)
for path in ("kept.txt", "new/deeper/big.txt"):
    try:
        ops.write_file(ws, path, "x" * 5000)
    except OSError as exc:
        print(path, type(exc).__name__)
"""


@pytest.mark.skipif(os.name != "posix", reason="file size limits are POSIX")
def test_a_write_that_fails_midway_leaves_no_trace(root: Path) -> None:
    (root / "kept.txt").write_text("the old content\n", encoding="utf-8")
    before = tree(root)
    done = subprocess.run(
        [sys.executable, "-c", _FAILING_WRITE, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == ["kept.txt OSError", "new/deeper/big.txt OSError"]
    assert tree(root) == before
    assert (root / "kept.txt").read_text(encoding="utf-8") == "the old content\n"


_WRITE_WITH_UMASK = """
import os, sys
from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem import operations as ops
os.umask(int(sys.argv[2], 8))
settings = load_settings({"DPTTOOLS_WORKSPACE_DIR": sys.argv[1]})
ops.write_file(ops.Workspace.from_settings(settings), sys.argv[3], "private\\n")
"""


@pytest.mark.skipif(os.name != "posix", reason="permission bits are POSIX")
@pytest.mark.parametrize(("umask", "mode"), [("077", 0o600), ("022", 0o644), ("002", 0o664)])
def test_a_new_file_gets_the_permissions_the_umask_allows(
    root: Path, umask: str, mode: int
) -> None:
    subprocess.run(
        [sys.executable, "-c", _WRITE_WITH_UMASK, str(root), umask, f"new-{umask}.txt"],
        check=True,
        timeout=60,
    )
    assert stat.S_IMODE((root / f"new-{umask}.txt").stat().st_mode) == mode


def test_a_read_only_file_is_neither_replaced_nor_edited(ws: Workspace, root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    frozen = root / "frozen.txt"
    frozen.write_text("keep me\n", encoding="utf-8")
    frozen.chmod(0o444)
    try:
        with pytest.raises(InvalidArgumentError, match="is read-only"):
            ops.write_file(ws, "frozen.txt", "replaced\n")
        with pytest.raises(InvalidArgumentError, match="is read-only"):
            ops.edit_file(ws, "frozen.txt", "keep", "lose")
        assert frozen.read_text(encoding="utf-8") == "keep me\n"
        assert sorted(p.name for p in root.iterdir()) == ["frozen.txt"]
    finally:
        frozen.chmod(0o644)


def test_a_file_with_the_longest_name_the_system_allows_is_written_and_edited(
    ws: Workspace, root: Path
) -> None:
    name = "n" * 251 + ".txt"
    ops.write_file(ws, name, "draft\n")
    ops.edit_file(ws, name, "draft", "final")
    assert (root / name).read_text(encoding="utf-8") == "final\n"
    assert [p.name for p in root.iterdir()] == [name]


# edit_file


def test_edit_file_replaces_the_one_occurrence(ws: Workspace, root: Path) -> None:
    (root / "doc.md").write_text("# Title\n\nTODO: fill in\n", encoding="utf-8")
    message = ops.edit_file(ws, "doc.md", "TODO: fill in", "Done.")
    assert "line 3" in message
    assert (root / "doc.md").read_text(encoding="utf-8") == "# Title\n\nDone.\n"


def test_edit_file_says_how_often_the_text_was_found(ws: Workspace, root: Path) -> None:
    (root / "doc.md").write_text("a b a b a\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="found 3 times"):
        ops.edit_file(ws, "doc.md", "a", "z")
    with pytest.raises(InvalidArgumentError, match=r"not found \(0 times\)"):
        ops.edit_file(ws, "doc.md", "q", "z")
    with pytest.raises(InvalidArgumentError, match="empty"):
        ops.edit_file(ws, "doc.md", "", "z")
    assert (root / "doc.md").read_text(encoding="utf-8") == "a b a b a\n"


def test_edit_file_keeps_windows_line_endings_and_bom(ws: Workspace, root: Path) -> None:
    (root / "win.txt").write_bytes(b"\xef\xbb\xbffirst\r\nsecond\r\nthird\r\n")
    ops.edit_file(ws, "win.txt", "first\nsecond", "one\ntwo")
    assert (root / "win.txt").read_bytes() == b"\xef\xbb\xbfone\r\ntwo\r\nthird\r\n"


def test_edit_file_refuses_a_result_over_the_limit(ws: Workspace, root: Path) -> None:
    (root / "doc.md").write_text("marker", encoding="utf-8")
    with pytest.raises(FileTooLargeError, match="nothing was changed"):
        ops.edit_file(ws, "doc.md", "marker", "y" * (ws.max_file_bytes + 1))
    assert (root / "doc.md").read_text(encoding="utf-8") == "marker"


# list_directory, find_files


def test_list_directory_shows_folders_first_then_files(ws: Workspace, root: Path) -> None:
    (root / "b.txt").write_text("12345", encoding="utf-8")
    (root / "a-dir").mkdir()
    (root / "A.md").write_text("", encoding="utf-8")
    lines = ops.list_directory(ws).splitlines()
    assert lines[0] == ".: 1 folders, 2 files"
    assert lines[1:] == ["a-dir/", "A.md  0 bytes", "b.txt  5 bytes"]
    assert ops.list_directory(ws, "a-dir") == "a-dir: empty folder"


def test_list_directory_marks_symlinks_and_never_follows_them_out(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "real.txt").write_text("x", encoding="utf-8")
    (root / "inner").symlink_to(root / "real.txt")
    (root / "escape").symlink_to(outside)
    listing = ops.list_directory(ws)
    assert "escape  (symbolic link leading outside the workspace)" in listing
    assert "inner  (symbolic link to real.txt)" in listing
    assert "secret" not in listing


def test_find_files_matches_globs_across_folders(ws: Workspace, root: Path) -> None:
    for rel in ("a.md", "docs/b.md", "docs/deep/c.md", "docs/d.txt", ".git/e.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x", encoding="utf-8")
    assert ops.find_files(ws, "*.md").splitlines() == ["a.md"]
    assert ops.find_files(ws, "./*.md").splitlines() == ["a.md"]
    assert ops.find_files(ws, "**/*.md").splitlines() == ["a.md", "docs/b.md", "docs/deep/c.md"]
    assert ops.find_files(ws, "*.md", "docs").splitlines() == ["docs/b.md"]
    assert ops.find_files(ws, "docs/?.[tm][xd]*").splitlines() == ["docs/b.md", "docs/d.txt"]
    assert "No files" in ops.find_files(ws, "*.pdf")


def test_find_files_refuses_patterns_that_leave_the_folder(ws: Workspace) -> None:
    with pytest.raises(PathOutsideRootError):
        ops.find_files(ws, "../*")
    with pytest.raises(PathOutsideRootError):
        ops.find_files(ws, "/etc/*")
    with pytest.raises(InvalidArgumentError):
        ops.find_files(ws, "  ")


def test_find_files_skips_symlinks_that_lead_out(ws: Workspace, root: Path, outside: Path) -> None:
    (root / "escape.txt").symlink_to(outside)
    (root / "escape-dir").symlink_to(outside.parent)
    assert "No files" in ops.find_files(ws, "**/*.txt")


def test_glob_to_regex_keeps_single_stars_inside_one_folder() -> None:
    assert glob_to_regex("*.py").match("a.py")
    assert not glob_to_regex("*.py").match("x/a.py")
    assert glob_to_regex("**/a.py").match("a.py")
    assert glob_to_regex("src/**").match("src/x/y.txt")
    assert glob_to_regex("[!a]b").match("cb")
    assert not glob_to_regex("[!a]b").match("ab")
    assert glob_to_regex("a[b").match("a[b")


# search_text


def test_search_text_reports_path_line_and_text(ws: Workspace, root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs/a.md").write_text("alpha\nInvoice total: 12\n", encoding="utf-8")
    (root / "b.txt").write_text("invoice\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x00invoice")
    assert ops.search_text(ws, r"total: \d+") == "docs/a.md:2: Invoice total: 12"
    assert ops.search_text(ws, "invoice", ignore_case=True).splitlines() == [
        "b.txt:1: invoice",
        "docs/a.md:2: Invoice total: 12",
    ]
    assert ops.search_text(ws, "invoice", include="*.md", ignore_case=True).splitlines() == [
        "docs/a.md:2: Invoice total: 12"
    ]
    assert ops.search_text(ws, "alpha", path="docs/a.md") == "docs/a.md:1: alpha"


def test_search_text_is_bounded(ws: Workspace, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 50 + "x" * 1000 + "hit\n", encoding="utf-8")
    out = ops.search_text(ws, "hit", max_results=5).splitlines()
    assert out[:5] == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert "stopped after 5 matches" in out[5]
    long_line = ops.search_text(ws, "x+hit")
    assert long_line.endswith("…") and len(long_line) < 400
    with pytest.raises(InvalidArgumentError, match="between 1 and"):
        ops.search_text(ws, "hit", max_results=0)


def test_search_text_explains_a_bad_pattern_and_no_match(ws: Workspace, root: Path) -> None:
    (root / "a.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="not a valid regular expression"):
        ops.search_text(ws, "(unclosed")
    assert ops.search_text(ws, "nothing-here") == (
        "No match for 'nothing-here' under . (1 files searched)."
    )


def test_search_text_skips_files_outside_through_symlinks(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "escape.txt").symlink_to(outside)
    assert ops.search_text(ws, "secret").startswith("No match")


def test_search_text_skips_binary_and_oversized_files(ws: Workspace, root: Path) -> None:
    (root / "small.txt").write_text("needle\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    (root / "huge.txt").write_bytes(b"needle\n" + b"x" * ws.max_file_bytes)
    assert ops.search_text(ws, "needle") == "small.txt:1: needle"
    assert ops.search_text(ws, "nothing").endswith("(1 files searched).")


def test_listing_finding_and_searching_are_cut_at_the_output_limit(
    ws: Workspace, root: Path
) -> None:
    for number in range(200):
        (root / f"a-rather-long-file-name-{number:03}.txt").write_text("hit\n", encoding="utf-8")
    outputs = {
        "list_directory": ops.list_directory(ws),
        "find_files": ops.find_files(ws, "*.txt"),
        "search_text": ops.search_text(ws, "hit", max_results=200),
    }
    for name, out in outputs.items():
        assert len(out) <= ws.output_limit, name
        assert "[... truncated:" in out, name


# get_file_info


def test_get_file_info_describes_files_and_folders(ws: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub/a.md").write_text("one\ntwo\n", encoding="utf-8")
    (root / "link.md").symlink_to(root / "sub/a.md")
    info = json.loads(ops.get_file_info(ws, "sub/a.md"))
    assert info["type"] == "file"
    assert info["size_bytes"] == 8
    assert info["line_count"] == 2
    assert info["is_text"] is True
    assert info["permissions"].startswith("-rw")
    folder = json.loads(ops.get_file_info(ws, "sub"))
    assert folder["type"] == "directory" and folder["entries"] == 1
    link = json.loads(ops.get_file_info(ws, "link.md"))
    assert link["symbolic_link_to"] == "sub/a.md"
    assert json.loads(ops.get_file_info(ws, "."))["path"] == "."
    with pytest.raises(NotFoundError):
        ops.get_file_info(ws, "nope")


def test_get_file_info_says_when_a_file_is_binary_or_too_big(ws: Workspace, root: Path) -> None:
    (root / "blob").write_bytes(b"\x00\x01")
    (root / "big.txt").write_bytes(b"a" * (ws.max_file_bytes + 1))
    assert json.loads(ops.get_file_info(ws, "blob"))["is_text"] is False
    big = json.loads(ops.get_file_info(ws, "big.txt"))
    assert big["within_size_limit"] is False and "line_count" not in big


def test_nothing_is_ever_deleted(ws: Workspace, root: Path) -> None:
    (root / "a.txt").write_text("alpha beta\n", encoding="utf-8")
    ops.write_file(ws, "b.txt", "new\n")
    ops.edit_file(ws, "a.txt", "beta", "gamma")
    ops.write_file(ws, "a.txt", "")
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt"]


# A named pipe would make a reader wait forever for a writer; the checks run in a child
# process so that a regression fails on the timeout instead of hanging the test run.
_NAMED_PIPE_CHECKS = """
import json, sys
from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import StdToolsError
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem import operations as ops
settings = load_settings({"DPTTOOLS_WORKSPACE_DIR": sys.argv[1]})
ws = ops.Workspace.from_settings(settings)
out = {"search": ops.search_text(ws, "needle"), "find": ops.find_files(ws, "*")}
calls = {
    "read_file": lambda: ops.read_file(ws, "pipe"),
    "edit_file": lambda: ops.edit_file(ws, "pipe", "a", "b"),
    "write_file": lambda: ops.write_file(ws, "pipe", "x"),
    "read_document": lambda: api.read_document(ws, "pipe"),
}
for name, call in calls.items():
    try:
        call()
        out[name] = "no error"
    except StdToolsError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_named_pipes_are_refused_and_skipped_never_waited_on(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "notes.txt").write_text("a needle\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _NAMED_PIPE_CHECKS, str(root)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out.pop("search") == "notes.txt:1: a needle"
    assert out.pop("find") == "notes.txt"
    for name, message in out.items():
        assert "'pipe' is not a regular file" in message, name
    assert stat.S_ISFIFO((root / "pipe").lstat().st_mode)


def test_a_loop_of_symbolic_links_is_named_and_never_breaks_a_listing(
    ws: Workspace, root: Path
) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    (root / "f.txt").write_text("hit\n", encoding="utf-8")
    assert ops.list_directory(ws).splitlines()[1:] == [
        "a  (symbolic link in a loop: it leads nowhere)",
        "b  (symbolic link in a loop: it leads nowhere)",
        "f.txt  4 bytes",
    ]
    assert ops.find_files(ws, "*") == "f.txt"
    assert ops.search_text(ws, "hit") == "f.txt:1: hit"
    for call in (
        lambda: ops.read_file(ws, "a"),
        lambda: ops.write_file(ws, "a/new.txt", "x"),
        lambda: ops.get_file_info(ws, "b"),
        lambda: api.get_file_overview(ws, "b"),
    ):
        with pytest.raises(InvalidArgumentError, match="loop of symbolic links"):
            call()
    assert sorted(p.name for p in root.iterdir()) == ["a", "b", "f.txt"]
