"""Attack: many clients edit one file at once over streamable HTTP.

The composed server runs as a real child process; twenty SDK clients each replace their
own markers in the same file, all at the same time. Every edit the server reports as done
must be in the file afterwards: none may be lost to another edit that read the file before
it was written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from http_child import serving
from mcp import Client
from mcp.types import TextContent

pytestmark = pytest.mark.anyio

CLIENTS = 20
EDITS_PER_CLIENT = 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The composed server over streamable HTTP on a free local port: (URL, workspace)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "skills").mkdir()
    with serving("--skills-dir", str(tmp_path / "skills"), "--workspace", str(workspace)) as server:
        yield server.url, workspace.resolve()


@pytest.mark.timeout(90)
async def test_concurrent_edits_over_http_lose_no_reported_success(
    server_url: tuple[str, Path],
) -> None:
    url, workspace = server_url
    target = workspace / "shared.md"
    target.write_text(
        "".join(f"marker-{c}-{e}: old\n" for c in range(CLIENTS) for e in range(EDITS_PER_CLIENT)),
        encoding="utf-8",
    )
    succeeded: list[str] = []
    failures: list[str] = []

    async def editor(client_number: int) -> None:
        async with Client(url) as client:
            for edit in range(EDITS_PER_CLIENT):
                marker = f"marker-{client_number}-{edit}"
                result = await client.call_tool(
                    "edit_file",
                    {
                        "path": "shared.md",
                        "old_text": f"{marker}: old",
                        "new_text": f"{marker}: new",
                    },
                )
                block = result.content[0]
                assert isinstance(block, TextContent)
                (failures if result.is_error else succeeded).append(
                    marker if not result.is_error else block.text
                )

    async with anyio.create_task_group() as group:
        for number in range(CLIENTS):
            group.start_soon(editor, number)

    text = target.read_text(encoding="utf-8")
    lost = [marker for marker in succeeded if f"{marker}: new\n" not in text]
    assert lost == [], f"{len(lost)} of {len(succeeded)} reported successes are not in the file"
    # Every marker is distinct and present, so once edits are serialised all of them work.
    assert failures == []
    assert len(succeeded) == CLIENTS * EDITS_PER_CLIENT
    assert text.count(": new\n") == CLIENTS * EDITS_PER_CLIENT
