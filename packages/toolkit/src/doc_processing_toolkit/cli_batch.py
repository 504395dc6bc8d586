"""``dpt-agent batch``: one prompt template over many items, results to a JSONL file.

Progress goes to standard error (a live bar on a terminal, plain lines otherwise), then a
summary. Ctrl-C (or SIGTERM) stops taking new items and lets the running ones finish for
`--grace` seconds before cancelling them; a second Ctrl-C cancels them at once. What
finished is in the output file, and ``--resume`` continues from there.
"""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.abc

from .approval import ApprovalGate
from .batch.control import BatchControl
from .batch.items import open_input
from .batch.output import READER
from .batch.progress import make_progress, rich_available
from .batch.results import BatchSummary
from .batch.runner import make_engine
from .batch.worker import RetryPolicy
from .cli_approval import TerminalApproval
from .errors import ToolkitError

if TYPE_CHECKING:
    from .agent import Agent

__all__ = [
    "add_batch_parser",
    "add_skills_scope_flags",
    "positive_int",
    "run_batch_command",
    "scope_overrides",
    "watch_interrupts",
]

#: Exit statuses.
EXIT_OK, EXIT_ERROR, EXIT_ITEMS_FAILED, EXIT_INTERRUPTED = 0, 1, 3, 130


def add_skills_scope_flags(parser: argparse.ArgumentParser) -> None:
    """``--skills-include`` and ``--skills-exclude`` (each may be repeated), which replace
    the configuration's ``skills_include`` / ``skills_exclude``."""
    parser.add_argument(
        "--skills-include",
        action="append",
        metavar="PATTERN",
        help="offer only the skills whose name matches this glob (repeat for more "
        "patterns; replaces the configured skills_include)",
    )
    parser.add_argument(
        "--skills-exclude",
        action="append",
        metavar="PATTERN",
        help="never offer the skills whose name matches this glob (repeat for more "
        "patterns; replaces the configured skills_exclude)",
    )


def scope_overrides(options: argparse.Namespace) -> dict[str, Any]:
    """The Agent keywords that ``--skills-include`` / ``--skills-exclude`` set."""
    found: dict[str, Any] = {}
    for key in ("skills_include", "skills_exclude"):
        patterns = getattr(options, key, None)
        if patterns is not None:
            found[key] = list(patterns)
    return found


def add_batch_parser(commands: Any) -> None:
    """Add the ``batch`` subcommand to `commands` (an argparse subparsers object)."""
    batch = commands.add_parser(
        "batch",
        help="run a prompt over many documents or records, results to a JSONL file",
        description="Run a prompt template over every item of --input and write one JSON "
        "line per item to --output. Progress and a summary go to stderr.",
    )
    batch.add_argument("-c", "--config", help="agent YAML file (see the YAML configuration docs)")
    batch.add_argument("-m", "--model", help="model, replacing the configured one")
    batch.add_argument(
        "-p",
        "--prompt",
        required=True,
        help="prompt template: {path}, {name}, {stem} of a document, or any field of a "
        "JSONL item, e.g. 'Check the totals of {path}'",
    )
    batch.add_argument(
        "-i",
        "--input",
        required=True,
        help="a glob of documents (quote it: 'invoices/**/*.json') or a .jsonl file of "
        "items (one JSON object of fields, or a JSON string path, per line)",
    )
    batch.add_argument("-o", "--output", required=True, help="the JSONL results file")
    batch.add_argument(
        "-n", "--concurrency", type=int, default=4, help="items running at once (default 4)"
    )
    batch.add_argument(
        "--resume",
        action="store_true",
        help="keep the items --output holds as ok and run the others (after a crash or Ctrl-C)",
    )
    batch.add_argument(
        "--force",
        action="store_true",
        help="with --resume: go on even though --output holds lines that are not results "
        "(they are dropped)",
    )
    batch.add_argument(
        "--engine", choices=("local", "ray"), default="local", help="where items run"
    )
    batch.add_argument(
        "--ray-address", help="Ray cluster to join with --engine ray (default: start one here)"
    )
    batch.add_argument(
        "--max-attempts",
        type=int,
        default=RetryPolicy().max_attempts,
        help="runs of an item that keeps hitting rate limits or overloads (default %(default)s)",
    )
    batch.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds running items may take to finish after Ctrl-C (default %(default)s)",
    )
    batch.add_argument(
        "--approve-all",
        action="store_true",
        help="approve every call the approval gate would ask about (a batch cannot ask; "
        "without this such calls are denied)",
    )
    add_skills_scope_flags(batch)
    batch.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)"
    )


def _build_agent(options: argparse.Namespace, err: TextIO) -> Agent:
    from .agent import Agent  # here, so that parsing the command line loads no MCP SDK

    overrides: dict[str, Any] = scope_overrides(options)
    if options.model:
        overrides["model"] = options.model
    if not options.config:
        return Agent(**overrides)
    agent = Agent.from_yaml(options.config, **overrides)
    gate = agent.approval
    if gate is not None and isinstance(gate.policy, TerminalApproval):
        # Nobody can answer questions from many runs at once: decide for all of them.
        policy = "approve" if options.approve_all else "deny"
        if not options.approve_all:
            err.write(
                "note: a batch cannot ask for approval, so calls to "
                f"{', '.join(gate.tools)} will be denied; pass --approve-all to approve them\n"
            )
        agent = Agent.from_yaml(
            options.config, **overrides, approval=ApprovalGate(gate.tools, policy)
        )
    return agent


def _announce(options: argparse.Namespace, total: int, err: TextIO) -> None:
    """The first line, written before anything starts: what is about to run, and where
    its results go (servers and the first items can take a while to show progress)."""
    resume = ", resuming" if options.resume else ""
    err.write(
        f"dpt-agent batch: {total} item{'' if total == 1 else 's'}, engine {options.engine}, "
        f"concurrency {options.concurrency}{resume}; results to {options.output}\n"
    )
    if err.isatty() and not rich_available():
        err.write(
            "dpt-agent batch: a progress line every 10 s; install the rich extra "
            "(pip install 'doc-processing-toolkit[rich]') for a live progress bar\n"
        )
    err.flush()


def run_batch_command(options: argparse.Namespace, *, err: TextIO | None = None) -> int:
    """Run ``dpt-agent batch`` with parsed `options`; returns the exit status: 0 every
    item ok, 3 some items failed (the batch went on), 1 the batch could not run, 130
    interrupted."""
    err = err or sys.stderr
    try:
        if options.max_attempts < 1:
            raise ToolkitError("--max-attempts must be at least 1.")
        agent = _build_agent(options, err)
        source = open_input(options.input)
        engine = make_engine(
            options.engine,
            concurrency=options.concurrency,
            retry=RetryPolicy(max_attempts=options.max_attempts),
            ray_address=options.ray_address,
        )
        total = source.count()
    except ToolkitError as exc:
        err.write(f"dpt-agent: error: {exc}\n")
        return EXIT_ERROR
    _announce(options, total, err)
    summary = BatchSummary()
    control = BatchControl()

    async def go() -> None:
        READER.set("command line")  # messages about --output name the options
        progress = make_progress(err, total)
        failure: ToolkitError | None = None
        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(
                    watch_interrupts, task_group, control, options.grace, err, "items"
                )
                try:
                    results = agent.run_batch(
                        source,
                        options.prompt,
                        engine=engine,
                        output=options.output,
                        resume=options.resume,
                        force=options.force,
                        control=control,
                    )
                    async with aclosing(results) as stream:
                        async for result in stream:
                            summary.add(result)
                            progress.advance(result)
                except ToolkitError as exc:
                    # Raised after the task group, so that it is not wrapped in a group.
                    failure = exc
                finally:
                    task_group.cancel_scope.cancel()
        finally:
            progress.close()
            await agent.aclose()
        if failure is not None:
            raise failure

    try:
        anyio.run(go)
    except ToolkitError as exc:
        err.write(f"dpt-agent: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.write("dpt-agent: interrupted\n")
        return EXIT_INTERRUPTED
    finally:
        summary.finish()
        if summary.total:
            err.write(summary.format() + "\n")
    if control.stopping:
        err.write(
            f"dpt-agent: interrupted: {summary.ok + summary.failed} items finished and are "
            f"in {options.output}; run the same command with --resume to do the rest\n"
        )
        return EXIT_INTERRUPTED
    return EXIT_ITEMS_FAILED if summary.failed else EXIT_OK


async def watch_interrupts(
    task_group: anyio.abc.TaskGroup, control: BatchControl, grace: float, err: TextIO, noun: str
) -> None:
    """Turn Ctrl-C (or SIGTERM) into the batch's stop: the first starts no new `noun`
    ("items", "runs") and gives the running ones `grace` seconds to finish; the next
    cancels them at once. Runs until `task_group` is cancelled."""

    async def cancel_after_grace() -> None:
        await anyio.sleep(grace)
        control.cancel()

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _signal in signals:
            if control.stopping:
                err.write(f"\ndpt-agent: cancelling the running {noun} now\n")
                control.cancel()
                continue
            err.write(
                f"\ndpt-agent: interrupted: no new {noun}; the running ones get "
                f"{grace:g} s to finish (Ctrl-C again to cancel them now)\n"
            )
            control.stop()
            task_group.start_soon(cancel_after_grace)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (got {value})")
    return value
