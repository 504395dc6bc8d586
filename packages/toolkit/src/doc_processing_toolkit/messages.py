"""Provider-neutral conversation data: what the agent loop and every model share.

A conversation is a list of `Message`s. A user message holds `TextPart`s and, after a tool
round, `ToolResultPart`s; an assistant message holds `TextPart`s and `ToolCallPart`s, and
`ProviderPart`s for the blocks of a reply that only its provider understands. Providers
translate these to and from their own wire formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Message",
    "ModelResponse",
    "Part",
    "ProviderPart",
    "ReplyPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text from the user or the model."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """The model asks for one tool call. `id` pairs it with its `ToolResultPart`.

    When the model's arguments were not a JSON object, `arguments` is
    ``{"_raw": <the text as sent>}`` and `arguments_error` says what was wrong; the loop
    should then answer with an error result instead of calling the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    kind: Literal["tool_call"] = "tool_call"
    arguments_error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The result of one tool call, sent back to the model in the next user message."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ProviderPart:
    """A block of a model's reply that the toolkit does not interpret, kept verbatim so it
    can be sent back to the same provider on the next request.

    Anthropic's extended thinking is the main case: the Messages API wants the thinking
    blocks of a reply back, unchanged and in their place, when the conversation goes on
    with tool results. Server-side tool blocks (code execution, web search) are kept the
    same way. Other providers leave such parts out of their requests.

    Attributes:
        provider: the provider that produced it, for example ``"anthropic"``.
        data: the block in that provider's wire format (JSON-compatible).
    """

    provider: str
    data: dict[str, Any]
    kind: Literal["provider"] = "provider"

    @property
    def type(self) -> str:
        """The block's own type, such as ``"thinking"`` (empty when it has none)."""
        value = self.data.get("type")
        return value if isinstance(value, str) else ""


Part = TextPart | ToolCallPart | ToolResultPart | ProviderPart
ReplyPart = TextPart | ToolCallPart | ProviderPart
"""What a model's reply may hold."""


class _PartsView:
    """What a message and a model's reply read from their parts alike."""

    __slots__ = ()
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool calls among the parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]


@dataclass(frozen=True, slots=True)
class Message(_PartsView):
    """One turn of the conversation (`text` and `tool_calls` read its parts)."""

    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text part."""
        return cls(role="user", parts=(TextPart(text),))


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: a name, a description and a JSON schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(slots=True)
class Usage:
    """Token counts, summed over the model requests of a run."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
        )


@dataclass(slots=True)
class ModelResponse(_PartsView):
    """One reply of a model: text and/or tool calls, with its usage (`text` and
    `tool_calls` read its parts)."""

    parts: tuple[ReplyPart, ...]
    usage: Usage = field(default_factory=Usage)
    model_name: str = ""
    stop_reason: str | None = None

    def to_message(self) -> Message:
        """The reply as an assistant message for the history."""
        return Message(role="assistant", parts=tuple(self.parts))
