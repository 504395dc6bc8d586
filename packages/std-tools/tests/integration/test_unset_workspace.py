"""Without --workspace and DPTTOOLS_WORKSPACE_DIR, a server started in the root of the file
system, in the home folder or in a system folder such as /etc refuses every file and
document tool and says so once at start-up; elsewhere the working folder is the
workspace (issues 20 and 28). Without DPTTOOLS_SKILLS_DIR, create_skill makes no skills
folder in such a place. Real servers over stdio, driven by the SDK's client."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

pytestmark = pytest.mark.anyio

# A name no earlier run can have left behind.
NEVER_WRITTEN = f"tmp/dpt-never-written-{uuid.uuid4().hex}.txt"

FILE_AND_DOCUMENT_CALLS = [
    ("list_directory", {"path": "."}),
    ("write_file", {"path": NEVER_WRITTEN, "content": "x"}),
    ("read_file", {"path": "notes.txt"}),
    ("get_file_overview", {"path": "notes.txt"}),
    ("read_document", {"path": "notes.txt"}),
]


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


def _exists(path: Path) -> bool:
    return path.exists()


def _is_dir(path: Path) -> bool:
    return path.is_dir()


def _assert_names_the_way_out(message: str) -> None:
    assert "--workspace" in message
    assert "DPTTOOLS_WORKSPACE_DIR" in message
    assert "Hosts pages of the documentation" in message
    # An installed user has no copy of the repository: no path of it is named.
    assert "docs/" not in message
    assert "troubleshooting/#no-workspace" in message


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder of the test's own, holding one text file."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "notes.txt").write_text("private\n", encoding="utf-8")
    return folder.resolve()


async def _refusals(cwd: Path, home: Path) -> list[tuple[bool, str]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"HOME": str(home), "DPTTOOLS_SKILLS_DIR": str(home / "no-skills")},
        cwd=str(cwd),
    )
    answers = []
    async with Client(params) as client:
        for name, arguments in FILE_AND_DOCUMENT_CALLS:
            result = await client.call_tool(name, arguments)
            answers.append((bool(result.is_error), _text(result)))
        # The skills tools are not concerned: they have a folder of their own.
        listing = await client.call_tool("list_skills", {})
        assert not listing.is_error
    return answers


async def test_started_in_the_home_folder_the_file_and_document_tools_refuse(
    home: Path,
) -> None:
    for is_error, message in await _refusals(home, home):
        assert is_error, message
        assert "home folder" in message
        _assert_names_the_way_out(message)
    assert not _exists(home / "tmp")


async def test_started_in_the_root_the_file_and_document_tools_refuse(home: Path) -> None:
    for is_error, message in await _refusals(Path("/"), home):
        assert is_error, message
        assert "root of the file system" in message
        _assert_names_the_way_out(message)
    assert not _exists(Path("/") / NEVER_WRITTEN)


@pytest.mark.parametrize("folder", ["/usr/share", "/var"])
async def test_started_in_a_system_folder_the_file_and_document_tools_refuse(
    home: Path, folder: str
) -> None:
    if not _is_dir(Path(folder)):
        pytest.skip(f"{folder} is not a folder on this system")
    for is_error, message in await _refusals(Path(folder), home):
        assert is_error, message
        assert "folder of the operating system" in message or "shared by" in message
        _assert_names_the_way_out(message)


async def test_started_in_etc_read_file_does_not_serve_passwd(home: Path) -> None:
    if not _exists(Path("/etc/passwd")):
        pytest.skip("no /etc/passwd on this system")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"HOME": str(home), "DPTTOOLS_SKILLS_DIR": str(home / "no-skills")},
        cwd="/etc",
    )
    async with Client(params) as client:
        result = await client.call_tool("read_file", {"path": "passwd"})
    assert result.is_error
    assert "root:" not in _text(result)


async def test_started_in_the_root_create_skill_makes_no_skills_folder(home: Path) -> None:
    default = Path("/.agent_skills")
    was_there = _exists(default)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"HOME": str(home)},
        cwd="/",
    )
    try:
        async with Client(params) as client:
            result = await client.call_tool(
                "create_skill", {"skill_name": "stray-skill", "description": "Does nothing."}
            )
            listing = await client.call_tool("list_skills", {})
        message = _text(result)
        if not was_there:  # the listing's note does not offer what create_skill refuses
            assert "call create_skill" not in _text(listing)
            assert "DPTTOOLS_SKILLS_DIR" in _text(listing)
        assert result.is_error, message
        assert "DPTTOOLS_SKILLS_DIR" in message
        assert "file tool" not in message
        assert _exists(default) == was_there
    finally:
        if not was_there and _is_dir(default):  # only what this test made (before the fix)
            shutil.rmtree(default)


def _startup_log(cwd: Path, home: Path, *extra: str) -> str:
    """The server's standard error from start to the end of its (empty) standard input."""
    done = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools", *extra],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "DPTTOOLS_SKILLS_DIR": str(home)},
        check=False,
    )
    return done.stderr


def test_one_start_up_warning_says_the_same(home: Path) -> None:
    log = _startup_log(home, home)
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, log
    _assert_names_the_way_out(warnings[0])


def test_an_explicit_workspace_or_another_working_folder_is_not_refused(
    home: Path, tmp_path: Path
) -> None:
    assert " WARNING " not in _startup_log(home, home, "--workspace", str(home))
    assert " WARNING " not in _startup_log(tmp_path, home)


async def test_elsewhere_the_working_folder_stays_the_workspace(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"HOME": str(home)},
        cwd=str(project),
    )
    async with Client(params) as client:
        listing = await client.call_tool("list_directory", {"path": "."})
        assert not listing.is_error
        assert "notes.txt" in _text(listing)


async def test_an_explicit_workspace_in_the_home_folder_is_served(home: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"HOME": str(home), "DPTTOOLS_WORKSPACE_DIR": str(home)},
        cwd=str(home),
    )
    async with Client(params) as client:
        result = await client.call_tool("read_file", {"path": "notes.txt"})
        assert not result.is_error
        assert "private" in _text(result)


@pytest.mark.parametrize(
    ("folder", "refused"),
    [
        ("/", True),
        ("/etc", True),
        ("/etc/ssl", True),
        ("/usr/local/share", True),
        ("/proc/self", True),
        ("/bin", True),
        ("/srv", True),
        ("/root", True),
        ("/tmp", True),
        ("/srv/reports", False),
        ("/opt/project", False),
        ("/var/lib/project", False),
    ],
)
def test_the_documented_places_are_refused_and_folders_below_shared_ones_are_not(
    folder: str, refused: bool, tmp_path: Path
) -> None:
    from doc_processing_std_tools.places import place_refusal

    resolved = Path(folder).resolve()
    assert (place_refusal(resolved, tmp_path / "home") is not None) == refused
