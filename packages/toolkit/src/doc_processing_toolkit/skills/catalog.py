"""Skill catalogs: every name of the two halves, importable from one place.

- `entries`: the catalog as data: the entries, the std-tools ``list_skills`` and
  ``search_skills`` replies read into them (`parse_catalog`, `parse_search`), and what
  the skills step reports for a run (`SkillsOutcome`);
- `block`: the block the model reads, written from the entries (`render_catalog`,
  `render_for` within a budget, `render_selected` for the skills that best match a
  request when not all can be shown).
"""

from __future__ import annotations

from .block import (
    SHORTENED_MARK,
    Selected,
    append_catalog,
    render_catalog,
    render_for,
    render_selected,
)
from .entries import (
    ACTIVATION_TOOLS,
    CATALOG_HEADING,
    DETECTION_TOOLS,
    LOGGER_NAME,
    SEARCH_TOOL,
    CatalogReplyError,
    Ranking,
    Rendered,
    SkillEntry,
    SkillsCatalog,
    SkillsOutcome,
    Source,
    describe_diagnostic,
    has_own_catalog,
    parse_catalog,
    parse_search,
)

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "LOGGER_NAME",
    "SEARCH_TOOL",
    "SHORTENED_MARK",
    "CatalogReplyError",
    "Ranking",
    "Rendered",
    "Selected",
    "SkillEntry",
    "SkillsCatalog",
    "SkillsOutcome",
    "Source",
    "append_catalog",
    "describe_diagnostic",
    "has_own_catalog",
    "parse_catalog",
    "parse_search",
    "render_catalog",
    "render_for",
    "render_selected",
]
