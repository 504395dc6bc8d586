"""What a skill script cannot do: outlive the call (not even a child that called setsid()
and emptied its environment, which the old environment-based sweep could not find), and,
under bubblewrap, write outside its temporary folder and the workspace, read the server's
HOME, reach the network or see the server's processes. Each test is an attack."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent
from script_user_access import give_to_script_user, without_bwrap_as_root

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

BWRAP_MISSING = "bubblewrap not installed: apt-get install bubblewrap"

needs_bwrap = pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=f"{BWRAP_MISSING} ({sandbox_status().problem})",
)
"""Skip a test that needs a working bubblewrap, saying how to get it."""

#: The modes the process tests run under: always without, and with bubblewrap.
MODES = [
    pytest.param("none", id="none", marks=without_bwrap_as_root),
    pytest.param("bwrap", id="bwrap", marks=needs_bwrap),
]


def write_skill(skills_dir: Path, name: str, scripts: dict[str, str]) -> Path:
    """Write a valid skill `name` with `scripts` (file name -> source) under scripts/."""
    folder = skills_dir / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Test skill {name}.\n---\n\n# Use\n", encoding="utf-8"
    )
    for file_name, source in scripts.items():
        (folder / "scripts" / file_name).write_text(source, encoding="utf-8")
    return folder


def processes_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds `token`."""
    found: list[int] = []
    needle = token.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux")]

# The script starts a middle process that starts the escaper and exits at once, so the
# escaper is an orphan; the escaper calls setsid() and runs with an EMPTY environment
# (no run id to find it by), writes a file saying it is up, and sleeps. The token in its
# command line lets the test find it on the host, with or without a PID namespace.
ESCAPER = """
import os, subprocess, sys, time
token, ready, mode = sys.argv[1], sys.argv[2], sys.argv[3]
sleeper = (
    "import os, sys, time\\n"
    "os.setsid()\\n"
    "open(sys.argv[2], 'w').write(str(os.getpid()))\\n"
    "time.sleep(300)\\n"
)
middle = (
    "import subprocess, sys\\n"
    "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]], env={})\\n"
)
subprocess.run([sys.executable, "-c", middle, sleeper, token, ready], env={})
while not os.path.exists(ready):
    time.sleep(0.01)
print("escaper is up", flush=True)
if mode == "wait":
    time.sleep(300)
"""


def kill_leftovers(token: str) -> None:
    for pid in processes_with(token):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ending", ["exit", "wait"])
async def test_a_setsid_child_with_an_emptied_environment_is_dead_when_the_call_returns(
    tmp_path: Path, mode: str, ending: str
) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    script = skill / "scripts" / "escape.py"
    script.write_text(ESCAPER, encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    give_to_script_user(workspace)
    token = f"dpt-escape-{uuid.uuid4().hex}"
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none", workspace=workspace)
    started = time.monotonic()
    try:
        result = await run_script(
            script,
            [token, str(workspace / "ready"), ending],
            time_limit=3 if ending == "wait" else 20,
            output_limit=2000,
            policy=policy,
            skill_dir=skill,
        )
        # The escaper was really started, and the call did not wait for it to end.
        assert result.stdout == "escaper is up\n", result.stderr
        assert (workspace / "ready").exists()
        assert time.monotonic() - started < 15
        if ending == "wait":
            assert result.timed_out and result.exit_code == -1
            assert "killed with every process it started" in result.stderr
        else:
            assert (result.exit_code, result.timed_out) == (0, False)
        # Dead right away: no polling, no grace period.
        assert processes_with(token) == [], "a setsid() child outlived the call"
    finally:
        kill_leftovers(token)


@pytest.mark.parametrize("mode", MODES)
async def test_a_forking_chain_is_killed_to_the_last_process(tmp_path: Path, mode: str) -> None:
    # Each process starts the next and exits: a chain of orphans, each a new session.
    source = """
import os, subprocess, sys, time
token, depth = sys.argv[1], int(sys.argv[2])
if depth > 0:
    subprocess.Popen([sys.executable, __file__, token, str(depth - 1)], env={},
                     start_new_session=True)
    if depth != 5:
        sys.exit(0)
    time.sleep(1.5)
    print("chain started", flush=True)
else:
    time.sleep(300)
"""
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    script = skill / "scripts" / "chain.py"
    script.write_text(source, encoding="utf-8")
    token = f"dpt-chain-{uuid.uuid4().hex}"
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none")
    try:
        result = await run_script(
            script, [token, "5"], time_limit=20, output_limit=2000, policy=policy, skill_dir=skill
        )
        assert result.stdout == "chain started\n", result.stderr
        assert processes_with(token) == []
    finally:
        kill_leftovers(token)


# ---- Attacks through the composed server's execute_skill_script, under bubblewrap.

ATTACK = """
import json, os, socket, sys
action, arg = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
def attempt(fn):
    try:
        return {"ok": True, "value": fn()}
    except OSError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
def write(path):
    with open(path, "w") as handle:
        handle.write("planted")
    return path
def read(path):
    with open(path) as handle:
        return handle.read()
def connect(port):
    with socket.create_connection(("127.0.0.1", int(port)), timeout=3) as conn:
        conn.sendall(b"hello from the sandbox")
    return "connected"
def processes():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                raw = open(f"/proc/{name}/cmdline", "rb").read()
                found.append(raw.replace(b"\\0", b" ").decode())
            except OSError:
                pass
    return found
actions = {
    "write-skill": lambda: write(os.path.join(os.path.dirname(__file__), "planted.txt")),
    "write-root": lambda: write(arg),
    "read": lambda: read(arg),
    "list": lambda: sorted(os.listdir(arg)),
    "connect": lambda: connect(arg),
    "processes": processes,
    "workspace": lambda: write(os.path.join(os.environ["DPTTOOLS_WORKSPACE_DIR"], arg)),
    "temp": lambda: write(os.path.join(os.environ["TMPDIR"], "scratch.txt")),
}
print(json.dumps(attempt(actions[action])))
"""


def exists(path: str) -> bool:
    return Path(path).exists()


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


class Sandboxed:
    """A composed server (in process) whose scripts run under bubblewrap."""

    def __init__(self, root: Path, home: Path) -> None:
        self.skills = root / "skills"
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True)
        give_to_script_user(self.workspace)
        self.home = home
        self.skill = write_skill(self.skills, "attack", {"attack.py": ATTACK})

    async def attack(self, action: str, arg: str = "") -> dict[str, Any]:
        """Run one attack; the script's JSON report."""
        async with Client(make_composed_server()) as client:
            result = await client.call_tool(
                "execute_skill_script",
                {
                    "skill_name": "attack",
                    "script_path": "scripts/attack.py",
                    "args": shlex.join([action, arg]),
                },
            )
        block = result.content[0]
        assert isinstance(block, TextContent) and not result.is_error, block
        payload = json.loads(block.text)
        assert payload["exit_code"] == 0, payload
        report: dict[str, Any] = json.loads(payload["stdout"])
        return report

    async def read_file(self, path: str) -> tuple[str, bool]:
        """What the file tools answer for `path` in the workspace."""
        async with Client(make_composed_server()) as client:
            result = await client.call_tool("read_file", {"path": path})
        block = result.content[0]
        assert isinstance(block, TextContent)
        return block.text, result.is_error


@pytest.fixture
def sandboxed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandboxed]:
    # A fake HOME for the server, outside /tmp (which the sandbox hides anyway), holding a
    # secret: only the rule that hides the server's HOME can keep the script from it.
    try:
        home = Path(tempfile.mkdtemp(prefix=".dpt-fake-home-", dir=Path.cwd()))
    except OSError as exc:
        pytest.skip(f"cannot make a fake HOME outside /tmp in the working folder: {exc}")
    (home / "secret.txt").write_text("FAKE-SECRET-IN-HOME", encoding="utf-8")
    server = Sandboxed(tmp_path, home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(server.skills))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(server.workspace))
    monkeypatch.setenv("DPTTOOLS_SCRIPT_SANDBOX", "bwrap")
    monkeypatch.delenv("DPTTOOLS_SCRIPT_NETWORK", raising=False)
    reset_settings()
    try:
        yield server
    finally:
        reset_settings()
        shutil.rmtree(home, ignore_errors=True)


@needs_bwrap
async def test_a_sandboxed_script_cannot_write_into_its_skill_or_the_file_system(
    sandboxed: Sandboxed,
) -> None:
    report = await sandboxed.attack("write-skill")
    assert not report["ok"] and "Read-only file system" in report["error"]
    assert not (sandboxed.skill / "scripts" / "planted.txt").exists()
    target = f"/dpt-planted-{uuid.uuid4().hex}"
    report = await sandboxed.attack("write-root", target)
    assert not report["ok"] and "Read-only file system" in report["error"]
    assert not exists(target)
    # Its own temporary folder is writable.
    assert (await sandboxed.attack("temp"))["ok"]


@needs_bwrap
async def test_a_sandboxed_script_cannot_read_the_servers_home(sandboxed: Sandboxed) -> None:
    report = await sandboxed.attack("read", str(sandboxed.home / "secret.txt"))
    assert not report["ok"], report
    assert "FAKE-SECRET-IN-HOME" not in json.dumps(report)
    listing = await sandboxed.attack("list", str(sandboxed.home))
    # Not shown at all (outside the sandbox's allow-list), or shown empty.
    assert listing == {"ok": True, "value": []} or "FileNotFoundError" in listing["error"]
    # Other users' homes and root's are empty too, but the interpreter still runs.
    for folder in ("/home", "/root"):
        if exists(folder):
            shown = await sandboxed.attack("list", folder)
            assert not shown["ok"] or all(name.startswith(".") for name in shown["value"])


@needs_bwrap
async def test_a_sandboxed_script_has_no_network(
    sandboxed: Sandboxed, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[bytes] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)
        port = listener.getsockname()[1]

        def accept() -> None:
            with contextlib.suppress(OSError), listener.accept()[0] as conn:
                received.append(conn.recv(100))

        report = await sandboxed.attack("connect", str(port))
        assert not report["ok"], report
        accept()
        assert received == []
        # The listener works: with DPTTOOLS_SCRIPT_NETWORK=1 the same script reaches it.
        monkeypatch.setenv("DPTTOOLS_SCRIPT_NETWORK", "1")
        reset_settings()
        listener.settimeout(10)
        reader = threading.Thread(target=accept)
        reader.start()
        report = await sandboxed.attack("connect", str(port))
        reader.join(10)
    assert report == {"ok": True, "value": "connected"}
    assert received == [b"hello from the sandbox"]


@needs_bwrap
async def test_a_sandboxed_script_sees_no_server_process(sandboxed: Sandboxed) -> None:
    report = await sandboxed.attack("processes")
    assert report["ok"]
    seen = report["value"]
    server = command_line(os.getpid())
    assert server not in seen
    # Only the sandbox's own processes: the supervisor (its init) and the script.
    assert not [cmdline for cmdline in seen if "attack.py" not in cmdline], seen
    assert len(seen) == 2, seen


@needs_bwrap
async def test_a_sandboxed_script_writes_into_the_workspace_where_the_file_tools_see_it(
    sandboxed: Sandboxed,
) -> None:
    report = await sandboxed.attack("workspace", "result.txt")
    assert report["ok"], report
    assert (sandboxed.workspace / "result.txt").read_text(encoding="utf-8") == "planted"
    text, is_error = await sandboxed.read_file("result.txt")
    assert not is_error and "planted" in text


async def test_bwrap_mode_without_bubblewrap_is_a_clear_tool_error(
    sandboxed: Sandboxed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox_status.cache_clear()
    try:
        async with Client(make_composed_server()) as client:
            result = await client.call_tool(
                "execute_skill_script",
                {"skill_name": "attack", "script_path": "scripts/attack.py", "args": "temp"},
            )
    finally:
        sandbox_status.cache_clear()
    block = result.content[0]
    assert result.is_error and isinstance(block, TextContent)
    assert "DPTTOOLS_SCRIPT_SANDBOX=bwrap" in block.text
    assert (
        "bubblewrap is not installed" in block.text and "apt-get install bubblewrap" in block.text
    )


@needs_bwrap
async def test_a_sandbox_that_cannot_start_says_so_instead_of_a_result(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    path = skill / "scripts" / "ok.py"
    path.write_text("print('ran')\n", encoding="utf-8")
    result = await run_script(
        path,
        [],
        time_limit=20,
        output_limit=2000,
        policy=ScriptPolicy(sandbox="bwrap"),
        skill_dir=tmp_path / "vanished",
    )
    assert result.exit_code == -1 and result.stdout == ""
    assert "No result: bubblewrap ended with status 1 without reporting" in result.stderr


# A script that starts a setsid() child with an emptied environment, says it is up, and
# then runs for a long time: the server is killed meanwhile.
LINGERER = """
import os, subprocess, sys, time
token, ready = sys.argv[1], sys.argv[2]
sleeper = "import os, sys, time\\nos.setsid()\\ntime.sleep(300)\\n"
subprocess.Popen([sys.executable, "-c", sleeper, token], env={}, start_new_session=True)
open(ready, "w").write("up")
time.sleep(300)
"""


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("mode", MODES)
async def test_a_script_and_its_children_die_with_the_server(tmp_path: Path, mode: str) -> None:
    token = f"dpt-linger-{uuid.uuid4().hex}"
    skills = tmp_path / f"skills-{token}-server"
    write_skill(skills, "linger", {"linger.py": LINGERER})
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    give_to_script_user(workspace)
    ready = workspace / "ready"
    params = StdioServerParameters(
        command=sys.executable,
        # The skills folder on the command line names the server's process for the test.
        args=["-m", "doc_processing_std_tools", "--skills-dir", str(skills)],
        env={
            "DPTTOOLS_WORKSPACE_DIR": str(workspace),
            "DPTTOOLS_SCRIPT_SANDBOX": mode,
            "DPTTOOLS_SANDBOX_TIMEOUT": "120",
        },
    )
    try:
        with anyio.move_on_after(60):
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    with contextlib.suppress(Exception):
                        async with Client(params) as client:
                            await client.call_tool(
                                "execute_skill_script",
                                {
                                    "skill_name": "linger",
                                    "script_path": "scripts/linger.py",
                                    "args": shlex.join([token, str(ready)]),
                                },
                            )

                group.start_soon(call)
                # The script and its setsid() child (the file it writes is staged until
                # the call ends, under bubblewrap).
                up = await anyio.to_thread.run_sync(
                    wait_until, lambda: len(processes_with(token)) >= 2, 30
                )
                assert up, "the script did not start"
                servers = [
                    pid
                    for pid in processes_with(f"{token}-server")
                    if "-m doc_processing_std_tools --skills-dir" in command_line(pid)
                ]
                assert len(servers) == 1, servers
                os.kill(servers[0], signal.SIGKILL)
                gone = await anyio.to_thread.run_sync(
                    wait_until, lambda: not processes_with(token), 5
                )
                assert gone, f"outlived the server: {processes_with(token)}"
                group.cancel_scope.cancel()
    finally:
        kill_leftovers(token)


# The script starts a helper and then kills its own supervisor with SIGKILL.
PARRICIDE = """
import os, signal, subprocess, sys, time
token = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", token])
target = 1 if os.getpid() < 10 else os.getppid()  # under bubblewrap the supervisor is 1
os.kill(target, signal.SIGKILL)
time.sleep(1)
print("still supervised", flush=True)
time.sleep(300 if target != 1 else 0)
"""


@pytest.mark.parametrize("mode", MODES)
async def test_a_script_that_kills_its_supervisor_still_leaves_nothing_running(
    tmp_path: Path, mode: str
) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    path = skill / "scripts" / "parricide.py"
    path.write_text(PARRICIDE, encoding="utf-8")
    token = f"dpt-parricide-{uuid.uuid4().hex}"
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none")
    try:
        result = await run_script(
            path, [token], time_limit=20, output_limit=2000, policy=policy, skill_dir=skill
        )
        if mode == "bwrap" and os.geteuid() != 0:
            # The namespace's init cannot be killed from inside: the run ends normally.
            assert (result.stdout, result.exit_code) == ("still supervised\n", 0)
        elif os.geteuid() == 0:
            # The script runs as an unprivileged user, the supervisor as root.
            assert result.exit_code == 1 and "PermissionError" in result.stderr
        else:
            assert result.exit_code == -1
            assert "No result: the script's supervisor ended with status -9" in result.stderr
        assert processes_with(token) == []
    finally:
        kill_leftovers(token)


# Opens every descriptor of its parent (the supervisor) through /proc and writes a false
# report into each; prints what it could open.
FORGER = """
import os
parent = os.getppid()
opened = []
try:
    names = os.listdir(f"/proc/{parent}/fd")
except OSError:
    names = []
for name in names:
    try:
        with open(f"/proc/{parent}/fd/{name}", "w") as handle:
            handle.write("stopped=moved\\nexit_code=0\\n")
        opened.append(name)
    except OSError:
        pass
print("forged" if opened else "refused", opened)
raise SystemExit(3)
"""


@pytest.mark.parametrize(
    "mode",
    [
        # As root the script runs as an unprivileged user (DPTTOOLS_SCRIPT_USER).
        pytest.param("none", id="none", marks=without_bwrap_as_root),
        pytest.param("bwrap", id="bwrap", marks=needs_bwrap),
    ],
)
async def test_a_script_cannot_write_a_false_report_for_its_supervisor(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "forge.py"
    path.write_text(FORGER, encoding="utf-8")
    result = await run_script(
        path,
        [],
        time_limit=20,
        output_limit=2000,
        policy=ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none"),
    )
    assert result.stdout.startswith("refused"), result.stdout
    assert result.exit_code == 3
