"""`AgentBuilder`: build an `Agent` one setting at a time.

```python
agent = (
    AgentBuilder()
    .model("anthropic:claude-sonnet-5")
    .instructions("Answer briefly.")
    .add_tool(server)
    .max_turns(8)
    .build()
)
```

There is one method per field of `AgentConfig` (the one declaration of the settings), plus
`add_tool`; a value is checked when `build` makes the agent, as the constructor checks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .approval import ApprovalSetting
from .models import Model

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["AgentBuilder"]


class AgentBuilder:
    """Collects `Agent` arguments; each method sets the constructor argument of its name
    and returns the builder. Unset arguments keep the constructor's defaults.
    """

    def __init__(self) -> None:
        self._kwargs: dict[str, Any] = {}
        self._tools: list[Any] = []

    def _set(self, name: str, value: Any) -> AgentBuilder:
        self._kwargs[name] = value
        return self

    def model(self, model: str | Model) -> AgentBuilder:
        """Set `Agent(model=...)`."""
        return self._set("model", model)

    def instructions(self, instructions: str | None) -> AgentBuilder:
        """Set `Agent(instructions=...)`."""
        return self._set("instructions", instructions)

    def tools(self, tools: Iterable[Any]) -> AgentBuilder:
        """Set `Agent(tools=...)`, replacing tools given before."""
        self._tools = list(tools)
        return self

    def add_tool(self, entry: Any) -> AgentBuilder:
        """Append one entry to `Agent(tools=...)`."""
        self._tools.append(entry)
        return self

    def auto_inject_skills(self, enabled: bool = True) -> AgentBuilder:
        """Set `Agent(auto_inject_skills=...)`."""
        return self._set("auto_inject_skills", enabled)

    def provider_kwargs(self, provider_kwargs: Mapping[str, Any] | None) -> AgentBuilder:
        """Set `Agent(provider_kwargs=...)`."""
        return self._set("provider_kwargs", provider_kwargs)

    def max_turns(self, max_turns: int) -> AgentBuilder:
        """Set `Agent(max_turns=...)`."""
        return self._set("max_turns", max_turns)

    def model_options(self, model_options: Mapping[str, Any] | None) -> AgentBuilder:
        """Set `Agent(model_options=...)`."""
        return self._set("model_options", model_options)

    def tool_timeout(self, seconds: float | None) -> AgentBuilder:
        """Set `Agent(tool_timeout=...)`."""
        return self._set("tool_timeout", seconds)

    def skills_timeout(self, seconds: float) -> AgentBuilder:
        """Set `Agent(skills_timeout=...)`."""
        return self._set("skills_timeout", seconds)

    def connect_timeout(self, seconds: float) -> AgentBuilder:
        """Set `Agent(connect_timeout=...)`."""
        return self._set("connect_timeout", seconds)

    def skills_catalog_budget(self, characters: int | None) -> AgentBuilder:
        """Set `Agent(skills_catalog_budget=...)`."""
        return self._set("skills_catalog_budget", characters)

    def skills_stale_after(self, seconds: float | None) -> AgentBuilder:
        """Set `Agent(skills_stale_after=...)`."""
        return self._set("skills_stale_after", seconds)

    def notify_unavailable_servers(self, enabled: bool = True) -> AgentBuilder:
        """Set `Agent(notify_unavailable_servers=...)`."""
        return self._set("notify_unavailable_servers", enabled)

    def approval(self, approval: ApprovalSetting | None) -> AgentBuilder:
        """Set `Agent(approval=...)`: an `ApprovalGate`, or ``{"tools": [...],
        "policy": ...}``."""
        return self._set("approval", approval)

    def name(self, name: str | None) -> AgentBuilder:
        """Set `Agent(name=...)`."""
        return self._set("name", name)

    def build(self) -> Agent:
        """A new `Agent` with the collected arguments.

        Raises:
            ConfigError: an argument is invalid.
        """
        from .agent import Agent

        return Agent(tools=list(self._tools), **self._kwargs)
