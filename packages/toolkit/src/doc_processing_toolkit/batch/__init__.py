"""Batch runs: one prompt template over many documents or records, with nothing lost.

`Agent.run_batch` (and `Agent.run_batch_sync`) run a batch; ``dpt-agent batch`` does
the same from the command line with a results file, progress and a summary.

Data flow: items (paths, mappings) -> `BatchItem` (stable id) -> `Job` (prompt filled
from `PromptTemplate`) -> an engine (`LocalEngine` in this process, `RayEngine` on an actor
pool) -> `ItemResult` per item, as each finishes -> the `ResultsFile` (the driver alone
writes it) -> the caller.

The package knows the agent only through `BatchAgent` (the calls an engine makes on it), so
the imports run one way: the agent imports the batch package, never the reverse.
"""

from .control import BatchControl, Engine
from .items import BatchItem, ItemSource, Job, PromptTemplate, open_input
from .local import LocalEngine
from .output import ResultsFile
from .progress import PlainProgress, Progress, RichProgress, make_progress
from .protocol import AgentFactory, BatchAgent
from .results import BatchSummary, ItemResult, ItemStatus, ToolCallSummary
from .runner import BatchInput, make_engine
from .worker import PauseGate, RetryPolicy

__all__ = [
    "AgentFactory",
    "BatchAgent",
    "BatchControl",
    "BatchInput",
    "BatchItem",
    "BatchSummary",
    "Engine",
    "ItemResult",
    "ItemSource",
    "ItemStatus",
    "Job",
    "LocalEngine",
    "PauseGate",
    "PlainProgress",
    "Progress",
    "PromptTemplate",
    "ResultsFile",
    "RetryPolicy",
    "RichProgress",
    "ToolCallSummary",
    "make_engine",
    "make_progress",
    "open_input",
]


def __getattr__(name: str) -> object:
    """`RayEngine`, imported on first access (Ray itself only when a batch runs)."""
    if name == "RayEngine":
        from .ray_engine import RayEngine

        return RayEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
