"""Skills auto-injection: a wrapper around the agent's servers that finds the skills
source, fetches its catalog on every run, and offers it to the model as instructions.

- `catalog`: the entries, the std-tools reply, the rendered block (with its budget), the
  outcome of a run;
- `extension`: skills from an MCP Skills extension server (``skills/list``, and the
  wrapper's tools that read and check its files);
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
    "SkillsCatalog",
    "SkillsOptions",
    "SkillsOutcome",
    "SkillsToolset",
    "append_catalog",
    "has_own_catalog",
    "parse_catalog",
    "render_catalog",
]
