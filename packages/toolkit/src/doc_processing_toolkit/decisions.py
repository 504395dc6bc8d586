"""What an approval policy is asked and answers: the `ApprovalRequest` of one gated tool
call, the `ApprovalDecision` a policy returns (the `ApprovalPolicy` type), and the
`ApprovalRecord` a run keeps of each decision.

The gate that asks (`approval`) and the policies that answer (among them the terminal's,
`cli_approval`) both import this module, and it imports neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HIDDEN_CATEGORIES",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
]

#: Unicode categories a terminal does not show as themselves (controls, format
#: characters, separators, unassigned): refused in patterns, escaped in questions.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call waiting for a decision.

    Attributes:
        tool: the tool name the model used (prefixed when its server has a tool_prefix).
        server: the name of the server that would run the call.
        server_tool: the tool's name on that server (without the prefix).
        arguments: a copy of the arguments the model gave; changing it changes nothing,
            the call runs with the arguments that were approved.
        call_id: pairs the request with the call in the run's messages.
        skill_files: for the skills wrapper's ``load_skill`` and ``load_skill_resource`` on
            a server that serves the MCP Skills extension, every file of the skill the call
            reads as the server listed it (URI -> ``sha256:`` digest); None for any other
            call. A policy that remembers an approval for a skill keys it on this, so the
            approval falls as soon as a file of the skill changes (see `skill_key` and
            `SkillApprovals`).
        skill_uri: with `skill_files`, the URI of the SKILL.md of the skill the call
            reads; None for any other call.
    """

    tool: str
    server: str
    server_tool: str
    arguments: dict[str, Any]
    call_id: str
    skill_files: Mapping[str, str] | None = None
    skill_uri: str | None = None

    @property
    def skill_key(self) -> tuple[str, str, frozenset[tuple[str, str]]] | None:
        """What an approval of a skill is bound to: (server, the skill's URI, every one
        of its files with its digest); None for a call that reads no skill. Two requests
        with the same key read the same bytes from the same server."""
        if self.skill_uri is None or self.skill_files is None:
            return None
        return (self.server, self.skill_uri, frozenset(self.skill_files.items()))


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """What a policy decided.

    Attributes:
        approved: whether the call may run.
        reason: why; a denial's reason is sent to the model.
        decided_by: who decided (recorded in the run); None means the policy's name.
    """

    approved: bool
    reason: str = ""
    decided_by: str | None = None

    @classmethod
    def approve(cls, reason: str = "", *, decided_by: str | None = None) -> ApprovalDecision:
        """An approval."""
        return cls(True, reason, decided_by)

    @classmethod
    def deny(cls, reason: str, *, decided_by: str | None = None) -> ApprovalDecision:
        """A denial; `reason` reaches the model."""
        return cls(False, reason, decided_by)


ApprovalPolicy = Callable[
    [ApprovalRequest],
    ApprovalDecision
    | bool
    | tuple[bool, str]
    | Awaitable[ApprovalDecision | bool | tuple[bool, str]],
]
"""A policy: gets an `ApprovalRequest`, returns an `ApprovalDecision`, a bool, or a
``(bool, reason)`` pair, directly or from a coroutine. A plain function runs in a worker
thread, so it may block (to ask someone, for example) without stopping other work."""


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One decision of a run, kept in `RunResult.approvals`.

    Attributes:
        call_id: the call's id (as in `ToolCallRecord.call_id`).
        tool: the tool name the model used.
        server: the server that would run (or ran) the call.
        arguments: the arguments the decision was about.
        approved: whether the call ran.
        reason: the decision's reason (for a denial, what the model was told).
        decided_by: who decided: the policy's name (``deny``, ``module:function``,
            ``terminal``, ...) or what the policy itself reported.
        policy_error: when the policy failed (raised, or returned something that is not
            a decision) and the call was denied for it, the exception's class name; the
            `reason` then holds the exception's text, which may quote the arguments, so
            traces record it only when content capture is on.
    """

    call_id: str
    tool: str
    server: str
    arguments: dict[str, Any]
    approved: bool
    reason: str
    decided_by: str
    policy_error: str | None = None
