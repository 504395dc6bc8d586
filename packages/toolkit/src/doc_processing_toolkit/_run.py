"""One run, from the servers' offers to the final answer.

1. setup (`prepare`): the skills wrapper asks every server once for its tools and
   instructions (`SkillsToolset.run_tools`); the instructions are appended to the
   agent's, and every tool gets its model-visible name (`tools.routing`).
2. request: the model is asked (streamed or not).
3. call tools: the approval gate decides on each call in order, then the approved calls
   run together; their results go back to the model and the loop returns to 2.

Each step only moves forward; the run ends with a `FinalResultEvent` holding the
`RunResult`, or raises `MaxTurnsExceededError`.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._tracing import RunTrace
from .approval import ApprovalGate, ApprovalRecord, ApprovalRequest
from .config import AgentConfig
from .errors import MaxTurnsExceededError, ToolkitError
from .events import (
    AgentEvent,
    ApprovalEvent,
    FinalResultEvent,
    RunStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from .messages import Message, ModelResponse, ToolCallPart, ToolResultPart, ToolSpec, Usage
from .models import Model, ModelRequest, TextDelta, ThinkingDelta
from .result import RunResult, ToolCallRecord
from .settings import AgentSettings
from .skills import SkillsOptions, SkillsOutcome, SkillsToolset, append_catalog
from .skills.extension import EXTENSION_TOOL_NAMES, listed_skill
from .skills.scope import SkillScope
from .tools.base import RunTools
from .tools.routing import ToolRoute, build_routes, call_route, visible_name

__all__ = [
    "RunPlan",
    "RunSetup",
    "call_once",
    "check_approval_patterns",
    "iterate",
    "prepare",
]

logger = logging.getLogger("doc_processing_toolkit.agent")


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What one run works from, taken once at its start: the agent's frozen settings
    and the resolved model.

    Attributes:
        settings: the agent's settings (`AgentSettings`), as they were when the run began.
        model: the resolved model.
        unmatched_logged: approval patterns already reported as not judged while a server
            is unreachable (shared across the agent's runs, so each is reported once).
    """

    settings: AgentSettings
    model: Model
    unmatched_logged: set[str] = field(default_factory=set)

    @property
    def values(self) -> AgentConfig:
        """The plain settings (instructions, max_turns, tool_timeout, ...)."""
        return self.settings.values

    @property
    def name(self) -> str:
        """The agent's name, for logs."""
        return self.settings.name

    @property
    def gate(self) -> ApprovalGate | None:
        """The approval gate, or None."""
        return self.settings.approval

    @property
    def skills(self) -> SkillsOptions:
        """The skills step's settings."""
        values = self.values
        return SkillsOptions(
            enabled=values.auto_inject_skills,
            timeout=values.skills_timeout,
            budget=values.skills_catalog_budget,
            stale_after=values.skills_stale_after,
            lock=self.settings.skills_lock,
            scope=SkillScope(
                include=None if values.skills_include is None else tuple(values.skills_include),
                exclude=tuple(values.skills_exclude or ()),
            ),
        )


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What the model is given for the whole run.

    Attributes:
        system_prompt: the system prompt of every model request of the run.
        tools: the tools the model may call, by model-visible name.
        warnings: what went wrong without failing the run.
        skills: what the skills step decided.
    """

    system_prompt: str | None
    tools: dict[str, ToolRoute]
    warnings: list[str]
    skills: SkillsOutcome

    def tool_specs(self) -> list[ToolSpec]:
        """The visible tools, as the model receives them."""
        return [route.spec() for route in self.tools.values()]


async def prepare(toolset: SkillsToolset, plan: RunPlan, prompt: str = "") -> RunSetup:
    """Ask every server (through the skills wrapper) for its tools and instructions once;
    `prompt`, the run's user text, picks the skills shown when not all of them can be.

    Raises:
        ToolServerError: a required server could not be reached.
        ToolNameConflictError: two servers expose the same tool name.
    """
    tools, outcome = await toolset.run_tools(
        plan.skills,
        plan.values.instructions,
        notify_unavailable=plan.values.notify_unavailable_servers,
        request=prompt,
    )
    routes = build_routes(tools.servers)
    if plan.gate is not None:
        names = [(route.name, route.server_tool) for route in routes.values()]
        if outcome.server is not None:
            # Tools the skills step took away this run (an empty catalog) still exist.
            hidden = set(outcome.hidden_tools)
            if outcome.source is not None and outcome.source.traits.by_uri:
                hidden |= EXTENSION_TOOL_NAMES
            server = next(
                (s.server for s in tools.servers if s.server.name == outcome.server), None
            )
            if server is not None:
                names.extend((visible_name(server, name), name) for name in sorted(hidden))
        check_approval_patterns(plan.gate, names, tools, plan.name, plan.unmatched_logged)
    return RunSetup(
        system_prompt=append_catalog(plan.values.instructions, tools.instructions()),
        tools=routes,
        warnings=list(tools.warnings),
        skills=outcome,
    )


def check_approval_patterns(
    gate: ApprovalGate,
    names: list[tuple[str, str]],
    tools: RunTools,
    agent_name: str,
    logged: set[str] | None = None,
) -> None:
    """Fail closed on an approval pattern that matches no tool (see
    `ApprovalGate.check_patterns`): `names` are the tools of the connected servers, to
    which the last known tools of the unreachable optional servers are added. While such a
    server has never listed its tools, a pattern matching nothing is not judged and gets
    one WARNING (recorded in `logged`).

    Raises:
        ConfigError: a pattern matches no tool; the message names the tools that exist.
    """
    pairs = list(names)
    unlisted: list[str] = []
    for server, last in tools.unavailable:
        if last is None:
            unlisted.append(server.name)
        else:
            pairs.extend((visible_name(server, name), name) for name in last)
    for pattern in gate.check_patterns(pairs, unlisted=unlisted):
        if logged is None or pattern in logged:
            continue
        logged.add(pattern)
        servers = (
            f"server {unlisted[0]!r}, which could not be reached, lists its tools"
            if len(unlisted) == 1
            else f"servers {', '.join(map(repr, unlisted))}, which could not be reached, "
            "list their tools"
        )
        logger.warning(
            "agent %r: approval pattern %r matches no tool of the connected servers; it is "
            "checked again once %s",
            agent_name,
            pattern,
            servers,
        )


async def iterate(
    plan: RunPlan,
    setup: RunSetup,
    prompt: str,
    history: Sequence[Message] | None,
    *,
    stream: bool,
    trace: RunTrace | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """The model / tool loop of one run, as events (see `Agent.run_stream`); `trace`
    holds the run's span, the parent of a ``chat`` span per request and an
    ``execute_tool`` span per call (see `_tracing`)."""
    model = plan.model
    run_trace = trace or RunTrace.off()
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
    for turn in range(1, plan.values.max_turns + 1):
        request = ModelRequest(
            system=setup.system_prompt,
            messages=tuple(messages),
            tools=specs,
            provider_kwargs=plan.values.provider_kwargs,
        )
        chat = run_trace.chat(request)
        try:
            if stream:
                response: ModelResponse | None = None
                replies = model.stream(request)
                items = chat.follow(replies)
                try:
                    async for item in items:
                        if isinstance(item, TextDelta):
                            yield TextDeltaEvent(item.text)
                        elif isinstance(item, ThinkingDelta):
                            yield ThinkingDeltaEvent(item.text)
                        else:
                            response = item
                finally:
                    # A consumer that stops early closes the model's stream (and its HTTP
                    # response) now, not whenever the garbage collector gets to it.
                    for opened in (items, replies):
                        close = getattr(opened, "aclose", None)
                        if close is not None:
                            await close()
                if response is None:
                    raise ToolkitError(f"model {model.name} ended its stream without a reply.")
            else:
                with chat.current():
                    response = await model.request(request)
        except BaseException as exc:
            chat.failed(exc)
            raise
        chat.done(response)
        usage = usage + response.usage
        logger.debug(
            "agent %r turn %d: %s answered with %d tool calls",
            plan.name,
            turn,
            model.name,
            len(response.tool_calls),
        )
        messages.append(response.to_message())
        calls = response.tool_calls
        if not calls:
            yield FinalResultEvent(
                RunResult(
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
            )
            return
        if turn == plan.values.max_turns:
            names = ", ".join(call.name for call in calls)
            raise MaxTurnsExceededError(
                f"agent {plan.name!r} reached max_turns={plan.values.max_turns}: after "
                f"{plan.values.max_turns} model requests the model still asked for tools ({names}) "
                "instead of answering; raise max_turns or make the task smaller."
            )
        for call in calls:
            route = setup.tools.get(call.name)
            yield ToolCallEvent(
                call,
                route.server.name if route else None,
                route.server_tool if route else None,
                usage,
            )
        # The gate decides on each call in order before any of them runs; only the
        # approved ones are then called (together, as without a gate).
        denials: dict[int, str] = {}
        if plan.gate is not None:
            for index, call in enumerate(calls):
                decision = await _decide(plan.gate, call, setup)
                if decision is None:
                    continue
                approvals.append(decision)
                run_trace.approval(decision)
                yield ApprovalEvent(decision)
                if not decision.approved:
                    denials[index] = (
                        f"The call to {call.name} was denied and did not run: "
                        f"{decision.reason or 'no reason given'}"
                    )
        done = await _call_tools(calls, setup, denials, plan.values.tool_timeout, run_trace)
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
    calls: Sequence[ToolCallPart],
    setup: RunSetup,
    denials: Mapping[int, str],
    time_limit: float | None,
    run_trace: RunTrace,
) -> list[ToolCallRecord]:
    if len(calls) == 1:
        return [await _call_tool(calls[0], setup, denials.get(0), time_limit, run_trace)]
    records: list[ToolCallRecord | None] = [None] * len(calls)

    async def run_one(index: int, call: ToolCallPart) -> None:
        records[index] = await _call_tool(call, setup, denials.get(index), time_limit, run_trace)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run_one, index, call)
    return [r for r in records if r is not None]


async def _call_tool(
    call: ToolCallPart,
    setup: RunSetup,
    denial: str | None,
    time_limit: float | None,
    run_trace: RunTrace,
) -> ToolCallRecord:
    """Run one call under its ``execute_tool`` span; `denial` (the approval gate's
    refusal) answers it without calling the tool."""
    route = setup.tools.get(call.name)
    with run_trace.tool(call.id, call.name, call.arguments, route, setup.skills) as span:
        done, error_type = await _answer(call, route, setup, denial, time_limit)
        span.done(done, error_type)
    return done


async def _answer(
    call: ToolCallPart,
    route: ToolRoute | None,
    setup: RunSetup,
    denial: str | None,
    time_limit: float | None,
) -> tuple[ToolCallRecord, str | None]:
    """The record of one call, and its error type (None: it succeeded): the route's, or
    ``unknown_tool``, ``invalid_arguments`` or ``denied`` when the tool was not called."""
    started = time.perf_counter()

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
        text = f"Unknown tool {call.name!r}. Available tools: {available}."
        return record(text, True), "unknown_tool"
    if call.arguments_error is not None:
        text = (
            f"The arguments for {call.name!r} are not a JSON object ({call.arguments_error}); "
            "call the tool again with valid JSON arguments."
        )
        return record(text, True), "invalid_arguments"
    if denial is not None:
        return record(denial, True), "denied"
    outcome = await call_route(route, call.arguments, time_limit)
    done = record(outcome.content, outcome.is_error)
    logger.debug(
        "tool %r on server %r: %s in %.3f s",
        call.name,
        route.server.name,
        "error" if done.is_error else "ok",
        done.duration,
    )
    return done, outcome.error_type


async def _decide(gate: ApprovalGate, call: ToolCallPart, setup: RunSetup) -> ApprovalRecord | None:
    """The gate's decision on `call`, or None when the call needs none (the tool is not
    gated, or the call fails before reaching a tool: unknown name, invalid arguments)."""
    route = setup.tools.get(call.name)
    if route is None or call.arguments_error is not None:
        return None
    if not gate.matches(route.name, route.server_tool):
        return None
    skill = listed_skill(route.session, route.server_tool, call.arguments)
    request = ApprovalRequest(
        tool=route.name,
        server=route.server.name,
        server_tool=route.server_tool,
        arguments=copy.deepcopy(call.arguments),
        call_id=call.id,
        skill_files=None if skill is None else skill[1],
        skill_uri=None if skill is None else skill[0],
    )
    return await gate.decide(request)


async def call_once(
    plan: RunPlan, setup: RunSetup, name: str, arguments: dict[str, Any], call_id: str
) -> ToolCallRecord:
    """Call the tool the model would reach as `name` with `arguments`, outside the model
    loop (see `Agent.preview`): the approval gate decides first, as in a run; a failure
    of any kind is an error record, never raised."""
    call = ToolCallPart(id=call_id, name=name, arguments=dict(arguments))
    denial: str | None = None
    if plan.gate is not None:
        decision = await _decide(plan.gate, call, setup)
        if decision is not None and not decision.approved:
            denial = (
                f"The call to {name} was denied and did not run: "
                f"{decision.reason or 'no reason given'}"
            )
    route = setup.tools.get(name)
    done, _error_type = await _answer(call, route, setup, denial, plan.values.tool_timeout)
    return done
