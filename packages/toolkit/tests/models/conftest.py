"""Local HTTP stand-ins for the provider APIs, and the wire formats they speak.

`StandIn` is a real HTTP server on 127.0.0.1: it records every request (path, headers,
JSON body) and answers each with the next scripted reply, a JSON document or an SSE
stream. The real SDK clients talk to it exactly as they would to the provider.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recorded:
    """One request as the stand-in received it (header names in lower case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: JSON (`payload`) or an SSE stream (`events`)."""

    status: int = 200
    payload: Any = None
    events: list[tuple[str | None, Any]] | None = None
    headers: dict[str, str] = field(default_factory=dict)


class StandIn:
    """A scripted HTTP server on 127.0.0.1 that records what it receives."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's base address, ``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def last(self) -> Recorded:
        """The most recent request."""
        return self.requests[-1]

    def reply_json(self, payload: Any, *, status: int = 200, **headers: str) -> None:
        """Queue a JSON answer."""
        self._replies.append(Reply(status=status, payload=payload, headers=headers))

    def reply_sse(self, events: list[tuple[str | None, Any]]) -> None:
        """Queue an SSE answer: (event name or None, data dict or raw string) pairs."""
        self._replies.append(Reply(events=events))

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record_and_pop(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self._replies:
                return self._replies.popleft()
        return Reply(status=599, payload={"error": {"message": "stand-in: no reply scripted"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs: clients pool

            def do_POST(self) -> None:
                self._serve()

            def do_GET(self) -> None:
                self._serve()

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("stand-in: %s", format % args)

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = stand_in._record_and_pop(Recorded(self.command, self.path, headers, body))
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name.replace("_", "-"), value)
                if reply.events is None:
                    data = json.dumps(reply.payload).encode()
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.close_connection = True
                self.end_headers()
                for event, payload in reply.events:
                    data_line = payload if isinstance(payload, str) else json.dumps(payload)
                    chunk = (f"event: {event}\n" if event else "") + f"data: {data_line}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()

        return Handler


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider settings from the machine: no keys, base URLs or SDK profiles."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def dead_url() -> str:
    """The address of a port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class AnthropicWire:
    """Builders for Messages API payloads, as Anthropic's servers send them."""

    @staticmethod
    def text(text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    @staticmethod
    def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}

    @staticmethod
    def thinking(text: str, signature: str) -> dict[str, Any]:
        return {"type": "thinking", "thinking": text, "signature": signature}

    @staticmethod
    def redacted_thinking(data: str) -> dict[str, Any]:
        return {"type": "redacted_thinking", "data": data}

    @staticmethod
    def message(
        content: list[dict[str, Any]],
        *,
        stop_reason: str = "end_turn",
        input_tokens: int = 12,
        output_tokens: int = 7,
        model: str = "claude-test-1",
        **usage: int,
    ) -> dict[str, Any]:
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage},
        }

    @staticmethod
    def error(error_type: str, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": error_type, "message": message}}

    @staticmethod
    def stream(
        content: list[dict[str, Any]],
        *,
        stop_reason: str = "end_turn",
        input_tokens: int = 12,
        output_tokens: int = 7,
        model: str = "claude-test-1",
        chunk: int = 4,
    ) -> list[tuple[str | None, Any]]:
        """The SSE events of a reply: text and tool input arrive in `chunk`-sized deltas."""
        start = AnthropicWire.message([], input_tokens=input_tokens, output_tokens=1, model=model)
        start["stop_reason"] = None
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(content):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                pieces = [block["text"][i : i + chunk] for i in range(0, len(block["text"]), chunk)]
                deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
            elif block["type"] == "thinking":
                # Thinking arrives in pieces, then its signature in one delta.
                opening = {"type": "thinking", "thinking": "", "signature": ""}
                text = block["thinking"]
                pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
                deltas = [{"type": "thinking_delta", "thinking": piece} for piece in pieces]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif "input" in block:
                opening = {**block, "input": {}}
                raw = json.dumps(block["input"])
                pieces = [raw[i : i + chunk] for i in range(0, len(raw), chunk)]
                deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
            else:
                # Whole blocks such as redacted_thinking come complete in their start event.
                opening, deltas = block, []
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opening},
                )
            )
            events.extend(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                for d in deltas
            )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events


class OpenAIWire:
    """Builders for Chat Completions payloads, as OpenAI-compatible servers send them."""

    @staticmethod
    def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    @staticmethod
    def completion(
        content: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        *,
        finish_reason: str | None = None,
        prompt_tokens: int = 20,
        completion_tokens: int = 9,
        model: str = "gpt-test-1",
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    @staticmethod
    def error(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}

    @staticmethod
    def stream(
        content: str = "",
        tool_calls: list[dict[str, Any]] | None = None,
        *,
        finish_reason: str | None = None,
        prompt_tokens: int = 20,
        completion_tokens: int = 9,
        model: str = "gpt-test-1",
        chunk: int = 4,
        with_usage: bool = True,
    ) -> list[tuple[str | None, Any]]:
        """The SSE chunks of a reply: text and tool arguments arrive in `chunk`-sized
        deltas; a last choice-less chunk carries the usage; then ``[DONE]``."""

        def frame(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        events: list[tuple[str | None, Any]] = [(None, frame({"role": "assistant"}))]
        for i in range(0, len(content), chunk):
            events.append((None, frame({"content": content[i : i + chunk]})))
        for index, call in enumerate(tool_calls or []):
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            events.append((None, frame({"tool_calls": [head]})))
            raw = call["function"]["arguments"]
            for i in range(0, len(raw), chunk):
                piece = {"index": index, "function": {"arguments": raw[i : i + chunk]}}
                events.append((None, frame({"tool_calls": [piece]})))
        finish = finish_reason or ("tool_calls" if tool_calls else "stop")
        events.append((None, frame({}, finish)))
        if with_usage:
            usage_chunk = frame({})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            events.append((None, usage_chunk))
        events.append((None, "[DONE]"))
        return events


@pytest.fixture
def anthropic_wire() -> type[AnthropicWire]:
    return AnthropicWire


@pytest.fixture
def openai_wire() -> type[OpenAIWire]:
    return OpenAIWire


class Opened:
    """Models made by a test, closed when it ends (their clients pool connections)."""

    def __init__(self) -> None:
        self.models: list[Any] = []

    def __call__(self, model: Any) -> Any:
        self.models.append(model)
        return model


@pytest.fixture
async def opened() -> AsyncIterator[Opened]:
    models = Opened()
    yield models
    for model in models.models:
        await model.aclose()
