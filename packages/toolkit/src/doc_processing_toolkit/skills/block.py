"""The catalog block the model reads: the skills as ``<skill>`` lines under a guide, within
a character budget when one is set.

`render_catalog` writes the block appended to the system prompt, `render_for` writes it
within a budget and `render_selected` writes it when not every skill can be shown (the
server cut its list, or the budget is too small): then the block holds the skills that
best match the run's request, from the server's ``search_skills`` answer
(`entries.parse_search`) and the catalog's own full-text index (`ranking.SkillIndex`),
and says how many skills it does not show and how to find them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from xml.sax.saxutils import escape

from .entries import (
    CATALOG_HEADING,
    FIND_BY_SEARCH,
    OWN_CATALOG_TAG,
    Rendered,
    SkillEntry,
    SkillsCatalog,
    SkillSource,
)
from .hidden import escape_hidden, hidden_note

__all__ = [
    "SHORTENED_MARK",
    "Selected",
    "append_catalog",
    "render_catalog",
    "render_for",
    "render_selected",
]


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def render_catalog(skills: Sequence[SkillEntry]) -> str:
    """The block appended to the system prompt for a non-empty catalog of std-tools'
    tools (each skill with its ``path``)."""
    return _render(skills, guide=SkillSource.TOOLS.traits.guide, notes=())


def _line(skill: SkillEntry) -> str:
    where = ""
    if skill.uri is not None:
        where = f' uri="{_attr(_shown(skill.uri))}"'
    elif skill.path is not None:
        where = f' path="{_attr(_shown(skill.path))}"'
    name, description = _shown(skill.name), _shown(skill.description)
    return f'  <skill name="{_attr(name)}"{where}>{escape(description)}</skill>'


def _shown(text: str) -> str:
    return escape_hidden(text)[0]


def _hides(skill: SkillEntry) -> bool:
    """True when the skill's line shows hidden text escaped (or its server escaped it)."""
    return (
        skill.hides_text
        or escape_hidden(skill.name)[1]
        or escape_hidden(skill.description)[1]
        or (skill.uri is not None and escape_hidden(skill.uri)[1])
        or (skill.uri is None and skill.path is not None and escape_hidden(skill.path)[1])
    )


def _catalog_hides(catalog: SkillsCatalog) -> tuple[bool, ...]:
    """`_hides` of every skill of `catalog`, worked out once per catalog."""
    if not catalog.hides:
        catalog.hides.append(tuple(_hides(skill) for skill in catalog.skills))
    return catalog.hides[0]


def _hidden_notes(skills: Sequence[SkillEntry], notes: Sequence[str]) -> tuple[str, ...]:
    """`notes`, then the line that says how many of `skills` hide text (if any do)."""
    hiding = sum(_hides(skill) for skill in skills)
    return (*notes, hidden_note(hiding)) if hiding else tuple(notes)


def _assemble(lines: Sequence[str], guide: str, notes: Sequence[str]) -> str:
    parts = [CATALOG_HEADING, "", guide, ""]
    for note in notes:
        parts.extend([note, ""])
    parts.append(OWN_CATALOG_TAG)
    parts.extend(lines)
    parts.append("</available_skills>")
    return "\n".join(parts)


def _render(skills: Sequence[SkillEntry], *, guide: str, notes: Sequence[str]) -> str:
    return _assemble([_line(skill) for skill in skills], guide, _hidden_notes(skills, notes))


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


def _short_line(skill: SkillEntry, limit: int) -> str:
    """The skill's line with its description shortened to `limit` (0: in full)."""
    if limit and len(skill.description) > limit:
        skill = replace(skill, description=_shorten(skill.description, limit))
    return _line(skill)


def _catalog_lines(catalog: SkillsCatalog, limit: int) -> tuple[str, ...]:
    """Every skill's line of `catalog` at description `limit`, rendered once per catalog."""
    lines = catalog.lines.get(limit)
    if lines is None:
        lines = catalog.lines[limit] = tuple(_short_line(s, limit) for s in catalog.skills)
    return lines


@dataclass(frozen=True, slots=True)
class _Notes:
    """The lines above the list: `notices` first, then what was shortened or left out.

    `total` is how many skills the server has (None: unknown, its list was cut); `picked`
    says the skills shown were chosen for the request rather than taken from the top."""

    notices: tuple[str, ...]
    total: int | None
    finder: str
    picked: bool = False

    def __call__(self, shortened: int, shown: int) -> tuple[str, ...]:
        notes = list(self.notices)
        if shortened:
            notes.append(
                f"Descriptions ending in {SHORTENED_MARK} are shortened to fit; `list_skills` "
                "gives them in full."
            )
        why = (
            "those shown are the ones that best match this request"
            if self.picked
            else "to keep this list short"
        )
        if self.total is None:
            notes.append(
                "Not every skill is shown here: the server cut its list short, so more "
                f"skills exist than are listed; {why}. {self.finder}"
            )
        elif self.total > shown:
            sep = ";" if self.picked else ","
            notes.append(
                f"{self.total - shown} of the {self.total} skills are not shown here{sep} "
                f"{why}. {self.finder}"
            )
        return tuple(notes)


def _fit(
    skills: tuple[SkillEntry, ...],
    full: Sequence[str],
    short: Callable[[], Sequence[str]],
    guide: str,
    budget: int | None,
    notes: _Notes,
    hides: Sequence[bool],
) -> Rendered:
    """The block of `skills` (their lines `full`, and `short` at the shortest description)
    within `budget` characters: descriptions shortened evenly first, then skills left out
    from the end of the list. `hides` says which skills' lines show hidden text."""
    count = len(skills)
    hiding = [0, *itertools.accumulate(hides)]

    def told(shortened: int, shown: int) -> tuple[str, ...]:
        found = notes(shortened, shown)
        return (*found, hidden_note(hiding[shown])) if hiding[shown] else found

    block = _assemble(full, guide, told(0, count))
    if budget is None or len(block) <= budget:
        return Rendered(block)
    brief = short()
    cut = [a != b for a, b in zip(full, brief, strict=True)]
    if len(_assemble(brief, guide, told(sum(cut), count))) <= budget:
        # The longest common description limit that fits, by bisection.
        best, best_cut = _assemble(brief, guide, told(sum(cut), count)), cut
        low = _MIN_DESCRIPTION + 1
        high = max((len(s.description) for s in skills), default=0)
        while low <= high:
            middle = (low + high) // 2
            lines = [_short_line(skill, middle) for skill in skills]
            tried = [a != b for a, b in zip(full, lines, strict=True)]
            block = _assemble(lines, guide, told(sum(tried), count))
            if len(block) <= budget:
                best, best_cut, low = block, tried, middle + 1
            else:
                high = middle - 1
        shortened = tuple(s.name for s, c in zip(skills, best_cut, strict=True) if c)
        return Rendered(best, shortened=shortened)
    # Even the shortest descriptions do not fit: the most skills from the top that do
    # (the block's length grows with every skill added, so by bisection).
    sizes = [0, *itertools.accumulate(len(line) + 1 for line in brief)]
    cuts = [0, *itertools.accumulate(cut)]

    def size(keep: int) -> int:
        return len(_assemble((), guide, told(cuts[keep], keep))) + sizes[keep]

    keep, low, high = 0, 1, count - 1
    while low <= high:
        middle = (low + high) // 2
        if size(middle) <= budget:
            keep, low = middle, middle + 1
        else:
            high = middle - 1
    block = _assemble(brief[:keep], guide, told(cuts[keep], keep))
    shortened = tuple(s.name for s, c in zip(skills[:keep], cut, strict=False) if c)
    return Rendered(block, shortened=shortened, left_out=tuple(s.name for s in skills[keep:]))


def _guide(source: SkillSource, server: str) -> str:
    return source.traits.guide_for(_attr(repr(server)))


def render_for(
    catalog: SkillsCatalog,
    source: SkillSource,
    server: str,
    budget: int | None = None,
    *,
    notice: str | None = None,
) -> Rendered:
    """The block for `catalog` as had from `server` through `source`, within `budget`
    characters when one is given, with `notice` (one line for the model) above the list.
    Over the budget the skills at the end of the list are left out (`render_selected`
    chooses them for a request instead).

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
    source: SkillSource,
    server: str,
    budget: int | None,
    notices: tuple[str, ...],
) -> Rendered:
    guide = _guide(source, server)
    if budget is None:
        return Rendered(_render(catalog.skills, guide=guide, notes=notices))
    finder = source.traits.finder
    return _fit(
        catalog.skills,
        _catalog_lines(catalog, 0),
        lambda: _catalog_lines(catalog, _MIN_DESCRIPTION),
        guide,
        budget,
        _Notes(notices, len(catalog.skills), finder),
        _catalog_hides(catalog),
    )


@dataclass(frozen=True, slots=True)
class Selected:
    """A block that cannot show every skill, holding those that best match a request.

    Attributes:
        rendered: the block, the known skills it shortened and those it left out.
        skills: every skill known: the catalog's, then those only the search found.
        left_out_count: how many of the server's skills the block does not show (those
            of ``rendered.left_out`` and those the server did not list).
        total: how many skills the server has, None when it cut its list without saying.
    """

    rendered: Rendered
    skills: tuple[SkillEntry, ...]
    left_out_count: int
    total: int | None


def render_selected(
    catalog: SkillsCatalog,
    source: SkillSource,
    server: str,
    budget: int | None,
    *,
    request: str,
    found: Sequence[SkillEntry] = (),
    searchable: bool = False,
    notice: str | None = None,
) -> Selected:
    """The block for `catalog` when not every skill can be shown (the server did not list
    them all, or they do not fit `budget`): the skills in order of relevance to `request`,
    as many as fit, under a line that says how many are not shown and how to find them.

    The order: `found` (the server's ``search_skills`` answer, best first; a skill the
    catalog lacks is added to what is known), then the catalog's skills that share a
    word with `request`, best first (`SkillsCatalog.index`), then the others in the
    catalog's order. `searchable` says that the server offers ``search_skills``, so the
    model is told to use it.
    """
    listed = catalog.skills
    positions = {skill.name: index for index, skill in enumerate(listed)}
    extra: list[SkillEntry] = []
    order: dict[int, None] = {}
    for hit in found:
        index = positions.get(hit.name)
        if index is None:
            index = positions[hit.name] = len(listed) + len(extra)
            extra.append(hit)
        order.setdefault(index, None)
    for index in catalog.index.rank(request):
        order.setdefault(index, None)
    for index in range(len(listed)):
        order.setdefault(index, None)
    known = (*listed, *extra)
    full = (*_catalog_lines(catalog, 0), *(_line(skill) for skill in extra))

    def short() -> list[str]:
        lines = (
            *_catalog_lines(catalog, _MIN_DESCRIPTION),
            *(_short_line(skill, _MIN_DESCRIPTION) for skill in extra),
        )
        return [lines[index] for index in order]

    unlisted = catalog.unlisted
    total = None if unlisted is None else max(len(listed) + unlisted, len(known))
    if searchable:
        finder = FIND_BY_SEARCH
    else:
        finder = source.traits.finder_cut if unlisted != 0 else source.traits.finder
    notices = () if notice is None else (notice,)
    hides = (*_catalog_hides(catalog), *(_hides(skill) for skill in extra))
    rendered = _fit(
        tuple(known[index] for index in order),
        [full[index] for index in order],
        short,
        _guide(source, server),
        budget,
        _Notes(notices, total, finder, picked=True),
        [hides[index] for index in order],
    )
    shown = len(known) - len(rendered.left_out)
    left_out_count = len(rendered.left_out) if total is None else total - shown
    return Selected(rendered, known, left_out_count, total)


def append_catalog(instructions: str | None, blocks: Sequence[str]) -> str | None:
    """The system prompt of a run: the instructions, then each block after a blank line."""
    parts = [instructions.rstrip()] if instructions else []
    parts.extend(blocks)
    return "\n\n".join(parts) if parts else instructions
