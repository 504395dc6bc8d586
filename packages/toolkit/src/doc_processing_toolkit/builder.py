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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .agent import Agent
from .approval import ApprovalSetting
from .models import Model

__all__ = ["AgentBuilder"]


class AgentBuilder:
    """Collects `Agent` arguments; each method sets the constructor argument of its name
    and returns the builder. Unset arguments keep the constructor's defaults.
    """

    def __init__(self) -> None:
        self._kwargs: dict[str, Any] = {}
        self._tools: list[Any] = []

    def model(self, model: str | Model) -> AgentBuilder:
        """Set `Agent(model=...)`."""
        self._kwargs["model"] = model
        return self

    def instructions(self, instructions: str | None) -> AgentBuilder:
        """Set `Agent(instructions=...)`."""
        self._kwargs["instructions"] = instructions
        return self

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
        self._kwargs["auto_inject_skills"] = enabled
        return self

    def provider_kwargs(self, provider_kwargs: Mapping[str, Any] | None) -> AgentBuilder:
        """Set `Agent(provider_kwargs=...)`."""
        self._kwargs["provider_kwargs"] = provider_kwargs
        return self

    def max_turns(self, max_turns: int) -> AgentBuilder:
        """Set `Agent(max_turns=...)`."""
        self._kwargs["max_turns"] = max_turns
        return self

    def model_options(self, model_options: Mapping[str, Any] | None) -> AgentBuilder:
        """Set `Agent(model_options=...)`."""
        self._kwargs["model_options"] = model_options
        return self

    def tool_timeout(self, seconds: float | None) -> AgentBuilder:
        """Set `Agent(tool_timeout=...)`."""
        self._kwargs["tool_timeout"] = seconds
        return self

    def skills_timeout(self, seconds: float) -> AgentBuilder:
        """Set `Agent(skills_timeout=...)`."""
        self._kwargs["skills_timeout"] = seconds
        return self

    def connect_timeout(self, seconds: float) -> AgentBuilder:
        """Set `Agent(connect_timeout=...)`."""
        self._kwargs["connect_timeout"] = seconds
        return self

    def approval(self, approval: ApprovalSetting | None) -> AgentBuilder:
        """Set `Agent(approval=...)`: an `ApprovalGate`, or ``{"tools": [...],
        "policy": ...}``."""
        self._kwargs["approval"] = approval
        return self

    def name(self, name: str | None) -> AgentBuilder:
        """Set `Agent(name=...)`."""
        self._kwargs["name"] = name
        return self

    def build(self) -> Agent:
        """A new `Agent` with the collected arguments.

        Raises:
            ConfigError: an argument is invalid.
        """
        return Agent(tools=list(self._tools), **self._kwargs)
