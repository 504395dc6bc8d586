"""`Agent`, `RunResult` and the run loop.

A run: connect the servers not yet connected (sessions are kept across runs) ->
`Agent._prepare_run` (the system prompt and the tools the model may see for this run) ->
model / tool loop -> `RunResult`.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import json
import logging
import os
import re
import threading
import time
import weakref
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
from mcp.types import CallToolResult, Tool

from . import config as _config
from ._loop_thread import LoopThread
from .approval import (
    ApprovalGate,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalSetting,
    resolve_approval,
)
from .config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_TURNS,
    DEFAULT_SKILLS_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
)
from .errors import (
    ConfigError,
    MaxTurnsExceededError,
    ToolkitError,
    ToolNameConflictError,
    ToolServerError,
)
from .events import (
    AgentEvent,
    ApprovalEvent,
    FinalResultEvent,
    RunStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolCallRecord,
    ToolResultEvent,
)
from .messages import Message, ModelResponse, ToolCallPart, ToolResultPart, ToolSpec, Usage
from .models import Model, ModelRequest, TextDelta, ThinkingDelta, resolve_model
from .skills import (
    CatalogPrefetch,
    SkillsOutcome,
    SkillsStep,
    apply_skills,
    has_own_catalog,
)
from .tools.base import TOOL_NAME_PATTERN, ToolServer, ToolSession
from .tools.connections import ConnectionPool, ListedServer, describe_error
from .tools.loader import ToolLoader

if TYPE_CHECKING:
    from .batch import BatchControl, BatchInput, Engine, ItemResult, RetryPolicy
    from .builder import AgentBuilder

__all__ = ["Agent", "RunResult", "ToolRoute"]

logger = logging.getLogger(__name__)

#: Routes whose server usually runs outside this process (a pre-built session most often
#: reaches a remote one): their catalog fetch is started alongside the tool listing, see
#: `Agent._catalog_prefetch`. In process the extra task would cost more than it saves.
_PREFETCH_ROUTES: frozenset[str] = frozenset({"session", "mcp_command", "mcp_script", "mcp_http"})


_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(slots=True)
class RunResult:
    """What a run produced.

    Attributes:
        output: the model's final text.
        messages: the whole conversation: the history passed in, the prompt and every
            message of this run. Pass it as ``message_history`` to continue.
        tool_calls: every tool call of the run, in the order the model made them.
        approvals: every decision of the approval gate in this run, in the order the
            calls were made (empty without a gate).
        usage: tokens and requests, summed over the run's model requests.
        warnings: what went wrong without failing the run (an optional server that could
            not connect, a server that had to be reconnected, ...).
        skills: what skills auto-injection did in this run (status, server, the skills
            injected, the tools hidden).
        system_prompt: the system prompt the model received in this run (the
            instructions with the skill catalog, when one was injected).
        model_name: the model that answered.
        new_message_index: where this run's messages start in `messages`.
    """

    output: str
    messages: list[Message]
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    approvals: list[ApprovalRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    warnings: list[str] = field(default_factory=list)
    skills: SkillsOutcome = field(default_factory=lambda: SkillsOutcome(status="disabled"))
    system_prompt: str | None = None
    model_name: str = ""
    new_message_index: int = 0

    @property
    def new_messages(self) -> list[Message]:
        """The messages of this run only (the prompt onwards)."""
        return self.messages[self.new_message_index :]


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """Where a tool name the model may use goes.

    Attributes:
        name: the name the model sees and calls.
        listed: the server (descriptor, session, tools) the tool belongs to.
        tool: the tool as its session lists it; `tool.name` is what the session is called
            with.
    """

    name: str
    listed: ListedServer
    tool: Tool

    @property
    def server(self) -> ToolServer:
        """The server descriptor."""
        return self.listed.server

    @property
    def session(self) -> ToolSession:
        """The session the call goes through."""
        return self.listed.session

    @property
    def server_tool(self) -> str:
        """The tool's name on its server: `tool.name` without the server's prefix."""
        prefix = self.server.tool_prefix
        if prefix and self.tool.name.startswith(f"{prefix}_"):
            return self.tool.name[len(prefix) + 1 :]
        return self.tool.name

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(
            name=self.name,
            description=self.tool.description or "",
            input_schema=dict(self.tool.input_schema),
        )


@dataclass(slots=True)
class _RunSetup:
    """The per-run view computed by `Agent._prepare_run`.

    Attributes:
        system_prompt: the system prompt of every model request of the run.
        tools: the tools the model may see and call, by model-visible name.
        warnings: what went wrong without failing the run.
        skills: what the skills step decided for this run.
    """

    system_prompt: str | None
    tools: dict[str, ToolRoute]
    warnings: list[str]
    skills: SkillsOutcome

    def tool_specs(self) -> list[ToolSpec]:
        """The visible tools, as the model receives them."""
        return [route.spec() for route in self.tools.values()]


def _model_tool_name(name: str) -> str:
    if TOOL_NAME_PATTERN.fullmatch(name):
        return name
    return (_INVALID_NAME_CHARS.sub("_", name) or "tool")[:64]


def build_tool_routes(servers: Sequence[ListedServer]) -> dict[str, ToolRoute]:
    """Map every tool name the model may call to its server.

    Names that providers would refuse (characters outside ``[a-zA-Z0-9_-]`` or longer
    than 64) are rewritten to fit.

    Raises:
        ToolNameConflictError: two servers expose the same name; the message names both
            servers and the tool.
    """
    routes: dict[str, ToolRoute] = {}
    for listed in servers:
        for tool in listed.tools:
            name = _model_tool_name(tool.name)
            if name != tool.name:
                logger.info(
                    "server %s: tool %r is shown to the model as %r",
                    listed.server.describe(),
                    tool.name,
                    name,
                )
            previous = routes.get(name)
            if previous is not None:
                if previous.listed is listed:
                    raise ToolNameConflictError(
                        f"server {listed.server.describe()} lists two tools named {name!r}."
                    )
                raise ToolNameConflictError(
                    f"servers {previous.server.describe()} and {listed.server.describe()} both "
                    f"expose a tool named {name!r}; give one of them a tool_prefix."
                )
            routes[name] = ToolRoute(name=name, listed=listed, tool=tool)
    return routes


def _content_text(result: CallToolResult) -> str:
    pieces: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            pieces.append(text)
            continue
        resource = getattr(block, "resource", None)
        resource_text = getattr(resource, "text", None)
        if isinstance(resource_text, str):
            pieces.append(resource_text)
        elif resource is not None:
            pieces.append(
                f"[binary resource {resource.uri}, {resource.mime_type or 'unknown type'}]"
            )
        elif block.type in ("image", "audio"):
            pieces.append(f"[{block.type} content, {getattr(block, 'mime_type', 'unknown type')}]")
        else:
            pieces.append(block.model_dump_json(by_alias=True, exclude_none=True))
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(pieces)


class Agent:
    """An LLM agent that uses tools from MCP servers and Python functions.

    Args:
        model: ``"provider:model"``, a bare model name whose provider is inferred
            (``claude-*``, ``gpt-*``, ``o1*``/``o3*``/``o4*``, ``test``) or a `Model`.
            Resolved at the first run.
        instructions: the system prompt.
        tools: tool servers and functions (see `ToolLoader` for what is accepted).
        auto_inject_skills: find a skills server and add its catalog to the system
            prompt on every run.
        provider_kwargs: merged unchanged into every provider request.
        max_turns: the most model requests of one run; a run still calling tools after
            that many raises `MaxTurnsExceededError`.
        model_options: passed to the provider when `model` is a name (``api_key``,
            ``base_url``, ...).
        tool_timeout: seconds one tool call may take before it is answered with an error
            result (None: no limit).
        skills_timeout: seconds the skills catalog fetch may take on each run.
        connect_timeout: seconds a server may take to start and answer.
        approval: tool calls that need approval before they run: an `ApprovalGate`, or a
            mapping ``{"tools": [patterns], "policy": callable or name}``. None (the
            default): every call runs.
        name: the agent's name, for logs.

    Raises:
        ConfigError: an argument or a tools entry is invalid.
    """

    def __init__(
        self,
        model: str | Model | None = None,
        *,
        instructions: str | None = None,
        tools: Iterable[Any] = (),
        auto_inject_skills: bool = True,
        provider_kwargs: Mapping[str, Any] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        model_options: Mapping[str, Any] | None = None,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        skills_timeout: float = DEFAULT_SKILLS_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        approval: ApprovalSetting | None = None,
        name: str | None = None,
    ) -> None:
        if max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, got {max_turns}.")
        for key, value in (
            ("tool_timeout", tool_timeout),
            ("skills_timeout", skills_timeout),
            ("connect_timeout", connect_timeout),
        ):
            if value is not None and value <= 0:
                raise ConfigError(f"{key} must be a positive number of seconds, got {value}.")
        self._model_spec = model
        self._model: Model | None = None
        self.instructions = instructions
        self.auto_inject_skills = auto_inject_skills
        self.provider_kwargs: dict[str, Any] = dict(provider_kwargs or {})
        self.max_turns = max_turns
        self.model_options: dict[str, Any] = dict(model_options or {})
        self.tool_timeout = tool_timeout
        self.skills_timeout = skills_timeout
        self.connect_timeout = connect_timeout
        self.approval: ApprovalGate | None = resolve_approval(approval)
        self.name = name or "agent"
        self._loader = ToolLoader(tools)
        self._pool = ConnectionPool(self._loader.servers, connect_timeout=connect_timeout)
        self._loop_token: object | None = None
        self._skills_server: ListedServer | None = None
        self._unmatched_logged: set[str] = set()
        self._exit_stack: AsyncExitStack | None = None
        self._loop_thread: LoopThread | None = None
        self._loop_thread_lock = threading.Lock()
        self._recipe: tuple[_config.AgentConfig, dict[str, Any]] | None = None
        """The configuration and overrides this agent was built from (`from_config`,
        `from_yaml`), for engines that build the same agent elsewhere (Ray actors)."""
        if self.model_options and not isinstance(model, str):
            raise ConfigError(
                "model_options apply when model is a name such as 'openai:gpt-5'; with a "
                "Model object (or no model), configure the model itself."
            )

    # -- construction helpers -------------------------------------------------------------

    @classmethod
    def builder(cls) -> AgentBuilder:
        """A fluent `AgentBuilder`, one method per constructor argument."""
        from .builder import AgentBuilder

        return AgentBuilder()

    @classmethod
    def from_config(cls, data: Mapping[str, Any], **overrides: Any) -> Agent:
        """An agent from a configuration mapping with the constructor's keys.

        `overrides` (constructor keywords) replace the mapping's values; a ``tools``
        override is added after the configured tools.

        Raises:
            ConfigError: a key is unknown, a value has the wrong type, or a ``${VAR}``
                is not set.
        """
        return cls._from_validated(_config.load_config_dict(data), overrides)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], **overrides: Any) -> Agent:
        """An agent from a YAML file with the constructor's keys (see `from_config`).

        Raises:
            ConfigError: the file is missing, is not YAML, or is invalid; the message
                names the file and the key.
        """
        return cls._from_validated(_config.load_yaml(path), overrides)

    @classmethod
    def _from_validated(cls, config: _config.AgentConfig, overrides: dict[str, Any]) -> Agent:
        values: dict[str, Any] = config.model_dump(exclude={"tools"})
        tools: list[Any] = list(config.tools)
        tools.extend(overrides.pop("tools", ()))
        values.update(overrides)
        agent = cls(tools=tools, **values)
        agent._recipe = (config, overrides)
        return agent

    # -- properties -----------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The resolved model.

        Raises:
            ConfigError: no model was given, or the name names no known provider.
            MissingDependencyError: the provider's SDK is not installed.
        """
        if self._model is None:
            if self._model_spec is None:
                raise ConfigError(
                    "this agent has no model; pass model='provider:name' (for example "
                    "'anthropic:claude-sonnet-5', or 'test' for the offline test model)."
                )
            self._model = resolve_model(self._model_spec, **self.model_options)
        return self._model

    @property
    def servers(self) -> tuple[ToolServer, ...]:
        """The tool servers in loaded order (see `ToolLoader`)."""
        return self._loader.servers

    def __repr__(self) -> str:
        spec = self._model_spec if isinstance(self._model_spec, str | None) else self.model.name
        return f"Agent(name={self.name!r}, model={spec!r}, servers={len(self.servers)})"

    # -- sessions -------------------------------------------------------------------------

    async def __aenter__(self) -> Agent:
        """Open every server's session now; they stay open until the block ends."""
        if self._exit_stack is not None:
            raise ToolkitError("this agent is already entered with `async with`.")
        self._bind_loop()
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            self._pool.attach(task_group)
            stack.push_async_callback(self._detach)
            await self.connect()
        except BaseException:
            await stack.aclose()
            raise
        self._exit_stack = stack
        return self

    async def _detach(self) -> None:
        await self._pool.aclose()
        self._pool.attach(None)
        self._loop_token = None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close every session the agent opened (and a model it created from a name)."""
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None:
            # The block's own exception is not passed in: it propagates unchanged instead
            # of being wrapped in an exception group by the owners' task group.
            await stack.aclose()
        await self._close_model()

    async def connect(self) -> list[str]:
        """Open the session of every server not yet connected and check the tool names.

        Returns the warnings (optional servers that could not connect).

        Raises:
            ToolServerError: a required server could not connect.
            ToolNameConflictError: two servers expose the same tool name.
        """
        _servers, _routes, warnings = await self._connect_and_list()
        return warnings

    async def aclose(self) -> None:
        """Close every session the agent opened (pre-built sessions are left open), and
        the model's client when the agent created the model from a name.
        """
        if self._exit_stack is not None:
            await self.__aexit__(None, None, None)
            return
        if self._loop_token is not None and _loop_ended(self._loop_token):
            self._pool.forget()
        else:
            await self._pool.aclose()
        self._loop_token = None
        await self._close_model()

    async def _close_model(self) -> None:
        close_model = getattr(self._model, "aclose", None)
        if isinstance(self._model_spec, str) and close_model is not None:
            await close_model()

    def close(self) -> None:
        """Close the sessions opened by `run_sync` and stop its event loop thread."""
        with self._loop_thread_lock:
            thread, self._loop_thread = self._loop_thread, None
        if thread is not None:
            try:
                thread.call(self.aclose)
            finally:
                thread.stop()

    def _bind_loop(self) -> None:
        token = anyio.lowlevel.current_token()
        if (
            self._loop_token is not None
            and self._loop_token != token
            and _loop_ended(self._loop_token)
        ):
            # asyncio cancelled the owner tasks when that loop ended, which stopped the
            # servers; what is left of them is forgotten and they reconnect here.
            logger.debug("the event loop of this agent's sessions ended; reconnecting")
            self._pool.forget()
            self._loop_token = None
        if self._loop_token is None:
            self._loop_token = token
        elif self._loop_token != token:
            raise ToolkitError(
                "this agent's sessions were opened in another event loop; close them there "
                "first (`await agent.aclose()`, or `agent.close()` after `run_sync`)."
            )

    # -- the per-run view -----------------------------------------------------------------

    async def _connect_and_list(
        self,
    ) -> tuple[tuple[ListedServer, ...], dict[str, ToolRoute], list[str]]:
        """Connect what is not connected (reconnecting dead sessions), list every server's
        tools, fail on an unreachable required server, and route every tool name (which
        checks for name conflicts).
        """
        self._bind_loop()
        listing = await self._pool.list_servers()
        warnings: list[str] = []
        for server, message in listing.failed:
            if server.required:
                raise ToolServerError(message)
            warnings.append(f"{message} (required: false, so the run goes on without it)")
            logger.warning("%s; continuing without it", message)
        warnings.extend(
            f"server {c.describe()} had lost its connection and was reconnected"
            for c in listing.reconnected
        )
        servers = tuple(listing.listed)
        return servers, build_tool_routes(servers), warnings

    async def _prepare_run(self) -> _RunSetup:
        """Compute the system prompt and the visible tools of one run: connect and list
        the servers, then apply the skills step (catalog appended, activation tools hidden
        on an empty catalog).
        """
        prefetch = self._catalog_prefetch()
        if prefetch is None:
            routes, warnings, step = await self._list_and_apply_skills(None)
        else:
            # Ask last run's skills server for its catalog while the tool lists are
            # fetched: one round trip instead of two when the server is out of process.
            # An error is raised after the task group, so that it reaches the caller as
            # itself and not wrapped in an exception group.
            failure: Exception | None = None
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(prefetch.run)
                try:
                    routes, warnings, step = await self._list_and_apply_skills(prefetch)
                except Exception as exc:
                    failure = exc
                finally:
                    prefetch.cancel()
            if failure is not None:
                raise failure
        self._skills_server = step.detected
        if self.approval is not None:
            self._log_unmatched_patterns(self.approval, routes)
        if step.outcome.warning is not None:
            warnings.append(step.outcome.warning)
        return _RunSetup(
            system_prompt=step.system_prompt,
            # Routes change only when the skills step hid tools of the skills server.
            tools=build_tool_routes(step.servers) if step.outcome.hidden_tools else routes,
            warnings=warnings,
            skills=step.outcome,
        )

    def _log_unmatched_patterns(self, gate: ApprovalGate, routes: Mapping[str, ToolRoute]) -> None:
        """One WARNING per approval pattern that matches no tool of any server: a typo
        there would leave the tool it meant ungated."""
        names = [(route.name, route.server_tool) for route in routes.values()]
        for pattern in gate.unmatched(names):
            if pattern not in self._unmatched_logged:
                self._unmatched_logged.add(pattern)
                logger.warning(
                    "agent %r: approval pattern %r matches no tool of its servers (tools: %s)",
                    self.name,
                    pattern,
                    ", ".join(sorted(routes)) or "none",
                )

    async def _list_and_apply_skills(
        self, prefetch: CatalogPrefetch | None
    ) -> tuple[dict[str, ToolRoute], list[str], SkillsStep]:
        """`_connect_and_list`, then the skills step on what it listed: the routes, the
        warnings so far and the step."""
        listed, routes, warnings = await self._connect_and_list()
        step = await apply_skills(
            listed,
            enabled=self.auto_inject_skills,
            instructions=self.instructions,
            timeout_s=self.skills_timeout,
            prefetch=prefetch,
        )
        return routes, warnings, step

    def _catalog_prefetch(self) -> CatalogPrefetch | None:
        """A catalog call to start before listing, when last run's skills server is out
        of process and its session is still open; None otherwise.
        """
        last = self._skills_server
        if (
            last is None
            or last.server.route not in _PREFETCH_ROUTES
            or not self.auto_inject_skills
            or has_own_catalog(self.instructions)
            or not self._pool.is_live(last.session)
        ):
            return None
        return CatalogPrefetch(last, self.skills_timeout)

    # -- running --------------------------------------------------------------------------

    async def run(self, prompt: str, message_history: Sequence[Message] | None = None) -> RunResult:
        """Run the agent on `prompt` until the model gives a final answer.

        Args:
            prompt: the user's message.
            message_history: earlier messages to continue from (a previous
                `RunResult.messages`).

        Raises:
            MaxTurnsExceededError: the model still called tools after `max_turns` requests.
            ToolServerError: a required server could not be reached.
            ToolNameConflictError: two servers expose the same tool name.
            ModelError: the model provider failed.
        """
        result: RunResult | None = None
        async with aclosing(self._iterate(prompt, message_history, stream=False)) as events:
            async for event in events:
                if isinstance(event, FinalResultEvent):
                    result = event.result
        assert result is not None
        return result

    async def run_stream(
        self, prompt: str, message_history: Sequence[Message] | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Run the agent and yield its events as they happen.

        The first event is a `RunStartEvent` (the system prompt with any injected skill
        catalog, and the tools offered). Text arrives as `TextDeltaEvent`s (the model is
        streamed), and a model's visible reasoning, when its provider streams it, as
        `ThinkingDeltaEvent`s; each tool call is a `ToolCallEvent` before it runs and a
        `ToolResultEvent` once it ends; the last event is a `FinalResultEvent` holding the
        `RunResult`. Errors are raised as in `run`.
        """
        async with aclosing(self._iterate(prompt, message_history, stream=True)) as events:
            async for event in events:
                yield event

    def run_sync(self, prompt: str, message_history: Sequence[Message] | None = None) -> RunResult:
        """`run` for code without an event loop.

        Sessions live in a private event loop thread and stay open across calls; close
        them with `close()` (done for you at interpreter exit).

        Raises:
            ToolkitError: called from inside a running event loop (use `await agent.run`).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ToolkitError(
                "run_sync() cannot be called from a running event loop; use `await agent.run()`."
            )
        history = message_history

        async def call() -> RunResult:
            return await self.run(prompt, message_history=history)

        return self._sync_loop().call(call)

    def _sync_loop(self) -> LoopThread:
        """The loop thread of the `*_sync` methods, started on first use."""
        with self._loop_thread_lock:
            # Threads calling run_sync at once share one loop thread (and so one set of
            # sessions) instead of each starting its own.
            if self._loop_thread is None:
                self._loop_thread = LoopThread(f"dpt-agent-{self.name}")
                _SYNC_AGENTS.add(self)
            return self._loop_thread

    def run_batch(
        self,
        items: BatchInput,
        prompt: str,
        *,
        concurrency: int = 4,
        output: str | os.PathLike[str] | None = None,
        resume: bool = False,
        engine: Literal["local", "ray"] | Engine = "local",
        ray_address: str | None = None,
        retry: RetryPolicy | None = None,
        control: BatchControl | None = None,
    ) -> AsyncGenerator[ItemResult, None]:
        """Run `prompt` on every item and yield one `ItemResult` per item as it finishes.

        A failing item never stops the batch: its result says ``failed`` and why.

        Args:
            items: document paths, or mappings of fields (a JSON object per item).
            prompt: a template: ``{path}``, ``{name}`` and ``{stem}`` of a path item, any
                field of a mapping (an item without a field it uses fails alone).
            concurrency: items running at once (with a named engine; an engine object
                has its own).
            output: a JSONL results file, one whole line per item, written as results
                arrive.
            resume: keep the items `output` holds as ok (yielded as ``skipped``) and run
                the others again.
            engine: ``"local"`` (this process, sharing this agent's sessions), ``"ray"``
                (an actor pool, each actor with its own agent from this agent's
                configuration), or an engine object (`LocalEngine`, `RayEngine`).
            ray_address: the Ray cluster to join with ``engine="ray"`` (None: start Ray
                on this machine).
            retry: how runs failed by rate limits and overloads are retried.
            control: stops the batch from outside (`BatchControl.stop` / `cancel`).

        Raises:
            BatchError: the template is malformed, or `output` cannot be used.
            MissingDependencyError: ``engine="ray"`` without the ``ray`` extra.
        """
        from .batch import runner

        chosen = runner.make_engine(
            engine, concurrency=concurrency, retry=retry, ray_address=ray_address
        )
        return runner.run_batch(
            self, items, prompt, engine=chosen, output=output, resume=resume, control=control
        )

    def run_batch_sync(
        self, items: BatchInput, prompt: str, **options: Any
    ) -> Iterator[ItemResult]:
        """`run_batch` for code without an event loop: an iterator of the results as they
        finish (the runs go on in the agent's loop thread, as with `run_sync`). Leaving
        the loop early cancels the rest of the batch.

        Raises:
            ToolkitError: called from inside a running event loop.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ToolkitError(
                "run_batch_sync() cannot be called from a running event loop; use "
                "`agent.run_batch()`."
            )
        from .batch import runner

        return runner.iterate_sync(
            self._sync_loop(), lambda: self.run_batch(items, prompt, **options)
        )

    async def _iterate(
        self, prompt: str, history: Sequence[Message] | None, *, stream: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        model = self.model
        gate = self.approval  # one gate for the whole run, even if the attribute changes
        setup = await self._prepare_run()
        messages: list[Message] = list(history or ())
        start = len(messages)
        messages.append(Message.user(prompt))
        records: list[ToolCallRecord] = []
        approvals: list[ApprovalRecord] = []
        usage = Usage()
        specs = setup.tool_specs()
        yield RunStartEvent(
            system_prompt=setup.system_prompt,
            tools=tuple(spec.name for spec in specs),
            skills=setup.skills,
            warnings=tuple(setup.warnings),
        )
        for turn in range(1, self.max_turns + 1):
            request = ModelRequest(
                system=setup.system_prompt,
                messages=tuple(messages),
                tools=specs,
                provider_kwargs=self.provider_kwargs,
            )
            if stream:
                response: ModelResponse | None = None
                replies = model.stream(request)
                try:
                    async for item in replies:
                        if isinstance(item, TextDelta):
                            yield TextDeltaEvent(item.text)
                        elif isinstance(item, ThinkingDelta):
                            yield ThinkingDeltaEvent(item.text)
                        else:
                            response = item
                finally:
                    # A consumer that stops early closes the model's stream (and its HTTP
                    # response) now, not whenever the garbage collector gets to it.
                    close = getattr(replies, "aclose", None)
                    if close is not None:
                        await close()
                if response is None:
                    raise ToolkitError(f"model {model.name} ended its stream without a reply.")
            else:
                response = await model.request(request)
            usage = usage + response.usage
            logger.debug(
                "agent %r turn %d: %s answered with %d tool calls",
                self.name,
                turn,
                model.name,
                len(response.tool_calls),
            )
            messages.append(response.to_message())
            calls = response.tool_calls
            if not calls:
                result = RunResult(
                    output=response.text,
                    messages=messages,
                    tool_calls=records,
                    approvals=approvals,
                    usage=usage,
                    warnings=setup.warnings,
                    skills=setup.skills,
                    system_prompt=setup.system_prompt,
                    model_name=response.model_name or model.name,
                    new_message_index=start,
                )
                yield FinalResultEvent(result)
                return
            if turn == self.max_turns:
                names = ", ".join(call.name for call in calls)
                raise MaxTurnsExceededError(
                    f"agent {self.name!r} reached max_turns={self.max_turns}: after "
                    f"{self.max_turns} model requests the model still asked for tools ({names}) "
                    "instead of answering; raise max_turns or make the task smaller."
                )
            for call in calls:
                route = setup.tools.get(call.name)
                yield ToolCallEvent(call, route.server.name if route else None)
            # The gate decides on each call in order before any of them runs; only the
            # approved ones are then called (together, as without a gate).
            denials: dict[int, str] = {}
            if gate is not None:
                for index, call in enumerate(calls):
                    decision = await _decide(gate, call, setup)
                    if decision is None:
                        continue
                    approvals.append(decision)
                    yield ApprovalEvent(decision)
                    if not decision.approved:
                        denials[index] = (
                            f"The call to {call.name} was denied and did not run: "
                            f"{decision.reason or 'no reason given'}"
                        )
            done = await self._call_tools(calls, setup, denials)
            records.extend(done)
            for record in done:
                yield ToolResultEvent(record)
            messages.append(
                Message(
                    role="user",
                    parts=tuple(
                        ToolResultPart(
                            call_id=r.call_id, name=r.name, content=r.content, is_error=r.is_error
                        )
                        for r in done
                    ),
                )
            )
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    async def _call_tools(
        self, calls: Sequence[ToolCallPart], setup: _RunSetup, denials: Mapping[int, str]
    ) -> list[ToolCallRecord]:
        if len(calls) == 1:
            return [await self._call_tool(calls[0], setup, denials.get(0))]
        records: list[ToolCallRecord | None] = [None] * len(calls)

        async def run_one(index: int, call: ToolCallPart) -> None:
            records[index] = await self._call_tool(call, setup, denials.get(index))

        async with anyio.create_task_group() as tg:
            for index, call in enumerate(calls):
                tg.start_soon(run_one, index, call)
        return [r for r in records if r is not None]

    async def _call_tool(
        self, call: ToolCallPart, setup: _RunSetup, denial: str | None
    ) -> ToolCallRecord:
        """Run one call; `denial` (the approval gate's refusal) answers it without
        calling the tool."""
        started = time.perf_counter()
        route = setup.tools.get(call.name)

        def record(content: str, is_error: bool) -> ToolCallRecord:
            return ToolCallRecord(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                server=route.server.name if route else None,
                content=content,
                is_error=is_error,
                duration=time.perf_counter() - started,
            )

        if route is None:
            available = ", ".join(sorted(setup.tools)) or "none"
            return record(f"Unknown tool {call.name!r}. Available tools: {available}.", True)
        if call.arguments_error is not None:
            return record(
                f"The arguments for {call.name!r} are not a JSON object ({call.arguments_error}); "
                "call the tool again with valid JSON arguments.",
                True,
            )
        if denial is not None:
            return record(denial, True)
        try:
            with anyio.fail_after(self.tool_timeout):
                result = await route.session.call_tool(route.tool.name, call.arguments)
        except TimeoutError:
            logger.warning("tool %r timed out after %g s", call.name, self.tool_timeout)
            return record(f"Tool {call.name!r} timed out after {self.tool_timeout:g} s.", True)
        except Exception as exc:
            logger.warning("tool %r failed: %s", call.name, describe_error(exc))
            return record(f"Tool {call.name!r} failed: {describe_error(exc)}", True)
        done = record(_content_text(result), bool(result.is_error))
        logger.debug(
            "tool %r on server %r: %s in %.3f s",
            call.name,
            route.server.name,
            "error" if done.is_error else "ok",
            done.duration,
        )
        return done


async def _decide(
    gate: ApprovalGate, call: ToolCallPart, setup: _RunSetup
) -> ApprovalRecord | None:
    """The gate's decision on `call`, or None when the call needs none (the tool is not
    gated, or the call fails before reaching a tool: unknown name, invalid arguments)."""
    route = setup.tools.get(call.name)
    if route is None or call.arguments_error is not None:
        return None
    if not gate.matches(route.name, route.server_tool):
        return None
    request = ApprovalRequest(
        tool=route.name,
        server=route.server.name,
        server_tool=route.server_tool,
        arguments=copy.deepcopy(call.arguments),
        call_id=call.id,
    )
    return await gate.decide(request)


def _loop_ended(token: object) -> bool:
    native = getattr(token, "native_token", None)
    return isinstance(native, asyncio.AbstractEventLoop) and native.is_closed()


_SYNC_AGENTS: weakref.WeakSet[Agent] = weakref.WeakSet()
"""Agents whose run_sync started a loop thread; closed at interpreter exit."""


def _close_sync_agents_at_exit() -> None:
    for agent in list(_SYNC_AGENTS):
        try:
            agent.close()
        except Exception:
            logger.debug("closing agent %r at exit failed", agent, exc_info=True)


atexit.register(_close_sync_agents_at_exit)
