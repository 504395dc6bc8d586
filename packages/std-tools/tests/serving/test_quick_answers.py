"""``--version`` and ``--help`` of the composed server and of dpt-skills are answered from
the arguments alone: the MCP SDK is not imported to print them (issue 20, item 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Runs an entry point's main() the way its console script does, then reports whether any
# module of the MCP SDK was loaded by then.
PROBE = """
import sys
from importlib import import_module
module, arguments = sys.argv[1], sys.argv[2:]
try:
    import_module(module).main(arguments)
except SystemExit:
    pass
loaded = sorted(name for name in sys.modules if name == "mcp" or name.startswith("mcp."))
sys.stderr.write("MCP:" + ",".join(loaded) + "\\n")
"""


def _loaded_sdk_modules(module: str, *arguments: str) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    marker = done.stderr.rsplit("MCP:", 1)[1].strip()
    return done.stdout, [name for name in marker.split(",") if name]


@pytest.mark.parametrize(
    "module",
    [
        "doc_processing_std_tools.cli",
        "doc_processing_std_tools.skills.__main__",
        "doc_processing_std_tools.skills.cli",
    ],
)
@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_load_no_mcp_sdk(module: str, option: str) -> None:
    out, loaded = _loaded_sdk_modules(module, option)
    assert out.strip(), f"{module} {option} printed nothing"
    assert loaded == []


def test_the_module_entry_point_answers_version_without_the_sdk() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "doc_processing_std_tools",
            "--version",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("doc-processing-std-tools ")
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()]
    assert "mcp" not in imported
