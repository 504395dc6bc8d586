"""`RunPreview`: a run set up as `Agent.run` sets it up, without a model.

`Agent.preview(prompt)` connects the servers and asks each once for its tools and
instructions with the skills step applied for `prompt`, exactly as the first step of a
run. What comes back is what the model would be given (the system prompt, the tools, what
skills auto-injection did), and `RunPreview.call_tool` calls one of those tools the way
the model would reach it (through the approval gate, the tool prefix and the skills
wrapper's own tools). No model is resolved or asked, so no API key is needed: tools such
as skill evals (`evals`) read a skill's files and check a catalog block with it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._run import RunPlan, RunSetup, call_once
from .errors import ToolkitError
from .messages import ModelResponse
from .models import ModelRequest, TextDelta, ThinkingDelta
from .result import ToolCallRecord
from .skills import SkillsOutcome

__all__ = ["RunPreview"]

_call_ids = itertools.count(1)


class _NoModel:
    """The model of a preview: a preview never asks one (see `Agent.preview`)."""

    name = "none:preview"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Never called: a preview sends no request."""
        raise ToolkitError("a run preview asks no model")

    def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[TextDelta | ThinkingDelta | ModelResponse]:
        """Never called: a preview sends no request."""
        raise ToolkitError("a run preview asks no model")


NO_MODEL = _NoModel()
"""The stand-in model of a preview's plan (stateless; it refuses every request)."""


@dataclass(frozen=True, slots=True)
class RunPreview:
    """A run set up for a prompt, before any model request (see `Agent.preview`).

    Attributes:
        system_prompt: the system prompt the model would receive (the instructions with
            the skill catalog block chosen for the prompt, when one is injected).
        tools: the names of the tools the model would be offered.
        skills: what skills auto-injection did for this prompt (the skills known, those
            the block leaves out, the source and server).
        warnings: what went wrong without failing the setup.
    """

    system_prompt: str | None
    tools: tuple[str, ...]
    skills: SkillsOutcome
    warnings: tuple[str, ...]
    _plan: RunPlan = field(repr=False, compare=False)
    _setup: RunSetup = field(repr=False, compare=False)

    @classmethod
    def of(cls, plan: RunPlan, setup: RunSetup) -> RunPreview:
        """The preview of a prepared run."""
        return cls(
            system_prompt=setup.system_prompt,
            tools=tuple(setup.tools),
            skills=setup.skills,
            warnings=tuple(setup.warnings),
            _plan=plan,
            _setup=setup,
        )

    def shown_skills(self) -> tuple[str, ...]:
        """The names of the skills the catalog block shows, in the block's order of the
        catalog (empty when no catalog was injected)."""
        left_out = set(self.skills.left_out)
        if self.skills.status not in ("injected", "stale"):
            return ()
        return tuple(s.name for s in self.skills.skills if s.name not in left_out)

    def visible_name(self, server: str, server_tool: str) -> str | None:
        """The name the model sees for tool `server_tool` of the server named `server`
        (with its tool prefix), or None when that server offers no such tool."""
        for route in self._setup.tools.values():
            if route.server.name == server and route.server_tool == server_tool:
                return route.name
        return None

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> ToolCallRecord:
        """Call the tool the model would call as `name` (its model-visible name) with
        `arguments`, as a run would: the approval gate decides first, the agent's
        tool_timeout applies. A failure (unknown tool, error result, timeout, denial) is
        an error record (`ToolCallRecord.is_error`), never raised."""
        return await call_once(
            self._plan, self._setup, name, dict(arguments or {}), f"preview_{next(_call_ids)}"
        )
