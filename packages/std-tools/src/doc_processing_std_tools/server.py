"""The composed server: skills, file system and document tools behind one MCP name.

`python -m doc_processing_std_tools` serves it. The document tools are always present:
CSV, HTML, Markdown and text need nothing extra, and for PDF, DOCX and XLSX without the
``docs`` extra each call explains how to install it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["COMPOSED_SERVER_NAME", "composed_instructions", "make_composed_server"]

COMPOSED_SERVER_NAME: Final = "doc-processing-std-tools"
"""The MCP name of the composed server."""


def make_composed_server(
    *,
    settings: Settings | None = None,
    tools: Sequence[str] | None = None,
    read_only: bool = False,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer:
    """A new MCPServer named "doc-processing-std-tools" holding the five skills tools, the
    seven file system tools and the four document tools, and serving the MCP Skills
    extension over the same skills.

    Without `settings`, every tool reads the process-wide settings when it is called, so
    configure the environment (or call `config.reset_settings`) before serving, not
    before building.

    Args:
        settings: the settings every call uses, instead of the process-wide ones.
        tools: offer only these tools (the DPTTOOLS_TOOLS allow-list); None for all.
        read_only: leave out write_file, edit_file, create_skill and execute_skill_script.
        token_verifier: with `auth`, checks the bearer tokens of HTTP requests (see
            `http_app.http_auth`); each request then sees only the tools its scopes cover.
        auth: the SDK's resource-server settings that go with `token_verifier`.

    Raises:
        ConfigError: `tools` names a tool the server does not have, or a tool that
            changes something together with `read_only`.
    """
    from ._building import new_server
    from ._notices import enable_client_logging
    from .access import COMPOSED_TOOLS, select_tools
    from .documents.tools import register_docs_tools
    from .filesystem.tools import register_filesystem_tools
    from .scoped_server import ScopedServer, restrict_tools
    from .skills.extension.publisher import SkillPublisher
    from .skills.extension.serving import SkillsExtension, register_skill_resources
    from .skills.state import SkillsState
    from .skills.tools import register_skills_tools

    kept = select_tools(COMPOSED_TOOLS, tools, read_only=read_only)
    skills = SkillsState()
    skills_extension = SkillsExtension(SkillPublisher(skills), settings=settings)
    server = new_server(
        ScopedServer,
        COMPOSED_SERVER_NAME,
        extensions=[skills_extension],
        middleware=[skills_extension.mime_types],
        instructions=composed_instructions(kept),
        token_verifier=token_verifier,
        auth=auth,
    )
    register_skills_tools(server, settings, skills)
    register_skill_resources(server, skills_extension)
    register_filesystem_tools(server, settings)
    register_docs_tools(server, settings)
    restrict_tools(server, COMPOSED_TOOLS, kept, read_only=False)
    enable_client_logging(server)
    return server


def composed_instructions(tools: Sequence[str]) -> str:
    """The composed server's instructions, naming only `tools` (those it offers)."""
    from .access import FILESYSTEM_TOOLS

    offered = set(tools)

    def named(*names: str) -> list[str]:
        return [name for name in names if name in offered]

    parts = ["Tools for document work."]
    skills = named("list_skills", "load_skill")
    if skills:
        parts.append(f"Skills: {', then '.join(skills)} for a task's instructions.")
    if named("search_skills"):
        parts.append("search_skills finds a skill among many by the words of a task.")
    files = named(*FILESYSTEM_TOOLS)
    if files:
        parts.append(f"Files (inside the workspace folder): {', '.join(files)}.")
    overview, readers = (
        named("get_file_overview"),
        named("read_document", "extract_tables", "search_document"),
    )
    if overview or readers:
        first = "get_file_overview first, then " if overview and readers else ""
        choice = ", ".join(readers[:-1]) + " or " + readers[-1] if len(readers) > 1 else None
        parts.append(f"Documents: {first}{choice or (readers or overview)[0]}.")
    return " ".join(parts)
