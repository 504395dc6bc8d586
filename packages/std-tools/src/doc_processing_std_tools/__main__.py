"""``python -m doc_processing_std_tools``: serve the composed server (stdio by default)."""

from __future__ import annotations

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
