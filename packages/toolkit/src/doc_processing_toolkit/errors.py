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


class ModelAPIError(ModelError):
    """A provider's API answered with an error, or could not be reached.

    Attributes:
        provider: ``"anthropic"`` or ``"openai"``.
        status_code: the HTTP status, or None when no response arrived (connection
            refused, timeout).
        api_message: the error message from the API's response body, when it had one.
        retry_after: the seconds the API asked to wait before trying again (its
            ``Retry-After`` header), when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        api_message: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.api_message = api_message
        self.retry_after = retry_after


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


class BatchError(ToolkitError):
    """A batch cannot start: its input, prompt template or output file is unusable."""


class TemplateFieldError(BatchError):
    """A batch item lacks a field its prompt template uses (that item fails, not the batch)."""


class EvalError(ToolkitError):
    """Skill evals cannot run: an ``evals/eval_queries.json`` is missing or malformed, a
    named skill is unknown, or an option is out of range."""
