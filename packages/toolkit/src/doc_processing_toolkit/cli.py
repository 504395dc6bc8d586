"""``dpt-agent``: run an agent from the command line.

``dpt-agent run [--config agent.yaml] [--model M] "prompt"`` streams the answer to stdout
and reports tool calls, approvals, tool results and warnings on stderr as the run goes.
``dpt-agent batch --prompt T --input GLOB --output results.jsonl`` runs a prompt template
over many items (see `doc_processing_toolkit.batch.command`).

Calls that the configuration's approval gate sends to the ``ask`` policy are asked about
on the terminal; when standard input is not a terminal they are denied, unless
``--approve-all`` approves them all.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, TextIO

import anyio

from . import __version__
from .agent import Agent
from .approval import ApprovalDecision, ApprovalGate, ApprovalRequest, TerminalApproval
from .batch.command import add_batch_parser, run_batch_command
from .errors import ToolkitError
from .events import (
    ApprovalEvent,
    FinalResultEvent,
    RunStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = ["main", "stream_run"]

_PREVIEW = 300


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 3] + "..."


async def stream_run(
    agent: Agent, prompt: str, *, out: TextIO, err: TextIO, quiet: bool = False
) -> None:
    """Run `agent` on `prompt`, writing the answer to `out` as it arrives and the progress
    (the model's thinking, tool calls, results, warnings, usage) to `err` unless `quiet`.

    Raises:
        ToolkitError: the run failed.
    """
    async with agent:
        at_line_start = True
        thinking = False  # whether `err` is in the middle of a "thinking:" line
        shown_warnings = 0
        async for event in agent.run_stream(prompt):
            if isinstance(event, ThinkingDeltaEvent):
                if not quiet:
                    err.write(event.text if thinking else f"thinking: {event.text}")
                    err.flush()
                    thinking = True
                continue
            if thinking:
                err.write("\n")
                err.flush()
                thinking = False
            if isinstance(event, TextDeltaEvent):
                out.write(event.text)
                out.flush()
                at_line_start = event.text.endswith("\n")
                continue
            if not at_line_start:
                out.write("\n")
                out.flush()
                at_line_start = True
            if quiet:
                continue
            if isinstance(event, RunStartEvent):
                skills = event.skills
                if skills.status == "injected":
                    names = ", ".join(skill.name for skill in skills.skills)
                    err.write(f"skills: {len(skills.skills)} from {skills.server!r}: {names}\n")
                elif skills.status == "empty":
                    err.write(f"skills: none yet in {skills.server!r}\n")
                for warning in event.warnings:
                    err.write(f"warning: {warning}\n")
                shown_warnings = len(event.warnings)
            elif isinstance(event, ToolCallEvent):
                where = f" [{event.server}]" if event.server else ""
                arguments = json.dumps(event.call.arguments, ensure_ascii=False)
                err.write(f"-> {event.call.name}{where} {_preview(arguments)}\n")
            elif isinstance(event, ApprovalEvent):
                approval = event.record
                verdict = "approved" if approval.approved else "denied"
                reason = "" if approval.approved else f": {approval.reason}"
                err.write(
                    f"{verdict}: {approval.tool} [{approval.server}] by "
                    f"{approval.decided_by}{reason}\n"
                )
            elif isinstance(event, ToolResultEvent):
                record = event.record
                mark = "x" if record.is_error else "<-"
                err.write(
                    f"{mark} {record.name} ({record.duration:.2f} s) {_preview(record.content)}\n"
                )
            elif isinstance(event, FinalResultEvent):
                result = event.result
                for warning in result.warnings[shown_warnings:]:
                    err.write(f"warning: {warning}\n")
                usage = result.usage
                denied = sum(not approval.approved for approval in result.approvals)
                err.write(
                    f"[{result.model_name}: {usage.requests} requests, {usage.input_tokens} "
                    f"input + {usage.output_tokens} output tokens, "
                    f"{len(result.tool_calls)} tool calls"
                    f"{f', {denied} denied' if denied else ''}]\n"
                )
            err.flush()


def _approve_from_command_line(request: ApprovalRequest) -> ApprovalDecision:
    """The policy that ``--approve-all`` puts in place of asking."""
    return ApprovalDecision.approve(
        "approved by --approve-all", decided_by="dpt-agent --approve-all"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpt-agent", description="Run a doc-processing-toolkit agent."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run one prompt and stream the answer",
        description="Run one prompt. The answer goes to stdout; the model's thinking, tool "
        "calls, results and warnings go to stderr.",
    )
    run.add_argument("prompt", help="the prompt; '-' reads it from stdin")
    run.add_argument("-c", "--config", help="agent YAML file (see the YAML configuration docs)")
    run.add_argument("-m", "--model", help="model, e.g. anthropic:claude-sonnet-5 or test")
    run.add_argument("--instructions", help="system prompt (replaces the configured one)")
    run.add_argument("--max-turns", type=int, help="most model requests in the run")
    run.add_argument(
        "--approve-all",
        action="store_true",
        help="approve every call the configuration's approval gate would ask about "
        "(policy 'ask'), without asking",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print the answer only")
    run.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)"
    )
    add_batch_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``dpt-agent`` entry point; returns the exit status (0 ok, 1 failed, 2 usage)."""
    options = _parser().parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(options.verbose, logging.DEBUG)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if options.command == "batch":
        return run_batch_command(options)
    prompt = sys.stdin.read() if options.prompt == "-" else options.prompt
    overrides: dict[str, Any] = {}
    if options.model:
        overrides["model"] = options.model
    if options.instructions is not None:
        overrides["instructions"] = options.instructions
    if options.max_turns is not None:
        overrides["max_turns"] = options.max_turns
    try:
        if options.config:
            agent = Agent.from_yaml(options.config, **overrides)
        else:
            agent = Agent(**overrides)
        gate = agent.approval
        if gate is not None and isinstance(gate.policy, TerminalApproval):
            if options.approve_all:
                agent.approval = ApprovalGate(gate.tools, _approve_from_command_line)
            elif not sys.stdin.isatty() and not options.quiet:
                sys.stderr.write(
                    "note: standard input is not a terminal, so calls that need approval "
                    f"({', '.join(gate.tools)}) will be denied; pass --approve-all to "
                    "approve them\n"
                )

        async def go() -> None:
            await stream_run(agent, prompt, out=sys.stdout, err=sys.stderr, quiet=options.quiet)

        anyio.run(go)
    except ToolkitError as exc:
        sys.stderr.write(f"dpt-agent: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("dpt-agent: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
