"""Skills auto-injection: a wrapper around the agent's servers that finds the skills
source, fetches its catalog on every run, and offers it to the model as instructions.

- `catalog`: the entries, the std-tools reply, the rendered block, the outcome of a run;
- `toolset`: `SkillsToolset`, the wrapper (detection, the catalog call, hiding tools).

Every record is logged under ``doc_processing_toolkit.skills``.
"""

from .catalog import (
    ACTIVATION_TOOLS,
    CATALOG_HEADING,
    DETECTION_TOOLS,
    CatalogReplyError,
    SkillEntry,
    SkillsCatalog,
    SkillsOutcome,
    append_catalog,
    has_own_catalog,
    parse_catalog,
    render_catalog,
)
from .toolset import SkillsOptions, SkillsToolset

__all__ = [
    "ACTIVATION_TOOLS",
    "CATALOG_HEADING",
    "DETECTION_TOOLS",
    "CatalogReplyError",
    "SkillEntry",
    "SkillsCatalog",
    "SkillsOptions",
    "SkillsOutcome",
    "SkillsToolset",
    "append_catalog",
    "has_own_catalog",
    "parse_catalog",
    "render_catalog",
]
