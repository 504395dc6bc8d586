"""The DPTTOOLS_SCRIPT_* settings: defaults, every variable read, and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.errors import ConfigError
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy


def test_the_script_defaults() -> None:
    settings = load_settings({"DPTTOOLS_SANDBOX_TIMEOUT": "12.5"})
    assert settings.script_sandbox == "auto"
    assert settings.script_env == ()
    assert settings.script_network is False
    assert settings.script_memory_mb == 1024
    assert settings.script_cpu_seconds is None
    assert settings.script_cpu_limit == 13  # the timeout, rounded up
    assert settings.script_max_file_size_mb == 256
    assert settings.script_max_open_files == 256
    assert settings.script_max_processes == 64
    assert settings.script_max_changed_files == 1000
    assert settings.script_max_changed_mb == 256
    assert settings.script_max_calls == 4
    # The workspace is writable for scripts only when it is set explicitly.
    assert settings.script_workspace is None
    assert ScriptPolicy.from_settings(settings) == ScriptPolicy(
        cpu_seconds=13, changes=settings.script_changes()
    )


def test_every_script_variable_is_read(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "DPTTOOLS_WORKSPACE_DIR": str(tmp_path),
            "DPTTOOLS_SCRIPT_SANDBOX": " BWRAP ",
            "DPTTOOLS_SCRIPT_ENV": "HTTPS_PROXY, TZ,,HTTPS_PROXY",
            "DPTTOOLS_SCRIPT_NETWORK": "1",
            "DPTTOOLS_SCRIPT_MEMORY_MB": "2048",
            "DPTTOOLS_SCRIPT_CPU_SECONDS": "7",
            "DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB": "10",
            "DPTTOOLS_SCRIPT_MAX_OPEN_FILES": "64",
            "DPTTOOLS_SCRIPT_MAX_PROCESSES": "8",
            "DPTTOOLS_SCRIPT_MAX_CHANGED_FILES": "20",
            "DPTTOOLS_SCRIPT_MAX_CHANGED_MB": "3",
            "DPTTOOLS_SCRIPT_MAX_CALLS": "2",
        }
    )
    policy = ScriptPolicy.from_settings(settings)
    assert policy == ScriptPolicy(
        sandbox="bwrap",
        env_allow=("HTTPS_PROXY", "TZ"),
        network=True,
        workspace=tmp_path.resolve(),
        memory_mb=2048,
        cpu_seconds=7,
        max_file_size_mb=10,
        max_open_files=64,
        max_processes=8,
        changes=settings.script_changes(),
        max_changed_files=20,
        max_changed_mb=3,
        max_calls=2,
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DPTTOOLS_SCRIPT_SANDBOX", "docker", "auto (bubblewrap when it works), bwrap"),
        ("DPTTOOLS_SCRIPT_ENV", "HOME=/x", "not a variable name"),
        ("DPTTOOLS_SCRIPT_ENV", "A B", "not a variable name"),
        ("DPTTOOLS_SCRIPT_NETWORK", "maybe", "set it to 1 (on) or 0 (off)"),
        ("DPTTOOLS_SCRIPT_MEMORY_MB", "1.5", "whole number"),
        ("DPTTOOLS_SCRIPT_MEMORY_MB", "0", "positive integer"),
        ("DPTTOOLS_SCRIPT_CPU_SECONDS", "-1", "positive integer"),
        ("DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB", "lots", "whole number"),
        ("DPTTOOLS_SCRIPT_MAX_OPEN_FILES", "0", "positive integer"),
        ("DPTTOOLS_SCRIPT_MAX_PROCESSES", "", "whole number"),
        ("DPTTOOLS_SCRIPT_MAX_CHANGED_FILES", "0", "positive integer"),
        ("DPTTOOLS_SCRIPT_MAX_CHANGED_MB", "many", "whole number"),
        ("DPTTOOLS_SCRIPT_MAX_CALLS", "-2", "positive integer"),
        ("DPTTOOLS_SCRIPT_PROTECTED", "+Makefile", "DPTTOOLS_SCRIPT_HOLD"),
    ],
)
def test_a_bad_script_value_is_a_clear_error_naming_the_variable(
    name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=name) as caught:
        load_settings({name: value})
    assert message in str(caught.value)
