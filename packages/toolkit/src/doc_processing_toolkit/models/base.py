"""The protocol every model provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..messages import Message, ModelResponse, ToolSpec

__all__ = ["Model", "ModelRequest", "TextDelta", "ThinkingDelta"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs.

    `provider_kwargs` are merged into the provider's request body unchanged (for example
    Anthropic's native skills or an OpenAI `temperature`).
    """

    system: str | None
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    provider_kwargs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, as it arrives while streaming."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's visible reasoning (extended thinking), as it arrives while
    streaming. It is not part of the answer's text."""

    text: str


@runtime_checkable
class Model(Protocol):
    """A chat model that can call tools.

    `request` returns the whole reply; `stream` yields `TextDelta`s as text arrives (and
    `ThinkingDelta`s as reasoning does, for a provider that streams it), then exactly one
    `ModelResponse`, the whole reply.
    """

    @property
    def name(self) -> str:
        """`provider:model`, for logs and results."""
        ...

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the complete reply."""
        ...

    def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[TextDelta | ThinkingDelta | ModelResponse]:
        """Send one request and yield text (and thinking) deltas, then the complete reply."""
        ...
