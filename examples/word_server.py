"""A small MCP server with two text tools, used by the toolkit examples.

Serves over stdio by default; ``--http PORT`` serves streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

server = MCPServer("words")


@server.tool()
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@server.tool()
def reverse_words(text: str) -> str:
    """Reverse the order of the words of a text."""
    return " ".join(reversed(text.split()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    options = parser.parse_args()
    if options.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()
