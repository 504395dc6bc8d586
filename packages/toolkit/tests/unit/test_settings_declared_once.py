"""The agent's settings are declared once (AgentConfig); the constructor, the builder, the
YAML loader and the documentation tables follow that declaration."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from doc_processing_toolkit import Agent, AgentBuilder, ConfigError
from doc_processing_toolkit.config import AgentConfig, load_config_dict

DOCS = Path(__file__).parents[4] / "docs" / "toolkit"
FIELDS = list(AgentConfig.model_fields)


def table_keys(page: str, heading: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)


def test_constructor_and_builder_follow_the_declaration() -> None:
    parameters = inspect.signature(Agent.__init__).parameters
    assert [name for name in parameters if name != "self"] == FIELDS
    for name in FIELDS:
        assert callable(getattr(AgentBuilder, name)), name
        default = AgentConfig.model_fields[name].default
        if name not in ("model", "tools", "provider_kwargs", "model_options", "approval"):
            assert parameters[name].default == default, name


def test_the_documentation_tables_list_every_setting() -> None:
    assert table_keys("agent.md", "## Constructor arguments") == FIELDS
    assert sorted(table_keys("yaml-configuration.md", "## Top-level keys")) == sorted(FIELDS)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_turns", 0, "max_turns: Input should be greater than or equal to 1"),
        ("skills_timeout", -1, "skills_timeout: Input should be greater than 0"),
        ("notify_unavailable_servers", "maybe", "notify_unavailable_servers: Input should be"),
    ],
)
def test_the_constructor_and_yaml_refuse_a_value_with_the_same_words(
    key: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError) as constructed:
        Agent(**{key: value})  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as loaded:
        load_config_dict({key: value})
    assert message in str(constructed.value)
    assert message in str(loaded.value)
