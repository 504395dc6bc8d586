"""Containment a script cannot talk its way past: it cannot read the server's secrets
through /proc, nothing it starts outlives the call even when it kills its own supervisor,
it never runs as root nor leaves a set-user-ID file behind, under bubblewrap it sees only
an allow-list of folders, and one call is bounded as a whole (a cgroup per call).

Every script is real and runs through the real server (over stdio, with the SDK's own
client) or `run_script`. A server running as root runs scripts as DPTTOOLS_SCRIPT_USER
(``nobody``); the tests that start a server as that user too check the setup without
root, where the same user runs both and only the server's own protections hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import stat
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent
from script_user_access import SCRIPT_USER, give_to_script_user, runs_as_root, without_bwrap_as_root

from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.errors import ConfigError
from doc_processing_std_tools.skills.scripts._cgroups import cgroup_support
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux")]

needs_bwrap = pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=f"bubblewrap not installed: apt-get install bubblewrap ({sandbox_status().problem})",
)
needs_root = pytest.mark.skipif(not runs_as_root(), reason="needs root (run the tests as root)")
needs_cgroup = pytest.mark.skipif(
    cgroup_support().version is None,
    reason=f"no writable cgroup for a per-call group here ({cgroup_support().problem})",
)

MODES = [
    pytest.param("none", id="none", marks=without_bwrap_as_root),
    pytest.param("bwrap", id="bwrap", marks=needs_bwrap),
]
#: Who the server runs as: this test's user, and (as root) the scripts' user as well.
SERVER_USERS = [
    pytest.param("self", id="server-as-test-user"),
    pytest.param("script-user", id="server-as-script-user", marks=needs_root),
]

AS_USER = """
import os, pwd, sys
entry = pwd.getpwnam(sys.argv[1])
os.setgroups([])
os.setgid(entry.pw_gid)
os.setuid(entry.pw_uid)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""
"""Runs the rest of its arguments with the interpreter as the named user (from root)."""


def write_skill(skills: Path, name: str, source: str) -> Path:
    folder = skills / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Test skill {name}.\n---\n\n# Use\n", encoding="utf-8"
    )
    (folder / "scripts" / "run.py").write_text(source, encoding="utf-8")
    return folder


def server_params(
    skills: Path, workspace: Path, who: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """The composed server over stdio, scripts without bubblewrap, as `who`."""
    args = ["-m", "doc_processing_std_tools", "--skills-dir", str(skills)]
    if who == "script-user":
        args = ["-c", AS_USER, SCRIPT_USER, *args]
    return StdioServerParameters(
        command=sys.executable,
        args=args,
        env={
            "DPTTOOLS_WORKSPACE_DIR": str(workspace),
            "DPTTOOLS_SCRIPT_SANDBOX": "none",
            "DPTTOOLS_CACHE_DIR": "off",
            "PATH": os.environ.get("PATH", os.defpath),
            **(env or {}),
        },
    )


async def call(client: Client, skill: str, args: list[str]) -> dict[str, Any]:
    result = await client.call_tool(
        "execute_skill_script",
        {"skill_name": skill, "script_path": "scripts/run.py", "args": shlex.join(args)},
    )
    block = result.content[0]
    assert isinstance(block, TextContent) and not result.is_error, block
    payload: dict[str, Any] = json.loads(block.text)
    return payload


def processes_with(token: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `token`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A skills folder and a workspace the scripts' user may write to."""
    skills, workspace = tmp_path / "skills", tmp_path / "workspace"
    skills.mkdir()
    workspace.mkdir()
    give_to_script_user(workspace)
    return skills, workspace


# Walks its ancestors (its supervisor, the server, ...) and reads each one's environment.
PEEKER = """
import json, os, sys
secret = sys.argv[1]
seen = {}
pid = os.getppid()
while pid > 1:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            seen[pid] = "LEAKED" if secret.encode() in handle.read() else "read"
    except OSError as exc:
        seen[pid] = type(exc).__name__
    with open(f"/proc/{pid}/stat") as handle:
        pid = int(handle.read().rsplit(")", 1)[1].split()[1])
print(json.dumps(seen))
"""


@without_bwrap_as_root
@pytest.mark.parametrize("who", SERVER_USERS)
async def test_a_script_cannot_read_the_servers_environment(
    folders: tuple[Path, Path], who: str
) -> None:
    skills, workspace = folders
    write_skill(skills, "peek", PEEKER)
    secret = f"sk-fake-{uuid.uuid4().hex}"
    params = server_params(skills, workspace, who, {"FAKE_API_KEY": secret})
    async with Client(params) as client:
        payload = await call(client, "peek", [secret])
    assert payload["exit_code"] == 0, payload["stderr"]
    seen = json.loads(payload["stdout"])
    assert len(seen) >= 2, seen  # the supervisor and the server, at least
    assert "LEAKED" not in seen.values(), seen


# Starts an orphan that calls setsid() and runs with an EMPTY environment, then kills its
# supervisor; when it may not (a supervisor running as root), it names it in a file for
# the test to kill, as a crash would.
ORPHANER = """
import os, signal, subprocess, sys, time
token, folder = sys.argv[1], sys.argv[2]
ready, victim = os.path.join(folder, "ready"), os.path.join(folder, "victim")
sleeper = "import os, sys, time\\nos.setsid()\\nopen(sys.argv[2], 'w').close()\\ntime.sleep(300)"
middle = "import subprocess, sys\\nsubprocess.Popen([sys.executable, '-c', *sys.argv[1:]], env={})"
subprocess.run([sys.executable, "-c", middle, sleeper, token, ready], env={})
while not os.path.exists(ready):
    time.sleep(0.01)
try:
    os.kill(os.getppid(), signal.SIGKILL)
except PermissionError:
    with open(victim + ".tmp", "w") as handle:
        handle.write(str(os.getppid()))
    os.rename(victim + ".tmp", victim)
time.sleep(30)
"""


@without_bwrap_as_root
@pytest.mark.parametrize("who", SERVER_USERS)
async def test_an_orphan_of_a_killed_supervisor_is_gone_after_the_call(
    folders: tuple[Path, Path], who: str
) -> None:
    skills, workspace = folders
    write_skill(skills, "orphan", ORPHANER)
    token = f"dpt-orphan-{uuid.uuid4().hex}"
    params = server_params(skills, workspace, who, {"DPTTOOLS_SANDBOX_TIMEOUT": "60"})

    async def kill_the_supervisor() -> None:
        victim = workspace / "victim"
        for _ in range(2500):
            if victim.exists():
                os.kill(int(victim.read_text()), signal.SIGKILL)
                return
            await anyio.sleep(0.02)

    try:
        async with Client(params) as client, anyio.create_task_group() as group:
            group.start_soon(kill_the_supervisor)
            with anyio.fail_after(50):
                payload = await call(client, "orphan", [token, str(workspace)])
            group.cancel_scope.cancel()
            assert (workspace / "ready").exists(), payload
            assert payload["exit_code"] == -1, payload
            assert "No result" in payload["stderr"], payload
            # Checked while the server still runs: the call itself swept the orphan.
            assert processes_with(token) == []
    finally:
        for pid in processes_with(token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


SETUID = """
import os, shutil, sys
folder = sys.argv[1]

def chmod(path, mode):
    try:
        os.chmod(path, mode)
    except PermissionError:
        pass  # the system-call filter refuses set-ID modes

shutil.copy("/bin/sh", os.path.join(folder, "rootshell"))
chmod(os.path.join(folder, "rootshell"), 0o4755)
shutil.copy("/bin/sh", os.path.join(folder, "groupshell"))
chmod(os.path.join(folder, "groupshell"), 0o2755)
os.makedirs(os.path.join(folder, "deep"), exist_ok=True)
shutil.copy("/bin/sh", os.path.join(folder, "deep", "sh"))
chmod(os.path.join(folder, "deep", "sh"), 0o6755)
print(os.geteuid(), os.getuid(), os.getegid())
"""


@needs_root
@pytest.mark.parametrize("mode", MODES)
async def test_a_script_never_runs_as_root_nor_leaves_a_setuid_file(
    folders: tuple[Path, Path], mode: str
) -> None:
    skills, workspace = folders
    skill = write_skill(skills, "setuid", SETUID)
    result = await run_script(
        skill / "scripts" / "run.py",
        [str(workspace)],
        time_limit=20,
        output_limit=4000,
        policy=ScriptPolicy(sandbox=mode, workspace=workspace),  # type: ignore[arg-type]
        skill_dir=skill,
    )
    assert result.exit_code == 0, result.stderr
    euid, uid, egid = map(int, result.stdout.split())
    assert euid != 0 and uid != 0 and egid != 0
    written = [path for path in workspace.rglob("*") if path.is_file()]
    if result.sandboxed:
        # Staged: a setuid or setgid file is held back, never written.
        assert written == [] and result.changes is not None
        assert len(result.changes.held) == 3, result.changes.held
    else:
        assert len(written) == 3
    for path in written:
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path


@needs_root
def test_root_is_refused_as_the_script_user() -> None:
    for value in ("root", "0", " "):
        with pytest.raises(ConfigError, match="DPTTOOLS_SCRIPT_USER"):
            load_settings({"DPTTOOLS_SCRIPT_USER": value})


@needs_root
async def test_a_missing_script_user_is_a_start_up_error_naming_it(tmp_path: Path) -> None:
    name = f"no-such-user-{uuid.uuid4().hex[:8]}"
    done = await anyio.run_process(
        [sys.executable, "-m", "doc_processing_std_tools", "--skills-dir", str(tmp_path)],
        env={**os.environ, "DPTTOOLS_SCRIPT_USER": name, "DPTTOOLS_WORKSPACE_DIR": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 2
    assert name in done.stderr.decode() and "DPTTOOLS_SCRIPT_USER" in done.stderr.decode()


@needs_root
async def test_an_interpreter_the_script_user_cannot_reach_costs_scripts_only(
    folders: tuple[Path, Path],
) -> None:
    """A root server whose Python sits in a folder only root may pass (pyenv under /root)
    still starts and serves its other tools; each script call says which folder stops the
    script's user, and nothing runs."""
    skills, workspace = folders
    write_skill(skills, "hello", "print('ran')\n")
    (workspace / "note.txt").write_text("kept", encoding="utf-8")
    private = Path(tempfile.mkdtemp(prefix="dpt-private-python-"))
    try:
        os.chmod(private, 0o700)  # noqa: PTH101
        venv = private / "venv"
        await anyio.run_process([sys.executable, "-m", "venv", "--copies", "--without-pip", venv])
        params = server_params(skills, workspace, "self")
        params.command = str(venv / "bin" / "python")
        params.env = {**(params.env or {}), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        async with Client(params) as client:
            listed = await client.call_tool("read_file", {"path": "note.txt"})
            assert not listed.is_error and "kept" in str(listed.content)
            refused = await client.call_tool(
                "execute_skill_script", {"skill_name": "hello", "script_path": "scripts/run.py"}
            )
        text = str(refused.content)
        assert refused.is_error and str(private) in text and "nothing ran" in text
    finally:
        shutil.rmtree(private, ignore_errors=True)


@needs_bwrap
async def test_a_python_installed_under_tmp_runs_scripts_under_bubblewrap(
    folders: tuple[Path, Path],
) -> None:
    """The sandbox's fresh /tmp is mounted before the Python installation is shown, so
    an interpreter or virtual environment under /tmp (a checkout there, a CI runner's
    folder) stays visible to the script."""
    skills, workspace = folders
    write_skill(skills, "hello", "import sys\nprint('ran', sys.prefix)\n")
    place = Path(tempfile.mkdtemp(prefix="dpt-tmp-python-", dir="/tmp"))
    try:
        os.chmod(place, 0o755)  # noqa: PTH101
        venv = place / "venv"
        await anyio.run_process([sys.executable, "-m", "venv", "--copies", "--without-pip", venv])
        params = server_params(skills, workspace, "self", {"DPTTOOLS_SCRIPT_SANDBOX": "bwrap"})
        params.command = str(venv / "bin" / "python")
        path = os.pathsep.join(p for p in sys.path if p)
        params.env = {**(params.env or {}), "PYTHONPATH": path}
        async with Client(params) as client:
            payload = await call(client, "hello", [])
        assert payload["exit_code"] == 0 and payload["stdout"].startswith("ran "), payload
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.fixture
def outside_folder() -> Iterator[Path]:
    """A folder outside /tmp and the homes (under /opt or /srv) holding a file readable by
    everyone, a private file and a Unix socket anyone may connect to; removed after."""
    for parent in ("/opt", "/srv", "/var/lib"):
        try:
            folder = Path(tempfile.mkdtemp(prefix="dpt-outside-", dir=parent))
            break
        except OSError:
            continue
    else:
        pytest.skip("no writable folder outside /tmp under /opt, /srv or /var/lib")
    folder.chmod(0o755)
    (folder / "public.txt").write_text("PUBLIC-OUTSIDE", encoding="utf-8")
    (folder / "public.txt").chmod(0o644)
    (folder / "private.txt").write_text("PRIVATE-OUTSIDE", encoding="utf-8")
    (folder / "private.txt").chmod(0o600)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "service.sock"))
    (folder / "service.sock").chmod(0o777)
    listener.listen(4)
    try:
        yield folder
    finally:
        listener.close()
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


PROBER = """
import json, socket, sys
folder = sys.argv[1]
seen = {}
for name in ("public.txt", "private.txt", "/etc/shadow"):
    try:
        with open(name if name.startswith("/") else f"{folder}/{name}") as handle:
            seen[name] = handle.read()
    except OSError as exc:
        seen[name] = type(exc).__name__
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(f"{folder}/service.sock")
        seen["socket"] = "connected"
except OSError as exc:
    seen["socket"] = type(exc).__name__
print(json.dumps(seen))
"""


async def probe(skills: Path, folder: Path, visible: tuple[Path, ...] = ()) -> dict[str, str]:
    skill = write_skill(skills, "probe", PROBER)
    result = await run_script(
        skill / "scripts" / "run.py",
        [str(folder)],
        time_limit=20,
        output_limit=4000,
        policy=ScriptPolicy(sandbox="bwrap", visible=visible),
        skill_dir=skill,
    )
    assert result.exit_code == 0, result.stderr
    seen: dict[str, str] = json.loads(result.stdout)
    return seen


@needs_bwrap
async def test_under_bubblewrap_only_the_allow_listed_folders_are_visible(
    folders: tuple[Path, Path], outside_folder: Path
) -> None:
    seen = await probe(folders[0], outside_folder)
    assert seen["public.txt"] == "FileNotFoundError", seen
    assert seen["private.txt"] == "FileNotFoundError", seen
    assert seen["socket"] == "FileNotFoundError", seen
    assert seen["/etc/shadow"] in ("FileNotFoundError", "PermissionError"), seen


@needs_bwrap
async def test_a_folder_named_in_script_visible_is_shown_read_only(
    folders: tuple[Path, Path], outside_folder: Path
) -> None:
    seen = await probe(folders[0], outside_folder, visible=(outside_folder,))
    assert seen["public.txt"] == "PUBLIC-OUTSIDE", seen


# Starts 12 children that each fill 64 MiB and hold it; reports how they ended.
HOGS = """
import subprocess, sys
child = (
    "import time\\n"
    "block = bytearray(64 << 20)\\n"
    "block[::4096] = b'x' * len(range(0, len(block), 4096))\\n"
    "time.sleep(4)\\n"
)
children = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(12)]
print([c.wait() for c in children])
"""


@needs_cgroup
@pytest.mark.parametrize("mode", MODES)
async def test_a_whole_call_is_bounded_in_memory(folders: tuple[Path, Path], mode: str) -> None:
    skill = write_skill(folders[0], "hogs", HOGS)
    result = await run_script(
        skill / "scripts" / "run.py",
        [],
        time_limit=60,
        output_limit=4000,
        policy=ScriptPolicy(sandbox=mode, memory_mb=256),  # type: ignore[arg-type]
        skill_dir=skill,
    )
    assert "DPTTOOLS_SCRIPT_MEMORY_MB" in result.stderr, result
    assert "whole call" in result.stderr, result


# Forks up to 200 children that sleep; reports how many forks succeeded.
FORKS = """
import os, time
started = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    started += 1
print(started)
"""


@pytest.mark.parametrize("mode", MODES)
async def test_a_whole_call_is_bounded_in_processes(folders: tuple[Path, Path], mode: str) -> None:
    skill = write_skill(folders[0], "forks", FORKS)
    result = await run_script(
        skill / "scripts" / "run.py",
        [],
        time_limit=30,
        output_limit=4000,
        policy=ScriptPolicy(sandbox=mode, max_processes=64),  # type: ignore[arg-type]
        skill_dir=skill,
    )
    assert result.exit_code == 0, result.stderr
    assert int(result.stdout) < 64, result.stdout
