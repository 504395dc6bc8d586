"""The composed server: skills, file system and document tools behind one MCP name.

`python -m doc_processing_std_tools` serves it. The document tools are always present:
CSV, HTML, Markdown and text need nothing extra, and for PDF, DOCX and XLSX without the
``docs`` extra each call explains how to install it.
"""

from __future__ import annotations

from typing import Final

from mcp.server.mcpserver import MCPServer

__all__ = ["COMPOSED_SERVER_NAME", "make_composed_server"]

COMPOSED_SERVER_NAME: Final = "doc-processing-std-tools"
"""The MCP name of the composed server."""


def make_composed_server() -> MCPServer:
    """A new MCPServer named "doc-processing-std-tools" holding the five skills tools, the
    seven file system tools and the four document tools.

    Every tool reads the settings when it is called, so configure the environment (or
    call `config.reset_settings`) before serving, not before building.
    """
    from .docs.tools import register_docs_tools
    from .filesystem.tools import register_filesystem_tools
    from .skills.tools import register_skills_tools

    server = MCPServer(
        COMPOSED_SERVER_NAME,
        instructions=(
            "Tools for document work. Skills: list_skills, then load_skill for a task's "
            "instructions. Files (inside the workspace folder): read_file, write_file, "
            "edit_file, list_directory, find_files, search_text, get_file_info. Documents: "
            "get_file_overview first, then read_document, extract_tables or search_document."
        ),
    )
    register_skills_tools(server)
    register_filesystem_tools(server)
    register_docs_tools(server)
    return server
