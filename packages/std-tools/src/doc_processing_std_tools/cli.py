"""Command line of the composed server: ``doc-processing-std-tools`` and
``python -m doc_processing_std_tools``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from ._building import configure_cli_logging, log_level_option, serve_stdio
from ._version import __version__
from .config import ServingSettings, get_settings, load_serving_settings, reset_settings
from .errors import ConfigError

__all__ = ["build_parser", "main"]

logger = logging.getLogger(__name__)

#: Command-line option (argparse destination) -> the variable it overrides.
_SERVING_OPTIONS = {
    "tools": "DPTTOOLS_TOOLS",
    "auth_jwks_url": "DPTTOOLS_AUTH_JWKS_URL",
    "auth_jwks_file": "DPTTOOLS_AUTH_JWKS_FILE",
    "auth_issuer": "DPTTOOLS_AUTH_ISSUER",
    "auth_audience": "DPTTOOLS_AUTH_AUDIENCE",
    "auth_algorithms": "DPTTOOLS_AUTH_ALGORITHMS",
    "auth_tokens_file": "DPTTOOLS_AUTH_TOKENS_FILE",
    "auth_resource_url": "DPTTOOLS_AUTH_RESOURCE_URL",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the composed server."""
    parser = argparse.ArgumentParser(
        prog="doc-processing-std-tools",
        description=(
            "Serve the skills, file system and document tools as one MCP server "
            "(doc-processing-std-tools), over stdio by default."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    log_level_option(parser)
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
        "--skills-dir",
        help=f"skills folders, separated by '{os.pathsep}'; overrides DPTTOOLS_SKILLS_DIR for "
        "this process",
    )
    parser.add_argument(
        "--skills-depth",
        metavar="N",
        help="folder levels searched for skills (1: direct subfolders); overrides "
        "DPTTOOLS_SKILLS_DEPTH for this process",
    )
    parser.add_argument(
        "--workspace",
        help="folder the file and document tools are confined to; overrides "
        "DPTTOOLS_WORKSPACE_DIR for this process",
    )
    tools = parser.add_argument_group("tool allow-list (any transport)")
    tools.add_argument(
        "--tools",
        metavar="NAME,...",
        help="offer only these tools (comma-separated); overrides DPTTOOLS_TOOLS",
    )
    tools.add_argument(
        "--read-only",
        action="store_true",
        help="leave out write_file, edit_file, create_skill and execute_skill_script "
        "(DPTTOOLS_READ_ONLY=1)",
    )
    auth = parser.add_argument_group(
        "HTTP authentication",
        "Bearer tokens: JWTs checked against a JWKS, or static tokens from a file. Each "
        "option overrides the DPTTOOLS_AUTH_* variable of the same name.",
    )
    auth.add_argument("--auth-jwks-url", metavar="URL", help="the identity provider's JWKS")
    auth.add_argument("--auth-jwks-file", metavar="FILE", help="a JWKS in a local file")
    auth.add_argument("--auth-issuer", metavar="URL", help="the iss claim JWTs must carry")
    auth.add_argument(
        "--auth-audience",
        metavar="AUD",
        help="the aud claim JWTs must carry (default: the resource URL)",
    )
    auth.add_argument(
        "--auth-algorithms", metavar="ALG,...", help="JWT algorithms accepted (default RS256,ES256)"
    )
    auth.add_argument(
        "--auth-tokens-file", metavar="FILE", help="static tokens: lines of NAME TOKEN SCOPES"
    )
    auth.add_argument(
        "--auth-resource-url",
        metavar="URL",
        help="the URL clients use for the MCP endpoint (default http://HOST:PORT/PATH)",
    )
    auth.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve HTTP without authentication on a non-loopback address (only behind a "
        "proxy that authenticates); DPTTOOLS_ALLOW_UNAUTHENTICATED=1",
    )
    return parser


def _fail(message: str) -> NoReturn:
    print(f"doc-processing-std-tools: {message}", file=sys.stderr)
    raise SystemExit(2)


def _serving_settings(args: argparse.Namespace) -> ServingSettings:
    overrides = {
        variable: value
        for option, variable in _SERVING_OPTIONS.items()
        if (value := getattr(args, option)) is not None
    }
    if args.read_only:
        overrides["DPTTOOLS_READ_ONLY"] = "1"
    if args.allow_unauthenticated:
        overrides["DPTTOOLS_ALLOW_UNAUTHENTICATED"] = "1"
    return load_serving_settings({**os.environ, **overrides})


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, apply the overrides, check the settings, and serve."""
    args = build_parser().parse_args(argv)
    try:
        log_level = configure_cli_logging(args.log_level)
    except ConfigError as exc:
        _fail(str(exc))
    # The overrides go into the environment, so skill scripts started by this server
    # see the same folders as the server itself.
    if args.skills_dir is not None:
        os.environ["DPTTOOLS_SKILLS_DIR"] = args.skills_dir
    if args.skills_depth is not None:
        os.environ["DPTTOOLS_SKILLS_DEPTH"] = args.skills_depth
    if args.workspace is not None:
        os.environ["DPTTOOLS_WORKSPACE_DIR"] = args.workspace
    reset_settings()
    try:
        settings = get_settings()
        serving = _serving_settings(args)
    except ConfigError as exc:
        _fail(str(exc))
    if args.workspace is not None and not settings.workspace_dir.is_dir():
        _fail(f"--workspace {args.workspace!r} is not a folder.")
    if settings.workspace_refusal is not None:
        logger.warning("%s", settings.workspace_refusal)
    if not serving.read_only:
        from .change_policy import announce_policy

        announce_policy(settings.script_changes())
        announce_policy(settings.file_tools_changes())

    from .server import make_composed_server
    from .skills.scripts.start import start_scripts

    def scripts_ready() -> None:
        try:
            start_scripts(settings, read_only=serving.read_only, tools=serving.tools)
        except ConfigError as exc:
            _fail(str(exc))

    if args.transport == "stdio":
        try:
            server = make_composed_server(
                settings=settings, tools=serving.tools, read_only=serving.read_only
            )
        except ConfigError as exc:
            _fail(str(exc))
        scripts_ready()
        serve_stdio(server)
        return

    from .http_app import http_app, http_auth, is_loopback

    if not serving.auth.enabled and not is_loopback(args.host):
        if not serving.allow_unauthenticated:
            _fail(
                f"refusing to serve HTTP on {args.host} without authentication: anyone who "
                "reaches the port could read and write files and run skill scripts. Set "
                "DPTTOOLS_AUTH_JWKS_URL (--auth-jwks-url) with DPTTOOLS_AUTH_ISSUER "
                "(--auth-issuer), or DPTTOOLS_AUTH_TOKENS_FILE (--auth-tokens-file); or, "
                "when a proxy in front of this server authenticates every request, pass "
                "--allow-unauthenticated (DPTTOOLS_ALLOW_UNAUTHENTICATED=1)."
            )
        logger.warning(
            "serving HTTP on %s without authentication (--allow-unauthenticated)", args.host
        )
    try:
        access = http_auth(serving.auth, host=args.host, port=args.port, path=args.path)
        verifier, auth = access if access is not None else (None, None)
        server = make_composed_server(
            settings=settings,
            tools=serving.tools,
            read_only=serving.read_only,
            token_verifier=verifier,
            auth=auth,
        )
    except ConfigError as exc:
        _fail(str(exc))
    scripts_ready()
    import uvicorn

    app = http_app(
        server, host=args.host, path=args.path, max_file_bytes=settings.max_file_size_bytes
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level=log_level.lower())
