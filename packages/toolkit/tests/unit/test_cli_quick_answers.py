"""``dpt-agent --version`` and ``--help`` (of each subcommand too) are answered from the
arguments alone: neither the MCP SDK nor the agent's modules are imported to print them
(issue 20, item 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from doc_processing_toolkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(
    name for name in sys.modules
    if name == "mcp" or name.startswith("mcp.") or name == "doc_processing_toolkit.agent"
)
sys.stderr.write("LOADED:" + ",".join(loaded) + "\\n")
"""


@pytest.mark.parametrize(
    "arguments",
    [["--version"], ["--help"], ["run", "--help"], ["batch", "--help"], ["eval", "--help"]],
)
def test_version_and_help_load_no_mcp_sdk(arguments: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip(), "nothing was printed"
    loaded = done.stderr.rsplit("LOADED:", 1)[1].strip()
    assert loaded == ""


def test_importing_the_package_loads_no_mcp_sdk_until_a_name_is_used() -> None:
    program = (
        "import sys, doc_processing_toolkit as t\n"
        "print('mcp' in sys.modules)\n"
        "t.Agent\n"
        "print('mcp' in sys.modules, t.__version__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    first, second = done.stdout.splitlines()
    assert first == "False"
    assert second.startswith("True ")
