"""Agent configuration from YAML or a dict, validated strictly.

`AgentConfig` is the one declaration of the agent's settings. Every key of `AgentConfig` is
a keyword of `Agent(...)` and a method of `AgentBuilder`. Unknown keys, wrong types and
missing environment variables are `ConfigError`s that name the key and the file.

``${VAR}`` anywhere in a string value is replaced by the environment variable ``VAR``;
``${VAR:-fallback}`` uses ``fallback`` when ``VAR`` is unset, and ``$${`` is a literal
``${``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field

from .approval import VALID_PATTERN, check_pattern, is_policy_name
from .errors import ConfigError
from .tools.transports import (
    McpCommandEntry,
    McpHttpEntry,
    McpScriptEntry,
    ServerEntry,
    SessionEntry,
    ToolEntryConfig,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_SKILLS_CATALOG_BUDGET",
    "DEFAULT_SKILLS_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "AgentConfig",
    "ApprovalConfig",
    "load_config_dict",
    "load_yaml",
    "parse_tool_entry",
    "validate_settings",
]

DEFAULT_MAX_TURNS = 20
"""The most model requests of one run, unless configured."""
DEFAULT_TOOL_TIMEOUT = 120.0
"""Seconds one tool call may take, unless configured."""
DEFAULT_SKILLS_TIMEOUT = 5.0
"""Seconds the skills catalog fetch may take on each run, unless configured."""
DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds a server may take to start and answer, unless configured."""
DEFAULT_SKILLS_CATALOG_BUDGET = 16_000
"""The most characters of the skill catalog block, unless configured (about 4,000
tokens; ``None`` set explicitly means no limit)."""

_TYPES = "mcp_command, mcp_script, mcp_http"
_VARIABLE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


_ENTRY_ADAPTER: pydantic.TypeAdapter[McpCommandEntry | McpScriptEntry | McpHttpEntry] = (
    pydantic.TypeAdapter(ToolEntryConfig)
)


def _valid_pattern(pattern: str) -> str:
    problem = check_pattern(pattern)
    if problem is not None:
        raise ValueError(f"{problem}; {VALID_PATTERN}")
    return pattern


def _skill_pattern(pattern: str) -> str:
    if not pattern or pattern != pattern.strip():
        raise ValueError(
            f"{pattern!r} is not a skill name pattern: it is empty or has whitespace around "
            "it; give a skill name or a glob of one, such as 'pdf-*'"
        )
    return pattern


SkillPatterns = list[Annotated[str, pydantic.AfterValidator(_skill_pattern)]]
"""Glob patterns over skill names (``skills_include``, ``skills_exclude``)."""


class ApprovalConfig(_Strict):
    """``approval:``: the tool calls that need approval and the named policy deciding
    (see `doc_processing_toolkit.approval.ApprovalGate`)."""

    tools: Annotated[
        list[Annotated[str, pydantic.AfterValidator(_valid_pattern)]], Field(min_length=1)
    ]
    """Tool name patterns (fnmatch-style) whose calls need approval."""
    policy: str
    """``approve``, ``deny``, ``ask`` (the person at the terminal) or ``module:function``."""

    @pydantic.field_validator("policy")
    @classmethod
    def _named_policy(cls, value: str) -> str:
        if is_policy_name(value):
            return value
        raise ValueError(f"must be approve, deny, ask or 'module:function' (got {value!r})")


class AgentConfig(_Strict):
    """Every setting of an agent, declared once.

    Each field is a keyword of `Agent(...)`, a method of `AgentBuilder` and a key of the
    YAML configuration, with the same name, default and checks; the settings tables of
    the documentation list the same fields in the same order. Validation happens here
    only: the constructor validates its arguments with `validate_settings`.
    """

    model: str | None = Field(default=None, description="the model name")
    instructions: str | None = Field(default=None, description="the system prompt")
    tools: list[ToolEntryConfig] = Field(default=[], description="tool servers")
    auto_inject_skills: bool = Field(
        default=True, description="add the skill catalog to the system prompt on every run"
    )
    provider_kwargs: dict[str, Any] = Field(
        default={}, description="merged unchanged into every provider request"
    )
    max_turns: Annotated[int, Field(ge=1)] = Field(
        default=DEFAULT_MAX_TURNS, description="the most model requests of one run"
    )
    model_options: dict[str, Any] = Field(
        default={}, description="options of the provider when model is a name"
    )
    tool_timeout: Annotated[float, Field(gt=0)] | None = Field(
        default=DEFAULT_TOOL_TIMEOUT, description="seconds one tool call may take"
    )
    skills_timeout: Annotated[float, Field(gt=0)] = Field(
        default=DEFAULT_SKILLS_TIMEOUT, description="seconds the catalog call may take"
    )
    connect_timeout: Annotated[float, Field(gt=0)] = Field(
        default=DEFAULT_CONNECT_TIMEOUT, description="seconds a server may take to connect"
    )
    skills_catalog_budget: Annotated[int, Field(ge=1)] | None = Field(
        default=DEFAULT_SKILLS_CATALOG_BUDGET,
        description="the most characters of the skill catalog block (null: no limit)",
    )
    skills_stale_after: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="seconds a last good catalog may stand in for a failed one"
    )
    notify_unavailable_servers: bool = Field(
        default=True,
        description="tell the model in one line which optional servers are unavailable",
    )
    approval: ApprovalConfig | None = Field(
        default=None, description="tool calls that need approval"
    )
    skills_lock: str | None = Field(
        default=None,
        description="a skills lock file; extension-served skills it does not pin are rejected",
    )
    skills_include: SkillPatterns | None = Field(
        default=None,
        description="glob patterns over skill names: only the skills one matches are offered",
    )
    skills_exclude: SkillPatterns | None = Field(
        default=None,
        description="glob patterns over skill names: the skills one matches are not offered",
    )
    name: str | None = Field(default=None, description="the agent's name, for logs")


#: The settings that `Agent(...)` takes as plain values (the others, model, tools and
#: approval, also accept objects and are checked where they are resolved).
_VALUE_SETTINGS = tuple(
    name for name in AgentConfig.model_fields if name not in ("model", "tools", "approval")
)


def validate_settings(values: Mapping[str, Any], *, source: str = "Agent(...)") -> AgentConfig:
    """Check the value settings among `values` (keys of `AgentConfig`) as YAML would.

    Raises:
        ConfigError: a value is of the wrong type or out of range; the message names the
            setting.
    """
    plain = {k: v for k, v in values.items() if k in _VALUE_SETTINGS}
    try:
        return AgentConfig.model_validate(plain)
    except pydantic.ValidationError as exc:
        raise _format_errors(exc, source) from None


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        elif index > 0 and isinstance(loc[index - 1], int) and part.startswith("mcp_"):
            continue
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def _format_errors(
    error: pydantic.ValidationError, where: str, prefix: tuple[int | str, ...] = ()
) -> ConfigError:
    lines = []
    for item in error.errors():
        key = _location((*prefix, *item["loc"]))
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "union_tag_invalid":
            key, message = f"{key}.type", f"must be one of {_TYPES} (got {item['input']['type']!r})"
        elif item["type"] == "union_tag_not_found":
            key, message = f"{key}.type", f"required key is missing (one of {_TYPES})"
        elif item["type"] == "value_error":
            message = item["msg"].removeprefix("Value error, ")
        else:
            message = f"{item['msg']} (got {item.get('input')!r})"
        lines.append(f"  {key}: {message}")
    return ConfigError(f"invalid agent configuration in {where}:\n" + "\n".join(lines))


def _substitute(value: Any, where: str, key: str) -> Any:
    """`value` with every ``${VAR}`` replaced (see the module docstring).

    Raises:
        ConfigError: variables are not set; one error names every one of them, with the
            keys that use it.
    """
    missing: dict[str, list[str]] = {}
    expanded = _expand(value, key, missing)
    if missing:
        lines = [f"  {name} (used by {', '.join(keys)})" for name, keys in missing.items()]
        count = "an environment variable" if len(missing) == 1 else "environment variables"
        raise ConfigError(
            f"{where}: the configuration uses {count} that {'is' if len(missing) == 1 else 'are'}"
            " not set:\n" + "\n".join(lines) + "\nset "
            f"{'it' if len(missing) == 1 else 'them'}, or give a fallback as ${{VAR:-default}}."
        )
    return expanded


def _expand(value: Any, key: str, missing: dict[str, list[str]]) -> Any:
    """`value` with each set ``${VAR}`` replaced; unset ones are added to `missing`."""
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            variable, fallback = match.group(1), match.group(2)
            found = os.environ.get(variable)
            if found is not None:
                return found
            if fallback is not None:
                return fallback
            users = missing.setdefault(variable, [])
            if (key or "(top level)") not in users:
                users.append(key or "(top level)")
            return ""

        return _VARIABLE.sub(replace, value)
    if isinstance(value, Mapping):
        return {k: _expand(v, f"{key}.{k}" if key else str(k), missing) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{key}[{i}]", missing) for i, v in enumerate(value)]
    return value


def load_config_dict(
    data: Mapping[str, Any], *, source: str = "Agent.from_config(...)"
) -> AgentConfig:
    """Validate a configuration mapping, after ``${VAR}`` substitution.

    Args:
        data: the configuration, with the keys of `AgentConfig`.
        source: named in error messages (the file, when read from one).

    Raises:
        ConfigError: a key is unknown, has the wrong type, or uses an unset variable.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys to values.")
    substituted = _substitute(data, source, "")
    try:
        return AgentConfig.model_validate(substituted)
    except pydantic.ValidationError as exc:
        raise _format_errors(exc, source) from None


def load_yaml(path: str | os.PathLike[str]) -> AgentConfig:
    """Read and validate an agent YAML file.

    Relative ``script`` and ``cwd`` paths of stdio entries, and a relative
    ``skills_lock``, are resolved against the file's folder, so a configuration works
    from any working directory.

    Raises:
        ConfigError: the file is missing or unreadable, is not YAML, or is invalid, or a
            required stdio entry names a ``script`` or ``cwd`` that does not exist.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"agent configuration file {str(file)!r} does not exist.") from None
    except OSError as exc:
        raise ConfigError(f"cannot read agent configuration file {str(file)!r}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"agent configuration file {str(file)!r} is not UTF-8 text (byte {exc.start})."
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(file, exc) from None
    config = load_config_dict({} if data is None else data, source=str(file))
    base = file.resolve().parent
    tools = [_resolve_paths(entry, base) for entry in config.tools]
    missing = [line for index, entry in enumerate(tools) for line in _missing_paths(entry, index)]
    if missing:
        raise ConfigError(f"invalid agent configuration in {file}:\n" + "\n".join(missing))
    update: dict[str, Any] = {"tools": tools}
    if config.skills_lock is not None and not Path(config.skills_lock).is_absolute():
        update["skills_lock"] = str(base / config.skills_lock)
    return config.model_copy(update=update)


def _yaml_error(file: Path, error: yaml.YAMLError) -> ConfigError:
    """A `ConfigError` for YAML that does not parse, naming the file, the line and the
    column (1-based) and showing the line."""
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return ConfigError(f"{file} is not valid YAML: {error}")
    mark = error.problem_mark
    text = f"{file}, line {mark.line + 1}, column {mark.column + 1}: not valid YAML: "
    text += error.problem or "syntax error"
    if error.context and error.context_mark is not None:
        context = error.context_mark
        text += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
    snippet = mark.get_snippet()
    return ConfigError(text + (f"\n{snippet}" if snippet else ""))


def _missing_paths(entry: McpCommandEntry | McpScriptEntry | McpHttpEntry, index: int) -> list[str]:
    """A line per ``script`` or ``cwd`` of a required stdio entry that does not exist.

    An optional entry (``required: false``) may name a path that appears later; its run
    then reports the failed start as a warning.
    """
    if not entry.required or isinstance(entry, McpHttpEntry):
        return []
    lines: list[str] = []
    script = entry.script if isinstance(entry, McpScriptEntry) else None
    if script is not None and not Path(script).is_file():
        lines.append(f"  tools[{index}].script: file {script!r} does not exist")
    if entry.cwd is not None and not Path(entry.cwd).is_dir():
        lines.append(f"  tools[{index}].cwd: directory {entry.cwd!r} does not exist")
    return lines


def _resolve_paths(
    entry: McpCommandEntry | McpScriptEntry | McpHttpEntry, base: Path
) -> McpCommandEntry | McpScriptEntry | McpHttpEntry:
    update: dict[str, str] = {}
    if (
        isinstance(entry, McpScriptEntry)
        and entry.script is not None
        and not Path(entry.script).is_absolute()
    ):
        update["script"] = str(base / entry.script)
    if (
        isinstance(entry, McpCommandEntry | McpScriptEntry)
        and entry.cwd is not None
        and not Path(entry.cwd).is_absolute()
    ):
        update["cwd"] = str(base / entry.cwd)
    return entry.model_copy(update=update) if update else entry


def parse_tool_entry(
    data: Mapping[str, Any], *, index: int
) -> McpCommandEntry | McpScriptEntry | McpHttpEntry | SessionEntry | ServerEntry:
    """Validate the dict at ``tools[index]`` (after ``${VAR}`` substitution).

    Raises:
        ConfigError: the entry is invalid; the message names the entry and the key.
    """
    substituted = _substitute(dict(data), "Agent(tools=...)", f"tools[{index}]")
    try:
        if "session" in data:
            return SessionEntry.model_validate(substituted)
        if "server" in data:
            return ServerEntry.model_validate(substituted)
        return _ENTRY_ADAPTER.validate_python(substituted)
    except pydantic.ValidationError as exc:
        raise _format_errors(exc, "Agent(tools=...)", ("tools", index)) from None
