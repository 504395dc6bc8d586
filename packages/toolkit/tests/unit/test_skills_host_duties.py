"""The duties the MCP Skills extension (SEP-2640) puts on a host, each against real
extension servers in process (tests/servers/extension_peer.py):

- an approval is bound to the server, the skill's URI and its complete digest set, and
  revoked when any digest changes;
- reads are scoped to the skill's origin: a skill of server A never makes the host read
  from server B;
- two servers offering a skill of the same name are never merged silently;
- a skill of up to 512 files and 16 MiB is accepted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import (
    Agent,
    ApprovalDecision,
    ApprovalRequest,
    SkillApprovals,
    TestModel,
)
from doc_processing_toolkit.messages import ModelResponse
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

SERVERS = Path(__file__).parents[1] / "servers"
SKILLS_LOGGER = "doc_processing_toolkit.skills"
_spec = importlib.util.spec_from_file_location("extension_peer", SERVERS / "extension_peer.py")
assert _spec is not None and _spec.loader is not None
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

pytestmark = pytest.mark.anyio
ALPHA = "skill://alpha/SKILL.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def calls_then_answer(*calls: tuple[str, dict[str, Any]]) -> TestModel:
    def script(request: ModelRequest) -> ModelResponse:
        turn = (len(request.messages) - 1) // 2
        if turn < len(calls):
            return tool_call(*calls[turn])
        return reply("done")

    return TestModel(script)


def skill_names(block: str | None) -> list[str]:
    return [
        line.split('"', 2)[1] for line in (block or "").splitlines() if line.startswith("  <skill ")
    ]


async def test_an_approval_is_bound_to_the_complete_digest_set_and_falls_when_one_changes() -> None:
    server, extension = peer.build("first", {"alpha": "The alpha task."})
    other, other_extension = peer.build("second", {"alpha": "The alpha task."})
    asked: list[ApprovalRequest] = []

    def person(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.approve("looked at it")

    approvals = SkillApprovals(person)
    gate = {"tools": ["load_skill"], "policy": approvals}

    async def load_alpha(tools: list[Any]) -> Any:
        model = calls_then_answer(("load_skill", {"uri": ALPHA}))
        async with Agent(model=model, tools=tools, approval=gate) as agent:
            return await agent.run("go")

    first = await load_alpha([server])
    again = await load_alpha([server])
    assert len(asked) == 1  # the second load is approved from memory
    assert asked[0].skill_key == (
        "first",
        ALPHA,
        frozenset(asked[0].skill_files.items()),  # type: ignore[union-attr]
    )
    assert again.approvals[0].approved and "remembered" in again.approvals[0].decided_by
    assert not first.tool_calls[0].is_error and not again.tool_calls[0].is_error
    held = approvals.approved("first", ALPHA)
    assert held is not None and {uri for uri, _ in held} == {ALPHA}

    # Another server with the same URI and the same bytes is another skill: asked again.
    await load_alpha([other])
    assert len(asked) == 2 and asked[1].server == "second"
    assert other_extension.reads == ["alpha"]

    # The skill changes on the first server: its digest changes, the approval is revoked.
    extension.skills["alpha"] = "The alpha task, now different."
    changed = await load_alpha([server])
    assert len(asked) == 3
    assert asked[2].skill_files != asked[0].skill_files
    assert "remembered" not in changed.approvals[0].decided_by
    assert approvals.approved("first", ALPHA) == frozenset(asked[2].skill_files.items())  # type: ignore[union-attr]


async def test_a_skill_of_one_server_never_causes_a_read_on_another() -> None:
    first, first_ext = peer.build("first", {"alpha": "The alpha task."})
    second, second_ext = peer.build("second", {"beta": "The beta task."})
    model = calls_then_answer(
        ("load_skill_resource", {"uri": "skill://beta/SKILL.md"}),
        ("load_skill", {"uri": "skill://beta/SKILL.md"}),
        ("load_skill", {"uri": ALPHA}),
    )
    async with Agent(model=model, tools=[first, second]) as agent:
        result = await agent.run("do the beta task")
    resource, skill, alpha = result.tool_calls
    assert resource.is_error and "server 'first'" in resource.content
    assert skill.is_error and "lists no skill at skill://beta/SKILL.md" in skill.content
    assert not alpha.is_error and 'server="first"' in alpha.content
    # Nothing of the second server was read, nor even listed, by the first's skill.
    assert second_ext.reads == [] and second_ext.list_calls == 0
    assert first_ext.reads == ["alpha"]


async def test_same_named_skills_of_two_servers_are_never_dropped_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, _ = peer.build("first", {"alpha": "From the first server."})
    second, _ = peer.build("second", {"alpha": "From the second server."})
    model = TestModel(lambda request: reply("done"))
    async with Agent(model=model, tools=[first, second]) as agent:
        with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
            result = await agent.run("go")
    assert skill_names(result.skills.prompt_block) == ["alpha"]
    assert 'server="first"' not in (result.skills.prompt_block or "")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'first'" in warnings[0] and "'second'" in warnings[0]
    assert "same name" in warnings[0]


def big_entry(name: str, files: int, total: int) -> dict[str, Any]:
    """A skills/list entry of `files` files holding `total` bytes in all."""
    uri = f"skill://{name}/SKILL.md"
    text = peer.skill_md(name, f"The {name} task.").encode("utf-8")
    resources = [
        {"uri": uri, "digest": "sha256:" + hashlib.sha256(text).hexdigest(), "size": len(text)}
    ]
    rest = total - len(text)
    for index in range(files - 1):
        size = rest // (files - 1) + (1 if index < rest % (files - 1) else 0)
        resources.append(
            {
                "uri": f"skill://{name}/data/{index}.bin",
                "digest": "sha256:" + "0" * 64,
                "size": size,
            }
        )
    return {
        "uri": uri,
        "frontmatter": {"name": name, "description": f"The {name} task."},
        "resources": resources,
    }


async def test_a_skill_of_512_files_and_16_mib_is_accepted_and_one_more_file_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, extension = peer.build("big", {"alpha": "The alpha task."})
    limit = 16 * 1024 * 1024
    extension.extra = [
        big_entry("whole", 512, limit),
        big_entry("too-many", 513, limit - 1),
        big_entry("too-large", 2, limit + 1),
    ]
    model = TestModel(lambda request: reply("done"))
    async with Agent(model=model, tools=[server]) as agent:
        with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
            result = await agent.run("go")
    assert skill_names(result.skills.prompt_block) == ["alpha", "whole"]
    skipped = [r.getMessage() for r in caplog.records if "was left out" in r.getMessage()]
    assert len(skipped) == 2
    assert any("skill://too-many/SKILL.md" in line for line in skipped)
    assert any("skill://too-large/SKILL.md" in line for line in skipped)
