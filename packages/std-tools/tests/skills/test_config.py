"""DPTTOOLS_* settings: defaults, when relative folders are resolved, and bad values."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_processing_std_tools.config import (
    DEFAULTS,
    get_settings,
    load_settings,
    reset_settings,
)
from doc_processing_std_tools.errors import ConfigError


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    reset_settings()
    yield
    reset_settings()


def test_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings({})
    assert settings.skills_dir == tmp_path.resolve() / ".agent_skills"
    assert settings.workspace_dir == tmp_path.resolve()
    assert settings.sandbox_timeout == 30
    assert settings.max_file_size_mb == 50
    assert settings.max_file_size_bytes == 50 * 1024 * 1024
    assert settings.output_truncation_limit == 50_000


def test_every_variable_is_read(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
            "DPTTOOLS_WORKSPACE_DIR": str(tmp_path),
            "DPTTOOLS_SANDBOX_TIMEOUT": " 2.5 ",
            "DPTTOOLS_MAX_FILE_SIZE_MB": "0.5",
            "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "1234",
        }
    )
    assert settings.skills_dir == (tmp_path / "skills").resolve()
    assert settings.workspace_dir == tmp_path.resolve()
    assert settings.sandbox_timeout == 2.5
    assert settings.max_file_size_bytes == 512 * 1024
    assert settings.output_truncation_limit == 1234


def test_a_relative_folder_is_resolved_when_the_settings_are_first_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", "my-skills")
    monkeypatch.chdir(first)
    settings = get_settings()
    assert settings.skills_dir == first.resolve() / "my-skills"
    monkeypatch.chdir(later)
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", "changed")
    assert get_settings() is settings
    reset_settings()
    assert get_settings().skills_dir == later.resolve() / "changed"


def test_a_home_folder_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = load_settings({"DPTTOOLS_SKILLS_DIR": "~/skills"})
    assert settings.skills_dir == tmp_path.resolve() / "skills"


def test_a_file_size_limit_too_large_to_count_means_no_limit() -> None:
    settings = load_settings({"DPTTOOLS_MAX_FILE_SIZE_MB": "1e308"})
    assert settings.max_file_size_bytes == sys.maxsize


@pytest.mark.parametrize(
    ("name", "value"),
    [
        *[
            (name, value)
            for name in ("DPTTOOLS_SANDBOX_TIMEOUT", "DPTTOOLS_MAX_FILE_SIZE_MB")
            for value in ["", "soon", "0", "-1", "nan", "inf", "1,5"]
        ],
        *[
            ("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", value)
            for value in ["", "lots", "0", "-5", "1.5", "1e3"]
        ],
        *[
            (name, value)
            for name in ("DPTTOOLS_SKILLS_DIR", "DPTTOOLS_WORKSPACE_DIR")
            for value in ["", "   ", "a\x00b"]
        ],
    ],
)
def test_a_bad_value_is_a_clear_error_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({name: value})
    message = str(caught.value)
    assert name in message
    assert "set it" in message


def test_get_settings_raises_the_same_error_and_caches_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DPTTOOLS_SANDBOX_TIMEOUT", "never")
    with pytest.raises(ConfigError, match="DPTTOOLS_SANDBOX_TIMEOUT"):
        get_settings()
    monkeypatch.setenv("DPTTOOLS_SANDBOX_TIMEOUT", "3")
    assert get_settings().sandbox_timeout == 3
