"""`evaluate_triggers`: read every skill's eval queries through the skills server, run
each query `runs` times on the batch engine (or check it offline), and build the report.

Data flow: `Agent.preview` (the catalog; each eval file read with the tool a model would
use) -> `EvalSet` (the queries by skill, split into train and validation) -> batch items,
one per query and run, with a stable id -> `TriggerProbe` runs on an engine (local or
Ray; the results file gives ``resume``) -> `RunOutcome`s -> `report.build`.

Offline, no model is asked: for each query `Agent.preview` sets the run up as the model
would get it, which says whether the skill is in the catalog block chosen for the query at
the agent's budget, and ``search_skills`` (or the toolkit's own index) ranks it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..batch.control import BatchControl, Engine
from ..batch.items import BatchItem
from ..batch.results import ItemResult
from ..batch.runner import make_engine, run_batch
from ..errors import EvalError
from ..skills.ranking import SkillIndex
from .probe import TriggerProbe, Verdict
from .queries import EvalQuery, assign_sets, parse_eval_queries, read_eval_queries
from .report import OfflineCheck, RunOutcome, TriggerReport, build

if TYPE_CHECKING:
    from ..agent import Agent
    from ..preview import RunPreview

__all__ = [
    "EvalSet",
    "eval_items",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "load_eval_set",
    "outcomes_from",
]

logger = logging.getLogger(__name__)

#: How many skills ``search_skills`` is asked for when an offline eval ranks a query.
SEARCH_LIMIT = 50


@dataclass(slots=True)
class EvalSet:
    """The queries to evaluate, by skill in the catalog's order.

    Attributes:
        queries: each skill's queries (with their set when split).
        skipped: the skills without an eval file, with why.
    """

    queries: dict[str, list[EvalQuery]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many queries in all."""
        return sum(len(q) for q in self.queries.values())


async def load_eval_set(
    agent: Agent,
    skills: Sequence[str] | None = None,
    *,
    split: float | None = None,
    seed: int = 0,
) -> EvalSet:
    """Every skill's eval queries as the agent's skills server serves them; `skills`
    names the skills to evaluate (None: every skill that has an eval file).

    Raises:
        EvalError: no skills server; a named skill is unknown or has no eval file; an
            eval file is malformed; no skill has an eval file; `split` is out of range.
    """
    from ..skills import SkillEntry

    assign_sets([], split, seed)  # checks split before anything connects
    preview = await agent.preview()
    known = {entry.name: entry for entry in preview.skills.skills}
    if preview.skills.server is None:
        raise EvalError(
            "the agent has no skills server (a server with list_skills and load_skill, or "
            "one serving the MCP Skills extension), or auto_inject_skills is off: there "
            "is nothing to evaluate."
        )
    wanted: list[SkillEntry] = []
    for name in skills or known:
        entry = known.get(name)
        if entry is None:
            if preview.skills.source is not None and preview.skills.source.traits.by_uri:
                raise EvalError(
                    f"skill {name!r} is not in the catalog of server "
                    f"{preview.skills.server!r}; known: {', '.join(known) or 'none'}."
                )
            entry = SkillEntry(name, "")  # a long catalog may not list it; ask anyway
        wanted.append(entry)
    found = EvalSet()
    for entry in wanted:
        text = await read_eval_queries(preview, entry)
        if text is None:
            if skills:
                raise EvalError(
                    f"skill {entry.name!r} has no evals/eval_queries.json on server "
                    f"{preview.skills.server!r}; add one (a JSON list of "
                    '{"query": ..., "should_trigger": ...}) to its folder.'
                )
            found.skipped[entry.name] = "no evals/eval_queries.json"
            continue
        found.queries[entry.name] = assign_sets(parse_eval_queries(entry.name, text), split, seed)
    if not found.queries:
        raise EvalError(
            f"no skill of server {preview.skills.server!r} has an evals/eval_queries.json; "
            "see the Evaluating skills page for the format."
        )
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def eval_items(eval_set: EvalSet, runs: int) -> list[BatchItem]:
    """One batch item per query and run; its id (skill, a digest of the query, the run
    number) stays the same while the query does, which is what ``resume`` matches."""
    items = []
    for name, queries in eval_set.queries.items():
        for query in queries:
            for run in range(1, runs + 1):
                items.append(
                    BatchItem.of(
                        {
                            "id": f"{name}/{_digest(query.query)}/{run}",
                            "skill": name,
                            "query": query.query,
                            "should_trigger": query.should_trigger,
                            "run": run,
                        }
                    )
                )
    return items


def outcomes_from(
    eval_set: EvalSet, results: Iterable[ItemResult]
) -> dict[tuple[str, int], list[RunOutcome]]:
    """The run outcomes of `results` by skill and query index; results of queries the
    set no longer holds, and skipped (interrupted) runs, are left out."""
    index = {
        (name, query.query): query.index
        for name, queries in eval_set.queries.items()
        for query in queries
    }
    outcomes: dict[tuple[str, int], list[RunOutcome]] = {}
    for result in results:
        if result.status == "skipped" or not isinstance(result.item, dict):
            continue
        key = (str(result.item.get("skill")), str(result.item.get("query")))
        if key not in index:
            continue
        if result.status == "ok":
            try:
                verdict = Verdict.from_json(result.answer or "")
            except ValueError as exc:
                outcome = RunOutcome(None, result.usage, f"unreadable verdict: {exc}")
            else:
                outcome = RunOutcome(verdict.loaded, result.usage, None, result.duration)
        else:
            outcome = RunOutcome(None, result.usage, result.error or "failed", result.duration)
        outcomes.setdefault((key[0], index[key]), []).append(outcome)
    return outcomes


def _results_file(path: str | os.PathLike[str]) -> list[ItemResult]:
    """Every result line of an eval's results file (the last line of an id wins)."""
    found: dict[str, ItemResult] = {}
    with Path(path).open("rb") as lines:
        for line in lines:
            try:
                result = ItemResult.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            found[result.id] = result
    return list(found.values())


def _check(runs: int, threshold: float) -> None:
    if runs < 1:
        raise EvalError(f"runs must be at least 1, got {runs}.")
    if not 0 <= threshold <= 1:
        raise EvalError(f"threshold must be between 0 and 1, got {threshold}.")


async def _rank(preview: RunPreview, skill: str, query: str) -> tuple[int | None, str, str | None]:
    """The skill's 1-based rank for `query`: by the server's ``search_skills`` when the
    model is offered it, else by the toolkit's own index over the catalog; and the top."""
    outcome = preview.skills
    search = (
        preview.visible_name(outcome.server, "search_skills")
        if outcome.server is not None
        and outcome.source is not None
        and outcome.source.traits.searches
        else None
    )
    names: list[str] | None = None
    source = "index"
    if search is not None:
        record = await preview.call_tool(search, {"query": query, "limit": SEARCH_LIMIT})
        try:
            payload = json.loads(record.content) if not record.is_error else None
            found = payload.get("skills") if isinstance(payload, dict) else None
            if isinstance(found, list):
                names = [str(s.get("name")) for s in found if isinstance(s, dict)]
                source = "search_skills"
        except ValueError:
            names = None
        if names is None:
            logger.warning("evals: search_skills failed for %r; ranking with the index", query)
    if names is None:
        entries = outcome.skills
        names = [entries[i].name for i in SkillIndex(entries).rank(query)]
    rank = names.index(skill) + 1 if skill in names else None
    return rank, source, names[0] if names else None


def _offline_pick(skill: str, check: OfflineCheck) -> str | None:
    """The skill an offline check counts as loaded: the skill itself when it would
    trigger, else the skill ranked first for the query (if another)."""
    if check.triggered:
        return skill
    return check.top if check.top != skill else None


async def _offline(agent: Agent, eval_set: EvalSet) -> dict[tuple[str, int], OfflineCheck]:
    checks: dict[tuple[str, int], OfflineCheck] = {}
    for name, queries in eval_set.queries.items():
        for query in queries:
            preview = await agent.preview(query.query)
            rank, source, top = await _rank(preview, name, query.query)
            checks[(name, query.index)] = OfflineCheck(
                in_block=name in preview.shown_skills(), rank=rank, rank_source=source, top=top
            )
    return checks


async def evaluate_triggers_async(
    agent: Agent,
    skills: Sequence[str] | None = None,
    runs: int = 3,
    threshold: float = 0.5,
    split: float | None = None,
    seed: int = 0,
    *,
    offline: bool = False,
    engine: Literal["local", "ray"] | Engine = "local",
    concurrency: int = 4,
    results: str | os.PathLike[str] | None = None,
    resume: bool = False,
    control: BatchControl | None = None,
    on_result: Callable[[ItemResult], None] | None = None,
    on_start: Callable[[EvalSet], None] | None = None,
) -> TriggerReport:
    """`evaluate_triggers` in async code (see there for the arguments)."""
    _check(runs, threshold)
    if isinstance(skills, str):
        skills = [skills]  # one name, not its letters
    started = time.perf_counter()
    eval_set = await load_eval_set(agent, skills, split=split, seed=seed)
    if on_start is not None:
        on_start(eval_set)
    common: dict[str, Any] = {
        "threshold": threshold,
        "split": split,
        "seed": seed,
        "skipped": eval_set.skipped,
    }
    if offline:
        checks = await _offline(agent, eval_set)
        outcomes = {key: [RunOutcome(_offline_pick(key[0], c))] for key, c in checks.items()}
        return build(
            eval_set.queries,
            outcomes,
            mode="offline",
            model=None,
            runs=1,
            offline=checks,
            duration=time.perf_counter() - started,
            **common,
        )
    chosen = make_engine(engine, concurrency=concurrency, retry=None, ray_address=None)
    yielded: list[ItemResult] = []
    stream = run_batch(
        TriggerProbe(agent),
        eval_items(eval_set, runs),
        "{query}",
        engine=chosen,
        output=results,
        resume=resume,
        control=control,
    )
    async with aclosing(stream) as items:
        async for result in items:
            yielded.append(result)
            if on_result is not None:
                on_result(result)
    every = _results_file(results) if results is not None else yielded
    outcomes = outcomes_from(eval_set, every)
    return build(
        eval_set.queries,
        outcomes,
        mode="model",
        model=agent.model.name,
        runs=runs,
        duration=time.perf_counter() - started,
        **common,
    )


def evaluate_triggers(
    agent: Agent,
    skills: Sequence[str] | None = None,
    runs: int = 3,
    threshold: float = 0.5,
    split: float | None = None,
    seed: int = 0,
    **options: Any,
) -> TriggerReport | Awaitable[TriggerReport]:
    """Measure whether the agent's model loads each skill for the right queries.

    Each skill's ``evals/eval_queries.json`` (a JSON list of ``{"query",
    "should_trigger"}``) is read through the agent's skills server, and every query runs
    `runs` times, each run stopping as soon as the model loads a skill or answers. A query
    passes when its trigger rate is at least `threshold` if it should trigger, below it if
    not.

    In async code, await it (it returns a coroutine); without a running event loop it
    runs to the end in the agent's own loop thread (as `Agent.run_sync` does) and returns
    the report.

    Args:
        agent: the agent to evaluate, with its skills server among its tools.
        skills: the skills to evaluate (None: every skill with an eval file).
        runs: runs per query.
        threshold: the trigger rate a should-trigger query must reach.
        split: the share of each label held out as the validation set (None: no split).
        seed: the split's seed (the same seed gives the same sets).
        **options: keyword-only: ``offline`` (no model: whether each query brings the
            skill into the catalog block at the agent's budget, ranked first), ``engine``
            (``"local"``, ``"ray"`` or an engine object), ``concurrency``, ``results`` (a
            JSONL file of every run), ``resume``, ``control`` (a `BatchControl`),
            ``on_result`` (called with each run's `ItemResult`), ``on_start`` (called
            with the `EvalSet` before the runs).

    Returns:
        The `TriggerReport` (``to_json()`` gives its JSON form).

    Raises:
        EvalError: no skills server, an eval file is missing or malformed, or an
            argument is out of range.
        BatchError: the results file cannot be used.
    """
    work = evaluate_triggers_async(agent, skills, runs, threshold, split, seed, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return work
    work.close()
    loop = agent._sync_loop()  # the loop thread of agent.run_sync, sharing its sessions
    return loop.call(
        lambda: evaluate_triggers_async(agent, skills, runs, threshold, split, seed, **options)
    )
