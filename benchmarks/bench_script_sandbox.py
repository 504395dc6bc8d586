"""What the bubblewrap sandbox costs per execute_skill_script call.

A skill whose script prints one line is run many times through the composed server's
execute_skill_script tool, over the MCP SDK's in-memory client, with
DPTTOOLS_SCRIPT_SANDBOX=none and =bwrap, alternately. For scale, the same script is also
started directly (``python script.py`` as a bare subprocess, without the tool, the
supervisor or the limits), and through the bootstrap the tool runs it with (``python -c
BOOTSTRAP FD PATH``, the code read from a memory file), which shows what running the
checked file from a descriptor costs. Medians and means of the wall-clock time are
printed, with what bubblewrap adds per call and the ratio (the target is at most 30 ms
added). Then the tool's two arms are timed without MCP, by calling `run_script` directly,
which shows what the tool layer adds. The load average is printed: on a busy machine
every number grows.

Run as root, the scripts run as DPTTOOLS_SCRIPT_USER (``nobody``), which must be able to
reach the interpreter. Every call now also includes the containment work: the per-call
cgroup where one can be made, the sweep after the call, and the walk of the workspace
for set-user-ID bits when a workspace is set (none is here).

Run by hand: .venv/bin/python benchmarks/bench_script_sandbox.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import BOOTSTRAP, run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

TARGET_MS = 30.0


def make_skill(root: Path) -> Path:
    """A skill folder holding scripts/hello.py, which prints one line."""
    # Run as root, scripts run as DPTTOOLS_SCRIPT_USER, which must reach the skill.
    root.chmod(0o755)
    folder = root / "skills" / "hello" / "scripts"
    folder.mkdir(parents=True)
    (folder.parent / "SKILL.md").write_text(
        "---\nname: hello\ndescription: Prints one line.\n---\n\n# Use\n", encoding="utf-8"
    )
    script = folder / "hello.py"
    script.write_text("print('hello')\n", encoding="utf-8")
    return script


async def tool_call_ms(client: Client) -> float:
    started = time.perf_counter()
    result = await client.call_tool(
        "execute_skill_script", {"skill_name": "hello", "script_path": "scripts/hello.py"}
    )
    elapsed = (time.perf_counter() - started) * 1000
    block = result.content[0]
    if result.is_error or not isinstance(block, TextContent) or '"hello\\n"' not in block.text:
        raise RuntimeError(f"the script did not run as expected: {result.content}")
    return elapsed


def bare_ms(script: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def bootstrap_ms(script: Path) -> float:
    """`script` started the way the tool starts it, from a descriptor, without the tool."""
    fd = os.memfd_create("skill-script")
    try:
        os.write(fd, script.read_bytes())
        os.lseek(fd, 0, os.SEEK_SET)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", BOOTSTRAP, str(fd), str(script)],
            check=True,
            capture_output=True,
            pass_fds=(fd,),
        )
        return (time.perf_counter() - started) * 1000
    finally:
        os.close(fd)


async def run_script_ms(script: Path, mode: str) -> float:
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none")
    started = time.perf_counter()
    result = await run_script(script, [], time_limit=30, output_limit=1000, policy=policy)
    elapsed = (time.perf_counter() - started) * 1000
    if result.stdout != "hello\n" or result.sandboxed != (mode == "bwrap"):
        raise RuntimeError(f"the script did not run as expected: {result}")
    return elapsed


def set_mode(mode: str) -> None:
    os.environ["DPTTOOLS_SCRIPT_SANDBOX"] = mode
    reset_settings()


async def main(calls: int) -> None:
    status = sandbox_status()
    if status.bwrap is None:
        raise SystemExit(f"bubblewrap cannot be used here: {status.problem}")
    with tempfile.TemporaryDirectory() as folder:
        script = make_skill(Path(folder))
        os.environ["DPTTOOLS_SKILLS_DIR"] = str(Path(folder) / "skills")
        samples: dict[str, list[float]] = {
            "bare subprocess": [],
            "bare bootstrap": [],
            "none": [],
            "bwrap": [],
        }
        async with Client(make_composed_server()) as client:
            for mode in ("none", "bwrap"):  # warm-up: imports, the bubblewrap probe
                set_mode(mode)
                for _ in range(3):
                    await tool_call_ms(client)
            for _ in range(calls):
                samples["bare subprocess"].append(bare_ms(script))
                samples["bare bootstrap"].append(bootstrap_ms(script))
                for mode in ("none", "bwrap"):
                    set_mode(mode)
                    samples[mode].append(await tool_call_ms(client))
        direct: dict[str, list[float]] = {"none": [], "bwrap": []}
        for _ in range(calls):
            for mode in ("none", "bwrap"):
                direct[mode].append(await run_script_ms(script, mode))
    print(f"execute_skill_script, a script printing one line, {calls} calls each (ms)")
    print(f"{'arm':<24}{'median':>9}{'mean':>9}{'p90':>9}")
    rows = {**samples, **{f"run_script, {mode}": values for mode, values in direct.items()}}
    for arm, values in rows.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(
            f"{arm:<24}{statistics.median(values):>9.1f}{statistics.mean(values):>9.1f}{p90:>9.1f}"
        )
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} cores")
    none, bwrap = statistics.median(samples["none"]), statistics.median(samples["bwrap"])
    added = bwrap - none
    verdict = "within" if added <= TARGET_MS else "OVER"
    print(
        f"bubblewrap adds {added:.1f} ms per call (median), ratio bwrap/none {bwrap / none:.2f}x"
        f"; target <= {TARGET_MS:.0f} ms: {verdict}"
    )
    booted = statistics.median(samples["bare bootstrap"]) - statistics.median(
        samples["bare subprocess"]
    )
    print(f"the bootstrap (code from a descriptor) adds {booted:.1f} ms per start (median)")
    direct_added = statistics.median(direct["bwrap"]) - statistics.median(direct["none"])
    print(f"without MCP (run_script): bubblewrap adds {direct_added:.1f} ms per call (median)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per arm (default 100)")
    anyio.run(main, parser.parse_args().calls)
