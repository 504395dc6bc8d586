"""Model strings: provider inference, "provider:model", and importing without the SDKs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from doc_processing_toolkit.errors import ConfigError
from doc_processing_toolkit.models import Model, TestModel, infer_provider, resolve_model
from doc_processing_toolkit.models.anthropic import AnthropicModel
from doc_processing_toolkit.models.openai import OpenAIModel


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("claude-sonnet-5", "anthropic"),
        ("claude-3-5-haiku-latest", "anthropic"),
        ("Claude-Opus-4", "anthropic"),
        ("gpt-5", "openai"),
        ("gpt-4o-mini", "openai"),
        ("o1", "openai"),
        ("o1-mini", "openai"),
        ("o3", "openai"),
        ("o3-mini", "openai"),
        ("o4-mini", "openai"),
        ("test", "test"),
    ],
)
def test_bare_names_infer_their_provider(name: str, provider: str) -> None:
    assert infer_provider(name) == provider


@pytest.mark.parametrize("name", ["llama3.1", "mistral-large", "gemini-2.5-pro", "o2-x"])
def test_a_name_of_no_known_family_asks_for_a_provider_prefix(name: str) -> None:
    with pytest.raises(ConfigError, match="'provider:model'"):
        resolve_model(name)


def test_bare_names_resolve_to_their_provider_model() -> None:
    anthropic_model = resolve_model("claude-sonnet-5", api_key="k")
    openai_model = resolve_model("gpt-5", api_key="k")
    assert isinstance(anthropic_model, AnthropicModel)
    assert anthropic_model.name == "anthropic:claude-sonnet-5"
    assert isinstance(openai_model, OpenAIModel)
    assert openai_model.name == "openai:gpt-5"
    assert isinstance(anthropic_model, Model)
    assert isinstance(openai_model, Model)


def test_a_provider_prefix_wins_over_inference() -> None:
    model = resolve_model("openai:claude-lookalike", api_key="k")
    assert isinstance(model, OpenAIModel)
    assert model.model_name == "claude-lookalike"
    assert resolve_model(" Anthropic:claude-x ", api_key="k").name == "anthropic:claude-x"


def test_the_test_provider_needs_no_key_or_sdk() -> None:
    assert resolve_model("test").name == "test:model"
    assert resolve_model("test:demo").name == "test:demo"
    assert isinstance(resolve_model("test:demo"), TestModel)


def test_a_model_instance_is_returned_unchanged() -> None:
    model = TestModel()
    assert resolve_model(model) is model
    with pytest.raises(ConfigError, match="model options"):
        resolve_model(model, api_key="k")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mistral:large", "unknown model provider 'mistral'"),
        ("openai:", "names no model"),
        ("anthropic:  ", "names no model"),
        ("", "model is empty"),
        ("   ", "model is empty"),
    ],
)
def test_bad_model_strings_are_clear_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_model(spec)


def test_the_provider_classes_are_reachable_from_the_models_package() -> None:
    from doc_processing_toolkit import models

    assert models.AnthropicModel is AnthropicModel
    assert models.OpenAIModel is OpenAIModel
    with pytest.raises(AttributeError, match="GeminiModel"):
        _ = models.GeminiModel


def test_the_package_imports_without_either_provider_sdk() -> None:
    code = (
        "import sys\n"
        "sys.modules['anthropic'] = None\n"
        "sys.modules['openai'] = None\n"
        "import doc_processing_toolkit\n"
        "from doc_processing_toolkit.models import resolve_model\n"
        "print(resolve_model('test').name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "test:model"


def test_importing_the_package_loads_no_provider_sdk() -> None:
    code = (
        "import sys\n"
        "import doc_processing_toolkit, doc_processing_toolkit.models\n"
        "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
