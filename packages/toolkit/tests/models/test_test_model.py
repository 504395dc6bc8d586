"""TestModel: offline, deterministic, scriptable."""

from __future__ import annotations

import pytest

from doc_processing_toolkit.messages import (
    Message,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from doc_processing_toolkit.models import Model, ModelRequest, TestModel, TextDelta
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio

ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    },
)


def ask(*messages: Message, system: str | None = None) -> ModelRequest:
    return ModelRequest(system=system, messages=messages, tools=[ADD], provider_kwargs={})


async def test_without_a_script_it_echoes_the_last_user_text() -> None:
    model = TestModel()
    history = (
        Message.user("first"),
        Message(role="assistant", parts=(TextPart("echo: first"),)),
        Message.user("second"),
    )

    response = await model.request(ask(*history))

    assert response.text == "echo: second"
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.model_name == "test:model"
    assert model.requests == [ask(*history)]


async def test_usage_is_estimated_from_the_prompt_and_the_reply() -> None:
    model = TestModel(lambda request: reply("x" * 40))
    short = await model.request(ask(Message.user("hi")))
    long = await model.request(ask(Message.user("hi " * 200), system="Be brief. " * 50))

    assert short.usage.requests == 1
    assert short.usage.output_tokens == 10
    assert long.usage.input_tokens > short.usage.input_tokens > 0
    calling = await TestModel(lambda request: tool_call("add", {"a": 1})).request(
        ask(Message.user("hi"))
    )
    assert calling.usage.output_tokens == 10


async def test_a_sync_script_drives_a_tool_round() -> None:
    def script(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolResultPart)]
        if results:
            return reply(f"The sum is {results[0].content}.")
        assert [tool.name for tool in request.tools] == ["add"]
        return tool_call("add", {"a": 2, "b": 3}, text="Adding.")

    model = TestModel(script)
    first = await model.request(ask(Message.user("2 + 3?")))

    assert first.stop_reason == "tool_use"
    assert first.text == "Adding."
    [call] = first.tool_calls
    assert (call.name, call.arguments) == ("add", {"a": 2, "b": 3})

    history = (
        Message.user("2 + 3?"),
        first.to_message(),
        Message(role="user", parts=(ToolResultPart(call_id=call.id, name="add", content="5"),)),
    )
    second = await model.request(ask(*history))

    assert second.text == "The sum is 5."
    assert second.stop_reason == "end_turn"
    assert len(model.requests) == 2


async def test_an_async_script_is_awaited() -> None:
    async def script(request: ModelRequest) -> ModelResponse:
        return ModelResponse(
            parts=(
                ToolCallPart(id="a", name="add", arguments={"a": 1, "b": 1}),
                ToolCallPart(id="b", name="add", arguments={"a": 2, "b": 2}),
            )
        )

    response = await TestModel(script).request(ask(Message.user("two sums")))

    assert [call.id for call in response.tool_calls] == ["a", "b"]
    assert response.usage.output_tokens == 20


def test_tool_call_ids_are_unique() -> None:
    ids = {tool_call("add").tool_calls[0].id for _ in range(5)}
    assert len(ids) == 5


async def test_streaming_yields_chunks_then_the_whole_reply() -> None:
    model = TestModel(lambda request: reply("abcdefgh"), chunk_size=3)

    items = [item async for item in model.stream(ask(Message.user("go")))]

    *deltas, final = items
    assert deltas == [TextDelta("abc"), TextDelta("def"), TextDelta("gh")]
    assert isinstance(final, ModelResponse)
    assert final.text == "abcdefgh"
    assert final.usage.requests == 1


async def test_streaming_a_tool_call_yields_only_the_reply() -> None:
    model = TestModel(lambda request: tool_call("add", {"a": 1, "b": 2}))
    items = [item async for item in model.stream(ask(Message.user("go")))]
    assert len(items) == 1
    assert isinstance(items[0], ModelResponse)
    assert items[0].tool_calls[0].arguments == {"a": 1, "b": 2}


def test_it_is_a_model_named_after_its_name() -> None:
    model = TestModel(name="demo")
    assert model.name == "test:demo"
    assert isinstance(model, Model)
