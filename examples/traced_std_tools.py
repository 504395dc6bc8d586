"""doc-processing-std-tools with an OpenTelemetry tracer provider of its own, for
examples/tracing_tree.py: every span this server process records (the MCP SDK's SERVER
span of each request, with what std-tools adds) is appended as one JSON line to the file
named by TRACE_FILE. Arguments are the std-tools command line's.

A real deployment sets its provider the same way before the server starts, with an
exporter to its collector (see docs/toolkit/tracing.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    """Appends each finished span to a file as one JSON object."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                assert span.context is not None
                record = {
                    "name": span.name,
                    "kind": span.kind.name,
                    "span_id": f"{span.context.span_id:016x}",
                    "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                    "trace_id": f"{span.context.trace_id:032x}",
                    "start": span.start_time,
                    "end": span.end_time,
                    "attributes": {
                        key: list(value) if isinstance(value, tuple) else value
                        for key, value in (span.attributes or {}).items()
                    },
                }
                out.write(json.dumps(record) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(os.environ["TRACE_FILE"])))
trace.set_tracer_provider(provider)

from doc_processing_std_tools.cli import main  # noqa: E402

main()
