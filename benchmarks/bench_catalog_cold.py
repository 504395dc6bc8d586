"""The first scan ever of a skills folder, against the floor of reading and parsing it.

Run by hand (not a test):

    .venv/bin/python benchmarks/bench_catalog_cold.py
    .venv/bin/python benchmarks/bench_catalog_cold.py --before HEAD~3   # and an older commit

Datasets: 1,000, 10,000 and 100,000 generated skills, each a folder holding a realistic SKILL.md
(name, description, license, metadata, a 20-line body) plus a script and a reference.

Measured, as medians of several runs over the same folders (the files are in the page
cache for every reader alike):

- **floor, every file** (the target's): read every file of every skill once (the folders
  walked with ``os.scandir``, links not followed) and parse each SKILL.md's frontmatter
  as below; the target is a cold list_skills at most 2x this;
- **floor, SKILL.md**: in one process, no cache, open and read every ``<skill>/SKILL.md`` (the skill
  folders listed with ``os.listdir``), cut out its frontmatter and parse it with PyYAML's
  fastest safe loader here (``yaml.CSafeLoader`` when PyYAML has libyaml, else
  ``yaml.SafeLoader``; the output says which). Nothing is checked: this is what any
  reader of the same files must pay.
- **scan**: ``SkillCatalog().scan(folder)``, a fresh instance each time (cold).
- **list_skills JSON**: the same plus ``Catalog.json_within(limit)`` at the server's
  default output limit, that is what a first ``list_skills`` call computes.

With ``--before REV`` the scan and JSON are also timed for the std-tools sources of commit
REV (checked out with ``git archive`` into a temporary folder), in child processes that
alternate with the current sources' children over the same folders, so that the load of
the machine weighs on both alike; ``--only a.py,b.py`` takes just those files from REV
and the rest from the current sources, to time one change among others. The target is
a cold list_skills at most 2x the every-file floor, at 1,000 and 100,000 skills.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "packages" / "std-tools" / "src"
MAX_BYTES = 50 * 1024 * 1024
LIMIT = 50_000  # DPTTOOLS_OUTPUT_TRUNCATION_LIMIT's default
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def generate(root: Path, count: int) -> Path:
    """Write `count` skills under `root` (SKILL.md of about 2 KB, a script, a reference)."""
    body = "\n".join(
        f"{step}. Read the input, check field {step} against the glossary, then record it."
        for step in range(1, 21)
    )
    for index in range(count):
        folder = root / f"generated-skill-{index:05d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: generated-skill-{index:05d}\n"
            f"description: Extracts the fields of document type {index} into JSON and checks "
            "them against the glossary. Use when a user hands over such a document.\n"
            "license: MIT\nmetadata:\n  owner: benchmark\n  version: '1.0'\n---\n\n"
            f"# Generated skill {index}\n\n{body}\n",
            encoding="utf-8",
        )
        (folder / "scripts" / "check.py").write_text("print('ok')\n", encoding="utf-8")
        (folder / "glossary.md").write_text("# Glossary\n", encoding="utf-8")
    # Let the files age past the catalog's guard against same-tick edits, as real skills do.
    time.sleep(0.3)
    return root


def floor(root: Path) -> int:
    """Read every SKILL.md and parse its frontmatter, checking nothing; skills parsed."""
    parsed = 0
    for name in os.listdir(root):  # noqa: PTH208 (plain names, no Path objects)
        with open(f"{root}/{name}/SKILL.md", "rb") as file:
            text = file.read().decode("utf-8")
        end = text.find("\n---", 4)
        if yaml.load(text[4:end], Loader=FAST_LOADER):
            parsed += 1
    return parsed


def read_every_file(root: Path) -> int:
    """Read every file of every skill once (the folders walked, links not followed) and
    parse each SKILL.md's frontmatter: the issue's cold floor. Files read."""
    read = 0
    pending = [f"{root}/{name}" for name in os.listdir(root)]  # noqa: PTH208
    while pending:
        folder = pending.pop()
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
                continue
            with open(entry.path, "rb") as file:
                data = file.read()
            read += 1
            if entry.name == "SKILL.md":
                text = data.decode("utf-8")
                yaml.load(text[4 : text.find("\n---", 4)], Loader=FAST_LOADER)
    return read


def timed(run: object, repeat: int) -> float:
    """Median milliseconds of `repeat` calls of `run`."""
    assert callable(run)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(root: Path, repeat: int) -> dict[str, float]:
    """Medians (ms) of the floor, a cold scan and a cold list_skills JSON of `root`."""
    from doc_processing_std_tools.skills.catalog.scan import SkillCatalog

    count = len(os.listdir(root))  # noqa: PTH208
    catalog = SkillCatalog().scan(root, max_bytes=MAX_BYTES)
    if catalog.count != count or catalog.diagnostics or floor(root) != count:
        raise SystemExit(f"expected {count} clean skills in {root}, got {catalog.count}")
    return {
        "floor": timed(lambda: floor(root), repeat),
        "files": timed(lambda: read_every_file(root), repeat),
        "scan": timed(lambda: SkillCatalog().scan(root, max_bytes=MAX_BYTES), repeat),
        "json": timed(
            lambda: SkillCatalog().scan(root, max_bytes=MAX_BYTES).json_within(LIMIT), repeat
        ),
        "gc": float(gc.isenabled()),
    }


def child(src: Path, root: Path, repeat: int) -> dict[str, float]:
    """`measure` in a fresh interpreter that imports std-tools from `src`."""
    environ = {**os.environ, "PYTHONPATH": str(src)}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_catalog_cold as b; "
        "from pathlib import Path; "
        "print(json.dumps(b.measure(Path(sys.argv[2]), int(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(root), str(repeat)],
        env=environ,
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"the measurement of {src} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def checkout(rev: str, into: Path, only: list[str]) -> Path:
    """The std-tools sources of commit `rev`, extracted under `into`; with `only` (paths
    relative to the package), the current sources with just those files taken from `rev`."""
    package = "packages/std-tools/src/doc_processing_std_tools"
    paths = [f"{package}/{name}" for name in only] or ["packages/std-tools/src"]
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, *paths], check=True, capture_output=True
    ).stdout
    if only:
        shutil.copytree(SRC, into / "packages" / "std-tools" / "src")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "packages" / "std-tools" / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per cell and child")
    parser.add_argument("--rounds", type=int, default=3, help="alternating children per source")
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="skill counts, comma-separated"
    )
    parser.add_argument("--before", help="also time the std-tools sources of this commit")
    parser.add_argument(
        "--only",
        default="",
        help="with --before: take only these files (comma-separated, relative to the "
        "package, e.g. skills/safe_yaml.py) from that commit, the rest as they are now",
    )
    parser.add_argument(
        "--data", type=Path, help="keep the generated skills here and reuse them on later runs"
    )
    args = parser.parse_args()
    loader = FAST_LOADER.__name__
    print(
        f"Python {sys.version.split()[0]}, PyYAML {yaml.__version__}, floor parser "
        f"yaml.{loader} (libyaml {'yes' if yaml.__with_libyaml__ else 'no'}); "
        f"load average {os.getloadavg()[0]:.1f}; medians in ms"
    )
    with tempfile.TemporaryDirectory() as scratch:
        sources = {"now": SRC}
        if args.before:
            only = [name for name in args.only.split(",") if name]
            label = f"{args.before}, {len(only)} files" if only else args.before
            sources[label] = checkout(args.before, Path(scratch) / "before", only)
        print(
            "| skills | sources | floor: SKILL.md | floor: every file | cold scan | "
            "cold list_skills JSON | x SKILL.md floor | x every-file floor (target <= 2) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for size in (int(s) for s in args.sizes.split(",")):
            if args.data is None:
                root = generate(Path(scratch) / f"skills-{size}", size)
            else:
                root = args.data / f"cold-skills-{size}"
                if not root.is_dir():
                    generate(root, size)
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in sources}
            for _ in range(args.rounds):
                for name, src in sources.items():
                    runs[name].append(child(src, root, args.repeat))
            for name, results in runs.items():
                cell = {k: statistics.median(r[k] for r in results) for k in results[0]}
                print(
                    f"| {size:,} | {name} | {cell['floor']:.1f} | {cell['files']:.1f} | "
                    f"{cell['scan']:.1f} | {cell['json']:.1f} | "
                    f"{cell['json'] / cell['floor']:.2f} | {cell['json'] / cell['files']:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
