"""The security audit of 1,000 skills, against the floor of reading every file once.

Run by hand (not a test):

    .venv/bin/python benchmarks/bench_skills_audit.py
    .venv/bin/python benchmarks/bench_skills_audit.py --skills 1000 --repeat 7

Dataset: generated skill folders, each a SKILL.md, one or two reference files and two
scripts. When the real collections are next to the checkout (``shared/corpora``, see
docs/testing.md) the SKILL.md bodies and the reference files are taken from them in turn
(their scripts were left out of that export, so the scripts are generated either way);
without them, generated Markdown of similar size stands in. The scripts are command-line
Python tools of about 100 lines (argparse, pathlib, json, csv); one in eight also downloads
with urllib, one in four names a web address in its docstring, one skill in twenty ships a
shell script instead of its second Python script. Every file is ASCII or UTF-8 text.

Measured over the same folders (the files are in the page cache for both alike), the
two runs alternating, floor first in one round and audit first in the next, so a change
of load falls on both:

- **floor**: list every skill folder's files (``os.scandir``, recursively) and open and
  read each file once, in one process, checking nothing.
- **audit**: ``audit_skill`` on every skill folder, as ``dpt-skills audit`` does (less the
  printing).

Each is timed by the wall clock and by the process's CPU time (``time.process_time``: on
a machine shared with other work, the wall clock also counts the time spent waiting for
a core). The ratio is the median of the rounds' ratios. The target is an audit at most 2x
the floor.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
TEXT_SUFFIXES = (".md", ".txt", ".json", ".yaml", ".yml", ".csv")


def corpus_texts() -> tuple[list[str], list[str]]:
    """(SKILL.md bodies, reference texts) from the real collections; empty when absent."""
    if not CORPORA.is_dir():
        return [], []
    bodies: list[str] = []
    references: list[str] = []
    for path in sorted(CORPORA.rglob("*")):
        if not path.is_file() or path.is_symlink() or not path.name.endswith(TEXT_SUFFIXES):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path.name == "SKILL.md":
            end = text.find("\n---", 4)
            if text.startswith("---") and end > 0:
                bodies.append(text[end + 4 :].lstrip("\n"))
        elif 200 <= len(text) <= 64_000:
            references.append(text)
    return bodies, references


def synthetic_body(index: int) -> str:
    steps = "\n".join(
        f"{step}. Read section {step} of the input, check it against the glossary in "
        f"references/guide.md and record what differs (case {index})."
        for step in range(1, 25)
    )
    return f"# Document check {index}\n\n## Steps\n\n{steps}\n\nRun `scripts/check.py`.\n"


def synthetic_reference(index: int) -> str:
    rows = "\n".join(
        f"| term-{index}-{row} | The meaning of term {row}, with an example of its use. |"
        for row in range(60)
    )
    return f"# Guide {index}\n\n| Term | Meaning |\n|---|---|\n{rows}\n"


SCRIPT = '''#!/usr/bin/env python3
"""{title}: reads the input files, checks each record and writes a JSON report.{url}

Usage: python {name} INPUT... --out report.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
{network_import}

FIELDS = ("id", "date", "amount", "currency", "vendor")


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every row of the CSV file at `path`, as a mapping of its header."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def check(row: dict[str, str]) -> list[str]:
    """What is wrong with one row (empty when nothing is)."""
    problems = []
    for field in FIELDS:
        if not row.get(field, "").strip():
            problems.append(f"missing {{field}}")
    try:
        if float(row.get("amount", "0")) < 0:
            problems.append("negative amount")
    except ValueError:
        problems.append("amount is not a number")
    if len(row.get("currency", "")) != 3:
        problems.append("currency is not a three-letter code")
    return problems

{network_function}
def summarise(results: dict[str, list[list[str]]]) -> dict[str, object]:
    """Counts per file and in total, for the report."""
    total = sum(len(rows) for rows in results.values())
    bad = sum(1 for rows in results.values() for problems in rows if problems)
    return {{"files": len(results), "rows": total, "rows_with_problems": bad}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("report.json"))
    args = parser.parse_args(argv)
    results: dict[str, list[list[str]]] = {{}}
    for path in args.inputs:
        if not path.is_file():
            print(f"{{path}} is not a file", file=sys.stderr)
            return 2
        results[str(path)] = [check(row) for row in read_rows(path)]
    report = {{"summary": summarise(results), "results": results}}
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

NETWORK_FUNCTION = '''
def fetch_rates(base: str) -> dict[str, float]:
    """Today's exchange rates for `base` from the rates service."""
    with urllib.request.urlopen(f"{RATES}?base={base}", timeout=10) as answer:
        return dict(json.load(answer)["rates"])

'''

SHELL = "#!/bin/sh\nset -eu\npython3 -m pip install --user -r requirements.txt\necho ready\n"


def script(index: int, which: int) -> str:
    network = index % 8 == which
    return SCRIPT.format(
        title=f"Check {index}.{which}",
        name=f"check_{which}.py",
        url="\n\nThe format is described at https://example.org/spec."
        if index % 4 == which
        else "",
        network_import="import urllib.request\n\nRATES = 'https://rates.example.org'\n"
        if network
        else "",
        network_function=NETWORK_FUNCTION if network else "",
    )


def generate(root: Path, count: int) -> Path:
    """Write `count` skills under `root`; returns `root`."""
    bodies, references = corpus_texts()
    for index in range(count):
        name = f"audited-skill-{index:05d}"
        folder = root / name
        (folder / "scripts").mkdir(parents=True)
        (folder / "references").mkdir()
        body = bodies[index % len(bodies)] if bodies else synthetic_body(index)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Checks documents of kind {index} and reports "
            "what is wrong. Use when a user hands over such documents.\nlicense: MIT\n---\n\n"
            f"{body}",
            encoding="utf-8",
        )
        for number in range(1 + index % 2):
            reference = (
                references[(2 * index + number) % len(references)]
                if references
                else synthetic_reference(index + number)
            )
            (folder / "references" / f"guide-{number}.md").write_text(reference, "utf-8")
        (folder / "scripts" / "check_0.py").write_text(script(index, 0), encoding="utf-8")
        if index % 20 == 19:
            (folder / "scripts" / "setup.sh").write_text(SHELL, encoding="utf-8")
        else:
            (folder / "scripts" / "check_1.py").write_text(script(index, 1), encoding="utf-8")
    return root


def floor(root: Path) -> int:
    """List every skill folder's files and read each once; bytes read."""
    total = 0
    pending = [str(root)]
    while pending:
        with os.scandir(pending.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    with open(entry.path, "rb") as handle:
                        total += len(handle.read())
    return total


def audit(folders: list[Path]) -> int:
    """`audit_skill` of every folder; findings."""
    from doc_processing_std_tools.skills.audit.folders import audit_skill

    return sum(len(audit_skill(folder)) for folder in folders)


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def rounds(floor_run: object, audit_run: object, repeat: int) -> list[tuple[float, ...]]:
    """(floor wall, floor CPU, audit wall, audit CPU) seconds of each of `repeat` rounds,
    the two runs alternating which goes first."""
    assert callable(floor_run) and callable(audit_run)
    measured = []
    for round_number in range(repeat):
        times: dict[str, tuple[float, float]] = {}
        order = [("floor", floor_run), ("audit", audit_run)]
        for name, run in order if round_number % 2 == 0 else reversed(order):
            wall, cpu = clocks()
            run()
            end_wall, end_cpu = clocks()
            times[name] = (end_wall - wall, end_cpu - cpu)
        measured.append((*times["floor"], *times["audit"]))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skills", type=int, default=1000, help="skill folders to generate")
    parser.add_argument("--repeat", type=int, default=15, help="rounds of both runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-skills-audit-") as scratch:
        root = generate(Path(scratch) / "skills", args.skills)
        folders = sorted(root.iterdir())
        files = sum(1 for path in root.rglob("*") if path.is_file())
        findings = audit(folders)  # warms the page cache and the imports alike
        floor(root)
        gc.collect()
        load = os.getloadavg()[0]
        measured = rounds(lambda: floor(root), lambda: audit(folders), args.repeat)
        load = max(load, os.getloadavg()[0])
        source = "the real collections' texts" if CORPORA.is_dir() else "generated texts"
        print(
            f"{args.skills} skills, {files} files ({source}), {findings} findings; "
            f"load average up to {load:.1f}; medians of {args.repeat} alternating rounds"
        )
        print("| skills | files | clock | floor (read every file) | audit | x floor |")
        print("|---|---|---|---|---|---|")
        for label, at in (("wall", 0), ("CPU", 1)):
            floor_ms = statistics.median(row[at] for row in measured) * 1000
            audit_ms = statistics.median(row[at + 2] for row in measured) * 1000
            ratio = statistics.median(row[at + 2] / row[at] for row in measured)
            print(
                f"| {args.skills:,} | {files:,} | {label} | {floor_ms:.1f} ms | "
                f"{audit_ms:.1f} ms | {ratio:.2f} |"
            )


if __name__ == "__main__":
    main()
