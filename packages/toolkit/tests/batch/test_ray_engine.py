"""The Ray engine on a real local Ray (2 CPUs): an actor pool fed by the driver, one actor
killed with ray.kill mid-batch, every item in the output exactly once."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent
from doc_processing_toolkit.errors import BatchError

ray = pytest.importorskip("ray", reason='Ray is needed: pip install "doc-processing-toolkit[ray]"')

from doc_processing_toolkit.batch.ray_engine import RayEngine  # noqa: E402


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A Ray started here with 2 CPUs, shared by this module's tests."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.anyio
async def test_an_actor_killed_mid_batch_loses_nothing_and_duplicates_nothing(
    local_ray: Any,
    chat_stand_in: Any,
    tmp_path: Path,
    read_lines: Callable[[Path], list[dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="doc_processing_toolkit.batch.ray_engine")
    chat_stand_in.delay = 0.1
    agent = Agent.from_config(chat_stand_in.config())
    engine = RayEngine(concurrency=4)
    items = [{"id": n, "customer": f"c{n:02d}"} for n in range(40)]
    output = tmp_path / "results.jsonl"
    results = []
    killed = None
    async for result in agent.run_batch(
        items, "Totals of {customer}", engine=engine, output=output
    ):
        results.append(result)
        if len(results) == 6:
            assert len(engine.handles) == 2  # one actor per CPU
            killed = engine.handles[0]
            ray.kill(killed)
    assert killed is not None
    assert "ray actor 0 died" in caplog.text and "starting a replacement" in caplog.text

    expected = Counter(f"id:{n}" for n in range(40))
    assert Counter(result.id for result in results) == expected
    assert {result.status for result in results} == {"ok"}
    assert {result.answer for result in results} == {
        f"answer to: Totals of c{n:02d}" for n in range(40)
    }
    assert result.run is None  # results cross from the actors as data
    lines = read_lines(output)
    assert Counter(line["id"] for line in lines) == expected
    # The killed actor's unfinished items were asked again elsewhere: more requests than
    # items, and yet one line each.
    assert len(chat_stand_in.prompts()) >= 40
    assert engine.handles == []  # the pool was shut down at the end


@pytest.mark.anyio
async def test_an_agent_that_cannot_start_on_the_actors_stops_the_batch_with_its_cause(
    local_ray: Any, tmp_path: Path
) -> None:
    agent = Agent.from_config(
        {
            "model": "test",
            "tools": [{"type": "mcp_command", "command": str(tmp_path / "no-such-server")}],
        }
    )
    with pytest.raises(BatchError, match=r"could not start its agent.*no-such-server"):
        async for _ in agent.run_batch(["a.txt"], "{path}", engine=RayEngine(concurrency=2)):
            pass
