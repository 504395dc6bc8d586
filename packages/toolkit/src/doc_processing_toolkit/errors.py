"""The one exception family of doc-processing-toolkit.

Messages say what went wrong, where (which server, key, file or provider) and how to fix it.
"""

from __future__ import annotations


class ToolkitError(Exception):
    """Base class of every error raised by doc-processing-toolkit."""


class ConfigError(ToolkitError):
    """An agent configuration (constructor argument, dict or YAML file) is invalid."""


class ModelError(ToolkitError):
    """A model provider could not be used or its API returned an error."""


class MissingDependencyError(ModelError):
    """An optional extra (a provider SDK) is not installed."""


class MissingCredentialsError(ModelError):
    """A provider's API key is not set."""


class ToolServerError(ToolkitError):
    """A tool server could not be connected, listed or called."""


class ToolNameConflictError(ToolServerError):
    """Two servers expose the same tool name and neither has a tool_prefix."""


class MaxTurnsExceededError(ToolkitError):
    """The model kept calling tools past the agent's max_turns."""
