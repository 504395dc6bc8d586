"""Batch runs: throughput by concurrency, the Ray engine against the local one, and the
driver's memory over a long batch.

The model is the offline TestModel answering every request after a fixed delay (200 ms by
default, like a fast real provider): it calls ``read_document`` on the item's document
through the std-tools server over stdio, then answers with the document's total. An item
is so two model requests and one real tool call. The documents are small generated text
files.

1. Local engine at concurrency 1, 4, 16 and 64: items per second, and the ratio to
   concurrency 1 (target: at least 12x at 16). Low concurrencies run fewer items (an item
   takes about 0.4 s, so 1,000 of them at concurrency 1 would take 7 minutes).
2. Ray engine with 2 actors against the local engine at the same total concurrency
   (target: Ray's throughput at most 20% below the local engine's). Ray is started here
   with 2 CPUs; its start-up is not counted.
3. Driver memory over a 10,000-item batch written to a JSONL file (model without delay
   or tool, concurrency 64): resident memory sampled every 1,000 results (target: flat).

Run: ``.venv/bin/python benchmarks/bench_batch.py [--delay 0.2] [--items 1000]``
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.batch import LocalEngine
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest, TextDelta
from doc_processing_toolkit.models.test import reply, tool_call

DELAY = 0.2


def make_documents(folder: Path, count: int) -> list[str]:
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    paths = []
    for number in range(count):
        path = docs / f"invoice-{number:05d}.txt"
        path.write_text(f"Invoice {number}\nTotal: {number * 7} EUR\n", encoding="utf-8")
        paths.append(f"docs/{path.name}")
    return paths


async def delayed_reader(request: ModelRequest) -> ModelResponse:
    """Wait DELAY, then read the document named in the prompt; after the tool result,
    wait DELAY again and answer with its total."""
    await anyio.sleep(DELAY)
    last = request.messages[-1]
    results = [part for part in last.parts if isinstance(part, ToolResultPart)]
    if not results:
        match = re.search(r"Read (\S+) and", last.text)
        assert match is not None
        return tool_call("read_document", {"path": match.group(1)})
    total = re.search(r"Total: (\d+)", results[0].content)
    return reply(f"total {total.group(1) if total else '?'}")


def make_agent(workspace: str) -> Agent:
    """The benchmark's agent (module level: Ray pickles it to each actor)."""
    skills = Path(workspace) / "skills"
    skills.mkdir(exist_ok=True)
    return Agent(
        TestModel(delayed_reader),
        tools=[
            {
                "type": "mcp_script",
                "module": "doc_processing_std_tools",
                "args": ["--workspace", workspace, "--skills-dir", str(skills)],
            }
        ],
        auto_inject_skills=False,
    )


PROMPT = "Read {path} and give its total."


async def local_throughput(workspace: Path, items: list[str], concurrency: int) -> float:
    agent = make_agent(str(workspace))
    async with agent:  # servers connected before timing
        started = time.perf_counter()
        failed = 0
        async for result in agent.run_batch(
            items, PROMPT, engine=LocalEngine(concurrency=concurrency)
        ):
            failed += result.status != "ok"
        elapsed = time.perf_counter() - started
    assert failed == 0, f"{failed} items failed"
    return len(items) / elapsed


async def ray_throughput(workspace: Path, items: list[str], concurrency: int) -> float:
    import functools

    from doc_processing_toolkit.batch.ray_engine import RayEngine

    engine = RayEngine(
        concurrency=concurrency,
        actors=2,
        agent_factory=functools.partial(make_agent, str(workspace)),
    )
    agent = make_agent(str(workspace))  # the driver's agent is not connected
    # The actors start (and connect their servers) before the first item is sent; the
    # clock starts at the first result, so start-up is not counted.
    started = time.perf_counter()
    failed = 0
    count = 0
    async for result in agent.run_batch(items, PROMPT, engine=engine):
        if count == 0:
            started = time.perf_counter()  # the pool is up: first result in
        count += 1
        failed += result.status != "ok"
    elapsed = time.perf_counter() - started
    assert failed == 0, f"{failed} items failed"
    return (count - 1) / elapsed


def resident_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class ForgetfulModel:
    """Answers at once and keeps nothing (TestModel keeps every request for tests, which
    would be the only thing growing here)."""

    name = "bench:forgetful"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return reply("ok")

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        yield await self.request(request)


async def memory_profile(workspace: Path, count: int) -> list[tuple[int, float, float]]:
    """(results so far, resident MiB, MiB allocated by Python and still live)."""
    agent = Agent(ForgetfulModel())
    tracemalloc.start()
    samples = [(0, resident_mib(), tracemalloc.get_traced_memory()[0] / 2**20)]
    items = ({"id": n, "text": f"record {n} " * 20} for n in range(count))
    output = workspace / "memory.jsonl"
    done = 0
    async for _result in agent.run_batch(
        items, "Summarise: {text}", output=output, engine=LocalEngine(concurrency=64)
    ):
        done += 1
        if done % 1000 == 0:
            samples.append((done, resident_mib(), tracemalloc.get_traced_memory()[0] / 2**20))
    tracemalloc.stop()
    return samples


async def main() -> None:
    global DELAY
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=DELAY, help="model delay in seconds")
    parser.add_argument("--items", type=int, default=1000, help="items at concurrency >= 16")
    parser.add_argument("--memory-items", type=int, default=10_000)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--only-memory", action="store_true", help="run part 3 alone")
    options = parser.parse_args()
    DELAY = options.delay

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        paths = make_documents(workspace, options.items)
        if options.only_memory:
            options.skip_ray = True
            sizes: dict[int, int] = {}
        else:
            sizes = {1: 40, 4: 160, 16: options.items, 64: options.items}
        print(f"model delay {DELAY * 1000:.0f} ms per request, 2 requests + 1 tool call per item")
        print(f"{'engine':<8} {'concurrency':>11} {'items':>6} {'items/s':>9} {'vs c=1':>8}")
        rates: dict[int, float] = {}
        for concurrency, count in sizes.items():
            rate = await local_throughput(workspace, paths[:count], concurrency)
            rates[concurrency] = rate
            print(
                f"{'local':<8} {concurrency:>11} {count:>6} {rate:>9.2f} {rate / rates[1]:>7.1f}x"
            )
        if rates:
            print(f"speed-up at 16 over 1: {rates[16] / rates[1]:.1f}x (target >= 12x)")

        if not options.skip_ray:
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            try:
                for concurrency in (16, 64):
                    rate = await ray_throughput(workspace, paths, concurrency)
                    local = rates[concurrency]
                    print(
                        f"{'ray x2':<8} {concurrency:>11} {len(paths):>6} {rate:>9.2f} "
                        f"  ray/local {rate / local:.2f} (cost {(1 - rate / local) * 100:+.0f}%,"
                        " target <= 20%)"
                    )
            finally:
                ray.shutdown()

        samples = await memory_profile(workspace, options.memory_items)
        print("driver memory over a long batch (results: RSS MiB / live Python MiB):")
        print("  " + ", ".join(f"{done}: {rss:.1f}/{live:.2f}" for done, rss, live in samples))
        first, last = samples[1], samples[-1]
        items = max(1, last[0] - first[0])
        print(
            f"growth from {first[0]} to {last[0]} results: RSS {last[1] - first[1]:+.1f} MiB, "
            f"live Python {last[2] - first[2]:+.2f} MiB "
            f"({(last[2] - first[2]) * 2**20 / items:.0f} bytes per item)"
        )


if __name__ == "__main__":
    anyio.run(main)
