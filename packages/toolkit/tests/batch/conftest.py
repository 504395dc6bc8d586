"""Fixtures of the batch tests: generated documents, and a Chat Completions stand-in on
127.0.0.1 that counts requests, answers after a delay and can rate-limit.

The stand-in is a real HTTP server; the real openai SDK (through `OpenAIModel`) talks to
it, in this process or in a `dpt-agent` child process.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Seen:
    """One request the stand-in received."""

    at: float
    prompt: str
    status: int


@dataclass
class ChatStandIn:
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    Answers ``answer to: <the last user message>`` after `delay` seconds. The first
    `rate_limited` requests get HTTP 429 with ``Retry-After: <retry_after>`` instead.
    """

    delay: float = 0.0
    rate_limited: int = 0
    retry_after: str = "1"
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def prompts(self, status: int = 200) -> list[str]:
        """The prompts of the requests answered with `status`."""
        with self._lock:
            return [seen.prompt for seen in self.seen if seen.status == status]

    def config(self, **options: Any) -> dict[str, Any]:
        """An agent configuration whose model is this stand-in (`options` are more
        ``model_options``, such as ``max_retries``)."""
        return {
            "model": "openai:stand-in",
            "model_options": {"base_url": self.url, "api_key": "test-key", **options},
            "auto_inject_skills": False,
        }

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _decide(self, prompt: str) -> int:
        with self._lock:
            status = 429 if self.rate_limited > 0 else 200
            if status == 429:
                self.rate_limited -= 1
            self.seen.append(Seen(time.monotonic(), prompt, status))
            return status

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                users = [m for m in body["messages"] if m["role"] == "user"]
                prompt = users[-1]["content"] if users else ""
                if isinstance(prompt, list):
                    prompt = "".join(part.get("text", "") for part in prompt)
                status = stand_in._decide(prompt)
                if status == 429:
                    payload: dict[str, Any] = {
                        "error": {"message": "slow down", "type": "rate_limit", "code": None}
                    }
                    self._send(429, payload, {"retry-after": stand_in.retry_after})
                    return
                time.sleep(stand_in.delay)
                self._send(200, _completion(f"answer to: {prompt}"), {})

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-batch",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "stand-in",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }


@pytest.fixture
def chat_stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStandIn]:
    """A started stand-in (no delay, no rate limit: set the attributes to change that)."""
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = ChatStandIn()
    yield server
    server.stop()


@pytest.fixture
def documents(tmp_path: Path) -> Path:
    """A workspace with docs/doc-000.txt ... doc-199.txt, each stating its own number."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(200):
        (folder / f"doc-{number:03d}.txt").write_text(
            f"Invoice {number}\nTotal: {number * 10} EUR\n", encoding="utf-8"
        )
    return tmp_path


def _read_lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), "the results file ends inside a line"
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def read_lines() -> Callable[[Path], list[dict[str, Any]]]:
    """Every line of a results file, parsed (a broken line fails the test)."""
    return _read_lines
