"""Where a string used to switch, a type decides (issue 33): the skills source is a
`SkillSource` whose differences are one entry of `SourceTraits` each, and the model
providers are one table (`models.providers.PROVIDERS`) that the adapters read too."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import doc_processing_toolkit
from doc_processing_toolkit.models import Model, infer_provider, resolve_model
from doc_processing_toolkit.models.providers import PROVIDERS
from doc_processing_toolkit.skills import SkillSource
from doc_processing_toolkit.skills.entries import SourceTraits

PACKAGE = Path(doc_processing_toolkit.__file__).parent


def string_switches(words: set[str], about: tuple[str, ...]) -> list[str]:
    """Every comparison in the package of something named like `about` (``source``,
    ``outcome.source`` ...) with one of `words` as a string literal."""
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            literal = any(isinstance(side, ast.Constant) and side.value in words for side in sides)
            named = any(
                ast.unparse(side).rsplit(".", 1)[-1] in about
                for side in sides
                if not isinstance(side, ast.Constant)
            )
            if literal and named:
                where = path.relative_to(PACKAGE)
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_switches_on_a_skills_source_name() -> None:
    assert string_switches({"tools", "extension"}, ("source", "kind")) == []


def test_no_module_switches_on_a_provider_name() -> None:
    assert string_switches(set(PROVIDERS), ("provider", "name", "_PROVIDER")) == []


def test_every_skills_source_has_its_traits() -> None:
    for source in SkillSource:
        assert isinstance(source.traits, SourceTraits)
        assert source == source.value  # reported as its name, as before
    guides = {source.traits.guide_for("'acme'") for source in SkillSource}
    assert len(guides) == len(SkillSource)
    assert "'acme'" in SkillSource.EXTENSION.traits.guide_for("'acme'")


def test_the_sources_differ_as_their_traits_say() -> None:
    tools, extension = SkillSource.TOOLS.traits, SkillSource.EXTENSION.traits
    assert (tools.searches, tools.by_uri, tools.held) == (True, False, False)
    assert (extension.searches, extension.by_uri, extension.held) == (False, True, True)
    assert "load_skill" in tools.hidden_when_empty
    assert extension.hidden_when_empty == frozenset()


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_every_provider_of_the_table_has_its_adapter(name: str) -> None:
    provider = PROVIDERS[name]
    module = importlib.import_module(f"doc_processing_toolkit.models.{name}")
    adapter = getattr(module, provider.adapter)
    assert isinstance(adapter, type)
    if provider.sdk is not None:
        assert adapter._spec is provider
        assert provider.key_env and provider.base_url_env
    for bare in provider.names:
        assert infer_provider(bare) == name
    options = {} if provider.sdk is None else {"api_key": "k"}
    model = resolve_model(f"{name}:some-model", **options)
    assert isinstance(model, adapter)
    assert isinstance(model, Model)
    assert model.name == f"{name}:some-model"
