"""What the catalog block shows when not every skill can be: the calls to the skills
server (``search_skills``, and any tool call held to a time limit) and the choice of the
skills that best match the run's request, with the one WARNING that says how many are not
shown and why.

Used by `toolset.SkillsToolset`; nothing here keeps state between runs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anyio

from ..tools.base import ServerTools
from .block import Selected, render_for, render_selected
from .entries import (
    LOGGER_NAME,
    SEARCH_TOOL,
    CatalogReplyError,
    Ranking,
    Rendered,
    SkillEntry,
    SkillsCatalog,
    SkillSource,
    parse_search,
)
from .scope import Offered

__all__ = ["MAX_QUERY", "SEARCH_LIMIT", "CatalogFailure", "Shown", "call_within", "show"]

logger = logging.getLogger(LOGGER_NAME)

#: The most skills asked of ``search_skills`` (the contract's upper bound).
SEARCH_LIMIT = 50
#: The most characters of the request sent to ``search_skills`` as its query.
MAX_QUERY = 1000

_T = TypeVar("_T")


class CatalogFailure(Exception):
    """The catalog could not be had; the message says why (for the WARNING)."""


async def call_within(
    offer: ServerTools,
    tool: str,
    arguments: dict[str, Any],
    time_limit: float,
    parse: Callable[[Any], _T],
) -> _T:
    """`tool`'s answer on `offer`, read by `parse`.

    Raises:
        CatalogFailure: the call failed, timed out or answered something else; a broken
            server must never take the run down.
    """
    try:
        with anyio.fail_after(time_limit if math.isfinite(time_limit) else None):
            result = await offer.session.call_tool(tool, arguments)
        return parse(result)
    except TimeoutError:
        raise CatalogFailure(f"{tool} did not answer within {time_limit:g} s") from None
    except CatalogReplyError as exc:
        raise CatalogFailure(str(exc)) from None
    except Exception as exc:
        raise CatalogFailure(f"{tool} raised {type(exc).__name__}: {exc}") from None


def _query(request: str) -> str:
    """The request as a ``search_skills`` query: stripped, at most `MAX_QUERY`
    characters, cut at a space when it is longer."""
    text = " ".join(request[: 4 * MAX_QUERY].split())
    if len(text) > MAX_QUERY:
        text = text[:MAX_QUERY].rsplit(" ", 1)[0]
    return text


async def _search(offer: ServerTools, query: str, time_limit: float) -> tuple[SkillEntry, ...]:
    """The server's ``search_skills`` answer for `query`, best match first.

    Raises:
        CatalogFailure: the call failed, timed out or answered something else.
    """
    arguments = {"query": query, "limit": SEARCH_LIMIT}
    return await call_within(offer, SEARCH_TOOL, arguments, time_limit, parse_search)


def _left_out_warning(
    server: str,
    catalog: SkillsCatalog,
    selected: Selected,
    budget: int | None,
    ranking: Ranking,
    search_failure: str | None,
) -> str:
    """The one WARNING of a run whose block does not show every skill."""
    reasons = []
    if catalog.unlisted != 0:
        of = str(catalog.count) if catalog.count is not None else "an unknown number of"
        reasons.append(
            f"its list_skills answer, cut at its output limit, listed {len(catalog.skills)} "
            f"of {of} skills"
        )
    if selected.rendered.left_out:
        reasons.append(f"the block is held to skills_catalog_budget={budget} characters")
    shown = len(selected.skills) - len(selected.rendered.left_out)
    if selected.total is None:
        missing = f"an unknown number of its skills ({selected.left_out_count} known)"
    else:
        missing = f"{selected.left_out_count} of its {selected.total} skills"
    if search_failure is not None:
        how = f"{SEARCH_TOOL} failed ({search_failure}), so ranked by the toolkit's own index"
    elif ranking == "search_skills":
        how = f"ranked by its {SEARCH_TOOL}, then by the toolkit's own index"
    else:
        how = "ranked by the toolkit's own index"
    return (
        f"skills: server {server!r}: {missing} are not shown in the catalog block "
        f"({'; '.join(reasons)}); it shows the {shown} that best match the request, {how}"
    )


@dataclass(frozen=True, slots=True)
class Shown:
    """The block of a run and what it shows of the catalog (see `SkillsOutcome`)."""

    rendered: Rendered
    skills: tuple[SkillEntry, ...]
    left_out_count: int = 0
    total: int | None = None
    ranking: Ranking | None = None
    warning: str | None = None


async def show(
    catalog: SkillsCatalog,
    offer: ServerTools,
    kind: SkillSource,
    budget: int | None,
    time_limit: float,
    request: str,
    notice: str | None,
    offered: Offered,
) -> Shown:
    """The block for a non-empty `catalog`: the whole catalog when every skill can be
    shown (within the budget), else the skills that best match `request`, with one
    WARNING."""
    name = offer.server.name
    if catalog.unlisted == 0:
        rendered = render_for(catalog, kind, name, budget, notice=notice)
        if not rendered.left_out:
            return Shown(rendered, catalog.skills, total=len(catalog.skills))
    searchable = kind.traits.searches and any(t.name == SEARCH_TOOL for t in offer.tools)
    query = _query(request)
    found: tuple[SkillEntry, ...] = ()
    failure: str | None = None
    ranking: Ranking = "local"
    if searchable and query:
        try:
            found = await _search(offer, query, time_limit)
            if offered.active:
                found = tuple(hit for hit in found if offered.refusal(hit.name) is None)
            ranking = "search_skills"
        except CatalogFailure as exc:
            failure = str(exc)
    selected = render_selected(
        catalog,
        kind,
        name,
        budget,
        request=request,
        found=found,
        searchable=searchable,
        notice=notice,
    )
    shown = Shown(
        selected.rendered,
        selected.skills,
        left_out_count=selected.left_out_count,
        total=selected.total,
    )
    if not selected.left_out_count and selected.total is not None:
        return shown  # the search found every skill the server's list lacked
    warning = _left_out_warning(name, catalog, selected, budget, ranking, failure)
    logger.warning("%s", warning)
    return replace(shown, ranking=ranking, warning=warning)
