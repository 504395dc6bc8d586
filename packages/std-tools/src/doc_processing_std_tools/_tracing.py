"""What only these servers know, added to the MCP SDK's span of the request being served.

The MCP SDK opens a SERVER span around every request it serves (``tools/call NAME``,
``skills/list``, ``resources/read``...) and makes it the current span while the handler
runs; its parent is the caller's span when the request's ``_meta`` carries a W3C
``traceparent`` (the toolkit's ``execute_tool`` span). The functions here set attributes
on that current span and open no span of their own:

- ``doc_processing.skill.name``: the skill a request is about;
- ``doc_processing.script.exit_code`` and ``doc_processing.script.sandbox`` (``bwrap`` or
  ``none``): how a skill script ended and where it ran;
- ``doc_processing.limits.hit``: the settings whose limit a request reached (such as
  ``DPTTOOLS_SANDBOX_TIMEOUT`` or ``DPTTOOLS_OUTPUT_TRUNCATION_LIMIT``).

Only the OpenTelemetry API is used: the process that runs the server owns the tracer
provider. Without one the current span does not record and each call returns at once.
"""

from __future__ import annotations

import re
from typing import Final

from opentelemetry import trace

__all__ = [
    "LIMITS_HIT",
    "SCRIPT_EXIT_CODE",
    "SCRIPT_SANDBOX",
    "SKILL_NAME",
    "note_limit",
    "note_script",
    "note_skill",
]

SKILL_NAME: Final = "doc_processing.skill.name"
"""The skill a request is about."""
SCRIPT_EXIT_CODE: Final = "doc_processing.script.exit_code"
"""A skill script's exit status (-N for signal N, -1 when it was stopped)."""
SCRIPT_SANDBOX: Final = "doc_processing.script.sandbox"
"""Where a skill script ran: ``bwrap`` (bubblewrap) or ``none``."""
LIMITS_HIT: Final = "doc_processing.limits.hit"
"""The settings (``DPTTOOLS_*``) whose limit the request reached."""

_SETTING = re.compile(r"\bDPTTOOLS_[A-Z_]+\b")


def _recording() -> trace.Span | None:
    span = trace.get_current_span()
    return span if span.is_recording() else None


def note_skill(name: str) -> None:
    """Name the skill the request being served is about."""
    span = _recording()
    if span is not None:
        span.set_attribute(SKILL_NAME, name)


def note_limit(*settings: str) -> None:
    """Add `settings` (``DPTTOOLS_*`` names) to the limits the request reached."""
    span = _recording()
    if span is None or not settings:
        return
    # The SDK's span shows what it holds; through another API the last call wins.
    held = getattr(span, "attributes", None) or {}
    hit = list(held.get(LIMITS_HIT, ()))
    hit.extend(s for s in settings if s not in hit)
    span.set_attribute(LIMITS_HIT, hit)


def note_script(exit_code: int, sandboxed: bool, ending: str | None = None) -> None:
    """Record how a skill script ended: its exit code, its sandbox and, from `ending` (the
    message that says which limit stopped it), the settings of the limits it reached."""
    span = _recording()
    if span is None:
        return
    span.set_attribute(SCRIPT_EXIT_CODE, exit_code)
    span.set_attribute(SCRIPT_SANDBOX, "bwrap" if sandboxed else "none")
    if ending:
        # Each message names the setting of its limit; the first one is that limit.
        found = _SETTING.search(ending)
        if found is not None:
            note_limit(found.group(0))
