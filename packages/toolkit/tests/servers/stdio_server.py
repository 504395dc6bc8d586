"""A real MCP server for the toolkit's tests, run as a child process.

Tools: echo, pid (the process id, to count starts), env (one environment variable), cwd,
python (the interpreter running it), header (an HTTP request header), fail (an error
result), sleep. Its name comes from TEST_SERVER_NAME. It writes a line to stderr when it
starts. With TEST_SERVER_CRASH set it prints that text to stderr and exits before serving.
Run with ``--http PORT`` it serves streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(os.environ.get("TEST_SERVER_NAME", "stdio-test-server"))


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def pid() -> int:
    """The id of this server process."""
    return os.getpid()


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of this process, or '<unset>'."""
    return os.environ.get(name, "<unset>")


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header (over streamable HTTP), or '<unset>'."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), headers.get(name, "<unset>"))


@server.tool()
def cwd() -> str:
    """The working directory of this server process."""
    return str(Path.cwd())


@server.tool()
def python() -> str:
    """The interpreter running this server process."""
    return sys.executable


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def sleep(seconds: float) -> str:
    """Block for some seconds, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    options = parser.parse_args()
    crash = os.environ.get("TEST_SERVER_CRASH")
    if crash:
        sys.stderr.write(f"test server: about to fail\n{crash}\n")
        sys.exit(3)
    sys.stderr.write(f"test server {server.name} starting (pid {os.getpid()})\n")
    sys.stderr.flush()
    if options.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
