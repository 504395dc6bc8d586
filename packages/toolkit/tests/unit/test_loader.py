"""ToolLoader: every route works, loaded order, names, prefixes and conflicts."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import (
    Agent,
    ConfigError,
    TestModel,
    ToolLoader,
    ToolNameConflictError,
    tool,
)
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio


def one_call(name: str, arguments: dict[str, Any]) -> TestModel:
    """A model that calls one tool, then answers with its result."""

    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call(name, arguments)
        return reply(f"{results[0].is_error}:{results[0].content}")

    return TestModel(script)


def tool_names(model: TestModel) -> list[str]:
    return [t.name for t in model.requests[0].tools]


async def test_route_in_process_mcp_server(make_server: Callable[..., MCPServer]) -> None:
    agent = Agent(one_call("echo", {"text": "in process"}), tools=[make_server("inproc")])
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:in process"
    assert result.tool_calls[0].server == "inproc"
    assert [(s.name, s.route) for s in agent.servers] == [("inproc", "mcp_server")]


async def test_route_fastmcp_object() -> None:
    from fastmcp import FastMCP

    server = FastMCP("fast")

    @server.tool
    def triple(x: int) -> int:
        """Triple a number."""
        return 3 * x

    agent = Agent(one_call("triple", {"x": 4}), tools=[server])
    assert [(s.name, s.route) for s in agent.servers] == [("fast", "fastmcp")]
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:12"


async def test_route_decorated_functions_with_renames() -> None:
    @tool(name="word_count", description="Count the words of a text.")
    def count(text: str) -> int:
        return len(text.split())

    model = one_call("word_count", {"text": "one two three"})
    result = await Agent(model, tools=[count]).run("go")
    assert result.output == "False:3"
    assert model.requests[0].tools[0].description == "Count the words of a text."
    assert count("a b") == 2


async def test_route_mcp_command(stdio_entry: Callable[..., dict[str, Any]]) -> None:
    agent = Agent(one_call("echo", {"text": "over stdio"}), tools=[stdio_entry("cmd")])
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:over stdio"
    assert result.tool_calls[0].server == "cmd"


async def test_route_mcp_script(stdio_entry: Callable[..., dict[str, Any]]) -> None:
    script = stdio_entry()["args"][0]
    entry = {"type": "mcp_script", "script": script, "env": {"GREETING": "hi"}}

    def script_calls(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            greeting = tool_call("env", {"name": "GREETING"})
            interpreter = tool_call("python")
            return ModelResponse(parts=(*greeting.parts, *interpreter.parts))
        return reply("|".join(r.content for r in results))

    agent = Agent(TestModel(script_calls), tools=[entry])
    assert [(s.name, s.route) for s in agent.servers] == [("stdio_server", "mcp_script")]
    async with agent:
        result = await agent.run("go")
    # The script runs with the agent's own interpreter, whatever `python` is on PATH.
    assert result.output == f"hi|{sys.executable}"


async def test_route_mcp_script_with_a_module(stdio_entry: Callable[..., dict[str, Any]]) -> None:
    folder = str(Path(stdio_entry()["args"][0]).parent)
    entry = {"type": "mcp_script", "module": "stdio_server", "cwd": folder}
    agent = Agent(one_call("echo", {"text": "as a module"}), tools=[entry])
    assert agent.servers[0].name == "stdio_server"
    assert agent.servers[0].describe() == "'stdio_server' (mcp_script: python -m stdio_server)"
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:as a module"


def test_mcp_script_takes_exactly_one_of_script_and_module() -> None:
    for entry in ({"type": "mcp_script"}, {"type": "mcp_script", "script": "a", "module": "b"}):
        with pytest.raises(ConfigError, match=r"tools\[0\]: give exactly one of 'script'"):
            ToolLoader([entry])


async def test_route_prebuilt_session(stdio_entry: Callable[..., dict[str, Any]]) -> None:
    params = StdioServerParameters(command=sys.executable, args=stdio_entry()["args"])
    async with Client(stdio_client(params, errlog=subprocess_log())) as client:
        unnamed = Agent(one_call("echo", {"text": "prebuilt"}), tools=[{"session": client.session}])
        assert [(s.name, s.route) for s in unnamed.servers] == [("mcp-session", "session")]
        result = await unnamed.run("go")
        await unnamed.aclose()
        assert result.output == "False:prebuilt"
        # The agent did not own the session: it still works after aclose.
        assert (await client.session.call_tool("echo", {"text": "still open"})).content
        named = Agent(
            one_call("echo", {"text": "x"}), tools=[{"session": client.session, "name": "n"}]
        )
        assert named.servers[0].name == "n"


def subprocess_log() -> Any:
    import tempfile

    return tempfile.TemporaryFile("w+")


async def test_route_mcp_http(http_server: Any) -> None:
    entry = {"type": "mcp_http", "url": http_server.url, "headers": {"X-Test": "sent"}}
    agent = Agent(one_call("header", {"name": "X-Test"}), tools=[entry])
    assert [(s.name, s.route) for s in agent.servers] == [("127.0.0.1", "mcp_http")]
    async with agent:
        first = await agent.run("go")
        second = await agent.run("again")
    assert first.output == second.output == "False:sent"


async def test_loaded_order_puts_construction_known_servers_first(
    make_server: Callable[..., MCPServer], stdio_entry: Callable[..., dict[str, Any]]
) -> None:
    from fastmcp import FastMCP

    def helper() -> str:
        """Help."""
        return "help"

    tools = [
        stdio_entry("command-1"),
        FastMCP("fast-2"),
        make_server("inproc-3", tools=("echo",)),
        helper,
        {"session": object_with_session_api(), "name": "session-5"},
        make_server("inproc-6", tools=("add",)),
        {"type": "mcp_script", "script": "x.py", "name": "script-7"},
        {"type": "mcp_http", "url": "http://127.0.0.1:1/mcp", "name": "http-8"},
    ]
    order = [(s.name, s.route) for s in ToolLoader(tools).servers]
    assert order == [
        ("inproc-3", "mcp_server"),
        ("local-functions", "local"),
        ("inproc-6", "mcp_server"),
        ("command-1", "mcp_command"),
        ("fast-2", "fastmcp"),
        ("session-5", "session"),
        ("script-7", "mcp_script"),
        ("http-8", "mcp_http"),
    ]
    assert [s.name for s in Agent("test", tools=tools).servers] == [n for n, _ in order]


def object_with_session_api() -> Any:
    from doc_processing_toolkit import LocalFunctionSession

    def ping() -> str:
        """Ping."""
        return "pong"

    return LocalFunctionSession([ping])


async def test_two_servers_with_one_name_stay_two_servers(
    make_server: Callable[..., MCPServer],
) -> None:
    first = make_server("twin", tools=("echo",))
    second = make_server("twin", tools=("shout",))
    model = one_call("shout", {"text": "hey"})
    agent = Agent(model, tools=[first, second])
    assert [s.name for s in agent.servers] == ["twin", "twin"]
    assert agent.servers[0] != agent.servers[1]
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:HEY"
    assert tool_names(model) == ["echo", "shout"]


async def test_the_same_name_on_two_servers_is_a_conflict_naming_both(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent("test", tools=[make_server("alpha"), make_server("beta")])
    with pytest.raises(ToolNameConflictError) as raised:
        await agent.run("go")
    await agent.aclose()
    message = str(raised.value)
    assert "'alpha'" in message and "'beta'" in message and "'echo'" in message
    assert "tool_prefix" in message


async def test_a_tool_prefix_resolves_a_conflict(
    make_server: Callable[..., MCPServer], stdio_entry: Callable[..., dict[str, Any]]
) -> None:
    model = one_call("remote_echo", {"text": "prefixed"})
    agent = Agent(model, tools=[make_server("local"), stdio_entry("remote", tool_prefix="remote")])
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:prefixed"
    assert result.tool_calls[0].server == "remote"
    assert tool_names(model)[:2] == ["echo", "add"]
    assert "remote_echo" in tool_names(model) and "remote_pid" in tool_names(model)


async def test_in_process_servers_take_a_name_and_prefix_through_a_server_entry(
    make_server: Callable[..., MCPServer],
) -> None:
    from fastmcp import FastMCP

    model = one_call("b_echo", {"text": "second"})
    first, second = make_server("same"), make_server("same")
    fast = FastMCP("fast")
    agent = Agent(
        model,
        tools=[
            first,
            {"server": fast, "name": "renamed-fast", "required": False},
            {"server": second, "name": "other", "tool_prefix": "b"},
        ],
    )
    assert [(s.name, s.route, s.tool_prefix) for s in agent.servers] == [
        ("same", "mcp_server", None),
        ("other", "mcp_server", "b"),
        ("renamed-fast", "fastmcp", None),
    ]
    async with agent:
        result = await agent.run("go")
    assert result.output == "False:second"
    assert result.tool_calls[0].server == "other"
    assert tool_names(model) == ["echo", "add", "b_echo", "b_add"]
    with pytest.raises(ConfigError, match=r"tools\[0\]\.server is a str"):
        ToolLoader([{"server": "not a server"}])


async def test_a_prefixed_prebuilt_session(make_server: Callable[..., MCPServer]) -> None:
    async with Client(make_server("inner")) as client:
        model = one_call("p_add", {"a": 1, "b": 2})
        entry = {"session": client.session, "name": "s", "tool_prefix": "p"}
        result = await Agent(model, tools=[entry]).run("go")
    assert result.output == "False:3"
    assert tool_names(model) == ["p_echo", "p_add"]


async def test_tool_names_providers_refuse_are_rewritten() -> None:
    from mcp.server.lowlevel import Server

    server = MCPServer("dotted")

    @server.tool(name="files.read")
    def read() -> str:
        """Read."""
        return "content"

    model = one_call("files_read", {})
    result = await Agent(model, tools=[server]).run("go")
    assert result.output == "False:content"
    assert tool_names(model) == ["files_read"]
    assert isinstance(server._lowlevel_server, Server)


def test_an_entry_of_no_known_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"tools\[1\] is a int"):
        ToolLoader([lambda: None, 42])


def test_an_invalid_dict_entry_names_its_position_and_key() -> None:
    with pytest.raises(ConfigError, match=r"tools\[0\]\.comand: unknown key"):
        ToolLoader([{"type": "mcp_command", "comand": "x"}])
    with pytest.raises(ConfigError, match=r"tools\[0\]\.tool_prefix"):
        ToolLoader([{"type": "mcp_command", "command": "x", "tool_prefix": "bad prefix"}])
    with pytest.raises(ConfigError, match=r"tools\[0\]\.session is a str"):
        ToolLoader([{"session": "not a session"}])
