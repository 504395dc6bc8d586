"""`TestModel`: an offline, deterministic model for tests, demos and benchmarks.

By default it answers in one turn without calling tools, echoing the last user text. Give
it a `script`, a function from the request to a reply, to make it do anything else.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..messages import ModelResponse, TextPart, ToolCallPart, Usage
from .base import ModelRequest, TextDelta

__all__ = ["ScriptFn", "TestModel", "reply", "tool_call"]

ScriptFn = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]
"""A scripted model: gets the whole request, returns the reply (sync or async)."""


def reply(text: str) -> ModelResponse:
    """A final text answer."""
    return ModelResponse(parts=(TextPart(text),))


_counter = 0


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, text: str = ""
) -> ModelResponse:
    """A reply that calls one tool (with optional text before it)."""
    global _counter
    _counter += 1
    parts: list[TextPart | ToolCallPart] = [TextPart(text)] if text else []
    parts.append(ToolCallPart(id=f"call_{_counter}", name=name, arguments=arguments or {}))
    return ModelResponse(parts=tuple(parts))


def _estimate_tokens(chars: int) -> int:
    return max(1, chars // 4) if chars else 0


class TestModel:
    """A model that never touches the network.

    Args:
        script: called with each `ModelRequest`; returns the reply. Without it the model
            answers ``"echo: <last user text>"``.
        name: the model part of `name` (``test:<name>``).
        chunk_size: characters per `TextDelta` when streaming.

    Usage is estimated as one token per four characters, so runs have realistic counts.
    Every request is kept in `requests` for assertions.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self, script: ScriptFn | None = None, *, name: str = "model", chunk_size: int = 8
    ) -> None:
        self._script = script
        self._name = name
        self._chunk = max(1, chunk_size)
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """``test:<name>``."""
        return f"test:{self._name}"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Return the scripted (or echo) reply to `request`."""
        self.requests.append(request)
        if self._script is None:
            last = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
            response = reply(f"echo: {last}")
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
