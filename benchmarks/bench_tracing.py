"""What tracing costs an agent run.

One ``Agent.run`` with the offline TestModel that calls the echo tool once and then
answers (sessions already open), on two workloads:

- ``in-process``: the tool on an in-process MCPServer and a model that answers at once, so
  the run is nothing but the toolkit's and the MCP SDK's Python: the worst case for any
  fixed cost per span;
- ``stdio``: the tool on a server child over stdio (benchmarks/echo_server.py) and a model
  that takes 10 ms per request (``TestModel(delay=0.01)``, still far quicker than any
  hosted model).

Each is timed in three modes, each in its own process:

- ``baseline``: no tracer provider, the toolkit imported from ``--baseline-src`` (the
  source tree of a commit before tracing, e.g. extracted with ``git archive``); skipped
  without it;
- ``none``: no tracer provider (the OpenTelemetry API's no-op), this tree's toolkit;
- ``sdk``: the OpenTelemetry SDK's TracerProvider with a SimpleSpanProcessor and an
  InMemorySpanExporter: every span of the run is built and exported (the toolkit's
  invoke_agent, chat x 2 and execute_tool, and the MCP SDK's own).

The modes take turns for ``--rounds`` rounds (so a busy machine slows them alike); the
median of each mode's per-round medians is reported.

Run: ``.venv/bin/python benchmarks/bench_tracing.py [--runs N] [--rounds R]
[--baseline-src FOLDER/packages/toolkit/src] [--workload in-process|stdio]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ARGUMENTS = {"text": "benchmark payload"}
ECHO_SERVER = Path(__file__).with_name("echo_server.py")
WORKLOADS = {"in-process": 0.0, "stdio": 0.01}
"""Each workload and the seconds its model takes per request."""


def measure(mode: str, workload: str, runs: int) -> float:
    """The median seconds of one Agent.run in this process."""
    import anyio

    exporter: Any = None
    if mode == "sdk":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

    from mcp.server.mcpserver import MCPServer

    from doc_processing_toolkit import Agent, TestModel
    from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
    from doc_processing_toolkit.models import ModelRequest
    from doc_processing_toolkit.models.test import reply, tool_call

    tools: list[Any]
    if workload == "in-process":
        server = MCPServer("bench-echo")

        @server.tool()
        def echo(text: str) -> str:
            """Return the text unchanged."""
            return text

        tools = [server]
    else:
        tools = [{"type": "mcp_command", "command": sys.executable, "args": [str(ECHO_SERVER)]}]

    def one_tool_call(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        return reply(results[0].content) if results else tool_call("echo", ARGUMENTS)

    async def main() -> float:
        agent = Agent(TestModel(one_tool_call, delay=WORKLOADS[workload]), tools=tools)
        async with agent:
            for _ in range(max(10, runs // 10)):
                await agent.run("go")
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                await agent.run("go")
                samples.append(time.perf_counter() - started)
                if exporter is not None and len(exporter.get_finished_spans()) > 10_000:
                    exporter.clear()
        return statistics.median(samples)

    return anyio.run(main)


def tracing_calls(iterations: int = 100_000) -> float:
    """Seconds that the tracing calls of one run (start, skills, two requests, one tool
    call, end) take without a tracer provider: what every untraced run pays."""
    from doc_processing_toolkit._tracing import RunTrace
    from doc_processing_toolkit.messages import Message, ModelResponse, TextPart, Usage
    from doc_processing_toolkit.models import ModelRequest
    from doc_processing_toolkit.skills import SkillsOutcome

    request = ModelRequest(
        system=None, messages=(Message.user("go"),), tools=(), provider_kwargs={}
    )
    response = ModelResponse(parts=(TextPart("ok"),), usage=Usage(1, 1, 1))
    outcome = SkillsOutcome(status="no_server")
    started = time.perf_counter()
    for _ in range(iterations):
        run = RunTrace.start("agent", "test:model")
        with run.current():
            pass
        run.skills(outcome)
        for _ in range(2):
            chat = run.chat(request)
            with chat.current():
                pass
            chat.done(response)
        with run.tool("call_1", "echo", ARGUMENTS, None, outcome) as tool:
            tool.done(None, None)  # type: ignore[arg-type]
        run.end()
    return (time.perf_counter() - started) / iterations


def child(mode: str, workload: str, runs: int, src: str | None) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, __file__, "--child", mode, "--workload", workload]
    done = subprocess.run(
        [*command, "--runs", str(runs)], capture_output=True, text=True, env=env, check=True
    )
    answer = json.loads(done.stdout)
    if src is not None and not answer["toolkit"].startswith(src):
        raise SystemExit(f"the baseline run imported {answer['toolkit']}, not from {src}")
    return float(answer["median"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, help="timed runs per process (default 2000, 200)")
    parser.add_argument("--rounds", type=int, default=5, help="processes per mode")
    parser.add_argument("--baseline-src", help="the toolkit src folder of a commit to compare")
    parser.add_argument("--workload", choices=list(WORKLOADS), action="append")
    parser.add_argument(
        "--child", choices=["baseline", "none", "sdk", "calls"], help=argparse.SUPPRESS
    )
    options = parser.parse_args()
    workloads = options.workload or list(WORKLOADS)
    if options.child == "calls":
        print(json.dumps({"median": tracing_calls(), "toolkit": ""}))
        return
    if options.child:
        mode = "none" if options.child == "baseline" else options.child
        median = measure(mode, workloads[0], options.runs)
        import doc_processing_toolkit

        print(json.dumps({"median": median, "toolkit": doc_processing_toolkit.__file__}))
        return
    modes = ["baseline"] if options.baseline_src else []
    modes += ["none", "sdk"]
    calls = child("calls", workloads[0], 0, None)
    print(f"tracing calls of one run without a provider: {calls * 1e6:.2f} us")
    for workload in workloads:
        runs = options.runs or (2000 if workload == "in-process" else 200)
        medians: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(options.rounds):
            for mode in modes:
                src = options.baseline_src if mode == "baseline" else None
                medians[mode].append(child(mode, workload, runs, src))
        result = {mode: statistics.median(values) for mode, values in medians.items()}
        print(f"{workload}: Agent.run median, {runs} runs x {options.rounds} rounds")
        for mode in modes:
            rounds = ", ".join(f"{v * 1e6:.0f}" for v in medians[mode])
            print(f"  {mode:<9} {result[mode] * 1e6:9.1f} us   (rounds: {rounds})")
        if "baseline" in result:
            print(f"  none vs baseline: {100 * (result['none'] / result['baseline'] - 1):+.1f}%")
        print(f"  sdk vs none:      {100 * (result['sdk'] / result['none'] - 1):+.1f}%")


if __name__ == "__main__":
    main()
