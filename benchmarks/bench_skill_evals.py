"""Skill trigger evals: what the eval adds to the agent runs it is made of.

The agent is the example agent's skills setup: std-tools' skills server over stdio with
the three example skills, each with its 20 labelled queries (60 queries). The model is
the offline TestModel answering after a fixed delay. Three peers run the same 60 queries
x 3 runs (180 runs) at concurrency 4 on one connected agent:

- ``plain runs``: ``agent.run(query)`` for every run, 4 at a time (the floor: what the
  runs cost without any eval);
- ``run_batch``: the same runs through the batch engine (``agent.run_batch``);
- ``evaluate_triggers``: the eval (reads the eval files through the server, runs every
  query through the batch engine with the trigger probe, builds the report).

Two model behaviours:

1. the model answers at once without loading a skill: the eval's run is the whole run,
   so the ratio to plain runs is the eval's own overhead (target: at most 1.1x);
2. the model loads a skill (``load_skill``) and then answers: a plain run makes the call
   and a second request, the eval stops at the call (a ratio below 1 is the saving).

Each peer runs 5 times per case after a warm-up, in alternating order; the median is
shown. Run: ``.venv/bin/python benchmarks/bench_skill_evals.py [--delay 0.02]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.evals import evaluate_triggers
from doc_processing_toolkit.messages import ModelResponse
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RUNS, CONCURRENCY, REPEATS = 3, 4, 5


def model(delay: float, loads: bool) -> TestModel:
    async def answer(request: ModelRequest) -> ModelResponse:
        await anyio.sleep(delay)
        if loads and not any(m.role == "assistant" for m in request.messages):
            return tool_call("load_skill", {"skill_name": "invoice-extraction"})
        return reply("Done.")

    return TestModel(answer)


def agent(delay: float, loads: bool) -> Agent:
    server = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": ["-m", "doc_processing_std_tools.skills"],
        "env": {"DPTTOOLS_SKILLS_DIR": str(EXAMPLES / "skills")},
        "name": "skills",
    }
    return Agent(model(delay, loads), tools=[server])


def queries() -> list[str]:
    import json

    found = []
    for skill in sorted((EXAMPLES / "skills").iterdir()):
        data = json.loads((skill / "evals" / "eval_queries.json").read_text(encoding="utf-8"))
        found.extend(entry["query"] for entry in data)
    return found


async def plain_runs(subject: Agent, prompts: list[str]) -> None:
    limiter = anyio.CapacityLimiter(CONCURRENCY)

    async def one(prompt: str) -> None:
        async with limiter:
            await subject.run(prompt)

    async with anyio.create_task_group() as group:
        for prompt in prompts:
            for _ in range(RUNS):
                group.start_soon(one, prompt)


async def batch_runs(subject: Agent, prompts: list[str]) -> None:
    items = [{"id": f"{n}-{r}", "query": q} for n, q in enumerate(prompts) for r in range(RUNS)]
    async for _result in subject.run_batch(items, "{query}", concurrency=CONCURRENCY):
        pass


async def eval_runs(subject: Agent, prompts: list[str]) -> None:
    # The eval always runs every query of the eval files (`prompts` is for the others).
    report = await evaluate_triggers(subject, runs=RUNS, concurrency=CONCURRENCY)
    assert len(report.queries) == len(queries())


async def case(delay: float, loads: bool) -> dict[str, float]:
    prompts = queries()
    peers: dict[str, Callable[[Agent, list[str]], Awaitable[None]]] = {
        "plain runs": plain_runs,
        "run_batch": batch_runs,
        "evaluate_triggers": eval_runs,
    }
    times: dict[str, list[float]] = {name: [] for name in peers}
    async with agent(delay, loads) as subject:
        for run in peers.values():
            await run(subject, prompts[:6])  # warm-up
        for repeat in range(REPEATS):
            order = list(peers.items())
            if repeat % 2:
                order.reverse()
            for name, run in order:
                started = time.perf_counter()
                await run(subject, prompts)
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(found) for name, found in times.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.02, help="model delay in seconds")
    options = parser.parse_args()
    total = len(queries()) * RUNS
    print(f"{total} runs per peer, concurrency {CONCURRENCY}, median of {REPEATS}")
    for delay in (0.0, options.delay):
        for loads, what in ((False, "the model answers"), (True, "the model loads a skill")):
            medians = await case(delay, loads)
            floor = medians["plain runs"]
            print(f"\n{what}, model delay {delay * 1000:.0f} ms:")
            for name, seconds in medians.items():
                print(
                    f"  {name:<18} {seconds:7.3f} s  {seconds / total * 1000:6.2f} ms/run  "
                    f"{seconds / floor:5.2f}x plain runs"
                )


if __name__ == "__main__":
    anyio.run(main)
