"""One eval run: the agent runs a query until the answer is known, and what it loaded.

A run is followed through `Agent.run_stream` and stops at the first of:

- a `ToolCallEvent` that loads a skill (the call does not run: the model's choice is the
  answer, and nothing after it is paid for);
- the final reply (no skill was loaded);
- ``max_turns`` reached while the model kept calling other tools (no skill was loaded).

A call loads a skill when it is, on the skills server, ``load_skill`` with the skill's
name (std-tools' tools) or the URI of its SKILL.md (an extension server), or
``load_skill_resource`` of its SKILL.md; or, on any server, a call whose arguments name
the skill's SKILL.md path (a file tool reading it).

`TriggerProbe` puts this behind the calls a batch engine makes on an agent
(`batch.BatchAgent`), so evals run on the local engine or on Ray, with the batch's retries,
results file and resume. Its `RunResult.output` is the run's `Verdict` as JSON.
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import MaxTurnsExceededError
from ..events import FinalResultEvent, RunStartEvent, ToolCallEvent, ToolResultEvent
from ..messages import Message, Usage
from ..result import RunResult, ToolCallRecord
from ..skills import SkillsOutcome

if TYPE_CHECKING:
    from ..agent import Agent
    from ..batch.protocol import AgentFactory

__all__ = ["Stopped", "TriggerProbe", "Verdict", "loaded_skill", "probe_run"]

Stopped = Literal["loaded", "answered", "max_turns"]
_SKILL_FILE = "SKILL.md"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one run of a query came to.

    Attributes:
        loaded: the skill the model loaded, or None.
        via: how: ``load_skill``, ``load_skill_resource`` or ``file`` (its SKILL.md read
            by another tool); None when nothing was loaded.
        stopped: why the run ended: ``loaded`` (stopped at the loading call), ``answered``
            (a final reply) or ``max_turns``.
    """

    loaded: str | None
    via: str | None
    stopped: Stopped

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON data (what `TriggerProbe` puts in the run's output)."""
        return {"loaded": self.loaded, "via": self.via, "stopped": self.stopped}

    @classmethod
    def from_json(cls, data: Any) -> Verdict:
        """A verdict back from `to_json` (or its JSON text).

        Raises:
            ValueError: `data` is not a verdict.
        """
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict) or data.get("stopped") not in (
            "loaded",
            "answered",
            "max_turns",
        ):
            raise ValueError(f"not an eval verdict: {str(data)[:80]!r}")
        loaded, via = data.get("loaded"), data.get("via")
        return cls(
            loaded if isinstance(loaded, str) else None,
            via if isinstance(via, str) else None,
            data["stopped"],
        )


def _named_skill(arguments: Mapping[str, Any], outcome: SkillsOutcome) -> str | None:
    """The skill a ``load_skill`` call names: ``skill_name`` (or ``name``), or the URI
    of a skill's SKILL.md on an extension server."""
    for key in ("skill_name", "name"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return _skill_at(arguments.get("uri"), outcome)


def _skill_at(uri: object, outcome: SkillsOutcome) -> str | None:
    """The name of the skill of `outcome` whose SKILL.md has the URI `uri`, if any."""
    if isinstance(uri, str):
        for entry in outcome.skills:
            if entry.uri == uri:
                return entry.name
    return None


def _resource_skill(arguments: Mapping[str, Any], outcome: SkillsOutcome) -> str | None:
    """The skill whose SKILL.md a ``load_skill_resource`` call reads, if it reads one."""
    path = arguments.get("resource_path")
    name = arguments.get("skill_name")
    if isinstance(path, str) and isinstance(name, str):
        return name if posixpath.normpath(path.strip()) == _SKILL_FILE else None
    return _skill_at(arguments.get("uri"), outcome)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def _file_skill(arguments: Mapping[str, Any], outcome: SkillsOutcome) -> str | None:
    """The skill whose SKILL.md a file tool's arguments name: the catalog's ``path``
    itself, or a relative path that ends it (``invoice-extraction/SKILL.md``)."""
    for value in arguments.values():
        for text in _strings(value):
            text = text.strip()
            if not text.endswith(_SKILL_FILE) or text.startswith("skill://"):
                continue
            cleaned = posixpath.normpath(text.replace("\\", "/"))
            if "/" not in cleaned:
                continue  # a bare SKILL.md names no skill
            for entry in outcome.skills:
                if entry.path is None:
                    continue
                path = posixpath.normpath(entry.path.replace("\\", "/"))
                if path == cleaned or path.endswith("/" + cleaned.lstrip("./")):
                    return entry.name
    return None


def loaded_skill(event: ToolCallEvent, outcome: SkillsOutcome) -> tuple[str, str] | None:
    """The skill the call of `event` loads and how (``load_skill``,
    ``load_skill_resource`` or ``file``), or None when it loads none; `outcome` is the
    run's skills step (its server and the skills known)."""
    arguments = event.call.arguments
    if outcome.server is not None and event.server == outcome.server:
        if event.server_tool == "load_skill":
            name = _named_skill(arguments, outcome)
            return (name, "load_skill") if name else None
        if event.server_tool == "load_skill_resource":
            name = _resource_skill(arguments, outcome)
            return (name, "load_skill_resource") if name else None
    name = _file_skill(arguments, outcome)
    return (name, "file") if name else None


async def probe_run(agent: Agent, query: str) -> RunResult:
    """Run `agent` on `query` until the answer is known (see the module docstring); the
    result's `output` is the `Verdict` as JSON, its usage what the run cost, its tool
    calls those that ran before the answer was known.

    Raises:
        ToolkitError: the run failed (a provider error, a server that could not be
            reached); `max_turns` is not a failure here.
    """
    outcome = SkillsOutcome(status="disabled")
    records: list[ToolCallRecord] = []
    warnings: tuple[str, ...] = ()
    messages: list[Message] = [Message.user(query)]
    usage = Usage()
    model_name = ""
    verdict: Verdict | None = None
    events = agent.run_stream(query)
    try:
        try:
            async for event in events:
                if isinstance(event, RunStartEvent):
                    outcome, warnings = event.skills, event.warnings
                elif isinstance(event, ToolCallEvent):
                    usage = event.usage
                    found = loaded_skill(event, outcome)
                    if found is not None:
                        verdict = Verdict(found[0], found[1], "loaded")
                        break
                elif isinstance(event, ToolResultEvent):
                    records.append(event.record)
                elif isinstance(event, FinalResultEvent):
                    result = event.result
                    usage, messages = result.usage, result.messages
                    records, model_name = list(result.tool_calls), result.model_name
                    verdict = Verdict(None, None, "answered")
        finally:
            # Leaving at a loading call closes the run there: that call never runs.
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
    except MaxTurnsExceededError:
        verdict = Verdict(None, None, "max_turns")
    assert verdict is not None
    return RunResult(
        output=json.dumps(verdict.to_json()),
        messages=messages,
        tool_calls=records,
        usage=usage,
        warnings=list(warnings),
        skills=outcome,
        model_name=model_name or agent.model.name,
    )


class TriggerProbe:
    """An agent as a batch engine sees it (`batch.BatchAgent`), whose runs are eval runs
    (`probe_run`).

    Args:
        agent: the agent under evaluation.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def connect(self) -> list[str]:
        """Open the agent's sessions; the warnings."""
        return await self.agent.connect()

    async def run(self, prompt: str, message_history: Sequence[Message] | None = None) -> RunResult:
        """One eval run of `prompt` (the history is not used: each query starts afresh)."""
        return await probe_run(self.agent, prompt)

    async def aclose(self) -> None:
        """Close the agent's sessions."""
        await self.agent.aclose()

    def replica_factory(self) -> AgentFactory:
        """Builds a probe around an agent like this one in another process (a Ray actor).

        Raises:
            ConfigError: the agent was not built from a configuration.
        """
        return functools.partial(_replica, self.agent.replica_factory())


def _replica(factory: Any) -> TriggerProbe:
    return TriggerProbe(factory())
