"""The standalone skills MCP server, ``skills-tools``, with the five tools of
`skills.tools` and the MCP Skills extension of `skills.extension`.

A server built without settings (such as `skills_server`) reads them when a tool is
called, never at import time, so the skills folder and limits follow ``DPTTOOLS_*`` as
`get_settings()` reports them; one built with a `Settings` uses those.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from mcp.server.mcpserver import MCPServer

from .._building import new_server
from .._notices import enable_client_logging
from ..access import SKILLS_TOOLS
from ..config import Settings, get_settings
from ..scoped_server import restrict_tools
from .extension.publisher import SkillPublisher
from .extension.serving import SkillsExtension, register_skill_resources
from .state import SkillsState
from .tools import register_skills_tools

__all__ = [
    "SKILLS_SERVER_NAME",
    "make_skills_server",
    "new_skills_server",
    "register_skills_tools",
    "skills_server",
    "skills_server_state",
]

logger = logging.getLogger(__name__)

SKILLS_SERVER_NAME: Final = "skills-tools"
"""The MCP name of the standalone skills server."""


def new_skills_server(
    *,
    settings: Settings | None = None,
    state: SkillsState | None = None,
    tools: Sequence[str] | None = None,
    read_only: bool = False,
) -> MCPServer:
    """A new skills server holding the five skills tools, or the `tools` among them
    (without create_skill and execute_skill_script when `read_only`), whatever the skills
    folder holds, and serving the MCP Skills extension over the same skills.

    With `settings`, every call uses them; without, the process-wide settings
    (`config.get_settings`) as they are when each call comes. The tools and the
    extension share one `SkillsState` (`state`, or a new one): the server's own catalog,
    pinning and search.

    Raises:
        ConfigError: `tools` names a tool the skills server does not have, or a tool that
            changes something together with `read_only`.
    """
    skills = state if state is not None else SkillsState()
    extension = SkillsExtension(SkillPublisher(skills), settings=settings)
    server = new_server(
        MCPServer,
        SKILLS_SERVER_NAME,
        extensions=[extension],
        middleware=[extension.mime_types],
        instructions=(
            "Agent Skills: call list_skills to see the available skills, load_skill to read "
            "one skill's instructions, then load_skill_resource and execute_skill_script "
            "for the files it refers to."
        ),
    )
    register_skills_tools(server, settings, skills)
    register_skill_resources(server, extension)
    restrict_tools(server, SKILLS_TOOLS, tools, read_only=read_only)
    enable_client_logging(server)
    return server


def make_skills_server(settings: Settings | None = None) -> MCPServer | None:
    """A new skills server, or None when the skills folder is missing or holds no skill.

    The folder is checked once, now; use `skills_server` instead when skills may appear
    later in the session.
    """
    current = settings if settings is not None else get_settings()
    state = SkillsState()
    catalog = state.scan(current)
    if catalog.count == 0:
        logger.info("no skills in %s; not creating a skills server", catalog.skills_dir)
        return None
    return new_skills_server(settings=settings, state=state)


skills_server_state: SkillsState = SkillsState()
"""The catalog, pinning and search of `skills_server` (its `clear` makes the next listing
read every SKILL.md again)."""

skills_server: MCPServer = new_skills_server(state=skills_server_state)
"""The skills server, named "skills-tools", with exactly the five skills tools and the MCP
Skills extension over the same skills."""
