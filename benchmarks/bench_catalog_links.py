"""What skill links and the output limit cost the skills catalog.

    .venv/bin/python benchmarks/bench_catalog_links.py

Two generated folders of 1,000 skills each: one of plain skill folders, one where every
skill is a symbolic link into a ``_shared/`` folder (a common way to publish one set of
skills in several places). For each: a cold scan (new catalog), a warm scan and a warm
peek (nothing changed). A warm catalog re-checks the folders that the links were
resolved through, so that a link re-pointed anywhere on the way is judged again; the
ratio linked / plain shows what that costs.

Then the output limit: the list_skills JSON of the 1,000 plain skills (about 400,000
characters) held to the default DPTTOOLS_OUTPUT_TRUNCATION_LIMIT of 50,000, the first
time (the catalog is cut step by step) and again (the cut answer is remembered).

Times are the fastest of several runs, which is steadier than the median on a busy
machine.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from doc_processing_std_tools.skills.catalog.scan import SkillCatalog

COUNT = 1000
MAX_BYTES = 50 * 1024 * 1024
LIMIT = 50_000


def generate(root: Path, linked: bool) -> Path:
    """`COUNT` skills under `root`, as folders or as links into ``root/_shared``."""
    home = root / "_shared" if linked else root
    for index in range(COUNT):
        name = f"skill-{index:04d}"
        folder = home / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Extracts the fields of document type {index} "
            "into JSON and checks them against the glossary. Use when a user hands over such "
            "a document.\nlicense: MIT\nmetadata:\n  owner: benchmark\n---\n\n# Steps\n",
            encoding="utf-8",
        )
        if linked:
            (root / name).symlink_to(f"_shared/{name}")
    # Age everything past the catalog's guard against same-tick edits, as real skills are.
    then = time.time() - 60
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then), follow_symlinks=False)
    return root


def fastest_ms(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def measure(folder: Path) -> tuple[float, float, float]:
    catalog = SkillCatalog()
    assert catalog.scan(folder, max_bytes=MAX_BYTES).count == COUNT
    cold = fastest_ms(lambda: SkillCatalog().scan(folder, max_bytes=MAX_BYTES), 7)
    warm = fastest_ms(lambda: catalog.scan(folder, max_bytes=MAX_BYTES), 300)
    peek = fastest_ms(lambda: catalog.peek(folder, max_bytes=MAX_BYTES), 300)
    return cold, warm, peek


def main() -> None:
    print(f"Python {sys.version.split()[0]}; {COUNT} skills; fastest of several runs, in ms")
    with tempfile.TemporaryDirectory() as scratch:
        plain_dir = generate(Path(scratch) / "plain", linked=False)
        linked_dir = generate(Path(scratch) / "linked", linked=True)
        plain = measure(plain_dir)
        linked = measure(linked_dir)
        print("| folder | cold scan | warm scan | warm peek |")
        print("|---|---|---|---|")
        print("| plain folders | {:.1f} | {:.3f} | {:.3f} |".format(*plain))
        print("| links into _shared/ | {:.1f} | {:.3f} | {:.3f} |".format(*linked))
        print(
            "| ratio linked / plain | {:.2f}x | {:.2f}x | {:.2f}x |".format(
                *(b / a for a, b in zip(plain, linked, strict=True))
            )
        )
        catalog = SkillCatalog().scan(plain_dir, max_bytes=MAX_BYTES)
        whole = len(catalog.json)
        started = time.perf_counter()
        first = catalog.json_within(LIMIT)
        first_ms = (time.perf_counter() - started) * 1000
        again_ms = fastest_ms(lambda: catalog.json_within(LIMIT), 300)
        print()
        listed = len(json.loads(first)["skills"])
        print(f"list_skills JSON of {whole} characters held to {LIMIT}: {len(first)} characters")
        print(f"| skills listed in the cut answer | {listed} of {COUNT} |")
        print(f"| first answer | {first_ms:.1f} ms |")
        print(f"| same catalog again | {again_ms * 1000:.1f} us (remembered per limit) |")


if __name__ == "__main__":
    main()
