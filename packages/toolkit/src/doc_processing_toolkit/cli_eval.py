"""``dpt-agent eval``: skill trigger evals from the command line, for people and for CI.

The runs go through the batch engine (`evals.evaluate_triggers_async`): progress on
standard error, every run written to a JSONL results file as it finishes, Ctrl-C (or
SIGTERM) stops taking new runs and gives the running ones `--grace` seconds, a second
Ctrl-C cancels them, and ``--resume`` continues from the results file. The summary goes
to standard output, the report to ``--json`` and ``--report`` (HTML).

Exit status: 0 when every query passed, 1 when one did not (or a run failed, or the eval
could not run), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.abc

from .batch.control import BatchControl
from .batch.output import is_result_line
from .batch.progress import Progress, make_progress
from .batch.results import BatchSummary, ItemResult
from .cli_batch import positive_int, watch_interrupts
from .errors import EvalError, ToolkitError

if TYPE_CHECKING:
    from .agent import Agent
    from .evals import EvalSet, TriggerReport

__all__ = ["DEFAULT_RESULTS", "add_eval_parser", "run_eval_command"]

#: Exit statuses.
EXIT_PASSED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130

DEFAULT_RESULTS = "dpt-eval-runs.jsonl"
"""Where the runs go without ``--results``: the file ``--resume`` continues."""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (got {value})")
    return value


def add_eval_parser(commands: Any) -> None:
    """Add the ``eval`` subcommand to `commands` (an argparse subparsers object)."""
    parser = commands.add_parser(
        "eval",
        help="measure whether the model loads each skill for the right requests",
        description="Run every skill's evals/eval_queries.json through the agent and "
        "report, per query and per skill, how often the model loaded the skill. Exit "
        "status 0 when every query passes, 1 otherwise.",
    )
    parser.add_argument(
        "-c", "--config", required=True, help="agent YAML file with the skills server"
    )
    parser.add_argument("-m", "--model", help="model, replacing the configured one")
    parser.add_argument(
        "--skill",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="evaluate these skills (--skill a b, or --skill a --skill b; default: every "
        "skill with an eval file)",
    )
    parser.add_argument("--runs", type=positive_int, default=3, help="runs per query (default 3)")
    parser.add_argument(
        "--threshold",
        type=_fraction,
        default=0.5,
        help="trigger rate a should-trigger query must reach, and a should-not one stay "
        "below (default 0.5)",
    )
    parser.add_argument(
        "--split",
        type=_fraction,
        help="hold out this share of each label as the validation set, e.g. 0.4",
    )
    parser.add_argument("--seed", type=int, default=0, help="the split's seed (default 0)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local", help="where runs go")
    parser.add_argument(
        "--ray-address", help="Ray cluster to join with --engine ray (default: start one here)"
    )
    parser.add_argument(
        "-n", "--concurrency", type=positive_int, default=4, help="runs at once (default 4)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the report as JSON to OUT")
    parser.add_argument(
        "--report", metavar="OUT.html", help="write the report as a self-contained HTML page"
    )
    parser.add_argument(
        "--results",
        metavar="FILE",
        default=DEFAULT_RESULTS,
        help=f"JSONL file of every run, what --resume continues (default {DEFAULT_RESULTS})",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs --results holds and run only the others",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="ask no model: check whether each query brings the skill into the catalog "
        "block at the agent's budget, and its search rank",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds running runs may take to finish after Ctrl-C (default %(default)s)",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)"
    )


def _build_agent(options: argparse.Namespace) -> Agent:
    from .agent import Agent  # here, so that parsing the command line loads no MCP SDK

    overrides: dict[str, Any] = {}
    if options.model:
        overrides["model"] = options.model
    return Agent.from_yaml(options.config, **overrides)


def _only_eval_runs(path: Path) -> bool:
    """Whether `path` holds nothing but lines of an eval's results (safe to start over)."""
    with path.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                return False
            item = record.get("item") if is_result_line(record) else None
            if not isinstance(item, dict) or not {"skill", "query", "run"} <= set(item):
                return False
    return True


def _start_over(path: str, err: TextIO) -> None:
    """Without --resume, the runs of an earlier eval in `path` are replaced; a file that
    holds anything else is left for the results file to refuse."""
    target = Path(path)
    if target.is_file() and target.stat().st_size and _only_eval_runs(target):
        err.write(f"dpt-agent eval: starting over: the earlier runs in {path} are replaced\n")
        target.unlink()


def _summary(report: TriggerReport) -> str:
    lines = []
    for skill in report.skills.values():
        sets = ""
        if skill.train_pass_rate is not None or skill.validation_pass_rate is not None:
            sets = (
                f", train {_pct(skill.train_pass_rate)}, "
                f"validation {_pct(skill.validation_pass_rate)}"
            )
        cost = (
            f", {skill.requests} requests, {skill.tokens} tokens" if report.mode == "model" else ""
        )
        lines.append(
            f"{skill.name}: {_pct(skill.pass_rate)} of {len(skill.queries)} queries pass "
            f"(precision {_pct(skill.precision)}, recall {_pct(skill.recall)}{sets}{cost})"
        )
        for query in skill.failing:
            expected = "should trigger" if query.should_trigger else "should not trigger"
            instead = ", ".join(f"{n} x{c}" for n, c in query.loaded_instead.items())
            lines.append(
                f"  FAIL [{expected}] {query.triggers}/{query.runs}: {query.query}"
                + (f" (loaded instead: {instead})" if instead else "")
                + (f" (error: {query.error})" if query.error else "")
            )
    for name, why in report.skipped.items():
        lines.append(f"{name}: not evaluated ({why})")
    verdict = "every query passed" if report.passed else "some queries failed"
    lines.append(f"eval: {_pct(report.pass_rate)} of {len(report.queries)} queries; {verdict}")
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _write_outputs(report: TriggerReport, options: argparse.Namespace) -> None:
    from .evals import render_html

    if options.json:
        Path(options.json).write_text(
            json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    if options.report:
        Path(options.report).write_text(render_html(report), encoding="utf-8")


def run_eval_command(
    options: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``dpt-agent eval`` with parsed `options`; returns the exit status."""
    from .evals import evaluate_triggers_async

    out, err = out or sys.stdout, err or sys.stderr
    try:
        agent = _build_agent(options)
        if not options.offline and not options.resume:
            _start_over(options.results, err)
    except (ToolkitError, OSError) as exc:
        err.write(f"dpt-agent: error: {exc}\n")
        return EXIT_FAILED
    control = BatchControl()
    summary = BatchSummary()
    progress: list[Progress] = []

    def on_start(eval_set: EvalSet) -> None:
        total = eval_set.count * (1 if options.offline else options.runs)
        if options.offline:
            err.write(
                f"dpt-agent eval: {len(eval_set.queries)} skills, {eval_set.count} queries, "
                "offline (no model)\n"
            )
            return
        resume = ", resuming" if options.resume else ""
        err.write(
            f"dpt-agent eval: {len(eval_set.queries)} skills, {eval_set.count} queries x "
            f"{options.runs} runs = {total} runs, engine {options.engine}, concurrency "
            f"{options.concurrency}{resume}; runs to {options.results}\n"
        )
        err.flush()
        progress.append(make_progress(err, total))

    def on_result(result: ItemResult) -> None:
        summary.add(result)
        if progress:
            progress[0].advance(result)

    async def go() -> TriggerReport | None:
        from .batch.runner import make_engine

        engine = make_engine(
            options.engine,
            concurrency=options.concurrency,
            retry=None,
            ray_address=options.ray_address,
        )
        failure: ToolkitError | None = None
        report: TriggerReport | None = None
        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(
                    watch_interrupts, task_group, control, options.grace, err, "runs"
                )
                try:
                    report = await evaluate_triggers_async(
                        agent,
                        options.skill,
                        options.runs,
                        options.threshold,
                        options.split,
                        options.seed,
                        offline=options.offline,
                        engine=engine,
                        results=None if options.offline else options.results,
                        resume=options.resume,
                        control=control,
                        on_result=on_result,
                        on_start=on_start,
                    )
                except ToolkitError as exc:
                    failure = exc  # raised after the task group, so not in a group
                finally:
                    task_group.cancel_scope.cancel()
        finally:
            if progress:
                progress[0].close()
            await agent.aclose()
        if failure is not None:
            raise failure
        return report

    try:
        report = anyio.run(go)
    except ToolkitError as exc:
        err.write(f"dpt-agent: error: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        err.write("dpt-agent: interrupted\n")
        return EXIT_INTERRUPTED
    if control.stopping:
        err.write(
            f"dpt-agent: interrupted: {summary.ok + summary.failed} runs finished and are in "
            f"{options.results}; run the same command with --resume to do the rest\n"
        )
        return EXIT_INTERRUPTED
    if report is None:  # pragma: no cover - go() returns a report or raises
        raise EvalError("the eval ended without a report")
    try:
        _write_outputs(report, options)
    except OSError as exc:
        err.write(f"dpt-agent: error: could not write the report: {exc}\n")
        return EXIT_FAILED
    out.write(_summary(report))
    out.flush()
    if report.errors:
        err.write(
            f"dpt-agent eval: {report.errors} runs failed (see {options.results}); "
            "run again with --resume to retry them\n"
        )
    return EXIT_PASSED if report.passed and not report.errors else EXIT_FAILED
