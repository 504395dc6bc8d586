"""Command line of the composed server: ``doc-processing-std-tools`` and
``python -m doc_processing_std_tools``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .config import get_settings, reset_settings
from .errors import ConfigError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the composed server."""
    parser = argparse.ArgumentParser(
        prog="doc-processing-std-tools",
        description=(
            "Serve the skills, file system and document tools as one MCP server "
            "(doc-processing-std-tools), over stdio by default."
        ),
    )
    parser.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        default="stdio",
        help="stdio (default) or streamable-http (stateless, for one or many replicas)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="HTTP address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument(
        "--path", default="/mcp", help="HTTP path of the MCP endpoint (default /mcp)"
    )
    parser.add_argument(
        "--skills-dir", help="skills folder; overrides DPTTOOLS_SKILLS_DIR for this process"
    )
    parser.add_argument(
        "--workspace",
        help="folder the file and document tools are confined to; overrides "
        "DPTTOOLS_WORKSPACE_DIR for this process",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, apply the overrides, check the settings, and serve."""
    args = build_parser().parse_args(argv)
    # The overrides go into the environment, so skill scripts started by this server
    # see the same folders as the server itself.
    if args.skills_dir is not None:
        os.environ["DPTTOOLS_SKILLS_DIR"] = args.skills_dir
    if args.workspace is not None:
        os.environ["DPTTOOLS_WORKSPACE_DIR"] = args.workspace
    reset_settings()
    try:
        settings = get_settings()
    except ConfigError as exc:
        print(f"doc-processing-std-tools: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.workspace is not None and not settings.workspace_dir.is_dir():
        print(
            f"doc-processing-std-tools: --workspace {args.workspace!r} is not a folder.",
            file=sys.stderr,
        )
        raise SystemExit(2)

    from .server import make_composed_server

    server = make_composed_server()
    if args.transport == "stdio":
        server.run()
    else:
        server.run(
            "streamable-http",
            host=args.host,
            port=args.port,
            streamable_http_path=args.path,
            stateless_http=True,
        )
