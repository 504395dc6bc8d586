"""What a batch needs of an agent (`BatchAgent`), so that the batch package never imports
the agent: `Agent` satisfies this protocol, and `Agent.run_batch` hands itself in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..messages import Message
    from ..result import RunResult

__all__ = ["AgentFactory", "BatchAgent"]


class BatchAgent(Protocol):
    """The calls a batch engine makes on an agent."""

    async def connect(self) -> list[str]:
        """Open the sessions of the servers not yet connected; the warnings."""
        ...

    async def run(self, prompt: str, message_history: Sequence[Message] | None = None) -> RunResult:
        """One run of the agent on `prompt`."""
        ...

    async def aclose(self) -> None:
        """Close the sessions the agent opened."""
        ...

    def replica_factory(self) -> AgentFactory:
        """A picklable function that builds an agent like this one in another process
        (what a Ray actor runs to get its own agent).

        Raises:
            ConfigError: the agent cannot be rebuilt elsewhere (it was not built from a
                configuration).
        """
        ...


AgentFactory = Callable[[], BatchAgent]
"""Builds the agent of one worker (a Ray actor); pickled and sent to every worker."""
