"""Skills folders -> skill records and diagnostics, cached by file modification times.

A skill is a folder that holds a ``SKILL.md``, directly under a skills folder (a *root*) or,
with a search depth above 1, up to that many folders down (``plugins/*/skills/*`` is depth
4); the search never enters a skill. Hidden folders (a leading dot), ``__pycache__`` and
``node_modules`` are never skills nor searched. Several roots form one catalog: a name
belongs to the first skill found under it (roots in the order given; within a root the
shallowest, then the first by path), and every later one is left out with a
``duplicate_name`` error, so each listed name reaches exactly one folder. A
`SkillCatalog` remembers what it read: a second scan of an unchanged folder costs one
``stat`` of the folder and one per ``SKILL.md`` (plus one per folder that skill links
were resolved through, so that a link re-pointed anywhere on the way is judged again),
while a skill that was added, edited or removed is read again. A file modified within
the last moments before it was read is read once more on the next scan, because coarse
file-system clocks could otherwise hide a second edit made in the same tick.

With `watch` (the servers), the kernel vouches for an unchanged folder where it can
(`watch.FolderWatch`: Linux inotify on a local file system): every folder and SKILL.md
link a catalog depends on is watched *before* its stamps are compared, and while no event
arrives since that comparison, `peek` answers with no system call beyond draining the
event queue. Any event, or a folder the kernel cannot watch, falls back to the stamps.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..audit.skill_audit import FileAudit, audit_files, listed, unchanged
from ..core.audience import MODEL
from ..core.records import (
    SKILL_FILE,
    Catalog,
    SkillDiagnostic,
    SkillRecord,
    is_hidden_name,
    missing_note,
)
from .discovery import (
    LINK_LOOP,
    RACY_NS,
    Stamp,
    deeper_diagnostic,
    find_deeper,
    folder_stamps,
    is_racy,
    links_moved,
    list_folders,
    misnamed_skill_md,
    misnamed_skill_md_diagnostic,
    probe,
    stamp_of,
)
from .index import IndexedSkill, RootIndex, open_index, packed
from .reading import read_skill
from .watch import EVERYTHING, FolderWatch

__all__ = [
    "SKILL_FILE",
    "Catalog",
    "SkillCatalog",
    "SkillDiagnostic",
    "SkillRecord",
    "find_deeper",
    "is_hidden_name",
    "read_skill",
    "scan_once",
]

_MAX_CACHED_FOLDERS: Final = 16


@dataclass(slots=True)
class _Entry:
    stamp: Stamp | None
    racy: bool
    record: SkillRecord | None = None
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)
    # The audit of the skill's other files (None while not listed, or for a linting
    # catalog, whose `read_skill` gives those findings itself).
    files: FileAudit | None = None


@dataclass(slots=True)
class _FolderCache:
    stamp: Stamp
    racy: bool
    folders: list[str]
    refused: list[SkillDiagnostic]
    # The folders, besides the skills folder, that the skill links were resolved through,
    # with their stamps: a link re-pointed anywhere along the way changes one of them.
    link_folders: list[tuple[str, Stamp]]
    entries: dict[str, _Entry] = field(default_factory=dict)
    catalog: Catalog | None = None
    # What `peek` compares: each SKILL.md path with the stamp it had when `catalog` was
    # built. None while any entry is racy (it must be read again, not just stat-ed).
    checks: list[tuple[str, Stamp | None]] | None = None
    # What `peek` compares too: each skill folder with the audit of its files.
    audits: list[tuple[str, FileAudit]] = field(default_factory=list)
    # True while the kernel watches everything `checks` depends on and has reported no
    # change since they were last compared.
    watched: bool = False


class SkillCatalog:
    """Scans skills folders and remembers what it read, keyed by modification times.

    One instance can serve several skills folders; it is safe to share between threads.
    """

    def __init__(
        self, *, lint: bool = False, cache_dir: Path | None = None, watch: bool = False
    ) -> None:
        """Start with an empty cache; `lint` adds `lint.lint`'s warnings to each skill's
        diagnostics (``dpt-skills validate``; the servers never lint). With `cache_dir`,
        a folder seen for the first time is looked up in its persistent index there
        (`index`), and what is read is stored in it; a linting catalog keeps no index.
        With `watch`, the kernel reports changes where it can (see the module docstring);
        the inotify instance is opened on first use."""
        self._watching = watch
        self._watch: FolderWatch | None = None
        self._lock = threading.Lock()
        self._lint = lint
        self._cache_dir = None if lint else cache_dir
        # The open persistent indexes, by skills folder (None: it could not be had).
        self._indexes: dict[Path, RootIndex | None] = {}
        # Keyed by folder, SKILL.md size limit and search depth: a new limit must re-judge
        # every file, a new depth finds other folders.
        self._folders: dict[tuple[Path, int, int], _FolderCache] = {}
        # The last catalog of several roots, with the root catalogs it was built from.
        self._merged: tuple[tuple[Catalog, ...], Catalog] | None = None
        # How many folders are remembered: every root of the largest list seen fits.
        self._room = _MAX_CACHED_FOLDERS

    def clear(self) -> None:
        """Forget everything read so far; the next scan reads every SKILL.md again."""
        with self._lock:
            self._folders.clear()
            if self._watch is not None:
                self._watch.close()
                self._watch = None
            for root_index in self._indexes.values():
                if root_index is not None:
                    root_index.close()
            self._indexes.clear()

    def scan(self, skills_dir: Path, *, max_bytes: int, depth: int = 1) -> Catalog:
        """The catalog of `skills_dir` (absolute), re-reading only what changed on disk.

        `max_bytes` is the largest SKILL.md accepted; `depth` how many folders down skills
        are searched (1: only direct subfolders). A missing folder gives an empty catalog
        with a note; no input makes this raise.
        """
        with self._lock:
            return self._scan(skills_dir, max_bytes, depth)

    def scan_roots(self, roots: tuple[Path, ...], *, max_bytes: int, depth: int = 1) -> Catalog:
        """One catalog of several roots (see the module docstring for names found twice).

        The same object comes back while no root changed; with one root this is `scan`.
        """
        with self._lock:
            self._room = max(self._room, len(roots) + _MAX_CACHED_FOLDERS)
            return self._merge(tuple(self._scan(root, max_bytes, depth) for root in roots))

    def peek_roots(
        self, roots: tuple[Path, ...], *, max_bytes: int, depth: int = 1
    ) -> Catalog | None:
        """`scan_roots`' catalog if nothing changed on disk since, else None (see `peek`)."""
        parts: list[Catalog] = []
        for root in roots:
            part = self.peek(root, max_bytes=max_bytes, depth=depth)
            if part is None:
                return None
            parts.append(part)
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._merge(tuple(parts))
        finally:
            self._lock.release()

    def _merge(self, parts: tuple[Catalog, ...]) -> Catalog:
        if len(parts) == 1:
            return parts[0]
        known = self._merged
        if (
            known is not None
            and len(known[0]) == len(parts)
            and all(a is b for a, b in zip(known[0], parts, strict=True))
        ):
            return known[1]
        merged = _merge_roots(parts)
        self._merged = (parts, merged)
        return merged

    def peek(self, skills_dir: Path, *, max_bytes: int, depth: int = 1) -> Catalog | None:
        """The remembered catalog if nothing changed on disk since, else None.

        Only ``stat`` calls are made, never a read, so this is cheap enough for an event
        loop. None also means "unknown": a scan is running in another thread, the folder
        was never scanned, or a recent write needs a second look; call `scan` then.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            cache = self._folders.get((skills_dir, max_bytes, depth))
            if cache is None or cache.catalog is None or cache.racy or cache.checks is None:
                return None
            watch = self._kernel_watch()
            armed = False
            if watch is not None:
                self._drain(watch)
                if cache.watched:
                    return cache.catalog  # the kernel reported no change since the check
                # Watch first, then compare: a change after this is an event, one
                # before it a different stamp. The catalog counts as watched only once
                # the comparison found it unchanged: a change made before the watches
                # were set sends no event, so a failed comparison must be made again.
                armed = self._arm(watch, skills_dir, cache)
            try:
                if stamp_of(skills_dir.stat()) != cache.stamp:
                    return None
            except OSError:
                return None
            if links_moved(cache.link_folders):
                return None
            for skill_md, stamp in cache.checks:
                if probe(skill_md) != stamp:
                    return None
            for folder, files in cache.audits:
                if not unchanged(folder, files):
                    return None
            cache.watched = armed
            return cache.catalog
        finally:
            self._lock.release()

    def _kernel_watch(self) -> FolderWatch | None:
        """The inotify watch when this catalog watches and the kernel delivers events."""
        if not self._watching:
            return None
        if self._watch is None:
            self._watch = FolderWatch()
        return self._watch if self._watch.active else None

    def _drain(self, watch: FolderWatch) -> None:
        """Take the kernel's events: the catalogs of the skills folders they concern (all,
        when they cannot be told apart) must be compared with the disk again."""
        changed = watch.changed()
        if not changed:
            return
        everything = EVERYTHING in changed or not watch.active
        for (skills_dir, _, _), cache in self._folders.items():
            if everything or str(skills_dir) in changed:
                cache.watched = False

    def _arm(self, watch: FolderWatch, skills_dir: Path, cache: _FolderCache) -> bool:
        """Watch everything `cache` depends on (the folder, every folder links or the
        search went through, every skill folder and every SKILL.md that is a link); False
        when some of it cannot be watched (another device, a file system the kernel does
        not see every change of, the watch limit)."""
        device = watch.covers(skills_dir)
        if device is None or cache.checks is None:
            return False
        key = str(skills_dir)
        folders = [key, *(folder for folder, _ in cache.link_folders)]
        # The folders under each skill folder that its files' audit read.
        for folder, files in cache.audits:
            folders.extend(f"{folder}{os.sep}{n[:-1]}" for n, _ in files.stamps if n.endswith("/"))
        for skill_md, stamp in cache.checks:
            folders.append(skill_md[: -len(SKILL_FILE) - 1])
            if stamp is None or stamp == LINK_LOOP:
                continue
            try:
                st = os.lstat(skill_md)
                if stat.S_ISLNK(st.st_mode):
                    folders.append(skill_md)  # a watch follows it to the file itself
                    st = os.stat(skill_md)  # noqa: PTH116
            except OSError:
                return False
            if st.st_dev != device:
                return False
        return all(watch.watch(path, key) for path in folders)

    def _arming(self, skills_dir: Path, cache: _FolderCache) -> _Arming | None:
        """Watches to set while a restart compares indexed stamps, when the kernel can
        vouch for the folder (else None: the next `peek` watches, then compares)."""
        watch = self._kernel_watch()
        if watch is None or cache.link_folders or cache.racy:
            return None
        self._drain(watch)
        device = watch.covers(skills_dir)
        key = str(skills_dir)
        if device is None or not watch.watch(key, key):
            return None
        try:
            # The folder was listed before it was watched: unchanged since, or no arming.
            if stamp_of(skills_dir.stat()) != cache.stamp:
                return None
        except OSError:
            return None
        return _Arming(watch, key, device)

    def _scan(self, skills_dir: Path, max_bytes: int, depth: int) -> Catalog:
        key = (skills_dir, max_bytes, depth)
        try:
            dir_stat = skills_dir.stat()
        except OSError:
            self._folders.pop(key, None)
            return _missing_catalog(skills_dir, is_file=False)
        if not stat.S_ISDIR(dir_stat.st_mode):
            self._folders.pop(key, None)
            return _missing_catalog(skills_dir, is_file=True)
        cache = self._folders.get(key)
        changed = False
        root_index: RootIndex | None = None
        indexed: dict[str, IndexedSkill] = {}
        if cache is None and self._cache_dir is not None:
            # First sight of this folder in this process: start from what others read.
            root_index = self._index(self._cache_dir, skills_dir)
            if root_index is not None:
                indexed = root_index.skills(skills_dir, max_bytes)
        if (
            cache is None
            or cache.racy
            or cache.stamp != stamp_of(dir_stat)
            or links_moved(cache.link_folders)
        ):
            changed = True
            taken = time.time_ns()
            folders, refused, consulted = list_folders(skills_dir, depth)
            link_folders, links_racy = folder_stamps(consulted, taken)
            old_entries = cache.entries if cache is not None else {}
            cache = _FolderCache(
                stamp_of(dir_stat),
                is_racy(dir_stat, taken) or links_racy,
                folders,
                refused,
                link_folders,
                {name: old_entries[name] for name in folders if name in old_entries},
            )
            self._remember(key, cache)
        prefix = f"{skills_dir}{os.sep}"
        fresh: dict[str, IndexedSkill] = {}
        gone: list[str] = []
        recheck = False
        changed_files = False  # a skill's files audited again: their folders are unwatched
        # A restart: watch what the indexed entries depend on before comparing their
        # stamps, so that the comparison below is the one the kernel vouches from, and the
        # next call costs no system call (rather than watching and comparing again).
        arming = self._arming(skills_dir, cache) if indexed else None
        from_index = arming is not None
        for name in cache.folders:
            entry = cache.entries.get(name)
            known = indexed.get(name)
            if arming is not None:
                stamp = arming.probe(f"{prefix}{name}", known)
            else:
                stamp = probe(f"{prefix}{name}{os.sep}{SKILL_FILE}")
            if (known.stamp if known is not None else None) != stamp:
                from_index = False
            if entry is not None and not entry.racy and entry.stamp == stamp:
                if self._files_current(entry, f"{prefix}{name}"):
                    continue
            elif stamp is None:
                changed = True
                cache.entries[name] = _Entry(None, False)
                gone.append(name)
                continue
            elif known is not None and known.stamp == stamp and stamp != LINK_LOOP:
                entry = _Entry(stamp, False, known.record, list(known.diagnostics), known.files)
            else:
                taken = time.time_ns()
                record, diagnostics = read_skill(
                    skills_dir / name,
                    max_bytes=max_bytes,
                    name=name.rpartition("/")[2],
                    root=skills_dir,
                    lint=self._lint,
                    files=self._lint,  # else audited below, kept with their own stamps
                )
                racy = stamp != LINK_LOOP and taken - stamp[0] < RACY_NS
                if record is not None and self._cache_dir is not None:
                    record = packed(record)  # compressed once, for the index and memory
                # Files unchanged since their last audit (here or by another process)
                # are not read again because SKILL.md changed.
                files = entry.files if entry is not None else known.files if known else None
                listed = record is not None and not racy and stamp != LINK_LOOP
                entry = _Entry(stamp, racy, record, diagnostics, files if listed else None)
            kept = entry is cache.entries.get(name)  # SKILL.md unchanged: only files were
            previous = entry.files
            if not self._files_current(entry, f"{prefix}{name}"):
                entry.files = audit_files(f"{prefix}{name}", name, skills_dir, max_bytes)
                changed_files = True
            if kept and _same_audit(previous, entry.files):
                recheck = True  # audited again while racy, and nothing differs
            else:
                changed = True
            cache.entries[name] = entry
            if (
                stamp is None
                or entry.racy
                or stamp == LINK_LOOP
                or (entry.files is not None and entry.files.racy)
                or (known is not None and known.stamp == stamp and known.files == entry.files)
            ):
                continue
            fresh[name] = IndexedSkill(stamp, entry.record, tuple(entry.diagnostics), entry.files)
        if self._cache_dir is not None and (fresh or gone or indexed):
            self._save(skills_dir, max_bytes, cache.folders, fresh, gone, indexed)
        if changed or cache.catalog is None:
            cache.catalog = _assemble(skills_dir, cache, depth, self._lint)
        if changed or recheck or cache.checks is None:
            cache.watched = False  # new checks: the next peek watches them, then compares
            entries = [(name, cache.entries.get(name)) for name in cache.folders]
            cache.watched = (
                from_index
                and arming is not None
                and arming.whole
                and not changed_files
                and not cache.racy
            )
            cache.audits = [
                (f"{prefix}{name}", entry.files)
                for name, entry in entries
                if entry is not None and entry.files is not None
            ]
            cache.checks = (
                None
                if any(
                    entry is None or entry.racy or (entry.files is not None and entry.files.racy)
                    for _, entry in entries
                )
                else [
                    (f"{prefix}{name}{os.sep}{SKILL_FILE}", entry.stamp)
                    for name, entry in entries
                    if entry is not None
                ]
            )
            cache.watched = cache.watched and cache.checks is not None
        return cache.catalog

    def _files_current(self, entry: _Entry, folder: str) -> bool:
        """True when the audit of the skill's files (besides SKILL.md) may be kept: the
        skill is not listed, this catalog lints (`read_skill` audited them), or every
        folder and file it was read from still has its stamp."""
        if entry.record is None or self._lint:
            return True
        files = entry.files
        return files is not None and not files.racy and unchanged(folder, files)

    def _index(self, cache_dir: Path, skills_dir: Path) -> RootIndex | None:
        """The persistent index of `skills_dir` (opened once per process)."""
        if skills_dir not in self._indexes:
            self._indexes[skills_dir] = open_index(cache_dir, skills_dir.resolve())
        return self._indexes[skills_dir]

    def _save(
        self,
        skills_dir: Path,
        max_bytes: int,
        folders: list[str],
        fresh: dict[str, IndexedSkill],
        gone: list[str],
        indexed: dict[str, IndexedSkill],
    ) -> None:
        """Store what this scan read in the index; forget skills whose SKILL.md is gone
        (on first sight, those indexed but no longer found, unless another search depth
        would still find them)."""
        assert self._cache_dir is not None
        root_index = self._index(self._cache_dir, skills_dir)
        if root_index is None:
            return
        if indexed:
            listed = set(folders)
            gone.extend(
                name
                for name in indexed
                if name not in listed
                and not os.path.lexists(f"{skills_dir}{os.sep}{name}{os.sep}{SKILL_FILE}")
            )
        root_index.save_skills(max_bytes, fresh, gone)

    def _remember(self, key: tuple[Path, int, int], cache: _FolderCache) -> None:
        self._folders.pop(key, None)
        while len(self._folders) >= self._room:
            self._folders.pop(next(iter(self._folders)))
        self._folders[key] = cache


class _Arming:
    """The watches a restart sets, skill by skill, before comparing each skill's stamps
    (`SkillCatalog._arm` sets the same ones for a catalog already compared)."""

    __slots__ = ("device", "key", "watch", "whole")

    def __init__(self, watch: FolderWatch, key: str, device: int) -> None:
        self.watch = watch
        self.key = key
        self.device = device
        self.whole = True
        """False once something could not be watched."""

    def probe(self, folder: str, known: IndexedSkill | None) -> Stamp | None:
        """Watch the skill `folder` (and the folders its indexed audit read), then give
        its SKILL.md's stamp as `discovery.probe` does, watching a SKILL.md link too."""
        watch, key = self.watch, self.key
        whole = watch.watch(folder, key)
        if known is not None and known.files is not None:
            for name, _ in known.files.stamps:
                if name.endswith("/"):
                    whole = watch.watch(f"{folder}{os.sep}{name[:-1]}", key) and whole
        skill_md = f"{folder}{os.sep}{SKILL_FILE}"
        try:
            st = os.lstat(skill_md)
            if stat.S_ISLNK(st.st_mode):
                whole = watch.watch(skill_md, key) and whole  # a watch follows it
                st = os.stat(skill_md)  # noqa: PTH116
        except OSError:
            self.whole = False
            return probe(skill_md)
        self.whole = self.whole and whole and st.st_dev == self.device
        return stamp_of(st)


def _same_audit(before: FileAudit | None, after: FileAudit | None) -> bool:
    """True when two audits of a skill's files read the same stamps and found the same."""
    if before is None or after is None:
        return before is after
    return before.stamps == after.stamps and before.diagnostics == after.diagnostics


def _assemble(skills_dir: Path, cache: _FolderCache, depth: int, lint: bool) -> Catalog:
    records: list[SkillRecord] = []
    diagnostics: list[SkillDiagnostic] = []
    found = 0  # folders with a SKILL.md, whether or not it could be read
    # Candidates at the depth searched that hold no SKILL.md: where deeper ones may be.
    empty: list[str] = []
    # Shallowest first, then by path: the first skill found under a name keeps it.
    for name in sorted(cache.folders, key=lambda n: (n.count("/"), n)):
        entry = cache.entries.get(name)
        if entry is None or entry.stamp is None:
            empty.append(name)
            continue
        found += 1
        if entry.record is not None:
            records.append(entry.record)
        # list_skills says what the catalog's own rules, the lock and hidden text found;
        # the audit's other findings are for audit and validate (`lint`).
        diagnostics.extend(entry.diagnostics if lint else listed(entry.diagnostics))
        if entry.files is not None and entry.record is not None:
            audited = entry.files.diagnostics
            diagnostics.extend(audited if lint else listed(audited))
    diagnostics.extend(cache.refused)
    for name in empty:
        actual = misnamed_skill_md(skills_dir / name)
        if actual is not None:
            diagnostics.append(misnamed_skill_md_diagnostic(name, actual, skills_dir / name))
    kept = _first_of_each_name(records, diagnostics)
    # Whether or not skills were found at the depth searched: SKILL.md files below it are
    # skills the listing leaves out without a word otherwise.
    deeper = deeper_diagnostic(
        skills_dir,
        depth,
        found=found,
        below=empty,
        listed=[record.directory for record in records],
    )
    if deeper is not None:
        diagnostics.append(deeper)
    kept.sort(key=lambda r: r.name)
    diagnostics.sort(key=lambda d: d.skill)
    return Catalog(skills_dir, tuple(kept), tuple(diagnostics))


def _first_of_each_name(
    records: list[SkillRecord], diagnostics: list[SkillDiagnostic]
) -> list[SkillRecord]:
    """The first record of each name, in the order given; a ``duplicate_name`` error
    (added to `diagnostics`) for each later one."""
    kept: dict[str, SkillRecord] = {}
    for record in records:
        first = kept.get(record.name)
        if first is None:
            kept[record.name] = record
            continue
        diagnostics.append(
            SkillDiagnostic(
                record.folder or record.name,
                "error",
                "duplicate_name",
                f"The skill in {record.directory} has the name '{record.name}', which the "
                f"skill in {first.directory} already has; tool calls name one folder only, "
                "so this one is left out. Rename one of the two folders (and its 'name:').",
            )
        )
    return list(kept.values())


def _merge_roots(parts: tuple[Catalog, ...]) -> Catalog:
    """One catalog of several roots' catalogs: earlier roots keep a name."""
    records = [record for part in parts for record in part.skills]
    diagnostics = [d for part in parts for d in part.diagnostics]
    kept = _first_of_each_name(records, diagnostics)
    kept.sort(key=lambda r: r.name)
    missing = tuple(m for part in parts for m in part.missing)
    return Catalog(
        parts[0].skills_dir,
        tuple(kept),
        tuple(diagnostics),
        note=" ".join(missing_note(root, is_file, MODEL) for root, is_file in missing) or None,
        skills_dirs=tuple(part.skills_dir for part in parts),
        missing=missing,
    )


def _missing_catalog(skills_dir: Path, *, is_file: bool) -> Catalog:
    return Catalog(
        skills_dir,
        note=missing_note(skills_dir, is_file, MODEL),
        missing=((skills_dir, is_file),),
    )


def scan_once(skills_dir: Path, *, max_bytes: int, depth: int = 1, lint: bool = False) -> Catalog:
    """Scan `skills_dir` without any cache (one-off tools such as the command line); `lint`
    adds the specification warnings of `lint.lint`."""
    return SkillCatalog(lint=lint).scan(skills_dir, max_bytes=max_bytes, depth=depth)
