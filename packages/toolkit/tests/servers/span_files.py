"""Spans to a JSON-lines file, for processes the tests start (a traced server child, Ray
workers): `install` sets an OpenTelemetry SDK tracer provider whose every finished span
is appended to the file named by TRACE_FILE, in the records of conftest's `span_record`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


class FileExporter(SpanExporter):
    """Appends each span to a JSON-lines file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                assert span.context is not None
                record = {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": f"{span.context.trace_id:032x}",
                    "span_id": f"{span.context.span_id:016x}",
                    "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                    "start": span.start_time,
                    "status": span.status.status_code.name,
                    "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
                    "events": [],
                    "process": os.getpid(),
                }
                out.write(json.dumps(record) + "\n")
        return SpanExportResult.SUCCESS


def install() -> None:
    """Set the tracer provider of this process (once; a Ray worker setup hook too)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ["TRACE_FILE"])))
    trace.set_tracer_provider(provider)
