"""The approval gate: tool calls that a policy (or a person) must approve before they run.

An `ApprovalGate` names the tools that need approval (fnmatch-style patterns) and the
policy that decides. For every call the model makes to a matching tool, the agent builds
an `ApprovalRequest` (tool, server, arguments), asks the policy, and gets an
`ApprovalDecision`. An approved call runs as usual; a denied one is not called at all and
the model receives a tool error carrying the reason. Every decision becomes an
`ApprovalRecord` of the run. Those three are in `decisions`, which the ``ask`` policy of
`cli_approval` imports without importing the gate; this module re-exports them.

The gate fails closed: a policy that raises, or returns anything other than a decision,
a bool or a ``(bool, reason)`` pair, denies the call, with what went wrong as the reason.

A pattern is a tool name or a glob of one, with no whitespace around it (`check_pattern`);
a pattern that matches no tool of the connected servers is a configuration error
(`ApprovalGate.check_patterns`), raised before the model is asked: a misspelt name would
otherwise leave the tool it meant ungated.

Policies by name (what a YAML file can hold): ``approve``, ``deny``, ``ask`` (the person
at the terminal, `cli_approval.TerminalApproval`) and ``"module:function"`` (a callable
imported when the agent is built).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import anyio
import anyio.to_thread

from .decisions import (
    HIDDEN_CATEGORIES,
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
)
from .errors import ConfigError

__all__ = [
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApprovalSetting",
    "SkillApprovals",
    "approve_all",
    "check_pattern",
    "deny_all",
    "is_policy_name",
    "resolve_approval",
]

logger = logging.getLogger(__name__)

_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_LISTED_TOOLS = 60

#: What a valid pattern is, for error messages.
VALID_PATTERN = (
    "a valid pattern is a tool name or a glob of one: the name as the model sees it or as "
    "its server names it, with * (any run of characters), ? (one character) and [...] (one "
    "of a set), case-sensitive, with no whitespace around it; for example 'write_file', "
    "'fs_*' or '*'"
)


def check_pattern(pattern: object) -> str | None:
    """Why `pattern` is not a valid tool name pattern (see `VALID_PATTERN`), or None."""
    if not isinstance(pattern, str):
        return f"{pattern!r} is not a tool name pattern: it is a {type(pattern).__name__}"
    if not pattern or pattern.isspace():
        problem = "it is empty"
    elif pattern != pattern.strip():
        problem = "it has whitespace around it, which no tool name has"
    elif any(unicodedata.category(ch) in HIDDEN_CATEGORIES for ch in pattern):
        problem = "it holds a control or invisible character"
    else:
        return None
    return f"{pattern!r} is not a valid tool name pattern: {problem}"


def approve_all(request: ApprovalRequest) -> ApprovalDecision:
    """The ``approve`` policy: every call runs (and is recorded)."""
    return ApprovalDecision.approve("approved by the 'approve' policy")


def deny_all(request: ApprovalRequest) -> ApprovalDecision:
    """The ``deny`` policy: no matching call runs."""
    return ApprovalDecision.deny(
        f"the agent's approval policy denies every call to {request.tool!r}"
    )


_NAMED: dict[str, Callable[[], ApprovalPolicy]] = {
    "approve": lambda: approve_all,
    "deny": lambda: deny_all,
    "ask": lambda: _terminal_approval(),
}


def _terminal_approval() -> ApprovalPolicy:
    """The ``ask`` policy, `TerminalApproval`: the terminal belongs to the command line
    (`cli_approval`), imported only when a gate asks for it."""
    from .cli_approval import TerminalApproval

    return TerminalApproval()


def is_policy_name(name: str) -> bool:
    """Whether `name` names a policy: ``approve``, ``deny``, ``ask`` or ``module:function``
    (whether that module exists is checked when the agent is built)."""
    return name in _NAMED or _IMPORT_PATH.fullmatch(name) is not None


def _policy_name(policy: ApprovalPolicy) -> str:
    if policy is approve_all:
        return "approve"
    if policy is deny_all:
        return "deny"
    named = getattr(type(policy), "policy_name", None)
    if isinstance(named, str) and named in _NAMED:
        return named
    qualname = getattr(policy, "__qualname__", None) or type(policy).__qualname__
    module = getattr(policy, "__module__", None) or type(policy).__module__
    return f"{module}:{qualname}"


def _import_policy(path: str) -> ApprovalPolicy:
    module_name, _, attribute = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"approval.policy {path!r}: cannot import module {module_name!r} "
            f"({type(exc).__name__}: {exc}); check the name and that it is importable."
        ) from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(
                f"approval.policy {path!r}: module {module_name!r} has no {attribute!r}."
            ) from None
    if not callable(found):
        raise ConfigError(f"approval.policy {path!r} is not callable.")
    policy: ApprovalPolicy = found
    return policy


def _resolve_policy(policy: ApprovalPolicy | str | None) -> tuple[ApprovalPolicy, str]:
    if policy is None:
        raise ConfigError(
            "approval: tools are listed but no policy decides on them; give a policy: "
            "'approve', 'deny', 'ask' (the person at the terminal), 'module:function', "
            "or a callable."
        )
    if isinstance(policy, str):
        make = _NAMED.get(policy)
        if make is not None:
            return make(), policy
        if _IMPORT_PATH.fullmatch(policy):
            return _import_policy(policy), policy
        raise ConfigError(
            f"approval.policy must be 'approve', 'deny', 'ask' or 'module:function' "
            f"(got {policy!r})."
        )
    if not callable(policy):
        raise ConfigError(
            f"approval.policy must be a callable or a name, got {type(policy).__name__}."
        )
    return policy, _policy_name(policy)


@dataclass(frozen=True, slots=True, init=False)
class ApprovalGate:
    """Which tool calls need approval, and who decides.

    Args:
        tools: fnmatch-style patterns (``*``, ``?``, ``[...]``, case-sensitive). A call
            needs approval when a pattern matches the tool name the model used *or* the
            tool's own name on its server, so ``write_file`` also gates ``fs_write_file``
            of a server with ``tool_prefix: fs``; ``fs_write_file`` gates that one only.
        policy: a callable (`ApprovalPolicy`, sync or async) or a name: ``approve``,
            ``deny``, ``ask`` or ``"module:function"``.

    Raises:
        ConfigError: no pattern, a pattern that is not valid (empty, whitespace around
            it; see `check_pattern`), no policy, or a policy that cannot be found.
    """

    tools: tuple[str, ...]
    policy: ApprovalPolicy
    policy_name: str

    def __init__(self, tools: Iterable[str], policy: ApprovalPolicy | str | None = None) -> None:
        if isinstance(tools, str):
            raise ConfigError(
                f"approval.tools must be a list of tool name patterns, got the string "
                f"{tools!r}; write [{tools!r}]."
            )
        patterns = tuple(tools)
        if not patterns:
            raise ConfigError(
                "approval.tools lists no pattern; name the tools that need approval "
                "(for example ['execute_skill_script', 'write_file'], or ['*'] for all), "
                "or leave approval unset."
            )
        for index, pattern in enumerate(patterns):
            problem = check_pattern(pattern)
            if problem is not None:
                raise ConfigError(f"approval.tools[{index}]: {problem}; {VALID_PATTERN}.")
        resolved, name = _resolve_policy(policy)
        object.__setattr__(self, "tools", patterns)
        object.__setattr__(self, "policy", resolved)
        object.__setattr__(self, "policy_name", name)

    def matches(self, tool: str, server_tool: str) -> bool:
        """Whether a call to `tool` (its model-visible name; `server_tool` on its server)
        needs approval."""
        return any(
            fnmatchcase(tool, pattern) or fnmatchcase(server_tool, pattern)
            for pattern in self.tools
        )

    def unmatched(self, names: Iterable[tuple[str, str]]) -> list[str]:
        """The patterns that match none of `names` (pairs of visible and server names)."""
        pairs = list(names)
        return [
            pattern
            for pattern in self.tools
            if not any(fnmatchcase(a, pattern) or fnmatchcase(b, pattern) for a, b in pairs)
        ]

    def check_patterns(
        self, names: Iterable[tuple[str, str]], *, unlisted: Iterable[str] = ()
    ) -> list[str]:
        """Fail closed on a pattern that matches none of `names`, the tools that exist
        (pairs of the name the model sees and the name on the server).

        Args:
            names: every tool of the connected servers.
            unlisted: the servers whose tools are not known (optional servers that could
                not be reached yet): while there are any, a pattern may be meant for one
                of their tools, so it is not judged.

        Returns:
            The patterns that match no tool but could not be judged (only with `unlisted`).

        Raises:
            ConfigError: a pattern matches no tool and every server's tools are known; the
                message names the patterns and the tools that exist.
        """
        pairs = list(names)
        missing = self.unmatched(pairs)
        if not missing or list(unlisted):
            return missing
        tools = sorted({name for pair in pairs for name in pair})
        shown = ", ".join(tools[:_LISTED_TOOLS]) or "none"
        if len(tools) > _LISTED_TOOLS:
            shown += f" and {len(tools) - _LISTED_TOOLS} more"
        which = (
            f"the pattern {missing[0]!r} matches"
            if len(missing) == 1
            else f"the patterns {', '.join(map(repr, missing))} match"
        )
        raise ConfigError(
            f"approval.tools: {which} no tool of the connected servers, so the gate would "
            "leave the tool it meant ungated (a misspelt name fails closed). The tools are: "
            f"{shown}. Correct the pattern ({VALID_PATTERN}) or remove it."
        )

    async def decide(self, request: ApprovalRequest) -> ApprovalRecord:
        """Ask the policy about `request`; any failure of the policy is a denial."""
        failure: str | None = None
        try:
            decision = _as_decision(await self._call_policy(request))
        except Exception as exc:
            failure = type(exc).__name__
            logger.warning(
                "approval policy %s failed on %r; the call is denied: %s: %s",
                self.policy_name,
                request.tool,
                type(exc).__name__,
                exc,
            )
            decision = ApprovalDecision.deny(
                f"the approval policy failed ({type(exc).__name__}: {exc})"
            )
        return ApprovalRecord(
            call_id=request.call_id,
            tool=request.tool,
            server=request.server,
            arguments=request.arguments,
            approved=decision.approved,
            reason=decision.reason,
            decided_by=decision.decided_by or self.policy_name,
            policy_error=failure,
        )

    async def _call_policy(self, request: ApprovalRequest) -> object:
        policy = self.policy
        if inspect.iscoroutinefunction(policy) or (
            not inspect.isroutine(policy) and inspect.iscoroutinefunction(type(policy).__call__)
        ):
            produced: object = policy(request)
        else:
            produced = await anyio.to_thread.run_sync(policy, request)
        if inspect.isawaitable(produced):
            produced = await produced
        return produced


class SkillApprovals:
    """A policy that asks `policy` once per skill and remembers its approvals, each bound
    to the skill's whole identity: the server, the skill's URI and the complete set of
    its files' digests (`ApprovalRequest.skill_key`).

    A later call that reads the same skill with the same digests is approved without
    asking. When any file of the skill is listed with another digest (or a file is added
    or removed), the remembered approval is revoked and `policy` is asked again; a skill
    of another server, or another skill, never shares an approval. Calls that read no
    extension skill are always passed to `policy`. Denials are not remembered.

    Args:
        policy: the policy that decides (a callable or a name, as `ApprovalGate` takes).
    """

    def __init__(self, policy: ApprovalPolicy | str) -> None:
        self._policy, self._name = _resolve_policy(policy)
        self._approved: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}

    def approved(self, server: str, uri: str) -> frozenset[tuple[str, str]] | None:
        """The digest set the skill at `uri` of `server` is approved with, if any."""
        return self._approved.get((server, uri))

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        """Approve a remembered skill; else ask the policy (and remember an approval)."""
        key = request.skill_key
        if key is not None:
            server, uri, digests = key
            held = self._approved.get((server, uri))
            if held == digests:
                return ApprovalDecision.approve(
                    f"skill {uri} of server {server!r} was approved before with these same "
                    "file digests",
                    decided_by=f"{self._name} (remembered)",
                )
            if held is not None:
                del self._approved[(server, uri)]  # a digest changed: the approval falls
                logger.info(
                    "approval of skill %s of server %r revoked: its files changed", uri, server
                )
        gate = ApprovalGate(["*"], self._policy)
        record = await gate.decide(request)
        if key is not None and record.approved:
            self._approved[(key[0], key[1])] = key[2]
        return ApprovalDecision(record.approved, record.reason, record.decided_by)


def _as_decision(value: object) -> ApprovalDecision:
    """A policy's answer as a decision; anything unexpected is a denial (never a
    truthiness check: a policy returning ``"no"`` must not approve)."""
    if isinstance(value, ApprovalDecision):
        return value
    if isinstance(value, bool):
        return ApprovalDecision(value, "" if value else "denied by the approval policy")
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], bool)
        and isinstance(value[1], str)
    ):
        return ApprovalDecision(value[0], value[1])
    raise TypeError(
        f"the policy returned {value!r}; it must return an ApprovalDecision, a bool or "
        "a (bool, reason) pair"
    )


ApprovalSetting = ApprovalGate | Mapping[str, Any]
"""What ``Agent(approval=...)`` takes: a gate, or a mapping ``{"tools": [...],
"policy": ...}`` as in a YAML file."""


def resolve_approval(setting: ApprovalSetting | None) -> ApprovalGate | None:
    """The gate of ``Agent(approval=...)``; None leaves every call ungated.

    Raises:
        ConfigError: the setting is invalid (see `ApprovalGate`).
    """
    if setting is None or isinstance(setting, ApprovalGate):
        return setting
    if not isinstance(setting, Mapping):
        raise ConfigError(
            "approval must be an ApprovalGate or a mapping with 'tools' and 'policy', "
            f"got {type(setting).__name__}."
        )
    unknown = sorted(set(setting) - {"tools", "policy"})
    if unknown:
        raise ConfigError(
            f"approval: unknown key(s) {', '.join(map(repr, unknown))}; "
            "the keys are 'tools' and 'policy'."
        )
    if "tools" not in setting:
        raise ConfigError("approval: 'tools' is missing; list the tools that need approval.")
    tools = setting["tools"]
    if not isinstance(tools, Iterable):
        raise ConfigError(f"approval.tools must be a list of tool name patterns, got {tools!r}.")
    return ApprovalGate(tools, setting.get("policy"))
