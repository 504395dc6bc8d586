"""Skill catalogs as data: the entries, the std-tools ``list_skills`` reply, the block the
model reads, and what the skills step reports for a run.

Nothing here touches a session: `parse_catalog` reads a tool result, `render_catalog`
writes the block appended to the system prompt.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from xml.sax.saxutils import escape

from mcp.types import CallToolResult

from ..tools.routing import result_text

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "LOGGER_NAME",
    "SHORTENED_MARK",
    "CatalogReplyError",
    "Rendered",
    "SkillEntry",
    "SkillsCatalog",
    "SkillsOutcome",
    "append_catalog",
    "describe_diagnostic",
    "has_own_catalog",
    "parse_catalog",
    "render_catalog",
    "render_for",
]

LOGGER_NAME = "doc_processing_toolkit.skills"
"""Every record of skills auto-injection is logged under this one name."""
logger = logging.getLogger(LOGGER_NAME)

#: A server is a skills server when it exposes both of these tools itself.
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
  relative to that folder."""

_GUIDE_PATH = """
- Or, if you have a tool that reads files, read the SKILL.md at the skill's `path`.
  Relative paths inside it are resolved from the folder that contains that SKILL.md."""


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
    """

    name: str
    description: str
    path: str | None = None
    uri: str | None = None


@dataclass(frozen=True, slots=True)
class SkillsCatalog:
    """A parsed catalog reply.

    Attributes:
        skills: the entries, in the server's order.
        skills_dir: the folder the server read (std-tools' tools).
        diagnostics: the server's diagnostics entries (std-tools' tools).
        rendered: blocks already rendered from this catalog, by how they were rendered
            (a catalog read again unchanged is rendered once).
    """

    skills: tuple[SkillEntry, ...]
    skills_dir: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    rendered: dict[Any, Rendered] = field(default_factory=dict, compare=False, repr=False)


Status = Literal["disabled", "own_catalog", "no_server", "injected", "stale", "empty", "failed"]
Source = Literal["tools", "extension"]


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
        skills: the catalog's skills (empty unless ``injected``).
        warning: what went wrong, when ``failed``.
        diagnostics: the catalog's diagnostics entries (already logged).
        source: how the catalog was had: ``tools`` (the server's list_skills and
            load_skill tools) or ``extension`` (the MCP Skills extension), None when no
            server was detected.
        shortened: the skills whose description was shortened to fit
            ``skills_catalog_budget``.
        left_out: the skills left out of the block to fit ``skills_catalog_budget`` (the
            model is told how many, and that list_skills lists them all).
        stale_age: when ``stale``, the age in seconds of the catalog injected.
    """

    status: Status
    server: str | None = None
    prompt_block: str | None = None
    hidden_tools: frozenset[str] = frozenset()
    skills: tuple[SkillEntry, ...] = ()
    warning: str | None = None
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    source: Source | None = None
    shortened: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    stale_age: float | None = None


def has_own_catalog(instructions: str | None) -> bool:
    """True when the instructions already carry an <available_skills> block."""
    return bool(instructions) and _OWN_CATALOG_TAG in (instructions or "")


def parse_catalog(result: CallToolResult) -> SkillsCatalog:
    """Read a ``list_skills`` result; older payloads without path or diagnostics work.

    Raises:
        CatalogReplyError: the call failed or the reply is not the catalog JSON.
    """
    text = result_text(result)
    if result.is_error:
        raise CatalogReplyError(f"list_skills returned an error: {text or 'no message'}")
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
    )


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


_EXTENSION_GUIDE = """\
Each skill below packages instructions, and often reference files, for one kind of task.
Before you start a task that matches a skill's description, load that skill and follow it.

These skills are published by the MCP server {server}; treat their content as that
server's text. To load a skill, call `load_skill` with the skill's `uri`. Its result holds
the instructions inside <skill_content> and the skill's other files inside
<skill_resources>; read one with `load_skill_resource` and its uri. Relative paths in the
instructions resolve against the skill's uri without the final /SKILL.md. Nothing in these
skills is run for you."""


def render_catalog(skills: Sequence[SkillEntry]) -> str:
    """The block appended to the system prompt for a non-empty catalog of std-tools'
    tools (each skill with its ``path``)."""
    return _render(skills, guide=_GUIDE + _GUIDE_PATH, notes=())


def _render(skills: Sequence[SkillEntry], *, guide: str, notes: Sequence[str]) -> str:
    lines = [CATALOG_HEADING, "", guide, ""]
    for note in notes:
        lines.extend([note, ""])
    lines.append(_OWN_CATALOG_TAG)
    for skill in skills:
        where = ""
        if skill.uri is not None:
            where = f' uri="{_attr(skill.uri)}"'
        elif skill.path is not None:
            where = f' path="{_attr(skill.path)}"'
        lines.append(
            f'  <skill name="{_attr(skill.name)}"{where}>{escape(skill.description)}</skill>'
        )
    lines.append("</available_skills>")
    return "\n".join(lines)


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


#: The end of a description shortened to fit the budget.
SHORTENED_MARK = "…"
#: Descriptions are not shortened below this many characters; skills are left out instead.
_MIN_DESCRIPTION = 40


def _shorten(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, marked."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - len(SHORTENED_MARK), 1)]
    if " " in head.strip():
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:.-") + SHORTENED_MARK


def _budget_notes(shortened: int, left_out: int, total: int) -> tuple[str, ...]:
    notes = []
    if shortened:
        notes.append(
            f"Descriptions ending in {SHORTENED_MARK} are shortened to fit; `list_skills` "
            "gives them in full."
        )
    if left_out:
        notes.append(
            f"{left_out} of the {total} skills are not shown here, to keep this list short; "
            "call `list_skills` to see them all."
        )
    return tuple(notes)


def _fit(
    skills: tuple[SkillEntry, ...], guide: str, budget: int, notices: tuple[str, ...]
) -> Rendered:
    """The block within `budget` characters: descriptions shortened evenly first, then
    skills left out from the end of the list (`notices` come first, always)."""
    full = _render(skills, guide=guide, notes=notices)
    if len(full) <= budget:
        return Rendered(full)
    longest = max((len(s.description) for s in skills), default=0)

    def attempt(limit: int, keep: int) -> tuple[str, tuple[str, ...]]:
        shown = tuple(replace(s, description=_shorten(s.description, limit)) for s in skills[:keep])
        cut = tuple(a.name for a, b in zip(skills, shown, strict=False) if a != b)
        notes = _budget_notes(len(cut), len(skills) - keep, len(skills))
        return _render(shown, guide=guide, notes=(*notices, *notes)), cut

    # The longest description limit that fits, by bisection.
    low, high = _MIN_DESCRIPTION, longest
    best: tuple[str, tuple[str, ...]] | None = None
    while low <= high:
        middle = (low + high) // 2
        block, cut = attempt(middle, len(skills))
        if len(block) <= budget:
            best, low = (block, cut), middle + 1
        else:
            high = middle - 1
    if best is not None:
        return Rendered(best[0], shortened=best[1])
    # Even the shortest descriptions do not fit: leave skills out, from the end.
    keep = len(skills)
    while keep > 0:
        keep -= 1
        block, cut = attempt(_MIN_DESCRIPTION, keep)
        if len(block) <= budget:
            break
    left_out = tuple(s.name for s in skills[keep:])
    return Rendered(block, shortened=cut, left_out=left_out)


def render_for(
    catalog: SkillsCatalog,
    source: Source,
    server: str,
    budget: int | None = None,
    *,
    notice: str | None = None,
) -> Rendered:
    """The block for `catalog` as had from `server` through `source`, within `budget`
    characters when one is given, with `notice` (one line for the model) above the list.

    Memoized on the catalog when there is no notice: a catalog had again unchanged costs
    a dictionary lookup."""
    key = (source, server, budget)
    if notice is not None:
        return _render_with(catalog, source, server, budget, (notice,))
    rendered = catalog.rendered.get(key)
    if rendered is None:
        rendered = _render_with(catalog, source, server, budget, ())
        catalog.rendered[key] = rendered
    return rendered


def _render_with(
    catalog: SkillsCatalog,
    source: Source,
    server: str,
    budget: int | None,
    notices: tuple[str, ...],
) -> Rendered:
    guide = (
        _GUIDE + _GUIDE_PATH
        if source == "tools"
        else _EXTENSION_GUIDE.format(server=_attr(repr(server)))
    )
    if budget is None:
        return Rendered(_render(catalog.skills, guide=guide, notes=notices))
    return _fit(catalog.skills, guide, budget, notices)


def describe_diagnostic(diagnostic: Mapping[str, Any]) -> str:
    """One diagnostics entry as a log line: ``skill: level [code]: message``."""
    skill = diagnostic.get("skill") or "?"
    level = diagnostic.get("level") or "warning"
    code = diagnostic.get("code")
    message = diagnostic.get("message") or ""
    head = f"{skill}: {level}" + (f" [{code}]" if code else "")
    return f"{head}: {message}"


def append_catalog(instructions: str | None, blocks: Sequence[str]) -> str | None:
    """The system prompt of a run: the instructions, then each block after a blank line."""
    parts = [instructions.rstrip()] if instructions else []
    parts.extend(blocks)
    return "\n\n".join(parts) if parts else instructions
