"""A batch on a real local Ray is one trace: the batch span in the driver, each item's span
and its run on an actor, joined by the context each job carries. The actors get their
tracer provider from Ray's worker_process_setup_hook (tests/servers/span_files.py) and
write their spans to a file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent

ray = pytest.importorskip("ray", reason='Ray is needed: pip install "doc-processing-toolkit[ray]"')

from doc_processing_toolkit.batch.ray_engine import RayEngine  # noqa: E402

SERVERS = Path(__file__).parents[1] / "servers"
SpanRecords = Any  # the `spans` fixture's records (tests/conftest.py)


@pytest.fixture(scope="module")
def traced_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray whose workers record their spans to the file this yields."""
    trace_file = tmp_path_factory.mktemp("ray-spans") / "spans.jsonl"
    path = os.pathsep.join(filter(None, [str(SERVERS), os.environ.get("PYTHONPATH")]))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": path, "TRACE_FILE": str(trace_file)},
            "worker_process_setup_hook": "span_files.install",
        },
    )
    try:
        yield trace_file
    finally:
        ray.shutdown()


@pytest.mark.anyio
async def test_items_run_on_ray_actors_join_the_batch_trace(
    traced_ray: Path, spans: SpanRecords
) -> None:
    spans.files.append(traced_ray)
    agent = Agent.from_config({"model": "test:echo", "name": "ray-agent"})
    items = [{"n": n} for n in range(4)]
    results = [r async for r in agent.run_batch(items, "Item {n}", engine=RayEngine(concurrency=2))]
    assert {r.status for r in results} == {"ok"}

    (batch,) = spans.named("batch")
    assert batch["attributes"]["doc_processing.batch.engine"] == "RayEngine"
    item_spans = spans.named("batch_item")
    assert len(item_spans) == 4
    assert {s["parent_id"] for s in item_spans} == {batch["span_id"]}
    assert all(s.get("process") not in (None, os.getpid()) for s in item_spans)
    runs = spans.named("invoke_agent ray-agent")
    assert sorted(r["parent_id"] for r in runs) == sorted(s["span_id"] for s in item_spans)
    assert {r["trace_id"] for r in [batch, *item_spans, *runs]} == {batch["trace_id"]}
