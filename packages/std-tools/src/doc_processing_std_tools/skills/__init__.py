"""The Agent Skills server of doc-processing-std-tools.

`skills_server`, `make_skills_server` and `new_skills_server` live in
`doc_processing_std_tools.skills.server`, `register_skills_tools` in
`doc_processing_std_tools.skills.tools`; they are imported from here on first use, so the
pure modules (`frontmatter`, `catalog`) can be used without loading the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import make_skills_server, new_skills_server, skills_server
    from .tools import register_skills_tools

__all__ = ["make_skills_server", "new_skills_server", "register_skills_tools", "skills_server"]


def __getattr__(name: str) -> Any:
    """Import the server module the first time one of its names is asked for."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    module = import_module(".tools" if name == "register_skills_tools" else ".server", __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value
