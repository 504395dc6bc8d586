"""`SettingsBuilder`: an agent's settings one call at a time (`AgentBuilder`, in `agent`,
adds `build`).

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
This module knows the settings only, not the agent, so the two import one way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self

from .approval import ApprovalSetting
from .models import Model

__all__ = ["SettingsBuilder"]


class SettingsBuilder:
    """Collects `Agent` arguments; each method sets the constructor argument of its name
    and returns the builder. Unset arguments keep the constructor's defaults.
    """

    def __init__(self) -> None:
        self._kwargs: dict[str, Any] = {}
        self._tools: list[Any] = []

    def _set(self, name: str, value: Any) -> Self:
        self._kwargs[name] = value
        return self

    def model(self, model: str | Model) -> Self:
        """Set `Agent(model=...)`."""
        return self._set("model", model)

    def instructions(self, instructions: str | None) -> Self:
        """Set `Agent(instructions=...)`."""
        return self._set("instructions", instructions)

    def tools(self, tools: Iterable[Any]) -> Self:
        """Set `Agent(tools=...)`, replacing tools given before."""
        self._tools = list(tools)
        return self

    def add_tool(self, entry: Any) -> Self:
        """Append one entry to `Agent(tools=...)`."""
        self._tools.append(entry)
        return self

    def auto_inject_skills(self, enabled: bool = True) -> Self:
        """Set `Agent(auto_inject_skills=...)`."""
        return self._set("auto_inject_skills", enabled)

    def provider_kwargs(self, provider_kwargs: Mapping[str, Any] | None) -> Self:
        """Set `Agent(provider_kwargs=...)`."""
        return self._set("provider_kwargs", provider_kwargs)

    def max_turns(self, max_turns: int) -> Self:
        """Set `Agent(max_turns=...)`."""
        return self._set("max_turns", max_turns)

    def model_options(self, model_options: Mapping[str, Any] | None) -> Self:
        """Set `Agent(model_options=...)`."""
        return self._set("model_options", model_options)

    def tool_timeout(self, seconds: float | None) -> Self:
        """Set `Agent(tool_timeout=...)`."""
        return self._set("tool_timeout", seconds)

    def skills_timeout(self, seconds: float) -> Self:
        """Set `Agent(skills_timeout=...)`."""
        return self._set("skills_timeout", seconds)

    def connect_timeout(self, seconds: float) -> Self:
        """Set `Agent(connect_timeout=...)`."""
        return self._set("connect_timeout", seconds)

    def skills_catalog_budget(self, characters: int | None) -> Self:
        """Set `Agent(skills_catalog_budget=...)`."""
        return self._set("skills_catalog_budget", characters)

    def skills_stale_after(self, seconds: float | None) -> Self:
        """Set `Agent(skills_stale_after=...)`."""
        return self._set("skills_stale_after", seconds)

    def notify_unavailable_servers(self, enabled: bool = True) -> Self:
        """Set `Agent(notify_unavailable_servers=...)`."""
        return self._set("notify_unavailable_servers", enabled)

    def approval(self, approval: ApprovalSetting | None) -> Self:
        """Set `Agent(approval=...)`: an `ApprovalGate`, or ``{"tools": [...],
        "policy": ...}``."""
        return self._set("approval", approval)

    def name(self, name: str | None) -> Self:
        """Set `Agent(name=...)`."""
        return self._set("name", name)

    def options(self) -> dict[str, Any]:
        """The collected keyword arguments of `Agent(...)`, tools included."""
        return {"tools": list(self._tools), **self._kwargs}
