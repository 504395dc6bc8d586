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

There is one method per field of `AgentConfig` (the one declaration of the settings),
made from that declaration when this module is imported, plus `add_tool`; a value is
checked when `build` makes the agent, as the constructor checks it. This module knows the
settings only, not the agent, so the two import one way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Self

from .config import AgentConfig

__all__ = ["SettingsBuilder"]


class SettingsBuilder:
    """Collects `Agent` arguments; each method sets the constructor argument of its name
    and returns the builder. Unset arguments keep the constructor's defaults.
    """

    def __init__(self) -> None:
        self._kwargs: dict[str, Any] = {}
        self._tools: list[Any] = []

    if TYPE_CHECKING:
        # The setters are made from AgentConfig below; to a type checker each is a
        # method taking the value and returning the builder.
        def __getattr__(self, name: str) -> Callable[..., Self]: ...

    def tools(self, tools: Iterable[Any]) -> Self:
        """Set `Agent(tools=...)`, replacing tools given before."""
        self._tools = list(tools)
        return self

    def add_tool(self, entry: Any) -> Self:
        """Append one entry to `Agent(tools=...)`."""
        self._tools.append(entry)
        return self

    def options(self) -> dict[str, Any]:
        """The collected keyword arguments of `Agent(...)`, tools included."""
        return {"tools": list(self._tools), **self._kwargs}


_UNSET: Any = object()


def _setter(name: str, flag: bool) -> Callable[..., Any]:
    """The builder method of setting `name` (`flag`: a switch, on when called bare)."""

    def set_value(self: SettingsBuilder, value: Any = True if flag else _UNSET) -> Any:
        if value is _UNSET:
            raise TypeError(f"{name}() takes the value of Agent({name}=...)")
        self._kwargs[name] = value
        return self

    set_value.__name__ = name
    set_value.__qualname__ = f"SettingsBuilder.{name}"
    description = AgentConfig.model_fields[name].description or name
    set_value.__doc__ = f"Set `Agent({name}=...)`: {description}."
    set_value.__annotations__ = {"value": "Any", "return": "Self"}
    return set_value


for _name, _field in AgentConfig.model_fields.items():
    if not hasattr(SettingsBuilder, _name):
        setattr(SettingsBuilder, _name, _setter(_name, _field.annotation is bool))
del _name, _field
