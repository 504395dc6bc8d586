"""A whole agent run through each real provider SDK, against the local API stand-ins."""

from __future__ import annotations

import pytest

from doc_processing_toolkit import (
    Agent,
    FinalResultEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from doc_processing_toolkit.models import AnthropicModel, OpenAIModel

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_an_anthropic_tool_round_trip(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(
        anthropic_wire.message(
            [
                anthropic_wire.tool_use("toolu_1", "add", {"a": 2, "b": 3}),
                anthropic_wire.tool_use("toolu_2", "add", {"a": 10, "b": 1}),
            ],
            stop_reason="tool_use",
            input_tokens=50,
            output_tokens=20,
        )
    )
    stand_in.reply_json(
        anthropic_wire.message([anthropic_wire.text("5 and 11.")], input_tokens=80, output_tokens=5)
    )
    model = opened(
        AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url, max_retries=0)
    )
    agent = Agent(model=model, instructions="Use the tools.", tools=[add])

    async with agent:
        result = await agent.run("2+3 and 10+1?")

    assert result.output == "5 and 11."
    assert [(call.name, call.content, call.is_error) for call in result.tool_calls] == [
        ("add", "5", False),
        ("add", "11", False),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (130, 25)
    assert result.usage.requests == 2
    first, second = (recorded.body for recorded in stand_in.requests)
    assert first["system"].startswith("Use the tools.")
    assert [tool["name"] for tool in first["tools"]] == ["add"]
    assert second["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "11"},
        ],
    }


async def test_an_anthropic_run_with_extended_thinking_sends_the_thinking_back(
    opened, stand_in, anthropic_wire
) -> None:
    thinking = anthropic_wire.thinking("Add them with the tool.", "c2lnbmF0dXJl")
    call = anthropic_wire.tool_use("toolu_1", "add", {"a": 2, "b": 3})
    stand_in.reply_sse(anthropic_wire.stream([thinking, call], stop_reason="tool_use"))
    stand_in.reply_sse(
        anthropic_wire.stream([anthropic_wire.thinking("Done.", "c2ln"), anthropic_wire.text("5.")])
    )
    model = opened(
        AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url, max_retries=0)
    )
    agent = Agent(
        model=model,
        tools=[add],
        provider_kwargs={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )

    async with agent:
        events = [event async for event in agent.run_stream("2+3?")]

    result = events[-1].result
    assert result.output == "5."
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == "5."
    thoughts = "".join(e.text for e in events if isinstance(e, ThinkingDeltaEvent))
    assert thoughts == "Add them with the tool.Done."
    second = stand_in.requests[1].body
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert second["messages"][1] == {"role": "assistant", "content": [thinking, call]}


async def test_openai_broken_arguments_become_an_error_result_the_model_can_fix(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_json(
        openai_wire.completion(None, [openai_wire.tool_call("call_1", "add", '{"a": 2, "b": ')])
    )
    stand_in.reply_json(
        openai_wire.completion(None, [openai_wire.tool_call("call_2", "add", '{"a": 2, "b": 3}')])
    )
    stand_in.reply_json(openai_wire.completion("It is 5."))
    model = opened(OpenAIModel("llama3.1", base_url=f"{stand_in.url}/v1", max_retries=0))
    agent = Agent(model=model, tools=[add])

    async with agent:
        result = await agent.run("2+3?")

    assert result.output == "It is 5."
    broken, fixed = result.tool_calls
    assert broken.is_error
    assert "JSON" in broken.content
    assert (fixed.content, fixed.is_error) == ("5", False)
    second = stand_in.requests[1].body["messages"]
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": '
    assert second[-1]["role"] == "tool"
    assert second[-1]["content"].startswith("Error: ")


async def test_streaming_an_agent_run_through_openai(opened, stand_in, openai_wire) -> None:
    stand_in.reply_sse(
        openai_wire.stream("", [openai_wire.tool_call("c1", "add", '{"a": 1, "b": 1}')])
    )
    stand_in.reply_sse(openai_wire.stream("The answer is 2.", chunk=6))
    model = opened(OpenAIModel("gpt-test-1", api_key="k", base_url=f"{stand_in.url}/v1"))
    agent = Agent(model=model, tools=[add])

    async with agent:
        events = [event async for event in agent.run_stream("1+1?")]

    assert any(isinstance(event, ToolCallEvent) for event in events)
    assert any(isinstance(event, ToolResultEvent) for event in events)
    final = events[-1]
    assert isinstance(final, FinalResultEvent)
    assert final.result.output == "The answer is 2."
    texts = [event.text for event in events if isinstance(event, TextDeltaEvent)]
    assert "".join(texts) == "The answer is 2."
    assert len(texts) > 1


async def test_the_cli_shows_thinking_on_stderr_and_the_answer_on_stdout(
    opened, stand_in, anthropic_wire
) -> None:
    import io

    from doc_processing_toolkit.cli import stream_run

    thinking = anthropic_wire.thinking("Two plus three.", "c2ln")
    call = anthropic_wire.tool_use("toolu_1", "add", {"a": 2, "b": 3})
    stand_in.reply_sse(anthropic_wire.stream([thinking, call], stop_reason="tool_use", chunk=4))
    stand_in.reply_sse(anthropic_wire.stream([anthropic_wire.text("It is 5.")]))
    model = opened(
        AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url, max_retries=0)
    )
    agent = Agent(
        model=model,
        tools=[add],
        provider_kwargs={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    out, err = io.StringIO(), io.StringIO()

    await stream_run(agent, "2+3?", out=out, err=err)

    assert out.getvalue() == "It is 5.\n"
    lines = err.getvalue().splitlines()
    assert lines[0] == "thinking: Two plus three."
    assert lines[1] == '-> add [local-functions] {"a": 2, "b": 3}'
    assert lines[2].startswith("<- add (")
