"""A failing MCP tool reaches the model as one error, worded once.

The MCP SDK's server words a tool's exception as ``Error executing tool NAME: cause`` and
fastmcp as ``Error calling tool 'NAME': cause``; the OpenAI provider marks an error with
``Error: `` in front (Chat Completions has no error flag). Before, the two stacked up as
``Error: Error executing tool ...``. Real servers, real provider SDKs, local API stand-ins.
"""

from __future__ import annotations

from typing import Any

import fastmcp
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from doc_processing_toolkit import Agent
from doc_processing_toolkit.models import AnthropicModel, OpenAIModel

pytestmark = pytest.mark.anyio

CAUSE = "the page range 9-3 is backwards"


def sdk_server() -> MCPServer:
    server = MCPServer("pages")

    @server.tool()
    def split_pages(pages: str) -> str:
        """Split a document by a page range."""
        raise ToolError(CAUSE)

    @server.tool()
    def merge_pages(pages: str) -> str:
        """Merge pages; fails with an unexpected exception, which the SDK does not show."""
        raise RuntimeError("internal detail")

    return server


def fastmcp_server() -> Any:
    server = fastmcp.FastMCP("pages")

    @server.tool
    def split_pages(pages: str) -> str:
        """Split a document by a page range."""
        raise ValueError(CAUSE)

    return server


@pytest.mark.parametrize("make", [sdk_server, fastmcp_server], ids=["mcp-sdk", "fastmcp"])
async def test_openai_receives_error_once(
    make: Any, opened: Any, stand_in: Any, openai_wire: Any
) -> None:
    call = openai_wire.tool_call("call_1", "split_pages", '{"pages": "9-3"}')
    stand_in.reply_json(openai_wire.completion(None, [call]))
    stand_in.reply_json(openai_wire.completion("The range is backwards."))
    model = opened(OpenAIModel("gpt-test-1", api_key="k", base_url=f"{stand_in.url}/v1"))
    async with Agent(model=model, tools=[make()]) as agent:
        result = await agent.run("Split pages 9-3.")
    record = result.tool_calls[0]
    assert (record.is_error, record.content) == (True, CAUSE)
    sent = stand_in.requests[1].body["messages"][-1]
    assert sent == {"role": "tool", "tool_call_id": "call_1", "content": f"Error: {CAUSE}"}


async def test_anthropic_receives_the_cause_with_the_error_flag(
    opened: Any, stand_in: Any, anthropic_wire: Any
) -> None:
    use = anthropic_wire.tool_use("toolu_1", "split_pages", {"pages": "9-3"})
    stand_in.reply_json(anthropic_wire.message([use], stop_reason="tool_use"))
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("Backwards.")]))
    model = opened(AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url))
    async with Agent(model=model, tools=[sdk_server()]) as agent:
        await agent.run("Split pages 9-3.")
    sent = stand_in.requests[1].body["messages"][-1]["content"]
    assert sent == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": CAUSE, "is_error": True}
    ]


async def test_an_error_without_detail_still_says_which_tool_failed(
    opened: Any, stand_in: Any, openai_wire: Any
) -> None:
    call = openai_wire.tool_call("call_1", "merge_pages", '{"pages": "1-2"}')
    stand_in.reply_json(openai_wire.completion(None, [call]))
    stand_in.reply_json(openai_wire.completion("It failed."))
    model = opened(OpenAIModel("gpt-test-1", api_key="k", base_url=f"{stand_in.url}/v1"))
    async with Agent(model=model, tools=[sdk_server()]) as agent:
        await agent.run("Merge pages 1-2.")
    sent = stand_in.requests[1].body["messages"][-1]["content"]
    assert sent == "Error: the tool merge_pages failed without saying why."
