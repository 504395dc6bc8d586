"""``python -m doc_processing_std_tools.skills``: serve the skills server alone over stdio.

``--tools NAME,...`` (or DPTTOOLS_TOOLS) offers only the named tools, and ``--read-only``
(or DPTTOOLS_READ_ONLY=1) leaves out create_skill and execute_skill_script.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .._building import configure_cli_logging, log_level_option, serve_stdio
from .._version import __version__
from ..config import get_settings, load_serving_settings
from ..errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m doc_processing_std_tools.skills",
        description="Serve the five Agent Skills tools as one MCP server over stdio.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    log_level_option(parser)
    parser.add_argument(
        "--tools",
        metavar="NAME,...",
        help="offer only these tools (comma-separated); overrides DPTTOOLS_TOOLS",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="leave out create_skill and execute_skill_script (DPTTOOLS_READ_ONLY=1)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Check the configuration and the tool allow-list, then serve on stdin and stdout."""
    args = _parser().parse_args(argv)
    overrides = {"DPTTOOLS_TOOLS": args.tools} if args.tools is not None else {}
    if args.read_only:
        overrides["DPTTOOLS_READ_ONLY"] = "1"
    try:
        configure_cli_logging(args.log_level)
        settings = get_settings()
        serving = load_serving_settings({**os.environ, **overrides})
        from .server import new_skills_server

        server = new_skills_server(
            settings=settings, tools=serving.tools, read_only=serving.read_only
        )
        from .scripts.start import start_scripts

        start_scripts(settings, read_only=serving.read_only, tools=serving.tools)
        if not serving.read_only:
            from ..change_policy import announce_policy

            announce_policy(settings.script_changes())
    except ConfigError as exc:
        print(f"doc_processing_std_tools.skills: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    serve_stdio(server)


if __name__ == "__main__":
    main()
