"""Which skills one agent is offered: its scope (``skills_include`` / ``skills_exclude``)
and the tools a skill needs.

- `SkillScope`: glob patterns over skill names (fnmatch, case-sensitive). A skill is in
  scope when no exclude pattern matches its name and, when include patterns are given, one
  of them does.
- `Needs`: the tools a skill declares it needs: its frontmatter ``metadata`` key
  ``requires-tools`` (tool names separated by spaces, ``server:tool`` to name the server)
  and the MCP servers its ``agents/openai.yaml`` lists under ``dependencies.tools`` with
  ``type: mcp`` (the std-tools server reads that file and sends both in its
  ``list_skills`` answer as the top-level ``requires`` object, which it keeps whole when
  it cuts the list to its output limit).
- `Offered`: the decision of one run: the scope, and each skill's missing tools against
  the tools the agent has this run (`AgentTools`).
- `GuardedSkillsSession`: a skills server's session as the model reaches it. ``list_skills``
  and ``search_skills`` answers lose the skills not offered before the model sees them;
  ``load_skill``, ``load_skill_resource`` and ``execute_skill_script`` on such a skill are
  answered with a tool error that says why, and never reach the server.

Nothing here reads a file or the environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final

from mcp.types import CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent

from ..tools.base import ServerTools
from ..tools.routing import result_text

__all__ = [
    "REQUIRES_KEY",
    "SKILL_TOOLS",
    "AgentTools",
    "GuardedSkillsSession",
    "Needs",
    "Offered",
    "SkillScope",
    "needs_from_metadata",
    "parse_requires",
]

REQUIRES_KEY: Final = "requires-tools"
"""The frontmatter ``metadata`` key that lists the tools a skill needs."""
#: The tools that take a skill by name (``skill_name``) and act on that one skill.
NAMED_SKILL_TOOLS: Final = frozenset({"load_skill", "load_skill_resource", "execute_skill_script"})
#: The tools whose answers list skills (filtered before the model sees them).
LISTING_TOOLS: Final = frozenset({"list_skills", "search_skills"})
#: Every tool of a skills server the guard acts on.
SKILL_TOOLS: Final = NAMED_SKILL_TOOLS | LISTING_TOOLS
_SPACES = re.compile(r"[\s,]+")


@dataclass(frozen=True, slots=True)
class SkillScope:
    """``skills_include`` and ``skills_exclude``: glob patterns over skill names.

    Attributes:
        include: when not None, only skills whose name one of these matches are offered.
        exclude: skills whose name one of these matches are never offered.
    """

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    @property
    def limited(self) -> bool:
        """Whether the scope leaves any name out at all."""
        return self.include is not None or bool(self.exclude)

    def allows(self, name: str) -> bool:
        """Whether the skill `name` is in scope."""
        if any(fnmatchcase(name, pattern) for pattern in self.exclude):
            return False
        return self.include is None or any(fnmatchcase(name, p) for p in self.include)

    def describe(self) -> str:
        """The scope as the settings that make it, for messages."""
        parts = []
        if self.include is not None:
            parts.append(f"skills_include={list(self.include)!r}")
        if self.exclude:
            parts.append(f"skills_exclude={list(self.exclude)!r}")
        return ", ".join(parts) or "no scope"


@dataclass(frozen=True, slots=True)
class Needs:
    """What one skill needs to be of use.

    Attributes:
        tools: tool names, each either ``tool`` (any server may have it) or
            ``server:tool`` (that server must have it).
        servers: MCP servers that must be connected (``agents/openai.yaml``).
    """

    tools: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tools or self.servers)

    def merged(self, other: Needs) -> Needs:
        """Both lists of needs, without repeats."""
        return Needs(
            tuple(dict.fromkeys((*self.tools, *other.tools))),
            tuple(dict.fromkeys((*self.servers, *other.servers))),
        )


def _words(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(word for word in _SPACES.split(value) if word)
    if isinstance(value, list | tuple):
        return tuple(w for item in value if isinstance(item, str) for w in _words(item))
    return ()


def needs_from_metadata(metadata: Any) -> Needs:
    """The tools a skill's frontmatter ``metadata`` names under ``requires-tools``."""
    if not isinstance(metadata, Mapping):
        return Needs()
    return Needs(tools=_words(metadata.get(REQUIRES_KEY)))


def parse_requires(value: Any) -> dict[str, Needs]:
    """A ``list_skills`` answer's top-level ``requires`` object: skill name -> its needs
    (``{"tools": [...], "servers": [...]}``); anything malformed is ignored."""
    if not isinstance(value, Mapping):
        return {}
    found: dict[str, Needs] = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not isinstance(entry, Mapping):
            continue
        needs = Needs(_words(entry.get("tools")), _words(entry.get("servers")))
        if needs:
            found[name] = needs
    return found


@dataclass(frozen=True, slots=True)
class AgentTools:
    """The tools an agent has in one run, to check needs against.

    Attributes:
        names: every tool name, as its server lists it and as the model sees it.
        by_server: server name -> the names its tools have on it.
    """

    names: frozenset[str]
    by_server: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, servers: Iterable[ServerTools]) -> AgentTools:
        """The tools of the servers reachable this run."""
        names: set[str] = set()
        by_server: dict[str, set[str]] = {}
        for offer in servers:
            prefix = offer.server.tool_prefix
            own = {tool.name for tool in offer.tools}
            names |= own
            if prefix:
                names |= {f"{prefix}_{name}" for name in own}
            by_server.setdefault(offer.server.name, set()).update(own)
        return cls(frozenset(names), {k: frozenset(v) for k, v in by_server.items()})

    def missing(self, needs: Needs) -> tuple[str, ...]:
        """What of `needs` this agent lacks, as named to the model and the caller: tool
        names as the skill gives them, servers as ``server (MCP server)``."""
        lacking: list[str] = []
        for tool in needs.tools:
            server, sep, name = tool.partition(":")
            if sep:
                if name not in self.by_server.get(server, frozenset()):
                    lacking.append(tool)
            elif tool not in self.names:
                lacking.append(tool)
        lacking.extend(f"{s} (MCP server)" for s in needs.servers if s not in self.by_server)
        return tuple(lacking)


@dataclass(frozen=True, slots=True)
class Offered:
    """Which skills one run offers.

    Attributes:
        scope: the agent's scope.
        needs: skill name -> what it needs (the skills that declare anything).
        tools: the tools the agent has this run.
    """

    scope: SkillScope
    needs: Mapping[str, Needs] = field(default_factory=dict)
    tools: AgentTools | None = None

    def missing(self, name: str) -> tuple[str, ...]:
        """What the skill `name` needs that the agent lacks (empty: nothing)."""
        needs = self.needs.get(name)
        if not needs or self.tools is None:
            return ()
        return self.tools.missing(needs)

    def refusal(self, name: str) -> str | None:
        """Why the skill `name` is not offered, in words for the model; None when it is."""
        if not self.scope.allows(name):
            return (
                f"the skill {name!r} is outside this agent's skill scope "
                f"({self.scope.describe()}), so it is not offered and cannot be loaded, read "
                "or run here; work without it."
            )
        lacking = self.missing(name)
        if lacking:
            return (
                f"the skill {name!r} needs tools this agent does not have "
                f"({', '.join(lacking)}), so it is not offered and cannot be loaded, read or "
                "run here; work without it."
            )
        return None

    @property
    def active(self) -> bool:
        """Whether any skill could be held back (a scope, or declared needs)."""
        return self.scope.limited or bool(self.needs)


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _filtered_answer(result: CallToolResult, keep: Callable[[str], bool]) -> CallToolResult:
    """A ``list_skills`` or ``search_skills`` answer without the skills `keep` refuses
    (in its text and its structured content); any other answer unchanged."""
    if result.is_error:
        return result
    try:
        payload = json.loads(result_text(result))
    except ValueError:
        return result
    if not isinstance(payload, dict) or not isinstance(payload.get("skills"), list):
        return result
    skills: list[Any] = payload["skills"]
    kept = [s for s in skills if not isinstance(s, dict) or keep(str(s.get("name", "")))]
    if len(kept) == len(skills):
        return result
    removed = len(skills) - len(kept)
    payload["skills"] = kept
    count = payload.get("count")
    if isinstance(count, int) and not isinstance(count, bool):
        payload["count"] = max(count - removed, len(kept))
    requires = payload.get("requires")
    if isinstance(requires, dict):
        payload["requires"] = {k: v for k, v in requires.items() if keep(str(k))}
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


class GuardedSkillsSession:
    """A skills server's session with the skills a run does not offer held back (see the
    module docstring); every other call goes to the server unchanged.

    Args:
        inner: the server's session.
        refusal: skill name -> why it is not offered (None: it is).
    """

    def __init__(self, inner: Any, refusal: Callable[[str], str | None]) -> None:
        self.inner = inner
        self._refusal = refusal

    def __getattr__(self, name: str) -> Any:
        # Whatever else the server's session offers (read_resource, capabilities, ...).
        return getattr(self.inner, name)

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> ListToolsResult:
        """The server's own tools."""
        result: ListToolsResult = await self.inner.list_tools(params=params)
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Refuse a call on a skill not offered; filter the answers that list skills."""
        if name in NAMED_SKILL_TOOLS:
            skill = (arguments or {}).get("skill_name")
            if isinstance(skill, str):
                reason = self._refusal(skill)
                if reason is not None:
                    return _error(f"refused by the agent: {reason}")
        result: CallToolResult = await self.inner.call_tool(name, arguments)
        if name in LISTING_TOOLS:
            return _filtered_answer(result, lambda skill: self._refusal(skill) is None)
        return result


def guard_offers(
    servers: Sequence[ServerTools],
    refusal: Callable[[str], str | None],
    *,
    guarded_already: Callable[[Any], bool] = lambda session: False,
) -> tuple[ServerTools, ...]:
    """`servers` with the session of each one that has a skills tool guarded (except the
    sessions `guarded_already` says hold back the skills themselves)."""
    guarded: list[ServerTools] = []
    for offer in servers:
        if (
            any(tool.name in SKILL_TOOLS for tool in offer.tools)
            and not isinstance(offer.session, GuardedSkillsSession)
            and not guarded_already(offer.session)
        ):
            offer = ServerTools(
                server=offer.server,
                session=GuardedSkillsSession(offer.session, refusal),
                tools=offer.tools,
                instructions=offer.instructions,
            )
        guarded.append(offer)
    return tuple(guarded)
