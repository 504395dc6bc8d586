"""TestModel scripted with data (the form a YAML file holds): tool calls without a key."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.errors import ConfigError
from doc_processing_toolkit.models import resolve_model

pytestmark = pytest.mark.anyio

STEPS = [
    {"call": "echo", "arguments": {"text": "ping"}, "text": "Echoing first."},
    {
        "calls": [
            {"name": "add", "arguments": {"a": 2, "b": 3}},
            {"name": "echo", "arguments": {"text": "x"}},
        ]
    },
    {"reply": "All done."},
]


async def test_steps_play_one_per_request_and_every_run_starts_over(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(resolve_model("test", script=STEPS), tools=[make_server("demo")])
    async with agent:
        first = await agent.run("go")
        second = await agent.run("again", message_history=first.messages)

    for result in (first, second):
        assert result.output == "All done."
        assert [(call.name, call.content) for call in result.tool_calls] == [
            ("echo", "ping"),
            ("add", "5"),
            ("echo", "x"),
        ]
        assert result.usage.requests == 3
    assert first.new_messages[1].text == "Echoing first."


async def test_when_the_steps_run_out_the_model_answers_with_the_last_results(
    make_server: Callable[..., MCPServer],
) -> None:
    script = [
        {"call": "add", "arguments": {"a": 1, "b": 1}},
        {"call": "fail", "arguments": {"reason": "on purpose"}},
    ]
    async with Agent(
        TestModel(script), tools=[make_server("demo", tools=("add", "fail"))]
    ) as agent:
        result = await agent.run("go")
    assert result.output.startswith("fail (error): ")
    assert "on purpose" in result.output
    assert len(result.tool_calls) == 2


async def test_an_unknown_tool_in_a_script_reaches_the_model_as_an_error_result(
    make_server: Callable[..., MCPServer],
) -> None:
    async with Agent(TestModel([{"call": "nope"}]), tools=[make_server("demo")]) as agent:
        result = await agent.run("go")
    [call] = result.tool_calls
    assert call.is_error
    assert "Unknown tool 'nope'" in call.content


def test_malformed_steps_are_reported_together_by_their_configuration_key() -> None:
    with pytest.raises(ConfigError) as raised:
        TestModel(
            [
                {"call": "a", "reply": "b"},
                {"cal": "x"},
                {"calls": [{"nam": "x"}]},
                {"reply": "r", "text": "t"},
                {"calls": [{"name": "a"}], "arguments": {"k": 1}},
            ]
        )
    lines = str(raised.value).splitlines()
    assert lines[0] == "invalid test model script:"
    assert lines[1:] == [
        "  model_options.script[0]: give exactly one of 'call', 'calls' and 'reply' "
        "(got call, reply)",
        "  model_options.script[1].cal: unknown key (one of call, arguments, calls, reply, text)",
        "  model_options.script[2].calls[0].name: required key is missing",
        "  model_options.script[2].calls[0].nam: unknown key (one of name, arguments)",
        "  model_options.script[3]: 'text' goes with 'call' or 'calls'; a 'reply' is all "
        "text already",
        "  model_options.script[4]: 'arguments' belongs to 'call'; inside 'calls' each call "
        "has its own",
    ]


@pytest.mark.parametrize("script", ["call echo", 5, {"call": "echo"}])
def test_a_script_that_is_not_a_list_of_steps_is_refused(script: object) -> None:
    with pytest.raises(ConfigError, match=r"model_options\.script"):
        TestModel(script)  # type: ignore[arg-type]


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"model_options\.delay"):
        TestModel(delay=-1)
