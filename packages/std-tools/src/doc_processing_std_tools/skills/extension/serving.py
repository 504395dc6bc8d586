"""The MCP Skills extension (``io.modelcontextprotocol/skills``) on any `MCPServer`.

Thin glue over `publisher` (with `catalog.uris`), which hold the logic and never
import MCP:

- `SkillsExtension` goes into ``MCPServer(extensions=[...])``: it advertises the extension
  with ``directoryRead: true`` and serves ``skills/list``, ``skills/get`` and
  ``resources/directory/read``.
- `register_skill_resources` adds the ``skill://{+path}`` resource template, so that
  ``resources/read`` returns the exact bytes of any published file (text for UTF-8, a blob
  otherwise), a middleware that gives each read the file's own MIME type, and one that
  lists each published skill's SKILL.md in ``resources/list`` under the frontmatter's
  name and description.

Every result is computed from the same catalog as the five tools, at call time: nothing is
cached on the client's behalf (``ttlMs`` 0), and results are marked ``private`` so that no
shared cache hands one user's skills to another. Work that may touch the disk runs in a
worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, PaginatedRequestParams, RequestParams
from pydantic import BaseModel

from ..._text import wire_safe
from ..._tracing import note_skill
from ...config import Settings, settings_source
from ...errors import StdToolsError
from ..catalog.uris import (
    SCHEME,
    InvalidCursorError,
    UnknownResourceError,
    mime_type,
    parse_skill_uri,
)
from .publisher import PublishedSkill, SkillPublisher

__all__ = [
    "CACHE_SCOPE",
    "EXTENSION_ID",
    "LEFT_OUT_META_KEY",
    "TTL_MS",
    "SkillsExtension",
    "register_skill_resources",
]

EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
"""The identifier the extension is advertised under."""
TTL_MS: Final = 0
"""Results are stale at once: the skills folder may change at any moment, and a warm
listing costs only ``stat`` calls, so asking again is the cheap way to stay exact."""
CACHE_SCOPE: Final = "private"
"""Skills may be an organisation's own material: no shared cache may reuse a result."""
LEFT_OUT_META_KEY: Final = "doc-processing-std-tools/left-out"
"""``_meta`` key of a ``skills/list`` page: the skills of its range that are not published,
and why (the first page also names the folders the catalog could not read as skills)."""
DIRECTORY_PAGE_SIZE: Final = 1000
"""At most this many children on one ``resources/directory/read`` page."""


class _GetParams(RequestParams):
    """Parameters of ``skills/get``."""

    uri: str


class _DirectoryParams(PaginatedRequestParams):
    """Parameters of ``resources/directory/read``."""

    uri: str


def _cacheable(result: dict[str, Any]) -> dict[str, Any]:
    return {"resultType": "complete", **result, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}


def _invalid(message: str, uri: str | None = None) -> MCPError:
    data = {"uri": uri} if uri is not None else None
    return MCPError(code=INVALID_PARAMS, message=wire_safe(message), data=data)


class SkillsExtension(Extension):
    """``skills/list``, ``skills/get`` and ``resources/directory/read`` over the catalog.

    Pass one instance to ``MCPServer(extensions=[...])`` and the same instance to
    `register_skill_resources`, so that listings and reads share what was remembered.
    """

    identifier = EXTENSION_ID

    def __init__(self, publisher: SkillPublisher, settings: Settings | None = None) -> None:
        """Serve from `publisher` (made over the server's `SkillsState`, so that the
        extension and the tools read one catalog) under `settings` (None: the
        process-wide settings as they are at each request)."""
        self.publisher = publisher
        self._source = settings_source(settings)

    def current_settings(self) -> Settings:
        """The settings of this request; invalid settings are the request's error."""
        try:
            return self._source()
        except StdToolsError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from exc

    def settings(self) -> dict[str, Any]:
        """``directoryRead: true``: folders of published skills can be listed."""
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        """The three request methods the extension adds."""
        return (
            MethodBinding("skills/list", PaginatedRequestParams, self._list),
            MethodBinding("skills/get", _GetParams, self._get),
            MethodBinding("resources/directory/read", _DirectoryParams, self._directory),
        )

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> HandlerResult:
        settings = self.current_settings()
        try:
            # An unchanged page is answered right here, as list_skills answers an
            # unchanged catalog; anything that may read files runs in a worker thread.
            page = self.publisher.cached_page(settings, params.cursor)
            if page is None:
                page = await anyio.to_thread.run_sync(self.publisher.page, settings, params.cursor)
        except InvalidCursorError as exc:
            raise _invalid(str(exc)) from exc
        result: dict[str, Any] = {"skills": page.entries}
        if page.next_cursor is not None:
            result["nextCursor"] = page.next_cursor
        if page.left_out:
            result["_meta"] = {LEFT_OUT_META_KEY: [d.to_payload() for d in page.left_out]}
        return _cacheable(result)

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _GetParams) -> HandlerResult:
        uri = parse_skill_uri(params.uri)
        if uri is None or not uri.is_skill_md:
            raise _invalid(
                f"No skill is served at {params.uri[:200]}: a skill is named by the URI of its "
                "SKILL.md, skill://<name>/SKILL.md; call skills/list for the published skills.",
                params.uri,
            )
        note_skill(uri.skill)
        found = await anyio.to_thread.run_sync(
            self.publisher.skill, self.current_settings(), uri.skill
        )
        if not isinstance(found, PublishedSkill):
            reason = (
                f"the skill is not published ({found.code}: {found.message})"
                if found is not None
                else "there is no such skill"
            )
            raise _invalid(f"No skill is served at {params.uri}: {reason}", params.uri)
        return _cacheable({"skill": found.entry})

    async def _directory(
        self, ctx: ServerRequestContext[Any, Any], params: _DirectoryParams
    ) -> HandlerResult:
        uri = parse_skill_uri(params.uri)
        if uri is None:
            raise _invalid(
                f"{params.uri[:200]} is not a directory resource: folders of skills are "
                "skill://<name> and skill://<name>/<folder>, without a trailing slash.",
                params.uri,
            )
        note_skill(uri.skill)
        try:
            children = await anyio.to_thread.run_sync(
                self.publisher.directory, self.current_settings(), uri
            )
        except UnknownResourceError as exc:
            raise _invalid(str(exc), params.uri) from exc
        start = 0
        if params.cursor is not None:
            if not params.cursor.isdigit() or int(params.cursor) > len(children):
                raise _invalid(
                    f"The cursor {params.cursor[:80]!r} was not handed out by "
                    "resources/directory/read; pass the nextCursor of the previous page."
                )
            start = int(params.cursor)
        page = children[start : start + DIRECTORY_PAGE_SIZE]
        result: dict[str, Any] = {
            "resultType": "complete",
            "resources": [
                {"uri": c.uri, "name": c.name, "mimeType": c.mime_type}
                | ({} if c.description is None else {"description": c.description})
                for c in page
            ],
        }
        if start + DIRECTORY_PAGE_SIZE < len(children):
            result["nextCursor"] = str(start + DIRECTORY_PAGE_SIZE)
        return result

    async def mime_types(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: a ``resources/read`` of a ``skill://`` file carries its MIME type.

        The resource template can give only one type to every file it serves; this sets
        each content's ``mimeType`` from the file's name (text/markdown for SKILL.md).
        """
        result = await call_next(ctx)
        uri = ctx.params.get("uri") if ctx.method == "resources/read" and ctx.params else None
        if isinstance(uri, str) and uri.startswith(SCHEME) and isinstance(result, dict):
            parsed = parse_skill_uri(uri)
            contents = result.get("contents")
            if parsed is not None and isinstance(contents, list):
                for content in contents:
                    if isinstance(content, dict):
                        content["mimeType"] = mime_type(parsed.relative)
        return result

    async def skill_manifests(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: ``resources/list`` also lists the SKILL.md of every published
        skill, named and described as its frontmatter is (the extension's SHOULD), with
        the MIME type text/markdown. The other files of a skill are found through
        ``skills/list``, not here."""
        result = await call_next(ctx)
        if ctx.method != "resources/list" or (ctx.params or {}).get("cursor") is not None:
            return result
        if isinstance(result, BaseModel):
            result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not isinstance(result, dict) or not isinstance(result.get("resources"), list):
            return result
        manifests = await anyio.to_thread.run_sync(self._manifests, self.current_settings())
        listed = {r.get("uri") for r in result["resources"] if isinstance(r, dict)}
        result["resources"].extend(m for m in manifests if m["uri"] not in listed)
        return result

    def _manifests(self, settings: Settings) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.publisher.page(settings, cursor)
            for entry in page.entries:
                front = entry.get("frontmatter") or {}
                resource: dict[str, Any] = {
                    "uri": entry["uri"],
                    "name": str(front.get("name", "")),
                    "mimeType": mime_type("SKILL.md"),
                }
                if isinstance(front.get("description"), str):
                    resource["description"] = front["description"]
                found.append(resource)
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor


def register_skill_resources(server: MCPServer, extension: SkillsExtension) -> None:
    """Serve every published file of `extension`'s skills through ``resources/read``.

    Adds the ``skill://{+path}`` template to `server`, and the middleware that lists
    each skill's SKILL.md in ``resources/list``. The server must have been built with
    ``extensions=[extension]`` and ``middleware=[extension.mime_types]``.
    """
    publisher = extension.publisher
    server.middleware.append(extension.skill_manifests)

    async def read_skill_file(path: str, ctx: Context) -> str | bytes:
        # The template decodes `path`; the URI as sent is parsed once more, segment by
        # segment, so that an encoded '%' in a file name is not decoded twice.
        raw = (ctx.request_context.params or {}).get("uri")
        uri = parse_skill_uri(raw if isinstance(raw, str) else f"{SCHEME}{path}")
        if uri is None:
            raise ResourceNotFoundError(f"No resource is served at {SCHEME}{path}")
        note_skill(uri.skill)
        try:
            return await anyio.to_thread.run_sync(publisher.read, extension.current_settings(), uri)
        except UnknownResourceError as exc:
            raise ResourceNotFoundError(wire_safe(str(exc))) from exc
        except StdToolsError as exc:
            raise MCPError(code=INVALID_PARAMS, message=wire_safe(str(exc))) from exc

    server.resource(
        f"{SCHEME}{{+path}}",
        name="skill-file",
        title="A file of a published skill",
        description=(
            "Any file of a skill published through the MCP Skills extension; skills/list "
            "gives every skill's files with their digests."
        ),
    )(read_skill_file)
