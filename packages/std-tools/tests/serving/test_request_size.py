"""Large write_file requests over HTTP: the request body limit follows
DPTTOOLS_MAX_FILE_SIZE_MB, and a body over it is refused with a message that names the
limit and the setting, instead of the SDK's opaque internal error."""

from __future__ import annotations

import json

import httpx2
import pytest
from http_child import serving
from mcp import Client
from mcp.types import TextContent

from .helpers import Folders

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def test_a_write_of_more_than_four_mebibytes_succeeds_over_http(folders: Folders) -> None:
    content = "0123456789abcdef\n" * (5 * MIB // 17)  # 5 MiB, over the SDK's 4 MiB default
    with serving(*folders.args(), env={"DPTTOOLS_MAX_FILE_SIZE_MB": "8"}) as server:
        async with Client(server.url) as client:
            result = await client.call_tool("write_file", {"path": "big.txt", "content": content})
    assert not result.is_error, text_of(result)
    assert (folders.workspace / "big.txt").read_text(encoding="utf-8") == content


async def test_content_that_escapes_to_six_times_its_size_still_fits(folders: Folders) -> None:
    # A control character is 1 byte in the file and 6 bytes (\u0001) in the JSON body.
    content = "\x01" * (MIB - 1024)
    with serving(*folders.args(), env={"DPTTOOLS_MAX_FILE_SIZE_MB": "1"}) as server:
        async with Client(server.url) as client:
            result = await client.call_tool("write_file", {"path": "ctl.txt", "content": content})
    assert not result.is_error, text_of(result)
    assert (folders.workspace / "ctl.txt").read_bytes() == content.encode()


async def test_a_body_over_the_limit_is_refused_with_a_message_naming_the_setting(
    folders: Folders,
) -> None:
    content = "x" * (8 * MIB)  # over 6 x 1 MiB + 1 MiB
    with serving(*folders.args(), env={"DPTTOOLS_MAX_FILE_SIZE_MB": "1"}) as server:
        async with Client(server.url) as client:
            result = await client.call_tool("write_file", {"path": "huge.txt", "content": "ok"})
            assert not result.is_error
            with pytest.raises(Exception) as caught:
                await client.call_tool("write_file", {"path": "huge.txt", "content": content})
        message = str(caught.value)
        assert "DPTTOOLS_MAX_FILE_SIZE_MB" in message
        assert "7 MiB" in message  # the HTTP limit: 6 x 1 MiB + 1 MiB
        # A plain HTTP client sees the same JSON-RPC error and the 413 status.
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"path": "h", "content": content}},
            }
        )
        reply = httpx2.post(
            server.url,
            content=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert reply.status_code == 413
    error = reply.json()["error"]
    assert "DPTTOOLS_MAX_FILE_SIZE_MB" in error["message"]
    assert (folders.workspace / "huge.txt").read_text(encoding="utf-8") == "ok"
    assert not (folders.workspace / "h").exists()
