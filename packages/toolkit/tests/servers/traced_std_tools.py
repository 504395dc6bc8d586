"""doc-processing-std-tools in a child process with an OpenTelemetry SDK tracer provider
that appends every span, as one JSON line, to the file named by TRACE_FILE (see
span_files.py).

Arguments are the std-tools command line's (``--transport streamable-http --port N``...).
"""

from __future__ import annotations

from span_files import install

install()

from doc_processing_std_tools.cli import main  # noqa: E402

main()
