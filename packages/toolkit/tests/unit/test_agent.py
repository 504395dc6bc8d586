"""The run loop: tool calls, errors as results, parallel calls, max_turns, history, streaming."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import Image, MCPServer
from mcp.types import BlobResourceContents, EmbeddedResource

from doc_processing_toolkit import (
    Agent,
    ConfigError,
    FinalResultEvent,
    MaxTurnsExceededError,
    Message,
    RunStartEvent,
    TestModel,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallPart,
    ToolkitError,
    ToolResultEvent,
    ToolResultPart,
)
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models import ModelRequest, TextDelta
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio


def last_results(request: ModelRequest) -> list[ToolResultPart]:
    """The tool results in the last message of a request."""
    return [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]


def call_then_answer(
    name: str, arguments: dict[str, Any] | None = None
) -> Callable[[ModelRequest], ModelResponse]:
    """A script: call one tool, then answer with the results' text."""

    def script(request: ModelRequest) -> ModelResponse:
        results = last_results(request)
        if not results:
            return tool_call(name, arguments or {})
        return reply(" | ".join(f"{r.is_error}:{r.content}" for r in results))

    return script


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    parts = tuple(
        ToolCallPart(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(pairs)
    )
    return ModelResponse(parts=parts)


async def test_a_tool_call_goes_through_the_in_process_server(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(TestModel(call_then_answer("add", {"a": 2, "b": 3})), tools=[make_server()])
    async with agent:
        result = await agent.run("add them")
    assert result.output == "False:5"
    [record] = result.tool_calls
    assert (record.name, record.server, record.content, record.is_error) == (
        "add",
        "demo",
        "5",
        False,
    )
    assert record.arguments == {"a": 2, "b": 3}
    assert record.error is None
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert result.messages[0].text == "add them"
    assert result.usage.requests == 2
    assert result.usage.input_tokens > 0
    assert result.warnings == []
    assert result.model_name == "test:model"


async def test_local_functions_sync_and_async_share_one_server() -> None:
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    async def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            return calls(("double", {"x": 21}), ("greet", {"name": "ada"}))
        return reply(",".join(r.content for r in last_results(request)))

    agent = Agent(TestModel(script), tools=[double, greet])
    assert [(s.name, s.route) for s in agent.servers] == [("local-functions", "local")]
    result = await agent.run("go")
    await agent.aclose()
    assert result.output == "42,hello ada"
    assert {r.server for r in result.tool_calls} == {"local-functions"}


async def test_the_model_sees_a_functions_schema_with_its_docstring_descriptions() -> None:
    async def scale(value: float, factor: int = 2) -> float:
        """Scale a value.

        Args:
            value: The number to scale.
            factor: How many times larger.
        """
        return value * factor

    model = TestModel()
    await Agent(model, tools=[scale]).run("hi")
    [spec] = model.requests[0].tools
    assert (spec.name, spec.description) == ("scale", "Scale a value.")
    assert spec.input_schema == {
        "type": "object",
        "properties": {
            "value": {"type": "number", "description": "The number to scale."},
            "factor": {"type": "integer", "default": 2, "description": "How many times larger."},
        },
        "required": ["value"],
    }


async def test_the_model_sees_instructions_tool_schemas_and_provider_kwargs(
    make_server: Callable[..., MCPServer],
) -> None:
    model = TestModel(call_then_answer("echo", {"text": "x"}))
    kwargs = {"temperature": 0.2, "container": {"skills": [{"type": "anthropic", "id": "pdf"}]}}
    agent = Agent(model, instructions="Be brief.", tools=[make_server()], provider_kwargs=kwargs)
    await agent.run("hi")
    await agent.aclose()
    assert len(model.requests) == 2
    for request in model.requests:
        assert request.system == "Be brief."
        assert request.provider_kwargs == kwargs
        assert [t.name for t in request.tools] == ["echo", "add"]
    add = model.requests[0].tools[1]
    assert add.description == "Add two integers."
    assert add.input_schema["required"] == ["a", "b"]


async def test_an_error_result_goes_back_to_the_model(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(
        TestModel(call_then_answer("fail", {"reason": "bad input"})),
        tools=[make_server(tools=("fail",))],
    )
    result = await agent.run("try")
    await agent.aclose()
    # The SDK's "Error executing tool fail:" lead-in is dropped: the error flag says it.
    assert result.output == "True:failed on purpose: bad input"
    assert result.tool_calls[0].is_error
    assert result.tool_calls[0].error == "failed on purpose: bad input"


async def test_an_exception_in_a_function_goes_back_as_an_error() -> None:
    def explode() -> str:
        """Raise."""
        raise RuntimeError("disk on fire")

    result = await Agent(TestModel(call_then_answer("explode")), tools=[explode]).run("go")
    assert result.output == "True:RuntimeError: disk on fire"


async def test_an_unknown_tool_goes_back_as_an_error_listing_the_tools(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(TestModel(call_then_answer("nope")), tools=[make_server()])
    result = await agent.run("go")
    await agent.aclose()
    assert result.output == "True:Unknown tool 'nope'. Available tools: add, echo."
    assert result.tool_calls[0].server is None


async def test_arguments_that_were_not_json_go_back_as_an_error() -> None:
    def noop() -> str:
        """Never called here."""
        raise AssertionError("must not be called")

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            bad = ToolCallPart(
                id="c", name="noop", arguments={"_raw": "{oops"}, arguments_error="bad JSON"
            )
            return ModelResponse(parts=(bad,))
        return reply(last_results(request)[0].content)

    result = await Agent(TestModel(script), tools=[noop]).run("go")
    assert result.tool_calls[0].is_error
    assert "not a JSON object (bad JSON)" in result.output


async def test_a_slow_tool_times_out_as_an_error_result(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(
        TestModel(call_then_answer("slow", {"seconds": 5})),
        tools=[make_server(tools=("slow",))],
        tool_timeout=0.2,
    )
    started = time.perf_counter()
    result = await agent.run("go")
    await agent.aclose()
    assert time.perf_counter() - started < 3
    assert result.output == "True:Tool 'slow' timed out after 0.2 s."


async def test_a_blocking_sync_function_times_out_without_holding_the_run() -> None:
    release = threading.Event()

    def block() -> str:
        """Block until released (or 10 s)."""
        release.wait(10)
        return "finished"

    agent = Agent(TestModel(call_then_answer("block")), tools=[block], tool_timeout=0.2)
    started = time.perf_counter()
    try:
        result = await agent.run("go")
    finally:
        release.set()
    assert time.perf_counter() - started < 3
    assert result.output == "True:Tool 'block' timed out after 0.2 s."


async def test_several_tool_calls_of_one_reply_run_concurrently() -> None:
    released = anyio.Event()

    async def wait_for_release() -> str:
        """Wait until release() runs."""
        with anyio.fail_after(2):
            await released.wait()
        return "released"

    async def release() -> str:
        """Release the waiter."""
        released.set()
        return "done"

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            return calls(("wait_for_release", {}), ("release", {}))
        return reply(",".join(r.content for r in last_results(request)))

    agent = Agent(TestModel(script), tools=[wait_for_release, release])
    result = await agent.run("go")
    assert result.output == "released,done"
    assert [r.call_id for r in result.tool_calls] == ["c0", "c1"]


async def test_max_turns_raises_a_clear_error(make_server: Callable[..., MCPServer]) -> None:
    model = TestModel(lambda request: tool_call("echo", {"text": "again"}))
    agent = Agent(model, tools=[make_server()], max_turns=3)
    with pytest.raises(MaxTurnsExceededError, match=r"max_turns=3.*\(echo\)"):
        await agent.run("loop forever")
    await agent.aclose()
    assert len(model.requests) == 3


async def test_message_history_continues_a_conversation() -> None:
    model = TestModel()
    agent = Agent(model)
    first = await agent.run("my name is Ada")
    second = await agent.run("what is my name?", message_history=first.messages)
    assert [m.text for m in second.messages] == [
        "my name is Ada",
        "echo: my name is Ada",
        "what is my name?",
        "echo: what is my name?",
    ]
    assert [m.text for m in model.requests[1].messages] == [m.text for m in second.messages[:3]]
    assert [m.text for m in second.new_messages] == ["what is my name?", "echo: what is my name?"]
    assert first.new_messages == first.messages


async def test_run_stream_yields_calls_results_text_and_the_result_in_order(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(
        TestModel(call_then_answer("echo", {"text": "streamed answer"}), chunk_size=4),
        tools=[make_server()],
    )
    start, *events = [event async for event in agent.run_stream("go")]
    await agent.aclose()
    assert isinstance(start, RunStartEvent)
    assert start.tools == ("echo", "add")
    assert start.skills.status == "no_server"
    kinds = [type(e).__name__ for e in events]
    first_text = kinds.index("TextDeltaEvent")
    assert kinds[:2] == ["ToolCallEvent", "ToolResultEvent"]
    assert set(kinds[first_text:-1]) == {"TextDeltaEvent"}
    assert kinds[-1] == "FinalResultEvent"
    call_event, result_event, final = events[0], events[1], events[-1]
    assert isinstance(call_event, ToolCallEvent) and call_event.server == "demo"
    assert isinstance(result_event, ToolResultEvent)
    assert result_event.record.content == "streamed answer"
    assert isinstance(final, FinalResultEvent)
    text = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert text == final.result.output == "False:streamed answer"
    assert len([e for e in events if isinstance(e, TextDeltaEvent)]) > 1


class GatedModel:
    """A streaming model that sends one piece of text, then waits until the consumer has
    seen it before it sends the rest: it only finishes if deltas are passed on as they
    arrive. `closed` tells whether its stream was closed.
    """

    name = "test:gated"

    def __init__(self, *, hang: bool = False) -> None:
        self.seen = anyio.Event()
        self.hang = hang
        self.closed = False

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError("only streamed in these tests")

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        try:
            yield TextDelta("first ")
            if self.hang:
                await anyio.sleep_forever()
            with anyio.fail_after(5):
                await self.seen.wait()
            yield TextDelta("second")
            yield ModelResponse(parts=(TextPart("first second"),))
        finally:
            self.closed = True


async def test_run_stream_passes_each_text_delta_on_as_it_arrives() -> None:
    model = GatedModel()
    agent = Agent(model)
    texts: list[str] = []
    async for event in agent.run_stream("go"):
        if isinstance(event, TextDeltaEvent):
            texts.append(event.text)
            model.seen.set()
        elif isinstance(event, FinalResultEvent):
            assert event.result.output == "first second"
    assert texts == ["first ", "second"]


async def test_stopping_a_stream_early_closes_the_models_stream_at_once() -> None:
    model = GatedModel(hang=True)
    agent = Agent(model)
    async with aclosing(agent.run_stream("go")) as events:
        async for event in events:
            if isinstance(event, RunStartEvent):
                continue
            assert isinstance(event, TextDeltaEvent)
            break
    assert model.closed


async def test_run_stream_orders_text_calls_results_and_the_final_result() -> None:
    def look(topic: str) -> str:
        """Look a topic up."""
        return f"found {topic}"

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            return tool_call("look", {"topic": "tea"}, text="checking")
        return reply("done: " + last_results(request)[0].content)

    agent = Agent(TestModel(script, chunk_size=4), tools=[look])
    kinds: list[str] = []
    async for event in agent.run_stream("go"):
        kind = type(event).__name__
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    assert kinds == [
        "RunStartEvent",
        "TextDeltaEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextDeltaEvent",
        "FinalResultEvent",
    ]


async def test_a_run_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no model"):
        await Agent().run("hi")


async def test_run_sync_refuses_to_run_inside_an_event_loop() -> None:
    with pytest.raises(ToolkitError, match=r"await agent\.run"):
        Agent("test").run_sync("hi")


def test_run_sync_runs_without_an_event_loop(make_server: Callable[..., MCPServer]) -> None:
    agent = Agent(TestModel(call_then_answer("add", {"a": 1, "b": 1})), tools=[make_server()])
    try:
        assert agent.run_sync("go").output == "False:2"
        assert agent.run_sync("again").output == "False:2"
    finally:
        agent.close()


async def test_a_model_name_is_resolved_with_its_options() -> None:
    agent = Agent("test:custom")
    assert agent.model.name == "test:custom"
    assert (await agent.run("hi")).output == "echo: hi"


async def test_bad_limits_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_turns"):
        Agent("test", max_turns=0)
    with pytest.raises(ConfigError, match="tool_timeout"):
        Agent("test", tool_timeout=0)


async def test_a_text_reply_with_tool_calls_keeps_its_text_in_history() -> None:
    def hello() -> str:
        """Say hello."""
        return "hello"

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            return ModelResponse(
                parts=(TextPart("let me check"), ToolCallPart(id="t", name="hello", arguments={}))
            )
        return reply("checked")

    result = await Agent(TestModel(script), tools=[hello]).run("go")
    assert result.messages[1] == Message(
        role="assistant",
        parts=(TextPart("let me check"), ToolCallPart(id="t", name="hello", arguments={})),
    )


async def test_errors_inside_async_with_propagate_unwrapped(
    make_server: Callable[..., MCPServer],
) -> None:
    model = TestModel(lambda request: tool_call("echo", {"text": "again"}))
    agent = Agent(model, tools=[make_server()], max_turns=1)
    with pytest.raises(MaxTurnsExceededError):
        async with agent:
            await agent.run("loop")
    with pytest.raises(KeyError):
        async with agent:
            raise KeyError("user code")


async def test_non_text_tool_content_reaches_the_model_as_a_short_description() -> None:
    server = MCPServer("media")

    @server.tool()
    def picture() -> Image:
        """A tiny PNG."""
        return Image(data=b"\x89PNG fake", format="png")

    @server.tool()
    def archive() -> EmbeddedResource:
        """A binary resource."""
        blob = BlobResourceContents(uri="file:///a.zip", mime_type="application/zip", blob="UEsD")
        return EmbeddedResource(type="resource", resource=blob)

    def script(request: ModelRequest) -> ModelResponse:
        if not last_results(request):
            return calls(("picture", {}), ("archive", {}))
        return reply(" | ".join(r.content for r in last_results(request)))

    result = await Agent(TestModel(script), tools=[server]).run("go")
    assert result.output == (
        "[image content, image/png] | [binary resource file:///a.zip, application/zip]"
    )
