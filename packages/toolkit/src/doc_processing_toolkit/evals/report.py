"""The eval report: per query, per skill and overall, as data that turns into JSON.

Each query's runs add up to a trigger rate; the query passes when the rate is at or
above the threshold for a query that should trigger the skill, below it for one that
should not. A skill's precision and recall count runs: precision is the share of the runs
that loaded the skill whose query should have, recall the share of the runs of its
should-trigger queries that loaded it. Its confusion counts, over the runs of its
should-trigger queries, each other skill the model loaded instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..messages import Usage
from .queries import EvalQuery, SetName

__all__ = ["OfflineCheck", "QueryResult", "RunOutcome", "SkillReport", "TriggerReport", "build"]

Mode = Literal["model", "offline"]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One run of one query: the skill it loaded (None: none), or why it failed."""

    loaded: str | None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    duration: float = 0.0


@dataclass(frozen=True, slots=True)
class OfflineCheck:
    """What an offline eval found for one query (no model asked).

    Attributes:
        in_block: whether the skill is in the catalog block chosen for the query at the
            agent's ``skills_catalog_budget``.
        rank: the skill's place (1 = best) among the skills matching the query, or None
            when it does not match at all.
        rank_source: ``search_skills`` (the server's search) or ``index`` (the toolkit's
            own index over the catalog, when the server has no search).
        top: the skill ranked first for the query, if any.
    """

    in_block: bool
    rank: int | None
    rank_source: str
    top: str | None

    @property
    def triggered(self) -> bool:
        """The offline stand-in for a trigger: the skill is in the block and ranks first."""
        return self.in_block and self.rank == 1


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


@dataclass(slots=True)
class QueryResult:
    """One query's outcome.

    Attributes:
        query: the query.
        should_trigger: its label.
        runs: the runs that finished (failed runs are in `errors`).
        triggers: the runs that loaded the skill.
        trigger_rate: `triggers` / `runs` (0 without runs).
        passed: whether the rate is on the right side of the threshold (false without
            runs).
        set: ``train`` or ``validation`` when split, else None.
        loaded_instead: other skills loaded in its runs, with how often.
        errors: runs that failed, with the first error's text in `error`.
        offline: what the offline eval found (offline mode only).
    """

    query: str
    should_trigger: bool
    runs: int
    triggers: int
    trigger_rate: float
    passed: bool
    set: SetName | None = None
    loaded_instead: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    error: str | None = None
    offline: OfflineCheck | None = None

    def to_json(self) -> dict[str, Any]:
        """The query as JSON data (``set`` only when split, ``offline`` when offline)."""
        data: dict[str, Any] = {
            "query": self.query,
            "should_trigger": self.should_trigger,
            "runs": self.runs,
            "triggers": self.triggers,
            "trigger_rate": self.trigger_rate,
            "passed": self.passed,
        }
        if self.set is not None:
            data["set"] = self.set
        data["loaded_instead"] = dict(self.loaded_instead)
        data["errors"] = self.errors
        if self.error is not None:
            data["error"] = self.error
        if self.offline is not None:
            data["offline"] = {
                "in_block": self.offline.in_block,
                "rank": self.offline.rank,
                "rank_source": self.offline.rank_source,
                "top": self.offline.top,
            }
        return data


@dataclass(slots=True)
class SkillReport:
    """One skill's outcome.

    Attributes:
        name: the skill.
        queries: its queries' results, in the file's order.
        pass_rate: the share of its queries that passed.
        precision: the share of the runs loading the skill whose query should trigger it
            (None: no run loaded it).
        recall: the share of the runs of its should-trigger queries that loaded it
            (None: it has no such query).
        train_pass_rate: the pass rate of the train set (None: not split).
        validation_pass_rate: the pass rate of the validation set (None: not split).
        confusion: other skills loaded on its should-trigger queries, with how often.
        requests: model requests of its runs.
        input_tokens: input tokens of its runs.
        output_tokens: output tokens of its runs.
        tokens: input plus output tokens.
    """

    name: str
    queries: list[QueryResult]
    pass_rate: float
    precision: float | None
    recall: float | None
    train_pass_rate: float | None
    validation_pass_rate: float | None
    confusion: dict[str, int]
    requests: int
    input_tokens: int
    output_tokens: int

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def failing(self) -> list[QueryResult]:
        """The queries that did not pass."""
        return [q for q in self.queries if not q.passed]

    def to_json(self) -> dict[str, Any]:
        """The skill as JSON data."""
        return {
            "name": self.name,
            "pass_rate": self.pass_rate,
            "precision": self.precision,
            "recall": self.recall,
            "train_pass_rate": self.train_pass_rate,
            "validation_pass_rate": self.validation_pass_rate,
            "confusion": dict(self.confusion),
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "queries": [q.to_json() for q in self.queries],
        }


@dataclass(slots=True)
class TriggerReport:
    """The whole eval (see the module docstring).

    Attributes:
        skills: each skill's report, by name, in the catalog's order.
        mode: ``model`` (the model was asked) or ``offline``.
        model: the model that answered (``provider:name``), None offline.
        runs: the runs asked of each query.
        threshold: the trigger rate a should-trigger query must reach.
        split: the validation share, or None.
        seed: the split's seed.
        skipped: skills left out, with why (no eval file).
        duration: seconds the eval took.
    """

    skills: dict[str, SkillReport]
    mode: Mode
    model: str | None
    runs: int
    threshold: float
    split: float | None
    seed: int
    skipped: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0

    @property
    def queries(self) -> list[QueryResult]:
        """Every query of every skill."""
        return [q for skill in self.skills.values() for q in skill.queries]

    @property
    def passed(self) -> bool:
        """Whether every query passed (and at least one ran)."""
        queries = self.queries
        return bool(queries) and all(q.passed for q in queries)

    @property
    def pass_rate(self) -> float:
        """The share of all queries that passed."""
        queries = self.queries
        return _ratio(sum(q.passed for q in queries), len(queries)) or 0.0

    @property
    def errors(self) -> int:
        """Runs that failed."""
        return sum(q.errors for q in self.queries)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data (what ``dpt-agent eval --json`` writes)."""
        requests = sum(s.requests for s in self.skills.values())
        input_tokens = sum(s.input_tokens for s in self.skills.values())
        output_tokens = sum(s.output_tokens for s in self.skills.values())
        return {
            "mode": self.mode,
            "model": self.model,
            "runs": self.runs,
            "threshold": self.threshold,
            "split": self.split,
            "seed": self.seed,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "errors": self.errors,
            "requests": requests,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "tokens": input_tokens + output_tokens,
            "duration": round(self.duration, 3),
            "skipped": dict(self.skipped),
            "skills": {name: skill.to_json() for name, skill in self.skills.items()},
        }


def _query_result(
    query: EvalQuery,
    outcomes: Sequence[RunOutcome],
    threshold: float,
    offline: OfflineCheck | None,
) -> QueryResult:
    done = [o for o in outcomes if o.error is None]
    failed = [o for o in outcomes if o.error is not None]
    triggers = sum(o.loaded == query.skill for o in done)
    rate = round(triggers / len(done), 4) if done else 0.0
    passed = bool(done) and (rate >= threshold if query.should_trigger else rate < threshold)
    instead = Counter(o.loaded for o in done if o.loaded is not None and o.loaded != query.skill)
    return QueryResult(
        query=query.query,
        should_trigger=query.should_trigger,
        runs=len(done),
        triggers=triggers,
        trigger_rate=rate,
        passed=passed,
        set=query.set,
        loaded_instead=dict(instead.most_common()),
        errors=len(failed),
        error=failed[0].error if failed else None,
        offline=offline,
    )


def _set_rate(results: Iterable[QueryResult], name: SetName) -> float | None:
    chosen = [r for r in results if r.set == name]
    return _ratio(sum(r.passed for r in chosen), len(chosen))


def _skill_report(
    name: str,
    queries: Sequence[EvalQuery],
    outcomes: dict[int, list[RunOutcome]],
    threshold: float,
    offline: dict[int, OfflineCheck],
) -> SkillReport:
    results = [
        _query_result(q, outcomes.get(q.index, []), threshold, offline.get(q.index))
        for q in queries
    ]
    positive_runs = sum(r.runs for r in results if r.should_trigger)
    true_hits = sum(r.triggers for r in results if r.should_trigger)
    all_hits = sum(r.triggers for r in results)
    confusion: Counter[str] = Counter()
    for result in results:
        if result.should_trigger:
            confusion.update(result.loaded_instead)
    usage = Usage()
    for runs in outcomes.values():
        for outcome in runs:
            usage = usage + outcome.usage
    return SkillReport(
        name=name,
        queries=results,
        pass_rate=_ratio(sum(r.passed for r in results), len(results)) or 0.0,
        precision=_ratio(true_hits, all_hits),
        recall=_ratio(true_hits, positive_runs),
        train_pass_rate=_set_rate(results, "train"),
        validation_pass_rate=_set_rate(results, "validation"),
        confusion=dict(confusion.most_common()),
        requests=usage.requests,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
    )


def build(
    queries: dict[str, list[EvalQuery]],
    outcomes: dict[tuple[str, int], list[RunOutcome]],
    *,
    mode: Mode,
    model: str | None,
    runs: int,
    threshold: float,
    split: float | None,
    seed: int,
    skipped: dict[str, str] | None = None,
    offline: dict[tuple[str, int], OfflineCheck] | None = None,
    duration: float = 0.0,
) -> TriggerReport:
    """The report of `queries` (by skill) from the `outcomes` of their runs (by skill and
    query index) or, offline, from the `offline` checks."""
    checks = offline or {}
    skills = {}
    for name, skill_queries in queries.items():
        by_index = {i: runs_ for (s, i), runs_ in outcomes.items() if s == name}
        skill_checks = {i: check for (s, i), check in checks.items() if s == name}
        skills[name] = _skill_report(name, skill_queries, by_index, threshold, skill_checks)
    return TriggerReport(
        skills=skills,
        mode=mode,
        model=model,
        runs=runs,
        threshold=threshold,
        split=split,
        seed=seed,
        skipped=dict(skipped or {}),
        duration=duration,
    )
