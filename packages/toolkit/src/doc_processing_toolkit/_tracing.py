"""OpenTelemetry spans of agent runs, after the OpenTelemetry GenAI semantic conventions.

Only the OpenTelemetry API is used: the application owns the tracer provider and its
exporters. Without a provider the API hands out invalid, non-recording spans; a run sees
that once, when it starts, and then skips every other step here, so tracing costs nothing.

One run is one tree (and, when no span is current around `Agent.run`, one trace)::

    invoke_agent {agent}                      INTERNAL: the whole run, skills attributes,
    |                                         approval decisions as events
    |-- (the MCP SDK's spans of the setup: tools/list, skills/list, resources/read...)
    |-- chat {model}                          CLIENT: one per model request
    |-- execute_tool {tool}                   INTERNAL: one per tool call
        |-- MCP send tools/call {tool}        CLIENT (mcp SDK, out-of-process servers)
            |-- tools/call {tool}             SERVER (mcp SDK, in the server's process)

Every span below the run's is started with the run's context as its parent explicitly,
never from whatever happens to be current where a stream's consumer runs. A tool call
runs with its `execute_tool` span current, which is how the MCP SDK's spans find their
parent: in process through the context, out of process through the W3C ``traceparent``
the SDK's client writes into the request's ``_meta`` and its server reads back.

Prompts, replies and tool arguments and results are recorded only when the application
turns content capture on (`CAPTURE_CONTENT_ENV`), read once per run.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import Token
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, StatusCode

if TYPE_CHECKING:
    from .approval import ApprovalRecord
    from .messages import Message, ModelResponse, Part
    from .models import ModelRequest
    from .result import ToolCallRecord
    from .skills import SkillsOutcome
    from .tools.routing import ToolRoute

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "TRACER_NAME",
    "BatchTrace",
    "ChatTrace",
    "ItemTrace",
    "RunTrace",
    "ToolTrace",
    "caller_context",
    "capture_content",
    "item_span",
]

TRACER_NAME: Final = "doc_processing_toolkit"
"""The instrumentation scope of the toolkit's spans."""

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI conventions' switch for recording prompts, replies and tool arguments."""

_CAPTURE_ON: Final = frozenset({"true", "1", "yes", "span_only", "span_and_event"})

#: Tools of a skills server whose call names one skill, and the argument that names it.
_SKILL_TOOLS: Final = frozenset({"load_skill", "load_skill_resource", "execute_skill_script"})
_SKILL_SCHEME: Final = "skill://"

T = TypeVar("T")


def capture_content() -> bool:
    """Whether `CAPTURE_CONTENT_ENV` asks for prompts, replies and tool arguments."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_ON


@functools.cache
def _tracer() -> trace.Tracer:
    # Asked for at the first run, not at import: the application sets its provider first
    # (a tracer had before that is a proxy that follows the provider once it is set).
    from ._version import __version__

    return trace.get_tracer(TRACER_NAME, __version__)


def _split_model(name: str) -> tuple[str, str]:
    """``provider:model`` -> (provider, model); a name without a provider is its own."""
    provider, sep, model = name.partition(":")
    return (provider, model) if sep else ("", name)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _part(part: Part) -> dict[str, Any]:
    """A message part in the conventions' shape (gen_ai.input.messages / output)."""
    kind = part.kind
    if kind == "text":
        return {"type": "text", "content": getattr(part, "text", "")}
    if kind == "tool_call":
        return {
            "type": "tool_call",
            "id": getattr(part, "id", ""),
            "name": getattr(part, "name", ""),
            "arguments": getattr(part, "arguments", {}),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": getattr(part, "call_id", ""),
            "response": getattr(part, "content", ""),
        }
    return {"type": getattr(part, "type", kind)}


def _messages(messages: Sequence[Message]) -> str:
    return _json([{"role": m.role, "parts": [_part(p) for p in m.parts]} for m in messages])


def _error_type(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return type(exc).__qualname__


def _fail(span: Span, exc: BaseException) -> None:
    if isinstance(exc, GeneratorExit):
        return  # a consumer that stopped early is no error
    span.set_attribute("error.type", _error_type(exc))
    span.set_status(StatusCode.ERROR, str(exc)[:500] or None)
    if isinstance(exc, Exception):
        span.record_exception(exc)


@contextmanager
def _current(ctx: Context) -> Iterator[None]:
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def caller_context() -> AbstractContextManager[None]:
    """The calling thread's OpenTelemetry context, to make current in a task of another
    thread (the loop thread of `Agent.run_sync`): the run is then a child of the caller's
    span, as with ``await agent.run``. Call it in the caller's thread."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return _NOTHING
    return _current(otel_context.get_current())


class ChatTrace:
    """The ``chat`` span of one model request (a no-op when tracing is off)."""

    __slots__ = ("_span", "capture")

    def __init__(self, span: Span | None, capture: bool) -> None:
        self._span = span
        self.capture = capture

    def current(self) -> AbstractContextManager[None]:
        """Make the span current while the request is sent (not across a stream's yields)."""
        if self._span is None:
            return _NOTHING
        return _current(trace.set_span_in_context(self._span))

    async def follow(self, replies: AsyncIterator[T]) -> AsyncIterator[T]:
        """`replies`, each one awaited with the span current (the caller closes `replies`)."""
        while True:
            with self.current():
                try:
                    item = await anext(replies)
                except StopAsyncIteration:
                    return
            yield item

    def done(self, response: ModelResponse) -> None:
        """Record the reply: its model, usage, finish reason and (captured) content."""
        span = self._span
        if span is None:
            return
        if span.is_recording():
            attributes: dict[str, Any] = {
                "gen_ai.usage.input_tokens": response.usage.input_tokens,
                "gen_ai.usage.output_tokens": response.usage.output_tokens,
            }
            if response.model_name:
                attributes["gen_ai.response.model"] = _split_model(response.model_name)[1]
            if response.stop_reason:
                attributes["gen_ai.response.finish_reasons"] = (response.stop_reason,)
            if self.capture:
                output = {
                    "role": "assistant",
                    "parts": [_part(p) for p in response.parts],
                    "finish_reason": response.stop_reason or "",
                }
                attributes["gen_ai.output.messages"] = _json([output])
            span.set_attributes(attributes)
        span.end()

    def failed(self, exc: BaseException) -> None:
        """End the span with the error that ended the request."""
        if self._span is not None:
            _fail(self._span, exc)
            self._span.end()


class ToolTrace:
    """The ``execute_tool`` span of one tool call (a no-op when tracing is off): a context
    manager that makes the span current inside its block and ends it on the way out."""

    __slots__ = ("_span", "_token", "capture")

    def __init__(self, span: Span | None, capture: bool) -> None:
        self._span = span
        self._token: Token[Context] | None = None
        self.capture = capture

    def __enter__(self) -> ToolTrace:
        if self._span is not None:
            self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        span = self._span
        if span is None:
            return
        if self._token is not None:
            otel_context.detach(self._token)
        if error is not None:
            _fail(span, error)
        span.end()

    def done(self, record: ToolCallRecord, error_type: str | None) -> None:
        """Record how the call ended: `error_type` (None: it succeeded) and, when content
        is captured, the result's text."""
        span = self._span
        if span is None or not span.is_recording():
            return
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", record.content)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(StatusCode.ERROR)


_NOTHING: Final[AbstractContextManager[None]] = nullcontext()
_OFF_CHAT: Final = ChatTrace(None, False)
_OFF_TOOL: Final = ToolTrace(None, False)


@dataclass(slots=True)
class RunTrace:
    """The ``invoke_agent`` span of one run, and the parent of every span of the run.

    Attributes:
        span: the run's span (invalid when tracing is off).
        context: the context holding `span`, the parent of the run's spans; None when
            tracing is off (no provider), and every method returns at once.
        capture: whether content is recorded (see `CAPTURE_CONTENT_ENV`).
        provider: the model's provider (``anthropic``, ``openai``, ``test``).
        model: the model id requested.
    """

    span: Span
    context: Context | None
    capture: bool
    provider: str
    model: str

    @classmethod
    def start(cls, agent_name: str, model_name: str) -> RunTrace:
        """Start the run's span under whatever span is current (usually none: a new
        trace)."""
        provider, model = _split_model(model_name)
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            # No provider was set: every span would be the API's invalid one.
            return cls(trace.INVALID_SPAN, None, False, provider, model)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent_name,
            "gen_ai.request.model": model,
        }
        if provider:
            attributes["gen_ai.provider.name"] = provider
        span = _tracer().start_span(
            f"invoke_agent {agent_name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        if not span.get_span_context().is_valid:
            return cls(span, None, False, provider, model)
        return cls(span, trace.set_span_in_context(span), capture_content(), provider, model)

    @classmethod
    def off(cls) -> RunTrace:
        """A run without spans (for a loop driven without `Agent`)."""
        return cls(trace.INVALID_SPAN, None, False, "", "")

    def current(self) -> AbstractContextManager[None]:
        """Make the run's span current (around steps that do not yield)."""
        return _current(self.context) if self.context is not None else _NOTHING

    def skills(self, outcome: SkillsOutcome) -> None:
        """Record what the skills step decided: status, source, server, the skills
        injected (names and count) and those left out."""
        if self.context is None or not self.span.is_recording():
            return
        attributes: dict[str, Any] = {"doc_processing.skills.status": outcome.status}
        if outcome.source is not None:
            attributes["doc_processing.skills.source"] = outcome.source
        if outcome.server is not None:
            attributes["doc_processing.skills.server"] = outcome.server
        if outcome.status in ("injected", "stale"):
            left_out = set(outcome.left_out)
            shown = [s.name for s in outcome.skills if s.name not in left_out]
            attributes["doc_processing.skills.injected"] = shown
            attributes["doc_processing.skills.count"] = len(shown)
            attributes["doc_processing.skills.left_out"] = list(outcome.left_out)
            attributes["doc_processing.skills.left_out_count"] = outcome.left_out_count
            if outcome.total is not None:
                attributes["doc_processing.skills.total"] = outcome.total
        self.span.set_attributes(attributes)

    def chat(self, request: ModelRequest) -> ChatTrace:
        """Start the ``chat`` span of one model request (not made current)."""
        if self.context is None:
            return _OFF_CHAT
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self.model,
        }
        if self.provider:
            attributes["gen_ai.provider.name"] = self.provider
        if self.capture:
            if request.system:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": request.system}]
                )
            attributes["gen_ai.input.messages"] = _messages(request.messages)
        span = _tracer().start_span(
            f"chat {self.model}", self.context, kind=SpanKind.CLIENT, attributes=attributes
        )
        return ChatTrace(span, self.capture)

    def tool(
        self,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any],
        route: ToolRoute | None,
        skills: SkillsOutcome | None,
    ) -> ToolTrace:
        """The ``execute_tool`` span of one call (started now), to use as ``with``: it is
        current inside the block."""
        if self.context is None:
            return _OFF_TOOL
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
        }
        if route is not None:
            attributes["doc_processing.tool.server"] = route.server.name
            if route.server_tool != name:
                attributes["doc_processing.tool.server_tool"] = route.server_tool
            if (
                skills is not None
                and route.server.name == skills.server
                and route.server_tool in _SKILL_TOOLS
            ):
                skill = _skill_named(arguments, skills)
                if skill is not None:
                    attributes["doc_processing.skill.name"] = skill
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _json(dict(arguments))
        span = _tracer().start_span(
            f"execute_tool {name}", self.context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        return ToolTrace(span, self.capture)

    def approval(self, record: ApprovalRecord) -> None:
        """Add the approval gate's decision on one call as an event of the run's span.

        When the policy failed, its exception's text (which may quote the call's
        arguments, a path for example) is content: without capture the event says only
        that the policy failed and with which exception class."""
        if self.context is None or not self.span.is_recording():
            return
        reason = record.reason
        if record.policy_error is not None and not self.capture:
            reason = f"the approval policy failed ({record.policy_error})"
        self.span.add_event(
            "doc_processing.approval",
            {
                "gen_ai.tool.name": record.tool,
                "gen_ai.tool.call.id": record.call_id,
                "doc_processing.tool.server": record.server,
                "doc_processing.approval.approved": record.approved,
                "doc_processing.approval.decided_by": record.decided_by,
                "doc_processing.approval.reason": reason,
            },
        )

    def end(self, error: BaseException | None = None) -> None:
        """End the run's span; `error` is what ended the run, if it failed."""
        if self.context is None:
            return
        if error is not None:
            _fail(self.span, error)
        self.span.end()


def _skill_named(arguments: Mapping[str, Any], skills: SkillsOutcome) -> str | None:
    """The skill a skills tool's call names: ``skill_name`` or ``name`` (a tools source),
    or the ``uri`` of a skill's file (an extension source, ``skill://<name>/...``)."""
    for key in ("skill_name", "name"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    uri = arguments.get("uri")
    if not isinstance(uri, str):
        return None
    for entry in skills.skills:
        # A skill's SKILL.md, or another file of its folder.
        if entry.uri is not None and (
            uri == entry.uri or uri.startswith(entry.uri.rsplit("/", 1)[0] + "/")
        ):
            return entry.name
    if uri.startswith(_SKILL_SCHEME):
        return uri[len(_SKILL_SCHEME) :].split("/", 1)[0] or None
    return None


class BatchTrace:
    """The span of one batch, parent of one span per item (a no-op when tracing is off).

    The span is never made current (a batch is an async generator that yields between
    items): its W3C context travels with each job as `carrier` instead, the same way to a
    worker task of this process and to a Ray actor in another one.
    """

    __slots__ = ("_span", "carrier")

    def __init__(self, engine: str, output: str | None) -> None:
        attributes: dict[str, Any] = {"doc_processing.batch.engine": engine}
        if output is not None:
            attributes["doc_processing.batch.output"] = output
        span = _tracer().start_span("batch", kind=SpanKind.INTERNAL, attributes=attributes)
        self._span: Span | None = span if span.get_span_context().is_valid else None
        self.carrier: tuple[tuple[str, str], ...] = ()
        if self._span is not None:
            from opentelemetry.propagate import inject

            headers: dict[str, str] = {}
            inject(headers, context=trace.set_span_in_context(self._span))
            self.carrier = tuple(headers.items())

    def end(self, items: int, error: BaseException | None = None) -> None:
        """End the batch's span: `items` results were yielded; `error` ended the batch."""
        if self._span is None:
            return
        self._span.set_attribute("doc_processing.batch.items", items)
        if error is not None:
            _fail(self._span, error)
        self._span.end()


class ItemTrace:
    """The span of one batch item (a no-op when tracing is off)."""

    __slots__ = ("_span",)

    def __init__(self, span: Span | None) -> None:
        self._span = span

    def done(self, status: str, attempts: int, cause: str | None) -> None:
        """Record the item's outcome: ``ok``, ``failed`` (with its `cause`) or
        ``skipped``, after `attempts` runs."""
        span = self._span
        if span is None or not span.is_recording():
            return
        span.set_attribute("doc_processing.batch.item.status", status)
        span.set_attribute("doc_processing.batch.item.attempts", attempts)
        if status == "failed":
            span.set_attribute("error.type", cause or "failed")
            span.set_status(StatusCode.ERROR)


@contextmanager
def item_span(item_id: str, carrier: Sequence[tuple[str, str]]) -> Iterator[ItemTrace]:
    """The span of one batch item, current inside the block, as a child of the batch span
    whose W3C context `carrier` holds (empty: tracing is off, no span)."""
    if not carrier:
        yield ItemTrace(None)
        return
    from opentelemetry.propagate import extract

    parent = extract(dict(carrier))
    with _tracer().start_as_current_span(
        "batch_item",
        parent,
        kind=SpanKind.INTERNAL,
        attributes={"doc_processing.batch.item.id": item_id},
    ) as span:
        yield ItemTrace(span)
