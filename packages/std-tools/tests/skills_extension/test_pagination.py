"""Pages of skills/list through the MCP SDK's own client: only cursors the server signed
are taken, what a client sends cannot grow the server's memory, and a listing checks the
catalog once however many pages it has."""

from __future__ import annotations

import base64
import contextlib
import gc
import os
import tracemalloc
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.skills.extension.listings import MAX_LISTINGS
from doc_processing_std_tools.skills.extension.publisher import SkillPublisher
from doc_processing_std_tools.skills.extension.serving import (
    SkillsExtension,
    register_skill_resources,
)
from doc_processing_std_tools.skills.state import SkillsState
from doc_processing_std_tools.skills.tools import register_skills_tools

from .support import list_all, raw

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602


def paged_server(page_skills: int, *, watch: bool = True) -> MCPServer:
    """A skills server whose pages hold at most `page_skills` skills."""
    extension = SkillsExtension(SkillPublisher(SkillsState(), watch=watch, page_skills=page_skills))
    server = MCPServer("paged", extensions=[extension], middleware=[extension.mime_types])
    register_skills_tools(server)
    register_skill_resources(server, extension)
    return server


def write_skills(skills: SkillsFolder, count: int) -> None:
    for index in range(count):
        skills.write(f"s-{index:03d}")


def forged(after: str) -> str:
    """A cursor in the shape the server once handed out unsigned: base64 of ``after:URI``."""
    return base64.urlsafe_b64encode(f"after:{after}".encode()).decode()


async def refused(client: Client, cursor: str) -> bool:
    try:
        await raw(client, "skills/list", {"cursor": cursor})
    except MCPError as exc:
        return exc.error.code == INVALID_PARAMS
    return False


async def test_only_cursors_this_server_handed_out_are_taken(skills: SkillsFolder) -> None:
    write_skills(skills, 6)
    async with Client(paged_server(2)) as client, Client(paged_server(2)) as other:
        first = await raw(client, "skills/list")
        cursor = first["nextCursor"]
        second = await raw(client, "skills/list", {"cursor": cursor})
        assert [e["uri"] for e in second["skills"]] == [
            "skill://s-002/SKILL.md",
            "skill://s-003/SKILL.md",
        ]
        assert await refused(client, forged("skill://s-001/SKILL.md"))
        assert await refused(client, forged(""))
        altered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
        assert await refused(client, altered)
        _, _, mac = cursor.partition(".")
        moved = base64.urlsafe_b64encode(b"1:skill://s-003/SKILL.md").decode().rstrip("=")
        assert await refused(client, f"{moved}.{mac}")
        # Another server (another key) did not hand this cursor out.
        await raw(other, "skills/list")
        assert await refused(other, cursor)
        # The issued cursor still works, as often as it is sent.
        again = await raw(client, "skills/list", {"cursor": cursor})
        assert again["skills"] == second["skills"]


async def test_cursors_a_client_makes_up_do_not_grow_the_servers_memory(
    skills: SkillsFolder,
) -> None:
    write_skills(skills, 200)
    async with Client(paged_server(1000)) as client:
        await list_all(client)
        await list_all(client)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for index in range(1500):
                cursor = forged(f"skill://s-000/{index:05d}")
                with contextlib.suppress(MCPError):
                    await raw(client, "skills/list", {"cursor": cursor})
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    ours = [tracemalloc.Filter(True, "*doc_processing_std_tools*")]
    grown = sum(
        stat.size_diff
        for stat in after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    )
    assert grown < 256 * 1024, f"{grown} bytes kept for 1,500 made-up cursors"


async def test_a_warm_listing_checks_the_catalog_once_however_many_pages_it_has(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_skills(skills, 30)
    await anyio.sleep(0.3)  # past the moments when a fresh stamp is not trusted
    counted: list[str] = []
    real_stat = os.stat

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        counted.append(str(path))
        return real_stat(path, *args, **kwargs)

    async with Client(paged_server(3)) as client:
        await list_all(client)
        await list_all(client)
        monkeypatch.setattr(os, "stat", counting_stat)
        entries, pages = await list_all(client)
        monkeypatch.setattr(os, "stat", real_stat)
    assert len(pages) == 10 and len(entries) == 30
    skill_md = [p for p in counted if p.endswith("SKILL.md")]
    assert len(skill_md) <= 30, f"{len(skill_md)} stat calls of SKILL.md for 30 skills"


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat"])
async def test_a_skill_added_during_a_listing_shows_on_the_next_one(
    skills: SkillsFolder, watch: bool
) -> None:
    write_skills(skills, 6)
    async with Client(paged_server(2, watch=watch)) as client:
        first = await raw(client, "skills/list")
        skills.write("s-003b")
        skills.write("s-000b")
        rest: list[dict[str, Any]] = []
        cursor = first.get("nextCursor")
        while cursor is not None:
            page = await raw(client, "skills/list", {"cursor": cursor})
            rest.extend(page["skills"])
            cursor = page.get("nextCursor")
        uris = [e["uri"] for e in first["skills"] + rest]
        assert uris == [f"skill://s-{i:03d}/SKILL.md" for i in range(6)]
        entries, _ = await list_all(client)
    names = [e["frontmatter"]["name"] for e in entries]
    assert names == sorted([f"s-{i:03d}" for i in range(6)] + ["s-000b", "s-003b"])


async def test_a_cursor_of_a_listing_long_gone_goes_on_after_the_skill_it_names(
    skills: SkillsFolder,
) -> None:
    write_skills(skills, 6)
    async with Client(paged_server(2)) as client:
        cursor = (await raw(client, "skills/list"))["nextCursor"]
        for round_ in range(MAX_LISTINGS + 1):
            skills.write(f"t-{round_}")  # a new catalog: a new listing
            await raw(client, "skills/list")
        page = await raw(client, "skills/list", {"cursor": cursor})
    assert [e["uri"] for e in page["skills"]] == [
        "skill://s-002/SKILL.md",
        "skill://s-003/SKILL.md",
    ]


async def test_a_second_walk_of_a_long_listing_is_answered_from_kept_pages(
    skills: SkillsFolder,
) -> None:
    """A listing of 45 pages keeps all of them: a walk does not evict the pages the next
    walk asks for first (as a bound of 16 pages did, which made every warm walk of a
    catalog over 16 pages build each page again)."""
    write_skills(skills, 90)
    await anyio.sleep(0.3)  # past the moments when a fresh stamp is not trusted
    publisher = SkillPublisher(SkillsState(), page_skills=2)
    extension = SkillsExtension(publisher)
    server = MCPServer("paged", extensions=[extension], middleware=[extension.mime_types])
    async with Client(server) as client:
        await list_all(client)
        _, pages = await list_all(client)
    cursors = [None] + [page["nextCursor"] for page in pages[:-1]]
    assert len(cursors) == 45
    settings = get_settings()
    kept = [publisher.cached_page(settings, cursor) is not None for cursor in cursors]
    assert all(kept), f"{kept.count(False)} of 45 pages built again on the next walk"
