"""What staging a skill script's changes costs per call, under bubblewrap.

A script runs through `run_script` with DPTTOOLS_SCRIPT_SANDBOX=bwrap, in turn:

- without a workspace (the peer: bubblewrap, the supervisor and the limits, no view);
- with a workspace of 10,000 files (100 folders of 100 small files, a few secrets among
  them) that the script leaves alone: the view is built (a tmpfs, the whiteouts hiding
  the secrets, the overlay) and the server walks the empty upper layer afterwards;
- the same with a workspace of 100 files, to show that the cost does not grow with the
  workspace;
- with the 10,000-file workspace, the script writing 10, 100 and 1,000 new files, which
  the server then applies, to show that the cost grows with the changes.

Medians of the wall-clock time are printed, with what each arm adds to the peer and the
ratio, and of the CPU time the call's processes and the server used (less sensitive to
the machine's load); the target is at most 20 ms added for a call that changes
nothing. The first call on a workspace also lists its folders once for the secrets (the
later calls re-read only folders that changed); that first call is timed apart. The load
average is printed: on a busy machine every number grows.

Run by hand: .venv/bin/python benchmarks/bench_script_staging.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from doc_processing_std_tools.change_policy import ChangePolicy
from doc_processing_std_tools.skills.scripts._staging import apply_changes, hidden_paths
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

TARGET_MS = 20.0

WRITER = """\
import os, sys
count = int(sys.argv[1])
if count:
    folder = os.path.join(os.environ["DPTTOOLS_WORKSPACE_DIR"], "out")
    os.makedirs(folder, exist_ok=True)
    for index in range(count):
        with open(os.path.join(folder, f"{index}.txt"), "w") as handle:
            handle.write("result\\n")
print("done")
"""


def make_workspace(root: Path, folders: int, per_folder: int) -> Path:
    for folder in range(folders):
        path = root / f"part-{folder:03d}"
        path.mkdir(parents=True)
        for index in range(per_folder):
            (path / f"doc-{index:03d}.md").write_text("text\n", encoding="utf-8")
        if folder % 25 == 0:
            (path / ".env").write_text("KEY=secret\n", encoding="utf-8")
    return root


def make_skill(root: Path) -> Path:
    folder = root / "writer" / "scripts"
    folder.mkdir(parents=True)
    (folder.parent / "SKILL.md").write_text(
        "---\nname: writer\ndescription: Writes files.\n---\n\n# Use\n", encoding="utf-8"
    )
    (folder / "write.py").write_text(WRITER, encoding="utf-8")
    return folder / "write.py"


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def call_ms(script: Path, workspace: Path | None, count: int) -> tuple[float, float]:
    """Wall-clock and CPU time (of the processes the call started, and of this one) of one
    call, in ms."""
    cpu = children_cpu_ms() + time.process_time() * 1000
    started = time.perf_counter()
    result = await run_script(
        script,
        [str(count)],
        time_limit=60,
        output_limit=4000,
        policy=ScriptPolicy(sandbox="bwrap", workspace=workspace, max_changed_files=5000),
        skill_dir=script.parent.parent,
    )
    elapsed = (time.perf_counter() - started) * 1000
    cpu = children_cpu_ms() + time.process_time() * 1000 - cpu
    if result.stdout != "done\n":
        raise RuntimeError(f"the script failed: {result.stderr}")
    applied = len(result.changes.applied) if result.changes is not None else 0
    if applied != (count + 1 if count else 0):
        raise RuntimeError(f"expected {count} applied files, got {result.changes}")
    if count and workspace is not None:
        shutil.rmtree(workspace / "out")
    return elapsed, cpu


def direct_write_ms(folder: Path, count: int) -> float:
    """`count` small files written by this process itself, for scale: what the same
    writes cost without a sandbox or staging."""
    folder.mkdir()
    started = time.perf_counter()
    for index in range(count):
        (folder / f"{index}.txt").write_text("result\n", encoding="utf-8")
    elapsed = (time.perf_counter() - started) * 1000
    shutil.rmtree(folder)
    return elapsed


def server_side_ms(workspace: Path, layer: Path, runs: int = 50) -> tuple[float, float]:
    """The server's own staging work for a call that changes nothing, without the
    processes: listing the secrets (remembered folders) and walking an empty layer."""
    policy = ChangePolicy()
    hidden_paths(workspace, policy)
    listing, walking = [], []
    fd = os.open(layer, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(runs):
            started = time.perf_counter()
            hidden_paths(workspace, policy)
            listing.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            apply_changes(fd, workspace, policy, max_files=1000, max_bytes=1 << 28)
            walking.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
    return statistics.median(listing), statistics.median(walking)


async def main(calls: int) -> None:
    status = sandbox_status()
    if status.bwrap is None:
        raise SystemExit(f"bubblewrap is not usable here: {status.problem}")
    with tempfile.TemporaryDirectory(prefix="bench-staging-") as temp:
        base = Path(temp)
        script = make_skill(base / "skills")
        large = make_workspace(base / "large", 100, 100)
        small = make_workspace(base / "small", 4, 25)
        first = {
            "10,000 files": (await call_ms(script, large, 0))[0],
            "100 files": (await call_ms(script, small, 0))[0],
        }
        arms: dict[str, tuple[Path | None, int]] = {
            "no workspace (peer)": (None, 0),
            "10,000 files, no change": (large, 0),
            "100 files, no change": (small, 0),
            "10,000 files, 10 written": (large, 10),
            "10,000 files, 100 written": (large, 100),
            "10,000 files, 1,000 written": (large, 1000),
        }
        (base / "layer").mkdir()
        listing, walking = server_side_ms(large, base / "layer")
        samples: dict[str, list[float]] = {name: [] for name in arms}
        cpu: dict[str, list[float]] = {name: [] for name in arms}
        direct: dict[int, list[float]] = {10: [], 100: [], 1000: []}
        for _ in range(calls):
            for name, (workspace, count) in arms.items():
                wall, used = await call_ms(script, workspace, count)
                samples[name].append(wall)
                cpu[name].append(used)
            for count, values in direct.items():
                values.append(direct_write_ms(base / "direct", count))
    load = os.getloadavg()
    print(f"{calls} calls per arm; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"first call on a workspace (lists it once): {first}")
    print(
        f"server-side work of a call that changes nothing, 10,000 files: listing the "
        f"secrets {listing:.2f} ms, walking the empty layer {walking:.2f} ms"
    )
    peer = statistics.median(samples["no workspace (peer)"])
    peer_cpu = statistics.median(cpu["no workspace (peer)"])
    print(f"{'arm':32} {'median':>10} {'added':>10} {'ratio':>7} {'CPU':>10} {'CPU added':>10}")
    for name, values in samples.items():
        median = statistics.median(values)
        used = statistics.median(cpu[name])
        print(
            f"{name:32} {median:8.1f} ms {median - peer:+8.1f} ms {median / peer:6.2f}x "
            f"{used:7.1f} ms {used - peer_cpu:+8.1f} ms"
        )
    for count, values in direct.items():
        print(f"for scale, {count:>5} files written directly: {statistics.median(values):8.1f} ms")
    added = statistics.median(samples["10,000 files, no change"]) - peer
    verdict = "within" if added <= TARGET_MS else "over"
    print(f"staging adds {added:.1f} ms to a call that changes nothing: {verdict} {TARGET_MS} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    anyio.run(main, parser.parse_args().calls)
