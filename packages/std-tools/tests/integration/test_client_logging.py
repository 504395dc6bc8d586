"""The MCP logging utility of the composed server, through the MCP SDK's own client: the
``logging`` capability, ``logging/setLevel``, and the server's own notices sent as
``notifications/message`` at the client's level, on the handshake revisions (level set
per connection) and on 2026-07-28 (level chosen per request in ``_meta``)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import LoggingMessageNotificationParams
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.server import make_composed_server
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

pytestmark = pytest.mark.anyio
LEFT_OUT = "not published by the MCP Skills extension"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A skills folder with one publishable skill, one the extension leaves out (its
    folder name breaks the naming rule) and one whose script writes a 2 MiB file."""
    root = tmp_path / "skills"
    for folder, name in (("good", "good"), ("Bad_Folder", "bad-folder"), ("writer", "writer")):
        (root / folder).mkdir(parents=True)
        (root / folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: The {name} skill.\n---\nBody.\n", "utf-8"
        )
    (root / "writer" / "scripts").mkdir()
    (root / "writer" / "scripts" / "big.py").write_text(
        "import os\nwith open(os.path.join(os.environ['TMPDIR'], 'big.bin'), 'wb') as out:\n"
        "    out.write(b'x' * (2 * 1024 * 1024))\n",
        "utf-8",
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(root))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(workspace))
    monkeypatch.setenv("DPTTOOLS_SCRIPT_SANDBOX", "none")
    monkeypatch.setenv("DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB", "1")
    reset_settings()
    yield root
    reset_settings()


@pytest.fixture(autouse=True)
def server_logs_info(caplog: pytest.LogCaptureFixture) -> None:
    """The server logs at INFO, as its command line does by default."""
    caplog.set_level(logging.INFO, logger="doc_processing_std_tools")


async def notices(
    *, mode: str, set_level: str | None = None, log_level: Any = None, call: str = "list"
) -> tuple[list[LoggingMessageNotificationParams], dict[str, Any]]:
    """The notices a client gets for one request (a listing, or the writer's script),
    and what it saw of the server (``protocol`` and ``logging``: whether the server
    declared the capability)."""
    got: list[LoggingMessageNotificationParams] = []

    async def collect(params: LoggingMessageNotificationParams) -> None:
        got.append(params)

    server = make_composed_server()
    async with Client(server, mode=mode, logging_callback=collect, log_level=log_level) as client:
        seen = {
            "protocol": client.protocol_version,
            "logging": client.session.server_capabilities.logging is not None,
        }
        if set_level is not None:
            assert (await client.set_logging_level(set_level)).model_dump(exclude_none=True) == {}
        if call == "list":
            await client.list_resources()
        else:
            await client.call_tool(
                "execute_skill_script", {"skill_name": "writer", "script_path": "scripts/big.py"}
            )
    return got, seen


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_the_server_declares_logging_and_sends_notices_at_the_level_set(
    skills: Path,
) -> None:
    got, seen = await notices(mode="legacy", set_level="info")
    assert seen == {"protocol": "2025-11-25", "logging": True}
    (left_out,) = [n for n in got if LEFT_OUT in str(n.data)]
    assert left_out.level == "info"
    assert left_out.logger == "doc_processing_std_tools.skills.extension.publisher"


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_below_the_level_set_nothing_is_sent(skills: Path) -> None:
    got, _ = await notices(mode="legacy", set_level="error")
    assert got == []


async def test_without_set_level_only_warnings_and_above_are_sent(skills: Path) -> None:
    got, _ = await notices(mode="legacy")
    assert [n for n in got if LEFT_OUT in str(n.data)] == []


@without_bwrap_as_root
@pytest.mark.skipif(sys.platform != "linux", reason="the script limits are Linux rlimits")
async def test_a_script_stopped_at_a_limit_is_a_warning_notice(skills: Path) -> None:
    got, _ = await notices(mode="legacy", call="script")
    warnings = [n for n in got if n.level == "warning"]
    assert any("DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB" in str(n.data) for n in warnings), got
    assert not any("WITHOUT the bubblewrap sandbox" in str(n.data) for n in got)


@pytest.mark.skipif(sys.platform != "linux", reason="the script limits are Linux rlimits")
async def test_a_script_run_without_the_sandbox_it_was_meant_to_have_is_a_warning_notice(
    skills: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("DPTTOOLS_SCRIPT_SANDBOX", "auto")
    reset_settings()
    sandbox_status.cache_clear()
    try:
        got, _ = await notices(mode="legacy", call="script")
    finally:
        sandbox_status.cache_clear()
    # Each such run says so (the first also carries the process's one-time announcement).
    (fallback,) = [n for n in got if "this skill script runs WITHOUT" in str(n.data)]
    assert fallback.level == "warning" and "bubblewrap is not installed" in str(fallback.data)


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_on_2026_07_28_the_request_chooses_the_level(skills: Path) -> None:
    opted_in, seen = await notices(mode="auto", log_level="info")
    assert seen["protocol"] == "2026-07-28"
    assert [n.level for n in opted_in if LEFT_OUT in str(n.data)] == ["info"]
    silent, _ = await notices(mode="auto")
    assert silent == []


async def test_the_skill_md_of_each_published_skill_is_listed_as_its_frontmatter_says(
    skills: Path,
) -> None:
    async with Client(make_composed_server()) as client:
        listed = (await client.list_resources()).resources
    manifests = {r.uri: r for r in listed if str(r.uri).endswith("/SKILL.md")}
    assert sorted(manifests) == ["skill://good/SKILL.md", "skill://writer/SKILL.md"]
    good = manifests["skill://good/SKILL.md"]
    assert (good.name, good.description, good.mime_type) == (
        "good",
        "The good skill.",
        "text/markdown",
    )


def test_an_application_without_logging_still_sees_the_warnings_once() -> None:
    code = (
        "import logging\n"
        "from doc_processing_std_tools.server import make_composed_server\n"
        "make_composed_server()\n"
        "log = logging.getLogger('doc_processing_std_tools.skills.scripts.run')\n"
        "log.warning('a warning'); log.info('an info line')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stderr.splitlines() == ["a warning"]
