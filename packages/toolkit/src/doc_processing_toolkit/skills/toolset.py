"""`SkillsToolset`: skills auto-injection as a wrapper around the agent's servers.

Each run the wrapper asks the servers it wraps for their tools (`ConnectionPool.run_tools`),
then, in this order:

1. detects the skills source: the first server, in loaded order, that itself exposes both
   ``list_skills`` and ``load_skill`` (names as the server lists them: the wrapper sits
   inside the tool prefix);
2. fetches its catalog (``list_skills``, no argument), within ``skills_timeout``;
3. renders it as that server's instructions for the run, or, on an empty catalog, hides
   the server's three activation tools.

It keeps what must outlive a run: the server that was the source last time, so that for a
server out of process the catalog call starts while the tool lists are still being
fetched (one round trip instead of two). The agent keeps no skills state of its own.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import anyio

from ..tools.base import RunTools, ServerTools
from ..tools.connections import ConnectionPool
from .catalog import (
    ACTIVATION_TOOLS,
    DETECTION_TOOLS,
    LOGGER_NAME,
    CatalogReplyError,
    SkillsCatalog,
    SkillsOutcome,
    describe_diagnostic,
    has_own_catalog,
    parse_catalog,
    render_catalog,
)

__all__ = ["SkillsOptions", "SkillsToolset"]

logger = logging.getLogger(LOGGER_NAME)


@dataclass(frozen=True, slots=True)
class SkillsOptions:
    """The agent's skills settings for one run.

    Attributes:
        enabled: auto_inject_skills.
        timeout: skills_timeout, seconds the catalog call may take.
    """

    enabled: bool
    timeout: float


Fetch = Callable[[], Awaitable[SkillsCatalog]]


class _CatalogFailure(Exception):
    """The catalog could not be had; the message says why (for the WARNING)."""


def _tools_fetch(offer: ServerTools, timeout: float) -> Fetch:
    """The catalog call of a server that exposes the std-tools skills tools."""

    async def fetch() -> SkillsCatalog:
        try:
            with anyio.fail_after(timeout if math.isfinite(timeout) else None):
                result = await offer.session.call_tool("list_skills", {})
            return parse_catalog(result)
        except TimeoutError:
            raise _CatalogFailure(f"list_skills did not answer within {timeout:g} s") from None
        except CatalogReplyError as exc:
            raise _CatalogFailure(str(exc)) from None
        except Exception as exc:  # a broken server must never take the run down
            raise _CatalogFailure(f"list_skills raised {type(exc).__name__}: {exc}") from None

    return fetch


class _EarlyFetch:
    """A catalog call started while the run's tool lists are still being fetched."""

    def __init__(self, offer: ServerTools, fetch: Fetch) -> None:
        self.offer = offer
        self._fetch = fetch
        self._done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._catalog: SkillsCatalog | None = None
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

    async def result(self) -> SkillsCatalog:
        """The catalog, or the call's failure raised again."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        if self._catalog is None:
            raise _CatalogFailure("the catalog call was cancelled before it answered")
        return self._catalog


def _find_source(servers: tuple[ServerTools, ...]) -> ServerTools | None:
    for offer in servers:
        if {tool.name for tool in offer.tools} >= DETECTION_TOOLS:
            return offer
    return None


class SkillsToolset:
    """Skills auto-injection around a `ConnectionPool` (see the module docstring).

    Args:
        inner: the agent's connections.
    """

    def __init__(self, inner: ConnectionPool) -> None:
        self.inner = inner
        self._last_source: ServerTools | None = None

    async def run_tools(
        self, options: SkillsOptions, instructions: str | None, *, notify_unavailable: bool
    ) -> tuple[RunTools, SkillsOutcome]:
        """The servers' offers for one run with the skills step applied, and what the
        step decided. Never raises for a bad skills server.

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
            return await self._apply(tools, options, None)
        # The error of a failed listing is raised after the task group, so that it reaches
        # the caller as itself and not inside an exception group.
        failure: Exception | None = None
        result: tuple[RunTools, SkillsOutcome] | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(early.run)
            try:
                tools = await self.inner.run_tools(notify_unavailable=notify_unavailable)
                result = await self._apply(tools, options, early)
            except Exception as exc:
                failure = exc
            finally:
                early.cancel()
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def _early_fetch(self, options: SkillsOptions) -> _EarlyFetch | None:
        last = self._last_source
        if last is None or last.server.in_process or not self.inner.is_live(last.session):
            return None
        return _EarlyFetch(last, _tools_fetch(last, options.timeout))

    async def _apply(
        self, tools: RunTools, options: SkillsOptions, early: _EarlyFetch | None
    ) -> tuple[RunTools, SkillsOutcome]:
        source = _find_source(tools.servers)
        self._last_source = source
        fetch: Fetch | None = None
        if early is not None:
            if (
                source is not None
                and source.server is early.offer.server
                and source.session is early.offer.session
            ):
                fetch = early.result
            else:
                early.cancel()
        if source is None:
            return tools, SkillsOutcome(status="no_server")
        if fetch is None:
            fetch = _tools_fetch(source, options.timeout)
        name = source.server.name
        try:
            catalog = await fetch()
        except _CatalogFailure as exc:
            warning = (
                f"skills: auto-injection failed for server {name!r}: {exc}; running without "
                "a skill catalog, all of its tools stay available"
            )
            logger.warning("%s", warning)
            outcome = SkillsOutcome(status="failed", server=name, warning=warning)
            return replace(tools, warnings=(*tools.warnings, warning)), outcome
        for diagnostic in catalog.diagnostics:
            logger.warning("skills: %s", describe_diagnostic(diagnostic))
        if not catalog.skills:
            visible = tuple(t for t in source.tools if t.name not in ACTIVATION_TOOLS)
            offer = replace(source, tools=visible)
            outcome = SkillsOutcome(
                status="empty",
                server=name,
                hidden_tools=ACTIVATION_TOOLS,
                diagnostics=catalog.diagnostics,
            )
        else:
            block = render_catalog(catalog.skills)
            offer = replace(source, instructions=block)
            outcome = SkillsOutcome(
                status="injected",
                server=name,
                prompt_block=block,
                skills=catalog.skills,
                diagnostics=catalog.diagnostics,
            )
        servers = tuple(offer if s is source else s for s in tools.servers)
        return replace(tools, servers=servers), outcome
