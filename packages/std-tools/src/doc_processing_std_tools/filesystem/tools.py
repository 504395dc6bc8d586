"""The seven file system tools, registered on any MCPServer.

Each tool is a few lines of glue around `operations`; the workspace and the limits are
read from the settings at call time, so a changed configuration applies to the next call.

get_file_info answers with a JSON object: the client gets it as the text block and as
structured content, described by the tool's output schema (`FileInfo`). The other six
answer with text only.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field, with_config
from typing_extensions import TypedDict

from .._tooling import ToolCalls, answer_config, json_answer, mcp_tool
from ..config import Settings, settings_source
from . import operations
from .operations import Workspace

__all__ = ["FileInfo", "register_filesystem_tools"]


@with_config(answer_config("path", "absolute_path", "type", "modified", "permissions"))
class FileInfo(TypedDict, total=False):
    """The answer of get_file_info."""

    path: str
    """The path relative to the workspace (a link's target when the path is a link)."""
    absolute_path: str
    """The absolute path."""
    type: Literal["file", "directory", "other"]
    """``file`` (a regular file), ``directory`` or ``other`` (a device, a pipe, ...)."""
    entries: int
    """A directory's number of entries."""
    size_bytes: int
    """A file's size in bytes."""
    size: str
    """The same size for a person, such as ``1.2 MB``."""
    suffix: str
    """The file name's suffix in lower case, such as ``.pdf``; empty when it has none."""
    modified: str
    """The modification time, ISO 8601 in UTC."""
    permissions: str
    """The permissions as ``ls -l`` shows them, such as ``-rw-r--r--``."""
    symbolic_link_to: str
    """Present when the path is a symbolic link: its target, relative to the workspace."""
    within_size_limit: bool
    """A regular file's: whether the reading tools accept its size."""
    is_text: bool
    """A regular file's within the size limit: whether it is UTF-8 text."""
    line_count: int
    """A text file's number of lines."""
    truncated: str
    """Present when the answer was cut to the output limit: what was left out."""


_PATH = (
    "Path relative to the workspace folder, with '/' separators; an absolute path inside "
    "the workspace is taken too."
)


def register_filesystem_tools(server: MCPServer, settings: Settings | None = None) -> None:
    """Add the seven file system tools to `server`.

    `settings`: what every call uses; None (the default) for the process-wide settings
    (`config.get_settings`) as they are when each tool is called.
    """
    calls = ToolCalls(settings_source(settings))

    @mcp_tool(server, structured_output=False)
    def read_file(
        path: Annotated[str, Field(description=_PATH)],
        start_line: Annotated[
            int | None, Field(description="First line to return (1-based); default the first.")
        ] = None,
        end_line: Annotated[
            int | None, Field(description="Last line to return (inclusive); default the last.")
        ] = None,
    ) -> str:
        """Read a UTF-8 text file of the workspace, whole or a range of lines.

        Long files are cut at the output limit; the marker names the line to continue from.
        """
        with calls.errors():
            return calls.limited(
                operations.read_file(
                    Workspace.from_settings(calls.settings()), path, start_line, end_line
                )
            )

    @mcp_tool(server, structured_output=False)
    def write_file(
        path: Annotated[str, Field(description=_PATH)],
        content: Annotated[str, Field(description="The complete new content of the file.")],
    ) -> str:
        """Create a file, or replace its whole content, creating missing folders.

        The write is atomic: the file holds either its old or its new content, never part.
        Files inside version-control folders, agent instructions and settings (CLAUDE.md,
        AGENTS.md, .claude/ ...), build, test and CI entry points and skills are refused
        unless the operator allows them; the error says why. Written files are never
        executable.
        """
        with calls.errors():
            return calls.limited(
                operations.write_file(Workspace.from_settings(calls.settings()), path, content)
            )

    @mcp_tool(server, structured_output=False)
    def edit_file(
        path: Annotated[str, Field(description=_PATH)],
        old_text: Annotated[
            str, Field(description="Exact text to replace; it must occur exactly once.")
        ],
        new_text: Annotated[str, Field(description="The text to put in its place.")],
    ) -> str:
        """Replace one exact piece of text in a file.

        Fails, changing nothing, when old_text occurs zero or several times; the error
        says how many times it was found. Add surrounding lines to make it unique. The
        same files as for write_file are refused, and an edited file is never left
        executable.
        """
        with calls.errors():
            return calls.limited(
                operations.edit_file(
                    Workspace.from_settings(calls.settings()), path, old_text, new_text
                )
            )

    @mcp_tool(server, structured_output=False)
    def list_directory(
        path: Annotated[str, Field(description="Folder relative to the workspace.")] = ".",
    ) -> str:
        """List a folder: sub-folders first (ending in '/'), then files with their sizes."""
        with calls.errors():
            return calls.limited(
                operations.list_directory(Workspace.from_settings(calls.settings()), path)
            )

    @mcp_tool(server, structured_output=False)
    def find_files(
        pattern: Annotated[
            str,
            Field(description="Glob over paths relative to `path`, e.g. '**/*.pdf' or '*.md'."),
        ],
        path: Annotated[str, Field(description="Folder to search in.")] = ".",
    ) -> str:
        """Find files by glob pattern; one workspace-relative path per line.

        '*' stays inside one folder, '**/' spans any number of folders. Version-control
        and cache folders (.git, node_modules, .venv, ...) are skipped.
        """
        with calls.errors():
            return calls.limited(
                operations.find_files(Workspace.from_settings(calls.settings()), pattern, path)
            )

    @mcp_tool(server, structured_output=False)
    def search_text(
        pattern: Annotated[str, Field(description="Python regular expression to look for.")],
        path: Annotated[str, Field(description="Folder to search recursively, or a file.")] = ".",
        include: Annotated[
            str, Field(description="Optional glob on file names, e.g. '*.md'.")
        ] = "",
        ignore_case: bool = False,
        max_results: Annotated[
            int, Field(description="Stop after this many matching lines (1-1000).")
        ] = 100,
    ) -> str:
        """Search text files for a regular expression; each match as 'path:line: text'.

        Binary files, files over the size limit and cache folders are skipped.
        """
        with calls.errors():
            return calls.limited(
                operations.search_text(
                    Workspace.from_settings(calls.settings()),
                    pattern,
                    path,
                    include,
                    ignore_case,
                    max_results,
                )
            )

    @mcp_tool(server)
    def get_file_info(
        path: Annotated[str, Field(description=_PATH)],
    ) -> Annotated[CallToolResult, FileInfo]:
        """Facts about a file or folder as JSON: type, size, modification time, permissions,
        whether it is text and its line count."""
        with calls.errors():
            return json_answer(
                calls.limited(
                    operations.get_file_info(Workspace.from_settings(calls.settings()), path)
                )
            )
