"""An agent toolkit for MCP tools, model providers and Agent Skills.

```python
from doc_processing_toolkit import Agent

agent = Agent("anthropic:claude-sonnet-5", instructions="Be brief.", tools=[server])
result = agent.run_sync("Summarise report.pdf")
```

Importing this package loads no provider SDK, no fastmcp and not even the MCP SDK: each
public name's module is imported the first time the name is used, so ``dpt-agent --version``
and ``--help`` answer at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .agent import Agent, AgentBuilder, RunResult
    from .approval import (
        ApprovalDecision,
        ApprovalGate,
        ApprovalPolicy,
        ApprovalRecord,
        ApprovalRequest,
        SkillApprovals,
    )
    from .cli_approval import TerminalApproval
    from .errors import (
        ConfigError,
        EvalError,
        MaxTurnsExceededError,
        MissingCredentialsError,
        MissingDependencyError,
        ModelAPIError,
        ModelError,
        ToolkitError,
        ToolNameConflictError,
        ToolServerError,
    )
    from .events import (
        AgentEvent,
        ApprovalEvent,
        FinalResultEvent,
        RunStartEvent,
        TextDeltaEvent,
        ThinkingDeltaEvent,
        ToolCallEvent,
        ToolCallRecord,
        ToolResultEvent,
    )
    from .messages import (
        Message,
        ProviderPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        ToolSpec,
        Usage,
    )
    from .models import Model, ModelRequest, TestModel
    from .preview import RunPreview
    from .tools.base import ToolServer
    from .tools.loader import ToolLoader
    from .tools.local import LocalFunctionSession, tool

__all__ = [
    "Agent",
    "AgentBuilder",
    "AgentEvent",
    "ApprovalDecision",
    "ApprovalEvent",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "ConfigError",
    "EvalError",
    "FinalResultEvent",
    "LocalFunctionSession",
    "MaxTurnsExceededError",
    "Message",
    "MissingCredentialsError",
    "MissingDependencyError",
    "Model",
    "ModelAPIError",
    "ModelError",
    "ModelRequest",
    "ProviderPart",
    "RunPreview",
    "RunResult",
    "RunStartEvent",
    "SkillApprovals",
    "TerminalApproval",
    "TestModel",
    "TextDeltaEvent",
    "TextPart",
    "ThinkingDeltaEvent",
    "ToolCallEvent",
    "ToolCallPart",
    "ToolCallRecord",
    "ToolLoader",
    "ToolNameConflictError",
    "ToolResultEvent",
    "ToolResultPart",
    "ToolServer",
    "ToolServerError",
    "ToolSpec",
    "ToolkitError",
    "Usage",
    "__version__",
    "tool",
]

_LAZY: dict[str, str] = {
    "Agent": ".agent",
    "AgentBuilder": ".agent",
    "AgentEvent": ".events",
    "ApprovalDecision": ".approval",
    "ApprovalEvent": ".events",
    "ApprovalGate": ".approval",
    "ApprovalPolicy": ".approval",
    "ApprovalRecord": ".approval",
    "ApprovalRequest": ".approval",
    "SkillApprovals": ".approval",
    "ConfigError": ".errors",
    "EvalError": ".errors",
    "FinalResultEvent": ".events",
    "LocalFunctionSession": ".tools.local",
    "MaxTurnsExceededError": ".errors",
    "Message": ".messages",
    "MissingCredentialsError": ".errors",
    "MissingDependencyError": ".errors",
    "Model": ".models",
    "ModelAPIError": ".errors",
    "ModelError": ".errors",
    "ModelRequest": ".models",
    "ProviderPart": ".messages",
    "RunPreview": ".preview",
    "RunResult": ".agent",
    "RunStartEvent": ".events",
    "TerminalApproval": ".cli_approval",
    "TestModel": ".models",
    "TextDeltaEvent": ".events",
    "TextPart": ".messages",
    "ThinkingDeltaEvent": ".events",
    "ToolCallEvent": ".events",
    "ToolCallPart": ".messages",
    "ToolCallRecord": ".events",
    "ToolLoader": ".tools.loader",
    "ToolNameConflictError": ".errors",
    "ToolResultEvent": ".events",
    "ToolResultPart": ".messages",
    "ToolServer": ".tools.base",
    "ToolServerError": ".errors",
    "ToolSpec": ".messages",
    "ToolkitError": ".errors",
    "Usage": ".messages",
    "tool": ".tools.local",
}


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is asked for."""
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_name, __name__), name)
    globals()[name] = value
    return value
