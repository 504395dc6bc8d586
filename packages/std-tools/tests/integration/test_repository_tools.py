"""The repository's own tools: `make test` runs every check even when one fails, and
`make conformance` ends with a count of each outcome (issue 28). The Makefile runs for
real, with the programs it calls replaced by scripts that log their names."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[4]


def _fake_tools(folder: Path, failing: str) -> Path:
    """A folder of stand-ins for the programs of .venv/bin: each logs its name, and the
    one named `failing` exits 1."""
    folder.mkdir()
    for name in ("pytest", "ruff", "mypy", "mkdocs", "python"):
        code = 1 if name == failing else 0
        script = folder / name
        script.write_text(f'#!/bin/sh\necho {name} >> "{folder}/called"\nexit {code}\n')
        script.chmod(0o755)
    return folder


def test_make_test_runs_every_check_when_pytest_fails(tmp_path: Path) -> None:
    if shutil.which("make") is None or not (REPO / "Makefile").is_file():
        pytest.skip("needs make and the repository's Makefile")
    tools = _fake_tools(tmp_path / "bin", failing="pytest")
    done = subprocess.run(
        ["make", "--no-print-directory", "test", f"BIN={tools}", "STAMP=", "VENV=" + str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    called = [name for name in (tools / "called").read_text().split() if name != "python"]
    assert done.returncode != 0, done.stdout + done.stderr
    # The four checks run side by side, so the order of the log is the race's: the failing
    # pytest ran, and so did every other check.
    assert {"pytest", "ruff", "mypy", "mkdocs"} <= set(called), called


def _conformance_module() -> ModuleType:
    path = REPO / "conformance" / "run.py"
    if not path.is_file():
        pytest.skip("needs the repository's conformance/run.py")
    spec = importlib.util.spec_from_file_location("conformance_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_make_conformance_ends_with_a_count_of_each_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _conformance_module()
    scenarios = {
        "server-initialize": [{"id": "a", "status": "SUCCESS"}],
        "ping": [{"id": "a", "status": "SUCCESS"}],
        "tools-call-image": [{"id": "b", "status": "FAILURE"}],
        "made-up-scenario": [{"id": "c", "status": "FAILURE"}],
    }
    for scenario, checks in scenarios.items():
        folder = tmp_path / "server" / f"{scenario}-2026-12-02T07-00-00-000Z"
        folder.mkdir(parents=True)
        (folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    tally = run.summarise([run.Run("server", 0, tmp_path / "server.log")], tmp_path)
    assert (tally.passed, tally.expected, tally.unexpected) == (2, 1, 1)
    assert tally.line() == "conformance: 2 passed, 1 expected failure, 1 unexpected"
    assert "UNEXPECTED: c" in capsys.readouterr().out


def test_the_project_addresses_agree_everywhere() -> None:
    """The Documentation and Source addresses are set in both pyproject files and in
    mkdocs.yml (site_url, repo_url), and each README names the documentation site; moving
    the project means changing them together (docs/installation.md lists the places)."""
    import tomllib

    mkdocs = REPO / "mkdocs.yml"
    if not mkdocs.is_file():
        pytest.skip("needs the repository's mkdocs.yml")
    settings = dict(
        line.split(": ", 1)
        for line in mkdocs.read_text(encoding="utf-8").splitlines()
        if line.startswith(("site_url: ", "repo_url: "))
    )
    for package in ("std-tools", "toolkit"):
        folder = REPO / "packages" / package
        urls = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "urls"
        ]
        assert urls["Documentation"] == settings["site_url"]
        assert urls["Source"] == settings["repo_url"]
        assert urls["Issues"] == settings["repo_url"] + "/issues"
        assert urls["Changelog"] == f"{settings['site_url']}changelog/{package}/"
        assert (folder / "CHANGELOG.md").read_text(encoding="utf-8").count("## [Unreleased]") == 1
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert urls["Documentation"] in readme and urls["Changelog"] in readme
