"""Python functions as tools: the `@tool` decorator and `LocalFunctionSession`.

`LocalFunctionSession` answers `list_tools` and `call_tool` exactly like an MCP
`ClientSession`, so the agent treats a list of functions as one more tool server.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints, overload

import anyio.to_thread
import pydantic
import pydantic_core
from mcp.types import CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent, Tool

from ..errors import ConfigError
from .base import TOOL_NAME_PATTERN

__all__ = ["LocalFunctionSession", "LocalTool", "tool"]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_ATTRIBUTE = "__dpt_tool__"
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?):\s*$"
)
_GOOGLE_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_ARG_SECTIONS = ("args", "arguments", "parameters", "params")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Google (``Args:``), Sphinx (``:param x:``) and NumPy (``Parameters`` over a rule of
    dashes) styles are understood; the text before the first section is the description.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    numpy_style = False
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        indent = len(line) - len(line.lstrip())
        if header := _SECTION.match(line):
            section, current, arg_indent = header.group(1).lower(), None, None
        elif _NUMPY_RULE.match(line):
            continue
        elif line.strip() and _NUMPY_RULE.match(following):
            section, current, arg_indent = line.strip().lower(), None, None
            numpy_style = True
        elif sphinx := _SPHINX_ARG.match(line):
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif line.lstrip().startswith(":"):
            section, current = "sphinx", None
        elif section in _ARG_SECTIONS and (arg_indent is None or indent <= arg_indent):
            google = _GOOGLE_ARG.match(line)
            if google:
                arg_indent, current = indent, google.group(1)
                params[current] = "" if numpy_style else google.group(2).strip()
            elif line.strip():
                current = line.strip().split()[0].rstrip(":")
                arg_indent = indent
                params[current] = ""
        elif section is not None and current is not None and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
        elif section is None:
            description.append(line)
    return "\n".join(description).strip(), {k: v for k, v in params.items() if v}


@dataclass(frozen=True, eq=False)
class LocalTool:
    """One Python function exposed as a tool.

    Build it with `LocalTool.from_function` or the `@tool` decorator; the input schema
    comes from the type hints, the descriptions from the docstring.
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments_model: type[pydantic.BaseModel]
    input_schema: dict[str, Any]

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> LocalTool:
        """Describe `function` as a tool.

        Raises:
            ConfigError: the function takes ``*args``/``**kwargs`` or its name is not a
                valid tool name.
        """
        tool_name = name or str(getattr(function, "__name__", ""))
        if not TOOL_NAME_PATTERN.fullmatch(tool_name):
            raise ConfigError(
                f"tool name {tool_name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
                "(pass @tool(name=...) to choose another)."
            )
        summary, param_docs = _parse_docstring(inspect.getdoc(function))
        signature = inspect.signature(function)
        try:
            hints = get_type_hints(function, include_extras=True)
        except (NameError, TypeError) as exc:
            raise ConfigError(f"tool {tool_name!r}: cannot resolve its type hints: {exc}") from exc
        fields: dict[str, Any] = {}
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise ConfigError(
                    f"tool {tool_name!r}: *args and **kwargs cannot be described to a model; "
                    "give every parameter a name."
                )
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is parameter.empty else parameter.default
            field = pydantic.Field(default=default, description=param_docs.get(parameter.name))
            fields[parameter.name] = (annotation, field)
        model = pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True),
            **fields,
        )
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        return cls(
            name=tool_name,
            description=description if description is not None else summary,
            function=function,
            arguments_model=model,
            input_schema=schema,
        )

    def to_mcp(self) -> Tool:
        """This tool as an MCP `Tool` listing entry."""
        return Tool(name=self.name, description=self.description, input_schema=self.input_schema)

    async def call(self, arguments: dict[str, Any]) -> Any:
        """Validate `arguments` and call the function (sync functions run in a worker
        thread, which a timeout or cancellation leaves behind rather than waits for).

        Raises:
            pydantic.ValidationError: the arguments do not match the signature.
        """
        validated = self.arguments_model.model_validate(arguments)
        kwargs = {key: getattr(validated, key) for key in type(validated).model_fields}
        if inspect.iscoroutinefunction(self.function):
            return await self.function(**kwargs)
        # Abandoned on cancellation (a tool_timeout, a cancelled run): the caller gets
        # control back at once; the thread itself runs on until the function returns.
        result = await anyio.to_thread.run_sync(
            functools.partial(self.function, **kwargs), abandon_on_cancel=True
        )
        if inspect.isawaitable(result):
            return await result
        return result


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...


def tool(
    function: F | None = None, /, *, name: str | None = None, description: str | None = None
) -> F | Callable[[F], F]:
    """Mark a function as a tool, optionally renaming it or overriding its description.

    Plain functions work in ``tools=[...]`` too; the decorator is for choosing the name
    or description. The function is returned unchanged and stays callable.

    ```python
    @tool
    def add(a: int, b: int) -> int:
        '''Add two numbers.'''
        return a + b

    @tool(name="word_count")
    async def count(text: str) -> int: ...
    ```
    """

    def mark(fn: F) -> F:
        local = LocalTool.from_function(fn, name=name, description=description)
        setattr(fn, _TOOL_ATTRIBUTE, local)
        return fn

    if function is not None:
        return mark(function)
    return mark


def as_local_tool(function: Callable[..., Any]) -> LocalTool:
    """The `LocalTool` of a function, decorated or not."""
    marked = getattr(function, _TOOL_ATTRIBUTE, None)
    if isinstance(marked, LocalTool) and marked.function is function:
        return marked
    return LocalTool.from_function(function)


def _result_to_mcp(value: Any) -> CallToolResult:
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(type="text", text=value)])
    text = pydantic_core.to_json(value, fallback=str).decode()
    structured = value if isinstance(value, dict) else None
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


class LocalFunctionSession:
    """Python functions behind the interface of an MCP `ClientSession`.

    `list_tools` returns a `ListToolsResult` and `call_tool` a `CallToolResult`; an
    exception raised by a function becomes an ``is_error`` result carrying its message,
    as does a call with invalid arguments or of an unknown tool.

    Args:
        functions: plain functions, `@tool`-decorated functions or `LocalTool`s.

    Raises:
        ConfigError: two functions share a tool name.
    """

    def __init__(self, functions: Iterable[Callable[..., Any] | LocalTool]) -> None:
        self._tools: dict[str, LocalTool] = {}
        for item in functions:
            local = item if isinstance(item, LocalTool) else as_local_tool(item)
            if local.name in self._tools:
                raise ConfigError(
                    f"two local functions are both named {local.name!r}; rename one with "
                    "@tool(name=...)."
                )
            self._tools[local.name] = local
        self._listing = ListToolsResult(tools=[t.to_mcp() for t in self._tools.values()])

    @property
    def tools(self) -> tuple[LocalTool, ...]:
        """The wrapped tools, in the order given."""
        return tuple(self._tools.values())

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> ListToolsResult:
        """All the tools, in one page."""
        return self._listing

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call the function named `name`; failures come back as ``is_error`` results."""
        local = self._tools.get(name)
        if local is None:
            return _error_result(f"Unknown tool: {name}")
        try:
            value = await local.call(arguments or {})
        except pydantic.ValidationError as exc:
            return _error_result(f"Invalid arguments for tool {name}: {exc}")
        except Exception as exc:
            logger.info("local tool %r raised %s: %s", name, type(exc).__name__, exc)
            return _error_result(f"{type(exc).__name__}: {exc}")
        return _result_to_mcp(value)


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
