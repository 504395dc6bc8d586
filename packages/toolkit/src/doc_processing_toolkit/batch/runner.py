"""The driver of a batch: items -> jobs (prompt filled, resumed and duplicate items
answered at once) -> an engine -> one result per item, each written to the results file
(by the driver alone) before it is yielded.

`run_batch` is what `Agent.run_batch` returns; `iterate_sync` is `Agent.run_batch_sync`'s
way of handing its results to code without an event loop.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from .._tracing import BatchTrace
from ..errors import BatchError, TemplateFieldError
from .control import BatchControl, Engine
from .items import BatchItem, ItemSource, Job, PromptTemplate
from .local import LocalEngine
from .output import ResultsFile
from .results import ItemResult
from .worker import RetryPolicy

if TYPE_CHECKING:
    from .._loop_thread import LoopThread
    from .protocol import BatchAgent

__all__ = ["BatchInput", "iterate_sync", "make_engine", "run_batch"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

BatchInput = Iterable[str | os.PathLike[str] | Mapping[str, Any] | BatchItem]
"""What a batch runs over: paths, mappings of fields, or ready `BatchItem`s."""

#: Skipped results with these causes are not written: the file already holds the item's
#: line (already done), or the same item comes again in the input (duplicate).
_NOT_WRITTEN = frozenset({"already-done", "duplicate"})


def make_engine(
    engine: Literal["local", "ray"] | Engine,
    *,
    concurrency: int,
    retry: RetryPolicy | None,
    ray_address: str | None,
) -> Engine:
    """The engine a name stands for (an `Engine` is returned unchanged).

    ``"ray"`` makes a `RayEngine` running `concurrency` items at a time in all, spread
    over one actor per CPU of the cluster (at most `concurrency` actors).

    Raises:
        ConfigError: `concurrency` is below 1.
        BatchError: the name is unknown.
        MissingDependencyError: ``"ray"`` without the ``ray`` extra installed.
    """
    policy = retry or RetryPolicy()
    if engine == "local":
        return LocalEngine(concurrency=concurrency, retry=policy)
    if engine == "ray":
        from .ray_engine import RayEngine

        return RayEngine(address=ray_address, concurrency=concurrency, retry=policy)
    if isinstance(engine, str):
        raise BatchError(f"unknown batch engine {engine!r}; use 'local' or 'ray'.")
    return engine


async def run_batch(
    agent: BatchAgent,
    items: BatchInput,
    prompt: str,
    *,
    engine: Engine,
    output: str | os.PathLike[str] | None = None,
    resume: bool = False,
    force: bool = False,
    control: BatchControl | None = None,
) -> AsyncGenerator[ItemResult, None]:
    """Run `prompt` (a template, see `PromptTemplate`) on every item; yield one result
    per item as it finishes. See `Agent.run_batch`.

    Raises:
        BatchError: the template is malformed, `resume` is asked without `output`, or the
            output file cannot be used (before any item runs; see `ResultsFile.open`).
    """
    template = PromptTemplate(prompt)
    if resume and output is None:
        raise BatchError("resume needs an output file: the results of earlier runs live there.")
    results_file = ResultsFile(output, resume=resume, force=force) if output is not None else None
    done = results_file.open(inputs=_input_files(items)) if results_file is not None else set()
    if done:
        logger.info("resuming: %d items already recorded as ok", len(done))
    batch = BatchTrace(type(engine).__name__, os.fspath(output) if output is not None else None)
    count = 0
    try:
        jobs = _jobs(items, template, done, batch.carrier)
        async with aclosing(engine.results(agent, jobs, control or BatchControl())) as results:
            async for result in results:
                if results_file is not None and result.cause not in _NOT_WRITTEN:
                    results_file.write(result)
                count += 1
                yield result
    except BaseException as exc:
        batch.end(count, exc)
        raise
    else:
        batch.end(count)
    finally:
        if results_file is not None:
            results_file.close()


def _input_files(items: BatchInput) -> list[str | os.PathLike[str]]:
    """The files `items` are known up front to come from: an `ItemSource`'s files, the
    paths of a list or tuple (an iterator is not read ahead)."""
    if isinstance(items, ItemSource):
        return list(items.files())
    if not isinstance(items, list | tuple):
        return []
    files: list[str | os.PathLike[str]] = []
    for value in items:
        if isinstance(value, str | os.PathLike):
            files.append(value)
        elif isinstance(value, BatchItem) and isinstance(value.fields.get("path"), str):
            files.append(value.fields["path"])
        elif isinstance(value, Mapping) and isinstance(value.get("path"), str):
            files.append(value["path"])
    return files


def _jobs(
    items: BatchInput,
    template: PromptTemplate,
    done: set[str],
    trace: tuple[tuple[str, str], ...] = (),
) -> Iterator[Job | ItemResult]:
    """Each item as a job to run (carrying the batch span's context `trace`), or as its
    result when it needs no run (already done, seen before, unusable, or missing a
    template field)."""
    seen: set[str] = set()
    for value in items:
        item = value if isinstance(value, BatchItem) else BatchItem.of(value)
        if item.id in seen:
            logger.warning("item %s appears twice in the input; the second one is skipped", item.id)
            yield ItemResult.failed(
                item, "the same item came earlier in the input", cause="duplicate", status="skipped"
            )
            continue
        seen.add(item.id)
        if item.id in done:
            yield ItemResult(id=item.id, item=item.source, status="skipped", cause="already-done")
        elif item.error is not None:
            yield ItemResult.failed(item, item.error, cause="invalid item")
        else:
            try:
                yield Job(item, template.render(item.fields), trace)
            except TemplateFieldError as exc:
                yield ItemResult.failed(item, exc)


def iterate_sync(loop_thread: LoopThread, make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """The values of the async iterator `make()` returns, iterated by one task in
    `loop_thread` and handed to this thread one at a time (the task runs ahead by at most
    a few values).

    Closing this iterator early (``break``, an exception in the loop body) cancels the
    task and waits for it to end, so that the batch is closed before this returns.
    """
    send, receive = anyio.create_memory_object_stream[tuple[bool, Any]](4)
    ended = threading.Event()

    async def pump() -> None:
        try:
            async with send:
                try:
                    async with aclosing(_as_generator(make())) as values:
                        async for value in values:
                            await send.send((True, value))
                except Exception as exc:
                    await send.send((False, exc))
        finally:
            ended.set()

    future = loop_thread.start(pump)
    try:
        while True:
            try:
                ok, value = loop_thread.call(receive.receive)
            except anyio.EndOfStream:
                return
            if not ok:
                raise value
            yield value
    finally:
        future.cancel()
        if not ended.wait(timeout=60):
            logger.warning("the cancelled batch did not end within 60 s; leaving it")
        receive.close()


async def _as_generator(values: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    # Closing this generator closes `values` too, in the same task: left to the event
    # loop's finaliser, a batch's task group would be exited from another task, which
    # corrupts the loop thread's cancel scopes and stops it.
    try:
        async for value in values:
            yield value
    finally:
        close = getattr(values, "aclose", None)
        if close is not None:
            await close()
