"""Skills from a server that serves the MCP Skills extension (``io.modelcontextprotocol/skills``).

Such a server publishes its skills through ``skills/list`` (every entry: the URI of the
skill's SKILL.md, its frontmatter, and each file with its SHA-256 digest and size) and
serves the files through ``resources/read``. It has no tool to load a skill, so the
skills wrapper offers the model three of its own on that server (inside its tool prefix):

- ``load_skill(uri)``: reads the skill's SKILL.md;
- ``load_skill_resource(uri)``: reads any other file the skill's entry lists;
- ``list_skills()``: the whole catalog, for when the prompt shows only part of it.

Every file read is checked against the entry it was listed with (size, then digest; for
SKILL.md also the frontmatter); anything that does not match is refused with a tool error
and one WARNING, and the whole skill is rejected (the extension's host duty: a host MUST
NOT load a skill on any discrepancy): no file of it is read again, its catalog line is
left out of later runs, and it is offered again only when a fresh ``skills/list`` changes
its entry (`Rejections`). A skill is identified by its server and its URI, never by its
name. Nothing
from such a server is ever executed: the wrapper offers no tool that runs a script, and a
script file can only be read as text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from xml.sax.saxutils import escape, quoteattr

import anyio
import yaml
from mcp import types
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    TextResourceContents,
    Tool,
)
from pydantic import TypeAdapter

from ..tools.base import ServerTools, ToolSession
from .entries import (
    LOGGER_NAME,
    CatalogReplyError,
    SkillEntry,
)
from .lock import SkillsLock

__all__ = [
    "EXTENSION_ID",
    "LIST_SKILLS",
    "LOAD_SKILL",
    "LOAD_SKILL_RESOURCE",
    "ExtensionCatalog",
    "ExtensionSkill",
    "ExtensionSkillsSession",
    "Rejection",
    "Rejections",
    "declares_extension",
    "fetch_extension_catalog",
    "listed_skill",
    "offer_with_skill_tools",
]

logger = logging.getLogger(LOGGER_NAME)

EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
"""The identifier a server declares the extension under (its capabilities' extensions)."""
_MAX_PAGES = 1000
_RESULT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
_MAX_SKILL_FILES = 512
_MAX_SKILL_BYTES = 16 * 1024 * 1024


def declares_extension(session: ToolSession) -> bool:
    """Whether the server behind `session` declared the Skills extension when it
    connected (a session that is not an MCP client session never has)."""
    capabilities = getattr(session, "server_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, dict) and EXTENSION_ID in extensions


@dataclass(frozen=True, slots=True)
class _File:
    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class ExtensionSkill:
    """One ``skills/list`` entry.

    Attributes:
        uri: the URI of the skill's SKILL.md.
        name: ``frontmatter.name``.
        description: ``frontmatter.description``.
        frontmatter: the whole frontmatter, as listed.
        files: each listed file by URI (empty when the server lists its files as
            ``"dynamic"``: such a skill has no digests to check, so it is not loaded).
        dynamic: whether the server publishes no file list for the skill.
    """

    uri: str
    name: str
    description: str
    frontmatter: Mapping[str, Any]
    files: Mapping[str, _File]
    dynamic: bool = False

    def entry(self) -> SkillEntry:
        """The skill as the catalog block shows it."""
        return SkillEntry(self.name, self.description, uri=self.uri)


@dataclass(frozen=True)
class ExtensionCatalog:
    """Every page of one ``skills/list`` answer.

    Attributes:
        skills: the entries, in the server's order.
        ttl: seconds the server lets the answer be reused (``ttlMs``; 0: ask every run).
        cache_scope: the server's ``cacheScope`` (``public`` or ``private``); the agent's
            reuse is private to its own session either way.
        fetched_at: `time.monotonic()` when the answer arrived.
        skipped: entries left out, each with why (logged once per answer).
    """

    skills: tuple[ExtensionSkill, ...]
    ttl: float
    cache_scope: str
    fetched_at: float
    skipped: tuple[str, ...] = ()
    by_uri: dict[str, ExtensionSkill] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        self.by_uri.update({skill.uri: skill for skill in self.skills})

    def fresh(self, now: float) -> bool:
        """Whether the answer may still be used instead of asking again."""
        return now - self.fetched_at < self.ttl


@dataclass(frozen=True, slots=True)
class Rejection:
    """A skill refused because one of its files did not match its listing.

    Attributes:
        skill: the entry as listed when it was refused (it stays refused while
            ``skills/list`` lists it unchanged).
        reason: why, as the model was told.
    """

    skill: ExtensionSkill
    reason: str


class Rejections:
    """The skills of one extension server refused so far, kept across runs by the skills
    wrapper, with those refused in the current run."""

    def __init__(self) -> None:
        self._held: dict[str, Rejection] = {}
        self.this_run: dict[str, str] = {}
        """Skill URI -> why, for the skills refused in the current run or still refused
        from an earlier one (the run's `SkillsOutcome.rejected`)."""

    def start_run(
        self, catalog: ExtensionCatalog, lock: SkillsLock | None = None, server: str = ""
    ) -> frozenset[str]:
        """Begin a run on `catalog` (a ``skills/list`` answer): forget each rejection
        whose entry that answer changed or no longer lists, refuse each newly listed skill
        that `lock` (``Agent(skills_lock=...)``) does not pin as listed (one WARNING each,
        naming `server`), and return the URIs of the skills refused."""
        self._held = {
            uri: held for uri, held in self._held.items() if catalog.by_uri.get(uri) == held.skill
        }
        for skill in catalog.skills:
            if lock is None or skill.uri in self._held:
                continue
            files = (
                None if skill.dynamic else {f.uri: (f.digest, f.size) for f in skill.files.values()}
            )
            reason = lock.refusal(skill.name, skill.uri, files)
            if reason is not None:
                logger.warning(
                    "skills: server %r: skill %s rejected, none of its files is used: %s",
                    server,
                    skill.uri,
                    reason,
                )
                self._held[skill.uri] = Rejection(skill, reason)
        self.this_run = {uri: held.reason for uri, held in self._held.items()}
        return frozenset(self._held)

    def reject(self, skill: ExtensionSkill, reason: str) -> None:
        """Refuse `skill` from now on (until its listed entry changes)."""
        self._held[skill.uri] = Rejection(skill, reason)
        self.this_run[skill.uri] = reason

    def reason(self, uri: str) -> str | None:
        """Why the skill at `uri` is refused, or None when it is not."""
        held = self._held.get(uri)
        return None if held is None else held.reason


def _parse_entry(raw: Any) -> ExtensionSkill:
    if not isinstance(raw, dict):
        raise CatalogReplyError("an entry is not an object")
    uri, front = raw.get("uri"), raw.get("frontmatter")
    if not isinstance(uri, str) or not isinstance(front, dict):
        raise CatalogReplyError("an entry lacks a string 'uri' and a 'frontmatter' object")
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        raise CatalogReplyError(f"{uri}: the frontmatter lacks a string name and description")
    resources = raw.get("resources")
    if resources == "dynamic":
        return ExtensionSkill(uri, name, description, front, {}, dynamic=True)
    if not isinstance(resources, list):
        raise CatalogReplyError(f"{uri}: 'resources' is neither a list nor \"dynamic\"")
    files: dict[str, _File] = {}
    for item in resources:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("uri"), str)
            and isinstance(item.get("digest"), str)
            and isinstance(item.get("size"), int)
        ):
            raise CatalogReplyError(f"{uri}: a resource lacks uri, digest or size")
        files[item["uri"]] = _File(item["uri"], item["digest"], item["size"])
    if uri not in files:
        raise CatalogReplyError(f"{uri}: its resources do not list the SKILL.md itself")
    if len(files) > _MAX_SKILL_FILES or sum(f.size for f in files.values()) > _MAX_SKILL_BYTES:
        raise CatalogReplyError(f"{uri}: more than 512 files or 16 MiB, the extension's limits")
    return ExtensionSkill(uri, name, description, front, files)


def _seconds(value: Any) -> float:
    return value / 1000 if isinstance(value, int | float) and value > 0 else 0.0


async def fetch_extension_catalog(session: Any, time_limit: float) -> ExtensionCatalog:
    """Ask for every page of ``skills/list`` within `time_limit` seconds.

    An entry that breaks the extension's rules is left out (and named in `skipped`);
    the others are kept.

    Raises:
        CatalogReplyError: a page is not a ``skills/list`` result.
        TimeoutError: the pages did not all arrive in time.
        Exception: whatever the session raises (an error answer, a closed connection).
    """
    skills: list[ExtensionSkill] = []
    skipped: list[str] = []
    ttl = math.inf
    scope = "public"
    with anyio.fail_after(time_limit if math.isfinite(time_limit) else None):
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            request = types.Request[dict[str, Any], str](method="skills/list", params=params)
            page = await session.send_request(request, _RESULT)
            entries = page.get("skills")
            if not isinstance(entries, list):
                raise CatalogReplyError("skills/list answered without a 'skills' array")
            for raw in entries:
                try:
                    skills.append(_parse_entry(raw))
                except CatalogReplyError as exc:
                    skipped.append(str(exc))
            ttl = min(ttl, _seconds(page.get("ttlMs")))
            if page.get("cacheScope") == "private":
                scope = "private"
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
    return ExtensionCatalog(
        skills=tuple(skills),
        ttl=0.0 if math.isinf(ttl) else ttl,
        cache_scope=scope,
        fetched_at=time.monotonic(),
        skipped=tuple(skipped),
    )


def _tool(name: str, description: str, properties: dict[str, Any]) -> Tool:
    return Tool(
        name=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    )


_URI = {"type": "string", "description": "the file's URI, exactly as listed"}
LOAD_SKILL = _tool(
    "load_skill",
    "Load a skill's instructions (its SKILL.md) by the skill's uri from the skills "
    "catalog. The result also lists the skill's other files.",
    {"uri": {"type": "string", "description": "the skill's uri from the catalog"}},
)
LOAD_SKILL_RESOURCE = _tool(
    "load_skill_resource",
    "Read one file of a skill (a reference, a template, a script as text) by its uri, "
    "as load_skill lists it. Nothing is executed.",
    {"uri": _URI},
)
LIST_SKILLS = _tool(
    "list_skills",
    "List every skill of this server: name, uri and description, one per line.",
    {},
)
_LOADERS: Final = (LOAD_SKILL, LOAD_SKILL_RESOURCE)

#: The tools the toolkit adds to a server that serves the Skills extension (the loaders
#: only while its catalog has skills).
EXTENSION_TOOL_NAMES: Final = frozenset(tool.name for tool in (LIST_SKILLS, *_LOADERS))


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _frontmatter(text: str) -> Any:
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    try:
        return yaml.safe_load(text[3:end])
    except yaml.YAMLError:
        return None


class _Refused(Exception):
    """A file that is not what its entry says; the message is for the model."""


class ExtensionSkillsSession:
    """A server's session with the wrapper's skill tools added for one run.

    Calls to ``list_skills``, ``load_skill`` and ``load_skill_resource`` (when the wrapper
    added them) are answered from `catalog` and ``resources/read`` on that server only;
    every other call goes to the server unchanged.

    Args:
        inner: the server's session.
        server_name: the server's name, for messages and the origin tag.
        catalog: the entries held for this run (reads are checked against them).
        own: the tool names the wrapper answers.
        rejections: the skills of this server refused so far; a mismatch adds to it
            (default: a new, empty record).
        refusal: skill name -> why this agent does not offer it (out of its scope, or
            tools it needs are missing); such a skill is not listed and none of its files
            is read. None: every skill is offered.
    """

    def __init__(
        self,
        inner: Any,
        server_name: str,
        catalog: ExtensionCatalog,
        own: frozenset[str],
        rejections: Rejections | None = None,
        refusal: Callable[[str], str | None] | None = None,
    ) -> None:
        self.inner = inner
        self._server = server_name
        self._catalog = catalog
        self._own = own
        self._rejections = rejections if rejections is not None else Rejections()
        self._refusal = refusal

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> ListToolsResult:
        """The server's own tools (the wrapper's are offered by the skills step)."""
        result: ListToolsResult = await self.inner.list_tools(params=params)
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Answer the wrapper's tools; pass every other call to the server."""
        if name not in self._own:
            result: CallToolResult = await self.inner.call_tool(name, arguments)
            return result
        args = arguments or {}
        if name == "list_skills":
            return _text(self._listing())
        uri = args.get("uri")
        if not isinstance(uri, str):
            return _error(f"{name} needs the file's uri (a string), as the catalog lists it.")
        try:
            if name == "load_skill":
                return _text(await self._load_skill(uri))
            return _text(await self._load_resource(uri))
        except _Refused as exc:
            return _error(str(exc))

    def listed_skill(
        self, tool: str, arguments: Mapping[str, Any]
    ) -> tuple[str, dict[str, str]] | None:
        """The skill a call of the wrapper's `tool` with `arguments` would read from: the
        URI of its SKILL.md and its files as listed (URI -> digest); None when it reads
        none."""
        uri = arguments.get("uri")
        if tool not in self._own or tool == "list_skills" or not isinstance(uri, str):
            return None
        owner = self._catalog.by_uri.get(uri) if tool == "load_skill" else None
        if owner is None and tool == "load_skill_resource":
            owner = next((s for s in self._catalog.skills if uri in s.files), None)
        if owner is None or owner.dynamic:
            return None
        return owner.uri, {f.uri: f.digest for f in owner.files.values()}

    def _not_offered(self, skill: ExtensionSkill) -> str | None:
        return None if self._refusal is None else self._refusal(skill.name)

    def _listing(self) -> str:
        lines = [
            f"{skill.name}\t{skill.uri}\t{skill.description}"
            for skill in self._catalog.skills
            if self._rejections.reason(skill.uri) is None and self._not_offered(skill) is None
        ]
        return "\n".join(lines) or f"server {self._server!r} lists no skills."

    def _refuse(self, skill: ExtensionSkill, reason: str) -> _Refused:
        """Reject the whole of `skill` for `reason` (logged once, as a WARNING)."""
        logger.warning(
            "skills: server %r: skill %s rejected, none of its files is used: %s",
            self._server,
            skill.uri,
            reason,
        )
        self._rejections.reject(skill, reason)
        return _Refused(
            f"refused: {reason}. The skill {skill.uri} is not used: none of its files is "
            "read in this run."
        )

    def _check_not_rejected(self, skill: ExtensionSkill) -> None:
        held_back = self._not_offered(skill)
        if held_back is not None:
            raise _Refused(f"refused by the agent: {held_back}")
        reason = self._rejections.reason(skill.uri)
        if reason is not None:
            raise _Refused(
                f"refused: the skill {skill.uri} of server {self._server!r} was rejected "
                f"({reason}); none of its files is used. Work without it."
            )

    async def _read(self, skill: ExtensionSkill, uri: str) -> bytes:
        self._check_not_rejected(skill)
        listed = skill.files.get(uri)
        if listed is None:
            raise _Refused(
                f"{uri} is not a file of skill {skill.uri} as server {self._server!r} listed "
                "it; read only the files load_skill lists."
            )
        try:
            result = await self.inner.read_resource(uri)
        except Exception as exc:
            raise _Refused(
                f"could not read {uri} from server {self._server!r}: {type(exc).__name__}: {exc}"
            ) from None
        data = b""
        for content in result.contents:
            if isinstance(content, TextResourceContents):
                data += content.text.encode("utf-8")
            elif isinstance(content, BlobResourceContents):
                data += base64.b64decode(content.blob)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if len(data) != listed.size or digest != listed.digest:
            what = (
                f"{len(data)} bytes instead of the {listed.size} listed"
                if len(data) != listed.size
                else "a different SHA-256 digest from the one listed"
            )
            raise self._refuse(
                skill,
                f"{uri} from server {self._server!r} does not match the skills listing "
                f"({what}): the skill changed on the server since it was listed, or the "
                "file was tampered with",
            )
        return data

    def _skill(self, uri: str) -> ExtensionSkill:
        skill = self._catalog.by_uri.get(uri)
        if skill is None:
            raise _Refused(
                f"server {self._server!r} lists no skill at {uri}; use a uri from the "
                "skills catalog (list_skills lists them all)."
            )
        if skill.dynamic:
            raise _Refused(
                f"skill {uri} of server {self._server!r} publishes no digests for its files "
                '("dynamic"), so its content cannot be checked; it is not loaded.'
            )
        return skill

    async def _load_skill(self, uri: str) -> str:
        skill = self._skill(uri)
        text = (await self._read(skill, uri)).decode("utf-8", errors="replace")
        if _frontmatter(text) != dict(skill.frontmatter):
            raise self._refuse(
                skill,
                f"the frontmatter of {uri} from server {self._server!r} differs from the "
                "skills listing",
            )
        others = [f for f in skill.files if f != uri]
        listing = "\n".join(f"  {escape(f)}" for f in others)
        return (
            f"<skill_content name={quoteattr(skill.name)} uri={quoteattr(uri)} "
            f"server={quoteattr(self._server)}>\n{text}\n</skill_content>\n"
            f"<skill_resources>\n{listing}\n</skill_resources>\n"
            "Relative paths in the skill resolve against its uri without /SKILL.md. Read a "
            "file with load_skill_resource; nothing of this skill is ever executed."
        )

    async def _load_resource(self, uri: str) -> str:
        owner = next((s for s in self._catalog.skills if uri in s.files and not s.dynamic), None)
        if owner is None:
            raise _Refused(
                f"{uri} is not a file of any skill server {self._server!r} lists; read only "
                "the files load_skill lists."
            )
        data = await self._read(owner, uri)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return json.dumps(
                {"uri": uri, "size": len(data), "note": "binary file, not shown as text"}
            )


def listed_skill(
    session: Any, tool: str, arguments: Mapping[str, Any]
) -> tuple[str, dict[str, str]] | None:
    """For a call of the wrapper's ``load_skill`` or ``load_skill_resource`` through
    `session`: the URI of the SKILL.md of the skill it reads and every file of that skill,
    as listed (URI -> digest). None for any other call, and for a URI the listing does not
    have."""
    if not isinstance(session, ExtensionSkillsSession):
        return None
    return session.listed_skill(tool, arguments)


def offer_with_skill_tools(
    source: ServerTools,
    catalog: ExtensionCatalog,
    *,
    with_loaders: bool,
    rejections: Rejections | None = None,
    refusal: Callable[[str], str | None] | None = None,
) -> ServerTools:
    """`source` with the wrapper's ``list_skills`` added and, `with_loaders`, its
    ``load_skill`` and ``load_skill_resource`` (each only when the server has no tool of
    that name), their calls going through an `ExtensionSkillsSession` that refuses the
    skills of `rejections`."""
    existing = {tool.name for tool in source.tools}
    offered = (LIST_SKILLS, *_LOADERS) if with_loaders else (LIST_SKILLS,)
    added = tuple(tool for tool in offered if tool.name not in existing)
    own = frozenset(tool.name for tool in added)
    session = ExtensionSkillsSession(
        source.session, source.server.name, catalog, own, rejections, refusal
    )
    return ServerTools(
        server=source.server,
        session=session,
        tools=(*source.tools, *added),
        instructions=source.instructions,
    )
