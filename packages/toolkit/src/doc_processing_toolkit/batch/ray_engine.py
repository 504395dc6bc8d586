"""The Ray engine: a pool of actors, each with its own `Agent`, fed by the driver.

Without an address it starts Ray on this machine (``ray.init``, one CPU per core unless
`RayEngine.num_cpus` says otherwise); with one it joins that cluster. When Ray is already
initialised in this process, it is used as it is.

Each actor builds an agent from the same configuration (the driver's agent must come from
`Agent.from_yaml` / `Agent.from_config`, or an `agent_factory` is given; see
`BatchAgent.replica_factory`), connects its
servers once, and runs up to `per_actor` items at a time (async actor methods on one event
loop, sharing the actor's sessions). The driver alone reads the jobs, writes results and
shows progress; each result comes back as a small JSON-compatible dict.

An actor that dies (killed, out of memory, its node lost) fails the calls it was running
with a `RayActorError`. Those items are put back at the front of the queue, and the actor
is replaced by a new one (at most `max_replacements` times in a batch). An item whose actor
died `item_max_deaths` times while running it is recorded as failed instead, so that a
document that crashes every worker cannot take the whole pool down. A result is written
only when it arrives, so every item ends up in the output exactly once.

Ray is imported only when this engine runs; without it the error names the extra to
install.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import math
import os
from collections import deque
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BatchError, ConfigError, MissingDependencyError
from .control import BatchControl, interrupted
from .items import Job
from .results import ItemResult, describe_cause
from .worker import PauseGate, RetryPolicy, run_job

if TYPE_CHECKING:
    from .protocol import AgentFactory, BatchAgent

__all__ = ["BatchWorker", "RayEngine"]

logger = logging.getLogger(__name__)


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise MissingDependencyError(
            'the ray batch engine needs Ray: pip install "doc-processing-toolkit[ray]" '
            "(on the driver and on every node of the cluster)."
        ) from None


class BatchWorker:
    """What each Ray actor runs: one agent, connected once, running jobs concurrently.

    Plain Python: `RayEngine` wraps it with ``ray.remote``.
    """

    def __init__(self, factory: AgentFactory, retry: RetryPolicy) -> None:
        self._factory = factory
        self._retry = retry
        self._gate = PauseGate()
        self._agent: BatchAgent | None = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> BatchAgent:
        async with self._lock:
            if self._agent is None:
                agent = self._factory()
                await agent.connect()
                self._agent = agent
            return self._agent

    async def start(self) -> None:
        """Build the agent and connect its servers.

        Raises:
            ToolkitError: the agent could not be built or a required server not reached.
        """
        await self._ready()

    async def run(self, job: Job) -> dict[str, Any]:
        """Run one job; its result as `ItemResult.to_json` gives it."""
        agent = await self._ready()
        result = await run_job(agent, job, self._retry, self._gate)
        return result.to_json()

    async def stop(self) -> None:
        """Close the agent's sessions."""
        if self._agent is not None:
            await self._agent.aclose()
            self._agent = None


@dataclass(eq=False)
class _Slot:
    """One place in the pool: its current actor and how many jobs it runs."""

    index: int
    handle: Any
    generation: int = 0
    load: int = 0


@dataclass(eq=False)
class RayEngine:
    """Run a batch on a Ray cluster (or a Ray started on this machine).

    Attributes:
        address: the cluster to join (``ray://host:10001``, ``host:6379`` or ``auto``);
            None starts Ray here, unless this process already initialised it.
        concurrency: items running at once over the whole pool.
        actors: the pool's size; None: one per CPU of the cluster, at most `concurrency`.
        num_cpus: CPUs of a Ray started here (None: all of this machine's).
        actor_cpus: CPUs Ray reserves for each actor.
        actor_options: more ``.options(...)`` of each actor (``runtime_env``,
            ``resources``, ``memory``, ...).
        agent_factory: builds each actor's agent; None: rebuilt from the configuration of
            the agent `Agent.run_batch` was called on.
        retry: how rate-limited runs are retried (inside each actor).
        max_replacements: how many dead actors may be replaced in one batch (None: twice
            the pool's size).
        item_max_deaths: after this many actor deaths while running one item, the item
            is recorded as failed instead of being given to another actor.
    """

    address: str | None = None
    concurrency: int = 8
    actors: int | None = None
    num_cpus: int | None = None
    actor_cpus: float = 1.0
    actor_options: Mapping[str, Any] = field(default_factory=dict)
    agent_factory: AgentFactory | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_replacements: int | None = None
    item_max_deaths: int = 2
    _slots: list[_Slot] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}.")
        if self.actors is not None and self.actors < 1:
            raise ConfigError(f"actors must be at least 1, got {self.actors}.")

    @property
    def handles(self) -> list[Any]:
        """The actors of the running batch (empty before and after it)."""
        return [slot.handle for slot in self._slots]

    async def results(
        self, agent: BatchAgent, jobs: Iterator[Job | ItemResult], control: BatchControl
    ) -> AsyncGenerator[ItemResult, None]:
        """Run `jobs` on the actor pool; yield each result as it arrives."""
        factory = self.agent_factory or agent.replica_factory()
        ray = _import_ray()
        started_ray = False
        if not ray.is_initialized():
            if self.address is not None:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(
                    num_cpus=self.num_cpus or os.cpu_count() or 1,
                    include_dashboard=False,
                    log_to_driver=False,
                )
            started_ray = True
        pool: _Pool | None = None
        try:
            pool = _Pool(self, ray, factory)
            await pool.start()
            async with contextlib.aclosing(pool.run(jobs, control)) as results:
                async for result in results:
                    yield result
        finally:
            if pool is not None:
                await pool.close()
            if started_ray:
                ray.shutdown()


class _Pool:
    """The actors of one batch and the jobs in flight on them."""

    def __init__(self, engine: RayEngine, ray: Any, factory: AgentFactory) -> None:
        self._engine = engine
        self._ray = ray
        self._factory = factory
        cpus = int(ray.cluster_resources().get("CPU", 1) // max(engine.actor_cpus, 0.01))
        size = engine.actors or max(1, min(engine.concurrency, cpus))
        self._size = size
        self._per_actor = math.ceil(engine.concurrency / size)
        self._replacements_left = (
            engine.max_replacements if engine.max_replacements is not None else 2 * size
        )
        self._remote = ray.remote(BatchWorker)
        engine._slots = self._slots = [_Slot(i, self._new_actor()) for i in range(size)]
        self._deaths: dict[str, int] = {}

    def _new_actor(self) -> Any:
        options: dict[str, Any] = {
            "num_cpus": self._engine.actor_cpus,
            "max_concurrency": self._per_actor + 2,
            **self._engine.actor_options,
        }
        return self._remote.options(**options).remote(self._factory, self._engine.retry)

    async def start(self) -> None:
        """Wait until every actor has built its agent and connected its servers.

        Raises:
            BatchError: an actor could not (its error is quoted).
        """
        try:
            await asyncio.gather(*(slot.handle.start.remote() for slot in self._slots))
        except self._ray.exceptions.RayError as exc:
            raise BatchError(f"a Ray actor could not start its agent: {_ray_cause(exc)}") from exc
        logger.info("ray: %d actors, %d items each at a time", self._size, self._per_actor)

    async def run(
        self, jobs: Iterator[Job | ItemResult], control: BatchControl
    ) -> AsyncGenerator[ItemResult, None]:
        ray = self._ray
        again: deque[Job] = deque()
        in_flight: dict[asyncio.Future[Any], tuple[_Slot, int, Job, Any]] = {}
        exhausted = False
        try:
            while True:
                while not control.stopping and (again or not exhausted):
                    slot = min(self._slots, key=lambda s: s.load)
                    if slot.load >= self._per_actor:
                        break
                    job = again.popleft() if again else next(jobs, None)
                    if job is None:
                        exhausted = True
                        break
                    if isinstance(job, ItemResult):
                        yield job
                        continue
                    ref = slot.handle.run.remote(job)
                    in_flight[asyncio.wrap_future(ref.future())] = (
                        slot,
                        slot.generation,
                        job,
                        ref,
                    )
                    slot.load += 1
                if not in_flight:
                    return
                done: set[asyncio.Future[Any]] = set()
                with control.running():
                    done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                if control.cancelled and not done:
                    for _slot, _generation, job, ref in in_flight.values():
                        ray.cancel(ref)
                        yield interrupted(job)
                    in_flight.clear()
                    return
                for future in done:
                    slot, generation, job, _ref = in_flight.pop(future)
                    slot.load -= 1
                    try:
                        yield ItemResult.from_json(future.result())
                    except ray.exceptions.RayActorError as exc:
                        failed = self._actor_died(slot, generation, job, exc)
                        if failed is None:
                            again.append(job)
                        else:
                            yield failed
                    except ray.exceptions.RayError as exc:
                        yield ItemResult.failed(job.item, _ray_cause(exc), cause=type(exc).__name__)
        finally:
            for future in in_flight:
                future.cancel()

    def _actor_died(
        self, slot: _Slot, generation: int, job: Job, error: Exception
    ) -> ItemResult | None:
        """Replace the slot's actor (once per death) and decide the job's fate: None to
        run it again elsewhere, or its failed result."""
        if slot.generation == generation:
            if self._replacements_left <= 0:
                raise BatchError(
                    "Ray actors keep dying (the replacements allowed for this batch are used "
                    f"up); last cause: {_ray_cause(error)}. Check the workers' memory and "
                    "logs, then run the batch again with --resume."
                )
            self._replacements_left -= 1
            logger.warning(
                "ray actor %d died (%s); starting a replacement", slot.index, _ray_cause(error)
            )
            slot.handle = self._new_actor()
            slot.generation += 1
        deaths = self._deaths[job.item.id] = self._deaths.get(job.item.id, 0) + 1
        if deaths < self._engine.item_max_deaths:
            return None
        return ItemResult.failed(
            job.item,
            f"the Ray actor running this item died {deaths} times (last cause: "
            f"{_ray_cause(error)}); the item may exhaust a worker's memory",
            cause="actor died",
            attempts=deaths,
        )

    async def close(self) -> None:
        """Close each actor's sessions (briefly), then end the actors."""
        slots, self._engine._slots = self._slots, []
        stops = [slot.handle.stop.remote() for slot in slots]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*stops, return_exceptions=True), timeout=10)
        for slot in slots:
            with contextlib.suppress(Exception):
                self._ray.kill(slot.handle)


def _ray_cause(error: BaseException) -> str:
    """The first line of a Ray error (they carry long tracebacks)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        return f"{describe_cause(cause)}: {cause}"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
