"""An agent toolkit for MCP tools, model providers and Agent Skills."""

__version__ = "0.5.3"
