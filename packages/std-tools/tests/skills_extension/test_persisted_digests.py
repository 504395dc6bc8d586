"""File digests kept across processes in the persistent index (DPTTOOLS_CACHE_DIR): a new
publisher on an unchanged folder reads no file to list it, yet a file changed while no
server ran is hashed again, and the index forgets files that are gone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.skills.catalog.index import open_index
from doc_processing_std_tools.skills.extension.publisher import SkillPublisher
from doc_processing_std_tools.skills.extension.serving import (
    SkillsExtension,
    register_skill_resources,
)
from doc_processing_std_tools.skills.state import SkillsState

from .support import list_all

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio


def fresh_server() -> MCPServer:
    """A server with a publisher that remembers nothing, as in a new process."""
    extension = SkillsExtension(SkillPublisher(SkillsState()))
    server = MCPServer("fresh", extensions=[extension], middleware=[extension.mime_types])
    register_skill_resources(server, extension)
    return server


def write_kits(skills: SkillsFolder, count: int) -> list[Path]:
    folders = []
    for index in range(count):
        folder = skills.write(f"kit-{index}")
        (folder / "references").mkdir()
        (folder / "references" / "guide.md").write_text(f"guide {index}\n", "utf-8")
        (folder / "run.py").write_text(f"print({index})\n", "utf-8")
        folders.append(folder)
    return folders


def digests(entries: list[dict[str, Any]]) -> dict[str, str]:
    return {r["uri"]: r["digest"] for e in entries for r in e["resources"]}


def indexed(skills: SkillsFolder) -> dict[str, Any]:
    cache_dir = get_settings().cache_dir
    assert cache_dir is not None
    index = open_index(cache_dir, skills.path.resolve())
    assert index is not None
    try:
        return index.digests()
    finally:
        index.close()


async def test_a_new_publisher_lists_an_unchanged_folder_without_reading_its_files(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_kits(skills, 3)
    await anyio.sleep(0.3)  # past the moments when a fresh stamp is not trusted
    async with Client(fresh_server()) as client:
        first, _ = await list_all(client)
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    async with Client(fresh_server()) as client:
        again, _ = await list_all(client)
    monkeypatch.setattr(os, "open", real_open)
    assert digests(again) == digests(first)
    read = [p for p in opened if p.endswith(("guide.md", "run.py"))]
    assert read == []


async def test_a_file_changed_while_no_server_ran_is_hashed_again(
    skills: SkillsFolder,
) -> None:
    folders = write_kits(skills, 2)
    await anyio.sleep(0.3)
    async with Client(fresh_server()) as client:
        first = digests((await list_all(client))[0])
    guide = folders[1] / "references" / "guide.md"
    stamp = guide.stat()
    guide.write_text("GUIDE 1\n", "utf-8")  # the same size and, below, the same mtime
    os.utime(guide, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    async with Client(fresh_server()) as client:
        again = digests((await list_all(client))[0])
    changed = {uri for uri in first if first[uri] != again[uri]}
    assert changed == {"skill://kit-1/references/guide.md"}
    expected = "sha256:" + hashlib.sha256(b"GUIDE 1\n").hexdigest()
    assert again["skill://kit-1/references/guide.md"] == expected


async def test_the_index_keeps_the_digests_of_the_files_there_are(
    skills: SkillsFolder,
) -> None:
    folders = write_kits(skills, 2)
    await anyio.sleep(0.3)
    async with Client(fresh_server()) as client:
        await list_all(client)
    stored = indexed(skills)
    guide = str(folders[0] / "references" / "guide.md")
    assert guide in stored
    assert stored[guide][1] == "sha256:" + hashlib.sha256(b"guide 0\n").hexdigest()
    (folders[0] / "references" / "guide.md").unlink()
    async with Client(fresh_server()) as client:
        entries, _ = await list_all(client)
    assert "skill://kit-0/references/guide.md" not in digests(entries)
    stored = indexed(skills)
    assert guide not in stored
    assert str(folders[1] / "run.py") in stored
