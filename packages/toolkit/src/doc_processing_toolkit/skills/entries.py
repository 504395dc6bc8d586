"""Skill catalogs as data: the entries, the ``list_skills`` and ``search_skills`` replies
read into them, and what the skills step reports for a run.

Nothing here touches a session: `parse_catalog` and `parse_search` read a tool result.
The block the model reads is written from these entries by `block` (a `Rendered` block is
kept here, memoized on its `SkillsCatalog`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal
from xml.sax.saxutils import unescape

from mcp.types import CallToolResult

from ..tools.routing import result_text
from .ranking import SkillIndex
from .scope import Needs, SkillScope, needs_from_metadata, parse_requires

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "FIND_BY_SEARCH",
    "LOGGER_NAME",
    "OWN_CATALOG_TAG",
    "SEARCH_TOOL",
    "CatalogReplyError",
    "Ranking",
    "Rendered",
    "SkillEntry",
    "SkillSource",
    "SkillsCatalog",
    "SkillsOutcome",
    "SourceTraits",
    "describe_diagnostic",
    "has_own_catalog",
    "parse_catalog",
    "parse_search",
]

LOGGER_NAME = "doc_processing_toolkit.skills"
"""Every record of skills auto-injection is logged under this one name."""

#: A server is a skills server when it exposes both of these tools itself.
DETECTION_TOOLS: frozenset[str] = frozenset({"list_skills", "load_skill"})
#: The server's tool that finds skills by a request's words (called only when listed).
SEARCH_TOOL = "search_skills"
#: Hidden from the model for a run whose catalog is empty; list_skills and create_skill stay.
ACTIVATION_TOOLS: frozenset[str] = frozenset(
    {"load_skill", "load_skill_resource", "execute_skill_script", SEARCH_TOOL}
)
#: The first line of the block appended to the system prompt.
CATALOG_HEADING = "## Available Agent Skills"
#: The tag of the block that lists the skills (instructions holding it have their own).
OWN_CATALOG_TAG = "<available_skills>"


class CatalogReplyError(ValueError):
    """A catalog reply that cannot be read (not the std-tools JSON, not a skills/list
    result, or an error)."""


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """One skill as the catalog lists it.

    Attributes:
        name: the skill's name.
        description: what the skill is for.
        path: the SKILL.md path on the skills server's machine (std-tools' tools).
        uri: the SKILL.md resource URI (an MCP Skills extension server).
        hides_text: the server said the skill hides text (std-tools' ``hidden_text``
            diagnostic), which it has already shown escaped.
    """

    name: str
    description: str
    path: str | None = None
    uri: str | None = None
    hides_text: bool = False


@dataclass(frozen=True, slots=True)
class Rendered:
    """A catalog block and what had to be cut to fit the budget.

    Attributes:
        block: the text appended to the system prompt.
        shortened: the names of the skills whose description was shortened.
        left_out: the names of the skills left out of the block.
    """

    block: str
    shortened: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillsCatalog:
    """A parsed catalog reply.

    Attributes:
        skills: the entries, in the server's order.
        skills_dir: the folder the server read (std-tools' tools).
        diagnostics: the server's diagnostics entries (std-tools' tools).
        count: how many skills the server says it has (std-tools' ``count``), None when
            it does not say. More than ``len(skills)`` when the server cut its list.
        truncated: the server's note when it cut its answer to fit its output limit
            (std-tools' ``truncated``), else None.
        rendered: blocks already rendered from this catalog, by how they were rendered
            (a catalog read again unchanged is rendered once).
        lines: each skill's ``<skill>`` line, by the description limit it was rendered
            with (0: in full), aligned with `skills`.
        hides: whether each skill's line shows hidden text escaped, aligned with
            `skills`: empty until a block is first rendered from this catalog.
        index: the full-text index over the skills, built the first time it ranks.
        requires: skill name -> the tools it needs, for every skill of the server that
            declares any (std-tools' top-level ``requires``, kept when the list is cut,
            and each listed entry's ``metadata`` ``requires-tools``).
    """

    skills: tuple[SkillEntry, ...]
    skills_dir: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    count: int | None = None
    truncated: str | None = None
    requires: Mapping[str, Needs] = field(default_factory=dict, compare=False, repr=False)
    rendered: dict[Any, Rendered] = field(default_factory=dict, compare=False, repr=False)
    lines: dict[int, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    hides: list[tuple[bool, ...]] = field(default_factory=list, compare=False, repr=False)
    index: SkillIndex = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", SkillIndex(self.skills))

    @property
    def unlisted(self) -> int | None:
        """How many skills the server has but did not list: 0 for a whole list, None when
        it cut its list without saying how many skills it has."""
        if self.count is not None:
            return max(self.count - len(self.skills), 0)
        return None if self.truncated is not None else 0


#: The longest ``skills:`` progress line; names that do not fit are counted instead.
PROGRESS_LINE_LIMIT = 299
_BLOCK_NAME = re.compile(r'^  <skill name="([^"]*)"', re.MULTILINE)


def _names_within(head: str, names: list[str], limit: int) -> str:
    """`head` followed by as many of `names` as fit in `limit` characters, then how many
    more there are."""
    line = head
    for index, name in enumerate(names):
        rest = len(names) - index - 1
        candidate = f"{line}{', ' if index else ': '}{name}"
        if len(candidate) + len(f" and {rest} more" if rest else "") > limit:
            return f"{line} and {len(names) - index} more" if index else line
        line = candidate
    return line


Status = Literal["disabled", "own_catalog", "no_server", "injected", "stale", "empty", "failed"]


class SkillSource(StrEnum):
    """How the skills source serves its catalog; each member equals its name, as
    `SkillsOutcome.source` reports it. What sets one source apart from another is data,
    in `SourceTraits` (one entry per source in `_TRAITS`): a new source is one member and
    one entry there, plus its catalog call in `toolset`.
    """

    TOOLS = "tools"
    """The server's own ``list_skills`` and ``load_skill`` tools (std-tools)."""
    EXTENSION = "extension"
    """The MCP Skills extension (``skills/list``), read through the toolkit's own tools."""

    @property
    def traits(self) -> SourceTraits:
        """What this source does differently (see `SourceTraits`)."""
        return _TRAITS[self]


@dataclass(frozen=True, slots=True)
class SourceTraits:
    """How one `SkillSource` differs from the others.

    Attributes:
        guide: the block's guide for the model; ``{server}`` stands for the server's
            name, quoted.
        finder: how the model finds the skills the block does not show when the server
            listed them all.
        finder_cut: the same when the server cut its list and offers no search.
        hidden_when_empty: the server's tools hidden from the model when the catalog is
            empty.
        searches: the server's own ``search_skills`` (when listed) ranks the skills.
        by_uri: skills are named by the URI of their SKILL.md and loaded through the
            toolkit's own tools (`extension.EXTENSION_TOOL_NAMES`).
        held: the server's answer is kept, and reused without asking, while its time to
            live lasts.
    """

    guide: str
    finder: str
    finder_cut: str
    hidden_when_empty: frozenset[str]
    searches: bool
    by_uri: bool
    held: bool

    def guide_for(self, server: str) -> str:
        """The guide with `server` (already quoted for the block) in place."""
        return self.guide.replace("{server}", server)


_TOOLS_GUIDE = """\
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

_EXTENSION_GUIDE = """\
Each skill below packages instructions, and often reference files, for one kind of task.
Before you start a task that matches a skill's description, load that skill and follow it.

These skills are published by the MCP server {server}; treat their content as that
server's text. To load a skill, call `load_skill` with the skill's `uri`. Its result holds
the instructions inside <skill_content> and the skill's other files inside
<skill_resources>; read one with `load_skill_resource` and its uri. Relative paths in the
instructions resolve against the skill's uri without the final /SKILL.md. Nothing in these
skills is run for you."""

#: How the model reaches the skills a block does not show, when it may search for them.
FIND_BY_SEARCH = (
    f"To find another, call `{SEARCH_TOOL}` with a few words about what you need; "
    "`load_skill` loads any skill by its exact name."
)
_FIND_BY_LIST = (
    "Call `list_skills` to see them all; `load_skill` loads any skill by its exact name."
)
_FIND_BY_NAME = (
    "`list_skills` cannot list them all either (its answer is cut short too), but "
    "`load_skill` loads any skill by its exact name."
)
_FIND_BY_URI = "Call `list_skills` to see them all; `load_skill` loads any of them by its `uri`."

_TRAITS: dict[SkillSource, SourceTraits] = {
    # guide, finder, finder_cut, hidden_when_empty, searches, by_uri, held
    SkillSource.TOOLS: SourceTraits(
        _TOOLS_GUIDE, _FIND_BY_LIST, _FIND_BY_NAME, ACTIVATION_TOOLS, True, False, False
    ),
    SkillSource.EXTENSION: SourceTraits(
        _EXTENSION_GUIDE, _FIND_BY_URI, _FIND_BY_URI, frozenset(), False, True, True
    ),
}

Ranking = Literal["search_skills", "local"]


@dataclass(slots=True)
class SkillsOutcome:
    """What the skills step decided for one run.

    Attributes:
        status: ``disabled`` (auto_inject_skills is false), ``own_catalog`` (the
            instructions already hold an <available_skills> block), ``no_server``,
            ``injected``, ``stale`` (the catalog could not be fetched and the last good
            one, no older than ``skills_stale_after``, was injected with a notice),
            ``empty`` (the catalog has no skill) or ``failed``.
        server: the name of the detected skills server, if any.
        prompt_block: the text appended to the system prompt, or None.
        hidden_tools: tool names of the detected server hidden from the model this run.
        skills: the skills known this run, shown or not: the catalog's, then those only
            ``search_skills`` found (empty unless ``injected`` or ``stale``).
        warning: the WARNING logged for this step, if any: what went wrong when
            ``failed`` or ``stale``, else the one that says skills were left out.
        diagnostics: the catalog's diagnostics entries (already logged).
        source: how the catalog was had: ``tools`` (the server's list_skills and
            load_skill tools) or ``extension`` (the MCP Skills extension), None when no
            server was detected.
        shortened: the skills whose description was shortened to fit
            ``skills_catalog_budget``.
        left_out: the names of the skills the toolkit knows of (listed by the server, or
            found by its ``search_skills``) that the block does not show. A server that
            cut its list names no more, so this can be fewer than `left_out_count`.
        left_out_count: how many of the server's skills the block does not show: those
            of `left_out` and those the server did not list (its ``count`` minus the
            skills known). The model is told this number and how to find them.
        total: how many skills the server has: its ``count`` when it gives one, else the
            number of skills known; None when it cut its list without saying (then
            `left_out_count` counts only `left_out`).
        ranking: how the shown skills were chosen when some are left out:
            ``search_skills`` (the server's search, then the toolkit's own index) or
            ``local`` (the toolkit's index over the skills known); None when every skill
            is shown.
        stale_age: when ``stale``, the age in seconds of the catalog injected.
        rejected: the skills of an extension server refused in this run, by the URI of
            their SKILL.md, each with why: a file that did not match the listing (size,
            digest or frontmatter) in this run, or in an earlier one while ``skills/list``
            lists the skill unchanged. No file of a rejected skill is read, and its line
            is left out of the catalog.
        scope: the agent's ``skills_include`` / ``skills_exclude`` (None: no scope).
        out_of_scope: the names of the skills known this run that the scope leaves out:
            not in the block, not in list_skills or search_skills answers, and refused
            by the toolkit when the model asks to load, read or run them.
        missing_tools: the skills not offered because the agent lacks tools they need
            (``requires-tools``, or an MCP server their ``agents/openai.yaml`` names):
            skill name -> what is missing. They are held back like out-of-scope skills.
    """

    status: Status
    server: str | None = None
    prompt_block: str | None = None
    hidden_tools: frozenset[str] = frozenset()
    skills: tuple[SkillEntry, ...] = ()
    warning: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    source: SkillSource | None = None
    shortened: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    left_out_count: int = 0
    total: int | None = None
    ranking: Ranking | None = None
    stale_age: float | None = None
    rejected: dict[str, str] = field(default_factory=dict)
    scope: SkillScope | None = None
    out_of_scope: tuple[str, ...] = ()
    missing_tools: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def progress_line(self, limit: int = PROGRESS_LINE_LIMIT) -> str | None:
        """The step in one line of at most `limit` characters, as ``dpt-agent`` prints it
        (``skills: 3 from 'kit': a, b, c``; the skills in the block's order, best match
        first; names that do not fit counted), or None when there is nothing to say."""
        held = len(self.missing_tools) + len(self.out_of_scope)
        withheld = f", {held} not offered to this agent" if held else ""
        if self.status == "injected" and self.ranking is None:
            names = [skill.name for skill in self.skills]
            head = f"skills: {len(names)} from {self.server!r}{withheld}"
            return _names_within(head, names, limit)
        if self.status == "injected":
            shown = [
                unescape(name, {"&quot;": '"'})
                for name in _BLOCK_NAME.findall(self.prompt_block or "")
            ]
            total = self.total if self.total is not None else "more"
            head = (
                f"skills: {len(shown)} of {total} from {self.server!r} (the best match for "
                f"the prompt; {self.left_out_count} not shown{withheld})"
            )
            return _names_within(head, shown, limit)
        if self.status == "empty":
            return f"skills: none yet in {self.server!r}{withheld}"
        return None


def has_own_catalog(instructions: str | None) -> bool:
    """True when the instructions already carry an <available_skills> block."""
    return bool(instructions) and OWN_CATALOG_TAG in (instructions or "")


def parse_catalog(result: CallToolResult) -> SkillsCatalog:
    """Read a ``list_skills`` result; older payloads without path or diagnostics work.

    Raises:
        CatalogReplyError: the call failed or the reply is not the catalog JSON.
    """
    text = _reply_text(result, "list_skills")
    if not result.content and not isinstance(result.structured_content, dict):
        raise CatalogReplyError("the reply has no text content")
    structured = result.structured_content
    if not result.content and isinstance(structured, dict):
        inner = structured.get("result")
        if isinstance(inner, str):
            text = inner
    return _catalog_from_text(text)


@functools.lru_cache(maxsize=16)
def _catalog_from_text(text: str) -> SkillsCatalog:
    # Cached by the reply's text: an unchanged catalog is parsed once, so a warm run pays
    # for hashing the text instead.
    payload = _json(text, "list_skills")
    if not isinstance(payload, dict):
        raise CatalogReplyError("list_skills returned JSON without a 'skills' array")
    skills = _entries(payload.get("skills"), "list_skills")
    requires = dict(parse_requires(payload.get("requires")))
    for item in payload["skills"]:
        needs = needs_from_metadata(item.get("metadata"))
        if needs:
            name = item["name"]
            requires[name] = requires[name].merged(needs) if name in requires else needs
    raw_diagnostics = payload.get("diagnostics")
    diagnostics = tuple(
        d if isinstance(d, dict) else {"message": str(d)}
        for d in (raw_diagnostics if isinstance(raw_diagnostics, list) else [])
        if d
    )
    hiding = {
        str(d.get("skill", "")).rsplit("/", 1)[-1]
        for d in diagnostics
        if d.get("code") == "hidden_text"
    }
    if hiding:
        skills = tuple(replace(s, hides_text=True) if s.name in hiding else s for s in skills)
    skills_dir = payload.get("skills_dir")
    count = payload.get("count")
    truncated = payload.get("truncated")
    return SkillsCatalog(
        skills=skills,
        skills_dir=skills_dir if isinstance(skills_dir, str) else None,
        diagnostics=diagnostics,
        count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        truncated=truncated if isinstance(truncated, str) else None,
        requires=requires,
    )


def _entries(items: Any, tool: str) -> tuple[SkillEntry, ...]:
    if not isinstance(items, list):
        raise CatalogReplyError(f"{tool} returned JSON without a 'skills' array")
    skills: list[SkillEntry] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise CatalogReplyError(f"{tool}: skills[{index}] is not an object")
        name, description = item.get("name"), item.get("description")
        if not isinstance(name, str) or not isinstance(description, str):
            raise CatalogReplyError(
                f"{tool}: skills[{index}] lacks a string 'name' and 'description'"
            )
        path = item.get("path")
        skills.append(SkillEntry(name, description, path if isinstance(path, str) else None))
    return tuple(skills)


def parse_search(result: CallToolResult) -> tuple[SkillEntry, ...]:
    """Read a ``search_skills`` result: its skills, best match first (a reply cut by the
    server's output limit gives the entries it kept).

    Raises:
        CatalogReplyError: the call failed or the reply is not the search JSON.
    """
    text = _reply_text(result, SEARCH_TOOL)
    payload: Any = result.structured_content
    if not isinstance(payload, dict) or "skills" not in payload:
        payload = _json(text, SEARCH_TOOL)
    if not isinstance(payload, dict):
        raise CatalogReplyError(f"{SEARCH_TOOL} returned JSON that is not an object")
    return _entries(payload.get("skills"), SEARCH_TOOL)


def _reply_text(result: CallToolResult, tool: str) -> str:
    """The text of `tool`'s reply.

    Raises:
        CatalogReplyError: the call failed.
    """
    text = result_text(result)
    if result.is_error:
        raise CatalogReplyError(f"{tool} returned an error: {text or 'no message'}")
    return text


def _json(text: str, tool: str) -> Any:
    """`text` of `tool`'s reply read as JSON.

    Raises:
        CatalogReplyError: the text is not JSON.
    """
    try:
        return json.loads(text)
    except ValueError:
        raise CatalogReplyError(f"{tool} did not return JSON (it began {text[:60]!r})") from None


def describe_diagnostic(diagnostic: Mapping[str, Any]) -> str:
    """One diagnostics entry as a log line: ``skill: level [code]: message``."""
    skill = diagnostic.get("skill") or "?"
    level = diagnostic.get("level") or "warning"
    code = diagnostic.get("code")
    message = diagnostic.get("message") or ""
    head = f"{skill}: {level}" + (f" [{code}]" if code else "")
    return f"{head}: {message}"
