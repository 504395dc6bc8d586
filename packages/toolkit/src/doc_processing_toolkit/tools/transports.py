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
from typing import TYPE_CHECKING, Annotated, Any, Literal, TextIO
from urllib.parse import urlsplit

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolServerError

if TYPE_CHECKING:
    from .session import ToolSession

__all__ = [
    "LOCAL_SERVER_NAME",
    "SESSION_SERVER_NAME",
    "FastMCPTransport",
    "HttpTransport",
    "LocalTransport",
    "McpCommandEntry",
    "McpHttpEntry",
    "McpScriptEntry",
    "McpServerTransport",
    "Route",
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


class Transport:
    """How one server is reached (a subclass per route).

    Attributes:
        in_process: the server runs in this process (a call costs no round trip).
        known_at_construction: its tools are known before connecting.
        captures_stderr: it starts a child whose standard error is worth keeping.
    """

    in_process = False
    known_at_construction = False
    captures_stderr = False

    @property
    def route(self) -> Route:
        """The route's name, as messages and ``agent.servers`` show it."""
        raise NotImplementedError

    @property
    def target(self) -> Any:
        """What the transport was made from (a server object, a session or an entry)."""
        raise NotImplementedError

    def default_name(self) -> str:
        """The server's name when the entry gives none."""
        raise NotImplementedError

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


@dataclass(frozen=True, eq=False)
class McpServerTransport(Transport):
    """An MCP SDK server object in this process, reached through the SDK's memory streams."""

    server: Any
    in_process = True
    known_at_construction = True

    @property
    def route(self) -> Route:
        return "mcp_server"

    @property
    def target(self) -> Any:
        return self.server

    def default_name(self) -> str:
        return str(self.server.name)

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        from mcp import Client

        client = await stack.enter_async_context(Client(self.server))
        return client.session


@dataclass(frozen=True, eq=False)
class FastMCPTransport(Transport):
    """A fastmcp server object in this process, reached through fastmcp's own client."""

    server: Any
    in_process = True

    @property
    def route(self) -> Route:
        return "fastmcp"

    @property
    def target(self) -> Any:
        return self.server

    def default_name(self) -> str:
        return str(self.server.name)

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        import fastmcp

        client: Any = fastmcp.Client(self.server)
        await stack.enter_async_context(client)
        session: ToolSession = client.session
        return session


@dataclass(frozen=True, eq=False)
class LocalTransport(Transport):
    """The Python functions of a tools list, called in this process."""

    session: ToolSession
    """The `LocalFunctionSession` of the functions."""
    in_process = True
    known_at_construction = True

    @property
    def route(self) -> Route:
        return "local"

    @property
    def target(self) -> Any:
        return self.session

    def default_name(self) -> str:
        return LOCAL_SERVER_NAME

    def fixed_session(self) -> ToolSession | None:
        return self.session


@dataclass(frozen=True, eq=False)
class SessionTransport(Transport):
    """A session the caller opened and owns (the agent never closes or reopens it)."""

    entry: SessionEntry

    @property
    def route(self) -> Route:
        return "session"

    @property
    def target(self) -> Any:
        return self.entry

    def default_name(self) -> str:
        return SESSION_SERVER_NAME

    def fixed_session(self) -> ToolSession | None:
        session: ToolSession = self.entry.session
        return session


@dataclass(frozen=True, eq=False)
class StdioTransport(Transport):
    """A child process speaking MCP over stdio: a command, or a Python script or module
    run with this interpreter."""

    entry: McpCommandEntry | McpScriptEntry
    captures_stderr = True

    @property
    def route(self) -> Route:
        return self.entry.type

    @property
    def target(self) -> Any:
        return self.entry

    def default_name(self) -> str:
        entry = self.entry
        if isinstance(entry, McpCommandEntry):
            return Path(entry.command).name or entry.command
        return Path(entry.script).stem if entry.script else str(entry.module)

    def detail(self) -> str:
        return ": " + " ".join(self._command_line())

    def _command_line(self) -> list[str]:
        entry = self.entry
        if isinstance(entry, McpCommandEntry):
            return [entry.command, *entry.args]
        return ["python", *entry.python_args]

    async def open(self, stack: AsyncExitStack, errlog: TextIO | None, label: str) -> ToolSession:
        from mcp import Client, StdioServerParameters, stdio_client

        entry = self.entry
        if isinstance(entry, McpCommandEntry):
            command, args = command_path(entry.command, entry.env), list(entry.args)
        else:
            command, args = sys.executable, entry.python_args
        params = StdioServerParameters(
            command=command, args=args, env=dict(entry.env) or None, cwd=entry.cwd
        )
        assert errlog is not None
        client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
        return client.session


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


@dataclass(frozen=True, eq=False)
class HttpTransport(Transport):
    """An MCP server over streamable HTTP, with headers and an optional bearer token read
    from the environment at each connection."""

    entry: McpHttpEntry

    @property
    def route(self) -> Route:
        return "mcp_http"

    @property
    def target(self) -> Any:
        return self.entry

    def default_name(self) -> str:
        return urlsplit(self.entry.url).hostname or self.entry.url

    def detail(self) -> str:
        return f": {self.entry.url}"

    def headers(self, label: str) -> dict[str, str]:
        """The entry's headers, with the bearer token read from its variable now.

        Raises:
            ToolServerError: the variable is not set or empty.
        """
        headers = dict(self.entry.headers)
        variable = self.entry.bearer_token_env
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
        variable = self.entry.bearer_token_env
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
                Client(streamable_http_client(self.entry.url, http_client=http))
            )
        except Exception as exc:
            if refusals:
                raise self.refused(label, *refusals[-1]) from exc
            raise
        return client.session
