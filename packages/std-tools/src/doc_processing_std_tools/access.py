"""Which tools a server offers, and which scope each one needs.

Three scopes divide the tools by what they can do: ``read`` (look at skills, files and
documents), ``write`` (change files or create skills) and ``execute`` (run a skill's
script; a script run for a token without ``write`` may not change the workspace). A
bearer token carries some of them; the tool allow-list (DPTTOOLS_TOOLS,
DPTTOOLS_READ_ONLY) decides which tools a server offers at all. Both rules live here,
without the MCP SDK; the server glue applies them.

The scopes of the request being served travel with it (`call_scopes`, `current_scopes`):
the server glue takes them from the SDK's auth context when a tool call starts, and the
logic below reads them where a rule needs them (a script run for a token without
``write`` sees the workspace read-only). They live in a context variable, so each call
sees its own request's token, never another's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from .errors import ConfigError

__all__ = [
    "COMPOSED_TOOLS",
    "DOCUMENT_TOOLS",
    "EXECUTE",
    "FILESYSTEM_TOOLS",
    "READ",
    "SCOPES",
    "SKILLS_TOOLS",
    "TOOL_SCOPES",
    "WRITE",
    "call_scopes",
    "current_scopes",
    "refusal",
    "select_tools",
    "tool_scope",
]

READ: Final = "read"
"""Scope of the tools that only look: list, load, read, search, overview."""
WRITE: Final = "write"
"""Scope of the tools that change files or create skills."""
EXECUTE: Final = "execute"
"""Scope of the tool that runs a skill's script. Without ``write`` as well, the script
sees the workspace read-only (under bubblewrap), and without bubblewrap it does not run:
nothing else could keep it from writing."""
SCOPES: Final = (READ, WRITE, EXECUTE)
"""Every scope a token can carry, in the order they are documented."""

SKILLS_TOOLS: Final = (
    "list_skills",
    "search_skills",
    "load_skill",
    "load_skill_resource",
    "execute_skill_script",
    "create_skill",
)
"""The tools of the skills server, in the order it registers them."""
FILESYSTEM_TOOLS: Final = (
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "find_files",
    "search_text",
    "get_file_info",
)
"""The file system tools, in the order they are registered."""
DOCUMENT_TOOLS: Final = ("get_file_overview", "read_document", "extract_tables", "search_document")
"""The document tools, in the order they are registered."""
COMPOSED_TOOLS: Final = SKILLS_TOOLS + FILESYSTEM_TOOLS + DOCUMENT_TOOLS
"""The tools of the composed server."""

TOOL_SCOPES: Final[Mapping[str, str]] = {
    **dict.fromkeys(COMPOSED_TOOLS, READ),
    "execute_skill_script": EXECUTE,
    "create_skill": WRITE,
    "write_file": WRITE,
    "edit_file": WRITE,
}
"""The scope each std-tools tool needs."""


_CALL_SCOPES: ContextVar[frozenset[str] | None] = ContextVar("dpt_call_scopes", default=None)


@contextmanager
def call_scopes(granted: Collection[str] | None) -> Iterator[None]:
    """Within the block, `current_scopes()` is `granted`: the scopes of the token of the
    request being served, or None when the request carries no token (stdio, in process,
    HTTP without authentication). The server glue wraps each tool call in it."""
    reset = _CALL_SCOPES.set(None if granted is None else frozenset(granted))
    try:
        yield
    finally:
        _CALL_SCOPES.reset(reset)


def current_scopes() -> frozenset[str] | None:
    """The scopes of the token whose request is being served, or None without one (no
    authentication, so nothing to narrow)."""
    return _CALL_SCOPES.get()


def tool_scope(tool: str) -> str | None:
    """The scope `tool` needs, or None for a tool this table does not know (refused)."""
    return TOOL_SCOPES.get(tool)


def refusal(tool: str, granted: Collection[str]) -> str | None:
    """Why a token with the scopes `granted` may not call `tool`, or None when it may."""
    needed = tool_scope(tool)
    if needed is None:
        return f"{tool} is not covered by any scope, so no token may call it."
    if needed in granted:
        return None
    held = ", ".join(sorted(granted)) or "none"
    return (
        f"{tool} needs the '{needed}' scope, and this token's scopes are: {held}. "
        f"Ask for a token that carries '{needed}'; nothing was done."
    )


def select_tools(
    available: Sequence[str], names: Sequence[str] | None, *, read_only: bool
) -> list[str]:
    """The tools to offer, in `available`'s order.

    Args:
        available: every tool the server has.
        names: the allow-list (DPTTOOLS_TOOLS / --tools), or None for every tool.
        read_only: leave out every tool whose scope is not ``read``.

    Raises:
        ConfigError: a name is not one of `available`, or the allow-list names a tool
            that changes something while `read_only` is set.
    """
    if names is not None:
        unknown = [name for name in names if name not in available]
        if unknown:
            raise ConfigError(
                f"DPTTOOLS_TOOLS (or --tools) names {', '.join(repr(n) for n in unknown)}, "
                f"which this server does not have; valid names: {', '.join(available)}."
            )
    chosen = [tool for tool in available if names is None or tool in names]
    if not read_only:
        return chosen
    if names is not None:
        changing = [tool for tool in chosen if tool_scope(tool) != READ]
        if changing:
            raise ConfigError(
                f"DPTTOOLS_TOOLS (or --tools) names {', '.join(changing)} together with "
                "DPTTOOLS_READ_ONLY (or --read-only), which leaves them out; drop one of the two."
            )
    return [tool for tool in chosen if tool_scope(tool) == READ]
