"""@tool and LocalFunctionSession: schemas from hints and docstrings, MCP-shaped results."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from mcp.types import CallToolResult, ListToolsResult
from pydantic import BaseModel, Field

from doc_processing_toolkit import ConfigError, LocalFunctionSession, tool
from doc_processing_toolkit.tools.local import LocalTool

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    x: int
    y: int


def google(path: str, limit: int = 10, mode: Literal["fast", "slow"] = "fast") -> list[str]:
    """Find files.

    Longer explanation.

    Args:
        path: Where to look,
            relative to the root.
        limit: At most this many.
        mode: How hard to look.

    Returns:
        The paths.
    """
    return [path] * min(limit, 2)


def sphinx(point: Point, label: Annotated[str, Field(max_length=5)]) -> dict[str, object]:
    """Label a point.

    :param point: The point.
    :param label: A short label.
    :returns: The labelled point.
    """
    return {"label": label, "x": point.x}


def numpy_style(a: float, b: float) -> float:
    """Multiply.

    Parameters
    ----------
    a : float
        The first factor.
    b : float
        The second factor.
    """
    return a * b


def test_schemas_come_from_type_hints_and_docstrings() -> None:
    found = LocalTool.from_function(google)
    assert found.description == "Find files.\n\nLonger explanation."
    assert found.input_schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where to look, relative to the root."},
            "limit": {"type": "integer", "default": 10, "description": "At most this many."},
            "mode": {
                "type": "string",
                "enum": ["fast", "slow"],
                "default": "fast",
                "description": "How hard to look.",
            },
        },
        "required": ["path"],
    }
    labelled = LocalTool.from_function(sphinx)
    assert labelled.description == "Label a point."
    props = labelled.input_schema["properties"]
    assert props["label"] == {"type": "string", "maxLength": 5, "description": "A short label."}
    assert props["point"]["description"] == "The point."
    assert "Point" in json.dumps(labelled.input_schema["$defs"])
    numpy = LocalTool.from_function(numpy_style)
    assert numpy.input_schema["properties"]["a"]["description"] == "The first factor."
    assert numpy.input_schema["properties"]["b"]["description"] == "The second factor."


def test_the_decorator_renames_keeps_the_function_and_rejects_bad_signatures() -> None:
    @tool(name="renamed", description="Custom.")
    def original(x: int) -> int:
        return x

    assert original(3) == 3
    session = LocalFunctionSession([original, google])
    assert [t.name for t in session.tools] == ["renamed", "google"]
    assert session.tools[0].description == "Custom."

    def star(*args: int) -> int:
        return sum(args)

    with pytest.raises(ConfigError, match=r"\*args and \*\*kwargs"):
        tool(star)
    with pytest.raises(ConfigError, match="'bad name' is not valid"):
        tool(name="bad name")(google)
    with pytest.raises(ConfigError, match="both named 'google'"):
        LocalFunctionSession([google, tool(name="google")(numpy_style)])


async def test_the_session_answers_like_an_mcp_session() -> None:
    session = LocalFunctionSession([google, sphinx])
    listing = await session.list_tools()
    assert isinstance(listing, ListToolsResult)
    assert [t.name for t in listing.tools] == ["google", "sphinx"]
    result = await session.call_tool("google", {"path": "a"})
    assert isinstance(result, CallToolResult)
    assert not result.is_error
    assert result.content[0].text == '["a","a"]'  # type: ignore[union-attr]
    structured = await session.call_tool("sphinx", {"point": {"x": 1, "y": 2}, "label": "p"})
    assert structured.structured_content == {"label": "p", "x": 1}


async def test_bad_arguments_unknown_tools_and_exceptions_are_error_results() -> None:
    def boom() -> None:
        """Fail."""
        raise ValueError("nope")

    session = LocalFunctionSession([google, boom])
    invalid = await session.call_tool("google", {"limit": "many"})
    assert invalid.is_error
    assert "Invalid arguments for tool google" in invalid.content[0].text  # type: ignore[union-attr]
    unknown = await session.call_tool("missing", {})
    assert unknown.is_error and unknown.content[0].text == "Unknown tool: missing"  # type: ignore[union-attr]
    raised = await session.call_tool("boom", {})
    assert raised.is_error and raised.content[0].text == "ValueError: nope"  # type: ignore[union-attr]


async def test_sync_functions_run_off_the_event_loop() -> None:
    import threading

    main = threading.get_ident()

    def where() -> bool:
        """Whether this runs in the event loop's thread."""
        return threading.get_ident() == main

    async def where_async() -> bool:
        """The same, for a coroutine function."""
        return threading.get_ident() == main

    session = LocalFunctionSession([where, where_async])
    assert (await session.call_tool("where")).content[0].text == "false"  # type: ignore[union-attr]
    assert (await session.call_tool("where_async")).content[0].text == "true"  # type: ignore[union-attr]
