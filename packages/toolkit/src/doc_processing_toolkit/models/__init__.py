"""Model providers: `resolve_model` turns ``"provider:model"`` or a bare name into a `Model`.

Providers (the one table, `providers.PROVIDERS`): ``anthropic`` (official anthropic SDK,
extra ``[anthropic]``), ``openai`` (official openai SDK, extra ``[openai]``; any
OpenAI-compatible server through ``base_url``) and ``test`` (offline, scriptable).
Provider modules are imported only when used, so a missing SDK costs nothing until that
provider is asked for; that holds for ``from doc_processing_toolkit.models import
AnthropicModel`` (or ``OpenAIModel``) too.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import Model, ModelRequest, TextDelta, ThinkingDelta
from .providers import PROVIDERS, Provider
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


def infer_provider(model_name: str) -> str:
    """The provider of a bare model name: ``claude-*`` is anthropic; ``gpt-*``, ``o1*``,
    ``o3*`` and ``o4*`` are openai; ``test`` is the offline test model (see
    `providers.PROVIDERS`).

    Raises:
        ConfigError: the provider cannot be inferred.
    """
    return _inferred(model_name).name


def _inferred(model_name: str) -> Provider:
    name = model_name.strip().lower()
    found = next((p for p in PROVIDERS.values() if p.serves(name)), None)
    if found is None:
        raise ConfigError(
            f"cannot tell which provider serves model {model_name!r}; write it as "
            f"'provider:model' with provider one of {', '.join(PROVIDERS)} "
            "(for example 'openai:llama3.1' for an OpenAI-compatible server)."
        )
    return found


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
    prefix, sep, name = text.partition(":")
    if sep:
        provider = PROVIDERS.get(prefix.strip().lower())
        if provider is None:
            if not name:
                raise ConfigError(f"model {model!r} names no model after the provider prefix.")
            raise ConfigError(
                f"unknown model provider {prefix.strip().lower()!r} in {model!r}; use one of "
                f"{', '.join(PROVIDERS)}."
            )
    else:
        provider = _inferred(text)
        # A bare name that names the provider ("test") stands for its default model.
        name = "" if text.lower() in provider.names else text
    if not name and provider.default_model is None:
        raise ConfigError(f"model {model!r} names no model after the provider prefix.")
    adapter = _adapter(provider)
    _check_options(adapter, provider.name, options, (provider.name_option,))
    return adapter(**{provider.name_option: name or provider.default_model}, **options)


def _adapter(provider: Provider) -> type[Model]:
    """The provider's `Model` class, imported (with its SDK) now.

    Raises:
        MissingDependencyError: the provider's SDK is not installed.
    """
    module = importlib.import_module(f".{provider.name}", __name__)
    adapter: type[Model] = getattr(module, provider.adapter)
    return adapter


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
        and parameter.name not in taken
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
    for provider in PROVIDERS.values():
        if provider.adapter == name:
            return _adapter(provider)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
