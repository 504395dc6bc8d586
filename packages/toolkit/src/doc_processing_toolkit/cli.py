"""``dpt-agent``: run an agent from the command line.

``dpt-agent run [--config agent.yaml] [--model M] "prompt"`` streams the answer to stdout
and reports tool calls, approvals, tool results and warnings on stderr as the run goes
(with a waiting line while the model thinks, on a terminal only). ``--json`` prints the
whole `RunResult` as one JSON document instead of the answer; ``--dry-run`` connects the
servers and prints the tools and the system prompt without calling the model.
``dpt-agent batch --prompt T --input GLOB --output results.jsonl`` runs a prompt template
over many items (see `doc_processing_toolkit.cli_batch`).

Calls that the configuration's approval gate sends to the ``ask`` policy are asked about
on the terminal; when standard input is not a terminal they are denied, unless
``--approve-all`` approves them all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from ._process import protect_process
from ._version import __version__
from .approval import ApprovalDecision, ApprovalGate, ApprovalRequest
from .cli_approval import TerminalApproval
from .cli_batch import (
    add_batch_parser,
    add_skills_scope_flags,
    positive_int,
    run_batch_command,
    scope_overrides,
)
from .cli_eval import add_eval_parser, run_eval_command
from .errors import ConfigError, ToolkitError
from .messages import ToolSpec

if TYPE_CHECKING:
    from .agent import Agent
    from .config import AgentConfig
    from .models import TestModel
    from .result import RunResult
    from .skills import SkillsOutcome

__all__ = ["DryRun", "dry_run", "main", "run_result_json", "stream_run"]

_PREVIEW = 300
_SPINNER_FRAMES = "|/-\\"
_SPINNER_PERIOD = 0.1


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 3] + "..."


def _json_value(value: Any) -> Any:
    """What `json.dumps` cannot write by itself: sets (as sorted lists)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def run_result_json(result: RunResult) -> dict[str, Any]:
    """`result` as plain JSON data: every field of `RunResult` (the messages with their
    parts, tool calls, approvals, usage plus ``total_tokens``, warnings, skills, the
    system prompt and the ``provider:model`` that answered)."""
    data: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(result), default=_json_value))
    data["usage"]["total_tokens"] = result.usage.total_tokens
    return data


def _skills_line(skills: SkillsOutcome) -> str | None:
    """The ``skills:`` progress line (`SkillsOutcome.progress_line`: under 300
    characters), or None when there is nothing to say."""
    return skills.progress_line()


class _Waiting:
    """The waiting line: a spinner and the seconds waited for the model, redrawn in place
    on a terminal while no answer has arrived, and erased before anything else is
    written."""

    def __init__(self, err: TextIO, model: str) -> None:
        self._err = err
        self._model = model
        self._since: float | None = None
        self._shown = False
        self._wake = anyio.Event()

    def start(self) -> None:
        """The model was asked: show the line from now on."""
        self._since = time.monotonic()
        self._wake.set()

    def stop(self) -> None:
        """Something arrived: erase the line, so the caller writes on a clean line."""
        self._since = None
        if self._shown:
            self._err.write("\r\x1b[K")
            self._err.flush()
            self._shown = False

    async def animate(self) -> None:
        """Redraw the line every `_SPINNER_PERIOD` seconds while waiting (a task)."""
        frame = 0
        while True:
            if self._since is None:
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            waited = time.monotonic() - self._since
            spinner = _SPINNER_FRAMES[frame % len(_SPINNER_FRAMES)]
            self._err.write(f"\r\x1b[K{spinner} waiting for {self._model} ({waited:.1f} s)")
            self._err.flush()
            self._shown = True
            frame += 1
            await anyio.sleep(_SPINNER_PERIOD)


def _is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal that can redraw a line."""
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):
        return False


async def stream_run(
    agent: Agent,
    prompt: str,
    *,
    out: TextIO,
    err: TextIO,
    quiet: bool = False,
    answer_to_out: bool = True,
) -> RunResult:
    """Run `agent` on `prompt`, writing the answer to `out` as it arrives (unless not
    `answer_to_out`) and the progress (the model's thinking, tool calls, results,
    warnings, usage) to `err` unless `quiet`. Returns the run's result.

    While the model has not answered, a waiting line (spinner and seconds) is shown on
    `err` when `err` is a terminal and not `quiet`; it is erased before anything else is
    written, so what stays on the screen is the same as without a terminal.

    Raises:
        ToolkitError: the run failed.
    """
    async with agent:
        if quiet or not _is_terminal(err):
            return await _show_events(
                agent, prompt, out=out if answer_to_out else None, err=err, quiet=quiet
            )
        waiting = _Waiting(err, agent.model.name)
        failure: Exception | None = None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(waiting.animate)
            try:
                result = await _show_events(
                    agent,
                    prompt,
                    out=out if answer_to_out else None,
                    err=err,
                    quiet=quiet,
                    waiting=waiting,
                )
            except Exception as exc:  # raised below as is, not in an exception group
                failure = exc
            finally:
                waiting.stop()
                tasks.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result


async def _show_events(
    agent: Agent,
    prompt: str,
    *,
    out: TextIO | None,
    err: TextIO,
    quiet: bool,
    waiting: _Waiting | None = None,
) -> RunResult:
    """The events of one run, shown as they come (see `stream_run`)."""
    from . import events  # the events' module only when a run shows them

    at_line_start = True
    thinking = False  # whether `err` is in the middle of a "thinking:" line
    shown_warnings = 0
    async for event in agent.run_stream(prompt):
        if waiting is not None:
            waiting.stop()
            if isinstance(event, events.RunStartEvent | events.ToolResultEvent):
                waiting.start()  # the model is asked next
        if isinstance(event, events.ThinkingDeltaEvent):
            if not quiet:
                err.write(event.text if thinking else f"thinking: {event.text}")
                err.flush()
                thinking = True
            continue
        if thinking:
            err.write("\n")
            err.flush()
            thinking = False
        if isinstance(event, events.TextDeltaEvent):
            if out is not None:
                out.write(event.text)
                out.flush()
                at_line_start = event.text.endswith("\n")
            continue
        if not at_line_start and out is not None:
            out.write("\n")
            out.flush()
            at_line_start = True
        if isinstance(event, events.FinalResultEvent):
            if not quiet:
                _write_summary(event.result, shown_warnings, err)
            return event.result
        if quiet:
            continue
        if isinstance(event, events.RunStartEvent):
            line = _skills_line(event.skills)
            if line is not None:
                err.write(line + "\n")
            for warning in event.warnings:
                err.write(f"warning: {warning}\n")
            shown_warnings = len(event.warnings)
        elif isinstance(event, events.ToolCallEvent):
            where = f" [{event.server}]" if event.server else ""
            arguments = json.dumps(event.call.arguments, ensure_ascii=False)
            err.write(f"-> {event.call.name}{where} {_preview(arguments)}\n")
        elif isinstance(event, events.ApprovalEvent):
            approval = event.record
            verdict = "approved" if approval.approved else "denied"
            reason = "" if approval.approved else f": {approval.reason}"
            err.write(
                f"{verdict}: {approval.tool} [{approval.server}] by {approval.decided_by}{reason}\n"
            )
        elif isinstance(event, events.ToolResultEvent):
            record = event.record
            mark = "x" if record.is_error else "<-"
            err.write(
                f"{mark} {record.name} ({record.duration:.2f} s) {_preview(record.content)}\n"
            )
        err.flush()
    raise ToolkitError("the run ended without a final result.")  # pragma: no cover


def _write_summary(result: RunResult, shown_warnings: int, err: TextIO) -> None:
    """The warnings not shown yet, then ``[provider:model: requests, tokens, calls]``."""
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


@dataclasses.dataclass(frozen=True, slots=True)
class DryRun:
    """What a model would receive on the first request of a run.

    Attributes:
        model: the configured model (not contacted).
        system_prompt: the system prompt, with the injected skill catalog.
        tools: the tools offered, as the model sees them.
        skills: what skills auto-injection did.
        warnings: what went wrong without failing (an optional server missing, ...).
    """

    model: str
    system_prompt: str | None
    tools: list[ToolSpec]
    skills: SkillsOutcome
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data, the tools with their input schemas."""
        data: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self), default=_json_value))
        return data


def _dry_run_model() -> TestModel:
    """The stand-in model of a dry run: it answers at once and keeps the request."""
    from .models import TestModel
    from .models.test import reply

    return TestModel(lambda request: reply(""), name="dry-run")


async def dry_run(
    agent: Agent,
    stand_in: TestModel,
    model: str,
    model_options: dict[str, Any],
    prompt: str = "",
) -> DryRun:
    """Connect `agent`'s servers and set up one run of `prompt` exactly as `Agent.run`
    does (the skills shown are those a run of `prompt` gets), without
    contacting `model`: `agent` runs on `stand_in` (see `_dry_run_model`), which answers
    at once, and its first request is what `model` would have received. `model` is
    set up with `model_options` (no request is sent); what stops it, a missing key for
    example, becomes a warning.

    Raises:
        ToolkitError: a required server could not connect, or tool names clash.
    """
    from .models import resolve_model

    warnings: list[str] = []
    try:
        configured = resolve_model(model, **model_options)
    except ToolkitError as exc:
        warnings.append(f"the model could not be set up: {exc}")
    else:
        close = getattr(configured, "aclose", None)
        if close is not None:
            await close()
    async with agent:
        result = await agent.run(prompt or "(dry run)")
    request = stand_in.requests[0]
    return DryRun(
        model=model,
        system_prompt=request.system,
        tools=list(request.tools),
        skills=result.skills,
        warnings=[*warnings, *result.warnings],
    )


def _write_dry_run(plan: DryRun, out: TextIO) -> None:
    """The dry run for a person: the model, the skills line, the tools with their
    arguments, then the system prompt as the model would read it."""
    out.write(f"model: {plan.model} (not contacted: dry run)\n")
    line = _skills_line(plan.skills)
    if line is not None:
        out.write(line + "\n")
    for warning in plan.warnings:
        out.write(f"warning: {warning}\n")
    out.write(f"\ntools ({len(plan.tools)}):\n")
    for tool in plan.tools:
        schema = tool.input_schema
        properties = schema.get("properties")
        required = set(schema.get("required") or ())
        arguments = (
            ", ".join(f"{name}{'' if name in required else '?'}" for name in properties)
            if isinstance(properties, dict)
            else ""
        )
        out.write(f"  {tool.name}({arguments})\n")
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        if summary:
            out.write(f"      {_preview(summary)}\n")
    out.write("\nsystem prompt:\n")
    out.write((plan.system_prompt or "(none)") + "\n")
    out.flush()


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
    run.add_argument(
        "prompt",
        nargs="?",
        help="the prompt; '-' reads it from stdin (with --dry-run: the prompt whose "
        "system prompt is shown, optional)",
    )
    run.add_argument("-c", "--config", help="agent YAML file (see the YAML configuration docs)")
    run.add_argument("-m", "--model", help="model, e.g. anthropic:claude-sonnet-5 or test")
    run.add_argument(
        "--base-url",
        help="the provider's address, e.g. http://localhost:11434/v1 for an "
        "OpenAI-compatible server (sets model_options.base_url)",
    )
    run.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the API key, in place of the provider's "
        "own (sets model_options.api_key_env)",
    )
    run.add_argument("--instructions", help="system prompt (replaces the configured one)")
    run.add_argument(
        "--max-turns", type=positive_int, help="most model requests in the run (1 or more)"
    )
    run.add_argument(
        "--approve-all",
        action="store_true",
        help="approve every call the configuration's approval gate would ask about "
        "(policy 'ask'), without asking",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print the whole run result as one JSON document on stdout (instead of the "
        "answer); with --dry-run, the tools and the system prompt",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="connect the servers and print the tools and the system prompt (with the "
        "skills a run of PROMPT is shown); call no model",
    )
    add_skills_scope_flags(run)
    run.add_argument("-q", "--quiet", action="store_true", help="print the answer only")
    run.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)"
    )
    add_batch_parser(commands)
    add_eval_parser(commands)
    return parser


def _model_options(options: argparse.Namespace, config: AgentConfig | None) -> dict[str, Any]:
    """The configuration's model_options with --base-url and --api-key-env applied."""
    model_options = dict(config.model_options) if config is not None else {}
    if options.base_url is not None:
        model_options["base_url"] = options.base_url
    if options.api_key_env is not None:
        model_options["api_key_env"] = options.api_key_env
        model_options.pop("api_key", None)  # the variable named here replaces the file's key
    return model_options


def _build_agent(
    options: argparse.Namespace, stand_in: TestModel | None
) -> tuple[Agent, str, dict[str, Any]]:
    """The agent the command line describes, with its model's name and options as
    configured (`stand_in` in place of that model for a dry run).

    Raises:
        ConfigError: the configuration is invalid or names no model.
    """
    from .agent import Agent
    from .config import load_yaml

    config = load_yaml(options.config) if options.config else None
    model = options.model or (config.model if config is not None else None)
    if not model:
        raise ConfigError(
            "no model: give one with --model (for example --model test for the offline "
            "test model, or --model anthropic:claude-sonnet-5) or with the model: key of "
            "the configuration file."
        )
    model_options = _model_options(options, config)
    overrides: dict[str, Any] = {
        "model": model,
        "model_options": model_options,
        **scope_overrides(options),
    }
    if stand_in is not None:
        overrides.update(model=stand_in, model_options={})
    if options.instructions is not None:
        overrides["instructions"] = options.instructions
    if options.max_turns is not None:
        overrides["max_turns"] = options.max_turns
    if options.config:
        return Agent.from_yaml(options.config, **overrides), model, model_options
    return Agent(**overrides), model, model_options


def _run_command(options: argparse.Namespace) -> int:
    prompt = _read_prompt(options.prompt) if options.prompt is not None else ""
    stand_in = _dry_run_model() if options.dry_run else None
    agent, model, model_options = _build_agent(options, stand_in)
    gate = agent.approval
    if gate is not None and isinstance(gate.policy, TerminalApproval):
        if options.approve_all:
            agent.approval = ApprovalGate(gate.tools, _approve_from_command_line)
        elif not sys.stdin.isatty() and not options.quiet and not options.dry_run:
            sys.stderr.write(
                "note: standard input is not a terminal, so calls that need approval "
                f"({', '.join(gate.tools)}) will be denied; pass --approve-all to "
                "approve them\n"
            )
    if stand_in is not None:
        plan = anyio.run(dry_run, agent, stand_in, model, model_options, prompt)
        if options.json:
            _write_json(plan.to_json())
        else:
            _write_dry_run(plan, sys.stdout)
        return 0

    async def go() -> RunResult:
        return await stream_run(
            agent,
            prompt,
            out=sys.stdout,
            err=sys.stderr,
            quiet=options.quiet,
            answer_to_out=not options.json,
        )

    result = anyio.run(go)
    if options.json:
        _write_json(run_result_json(result))
    return 0


def _read_prompt(argument: str) -> str:
    return sys.stdin.read() if argument == "-" else argument


def _write_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """The ``dpt-agent`` entry point; returns the exit status (0 ok, 1 failed, 2 usage)."""
    protect_process()  # before any key is read: see `_process`
    parser = _parser()
    options = parser.parse_args(argv)
    if options.command == "run" and options.prompt is None and not options.dry_run:
        parser.error("run needs a prompt ('-' reads it from stdin), unless --dry-run is given")
    level = {0: logging.WARNING, 1: logging.INFO}.get(options.verbose, logging.DEBUG)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if options.command == "batch":
        return run_batch_command(options)
    if options.command == "eval":
        return run_eval_command(options)
    try:
        return _run_command(options)
    except ToolkitError as exc:
        sys.stderr.write(f"dpt-agent: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("dpt-agent: interrupted\n")
        return 130
    except BrokenPipeError:
        # Whoever read stdout stopped (`| head`): end quietly, and let nothing be flushed
        # into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
