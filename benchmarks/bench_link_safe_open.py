"""The cost of link-safe opens: load_skill_resource and read_file, against opening by name.

Run:

    .venv/bin/python benchmarks/bench_link_safe_open.py

Both tools now open files through ``_io``: the path is walked from a descriptor of the
root, one ``openat(O_NOFOLLOW)`` per folder, and the file is checked on the open
descriptor. The baseline is the approach they used before, kept here as a copy: resolve
the path by name (``realpath``), check it is inside the root, then open the resolved name
(which a link swapped in between the two steps would redirect).

Each line is the median of several rounds of many calls on small files (4 KB) at two
depths, called as plain functions (no MCP session, whose own cost would hide the
difference); the ratio is link-safe / by-name.
"""

from __future__ import annotations

import argparse
import os
import stat
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from doc_processing_std_tools._text import truncate
from doc_processing_std_tools.config import Settings, load_settings
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.paths import confine
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.server import skills_server_state as skills_state
from doc_processing_std_tools.workspace import Workspace

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def _by_name(path: Path, limit: int) -> bytes:
    """The previous way: open the resolved name, check the open file, read it."""
    fd = os.open(path, _FLAGS)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
            raise ValueError(path)
        return os.read(fd, status.st_size + 1)
    finally:
        os.close(fd)


def old_read_file(ws: Workspace, path: str) -> str:
    """read_file of a whole small file, as it was: confine by name, stat, read."""
    target = confine(ws.root, path)
    status = target.stat()
    if not stat.S_ISREG(status.st_mode) or status.st_size > ws.max_file_bytes:
        raise ValueError(path)
    data = target.read_bytes()
    if b"\x00" in data[:8192]:
        raise ValueError(path)
    return truncate(data.decode("utf-8"), ws.output_limit)


def old_load_skill_resource(settings: Settings, skill: str, resource: str) -> str:
    """load_skill_resource as it was: the same skill check, confine by name, open, read."""
    folder = settings.skills_dir / skill
    if not (folder / "SKILL.md").is_file():
        raise ValueError(skill)
    confine(settings.skills_dir, skill, what="skill folder")
    path = confine(settings.skills_dir, f"{skill}/{resource}", what="resource_path")
    data = _by_name(path, settings.max_file_size_bytes)
    if b"\x00" in data[:8192]:
        raise ValueError(resource)
    text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    return truncate(text, settings.output_truncation_limit)


def _round_us(call: Callable[[], str], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def medians_us(
    old: Callable[[], str], new: Callable[[], str], calls: int, rounds: int
) -> tuple[float, float]:
    """Median time of one call of each, in microseconds; rounds alternate between the two
    so that a change in the machine's load hits both alike."""
    old()
    new()
    before: list[float] = []
    after: list[float] = []
    for _ in range(rounds):
        before.append(_round_us(old, calls))
        after.append(_round_us(new, calls))
    return statistics.median(before), statistics.median(after)


def main() -> None:
    """Build the files, time both ways, print one line per case with the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the median is shown")
    args = parser.parse_args()
    text = ("A line of reference text for the benchmark, about sixty chars.\n" * 64)[:4096]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        skills = base / "skills"
        workspace = base / "workspace"
        skill = skills / "bench-skill"
        (skill / "references" / "deep" / "er").mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: bench-skill\ndescription: d\n---\n", "utf-8")
        (skill / "guide.md").write_text(text, encoding="utf-8")
        (skill / "references" / "deep" / "er" / "guide.md").write_text(text, encoding="utf-8")
        (workspace / "a" / "b" / "c").mkdir(parents=True)
        (workspace / "notes.md").write_text(text, encoding="utf-8")
        (workspace / "a" / "b" / "c" / "notes.md").write_text(text, encoding="utf-8")
        settings = load_settings(
            {"DPTTOOLS_SKILLS_DIR": str(skills), "DPTTOOLS_WORKSPACE_DIR": str(workspace)}
        )
        ws = Workspace.from_settings(settings)

        def case(name: str, old: Callable[[], str], new: Callable[[], str]) -> None:
            assert old() == new(), name
            before, after = medians_us(old, new, args.calls, args.rounds)
            print(
                f"{name:50} by name {before:7.1f} us  link-safe {after:7.1f} us  "
                f"ratio {after / before:.2f}"
            )

        for resource in ("guide.md", "references/deep/er/guide.md"):
            case(
                f"load_skill_resource {resource}",
                lambda r=resource: old_load_skill_resource(settings, "bench-skill", r),
                lambda r=resource: actions.load_skill_resource(
                    skills_state, settings, "bench-skill", r
                ),
            )
        for path in ("notes.md", "a/b/c/notes.md"):
            case(
                f"read_file {path}",
                lambda p=path: old_read_file(ws, p),
                lambda p=path: ops.read_file(ws, p),
            )


if __name__ == "__main__":
    main()
