"""`AgentSettings`: one agent's settings, checked once and frozen.

`Agent(...)` hands its arguments here as they are; `AgentConfig` (the one declaration of
the settings, shared with the YAML loader) checks the plain values, `resolve_approval`
turns ``approval`` into a gate, and the result is kept as one frozen object. A run reads
its plan from it (`RunPlan`); nothing copies a setting elsewhere.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .approval import ApprovalGate, resolve_approval
from .config import AgentConfig, validate_settings
from .errors import ConfigError
from .models import Model
from .skills.lock import SkillsLock, read_skills_lock

__all__ = ["OBJECT_SETTINGS", "AgentSettings"]

OBJECT_SETTINGS = ("model", "tools", "approval")
"""The settings that also take objects (a `Model`, servers and functions, a gate); they
are resolved here or by the tool loader, not by `AgentConfig`'s value checks."""

_MAPPINGS = ("provider_kwargs", "model_options")
_PATTERN_LISTS = ("skills_include", "skills_exclude")
_PATHS = ("skills_lock",)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Every setting of one agent.

    Attributes:
        values: the plain settings, checked by `AgentConfig` (its ``model``, ``tools`` and
            ``approval`` are left at their defaults: they are the attributes below).
        model: the model as given: a name, a `Model`, or None.
        tools: the ``tools=[...]`` entries as given (the tool loader reads them).
        approval: the approval gate, or None.
        skills_lock: the lock read from ``values.skills_lock``, or None.
    """

    values: AgentConfig
    model: str | Model | None = None
    tools: tuple[Any, ...] = ()
    approval: ApprovalGate | None = None
    skills_lock: SkillsLock | None = None

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> AgentSettings:
        """The settings of ``Agent(**arguments)`` (the keys are `AgentConfig`'s fields;
        any other key, such as ``self``, is ignored).

        Raises:
            ConfigError: a value is invalid; the message names the setting.
        """
        plain = {
            name: _plain(name, arguments[name])
            for name in AgentConfig.model_fields
            if name in arguments and name not in OBJECT_SETTINGS
        }
        values = validate_settings(plain)
        lock = read_skills_lock(values.skills_lock) if values.skills_lock is not None else None
        approval = resolve_approval(arguments.get("approval"))
        model = arguments.get("model")
        if values.model_options and not isinstance(model, str):
            raise ConfigError(
                "model_options apply when model is a name such as 'openai:gpt-5'; with a "
                "Model object (or no model), configure the model itself."
            )
        return cls(values, model, tuple(arguments.get("tools", ())), approval, lock)

    @property
    def name(self) -> str:
        """The agent's name for logs (``agent`` when none was given)."""
        return self.values.name or "agent"

    def with_approval(self, gate: ApprovalGate | None) -> AgentSettings:
        """A copy with another approval gate."""
        return dataclasses.replace(self, approval=gate)


def _plain(name: str, value: Any) -> Any:
    """A plain setting's value as `AgentConfig` checks it (a mapping copied, None as {};
    a path as its string)."""
    if name in _MAPPINGS:
        return dict(value or {})
    if name in _PATHS and isinstance(value, os.PathLike):
        return os.fspath(value)
    if name in _PATTERN_LISTS and isinstance(value, tuple | frozenset | set):
        return list(value)
    return value
