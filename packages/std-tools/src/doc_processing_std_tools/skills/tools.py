"""Registration of the skills tools on any `MCPServer`: the five of the contract and
search_skills.

Kept apart from `skills.server` so that a composed server can add the tools without also
building the standalone `skills_server`. Each tool is a few lines of glue to `actions`;
the settings are read when a tool is called, never at import time.

list_skills, search_skills and execute_skill_script answer with a JSON object: the client
gets it as the text block the contract documents and as structured content, described by
the tool's output schema (`SkillsListing`, `SkillsFound`, `ScriptRun`). The other three
answer with text only, except load_skill_resource on an image, which answers with the
image as MCP image content (`image_answer`).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import replace
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import WithJsonSchema, with_config
from typing_extensions import TypedDict

from .._tooling import ToolCalls, answer_config, json_answer, mcp_tool
from .._tracing import note_skill
from ..config import Settings, settings_source
from . import actions
from .core.images import SkillImage
from .state import SkillsState

__all__ = ["ScriptRun", "SkillsFound", "SkillsListing", "image_answer", "register_skills_tools"]


_ARRAY = WithJsonSchema({"type": "array"})
"""The schema of a list whose entries the schema does not check (see `SkillsListing`)."""


@with_config(answer_config("skills", "skills_dir", "count"))
class SkillsListing(TypedDict, total=False):
    """The answer of list_skills.

    The schema says ``skills`` and ``diagnostics`` are arrays and describes their entries
    in words only: a client of the MCP SDK for Python checks every answer against the schema
    with jsonschema, and the toolkit lists the skills on every agent run, where checking
    each entry cost about 10 ms at 100 skills with typed fields, 1 ms as plain objects and
    0.1 ms not at all.
    """

    skills: Annotated[list[dict[str, Any]], _ARRAY]
    """The listed skills, sorted by name; each has "name" (what the other tools take as
    skill_name), "description" and "path" (the absolute path of its SKILL.md), and may have
    "directory" (its folder), "license", "compatibility" and "metadata" (string values)."""
    skills_dir: str
    """The (first) skills folder, as an absolute path."""
    count: int
    """How many skills are listed."""
    skills_dirs: list[str]
    """Every skills folder, in order, when there are several."""
    diagnostics: Annotated[list[dict[str, Any]], _ARRAY]
    """Problems found, present only when there are some; each has "skill" (the folder),
    "level" ("error": not listed; "warning": listed), "code" and "message"."""
    note: str
    """Why nothing could be listed, such as a skills folder that does not exist."""
    truncated: str
    """Present when the answer was cut to the output limit: what was left out and how to
    see it."""
    requires: dict[str, dict[str, list[str]]]
    """Present when a skill declares the tools it needs: skill name -> {"tools": names
    from its metadata's requires-tools ("tool" or "server:tool"), "servers": MCP servers
    its agents/openai.yaml depends on}, for every skill, listed or not (kept whole when
    the answer is cut)."""


@with_config(answer_config("query", "skills", "count"))
class SkillsFound(TypedDict, total=False):
    """The answer of search_skills."""

    query: str
    """The query, as given."""
    skills: Annotated[list[dict[str, Any]], _ARRAY]
    """The skills found, best first; each has "name", "description", "path" (its
    SKILL.md) and "score" (relevance: higher is better)."""
    count: int
    """How many skills are in "skills"."""
    note: str
    """Present when nothing matched: what to try instead."""
    truncated: str
    """Present when the answer was cut to the output limit."""


@with_config(answer_config("stdout", "stderr", "exit_code"))
class ScriptRun(TypedDict, total=False):
    """The answer of execute_skill_script."""

    stdout: str
    """The script's standard output, cut at the output limit with a visible marker."""
    stderr: str
    """Its standard error; ends with the timeout or limit message, if any."""
    exit_code: int
    """The exit status; -N when signal N ended it; -1 when the timeout killed it."""
    changes: dict[str, Any]
    """Present when a script under bubblewrap changed the workspace: "applied" (how many
    changes were applied) and "applied_paths" ("-" before a deletion, "/" after a
    folder), "held_back" and "held_back_paths" (each with "path" and "why"), and
    "refused" when a limit on changes was passed and nothing was applied."""
    truncated: str
    """Present when the answer was cut to the output limit: what was left out."""


def image_answer(resource_path: str, image: SkillImage) -> CallToolResult:
    """load_skill_resource's answer for an image: a line naming it, then the image as MCP
    image content (base64), which a model can look at."""
    label = f"{resource_path} ({image.mime_type}, {len(image.data):,} bytes)"
    return CallToolResult(
        content=[
            TextContent(type="text", text=label),
            ImageContent(
                type="image",
                data=base64.b64encode(image.data).decode("ascii"),
                mime_type=image.mime_type,
            ),
        ]
    )


def register_skills_tools(
    server: MCPServer, settings: Settings | None = None, state: SkillsState | None = None
) -> None:
    """Add the skills tools to `server` (any `MCPServer`, such as a composed one).

    The tools are list_skills, search_skills, load_skill, load_skill_resource,
    execute_skill_script and create_skill. Anticipated failures reach the client as a
    `ToolError` carrying a message that says how to fix the call. Every answer fits
    DPTTOOLS_OUTPUT_TRUNCATION_LIMIT and says what was cut.

    `settings`: what every call uses; None (the default) for the process-wide settings
    (`config.get_settings`) as they are when each tool is called. `state`: the catalog,
    pinning and search the tools keep between calls (`SkillsState`); pass the one the
    server's `SkillsExtension` has, so both read the same catalog (default: a new one).
    """
    calls = ToolCalls(settings_source(settings))
    skills = state if state is not None else SkillsState()

    @mcp_tool(server)
    async def list_skills() -> Annotated[CallToolResult, SkillsListing]:
        """List every Agent Skill: name, description and SKILL.md path, as JSON.

        Returns {"skills": [...], "skills_dir": ..., "count": ...}, plus "diagnostics"
        when a SKILL.md has problems and "note" when the skills folder does not exist.
        Call load_skill with a name to read that skill's instructions.
        """
        with calls.errors():
            settings = calls.settings()
            # An unchanged folder is answered from the cache right here; reading files
            # happens in a worker thread so the event loop never waits on the disk.
            catalog = skills.cached(settings)
            if catalog is None:
                catalog = await anyio.to_thread.run_sync(skills.scan, settings)
            if catalog.note is not None and settings.skills_dir_refusal is not None:
                # The default folder is missing, and create_skill would not make it there.
                catalog = replace(catalog, note=settings.skills_dir_refusal)
            return json_answer(catalog.json_within(settings.output_truncation_limit))

    @mcp_tool(server)
    async def search_skills(query: str, limit: int = 10) -> Annotated[CallToolResult, SkillsFound]:
        """Find the skills that fit a task, best first, as JSON.

        query: a few words about the task, such as "fill in a PDF form". limit: how many
        skills to return, 1 to 50 (default 10). Returns {"query", "skills": [{"name",
        "description", "path", "score"}], "count"}. Use it when list_skills says skills
        were left out, or to find a skill among many; then call load_skill with a name.
        """
        with calls.errors():
            settings = calls.settings()
            catalog = skills.cached(settings)
            if catalog is None:
                # Reading changed skills (and a first search's index) off the event loop.
                answer = functools.partial(skills.search_skills, settings, query, limit)
                return json_answer(await anyio.to_thread.run_sync(answer))
            return json_answer(skills.search_skills(settings, query, limit, catalog=catalog))

    @mcp_tool(server, structured_output=False)
    def load_skill(skill_name: str) -> str:
        """Load one skill's full SKILL.md instructions and the list of its files.

        skill_name is the name from list_skills (the skill's folder name). The answer is
        wrapped in <skill_content> with a <skill_resources> list; read those files with
        load_skill_resource and run its .py scripts with execute_skill_script.
        """
        note_skill(skill_name)
        with calls.errors():
            return calls.limited(
                actions.load_skill(skills, calls.settings(), skill_name),
                hint=f"read SKILL.md whole with load_skill_resource('{skill_name}', 'SKILL.md')",
            )

    @mcp_tool(server, structured_output=False)
    def load_skill_resource(skill_name: str, resource_path: str) -> str | CallToolResult:
        """Read a file that belongs to a skill, such as references/glossary.md: its text,
        or the image itself for a PNG, JPEG, GIF or WebP file.

        resource_path is relative to the skill's folder, as load_skill lists it.
        """
        note_skill(skill_name)
        with calls.errors():
            found = actions.load_skill_resource(skills, calls.settings(), skill_name, resource_path)
            if isinstance(found, SkillImage):
                return image_answer(resource_path, found)
            return calls.limited(found)

    @mcp_tool(server)
    async def execute_skill_script(
        skill_name: str, script_path: str, args: str = ""
    ) -> Annotated[CallToolResult, ScriptRun]:
        """Run a skill's Python script and return {"stdout", "stderr", "exit_code"} as JSON.

        script_path is a .py file relative to the skill's folder (for example
        scripts/normalise_totals.py). args is one string split like a POSIX shell
        command line, so quote arguments that contain spaces. The script runs in its own
        folder; after the configured timeout it is killed and exit_code is -1. When it
        changed the workspace, "changes" lists what was applied and what was held back
        and why (a held-back file can be written with write_file, where approval
        applies).
        """
        note_skill(skill_name)
        with calls.errors():
            settings = calls.settings()
            return json_answer(
                calls.limited(
                    await actions.execute_skill_script(
                        skills, settings, skill_name, script_path, args
                    )
                )
            )

    @mcp_tool(server, structured_output=False)
    def create_skill(skill_name: str, description: str) -> str:
        """Create a new skill folder holding a template SKILL.md, without overwriting.

        skill_name: 1-64 lowercase letters, digits and single hyphens. description: what
        the skill does and when to use it. The answer says how the template's TODO sections
        can be filled in; list_skills shows the new skill from its next call.
        """
        with calls.errors():
            return calls.limited(
                actions.create_skill(skills, calls.settings(), skill_name, description)
            )
