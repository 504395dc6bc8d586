"""MCP tool servers for document-processing agents.

The servers are imported on first use, so ``import doc_processing_std_tools`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .documents.server import docs_server
    from .filesystem.server import file_system_server
    from .server import make_composed_server
    from .skills.server import make_skills_server, skills_server

__all__ = [
    "__version__",
    "docs_server",
    "file_system_server",
    "make_composed_server",
    "make_skills_server",
    "skills_server",
]

_LAZY: dict[str, str] = {
    "docs_server": ".documents.server",
    "file_system_server": ".filesystem.server",
    "make_composed_server": ".server",
    "make_skills_server": ".skills.server",
    "skills_server": ".skills.server",
}


def __getattr__(name: str) -> Any:
    """Import a server the first time it is asked for."""
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_name, __name__), name)
    globals()[name] = value
    return value
