"""A fastmcp 4.2 server serving the MCP Skills extension over stdio from a folder.

Usage: python fastmcp_skills_server.py SKILLS_FOLDER [PID_FILE]

The process writes its id to PID_FILE (when given) before serving, so that a test can
stop it in the middle of a run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import fastmcp
from fastmcp.skills.provider import SkillsDirectoryProvider


def main() -> None:
    folder = sys.argv[1]
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(str(os.getpid()), encoding="utf-8")
    server = fastmcp.FastMCP("fastmcp-skills")
    server.add_provider(SkillsDirectoryProvider(folder))
    server.run(show_banner=False)


if __name__ == "__main__":
    main()
