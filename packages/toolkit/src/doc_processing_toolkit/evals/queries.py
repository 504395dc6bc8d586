"""Eval queries: a skill's ``evals/eval_queries.json`` read and checked, and the fixed,
label-stratified train/validation split.

The file is a JSON list of ``{"query": str, "should_trigger": bool}`` objects. It is read
through the agent's skills server (`read_eval_queries`), like any other file of the skill,
so a skill served by a remote server is evaluated the same way as a local one.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..errors import EvalError
from ..preview import RunPreview
from ..skills import SkillEntry

__all__ = [
    "EVAL_FILE",
    "EvalQuery",
    "SetName",
    "assign_sets",
    "parse_eval_queries",
    "read_eval_queries",
]

EVAL_FILE = "evals/eval_queries.json"
"""Where a skill keeps its labelled queries, relative to its folder."""

SetName = Literal["train", "validation"]


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One labelled query of a skill.

    Attributes:
        skill: the skill the query belongs to.
        query: the user's request, as the model receives it.
        should_trigger: whether the model should load the skill for it.
        index: the query's position in the file.
        set: ``train`` or ``validation`` when the queries are split, else None.
    """

    skill: str
    query: str
    should_trigger: bool
    index: int
    set: SetName | None = None


def parse_eval_queries(skill: str, text: str) -> list[EvalQuery]:
    """The queries of `skill`'s eval file `text`.

    Raises:
        EvalError: the text is not a JSON list of ``{"query", "should_trigger"}``
            objects; the message names the skill, the entry and the fix.
    """
    where = f"skill {skill!r}: {EVAL_FILE}"
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise EvalError(f"{where} is not JSON ({exc}).") from None
    if not isinstance(data, list):
        raise EvalError(
            f'{where} must be a JSON list of {{"query": ..., "should_trigger": ...}} objects, '
            f"not a {type(data).__name__}."
        )
    queries: list[EvalQuery] = []
    seen: set[str] = set()
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise EvalError(f"{where}: entry {index} is not an object.")
        unknown = sorted(set(entry) - {"query", "should_trigger"})
        if unknown:
            raise EvalError(
                f"{where}: entry {index} has unknown keys {', '.join(unknown)} (only "
                '"query" and "should_trigger" are read).'
            )
        query, label = entry.get("query"), entry.get("should_trigger")
        if not isinstance(query, str) or not query.strip():
            raise EvalError(f'{where}: entry {index} needs a non-empty string "query".')
        if not isinstance(label, bool):
            raise EvalError(f'{where}: entry {index} needs "should_trigger": true or false.')
        if query in seen:
            raise EvalError(f"{where}: entry {index} repeats the query {query[:60]!r}.")
        seen.add(query)
        queries.append(EvalQuery(skill, query, label, index))
    if not queries:
        raise EvalError(f"{where} holds no query.")
    return queries


def assign_sets(queries: Sequence[EvalQuery], split: float | None, seed: int) -> list[EvalQuery]:
    """`queries` with their set: for each label, a `split` share (rounded, at least one
    when the label has two or more queries) goes to ``validation``, the rest to
    ``train``. The choice depends on the seed, the skill and the query texts only, so it
    stays the same from run to run and when other skills or queries of the other label
    change. None leaves the queries unsplit.

    Raises:
        EvalError: `split` is not between 0 and 1 (both excluded).
    """
    if split is None:
        return list(queries)
    if not 0 < split < 1:
        raise EvalError(f"split must be between 0 and 1 (the validation share), got {split}.")
    chosen: set[int] = set()
    for label in (True, False):
        group = sorted((q for q in queries if q.should_trigger is label), key=lambda q: q.query)
        if not group:
            continue
        rng = random.Random(f"{seed}:{group[0].skill}:{label}")
        rng.shuffle(group)
        count = round(len(group) * split)
        if len(group) >= 2:
            count = min(max(count, 1), len(group) - 1)
        chosen.update(q.index for q in group[:count])
    return [replace(q, set="validation" if q.index in chosen else "train") for q in queries]


def _tool(preview: RunPreview, server: str, tool: str) -> str | None:
    return preview.visible_name(server, tool)


async def read_eval_queries(preview: RunPreview, entry: SkillEntry) -> str | None:
    """The text of `entry`'s eval file, read through the skills server of `preview` with
    the tool a model would use (``load_skill_resource``: std-tools' by skill name and
    path, or the toolkit's own over an MCP Skills extension server, by the file's URI,
    which reads it with ``resources/read`` and checks it against the listing). None when
    the skill has no such file.

    Raises:
        EvalError: no skills server, or the server refused the read for another reason.
    """
    outcome = preview.skills
    if outcome.server is None or outcome.source is None:
        raise EvalError(
            "the agent has no skills server (a server with list_skills and load_skill, or "
            "one serving the MCP Skills extension): there is nothing to evaluate."
        )
    name = _tool(preview, outcome.server, "load_skill_resource")
    if name is None:
        raise EvalError(
            f"skills server {outcome.server!r} offers no load_skill_resource tool, so the "
            f"eval files cannot be read; allow that tool on the server."
        )
    if outcome.source.traits.by_uri:
        if entry.uri is None or not entry.uri.endswith("SKILL.md"):
            return None
        uri = entry.uri[: -len("SKILL.md")] + EVAL_FILE
        record = await preview.call_tool(name, {"uri": uri})
        missing: tuple[str, ...] = ("is not a file of", "not a file of any skill")
    else:
        record = await preview.call_tool(
            name, {"skill_name": entry.name, "resource_path": EVAL_FILE}
        )
        missing = ("not found", "no such", "does not exist", "not_found", "no file")
    if record.is_error:
        if any(marker in record.content.lower() for marker in missing):
            return None
        raise EvalError(
            f"skill {entry.name!r}: reading {EVAL_FILE} from server {outcome.server!r} "
            f"failed: {record.content}"
        )
    return record.content
