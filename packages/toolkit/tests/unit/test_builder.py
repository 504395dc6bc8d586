"""AgentBuilder: one fluent method per Agent argument, same result as the constructor."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, AgentBuilder, ConfigError, TestModel
from doc_processing_toolkit.config import AgentConfig


def test_every_agent_argument_has_a_builder_method() -> None:
    arguments = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    for name in arguments:
        method = getattr(AgentBuilder, name, None)
        assert callable(method), f"AgentBuilder has no method {name}()"
        # Each setter returns the builder itself (typed Self), so calls chain.
        assert inspect.signature(method).return_annotation == "Self"
        builder = AgentBuilder()
        if name not in ("tools",):
            assert getattr(builder, name)(None) is builder


def test_agent_builder_returns_a_builder() -> None:
    assert isinstance(Agent.builder(), AgentBuilder)


def test_building_gives_the_same_agent_as_the_constructor(
    make_server: Callable[..., MCPServer],
) -> None:
    model = TestModel()
    server = make_server()

    def helper() -> str:
        """Help."""
        return "h"

    values: dict[str, Any] = {
        "model": model,
        "instructions": "Be brief.",
        "tools": [server, helper],
        "auto_inject_skills": False,
        "provider_kwargs": {"temperature": 0},
        "max_turns": 4,
        "model_options": None,
        "tool_timeout": 3.0,
        "skills_timeout": 1.5,
        "connect_timeout": 8.0,
        "skills_catalog_budget": 4000,
        "skills_stale_after": 60.0,
        "notify_unavailable_servers": False,
        "approval": {"tools": ["add"], "policy": "deny"},
        "skills_lock": None,
        "skills_include": ["pdf-*", "invoice-*"],
        "skills_exclude": ["pdf-legacy"],
        "name": "built",
    }
    # One declaration: the constructor's keywords and the builder's methods are the
    # fields of AgentConfig, in its order.
    parameters = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    assert parameters == list(AgentConfig.model_fields) == list(values)
    assert all(callable(getattr(AgentBuilder, key, None)) for key in AgentConfig.model_fields)
    builder = Agent.builder()
    for key, value in values.items():
        builder = getattr(builder, key)(value)
    built, constructed = builder.build(), Agent(**values)
    assert built.settings.values == constructed.settings.values
    assert built.approval == constructed.approval
    assert built.model is constructed.model is model
    assert [(s.name, s.route) for s in built.servers] == [
        (s.name, s.route) for s in constructed.servers
    ]


def test_add_tool_appends_and_defaults_stay() -> None:
    def one() -> str:
        """One."""
        return "1"

    def two() -> str:
        """Two."""
        return "2"

    agent = AgentBuilder().model("test").add_tool(one).add_tool(two).build()
    assert agent.servers[0].target.tools[1].name == "two"
    values = agent.settings.values
    assert (values.max_turns, values.auto_inject_skills, values.tool_timeout) == (20, True, 120.0)
    switched_off = AgentBuilder().auto_inject_skills(False).build()
    assert switched_off.settings.values.auto_inject_skills is False


def test_build_validates_like_the_constructor() -> None:
    with pytest.raises(ConfigError, match="max_turns"):
        AgentBuilder().max_turns(0).build()
