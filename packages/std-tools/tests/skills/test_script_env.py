"""A skill script sees a minimal environment, never the server's secrets: in process, over
stdio and over streamable HTTP; only the names in DPTTOOLS_SCRIPT_ENV are added. And the
server says at start-up, once, when scripts run without bubblewrap."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from http_child import Started, serving
from mcp import Client, StdioServerParameters
from mcp.types import TextContent
from script_user_access import give_to_script_user, without_bwrap_as_root

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.scripts.run import BASE_ENV_NAMES, RUN_ID_VARIABLE

pytestmark = pytest.mark.anyio

SECRET_NAME = "DPT_TEST_FAKE_API_KEY"
ALLOWED_NAME = "DPT_TEST_ALLOWED_SETTING"
DUMP = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
#: Every name a script may receive without an allow-list (bubblewrap sets PWD to the
#: script's folder).
MINIMAL = {
    *BASE_ENV_NAMES,
    "HOME",
    "TMPDIR",
    RUN_ID_VARIABLE,
    "DPTTOOLS_WORKSPACE_DIR",
    "PWD",
    # Bytecode off: none written, none shipped next to a source used.
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX",
}
WARNING = "WITHOUT the bubblewrap sandbox"


class Setup:
    """Skills and workspace folders, a fake secret, and the server environment for them."""

    def __init__(self, root: Path) -> None:
        self.skills = root / "skills"
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True)
        give_to_script_user(self.workspace)
        folder = self.skills / "env-dump" / "scripts"
        folder.mkdir(parents=True)
        (folder.parent / "SKILL.md").write_text(
            "---\nname: env-dump\ndescription: Prints its environment.\n---\n\n# Use\n",
            encoding="utf-8",
        )
        (folder / "dump.py").write_text(DUMP, encoding="utf-8")
        self.secret = f"sk-fake-{uuid.uuid4().hex}"
        self.allowed = f"allowed-{uuid.uuid4().hex}"

    def server_env(self, allow: bool = False) -> dict[str, str]:
        """What the server is started with: its folders, the secret, maybe the allow-list."""
        env = {
            "DPTTOOLS_SKILLS_DIR": str(self.skills),
            "DPTTOOLS_WORKSPACE_DIR": str(self.workspace),
            SECRET_NAME: self.secret,
            ALLOWED_NAME: self.allowed,
            "AWS_SECRET_ACCESS_KEY": self.secret,
        }
        if allow:
            env["DPTTOOLS_SCRIPT_ENV"] = f"{ALLOWED_NAME}, LANG"
        return env

    def check(self, reply: str, *, allowed: bool) -> dict[str, str]:
        """The script's environment from an execute_skill_script reply, checked."""
        assert self.secret not in reply, "the server's secret reached the script"
        payload = json.loads(reply)
        assert payload["exit_code"] == 0, payload
        seen: dict[str, str] = json.loads(payload["stdout"])
        extra = {ALLOWED_NAME} if allowed else set()
        unexpected = {n for n in seen if n not in MINIMAL | extra and not n.startswith("LC_")}
        assert not unexpected, f"the script saw more than the minimal environment: {unexpected}"
        assert seen.get(ALLOWED_NAME) == (self.allowed if allowed else None)
        assert seen[RUN_ID_VARIABLE] and seen["HOME"] == seen["TMPDIR"]
        assert Path(seen["DPTTOOLS_WORKSPACE_DIR"]) == self.workspace.resolve()
        return seen


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent) and not result.is_error, block
    return block.text


async def dump(client: Client) -> str:
    return text_of(
        await client.call_tool(
            "execute_skill_script", {"skill_name": "env-dump", "script_path": "scripts/dump.py"}
        )
    )


@pytest.mark.parametrize("sandbox", ["auto", pytest.param("none", marks=without_bwrap_as_root)])
@pytest.mark.parametrize("allow", [False, True], ids=["minimal", "allow-listed"])
async def test_in_process_a_script_sees_no_server_secret(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, sandbox: str, allow: bool
) -> None:
    for name, value in setup.server_env(allow).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DPTTOOLS_SCRIPT_SANDBOX", sandbox)
    if not allow:
        monkeypatch.delenv("DPTTOOLS_SCRIPT_ENV", raising=False)
    reset_settings()
    try:
        async with Client(make_composed_server()) as client:
            setup.check(await dump(client), allowed=allow)
    finally:
        reset_settings()


async def test_over_stdio_a_script_sees_no_server_secret(setup: Setup) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "doc_processing_std_tools"], env=setup.server_env()
    )
    async with Client(params) as client:
        setup.check(await dump(client), allowed=False)


@pytest.mark.parametrize("allow", [False, True], ids=["minimal", "allow-listed"])
async def test_over_http_a_script_sees_no_server_secret(setup: Setup, allow: bool) -> None:
    # The server gets none of this process's DPTTOOLS_* settings (so no allow-list unless
    # `allow`).
    with serving(env=setup.server_env(allow)) as server:
        async with Client(server.url) as client:
            setup.check(await dump(client), allowed=allow)


def read_log(server: Started) -> str:
    """The server's log with runs of white space as one space (the log handler wraps)."""
    return " ".join(server.stderr().split())


def wait_for(server: Started, text: str) -> bool:
    """True once `text` is in the log, False after 10 s without it."""
    deadline = time.monotonic() + 10
    while text not in read_log(server):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@without_bwrap_as_root
async def test_without_bubblewrap_auto_warns_once_at_start_up_and_still_runs_scripts(
    setup: Setup, tmp_path: Path
) -> None:
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    # A wide log line, so the handler does not wrap the message. No DPTTOOLS_SCRIPT_SANDBOX
    # reaches the server, so it runs in "auto" mode.
    env = {**setup.server_env(), "PATH": str(no_bwrap), "COLUMNS": "1000"}
    with serving(env=env) as server:
        # Said at start-up, before any script is run.
        assert wait_for(server, WARNING), read_log(server)
        async with Client(server.url) as client:
            for _ in range(2):
                setup.check(await dump(client), allowed=False)
    text = read_log(server)
    assert text.count(WARNING) == 1, text
    # Whatever the log format, the level comes shortly before the message.
    assert re.search(f"WARNING .{{0,80}}{WARNING}: bubblewrap is not installed", text), text
