"""The events of `Agent.run_stream` (`ToolCallRecord` is re-exported from `result`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .approval import ApprovalRecord
from .messages import ToolCallPart, Usage
from .result import RunResult, ToolCallRecord
from .skills.entries import SkillsOutcome

__all__ = [
    "AgentEvent",
    "ApprovalEvent",
    "FinalResultEvent",
    "RunStartEvent",
    "TextDeltaEvent",
    "ThinkingDeltaEvent",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolResultEvent",
]


@dataclass(frozen=True, slots=True)
class RunStartEvent:
    """The run is set up and its first model request is about to go out; always the
    first event.

    Attributes:
        system_prompt: the system prompt of every model request of the run (the
            instructions, with the skill catalog when one was injected).
        tools: the names of the tools the model is offered in this run.
        skills: what skills auto-injection did for this run.
        warnings: what went wrong so far without failing the run.
    """

    system_prompt: str | None
    tools: tuple[str, ...]
    skills: SkillsOutcome
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    """A piece of the model's text, as it arrives."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDeltaEvent:
    """A piece of the model's visible reasoning, as it arrives (Anthropic's extended
    thinking). It is not part of the answer; the complete thinking stays in the reply's
    `ProviderPart`s."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """The model asked for a tool call; it is about to run.

    A consumer that has seen enough may stop here (leave the loop, or close the stream):
    the call then does not run.

    Attributes:
        call: the call as the model made it.
        server: the name of the server that will run it (None when no server has it).
        server_tool: the tool's own name on that server, without its tool prefix (None
            when no server has it).
        usage: tokens and requests of the run so far, the request that asked for this
            call included.
    """

    call: ToolCallPart
    server: str | None
    server_tool: str | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class ApprovalEvent:
    """The approval gate decided on a call of the `ToolCallEvent` before it; a denied
    call does not run (its `ToolResultEvent` carries the denial sent to the model)."""

    record: ApprovalRecord


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A tool call finished (successfully or not)."""

    record: ToolCallRecord


@dataclass(frozen=True, slots=True)
class FinalResultEvent:
    """The run ended with a final answer; always the last event."""

    result: RunResult


AgentEvent = (
    RunStartEvent
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolCallEvent
    | ApprovalEvent
    | ToolResultEvent
    | FinalResultEvent
)
"""Any event of `Agent.run_stream`."""
