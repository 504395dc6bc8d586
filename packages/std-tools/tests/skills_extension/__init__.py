"""Tests of the MCP Skills extension."""
