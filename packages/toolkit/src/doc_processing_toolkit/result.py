"""What a run produces: `RunResult` and its `ToolCallRecord`s.

Events (`events`) and batch results import these; this module imports nothing of the
agent, so nothing here can go round in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .approval import ApprovalRecord
from .messages import Message, Usage
from .skills.entries import SkillsOutcome

__all__ = ["RunResult", "ToolCallRecord"]


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a run and what came of it.

    Attributes:
        call_id: pairs the call with its result in the message history.
        name: the tool name the model used (prefixed when the server has a tool_prefix).
        arguments: the arguments the model gave.
        server: the name of the server that ran the call, or None for an unknown tool.
        content: the text sent back to the model.
        is_error: whether the call failed (an error result, an exception, a timeout, an
            unknown tool, or a denial by the approval gate, in which case the tool was
            not called); `content` then says why.
        duration: seconds the call took.
    """

    call_id: str
    name: str
    arguments: dict[str, Any]
    server: str | None
    content: str
    is_error: bool
    duration: float

    @property
    def error(self) -> str | None:
        """The error text, or None when the call succeeded."""
        return self.content if self.is_error else None


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
            injected, the tools hidden, and how many skills the block left out).
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
