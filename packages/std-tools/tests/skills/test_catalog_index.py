"""The persistent catalog index: a new process reads no unchanged SKILL.md, still sees every
change made while no server ran, shares the index with other processes, and treats a
damaged, foreign or other-version index as absent."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doc_processing_std_tools.skills.catalog.index import FORMAT, index_file
from doc_processing_std_tools.skills.catalog.scan import Catalog, SkillCatalog

MAX_BYTES = 1 << 20

_opened: list[str] = []
_counting = threading.local()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and getattr(_counting, "on", False):
        path = args[0]
        if isinstance(path, str | bytes) and os.fsdecode(path).endswith("SKILL.md"):
            _opened.append(os.fsdecode(path))


sys.addaudithook(_audit)


def reads_of_skill_md(action: Any) -> tuple[Any, list[str]]:
    """Run `action`; return its result and the SKILL.md files this thread opened."""
    _opened.clear()
    _counting.on = True
    try:
        result = action()
    finally:
        _counting.on = False
    return result, list(_opened)


def write(root: Path, name: str, description: str, extra: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n\nBody.\n")
    return path


def age(root: Path) -> None:
    """Date every file back a minute: a stamp taken just after a write is never stored."""
    for path in [root, *root.rglob("*")]:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 60_000_000_000))


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "skills"
    for index in range(30):
        write(root, f"skill-{index:02d}", f"Does task {index}.", "metadata:\n  owner: team\n")
    write(root, "broken", "")  # an error diagnostic is indexed too
    age(root)
    yield root


def scan(root: Path, cache: Path | None) -> Catalog:
    """What a new server process does first."""
    return SkillCatalog(cache_dir=cache).scan(root, max_bytes=MAX_BYTES)


def same(a: Catalog, b: Catalog) -> bool:
    return a.json == b.json and [r.frontmatter for r in a.skills] == [
        r.frontmatter for r in b.skills
    ]


def test_a_new_process_on_an_unchanged_folder_reads_no_skill_md(
    folder: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31
    again, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert opened == []
    assert same(first, again)
    assert [d.code for d in again.diagnostics] == [d.code for d in first.diagnostics]
    assert again.skills[0].digest == first.skills[0].digest
    assert again.skills[0].directory == folder / again.skills[0].name
    assert index_file(cache, folder.resolve()).is_file()


def test_changes_made_while_no_server_ran_are_seen(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    scan(folder, cache)
    # Edited with the same size and the old modification time put back: ctime differs.
    path = folder / "skill-03" / "SKILL.md"
    before = path.stat()
    path.write_text(path.read_text().replace("task 3", "work 3"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    age(write(folder, "added-skill", "Added while no server ran.").parent)
    (folder / "skill-07" / "SKILL.md").unlink()
    catalog, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 2  # added-skill and skill-03
    by_name = {record.name: record for record in catalog.skills}
    assert by_name["skill-03"].description == "Does work 3."
    assert "added-skill" in by_name and "skill-07" not in by_name
    assert same(catalog, scan(folder, None))


def test_deleting_the_index_changes_nothing_but_speed(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = scan(folder, cache)
    for path in cache.iterdir():
        path.unlink()
    again, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31 and same(first, again)


def test_a_damaged_index_is_rebuilt_not_trusted(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = scan(folder, cache)
    database = index_file(cache, folder.resolve())
    data = bytearray(database.read_bytes())
    data[:16] = b"not a database!!"
    database.write_bytes(bytes(data))
    again, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31 and same(expected, again)
    with sqlite3.connect(database) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == FORMAT
    # Rebuilt, the index serves the next process again.
    _, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert opened == []


def test_entries_of_the_wrong_shape_are_read_again(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = scan(folder, cache)
    with sqlite3.connect(index_file(cache, folder.resolve())) as db:
        db.execute(
            "UPDATE skills SET entry = ? WHERE folder = 'skill-05'",
            ('[[], null, ["skill-05", 5, null, null, null, "sha256:0", 10]]',),
        )
        db.execute("UPDATE skills SET entry = 'not json' WHERE folder = 'skill-06'")
    again, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 2
    assert same(expected, again)


def test_a_foreign_index_is_not_used(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    other = tmp_path / "other"
    write(other, "skill-01", "A different skill of the same name.")
    age(other)
    scan(other, cache)
    # The other folder's index, put where this folder's index belongs.
    index_file(cache, other.resolve()).rename(index_file(cache, folder.resolve()))
    catalog, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31
    assert catalog.get("skill-01") is not None
    assert catalog.get("skill-01").description == "Does task 1."  # type: ignore[union-attr]


def test_an_index_of_another_format_is_rebuilt(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    scan(folder, cache)
    database = index_file(cache, folder.resolve())
    with sqlite3.connect(database) as db:
        db.execute(f"PRAGMA user_version = {FORMAT + 1}")
    _, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == FORMAT


def test_an_unwritable_cache_folder_means_no_index_and_one_warning(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="doc_processing_std_tools"):
        first = scan(folder, blocked / "cache")
        second = scan(folder, blocked / "cache")
    assert same(first, second) and first.count == 30
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "DPTTOOLS_CACHE_DIR" in warnings[0].getMessage()


def test_a_recent_write_is_not_stored(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root, "fresh", "Just written.")
    cache = tmp_path / "cache"
    scan(root, cache)  # read within moments of the write: the stamp is not trusted
    _, opened = reads_of_skill_md(lambda: scan(root, cache))
    assert len(opened) == 1


def test_a_frontmatter_json_cannot_carry_is_read_every_time(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root, "odd", "Has a value JSON cannot carry.", "ratio: .nan\n")
    age(root)
    cache = tmp_path / "cache"
    first = scan(root, cache)
    again, opened = reads_of_skill_md(lambda: scan(root, cache))
    assert len(opened) == 1
    assert str(again.skills[0].frontmatter) == str(first.skills[0].frontmatter)


PROCESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from doc_processing_std_tools.skills.catalog.scan import SkillCatalog
    root, cache = Path(sys.argv[1]), Path(sys.argv[2])
    for _ in range(5):
        catalog = SkillCatalog(cache_dir=cache).scan(root, max_bytes=1 << 20)
        print(catalog.count, len(catalog.diagnostics))
    """
)


def test_several_processes_share_one_index(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS, str(folder), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out.split("\n")[:-1] == ["30 1"] * 5
        assert "WARNING" not in err
    _, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert opened == []


def test_damage_inside_the_file_is_found_when_read_and_the_index_rebuilt(
    folder: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    expected = scan(folder, cache)
    database = index_file(cache, folder.resolve())
    data = bytearray(database.read_bytes())
    assert len(data) > 8192
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page after the first
    database.write_bytes(bytes(data))
    again, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert len(opened) == 31 and same(expected, again)
    _, opened = reads_of_skill_md(lambda: scan(folder, cache))
    assert opened == []


def test_the_index_is_smaller_than_the_skill_md_files_it_describes(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    body = "".join(f"{step}. Check field {step} against the glossary.\n" for step in range(40))
    for index in range(200):
        write(root, f"skill-{index:03d}", f"Extracts document type {index}.", "license: MIT\n")
        path = root / f"skill-{index:03d}" / "SKILL.md"
        path.write_text(path.read_text() + body)
    age(root)
    cache = tmp_path / "cache"
    first = scan(root, cache)
    described = sum(record.size or 0 for record in first.skills)
    assert index_file(cache, root.resolve()).stat().st_size <= described
    again = scan(root, cache)
    assert [r.excerpt for r in again.skills] == [r.excerpt for r in first.skills]
    assert same(first, again)


def test_stored_text_that_cannot_be_decoded_gives_nothing_made_up(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    scan(folder, cache)
    with sqlite3.connect(index_file(cache, folder.resolve())) as db:
        db.execute("UPDATE skills SET packed = ? WHERE folder = 'skill-03'", (b"damaged",))
    again = scan(folder, cache)
    record = again.get("skill-03")
    assert record is not None
    with caplog.at_level(logging.WARNING):
        assert dict(record.frontmatter or {}) == {}
        assert record.excerpt == ""
    assert "could not be decoded" in caplog.text
