"""One traced agent run, drawn as a tree of its spans with a timeline.

The agent (offline TestModel, scripted) loads the invoice-extraction skill and runs its
script on an example invoice, through doc-processing-std-tools over stdio. This process
records its spans with the OpenTelemetry SDK's in-memory exporter; the server child
records its own (examples/traced_std_tools.py). Both halves are one trace, joined by the
W3C ``traceparent`` the MCP SDK's client writes into each request's ``_meta``.

    python examples/tracing_tree.py            # the tree, a timeline and key attributes
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from doc_processing_toolkit import Agent, TestModel

EXAMPLES = Path(__file__).resolve().parent
INVOICE = EXAMPLES / "invoices" / "nordlicht-2026-0142.json"
SHOWN = (
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "doc_processing.skills.injected",
    "doc_processing.skills.left_out_count",
    "doc_processing.tool.server",
    "doc_processing.skill.name",
    "doc_processing.script.exit_code",
    "doc_processing.script.sandbox",
    "doc_processing.limits.hit",
    "error.type",
)
BAR = 24


def record(span: Any) -> dict[str, Any]:
    """A finished span of this process as the server child writes its own."""
    return {
        "name": span.name,
        "kind": span.kind.name,
        "span_id": f"{span.context.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "trace_id": f"{span.context.trace_id:032x}",
        "start": span.start_time,
        "end": span.end_time,
        "attributes": dict(span.attributes or {}),
    }


def draw(records: list[dict[str, Any]]) -> str:
    """The spans of the agent run's trace as an indented tree with a timeline bar."""
    (run,) = [r for r in records if r["name"].startswith("invoke_agent")]
    spans = sorted(
        (r for r in records if r["trace_id"] == run["trace_id"]), key=lambda r: r["start"]
    )
    start, total = run["start"], run["end"] - run["start"]
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans:
        children.setdefault(span["parent_id"], []).append(span)
    lines: list[str] = []

    def walk(span: dict[str, Any], depth: int) -> None:
        begin = int(BAR * (span["start"] - start) / total)
        width = max(1, int(BAR * (span["end"] - span["start"]) / total))
        bar = (" " * begin + "#" * width).ljust(BAR)[:BAR]
        label = f"{'  ' * depth}{span['name']} ({span['kind'].lower()})"
        millis = (span["end"] - span["start"]) / 1e6
        lines.append(f"{label:<54} |{bar}| {millis:6.1f} ms")
        shown = {k: v for k, v in span["attributes"].items() if k in SHOWN}
        for key, value in shown.items():
            lines.append(f"{'  ' * depth}    {key} = {json.dumps(value)}")
        for child in children.get(span["span_id"], []):
            walk(child, depth + 1)

    walk(run, 0)
    return "\n".join(lines)


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    with tempfile.TemporaryDirectory() as scratch:
        trace_file = Path(scratch) / "server-spans.jsonl"
        server = {
            "type": "mcp_command",
            "name": "std_tools",
            "command": sys.executable,
            "args": [str(EXAMPLES / "traced_std_tools.py")],
            "env": {
                "TRACE_FILE": str(trace_file),
                "DPTTOOLS_SKILLS_DIR": str(EXAMPLES / "skills"),
                "DPTTOOLS_WORKSPACE_DIR": str(EXAMPLES),
                "DPTTOOLS_CACHE_DIR": str(Path(scratch) / "cache"),
            },
        }
        steps = [
            {"call": "load_skill", "arguments": {"skill_name": "invoice-extraction"}},
            {
                "call": "execute_skill_script",
                "arguments": {
                    "skill_name": "invoice-extraction",
                    "script_path": "scripts/normalise_totals.py",
                    "args": str(INVOICE),
                },
            },
            {"reply": "The invoice's totals are consistent."},
        ]
        agent = Agent(model=TestModel(steps), tools=[server], name="invoices")
        async with agent:
            await agent.run("Check the totals of the Nordlicht invoice.")
        records = [record(span) for span in exporter.get_finished_spans()]
        if trace_file.exists():
            records += [json.loads(line) for line in trace_file.read_text().splitlines()]
    print(draw(records))


if __name__ == "__main__":
    anyio.run(main)
