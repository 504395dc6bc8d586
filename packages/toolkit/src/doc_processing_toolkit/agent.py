"""`Agent`: the settings and the public surface (run, run_sync, run_stream, run_batch).

A run: connect the servers not yet connected (sessions are kept across runs) -> the skills
wrapper asks each server once for its tools and instructions -> the model / tool loop
(`_run`) -> `RunResult`. The agent keeps the sessions (`ConnectionPool`) and the skills
wrapper (`SkillsToolset`, which keeps its own state between runs); it keeps no skills state
of its own.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

from ._loop_thread import LoopThread, close_at_exit, require_no_running_loop
from ._run import RunPlan, check_approval_patterns, iterate, prepare
from ._tracing import RunTrace, caller_context
from .approval import ApprovalGate, ApprovalSetting
from .builder import SettingsBuilder
from .config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_TURNS,
    DEFAULT_SKILLS_CATALOG_BUDGET,
    DEFAULT_SKILLS_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    AgentConfig,
    load_config_dict,
    load_yaml,
)
from .errors import ConfigError, ToolkitError
from .events import AgentEvent, FinalResultEvent
from .messages import Message
from .models import Model, resolve_model
from .result import RunResult
from .settings import AgentSettings
from .skills import SkillsToolset
from .skills.extension import EXTENSION_TOOL_NAMES
from .tools.base import ToolServer
from .tools.connections import ConnectionPool
from .tools.loader import ToolLoader
from .tools.routing import build_routes, visible_name

if TYPE_CHECKING:
    from .batch import BatchControl, BatchInput, Engine, ItemResult, RetryPolicy
    from .preview import RunPreview

__all__ = ["Agent", "AgentBuilder", "RunResult"]

logger = logging.getLogger(__name__)


class Agent:
    """An LLM agent that uses tools from MCP servers and Python functions.

    Every keyword is a field of `AgentConfig` (the one declaration of the settings, with
    its checks) and a method of `AgentBuilder`.

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
        skills_catalog_budget: the most characters the skill catalog block may take
            (about four a token). Over it, descriptions are shortened evenly at a word
            boundary (marked ``…``), then the skills that best match the run's prompt are
            kept and the others left out, and the block says how many are not shown and
            how to find them. The default, 16,000 characters (about 4,000 tokens), holds
            a catalog of a few dozen skills whole; None: no limit.
        skills_stale_after: when the catalog call fails, inject the last catalog fetched
            from the same server the same way, if it is at most this many seconds old,
            with a one-line notice that it may be out of date (``RunResult.skills.status``
            is ``stale``; the WARNING is still logged). None (the default): a failure
            injects nothing.
        notify_unavailable_servers: tell the model, in one line of the system prompt,
            which optional (``required: false``) servers could not be reached this run.
        approval: tool calls that need approval before they run: an `ApprovalGate`, or a
            mapping ``{"tools": [patterns], "policy": callable or name}``. None (the
            default): every call runs.
        skills_lock: a skills lock file (as ``dpt-skills lock`` writes it): a skill that a
            server serves through the Skills extension is used only when the lock names it
            and its listed files match the locked digests; any other is rejected (see
            ``RunResult.skills.rejected``). Read when the agent is built. None (the
            default): no pinning.
        skills_include: glob patterns (``*``, ``?``, ``[...]``, case-sensitive) over
            skill names: only the skills one of them matches are offered to this agent.
            None (the default): every skill.
        skills_exclude: glob patterns over skill names: the skills one of them matches
            are never offered to this agent (exclusion wins over inclusion). A skill not
            offered is not in the catalog block, is removed from list_skills and
            search_skills answers, and the toolkit refuses to load, read or run it with a
            tool error that says why, without calling the server.
            ``RunResult.skills`` records the scope and the skills it left out.
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
        skills_catalog_budget: int | None = DEFAULT_SKILLS_CATALOG_BUDGET,
        skills_stale_after: float | None = None,
        notify_unavailable_servers: bool = True,
        approval: ApprovalSetting | None = None,
        skills_lock: str | os.PathLike[str] | None = None,
        skills_include: Sequence[str] | None = None,
        skills_exclude: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        self.settings = AgentSettings.from_arguments(locals())
        """Every setting of this agent, checked and frozen (a run takes its plan from it)."""
        self._model: Model | None = None
        self._loader = ToolLoader(self.settings.tools)
        self._pool = ConnectionPool(
            self._loader.servers, connect_timeout=self.settings.values.connect_timeout
        )
        self._skills = SkillsToolset(self._pool)
        self._loop_token: object | None = None
        self._unmatched_logged: set[str] = set()
        self._exit_stack: AsyncExitStack | None = None
        self._loop_thread: LoopThread | None = None
        self._loop_thread_lock = threading.Lock()
        self._recipe: tuple[AgentConfig, dict[str, Any]] | None = None
        """The configuration and overrides this agent was built from (`from_config`,
        `from_yaml`), for engines that build the same agent elsewhere (Ray actors)."""

    # -- construction helpers -------------------------------------------------------------

    @classmethod
    def builder(cls) -> AgentBuilder:
        """A fluent `AgentBuilder`, one method per setting."""
        return AgentBuilder(cls)

    @classmethod
    def from_config(cls, data: Mapping[str, Any], **overrides: Any) -> Agent:
        """An agent from a configuration mapping with the constructor's keys.

        `overrides` (constructor keywords) replace the mapping's values; a ``tools``
        override is added after the configured tools.

        Raises:
            ConfigError: a key is unknown, a value has the wrong type, or a ``${VAR}``
                is not set.
        """
        return cls._from_validated(load_config_dict(data), overrides)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], **overrides: Any) -> Agent:
        """An agent from a YAML file with the constructor's keys (see `from_config`).

        Raises:
            ConfigError: the file is missing, is not YAML, or is invalid; the message
                names the file and the key.
        """
        return cls._from_validated(load_yaml(path), overrides)

    @classmethod
    def _from_validated(cls, config: AgentConfig, overrides: dict[str, Any]) -> Agent:
        values: dict[str, Any] = config.model_dump(exclude={"tools"})
        tools: list[Any] = list(config.tools)
        tools.extend(overrides.pop("tools", ()))
        values.update(overrides)
        agent = cls(tools=tools, **values)
        agent._recipe = (config, overrides)
        return agent

    def replica_factory(self) -> Callable[[], Agent]:
        """A picklable function that builds an agent like this one in another process:
        what each Ray actor runs to get its own agent (see `batch.BatchAgent`).

        Raises:
            ConfigError: this agent was not built from a configuration.
        """
        if self._recipe is None:
            raise ConfigError(
                "the ray engine builds one agent per actor from a configuration: build this "
                "agent with Agent.from_yaml(...) or Agent.from_config(...), or give "
                "RayEngine(agent_factory=...) a function that builds it."
            )
        config, overrides = self._recipe
        return functools.partial(_rebuild, config, dict(overrides))

    # -- properties -----------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The resolved model.

        Raises:
            ConfigError: no model was given, or the name names no known provider.
            MissingDependencyError: the provider's SDK is not installed.
        """
        if self._model is None:
            spec = self.settings.model
            if spec is None:
                raise ConfigError(
                    "this agent has no model; pass model='provider:name' (for example "
                    "'anthropic:claude-sonnet-5', or 'test' for the offline test model)."
                )
            self._model = resolve_model(spec, **self.settings.values.model_options)
        return self._model

    @property
    def name(self) -> str:
        """The agent's name, for logs (``agent`` when none was given)."""
        return self.settings.name

    @property
    def approval(self) -> ApprovalGate | None:
        """The approval gate (None: every call runs); setting it replaces the settings'
        gate, for the runs that start after."""
        return self.settings.approval

    @approval.setter
    def approval(self, gate: ApprovalGate | None) -> None:
        self.settings = self.settings.with_approval(gate)

    @property
    def servers(self) -> tuple[ToolServer, ...]:
        """The tool servers in loaded order (see `ToolLoader`)."""
        return self._loader.servers

    def __repr__(self) -> str:
        spec = self.settings.model
        spec = spec if isinstance(spec, str | None) else self.model.name
        return f"Agent(name={self.name!r}, model={spec!r}, servers={len(self.servers)})"

    # -- sessions -------------------------------------------------------------------------

    async def __aenter__(self) -> Agent:
        """Open every server's session now; they stay open until the block ends.

        The model is set up first (as a run does before it connects), so a configuration
        error of the model (an unknown provider, a bad option, a malformed test script)
        is raised before any server starts.
        """
        if self._exit_stack is not None:
            raise ToolkitError("this agent is already entered with `async with`.")
        if self.settings.model is not None:
            _ = self.model
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

        Returns the warnings (optional servers that could not connect). An optional
        server that could not connect now is not tried again by the next run (it is
        reported there as unavailable), so a server that hangs costs one wait, not two.

        Raises:
            ToolServerError: a required server could not connect.
            ToolNameConflictError: two servers expose the same tool name.
            ConfigError: an approval pattern matches no tool of the servers.
        """
        self._bind_loop()
        tools = await self._pool.run_tools(notify_unavailable=False, before_run=True)
        routes = build_routes(tools.servers)
        if self.approval is not None:
            # The skills step of a run may add the extension's tools to any server.
            names = [(route.name, route.server_tool) for route in routes.values()]
            names.extend(
                (visible_name(offer.server, name), name)
                for offer in tools.servers
                for name in sorted(EXTENSION_TOOL_NAMES)
            )
            check_approval_patterns(self.approval, names, tools, self.name)
        return list(tools.warnings)

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
        if isinstance(self.settings.model, str) and close_model is not None:
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

    # -- running --------------------------------------------------------------------------

    async def _iterate(
        self, prompt: str, history: Sequence[Message] | None, *, stream: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        plan = RunPlan(self.settings, self.model, self._unmatched_logged)
        self._bind_loop()
        run = RunTrace.start(plan.name, plan.model.name)
        try:
            with run.current():
                setup = await prepare(self._skills, plan, prompt)
            run.skills(setup.skills)
            async with aclosing(
                iterate(plan, setup, prompt, history, stream=stream, trace=run)
            ) as events:
                async for event in events:
                    yield event
        except BaseException as exc:
            run.end(exc)
            raise
        run.end()

    async def preview(self, prompt: str = "") -> RunPreview:
        """Set up a run for `prompt` as `run` does (connect, ask every server for its tools
        and instructions, apply the skills step for this prompt) without resolving or
        asking the model: what the model would be given, and `RunPreview.call_tool` to
        call one of those tools as the model would.

        Raises:
            ToolServerError: a required server could not be reached.
            ToolNameConflictError: two servers expose the same tool name.
        """
        from .preview import NO_MODEL, RunPreview

        plan = RunPlan(self.settings, NO_MODEL, self._unmatched_logged)
        self._bind_loop()
        setup = await prepare(self._skills, plan, prompt)
        return RunPreview.of(plan, setup)

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
        require_no_running_loop("run_sync()", "`await agent.run()`")
        history = message_history
        caller = caller_context()

        async def call() -> RunResult:
            with caller:
                return await self.run(prompt, message_history=history)

        return self._sync_loop().call(call)

    def _sync_loop(self) -> LoopThread:
        """The loop thread of the `*_sync` methods, started on first use."""
        with self._loop_thread_lock:
            # Threads calling run_sync at once share one loop thread (and so one set of
            # sessions) instead of each starting its own.
            if self._loop_thread is None:
                self._loop_thread = LoopThread(f"dpt-agent-{self.name}")
                close_at_exit(self)
            return self._loop_thread

    def run_batch(
        self,
        items: BatchInput,
        prompt: str,
        *,
        concurrency: int = 4,
        output: str | os.PathLike[str] | None = None,
        resume: bool = False,
        force: bool = False,
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
            force: with `resume`, go on even though `output` holds lines that are not
                result lines (they are dropped); without it such a file is refused.
            engine: ``"local"`` (this process, sharing this agent's sessions), ``"ray"``
                (an actor pool, each actor with its own agent from this agent's
                configuration), or an engine object (`LocalEngine`, `RayEngine`).
            ray_address: the Ray cluster to join with ``engine="ray"`` (None: start Ray
                on this machine).
            retry: how runs failed by rate limits and overloads are retried.
            control: stops the batch from outside (`BatchControl.stop` / `cancel`).

        Raises:
            BatchError: the template is malformed, or `output` cannot be used: it is one
                of the input files, a link to nothing, not empty without `resume`, or holds
                lines that are not results without `force` (nothing is written to it then).
            MissingDependencyError: ``engine="ray"`` without the ``ray`` extra.
        """
        from .batch import runner

        chosen = runner.make_engine(
            engine, concurrency=concurrency, retry=retry, ray_address=ray_address
        )
        return runner.run_batch(
            self,
            items,
            prompt,
            engine=chosen,
            output=output,
            resume=resume,
            force=force,
            control=control,
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
        require_no_running_loop("run_batch_sync()", "`agent.run_batch()`")
        from .batch import runner

        return runner.iterate_sync(
            self._sync_loop(), lambda: self.run_batch(items, prompt, **options)
        )


class AgentBuilder(SettingsBuilder):
    """Build an `Agent` one setting at a time: one method per constructor argument (see
    `SettingsBuilder`), then `build`.

    ```python
    agent = AgentBuilder().model("test").instructions("Answer briefly.").max_turns(8).build()
    ```

    Args:
        agent_class: the class `build` makes (an `Agent` subclass; default `Agent`).
    """

    def __init__(self, agent_class: type[Agent] | None = None) -> None:
        super().__init__()
        self._agent_class = agent_class or Agent

    def build(self) -> Agent:
        """A new agent with the collected arguments.

        Raises:
            ConfigError: an argument is invalid.
        """
        return self._agent_class(**self.options())


def _rebuild(config: AgentConfig, overrides: Mapping[str, Any]) -> Agent:
    """An agent from a validated configuration and constructor overrides (what a Ray
    actor runs to build its agent)."""
    return Agent._from_validated(config, dict(overrides))


def _loop_ended(token: object) -> bool:
    native = getattr(token, "native_token", None)
    return isinstance(native, asyncio.AbstractEventLoop) and native.is_closed()
