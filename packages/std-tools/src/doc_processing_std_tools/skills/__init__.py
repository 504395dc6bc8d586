"""The Agent Skills server of doc-processing-std-tools.

`skills_server`, `make_skills_server` and `register_skills_tools` live in
`doc_processing_std_tools.skills.server` and are imported from here on first use, so the
pure modules (`frontmatter`, `catalog`) can be used without loading the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import make_skills_server, register_skills_tools, skills_server

__all__ = ["make_skills_server", "register_skills_tools", "skills_server"]


def __getattr__(name: str) -> Any:
    """Import the server module the first time one of its names is asked for."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import server

    value = getattr(server, name)
    globals()[name] = value
    return value
