"""The built distributions install into a fresh virtual environment and work there.

This is what the Installation page promises: build both wheels (what `make dist` does),
install them into a new environment that has never seen this checkout, then start the
composed server by its console script over stdio and run the agent's command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[4]
UV = Path(sys.executable).parent / "uv"


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment holding only the two wheels and their dependencies."""
    if not UV.exists():
        pytest.skip("uv is not in this environment; run the tests through `make test`")
    work = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(UV), "build", "--all-packages", "--wheel", "--out-dir", str(work / "dist")],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    wheels = sorted((work / "dist").glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == [
        "doc_processing_std_tools",
        "doc_processing_toolkit",
    ]
    # The lock pins the dependencies' versions, so the fresh environment matches CI's; its
    # editable lines for the two workspace packages are what the wheels replace.
    constraints = work / "constraints.txt"
    constraints.write_text(
        "".join(
            line
            for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines(True)
            if not line.startswith("-e ")
        ),
        encoding="utf-8",
    )
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            str(UV),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            "--constraint",
            str(constraints),
            *map(str, wheels),
        ],
        check=True,
        capture_output=True,
    )
    return venv


def test_the_installed_packages_come_from_the_environment_not_the_checkout(
    fresh_env: Path,
) -> None:
    found = subprocess.run(
        [
            str(fresh_env / "bin" / "python"),
            "-c",
            "import doc_processing_std_tools as s, doc_processing_toolkit as t; "
            "print(s.__file__); print(t.__file__)",
        ],
        cwd=fresh_env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert len(found) == 2
    for path in found:
        assert Path(path).is_relative_to(fresh_env), path


async def test_the_installed_console_script_serves_the_composed_server(
    fresh_env: Path, tmp_path: Path
) -> None:
    skills = tmp_path / "skills" / "greeting"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(
        "---\nname: greeting\ndescription: Says hello.\n---\n# Hello\n", encoding="utf-8"
    )
    params = StdioServerParameters(
        command=str(fresh_env / "bin" / "doc-processing-std-tools"),
        args=["--skills-dir", str(tmp_path / "skills"), "--workspace", str(tmp_path)],
        cwd=str(tmp_path),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "doc-processing-std-tools"
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"list_skills", "read_file", "get_file_overview"} <= names
        listed = await session.call_tool("list_skills", {})
        assert not listed.is_error
        assert "greeting" in str(listed.content[0])


def test_the_installed_agent_command_starts(fresh_env: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    done = subprocess.run(
        [str(fresh_env / "bin" / "dpt-agent"), "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "dpt-agent" in done.stdout


@pytest.mark.parametrize("distribution", ["doc-processing-std-tools", "doc-processing-toolkit"])
def test_the_installed_metadata_points_to_the_documentation(
    fresh_env: Path, distribution: str
) -> None:
    """An installed user finds the documentation, the source, the changelog and the
    issues from the package's metadata, and its README stands alone (issue 28)."""
    script = (
        "import json, sys; from importlib import metadata; "
        "m = metadata.metadata(sys.argv[1]); "
        "print(json.dumps({'urls': m.get_all('Project-URL'), 'readme': m.get_payload()}))"
    )
    found = subprocess.run(
        [str(fresh_env / "bin" / "python"), "-c", script, distribution],
        cwd=fresh_env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    data = json.loads(found)
    pairs = [entry.partition(",") for entry in data["urls"]]
    labels = {label.strip(): url.strip() for label, _, url in pairs}
    assert set(labels) == {"Documentation", "Source", "Changelog", "Issues"}
    assert all(url.startswith("https://") for url in labels.values())
    readme = data["readme"]
    assert "pip install" in readme
    assert "```python" in readme or "```json" in readme
    assert labels["Documentation"] in readme
    assert "docs/" not in readme.replace(labels["Documentation"], "")
