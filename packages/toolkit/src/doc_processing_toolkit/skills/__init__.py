"""Skills auto-injection: a wrapper around the agent's servers that finds the skills
source, fetches its catalog on every run, and offers it to the model as instructions.

- `catalog`: the entries, the std-tools reply, the rendered block (with its budget), the
  outcome of a run;
- `extension`: skills from an MCP Skills extension server (``skills/list``, and the
  wrapper's tools that read and check its files);
- `selection`: what the block shows when not every skill can be (``search_skills`` and
  the toolkit's own ranking);
- `scope`: which skills one agent is offered (``skills_include`` / ``skills_exclude``,
  the tools a skill needs) and the guard that holds the others back;
- `toolset`: `SkillsToolset`, the wrapper (detection, the catalog call, the last good
  catalog, hiding or adding tools).

Every record is logged under ``doc_processing_toolkit.skills``.
"""

from .block import (
    SHORTENED_MARK,
    append_catalog,
    render_catalog,
)
from .entries import (
    ACTIVATION_TOOLS,
    CATALOG_HEADING,
    DETECTION_TOOLS,
    CatalogReplyError,
    SkillEntry,
    SkillsCatalog,
    SkillSource,
    SkillsOutcome,
    has_own_catalog,
    parse_catalog,
)
from .toolset import SkillsOptions, SkillsToolset

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "SHORTENED_MARK",
    "CatalogReplyError",
    "SkillEntry",
    "SkillSource",
    "SkillsCatalog",
    "SkillsOptions",
    "SkillsOutcome",
    "SkillsToolset",
    "append_catalog",
    "has_own_catalog",
    "parse_catalog",
    "render_catalog",
]
