"""What the overlapped catalog fetch saves per run, over stdio and over HTTP.

From its second run, an agent whose skills server is out of process sends list_skills at
the same time as the tool listing instead of after it. This times, at 100 generated skills
and with the offline test model, a run with injection off, a run with injection on, and a
run with injection on but that overlap switched off (before such a run the benchmark
makes the skills wrapper forget last run's source, so there is nothing to ask early). The
three are timed alternately; medians are printed with what injection adds with and without
the overlap.

Run by hand: .venv/bin/python benchmarks/bench_catalog_overlap.py [--runs N]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from bench_skills_injection import answer, make_skills

from doc_processing_toolkit import Agent, TestModel


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the HTTP server did not open port {port}")


async def time_route(entry: dict[str, Any], runs: int) -> dict[str, float]:
    """Median milliseconds of the three kinds of run on the server `entry` names."""
    off = Agent(model=TestModel(answer), tools=[entry], auto_inject_skills=False)
    on = Agent(model=TestModel(answer), tools=[entry])
    arms = (("off", off, True), ("on", on, True), ("on, no overlap", on, False))
    samples: dict[str, list[float]] = {name: [] for name, _, _ in arms}
    async with off, on:
        for _ in range(max(3, runs // 10)):
            await off.run("warm up")
            await on.run("warm up")
        for _ in range(runs):
            for name, agent, overlap in arms:
                if not overlap:
                    agent._skills._last_source = None
                start = time.perf_counter()
                await agent.run("go")
                samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e3 for name, values in samples.items()}


async def time_routes(routes: dict[str, dict[str, Any]], runs: int) -> None:
    print(
        f"{'route':<6} {'inject off':>11} {'inject on':>11} {'on, no overlap':>15} "
        f"{'added':>9} {'added, no overlap':>18}"
    )
    for route, entry in routes.items():
        m = await time_route(entry, runs)
        print(
            f"{route:<6} {m['off']:>9.3f}ms {m['on']:>9.3f}ms "
            f"{m['on, no overlap']:>13.3f}ms {m['on'] - m['off']:>7.3f}ms "
            f"{m['on, no overlap'] - m['off']:>16.3f}ms"
        )


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_skills(Path(tmp), 100)
        time.sleep(0.2)  # let every SKILL.md age past the catalog's racy window
        port = free_port()
        http = subprocess.Popen(
            [
                *(sys.executable, "-m", "doc_processing_std_tools"),
                *("--transport", "streamable-http", "--port", str(port)),
                *("--skills-dir", str(folder)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port)
            routes = {
                "stdio": {
                    "type": "mcp_command",
                    "command": sys.executable,
                    "args": ["-m", "doc_processing_std_tools.skills"],
                    "env": {"DPTTOOLS_SKILLS_DIR": str(folder)},
                },
                "http": {"type": "mcp_http", "url": f"http://127.0.0.1:{port}/mcp"},
            }
            anyio.run(time_routes, routes, runs)
        finally:
            http.terminate()
            http.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    main(parser.parse_args().runs)
