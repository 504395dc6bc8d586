"""The main example: an agent that finds a skill in its prompt and uses it.

The std-tools composed server runs as a subprocess (the toolkit's ``mcp_command`` route)
with ``DPTTOOLS_SKILLS_DIR`` pointing at ``examples/skills``. Skills auto-injection puts the
catalog into the system prompt; the model loads the invoice-extraction skill, runs its
``normalise_totals.py`` on an example invoice whose printed totals are wrong, and answers
with what the script found.

Without an API key the model is an offline script, not a language model: the toolkit's
test model running `offline_model` below, which acts as a model would (it reads the
catalog, loads the skill, runs the script it finds in the skill's resource list and
reports the script's findings). When a tool answers with an error, it says so and stops;
the error is printed as the server wrote it. With ANTHROPIC_API_KEY or
OPENAI_API_KEY set, a real model does the same (choose one with DPT_DEMO_MODEL, for
example ``anthropic:claude-sonnet-4-5``).

Run it with ``make demo``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from doc_processing_toolkit import (
    Agent,
    FinalResultEvent,
    Model,
    ModelRequest,
    RunStartEvent,
    TestModel,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from doc_processing_toolkit.messages import ModelResponse, TextPart, ToolResultPart
from doc_processing_toolkit.models.test import tool_call

HERE = Path(__file__).resolve().parent
SKILLS_DIR = HERE / "skills"
INVOICE = HERE / "invoices" / "harbour-freight-7731-wrong-totals.json"
PROMPT = (
    f"Check the totals of the supplier invoice at {INVOICE} and tell me what is wrong "
    "with them. Use a skill if one fits."
)


def _tool_results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]


def _answer(text: str) -> ModelResponse:
    return ModelResponse(parts=(TextPart(text),))


def offline_model(request: ModelRequest) -> ModelResponse:
    """A scripted stand-in for a model: pick the skill from the catalog, load it, run the
    script it lists, and summarise the script's JSON. A tool error ends the run with an
    answer that quotes it."""
    results = _tool_results(request)
    catalog = re.findall(r'<skill name="([^"]+)"', request.system or "")
    skill = next((name for name in catalog if "invoice" in name), None)
    if skill is None:
        return _answer("No skill in my catalog fits this task.")
    if not results:
        return tool_call("load_skill", {"skill_name": skill}, text=f"The {skill} skill fits.")
    last = results[-1]
    if last.is_error:
        return _answer(f"The tool {last.name} failed, so I stopped:\n{last.content}")
    if len(results) == 1:
        script = re.search(r"scripts/normalise_totals\.py", last.content)
        if script is None:
            return _answer("The skill has no totals script.")
        return tool_call(
            "execute_skill_script",
            {"skill_name": skill, "script_path": script.group(0), "args": str(INVOICE)},
            text="Running the skill's totals check.",
        )
    try:
        run = json.loads(last.content)
    except ValueError:
        return _answer(f"The script's result is not the JSON I expected:\n{last.content}")
    return _answer(summarise(run))


def summarise(run: dict[str, Any]) -> str:
    """Turn the script's output into an answer."""
    if run.get("exit_code") != 0:
        return f"The totals script failed: {run.get('stderr', '').strip()}"
    report = json.loads(run["stdout"])
    invoice = report["invoice"]
    lines = [
        f"Invoice {invoice.get('invoice_number')} ({invoice.get('currency')}): "
        + ("the printed totals are consistent." if report["consistent"] else "totals are off.")
    ]
    for item in report["discrepancies"]:
        lines.append(f"- {item['field']}: printed {item['stated']}, should be {item['computed']}")
    return "\n".join(lines)


def _indented(text: str) -> str:
    return "\n".join(f"   {line}" for line in text.strip().splitlines())


def choose_model() -> Model | str:
    """A real provider when a key is set, otherwise the offline script."""
    chosen = os.environ.get("DPT_DEMO_MODEL")
    if chosen:
        return chosen
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic:claude-sonnet-4-5"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4.1"
    return TestModel(offline_model, name="scripted-demo")


def main() -> int:
    """Run the agent once, showing each step as it happens."""
    agent = Agent(
        model=choose_model(),
        instructions="You check supplier documents for an accounts-payable team.",
        tools=[
            {
                "type": "mcp_command",
                "command": sys.executable,
                "args": ["-m", "doc_processing_std_tools"],
                "name": "std-tools",
                "env": {
                    "DPTTOOLS_SKILLS_DIR": str(SKILLS_DIR),
                    "DPTTOOLS_WORKSPACE_DIR": str(HERE),
                },
            }
        ],
    )
    if isinstance(agent.model, TestModel):
        print(
            f"model: {agent.model.name}, an offline script standing in for a model (no API "
            "key is set; set ANTHROPIC_API_KEY or OPENAI_API_KEY to use a real one)\n"
        )
    else:
        print(f"model: {agent.model.name}\n")

    async def run() -> int:
        async with agent:
            async for event in agent.run_stream(PROMPT):
                if isinstance(event, RunStartEvent):
                    print("=== System prompt, with the injected skill catalog ===")
                    print(event.system_prompt)
                    print(f"\n=== Tools offered: {', '.join(event.tools)} ===\n")
                    print(f"> {PROMPT}\n")
                elif isinstance(event, TextDeltaEvent):
                    print(event.text, end="", flush=True)
                elif isinstance(event, ToolCallEvent):
                    print(f"\n-> {event.call.name}({json.dumps(event.call.arguments)})")
                elif isinstance(event, ToolResultEvent):
                    record = event.record
                    if record.is_error:
                        print(f"<- {record.name} failed:\n{_indented(record.content)}")
                    else:
                        print(f"<- {record.name}: ok, {len(record.content)} chars")
                elif isinstance(event, FinalResultEvent):
                    result = event.result
                    print("\n\n=== Answer ===")
                    print(result.output)
                    print(
                        f"\n({result.usage.requests} model requests, skills: "
                        f"{result.skills.status} from {result.skills.server!r})"
                    )
        return 0

    import anyio

    return anyio.run(run)


if __name__ == "__main__":
    raise SystemExit(main())
