"""Model providers: `resolve_model` turns ``"provider:model"`` or a bare name into a `Model`.

Providers: ``anthropic`` (official anthropic SDK, extra ``[anthropic]``), ``openai``
(official openai SDK, extra ``[openai]``; any OpenAI-compatible server through
``base_url``) and ``test`` (offline, scriptable). Provider modules are imported only when
used, so a missing SDK costs nothing until that provider is asked for; that holds for
``from doc_processing_toolkit.models import AnthropicModel`` (or ``OpenAIModel``) too.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import Model, ModelRequest, TextDelta, ThinkingDelta
from .test import TestModel

if TYPE_CHECKING:
    from .anthropic import AnthropicModel as AnthropicModel
    from .openai import OpenAIModel as OpenAIModel

__all__ = [
    "Model",
    "ModelRequest",
    "TestModel",
    "TextDelta",
    "ThinkingDelta",
    "infer_provider",
    "resolve_model",
]

PROVIDERS = ("anthropic", "openai", "test")


def infer_provider(model_name: str) -> str:
    """The provider of a bare model name: ``claude-*`` is anthropic; ``gpt-*``, ``o1*``,
    ``o3*`` and ``o4*`` are openai; ``test`` is the offline test model.

    Raises:
        ConfigError: the provider cannot be inferred.
    """
    name = model_name.strip().lower()
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai"
    if name == "test":
        return "test"
    raise ConfigError(
        f"cannot tell which provider serves model {model_name!r}; write it as "
        f"'provider:model' with provider one of {', '.join(PROVIDERS)} "
        "(for example 'openai:llama3.1' for an OpenAI-compatible server)."
    )


def resolve_model(model: str | Model, **options: Any) -> Model:
    """Return a `Model` for `model`.

    Args:
        model: a `Model` instance (returned unchanged), ``"provider:model"`` or a bare
            model name whose provider is inferred (see `infer_provider`).
        **options: passed to the provider's constructor (for example ``api_key`` or
            ``base_url``); explicit options override the SDK's environment variables.

    Raises:
        ConfigError: the string names no known provider or is empty.
        MissingDependencyError: the provider's SDK extra is not installed.
    """
    if not isinstance(model, str):
        if options:
            raise ConfigError("model options can only be given with a model name, not a Model.")
        return model
    text = model.strip()
    if not text:
        raise ConfigError("model is empty; pass a name such as 'claude-sonnet-5' or 'test'.")
    provider, sep, name = text.partition(":")
    if not sep:
        provider, name = infer_provider(text), text
        if provider == "test":
            name = ""
    provider = provider.strip().lower()
    if provider == "test":
        _check_options(TestModel, provider, options, ("name",))
        return TestModel(name=name or "model", **options)
    if not name:
        raise ConfigError(f"model {model!r} names no model after the provider prefix.")
    if provider == "anthropic":
        from .anthropic import AnthropicModel

        _check_options(AnthropicModel, provider, options)
        return AnthropicModel(name, **options)
    if provider == "openai":
        from .openai import OpenAIModel

        _check_options(OpenAIModel, provider, options)
        return OpenAIModel(name, **options)
    raise ConfigError(
        f"unknown model provider {provider!r} in {model!r}; use one of {', '.join(PROVIDERS)}."
    )


def _check_options(
    model_class: type, provider: str, options: dict[str, Any], taken: tuple[str, ...] = ()
) -> None:
    """Refuse options the provider does not take, naming them as configuration keys.

    Raises:
        ConfigError: an option is not a keyword of the provider's model class.
    """
    accepted = [
        parameter.name
        for parameter in inspect.signature(model_class).parameters.values()
        if parameter.kind
        in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and parameter.name not in ("model_name", *taken)
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(
            f"model_options.{unknown[0]}: not an option of the {provider} provider "
            f"(its options: {', '.join(accepted)})."
            + (f" Also unknown: {', '.join(unknown[1:])}." if len(unknown) > 1 else "")
        )


def __getattr__(name: str) -> Any:
    """`AnthropicModel` and `OpenAIModel`, imported (with their SDK) on first access."""
    if name == "AnthropicModel":
        from .anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAIModel":
        from .openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
