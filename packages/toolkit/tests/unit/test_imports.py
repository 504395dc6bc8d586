"""Importing the toolkit and running an agent load no provider SDK and no fastmcp."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
import doc_processing_toolkit
from doc_processing_toolkit import Agent, TestModel
from mcp.server.mcpserver import MCPServer

server = MCPServer("plain")

@server.tool()
def ping() -> str:
    return "pong"

def local() -> str:
    return "x"

agent = Agent(TestModel(), tools=[server, local])
assert agent.run_sync("hi").output == "echo: hi"
agent.close()
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"fastmcp", "anthropic", "openai"})
print(",".join(heavy) or "none")
"""


def test_no_provider_sdk_or_fastmcp_is_imported_unless_used() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "none"
