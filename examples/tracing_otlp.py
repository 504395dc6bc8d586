"""Send the spans of agent runs to an OTLP endpoint: Jaeger, Grafana Tempo, Logfire or any
OpenTelemetry collector.

    pip install "doc-processing-toolkit[otlp]"   # the OpenTelemetry SDK + OTLP/HTTP exporter
    docker run --rm -p 16686:16686 -p 4318:4318 jaegertracing/jaeger:latest   # for example
    python examples/tracing_otlp.py               # then open http://127.0.0.1:16686

The endpoint comes from the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, http://localhost:4318 by default) and the service's
name from OTEL_SERVICE_NAME. The toolkit only uses the OpenTelemetry API: this provider,
set once by the application before its first run, is what makes the spans go somewhere.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from doc_processing_toolkit import Agent, TestModel


def set_up_tracing() -> TracerProvider:
    """A tracer provider that batches spans to the OTLP/HTTP endpoint of the environment."""
    service = os.environ.get("OTEL_SERVICE_NAME", "doc-processing-agent")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def main() -> None:
    provider = set_up_tracing()
    # Any agent: the offline test model here, so the example needs no API key.
    agent = Agent(model=TestModel(), name="otlp-demo", instructions="Answer briefly.")
    try:
        for prompt in ("First question.", "Second question."):
            print(agent.run_sync(prompt).output)
    finally:
        agent.close()
        provider.shutdown()  # sends what is still queued


if __name__ == "__main__":
    main()
