"""``python -m doc_processing_std_tools.skills``: serve the skills server alone over stdio."""

from __future__ import annotations

import sys

from ..config import get_settings
from ..errors import ConfigError


def main() -> None:
    """Check the configuration, then serve `skills_server` on standard input and output."""
    try:
        get_settings()
    except ConfigError as exc:
        print(f"doc_processing_std_tools.skills: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from .server import skills_server

    skills_server.run()


if __name__ == "__main__":
    main()
