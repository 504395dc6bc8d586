"""`TestModel`: an offline, deterministic model for tests, demos and trying tool calls.

By default it answers in one turn without calling tools, echoing the last user text. Give
it a `script` to make it do anything else: a function from the request to a reply, or a
list of steps written as data (the form a YAML configuration can hold, see
`ScriptStep`), played one per model request of a run.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import pydantic
from pydantic import BaseModel, ConfigDict

from ..errors import ConfigError
from ..messages import Message, ModelResponse, TextPart, ToolCallPart, ToolResultPart, Usage
from .base import ModelRequest, TextDelta

__all__ = ["ScriptFn", "ScriptStep", "ScriptedCall", "TestModel", "reply", "tool_call"]

ScriptFn = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]
"""A scripted model: gets the whole request, returns the reply (sync or async)."""


def reply(text: str) -> ModelResponse:
    """A final text answer."""
    return ModelResponse(parts=(TextPart(text),))


_call_ids = itertools.count(1)


def _calls_reply(text: str, calls: Sequence[tuple[str, dict[str, Any]]]) -> ModelResponse:
    parts: list[TextPart | ToolCallPart] = [TextPart(text)] if text else []
    for name, arguments in calls:
        parts.append(ToolCallPart(id=f"call_{next(_call_ids)}", name=name, arguments=arguments))
    return ModelResponse(parts=tuple(parts))


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, text: str = ""
) -> ModelResponse:
    """A reply that calls one tool (with optional text before it)."""
    return _calls_reply(text, [(name, arguments or {})])


class ScriptedCall(BaseModel):
    """One tool call of a ``calls:`` step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The tool's name as the model sees it (with its server's prefix, if any)."""
    arguments: dict[str, Any] = {}
    """The call's arguments."""


class ScriptStep(BaseModel):
    """One reply of a scripted `TestModel`, written as data: exactly one of ``call``
    (with ``arguments``), ``calls`` or ``reply``, and optional ``text`` said before the
    calls.

    ``{call: read_file, arguments: {path: notes.md}}`` calls one tool; ``calls: [{name:
    a}, {name: b}]`` calls several at once; ``reply: "Done."`` is the final answer.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: str | None = None
    """A tool to call."""
    arguments: dict[str, Any] = {}
    """The arguments of ``call``."""
    calls: list[ScriptedCall] | None = None
    """Several tool calls made in the same reply."""
    reply: str | None = None
    """The final answer (the run ends with it)."""
    text: str = ""
    """Text the model says before its calls."""

    @pydantic.model_validator(mode="after")
    def _one_kind(self) -> ScriptStep:
        given = [key for key in ("call", "calls", "reply") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'call', 'calls' and 'reply' "
                f"(got {', '.join(given) if given else 'none'})"
            )
        if self.arguments and self.call is None:
            raise ValueError("'arguments' belongs to 'call'; inside 'calls' each call has its own")
        if self.text and self.reply is not None:
            raise ValueError("'text' goes with 'call' or 'calls'; a 'reply' is all text already")
        return self

    def response(self) -> ModelResponse:
        """This step as the model's reply."""
        if self.reply is not None:
            return reply(self.reply)
        calls = self.calls or [ScriptedCall(name=str(self.call), arguments=self.arguments)]
        return _calls_reply(self.text, [(call.name, dict(call.arguments)) for call in calls])


_STEP_KEYS = "call, arguments, calls, reply, text"
_STEPS: pydantic.TypeAdapter[list[ScriptStep]] = pydantic.TypeAdapter(list[ScriptStep])


def _parse_steps(steps: object) -> list[ScriptStep]:
    """Validate a script written as data.

    Raises:
        ConfigError: a step is malformed; the message names it as
            ``model_options.script[i]``.
    """
    try:
        return _STEPS.validate_python(steps)
    except pydantic.ValidationError as exc:
        lines = []
        for item in exc.errors():
            where = "model_options.script" + "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"]
            )
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                keys = "name, arguments" if "calls" in item["loc"] else _STEP_KEYS
                message = f"unknown key (one of {keys})"
            elif item["type"] == "missing":
                message = "required key is missing"
            lines.append(f"  {where}: {message}")
        raise ConfigError("invalid test model script:\n" + "\n".join(lines)) from None


def _turn(messages: Sequence[Message]) -> int:
    """How many replies the model has given since the run's prompt (the last user
    message that is not only tool results)."""
    turn = 0
    for message in reversed(messages):
        if message.role == "assistant":
            turn += 1
        elif not all(isinstance(part, ToolResultPart) for part in message.parts):
            break
    return turn


def _play(steps: list[ScriptStep]) -> ScriptFn:
    """A script function that plays `steps`, one per request of a run; once they are
    used up it answers with the results of the last tool calls (or the echo)."""

    def script(request: ModelRequest) -> ModelResponse:
        turn = _turn(request.messages)
        if turn < len(steps):
            return steps[turn].response()
        last = request.messages[-1] if request.messages else None
        results = [p for p in last.parts if isinstance(p, ToolResultPart)] if last else []
        if not results:
            return _echo(request)
        return reply(
            "\n".join(
                f"{result.name}{' (error)' if result.is_error else ''}: {result.content}"
                for result in results
            )
        )

    return script


def _echo(request: ModelRequest) -> ModelResponse:
    last = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    return reply(f"echo: {last}")


def _estimate_tokens(chars: int) -> int:
    return max(1, chars // 4) if chars else 0


class TestModel:
    """A model that never touches the network.

    Args:
        script: what the model answers. A function called with each `ModelRequest` that
            returns the reply; or a list of steps as data (`ScriptStep` mappings such as
            ``{"call": "echo", "arguments": {"text": "hi"}}`` or ``{"reply": "Done."}``),
            played one per model request of each run, after which the model answers with
            the last tool results. Without a script the model answers
            ``"echo: <last user text>"``.
        name: the model part of `name` (``test:<name>``).
        chunk_size: characters per `TextDelta` when streaming.
        delay: seconds to wait before each reply, to stand in for a slow model.

    Usage is estimated as one token per four characters, so runs have realistic counts.
    Every request is kept in `requests` for assertions.

    Raises:
        ConfigError: a script step is malformed, or `delay` is negative.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        script: ScriptFn | Sequence[Mapping[str, Any] | ScriptStep] | None = None,
        *,
        name: str = "model",
        chunk_size: int = 8,
        delay: float = 0.0,
    ) -> None:
        if script is not None and not callable(script):
            script = _play(_parse_steps(script))
        if not isinstance(delay, int | float) or delay < 0:
            raise ConfigError(
                f"model_options.delay must be a number of seconds >= 0 (got {delay!r})"
            )
        self._script: ScriptFn | None = script
        self._name = name
        self._chunk = max(1, chunk_size)
        self._delay = float(delay)
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """``test:<name>``."""
        return f"test:{self._name}"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Return the scripted (or echo) reply to `request`."""
        self.requests.append(request)
        if self._delay:
            await anyio.sleep(self._delay)
        if self._script is None:
            response = _echo(request)
        else:
            produced = self._script(request)
            response = await produced if inspect.isawaitable(produced) else produced
        prompt_chars = len(request.system or "") + sum(len(repr(m.parts)) for m in request.messages)
        return ModelResponse(
            parts=response.parts,
            usage=Usage(
                input_tokens=_estimate_tokens(prompt_chars),
                output_tokens=_estimate_tokens(len(response.text)) + 10 * len(response.tool_calls),
                requests=1,
            ),
            model_name=self.name,
            stop_reason="tool_use" if response.tool_calls else "end_turn",
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        """Yield the reply's text in chunks of `chunk_size`, then the reply."""
        response = await self.request(request)
        text = response.text
        for start in range(0, len(text), self._chunk):
            yield TextDelta(text[start : start + self._chunk])
        yield response
