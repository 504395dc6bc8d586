"""A watching catalog (the servers') answers from the kernel's word where it can, and still
sees every change: edits, new and removed skills, a linked SKILL.md's target, a re-pointed
link, with no pause between the change and the next look."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from doc_processing_std_tools.skills.catalog.scan import Catalog, SkillCatalog
from doc_processing_std_tools.skills.catalog.watch import FolderWatch

MAX_BYTES = 1 << 20

pytestmark = pytest.mark.skipif(
    not FolderWatch().active, reason="no inotify here: the catalog compares stamps instead"
)


def write(root: Path, name: str, description: str) -> Path:
    (root / name).mkdir(parents=True, exist_ok=True)
    path = root / name / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n")
    return path


def age(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        stat = path.lstat()
        os.utime(
            path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 60_000_000_000), follow_symlinks=False
        )


def look(catalog: SkillCatalog, root: Path) -> Catalog:
    """What list_skills does: the remembered catalog when unchanged, else a scan."""
    return catalog.peek(root, max_bytes=MAX_BYTES) or catalog.scan(root, max_bytes=MAX_BYTES)


def descriptions(catalog: Catalog) -> dict[str, str]:
    return {record.name: record.description for record in catalog.skills}


def test_every_change_is_seen_at_the_next_look(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for index in range(5):
        write(root, f"skill-{index}", f"Task {index}.")
    (root / "shared").mkdir()
    target = root / "shared" / "linked.md"
    target.write_text("---\nname: linked\ndescription: Linked one.\n---\n")
    (root / "linked").mkdir()
    (root / "linked" / "SKILL.md").symlink_to("../shared/linked.md")
    age(root)
    catalog = SkillCatalog(watch=True)
    first = look(catalog, root)
    assert look(catalog, root) is first  # armed and compared
    assert look(catalog, root) is first  # now on the kernel's word

    path = root / "skill-1" / "SKILL.md"
    path.write_text(path.read_text().replace("Task 1.", "Work 1."))
    assert descriptions(look(catalog, root))["skill-1"] == "Work 1."

    target.write_text("---\nname: linked\ndescription: Target edited.\n---\n")
    assert descriptions(look(catalog, root))["linked"] == "Target edited."

    write(root, "skill-new", "Added.")
    assert "skill-new" in descriptions(look(catalog, root))

    (root / "skill-2" / "SKILL.md").unlink()
    assert "skill-2" not in descriptions(look(catalog, root))

    other = root / "shared" / "other.md"
    other.write_text("---\nname: linked\ndescription: Re-pointed.\n---\n")
    (root / "linked" / "SKILL.md").unlink()
    (root / "linked" / "SKILL.md").symlink_to("../shared/other.md")
    assert descriptions(look(catalog, root))["linked"] == "Re-pointed."

    # Quiet again (and past the moments after a write, when a stamp is not trusted): the
    # same object comes back.
    age(root)
    look(catalog, root)
    settled = look(catalog, root)
    assert look(catalog, root) is settled
    assert descriptions(settled)["linked"] == "Re-pointed."


def test_a_change_made_before_the_first_watch_is_seen_on_every_look(tmp_path: Path) -> None:
    """A skill added after the scan but before the watches were set sends no event: the
    look that sets the watches finds a different stamp, and so must every look after it
    until a scan, even one that peeks without scanning (a busy server's cheap check)."""
    root = tmp_path / "skills"
    for index in range(3):
        write(root, f"skill-{index}", f"Task {index}.")
    age(root)
    catalog = SkillCatalog(watch=True)
    assert len(catalog.scan(root, max_bytes=MAX_BYTES).skills) == 3
    write(root, "skill-new", "Added before any watch.")
    assert catalog.peek(root, max_bytes=MAX_BYTES) is None  # sets the watches, compares
    assert catalog.peek(root, max_bytes=MAX_BYTES) is None  # no event came: compare again
    assert "skill-new" in descriptions(look(catalog, root))


def test_a_restart_from_the_index_is_watched_after_its_first_scan(tmp_path: Path) -> None:
    """A new process whose skills all come from the persistent index watches them while it
    compares their stamps: its next look makes no system call (the kernel vouches), and
    any change made after that first scan, SKILL.md or another file, is still seen."""
    root = tmp_path / "skills"
    for index in range(4):
        write(root, f"skill-{index}", f"Task {index}.")
    (root / "skill-0" / "scripts").mkdir()
    script = root / "skill-0" / "scripts" / "run.py"
    script.write_text("print('ok')\n")
    age(root)
    cache = tmp_path / "cache"
    SkillCatalog(cache_dir=cache).scan(root, max_bytes=MAX_BYTES)  # fills the index

    restarted = SkillCatalog(cache_dir=cache, watch=True)
    first = restarted.scan(root, max_bytes=MAX_BYTES)
    calls: list[str] = []
    real_stat, real_lstat = os.stat, os.lstat

    def counted_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        calls.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def counted_lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        calls.append(str(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "stat", counted_stat)
        patch.setattr(os, "lstat", counted_lstat)
        assert restarted.peek(root, max_bytes=MAX_BYTES) is first
    assert calls == []  # the second look is as warm as any later one

    script.write_text("print('\u200b')\n")  # hidden text in another file than SKILL.md
    changed = look(restarted, root)
    assert changed is not first
    assert any(d.code == "zero_width_characters" for d in changed.diagnostics)

    path = root / "skill-3" / "SKILL.md"
    path.write_text(path.read_text().replace("Task 3.", "Work 3."))
    assert descriptions(look(restarted, root))["skill-3"] == "Work 3."


def test_a_change_between_the_restart_listing_and_its_watches_is_seen(tmp_path: Path) -> None:
    """A SKILL.md edited while no process ran is read again by the restart; a skill whose
    stamp the index does not match leaves the catalog to be compared on the next look."""
    root = tmp_path / "skills"
    for index in range(3):
        write(root, f"skill-{index}", f"Task {index}.")
    age(root)
    cache = tmp_path / "cache"
    SkillCatalog(cache_dir=cache).scan(root, max_bytes=MAX_BYTES)
    path = root / "skill-1" / "SKILL.md"
    path.write_text(path.read_text().replace("Task 1.", "Edited offline."))
    restarted = SkillCatalog(cache_dir=cache, watch=True)
    assert descriptions(look(restarted, root))["skill-1"] == "Edited offline."
    write(root, "skill-new", "Added.")
    assert "skill-new" in descriptions(look(restarted, root))
