"""A one-tool MCP server for the benchmarks, served over stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
