"""The MCP Skills extension (``io.modelcontextprotocol/skills``): which skills it publishes
and why others are left out, the catalog as it publishes it, the pages of ``skills/list``,
and the handlers it adds to an MCP server.

May import: ``skills.core``, ``skills.catalog`` and the package's shared helpers and
settings. Never the scripts or the supply chain.
"""
