"""Building a server leaves the host's logging alone; the entry points configure it
(--log-level, DPTTOOLS_LOG_LEVEL) and report the package version (--version,
serverInfo.version)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import httpx2
import pytest
from http_child import start_server
from mcp import Client

import doc_processing_std_tools
from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.skills.server import new_skills_server

from .helpers import Folders

pytestmark = pytest.mark.anyio

VERSION = importlib.metadata.version("doc-processing-std-tools")

BUILD_EVERY_SERVER = """
import json, logging
import doc_processing_std_tools as package
before = (logging.getLogger().level, list(logging.getLogger().handlers))
package.skills_server, package.file_system_server, package.docs_server
package.make_composed_server()
package.make_skills_server()
from doc_processing_std_tools.skills.server import new_skills_server
new_skills_server()
root = logging.getLogger()
print(json.dumps({
    "level_unchanged": root.level == before[0],
    "handlers": [type(handler).__name__ for handler in root.handlers],
    "httpx_info_enabled": logging.getLogger("httpx").isEnabledFor(logging.INFO),
}))
"""


def test_building_every_server_leaves_the_root_logger_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUILD_EVERY_SERVER], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {
        "level_unchanged": True,
        "handlers": [],
        "httpx_info_enabled": False,
    }
    assert done.stderr == ""


def test_an_application_that_configured_logging_keeps_its_handler() -> None:
    script = (
        "import logging, json\n"
        "handler = logging.StreamHandler()\n"
        "logging.basicConfig(level=logging.ERROR, handlers=[handler])\n"
        "import doc_processing_std_tools as package\n"
        "package.make_composed_server()\n"
        "root = logging.getLogger()\n"
        "print(json.dumps([root.level == logging.ERROR, root.handlers == [handler]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == [True, True]


async def test_every_server_reports_the_package_version() -> None:
    assert doc_processing_std_tools.__version__ == VERSION
    for server in (
        make_composed_server(),
        new_skills_server(),
        doc_processing_std_tools.file_system_server,
        doc_processing_std_tools.docs_server,
    ):
        async with Client(server) as client:
            assert client.server_info is not None
            assert client.server_info.version == VERSION


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "doc_processing_std_tools"],
        ["-m", "doc_processing_std_tools.skills"],
    ],
)
def test_the_server_entry_points_print_their_version(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *command, "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.strip().endswith(VERSION)


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "doc_processing_std_tools"],
        ["-m", "doc_processing_std_tools.skills"],
    ],
)
def test_a_bad_log_level_variable_stops_the_server_with_its_name(command: list[str]) -> None:
    env = {**os.environ, "DPTTOOLS_LOG_LEVEL": "chatty"}
    done = subprocess.run(
        [sys.executable, *command],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "DPTTOOLS_LOG_LEVEL='chatty' is not a log level" in done.stderr


def _one_request(url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    response = httpx2.post(url, json=body, headers=headers, timeout=30)
    assert response.status_code == 200


def _log_of_one_request(folders: Folders, *args: str) -> str:
    started = start_server(*folders.args(), *args)
    try:
        _one_request(started.url)
    finally:
        log = started.stop()
    return log


def test_stateless_http_says_terminating_session_only_at_debug(folders: Folders) -> None:
    info_log = _log_of_one_request(folders)
    assert "Application startup complete" in info_log
    assert "Terminating session" not in info_log
    assert "Terminating session" in _log_of_one_request(folders, "--log-level", "debug")
