"""The former name of `audience`, kept so that older imports keep working."""

from __future__ import annotations

from .audience import MODEL, PERSON, Voice, person

__all__ = ["MODEL", "PERSON", "Voice", "person"]
