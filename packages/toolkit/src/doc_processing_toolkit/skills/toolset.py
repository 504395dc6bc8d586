"""`SkillsToolset`: skills auto-injection as a wrapper around the agent's servers.

Each run the wrapper asks the servers it wraps for their tools (`ConnectionPool.run_tools`),
then, in this order:

1. detects the skills source: the first server, in loaded order, that itself exposes both
   ``list_skills`` and ``load_skill`` (names as the server lists them: the wrapper sits
   inside the tool prefix); when no server does, the first server that declared the MCP
   Skills extension (``io.modelcontextprotocol/skills``) when it connected;
2. fetches its catalog within ``skills_timeout``: ``list_skills`` (no argument), or every
   page of ``skills/list``, reused without asking while the server's ``ttlMs`` allows;
3. renders it as that server's instructions for the run. On an empty catalog it hides the
   server's activation tools (tools source: ``load_skill``, ``load_skill_resource``,
   ``execute_skill_script``, ``search_skills``); an extension source gets the wrapper's
   own ``list_skills``, ``load_skill`` and ``load_skill_resource`` (see
   `skills.extension`), the last two only when there is a skill to load.
4. when not every skill can be shown (the server cut its list at its output limit, or
   the catalog does not fit ``skills_catalog_budget``), shows those that best match the
   run's request: it asks the server's ``search_skills`` with the request when the server
   lists that tool (a failure only costs the search), ranks the rest with the catalog's
   own index (`ranking.SkillIndex`), and logs one WARNING that says how many skills the
   block leaves out and why (`selection`);
5. holds back the skills this agent is not offered (`scope`): those outside
   ``skills_include`` / ``skills_exclude`` and those needing tools the agent lacks this
   run (one INFO line). They are left out of the block, and every skills server's session
   is guarded so that they never reach the model nor the server.

Every other server that serves skills gets one WARNING per run naming it and the source:
its skills are not offered, same-named ones included.

It keeps what must outlive a run: the server that was the source last time, so that for a
server out of process the catalog call starts while the tool lists are still being
fetched (one round trip instead of two), and each extension server's last answer with its
time to live. The agent keeps no skills state of its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import anyio

from ..tools.base import RunTools, ServerTools, ToolServer, ToolSession
from ..tools.connections import ConnectionPool
from ..tools.routing import describe_error
from .entries import (
    DETECTION_TOOLS,
    LOGGER_NAME,
    CatalogReplyError,
    SkillsCatalog,
    SkillSource,
    SkillsOutcome,
    describe_diagnostic,
    has_own_catalog,
    parse_catalog,
)
from .extension import (
    ExtensionCatalog,
    ExtensionSkillsSession,
    Rejections,
    declares_extension,
    fetch_extension_catalog,
    offer_with_skill_tools,
)
from .lock import SkillsLock
from .scope import AgentTools, Offered, SkillScope, guard_offers, needs_from_metadata
from .selection import CatalogFailure, call_within, show

__all__ = ["SkillsOptions", "SkillsToolset"]

logger = logging.getLogger(LOGGER_NAME)


@dataclass(frozen=True, slots=True)
class SkillsOptions:
    """The agent's skills settings for one run.

    Attributes:
        enabled: auto_inject_skills.
        timeout: skills_timeout, seconds the catalog call may take.
        budget: skills_catalog_budget, the most characters of the catalog block (None:
            no limit).
        stale_after: skills_stale_after, the oldest last good catalog (seconds) that may
            stand in for one that could not be fetched (None: never).
        lock: skills_lock, the skills accepted from extension servers (None: any that
            passes verification).
        scope: skills_include and skills_exclude.
    """

    enabled: bool
    timeout: float
    budget: int | None = None
    stale_after: float | None = None
    lock: SkillsLock | None = None
    scope: SkillScope = field(default_factory=SkillScope)


@dataclass(frozen=True, slots=True)
class _Fetched:
    """A catalog as had from its source (`extension`: the held ``skills/list`` entries)."""

    catalog: SkillsCatalog
    extension: ExtensionCatalog | None = None


Fetch = Callable[[], Awaitable[_Fetched]]


def _tools_fetch(offer: ServerTools, timeout: float) -> Fetch:
    """The catalog call of a server that exposes the std-tools skills tools."""

    async def fetch() -> _Fetched:
        return _Fetched(await call_within(offer, "list_skills", {}, timeout, parse_catalog))

    return fetch


#: The most skills named in the INFO line about skills whose tools are missing.
_NAMED_MISSING = 10


def _log_missing(server: str, missing: dict[str, tuple[str, ...]]) -> None:
    """The one INFO line of a run that holds back skills whose tools the agent lacks."""
    named = [f"{name} (needs {', '.join(lacking)})" for name, lacking in missing.items()]
    more = len(named) - _NAMED_MISSING
    shown = "; ".join(named[:_NAMED_MISSING]) + (f"; and {more} more" if more > 0 else "")
    logger.info(
        "skills: server %r: %d skills are not offered because this agent lacks tools they need: %s",
        server,
        len(missing),
        shown,
    )


class _EarlyFetch:
    """A catalog call started while the run's tool lists are still being fetched."""

    def __init__(self, offer: ServerTools, fetch: Fetch) -> None:
        self.offer = offer
        self._fetch = fetch
        self._done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._catalog: _Fetched | None = None
        self._error: Exception | None = None

    async def run(self) -> None:
        """Make the call; its outcome is kept, never raised."""
        try:
            with self._scope:
                self._catalog = await self._fetch()
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()

    def cancel(self) -> None:
        """Stop the call if it still runs (its answer is not wanted)."""
        self._scope.cancel()

    async def result(self) -> _Fetched:
        """The catalog, or the call's failure raised again."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        if self._catalog is None:
            raise CatalogFailure("the catalog call was cancelled before it answered")
        return self._catalog


def _sources(servers: tuple[ServerTools, ...]) -> list[tuple[ServerTools, SkillSource]]:
    """Every server that serves skills, the source first: the seed's rule first (both
    tools on one server), then the extension."""
    found: list[tuple[ServerTools, SkillSource]] = [
        (offer, SkillSource.TOOLS)
        for offer in servers
        if {t.name for t in offer.tools} >= DETECTION_TOOLS
    ]
    found.extend(
        (offer, SkillSource.EXTENSION) for offer in servers if declares_extension(offer.session)
    )
    return found


def _warn_unused_sources(
    source: ServerTools, others: list[tuple[ServerTools, SkillSource]]
) -> None:
    """One WARNING per other server that serves skills: its skills are not offered, so a
    skill it shares a name with the source's is dropped, never silently."""
    for other, _ in others:
        if other.server is source.server:
            continue
        logger.warning(
            "skills: servers %r and %r both serve skills; the catalog comes from %r only, "
            "so no skill of %r is offered, including any with the same name as a skill of "
            "%r; attach one skills server per agent",
            source.server.name,
            other.server.name,
            source.server.name,
            other.server.name,
            source.server.name,
        )


@dataclass(frozen=True, slots=True)
class _Good:
    """The last catalog fetched from a server, how, and when (`time.monotonic()`)."""

    source: SkillSource
    fetched: _Fetched
    at: float


@dataclass(frozen=True, slots=True)
class _Held:
    """An extension server's last ``skills/list`` answer, on the session it came by."""

    session: ToolSession
    fetched: _Fetched


class SkillsToolset:
    """Skills auto-injection around a `ConnectionPool` (see the module docstring).

    Args:
        inner: the agent's connections.
    """

    def __init__(self, inner: ConnectionPool) -> None:
        self.inner = inner
        self._last_source: tuple[ServerTools, SkillSource] | None = None
        self._held: dict[ToolServer, _Held] = {}
        self._good: dict[ToolServer, _Good] = {}
        self._rejections: dict[ToolServer, Rejections] = {}
        self._kept: dict[ToolServer, tuple[SkillsCatalog, frozenset[str], SkillsCatalog]] = {}

    async def run_tools(
        self,
        options: SkillsOptions,
        instructions: str | None,
        *,
        notify_unavailable: bool,
        request: str = "",
    ) -> tuple[RunTools, SkillsOutcome]:
        """The servers' offers for one run with the skills step applied, and what the
        step decided. `request` is the run's user text: when not every skill can be
        shown, the block holds those that best match it. Never raises for a bad skills
        server.

        Raises:
            ToolServerError: a required server could not be reached (from the inner
                servers, as itself).
        """
        if not options.enabled:
            tools = await self.inner.run_tools(notify_unavailable=notify_unavailable)
            return tools, SkillsOutcome(status="disabled")
        if has_own_catalog(instructions):
            logger.info(
                "skills: the instructions already contain an <available_skills> block; "
                "auto-injection skipped for this run"
            )
            tools = await self.inner.run_tools(notify_unavailable=notify_unavailable)
            return tools, SkillsOutcome(status="own_catalog")
        early = self._early_fetch(options)
        if early is None:
            tools = await self.inner.run_tools(notify_unavailable=notify_unavailable)
            return await self._apply(tools, options, None, request)
        # The error of a failed listing is raised after the task group, so that it reaches
        # the caller as itself and not inside an exception group.
        failure: Exception | None = None
        result: tuple[RunTools, SkillsOutcome] | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(early.run)
            try:
                tools = await self.inner.run_tools(notify_unavailable=notify_unavailable)
                result = await self._apply(tools, options, early, request)
            except Exception as exc:
                failure = exc
            finally:
                early.cancel()
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def _early_fetch(self, options: SkillsOptions) -> _EarlyFetch | None:
        if self._last_source is None:
            return None
        last, source = self._last_source
        if last.server.in_process or not self.inner.is_live(last.session):
            return None
        held = self._held.get(last.server)
        if source.traits.held and held is not None and self._fresh(held, last.session):
            return None  # nothing to ask: the held answer is still good
        return _EarlyFetch(last, self._fetch(last, source, options.timeout))

    def _last_good(
        self, server: ToolServer, source: SkillSource, stale_after: float | None
    ) -> _Good | None:
        """The last good catalog of `server` by the same `source`, when it may stand in:
        `stale_after` is set, it is no older than that, and it has skills."""
        good = self._good.get(server)
        if (
            stale_after is None
            or good is None
            or good.source != source
            or not good.fetched.catalog.skills
            or time.monotonic() - good.at > stale_after
        ):
            return None
        return good

    @staticmethod
    def _fresh(held: _Held, session: ToolSession) -> bool:
        extension = held.fetched.extension
        return (
            held.session is session and extension is not None and extension.fresh(time.monotonic())
        )

    def _fetch(self, offer: ServerTools, source: SkillSource, timeout: float) -> Fetch:
        if source.traits.held:
            return self._extension_fetch(offer, timeout)
        return _tools_fetch(offer, timeout)

    def _extension_fetch(self, offer: ServerTools, timeout: float) -> Fetch:
        """Every page of ``skills/list``, or the held answer while its ttl lasts."""

        async def fetch() -> _Fetched:
            held = self._held.get(offer.server)
            if held is not None and self._fresh(held, offer.session):
                return held.fetched
            try:
                extension = await fetch_extension_catalog(offer.session, timeout)
            except TimeoutError:
                raise CatalogFailure(f"skills/list did not answer within {timeout:g} s") from None
            except CatalogReplyError as exc:
                raise CatalogFailure(str(exc)) from None
            except Exception as exc:  # a broken server must never take the run down
                raise CatalogFailure(f"skills/list failed: {describe_error(exc)}") from None
            for reason in extension.skipped:
                logger.warning(
                    "skills: server %r: a skills/list entry was left out: %s",
                    offer.server.name,
                    reason,
                )
            skills = tuple(skill.entry() for skill in extension.skills)
            requires = {
                skill.name: needs
                for skill in extension.skills
                if (needs := needs_from_metadata(skill.frontmatter.get("metadata")))
            }
            catalog = SkillsCatalog(skills, requires=requires)
            if held is not None and held.fetched.catalog.skills == skills:
                # Unchanged: the same catalog object, so its rendered blocks and its
                # index are reused instead of being made again.
                catalog = held.fetched.catalog
            fetched = _Fetched(catalog, extension)
            self._held[offer.server] = _Held(offer.session, fetched)
            return fetched

        return fetch

    async def _apply(
        self, tools: RunTools, options: SkillsOptions, early: _EarlyFetch | None, request: str
    ) -> tuple[RunTools, SkillsOutcome]:
        """The skills step, then every skills server's session guarded so that the skills
        not offered this run (`Offered`) never reach the model nor the server."""
        tools, outcome, offered = await self._step(tools, options, early, request)
        scope = options.scope if options.scope.limited else None
        outcome = replace(outcome, scope=scope)
        if offered is None:
            offered = Offered(options.scope)
        if not offered.active:
            return tools, outcome
        servers = guard_offers(
            tools.servers,
            offered.refusal,
            guarded_already=lambda session: isinstance(session, ExtensionSkillsSession),
        )
        return replace(tools, servers=servers), outcome

    def _offered(
        self, server: ToolServer, catalog: SkillsCatalog, offered: Offered
    ) -> tuple[SkillsCatalog, tuple[str, ...], dict[str, tuple[str, ...]]]:
        """`catalog` without the skills `offered` holds back, the names out of scope and
        the missing tools of the others held back. An unchanged outcome on an unchanged
        catalog is the same catalog object as last run (its blocks and index kept)."""
        if not offered.active:
            return catalog, (), {}
        out_of_scope = tuple(s.name for s in catalog.skills if not offered.scope.allows(s.name))
        # Every skill whose needs are known, listed or not (a cut list still names them).
        names = dict.fromkeys([*(s.name for s in catalog.skills), *catalog.requires])
        missing = {
            name: lacking
            for name in names
            if offered.scope.allows(name) and (lacking := offered.missing(name))
        }
        removed = frozenset(out_of_scope) | frozenset(missing)
        if not removed:
            return catalog, out_of_scope, missing
        held = self._kept.get(server)
        if held is not None and held[0] is catalog and held[1] == removed:
            return held[2], out_of_scope, missing
        kept = tuple(s for s in catalog.skills if s.name not in removed)
        count = None if catalog.count is None else max(catalog.count - len(removed), len(kept))
        filtered = replace(catalog, skills=kept, count=count, rendered={}, lines={}, hides=[])
        self._kept[server] = (catalog, removed, filtered)
        return filtered, out_of_scope, missing

    async def _step(
        self, tools: RunTools, options: SkillsOptions, early: _EarlyFetch | None, request: str
    ) -> tuple[RunTools, SkillsOutcome, Offered | None]:
        sources = _sources(tools.servers)
        found = sources[0] if sources else None
        if found is not None:
            _warn_unused_sources(found[0], sources[1:])
        self._last_source = found
        fetch: Fetch | None = None
        if early is not None:
            if (
                found is not None
                and found[0].server is early.offer.server
                and found[0].session is early.offer.session
            ):
                fetch = early.result
            else:
                early.cancel()
        if found is None:
            return tools, SkillsOutcome(status="no_server"), None
        source, kind = found
        if fetch is None:
            fetch = self._fetch(source, kind, options.timeout)
        name = source.server.name
        stale_age: float | None = None
        try:
            fetched = await fetch()
        except CatalogFailure as exc:
            good = self._last_good(source.server, kind, options.stale_after)
            if good is None:
                warning = (
                    f"skills: auto-injection failed for server {name!r}: {exc}; running "
                    "without a skill catalog, all of its tools stay available"
                )
                logger.warning("%s", warning)
                outcome = SkillsOutcome(status="failed", server=name, warning=warning, source=kind)
                return replace(tools, warnings=(*tools.warnings, warning)), outcome, None
            fetched, stale_age = good.fetched, time.monotonic() - good.at
            warning = (
                f"skills: auto-injection failed for server {name!r}: {exc}; injecting its last "
                f"good catalog, {stale_age:.0f} s old (skills_stale_after)"
            )
            logger.warning("%s", warning)
            tools = replace(tools, warnings=(*tools.warnings, warning))
        else:
            at = fetched.extension.fetched_at if fetched.extension else time.monotonic()
            self._good[source.server] = _Good(kind, fetched, at)
        catalog = fetched.catalog
        for diagnostic in catalog.diagnostics:
            logger.warning("skills: %s", describe_diagnostic(diagnostic))
        offered = Offered(options.scope, catalog.requires, AgentTools.of(tools.servers))
        catalog, out_of_scope, missing = self._offered(source.server, catalog, offered)
        if missing:
            _log_missing(name, missing)
        offer = source
        rejected: dict[str, str] = {}
        if fetched.extension is not None:
            rejections = self._rejections.setdefault(source.server, Rejections())
            refused = rejections.start_run(fetched.extension, options.lock, name)
            if refused:  # a rejected skill is not offered until its entry changes
                kept = tuple(s for s in catalog.skills if s.uri not in refused)
                catalog = replace(catalog, skills=kept, rendered={}, lines={}, hides=[])
            rejected = rejections.this_run
            offer = offer_with_skill_tools(
                source,
                fetched.extension,
                with_loaders=bool(catalog.skills),
                rejections=rejections,
                refusal=offered.refusal if offered.active else None,
            )
        if not catalog.skills:
            listed = frozenset(t.name for t in offer.tools)
            hidden = kind.traits.hidden_when_empty & listed
            visible = tuple(t for t in offer.tools if t.name not in hidden)
            offer = replace(offer, tools=visible)
            outcome = SkillsOutcome(
                status="empty",
                server=name,
                hidden_tools=hidden,
                diagnostics=catalog.diagnostics,
                source=kind,
                rejected=rejected,
                out_of_scope=out_of_scope,
                missing_tools=missing,
            )
        else:
            notice = None
            if stale_age is not None:
                notice = (
                    f"The skills catalog could not be read from server {name!r} in this run; "
                    f"this is the catalog read {stale_age:.0f} s ago, and it may be out of "
                    "date."
                )
            shown = await show(
                catalog, offer, kind, options.budget, options.timeout, request, notice, offered
            )
            rendered = shown.rendered
            offer = replace(offer, instructions=rendered.block)
            outcome = SkillsOutcome(
                status="stale" if stale_age is not None else "injected",
                stale_age=stale_age,
                warning=tools.warnings[-1] if stale_age is not None else shown.warning,
                server=name,
                prompt_block=rendered.block,
                skills=shown.skills,
                diagnostics=catalog.diagnostics,
                source=kind,
                shortened=rendered.shortened,
                left_out=rendered.left_out,
                left_out_count=shown.left_out_count,
                total=shown.total,
                ranking=shown.ranking,
                rejected=rejected,
                out_of_scope=out_of_scope,
                missing_tools=missing,
            )
        servers = tuple(offer if s is source else s for s in tools.servers)
        return replace(tools, servers=servers), outcome, offered
