"""The one table of model providers: each provider's name, its SDK and the extra that
installs it, the environment variables its SDK reads, the bare model names it serves, and
its adapter (the `Model` class, in the module of the same name under ``models``).

`resolve_model` and `infer_provider` read this table, and so do the adapters (their
name, label and API key variable). Nothing here imports an adapter or an SDK: a new
provider is its adapter module and one entry in `PROVIDERS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..errors import MissingDependencyError

__all__ = ["ANTHROPIC", "OPENAI", "PROVIDERS", "TEST", "Provider"]


@dataclass(frozen=True, slots=True)
class Provider:
    """One model provider.

    Attributes:
        name: the prefix of its model names (``"anthropic:<model>"``).
        label: its name in messages (``Anthropic``).
        adapter: its `Model` class, in the module `name` under ``models``.
        sdk: the SDK it needs, which is also the name of the extra that installs it
            (None: no SDK).
        key_env: the environment variable its SDK reads the API key from (empty without
            an SDK).
        base_url_env: the environment variable its SDK reads the API's address from
            (empty without an SDK).
        prefixes: bare model names that start with one of these (any case) are its.
        names: bare model names that are its as they stand (any case).
        default_model: the model of ``"<name>:"`` and of a bare `names` entry (None: a
            model name is required after the prefix).
        name_option: the adapter's parameter that takes the model name.
    """

    name: str
    label: str
    adapter: str
    sdk: str | None = None
    key_env: str = ""
    base_url_env: str = ""
    prefixes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    default_model: str | None = None
    name_option: str = "model_name"

    def serves(self, bare_name: str) -> bool:
        """Whether the bare model name (stripped, lower case) is this provider's."""
        return bare_name in self.names or bare_name.startswith(self.prefixes)

    def missing_sdk(self) -> MissingDependencyError:
        """The error raised when the adapter is imported without its SDK."""
        return MissingDependencyError(
            f"the {self.name} provider needs the {self.sdk} SDK: "
            f'pip install "doc-processing-toolkit[{self.sdk}]"'
        )


ANTHROPIC: Final = Provider(
    "anthropic",
    "Anthropic",
    "AnthropicModel",
    sdk="anthropic",
    key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    prefixes=("claude",),
)
"""Claude through the Messages API of the ``anthropic`` SDK."""

OPENAI: Final = Provider(
    "openai",
    "OpenAI",
    "OpenAIModel",
    sdk="openai",
    key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    prefixes=("gpt-", "o1", "o3", "o4"),
)
"""Chat Completions of the ``openai`` SDK: OpenAI, or any compatible server."""

TEST: Final = Provider(
    "test", "Test", "TestModel", names=("test",), default_model="model", name_option="name"
)
"""The offline, scriptable test model."""

PROVIDERS: Final[Mapping[str, Provider]] = {p.name: p for p in (ANTHROPIC, OPENAI, TEST)}
"""Every provider by name, in the order bare names are matched and messages list them."""
