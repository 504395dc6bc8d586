"""Skills auto-injection: detect -> fetch -> render -> filter.

On every run the agent looks, in loaded order, for the first server that exposes both
``list_skills`` and ``load_skill`` (the skills server's contract; its name is never
consulted). It calls ``list_skills`` with no argument, logs each diagnostics entry as a
warning, renders the catalog into a block appended to the system prompt and, when the
catalog is empty, hides that server's three activation tools for the run.

The pure pieces (`parse_catalog`, `render_catalog`, `find_skills_server`) know nothing of
sessions; `prepare_skills` ties them to a server's ``call_tool``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar
from xml.sax.saxutils import escape

import anyio
from mcp.types import CallToolResult, TextContent

from .tools.connections import ListedServer

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "CatalogPrefetch",
    "CatalogReplyError",
    "SkillEntry",
    "SkillsCatalog",
    "SkillsOutcome",
    "SkillsStep",
    "append_catalog",
    "apply_skills",
    "find_skills_server",
    "has_own_catalog",
    "parse_catalog",
    "prepare_skills",
    "render_catalog",
]

logger = logging.getLogger(__name__)

#: A server is the skills server when it exposes both of these tools itself.
DETECTION_TOOLS: frozenset[str] = frozenset({"list_skills", "load_skill"})
#: Hidden from the model for a run whose catalog is empty; list_skills and create_skill stay.
ACTIVATION_TOOLS: frozenset[str] = frozenset(
    {"load_skill", "load_skill_resource", "execute_skill_script"}
)
#: The first line of the block appended to the system prompt.
CATALOG_HEADING = "## Available Agent Skills"
_OWN_CATALOG_TAG = "<available_skills>"

_GUIDE = """\
Each skill below packages instructions, and often reference files and scripts, for one
kind of task. Before you start a task that matches a skill's description, load that skill
and follow it.

To load a skill:
- Call `load_skill` with the skill's name (preferred). Its result holds the
  skill's instructions inside <skill_content>, the files bundled with it inside
  <skill_resources>, and the skill's folder. Paths mentioned in the instructions are
  relative to that folder.
- Or, if you have a tool that reads files, read the SKILL.md at the skill's `path`.
  Relative paths inside it are resolved from the folder that contains that SKILL.md."""


class CatalogReplyError(ValueError):
    """A ``list_skills`` reply that is not the std-tools catalog JSON."""


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """One skill as the catalog lists it."""

    name: str
    description: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class SkillsCatalog:
    """A parsed ``list_skills`` reply."""

    skills: tuple[SkillEntry, ...]
    skills_dir: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    block: str | None = None
    """`render_catalog` of `skills`, or None when there is no skill."""


Status = Literal["disabled", "own_catalog", "no_server", "injected", "empty", "failed"]


@dataclass(slots=True)
class SkillsOutcome:
    """What the skills step decided for one run.

    Attributes:
        status: ``disabled`` (auto_inject_skills is false), ``own_catalog`` (the
            instructions already hold an <available_skills> block), ``no_server``,
            ``injected``, ``empty`` (the catalog has no skill) or ``failed``.
        server: the name of the detected skills server, if any.
        prompt_block: the text to append to the system prompt, or None.
        hidden_tools: tool names of the detected server to hide from the model this run.
        skills: the catalog's skills (empty unless ``injected``).
        warning: what went wrong, when ``failed``.
        diagnostics: the catalog's diagnostics entries (already logged).
    """

    status: Status
    server: str | None = None
    prompt_block: str | None = None
    hidden_tools: frozenset[str] = frozenset()
    skills: tuple[SkillEntry, ...] = ()
    warning: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()


def has_own_catalog(instructions: str | None) -> bool:
    """True when the instructions already carry an <available_skills> block."""
    return bool(instructions) and _OWN_CATALOG_TAG in (instructions or "")


S = TypeVar("S")


def find_skills_server(
    servers: Sequence[S], tool_names: Callable[[S], Collection[str]]
) -> S | None:
    """The first server, in the given order, that itself exposes list_skills and load_skill.

    Tools are checked per server, so two servers exposing one of the names each never
    combine into a skills server.
    """
    for server in servers:
        if set(tool_names(server)) >= DETECTION_TOOLS:
            return server
    return None


def _reply_text(result: CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    if texts:
        return "".join(texts)
    structured = result.structured_content
    if isinstance(structured, dict):
        inner = structured.get("result")
        if isinstance(inner, str):
            return inner
        return json.dumps(structured)
    raise CatalogReplyError("the reply has no text content")


def parse_catalog(result: CallToolResult) -> SkillsCatalog:
    """Read a ``list_skills`` result; older payloads without path or diagnostics work.

    Raises:
        CatalogReplyError: the call failed or the reply is not the catalog JSON.
    """
    if result.is_error:
        detail = "".join(b.text for b in result.content if isinstance(b, TextContent))
        raise CatalogReplyError(f"list_skills returned an error: {detail or 'no message'}")
    return _catalog_from_text(_reply_text(result))


@functools.lru_cache(maxsize=16)
def _catalog_from_text(text: str) -> SkillsCatalog:
    # Cached by the reply's text: an unchanged catalog is parsed and rendered once, so a
    # warm run pays for hashing the text instead.
    try:
        payload = json.loads(text)
    except ValueError:
        raise CatalogReplyError(
            f"list_skills did not return JSON (it began {text[:60]!r})"
        ) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("skills"), list):
        raise CatalogReplyError("list_skills returned JSON without a 'skills' array")
    skills: list[SkillEntry] = []
    for index, item in enumerate(payload["skills"]):
        if not isinstance(item, dict):
            raise CatalogReplyError(f"skills[{index}] is not an object")
        name, description = item.get("name"), item.get("description")
        if not isinstance(name, str) or not isinstance(description, str):
            raise CatalogReplyError(f"skills[{index}] lacks a string 'name' and 'description'")
        path = item.get("path")
        skills.append(SkillEntry(name, description, path if isinstance(path, str) else None))
    raw_diagnostics = payload.get("diagnostics")
    diagnostics = tuple(
        d if isinstance(d, dict) else {"message": str(d)}
        for d in (raw_diagnostics if isinstance(raw_diagnostics, list) else [])
        if d
    )
    skills_dir = payload.get("skills_dir")
    return SkillsCatalog(
        skills=tuple(skills),
        skills_dir=skills_dir if isinstance(skills_dir, str) else None,
        diagnostics=diagnostics,
        block=render_catalog(skills) if skills else None,
    )


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def render_catalog(skills: Sequence[SkillEntry]) -> str:
    """The block appended to the system prompt for a non-empty catalog."""
    lines = [CATALOG_HEADING, "", _GUIDE, "", _OWN_CATALOG_TAG]
    for skill in skills:
        path = f' path="{_attr(skill.path)}"' if skill.path is not None else ""
        lines.append(
            f'  <skill name="{_attr(skill.name)}"{path}>{escape(skill.description)}</skill>'
        )
    lines.append("</available_skills>")
    return "\n".join(lines)


def _describe(diagnostic: Mapping[str, Any]) -> str:
    skill = diagnostic.get("skill") or "?"
    level = diagnostic.get("level") or "warning"
    code = diagnostic.get("code")
    message = diagnostic.get("message") or ""
    head = f"{skill}: {level}" + (f" [{code}]" if code else "")
    return f"{head}: {message}"


CallTool = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]


async def prepare_skills(
    *,
    enabled: bool,
    instructions: str | None,
    server_name: str | None,
    call_tool: CallTool | None,
    timeout_s: float,
) -> SkillsOutcome:
    """Run the skills step for one run against the already detected server.

    Args:
        enabled: the agent's auto_inject_skills.
        instructions: the agent's instructions (checked for its own catalog).
        server_name: the detected skills server's name, or None when there is none.
        call_tool: calls a tool of that server.
        timeout_s: seconds to wait for list_skills.

    Never raises for a bad server: a failure becomes ``status="failed"`` with one
    WARNING record naming the server.
    """
    if not enabled:
        return SkillsOutcome(status="disabled")
    if has_own_catalog(instructions):
        logger.info(
            "skills: the instructions already contain an <available_skills> block; "
            "auto-injection skipped for this run"
        )
        return SkillsOutcome(status="own_catalog")
    if server_name is None or call_tool is None:
        return SkillsOutcome(status="no_server")
    try:
        with anyio.fail_after(timeout_s if math.isfinite(timeout_s) else None):
            result = await call_tool("list_skills", {})
        catalog = parse_catalog(result)
    except TimeoutError:
        reason = f"list_skills did not answer within {timeout_s:g} s"
        return _failed(server_name, reason)
    except CatalogReplyError as exc:
        return _failed(server_name, str(exc))
    except Exception as exc:  # a broken server must never take the run down
        return _failed(server_name, f"list_skills raised {type(exc).__name__}: {exc}")
    for diagnostic in catalog.diagnostics:
        logger.warning("skills: %s", _describe(diagnostic))
    if not catalog.skills:
        return SkillsOutcome(
            status="empty",
            server=server_name,
            hidden_tools=ACTIVATION_TOOLS,
            diagnostics=catalog.diagnostics,
        )
    return SkillsOutcome(
        status="injected",
        server=server_name,
        prompt_block=catalog.block,
        skills=catalog.skills,
        diagnostics=catalog.diagnostics,
    )


def _failed(server_name: str, reason: str) -> SkillsOutcome:
    warning = (
        f"skills: auto-injection failed for server {server_name!r}: {reason}; "
        "running without a skill catalog, all of its tools stay available"
    )
    logger.warning("%s", warning)
    return SkillsOutcome(status="failed", server=server_name, warning=warning)


def _tool_caller(listed: ListedServer) -> CallTool:
    """Calls a tool of `listed` by its own name (the server's tool prefix added)."""
    session = listed.session
    prefix = f"{listed.server.tool_prefix}_" if listed.server.tool_prefix else ""

    async def call_tool(name: str, arguments: dict[str, Any]) -> CallToolResult:
        return await session.call_tool(prefix + name, arguments)

    return call_tool


class CatalogPrefetch:
    """A ``list_skills`` call started while the run's tool lists are still being fetched.

    The agent starts one on the session that was the skills server on its previous run,
    so that over a pipe or a network the catalog and the tool lists travel at the same
    time instead of one after the other. `apply_skills` uses its answer only when that
    session is detected again this run; otherwise the call is cancelled and ignored.

    Args:
        server: the server to ask, as listed on the previous run.
        timeout_s: seconds the call may take, as for a call made after the listing.
    """

    def __init__(self, server: ListedServer, timeout_s: float) -> None:
        self.session = server.session
        self._call_tool = _tool_caller(server)
        self._timeout = timeout_s
        self._done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._result: CallToolResult | None = None
        self._error: Exception | None = None

    async def run(self) -> None:
        """Make the call; its outcome (result or exception) is kept, never raised."""
        try:
            with (
                self._scope,
                anyio.fail_after(self._timeout if math.isfinite(self._timeout) else None),
            ):
                self._result = await self._call_tool("list_skills", {})
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()

    def cancel(self) -> None:
        """Stop the call if it is still running (its answer is no longer wanted)."""
        self._scope.cancel()

    async def result(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """The call's result, or its exception raised again (a `CallTool` for
        `prepare_skills`)."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise TimeoutError("list_skills was cancelled before it answered")
        return self._result


@dataclass(frozen=True, slots=True)
class SkillsStep:
    """The skills step applied to one run's servers.

    Attributes:
        system_prompt: the instructions with the catalog appended (or unchanged).
        servers: the servers in loaded order; the skills server's activation tools are
            left out when the catalog is empty.
        outcome: what was decided, for `RunResult.skills`.
    """

    system_prompt: str | None
    servers: tuple[ListedServer, ...]
    outcome: SkillsOutcome
    detected: ListedServer | None = None


def _own_name(listed: ListedServer, tool_name: str) -> str:
    prefix = listed.server.tool_prefix
    if prefix and tool_name.startswith(f"{prefix}_"):
        return tool_name[len(prefix) + 1 :]
    return tool_name


def append_catalog(instructions: str | None, block: str | None) -> str | None:
    """The system prompt of a run: the instructions, then a blank line and the catalog."""
    if block is None:
        return instructions
    return f"{instructions.rstrip()}\n\n{block}" if instructions else block


async def apply_skills(
    servers: Sequence[ListedServer],
    *,
    enabled: bool,
    instructions: str | None,
    timeout_s: float,
    prefetch: CatalogPrefetch | None = None,
) -> SkillsStep:
    """Detect the skills server among `servers`, fetch and render its catalog, and hide
    its activation tools when the catalog is empty. Never raises for a bad server.

    `prefetch`, a catalog call already under way, answers for the detected server when
    it was made on that server's session; otherwise it is cancelled.
    """
    detected = (
        find_skills_server(servers, lambda s: [_own_name(s, t.name) for t in s.tools])
        if enabled and not has_own_catalog(instructions)
        else None
    )
    call_tool: CallTool | None = None
    if prefetch is not None:
        if detected is not None and detected.session is prefetch.session:
            call_tool = prefetch.result
        else:
            prefetch.cancel()
    if detected is not None and call_tool is None:
        call_tool = _tool_caller(detected)

    outcome = await prepare_skills(
        enabled=enabled,
        instructions=instructions,
        server_name=detected.server.name if detected is not None else None,
        call_tool=call_tool,
        timeout_s=timeout_s,
    )
    result = tuple(servers)
    if detected is not None and outcome.hidden_tools:
        visible = tuple(
            t for t in detected.tools if _own_name(detected, t.name) not in outcome.hidden_tools
        )
        result = tuple(replace(s, tools=visible) if s is detected else s for s in servers)
    return SkillsStep(
        system_prompt=append_catalog(instructions, outcome.prompt_block),
        servers=result,
        outcome=outcome,
        detected=detected,
    )
