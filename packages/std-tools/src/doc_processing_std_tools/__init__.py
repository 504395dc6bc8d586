"""MCP tool servers for document-processing agents."""

__version__ = "0.6.0"
