"""How a tool server is reached: one typed transport per kind of ``tools=[...]`` entry,
with the validated entries of the configuration.

A transport describes itself (its route and the detail shown in messages, the name a
server gets when none is given, whether it runs in this process) and opens its session on
an exit stack, in the owner task of `tools.connections` (which keeps the lifecycle: when
to open, reopen and close). Transports whose session is given as it is (the local
functions, a caller's session) hand it over with `Transport.fixed_session` and have
nothing to open.

Nothing here imports the MCP SDK, fastmcp or httpx2 until a session is opened.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TextIO
from urllib.parse import urlsplit

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from .._process import protect_process
from ..errors import ToolServerError

if TYPE_CHECKING:
    from .session import ToolSession

__all__ = [
    "LOCAL_SERVER_NAME",
    "SESSION_SERVER_NAME",
    "CommandTransport",
    "FastMCPTransport",
    "HttpTransport",
    "LocalTransport",
    "McpCommandEntry",
    "McpHttpEntry",
    "McpScriptEntry",
    "McpServerTransport",
    "Route",
    "ScriptTransport",
    "ServerEntry",
    "SessionEntry",
    "SessionTransport",
    "StdioTransport",
    "ToolEntryConfig",
    "Transport",
    "command_path",
]

Route = Literal[
    "mcp_server", "local", "mcp_command", "mcp_script", "mcp_http", "session", "fastmcp"
]
"""How a server is reached: an in-process MCP SDK server, the local functions, a command
or script over stdio, streamable HTTP, a pre-built session, or a fastmcp object."""

LOCAL_SERVER_NAME = "local-functions"
"""The name of the server holding a tools list's Python functions."""

SESSION_SERVER_NAME = "mcp-session"
"""The name of a pre-built session given without one."""

_PREFIX_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,30}$"
#: Seconds to connect, write or wait for a connection from the pool over streamable HTTP.
_HTTP_TIMEOUT_S = 30.0
#: Seconds to wait for the next bytes of a response over streamable HTTP.
_HTTP_STREAM_READ_TIMEOUT_S = 300.0


# -- the entries of a configuration ---------------------------------------------------------


class _ServerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    name: str | None = None
    """The server's name (shown in errors, warnings and `agent.servers`)."""
    required: bool = True
    """When false, a failure to connect is a warning in the run result, not an error."""
    tool_prefix: Annotated[str, Field(pattern=_PREFIX_PATTERN)] | None = None
    """Each tool of this server is exposed to the model as ``<prefix>_<tool>``."""


class McpCommandEntry(_ServerEntry):
    """``type: mcp_command``: start a command that speaks MCP over stdio."""

    type: Literal["mcp_command"]
    command: str
    args: list[str] = []
    env: dict[str, str] = {}
    """Variables given to the child on top of the MCP SDK's safe defaults (PATH, HOME...)."""
    cwd: str | None = None


class McpScriptEntry(_ServerEntry):
    """``type: mcp_script``: run a Python script (``script``) or module (``module``, as
    ``python -m``) with this interpreter, over stdio.
    """

    type: Literal["mcp_script"]
    script: str | None = None
    module: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*$")] | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None

    @pydantic.model_validator(mode="after")
    def _script_or_module(self) -> McpScriptEntry:
        if (self.script is None) == (self.module is None):
            raise ValueError("give exactly one of 'script' and 'module'")
        return self

    @property
    def python_args(self) -> list[str]:
        """The interpreter's arguments: the script or ``-m module``, then `args`."""
        target = [self.script] if self.script is not None else ["-m", str(self.module)]
        return [*target, *self.args]


class McpHttpEntry(_ServerEntry):
    """``type: mcp_http``: connect to an MCP server over streamable HTTP."""

    type: Literal["mcp_http"]
    url: Annotated[str, Field(pattern=r"^https?://")]
    headers: dict[str, str] = {}
    bearer_token_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    """The environment variable holding a bearer token, sent as ``Authorization: Bearer
    <token>``. Read each time the server is connected, so the token never sits in the
    configuration and a renewed token is picked up on the next connection."""

    @pydantic.model_validator(mode="after")
    def _one_authorization(self) -> McpHttpEntry:
        if self.bearer_token_env is not None and any(
            key.lower() == "authorization" for key in self.headers
        ):
            raise ValueError("give either bearer_token_env or an Authorization header, not both")
        return self


class SessionEntry(_ServerEntry):
    """``{"session": session, "name": ...}``: a `ClientSession` the caller opened and owns.

    Only in ``Agent(tools=[...])``; a YAML file cannot hold a session.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    session: Any


class ServerEntry(_ServerEntry):
    """``{"server": server, "tool_prefix": ...}``: an in-process MCP SDK server or fastmcp
    object with a name, prefix or ``required`` of your choosing.

    Only in ``Agent(tools=[...])``; a YAML file cannot hold a server object.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    server: Any


ToolEntryConfig = Annotated[
    McpCommandEntry | McpScriptEntry | McpHttpEntry, Field(discriminator="type")
]
"""One ``tools:`` entry of a configuration."""


# -- the transports --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Transport:
    """How one server is reached (a subclass per route).

    Attributes:
        target: what the transport was made from (a server object, the local functions'
            session, a session entry or a configuration entry).
        route: the route's name, as messages and ``agent.servers`` show it.
        in_process: the server runs in this process (a call costs no round trip).
        known_at_construction: its tools are known before connecting.
        captures_stderr: it starts a child whose standard error is worth keeping.
    """

    target: Any
    route: ClassVar[Route]
    in_process: ClassVar[bool] = False
    known_at_construction: ClassVar[bool] = False
    captures_stderr: ClassVar[bool] = False

    def default_name(self) -> str:
        """The server's name when the entry gives none: the server object's own name."""
        return str(self.target.name)

    def detail(self) -> str:
        """What is started or reached, for messages (``": command args"``, or empty)."""
        return ""

    def fixed_session(self) -> ToolSession | None:
        """The session given as it is (nothing to open, nothing the agent may close)."""
        return None

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        """Open the transport and its session on `stack` (in the owner task); `errlog`
        takes a child's standard error; `label` names the server in errors.

        Raises:
            ToolServerError: the server refused the connection in a way worth naming.
        """
        raise ToolServerError(f"server {label} has no connectable route")


class McpServerTransport(Transport):
    """An MCP SDK server object in this process, reached through the SDK's memory streams."""

    route = "mcp_server"
    in_process = True
    known_at_construction = True

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        from mcp import Client

        client = await stack.enter_async_context(Client(self.target))
        return client.session


class FastMCPTransport(Transport):
    """A fastmcp server object in this process, reached through fastmcp's own client."""

    route = "fastmcp"
    in_process = True

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        import fastmcp

        client: Any = fastmcp.Client(self.target)
        await stack.enter_async_context(client)
        session: ToolSession = client.session
        return session


class LocalTransport(Transport):
    """The Python functions of a tools list (their `LocalFunctionSession`), called in this
    process."""

    route = "local"
    in_process = True
    known_at_construction = True

    def default_name(self) -> str:
        return LOCAL_SERVER_NAME

    def fixed_session(self) -> ToolSession | None:
        session: ToolSession = self.target
        return session


class SessionTransport(Transport):
    """A session the caller opened and owns, from a `SessionEntry` (the agent never
    closes or reopens it)."""

    route = "session"

    def default_name(self) -> str:
        return SESSION_SERVER_NAME

    def fixed_session(self) -> ToolSession | None:
        session: ToolSession = self.target.session
        return session


class StdioTransport(Transport):
    """A child process speaking MCP over stdio, from an `McpCommandEntry` (a command) or
    an `McpScriptEntry` (a Python script or module run with this interpreter)."""

    target: McpCommandEntry | McpScriptEntry
    captures_stderr = True

    @classmethod
    def of(cls, entry: McpCommandEntry | McpScriptEntry) -> StdioTransport:
        """The transport of `entry`, of the route its ``type`` names."""
        return (CommandTransport if isinstance(entry, McpCommandEntry) else ScriptTransport)(entry)

    def default_name(self) -> str:
        entry = self.target
        if isinstance(entry, McpCommandEntry):
            return Path(entry.command).name or entry.command
        return Path(entry.script).stem if entry.script else str(entry.module)

    def _program(self) -> tuple[str, list[str], list[str]]:
        """(the program to start, its arguments, the command line shown in messages)."""
        entry = self.target
        if isinstance(entry, McpCommandEntry):
            shown = [entry.command, *entry.args]
            return command_path(entry.command, entry.env), list(entry.args), shown
        return sys.executable, entry.python_args, ["python", *entry.python_args]

    def detail(self) -> str:
        return ": " + " ".join(self._program()[2])

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        from mcp import Client, StdioServerParameters, stdio_client

        command, args, _ = self._program()
        entry = self.target
        # The server and the skill scripts it may run are processes of this user: close
        # this process (its environment, memory, descriptors) to them first.
        protect_process()
        params = StdioServerParameters(
            command=command, args=args, env=dict(entry.env) or None, cwd=entry.cwd
        )
        assert errlog is not None
        client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
        return client.session


class CommandTransport(StdioTransport):
    """``type: mcp_command``."""

    route = "mcp_command"


class ScriptTransport(StdioTransport):
    """``type: mcp_script``."""

    route = "mcp_script"


def command_path(command: str, env: Mapping[str, str] | None = None) -> str:
    """The program an ``mcp_command`` entry starts: `command` itself when it is a path or
    is found on the PATH the server will get (its `env`'s, else this process's), else the
    console script of that name next to the running interpreter, when there is one.

    So ``command: doc-processing-std-tools`` starts the script installed in this
    interpreter's virtual environment even when that environment is not activated (its
    ``bin`` folder is not on PATH), as ``python -m`` would.
    """
    if os.sep in command or (os.altsep and os.altsep in command):
        return command
    search = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=search) is not None:
        return command
    if not sys.executable:
        return command
    beside = shutil.which(command, path=str(Path(sys.executable).parent))
    return beside if beside is not None else command


class HttpTransport(Transport):
    """An MCP server over streamable HTTP, from an `McpHttpEntry`: its headers, and a
    bearer token read from the environment at each connection."""

    target: McpHttpEntry
    route = "mcp_http"

    def default_name(self) -> str:
        return urlsplit(self.target.url).hostname or self.target.url

    def detail(self) -> str:
        return f": {self.target.url}"

    def headers(self, label: str) -> dict[str, str]:
        """The entry's headers, with the bearer token read from its variable now.

        Raises:
            ToolServerError: the variable is not set or empty.
        """
        headers = dict(self.target.headers)
        variable = self.target.bearer_token_env
        if variable is not None:
            token = os.environ.get(variable, "").strip()
            if not token:
                raise ToolServerError(
                    f"server {label}: bearer_token_env names {variable}, which is not set "
                    f"or empty; export the server's token in {variable}."
                )
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def refused(self, label: str, status: int, challenge: str) -> ToolServerError:
        """The error for a server that answered 401 or 403: it said no to the credentials."""
        variable = self.target.bearer_token_env
        source = f"the token in {variable}" if variable else "the Authorization header"
        detail = f" ({challenge})" if challenge else ""
        what = "rejected the credentials" if status == 401 else "refused access"
        return ToolServerError(
            f"server {label} {what}: HTTP {status}{detail}. Check {source}: it may be "
            "missing, expired, for another server, or without the scopes needed."
        )

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        # The SDK reports a refused token as a bare error response; the status and the
        # server's WWW-Authenticate challenge are noted so the error can say what it was.
        refusals: list[tuple[int, str]] = []

        async def note_refusal(response: httpx2.Response) -> None:
            if response.status_code in (401, 403):
                refusals.append(
                    (response.status_code, response.headers.get("www-authenticate", ""))
                )

        # The SDK's transport takes headers through a client of our own. The timeouts are
        # the SDK's recommended ones: a server may hold a response stream open for long.
        timeout = httpx2.Timeout(_HTTP_TIMEOUT_S, read=_HTTP_STREAM_READ_TIMEOUT_S)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=self.headers(label) or None,
                timeout=timeout,
                event_hooks={"response": [note_refusal]},
            )
        )
        try:
            client = await stack.enter_async_context(
                Client(streamable_http_client(self.target.url, http_client=http))
            )
        except Exception as exc:
            if refusals:
                raise self.refused(label, *refusals[-1]) from exc
            raise
        return client.session
