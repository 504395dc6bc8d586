"""An agent toolkit for MCP tools, model providers and Agent Skills.

```python
from doc_processing_toolkit import Agent

agent = Agent("anthropic:claude-sonnet-5", instructions="Be brief.", tools=[server])
result = agent.run_sync("Summarise report.pdf")
```

Importing this package loads no provider SDK and no fastmcp; they are imported when used.
"""

from .agent import Agent, AgentBuilder, RunResult
from .approval import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
    TerminalApproval,
)
from .errors import (
    ConfigError,
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
from .tools.base import ToolServer
from .tools.loader import ToolLoader
from .tools.local import LocalFunctionSession, tool

__version__ = "0.5.3"

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
    "RunResult",
    "RunStartEvent",
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
