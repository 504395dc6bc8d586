"""An eval through a real provider client: the openai SDK (`OpenAIModel`, streaming)
against a Chat Completions stand-in on 127.0.0.1 that loads a skill by tool call for
requests about redaction and answers the others. The report's requests and tokens are the
usage the provider sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from doc_processing_toolkit import Agent
from doc_processing_toolkit.evals import evaluate_triggers

pytest.importorskip("openai", reason='the openai extra is needed: pip install "[openai]"')

PROMPT_TOKENS, COMPLETION_TOKENS = 120, 9


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-eval",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "stand-in",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **extra,
    }


def stream_for(prompt: str) -> list[dict[str, Any]]:
    if "redact" in prompt.lower():
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "load_skill", "arguments": '{"skill_name": "pii-redaction"}'},
        }
        chunks = [chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls")]
    else:
        chunks = [chunk({"role": "assistant", "content": "No skill needed."}), chunk({}, "stop")]
    usage = {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }
    return [*chunks, {**chunk({}), "choices": [], "usage": usage}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Handler.requests.append(body)
        prompt = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        data = b"".join(
            f"data: {json.dumps(item)}\n\n".encode() for item in stream_for(str(prompt))
        )
        data += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    Handler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.anyio
async def test_the_report_counts_the_requests_and_tokens_the_provider_reported(
    stand_in: str, std_tools: Callable[..., Any]
) -> None:
    agent = Agent(
        "openai:stand-in",
        model_options={"base_url": stand_in, "api_key": "test-key"},
        tools=[std_tools()],
    )
    async with agent:
        report = await evaluate_triggers(agent, ["pii-redaction"], runs=2)
    skill = report.skills["pii-redaction"]
    assert [q.triggers for q in skill.queries] == [2, 2, 0, 0]
    assert skill.pass_rate == 1.0 and report.model == "openai:stand-in"
    assert skill.requests == 8 == len(Handler.requests)
    assert (skill.input_tokens, skill.output_tokens) == (8 * PROMPT_TOKENS, 8 * COMPLETION_TOKENS)
    assert all(body["stream"] is True for body in Handler.requests)
