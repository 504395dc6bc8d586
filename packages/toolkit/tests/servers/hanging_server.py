"""A stdio "server" that starts, notes the start, and never answers the handshake.

Usage: python hanging_server.py STARTS_FILE
Each start appends one line to STARTS_FILE, so a test can count connection attempts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    with Path(sys.argv[1]).open("a", encoding="utf-8") as starts:
        starts.write("start\n")
    time.sleep(60)


if __name__ == "__main__":
    main()
