"""The package's version, in a module of its own so that code inside the package can name
it without importing the package root."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.6.0"
