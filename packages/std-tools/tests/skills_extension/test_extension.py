"""The MCP Skills extension in process, driven by the MCP SDK's own client with raw
requests: what is listed, what is read, what is refused, and how changes show."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import BlobResourceContents, TextContent, TextResourceContents

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.extension.publisher import MAX_PAGE_SKILLS, SkillPublisher
from doc_processing_std_tools.skills.extension.serving import (
    LEFT_OUT_META_KEY,
    SkillsExtension,
    register_skill_resources,
)
from doc_processing_std_tools.skills.server import new_skills_server
from doc_processing_std_tools.skills.state import SkillsState
from doc_processing_std_tools.skills.tools import register_skills_tools

from .support import EXTENSION, expected_files, list_all, manifest, raw

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602

SERVERS: dict[str, Callable[[], MCPServer]] = {
    "skills-tools": new_skills_server,
    "composed": make_composed_server,
}


def watched_server(watch: bool) -> MCPServer:
    """A skills server whose publisher learns of changes from the kernel (watch) or from
    ``stat`` stamps alone (as on a network file system)."""
    extension = SkillsExtension(SkillPublisher(SkillsState(), watch=watch))
    server = MCPServer(
        "skills-under-test", extensions=[extension], middleware=[extension.mime_types]
    )
    register_skills_tools(server)
    register_skill_resources(server, extension)
    return server


CHANGE_MODES = pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat"])


def rich_skill(skills: SkillsFolder) -> Path:
    """A skill with text in several encodings and line endings, binaries and a subfolder."""
    folder = skills.write(
        "report-kit",
        "name: report-kit\ndescription: Builds reports.\nlicense: MIT\n"
        "metadata:\n  owner: finance\n  nested:\n    level: 2\nupdated: 2025-01-31\n"
        "allowed-tools: Bash Read\nx-custom: [1, 2.5, true, null]\n",
    )
    (folder / "references").mkdir()
    (folder / "references" / "guide.md").write_bytes(b"\xef\xbb\xbf# Guide\r\nline two\r\n")
    (folder / "references" / "deep").mkdir()
    (folder / "references" / "deep" / "caf\u00e9 notes.md").write_text("caf\u00e9\n", "utf-8")
    (folder / "assets").mkdir()
    (folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (folder / "assets" / "latin1.txt").write_bytes(b"caf\xe9\n")
    (folder / "assets" / "zeros.bin").write_bytes(b"\x00" * 100)
    (folder / "assets" / "empty.txt").write_bytes(b"")
    (folder / "assets" / "100% done.txt").write_bytes(b"percent\n")
    (folder / ".hidden.txt").write_text("never listed", "utf-8")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\x00compiled")
    return folder


def content_bytes(content: TextResourceContents | BlobResourceContents) -> bytes:
    if isinstance(content, TextResourceContents):
        return content.text.encode("utf-8")
    return base64.b64decode(content.blob)


@pytest.mark.parametrize("kind", SERVERS)
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_both_servers_declare_the_extension_with_directory_read_and_resources(
    skills: SkillsFolder, kind: str, mode: str
) -> None:
    skills.write("alpha")
    async with Client(SERVERS[kind](), mode=mode) as client:
        capabilities = client.server_capabilities
        # Handshake-era capabilities have no `extensions` field (the SDK leaves it out);
        # the methods answer there too.
        declared = {EXTENSION: {"directoryRead": True}} if mode == "auto" else None
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert capabilities.extensions == declared
        assert capabilities.resources is not None
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"list_skills", "load_skill", "load_skill_resource"} <= tools
        page = await raw(client, "skills/list")
        assert [entry["uri"] for entry in page["skills"]] == ["skill://alpha/SKILL.md"]


@pytest.mark.parametrize("kind", SERVERS)
async def test_a_listing_carries_verbatim_frontmatter_and_every_file_with_its_digest(
    skills: SkillsFolder, kind: str
) -> None:
    folder = rich_skill(skills)
    async with Client(SERVERS[kind]()) as client:
        page = await raw(client, "skills/list")
    assert page["resultType"] == "complete"
    assert page["ttlMs"] == 0
    assert page["cacheScope"] == "private"
    assert "nextCursor" not in page
    (entry,) = page["skills"]
    assert entry["uri"] == "skill://report-kit/SKILL.md"
    assert entry["frontmatter"] == {
        "name": "report-kit",
        "description": "Builds reports.",
        "license": "MIT",
        "metadata": {"owner": "finance", "nested": {"level": 2}},
        "updated": "2025-01-31",
        "allowed-tools": "Bash Read",
        "x-custom": [1, 2.5, True, None],
    }
    files = expected_files(folder)
    assert ".hidden.txt" not in files and "__pycache__/x.pyc" not in files
    assert entry["resources"] == manifest(files, "report-kit")
    assert "skill://report-kit/assets/100%25%20done.txt" in {r["uri"] for r in entry["resources"]}


async def test_skills_get_returns_the_listed_entry_and_refuses_what_is_not_a_served_skill(
    skills: SkillsFolder,
) -> None:
    rich_skill(skills)
    skills.write("other")
    async with Client(new_skills_server()) as client:
        listed = {e["uri"]: e for e in (await raw(client, "skills/list"))["skills"]}
        got = await raw(client, "skills/get", {"uri": "skill://report-kit/SKILL.md"})
        assert got["skill"] == listed["skill://report-kit/SKILL.md"]
        assert (got["resultType"], got["ttlMs"], got["cacheScope"]) == ("complete", 0, "private")
        assert "nextCursor" not in got
        for uri in [
            "skill://missing/SKILL.md",
            "skill://report-kit/references/guide.md",
            "skill://report-kit",
            "skill://../report-kit/SKILL.md",
            "file:///etc/passwd",
        ]:
            with pytest.raises(MCPError) as refused:
                await raw(client, "skills/get", {"uri": uri})
            assert refused.value.error.code == INVALID_PARAMS, uri
            assert "No skill is served" in refused.value.error.message


async def test_every_file_reads_back_as_its_exact_bytes_text_for_utf8_and_blob_otherwise(
    skills: SkillsFolder,
) -> None:
    folder = rich_skill(skills)
    async with Client(new_skills_server()) as client:
        (entry,) = (await raw(client, "skills/list"))["skills"]
        kinds: dict[str, str] = {}
        for resource in entry["resources"]:
            result = await client.read_resource(resource["uri"])
            (content,) = result.contents
            data = content_bytes(content)
            assert len(data) == resource["size"]
            assert "sha256:" + hashlib.sha256(data).hexdigest() == resource["digest"]
            kinds[resource["uri"].rsplit("/", 1)[-1]] = type(content).__name__
            assert content.mime_type
            if resource["uri"].endswith(".md"):
                assert content.mime_type == "text/markdown"
    assert kinds["guide.md"] == "TextResourceContents"  # BOM and CRLF kept in the text
    assert kinds["empty.txt"] == "TextResourceContents"
    assert kinds["logo.png"] == kinds["latin1.txt"] == kinds["zeros.bin"] == "BlobResourceContents"
    assert (folder / "references" / "guide.md").read_bytes().startswith(b"\xef\xbb\xbf")


async def test_reads_of_what_is_not_published_are_invalid_params(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    rich_skill(skills)
    skills.write("no-name", "description: Has no name field.\n")
    async with Client(new_skills_server()) as client:
        for uri in [
            "skill://report-kit/.hidden.txt",
            "skill://report-kit/__pycache__/x.pyc",
            "skill://report-kit/references",
            "skill://report-kit/nothing.md",
            "skill://report-kit/../no-name/SKILL.md",
            "skill://report-kit/%2e%2e/no-name/SKILL.md",
            "skill://report-kit/references%2Fguide.md%2F..%2F..%2F..%2Fetc%2Fpasswd",
            "skill://no-name/SKILL.md",
            "skill://missing/SKILL.md",
        ]:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == INVALID_PARAMS, uri


async def test_a_link_leading_outside_the_skills_folder_is_neither_listed_nor_read(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    """Attack: a skill plants links to a secret outside the skills folder, and re-points a
    listed link outside between the listing and the read."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-VALUE\n", "utf-8")
    folder = skills.write("linker")
    (folder / "inside.md").write_text("inside\n", "utf-8")
    (folder / "leak.txt").symlink_to(secret)
    (folder / "leak-dir").symlink_to(secret.parent, target_is_directory=True)
    (folder / "alias.md").symlink_to(folder / "inside.md")
    async with Client(new_skills_server()) as client:
        (entry,) = (await raw(client, "skills/list"))["skills"]
        listed = {r["uri"] for r in entry["resources"]}
        assert listed == {
            "skill://linker/SKILL.md",
            "skill://linker/alias.md",
            "skill://linker/inside.md",
        }
        for uri in ["skill://linker/leak.txt", "skill://linker/leak-dir/secret.txt"]:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == INVALID_PARAMS
            assert "TOP-SECRET" not in refused.value.error.message
        # The listed link now leads outside: the read follows the rule as it is now.
        (folder / "alias.md").unlink()
        (folder / "alias.md").symlink_to(secret)
        with pytest.raises(MCPError) as refused:
            await client.read_resource("skill://linker/alias.md")
        assert refused.value.error.code == INVALID_PARAMS
        page = await raw(client, "skills/list")
        assert "TOP-SECRET" not in json.dumps(page)
        assert "skill://linker/alias.md" not in json.dumps(page)


async def test_directory_reads_list_direct_children_and_refuse_files(
    skills: SkillsFolder,
) -> None:
    rich_skill(skills)
    async with Client(new_skills_server()) as client:
        root = await raw(client, "resources/directory/read", {"uri": "skill://report-kit"})
        children = {r["uri"].rsplit("/", 1)[-1]: r for r in root["resources"]}
        assert set(children) == {"SKILL.md", "assets", "references"}
        assert children["assets"] == {
            "uri": "skill://report-kit/assets",
            "name": "assets",
            "mimeType": "inode/directory",
        }
        assert children["SKILL.md"] == {
            "uri": "skill://report-kit/SKILL.md",
            "name": "report-kit",
            "description": "Builds reports.",
            "mimeType": "text/markdown",
        }
        assert root["resultType"] == "complete"
        sub = await raw(
            client, "resources/directory/read", {"uri": "skill://report-kit/references"}
        )
        assert [r["name"] for r in sub["resources"]] == ["deep", "guide.md"]
        deep = await raw(
            client, "resources/directory/read", {"uri": "skill://report-kit/references/deep"}
        )
        assert [r["uri"] for r in deep["resources"]] == [
            "skill://report-kit/references/deep/caf%C3%A9%20notes.md"
        ]
        for uri in [
            "skill://report-kit/SKILL.md",
            "skill://report-kit/missing",
            "skill://report-kit/references/",
            "skill://nobody",
        ]:
            with pytest.raises(MCPError) as refused:
                await raw(client, "resources/directory/read", {"uri": uri})
            assert refused.value.error.code == INVALID_PARAMS, uri


@CHANGE_MODES
async def test_changing_one_file_changes_exactly_that_digest(
    skills: SkillsFolder, watch: bool
) -> None:
    folder = rich_skill(skills)
    skills.write("bystander")
    guide = folder / "references" / "guide.md"
    async with Client(watched_server(watch)) as client:
        before = {r["uri"]: r for e in (await list_all(client))[0] for r in e["resources"]}
        guide.write_bytes(guide.read_bytes() + b"appended\n")
        after = {r["uri"]: r for e in (await list_all(client))[0] for r in e["resources"]}
        changed = {uri for uri in before if before[uri] != after[uri]}
        assert changed == {"skill://report-kit/references/guide.md"}
        assert after["skill://report-kit/references/guide.md"]["size"] == len(guide.read_bytes())
        # An edit that keeps the size and the modification time is still seen.
        stamp = guide.stat()
        guide.write_bytes(guide.read_bytes().replace(b"line two", b"LINE TWO"))
        os.utime(guide, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        again = {r["uri"]: r for e in (await list_all(client))[0] for r in e["resources"]}
        assert {uri for uri in after if after[uri] != again[uri]} == {
            "skill://report-kit/references/guide.md"
        }
        expected = "sha256:" + hashlib.sha256(guide.read_bytes()).hexdigest()
        assert again["skill://report-kit/references/guide.md"]["digest"] == expected


@CHANGE_MODES
async def test_skills_and_files_that_come_and_go_show_on_the_next_listing_as_with_list_skills(
    skills: SkillsFolder, watch: bool
) -> None:
    skills.write("first")
    async with Client(watched_server(watch)) as client:

        async def both() -> tuple[set[str], set[str]]:
            entries, _ = await list_all(client)
            tool = await client.call_tool("list_skills", {})
            block = tool.content[0]
            assert isinstance(block, TextContent)
            names = {s["name"] for s in json.loads(block.text)["skills"]}
            return {e["frontmatter"]["name"] for e in entries}, names

        assert await both() == ({"first"}, {"first"})
        second = skills.write("second")
        assert await both() == ({"first", "second"}, {"first", "second"})
        (second / "extra.md").write_text("more\n", "utf-8")
        entry = await raw(client, "skills/get", {"uri": "skill://second/SKILL.md"})
        assert "skill://second/extra.md" in {r["uri"] for r in entry["skill"]["resources"]}
        (second / "extra.md").unlink()
        (second / "SKILL.md").unlink()
        assert await both() == ({"first"}, {"first"})
        with pytest.raises(MCPError):
            await raw(client, "skills/get", {"uri": "skill://second/SKILL.md"})


@CHANGE_MODES
async def test_a_file_changed_after_the_listing_is_read_as_it_is_now(
    skills: SkillsFolder, watch: bool
) -> None:
    folder = skills.write("live")
    notes = folder / "notes.md"
    notes.write_text("old\n", "utf-8")
    async with Client(watched_server(watch)) as client:
        first = (await raw(client, "skills/get", {"uri": "skill://live/SKILL.md"}))["skill"]
        notes.write_text("new and longer\n", "utf-8")
        result = await client.read_resource("skill://live/notes.md")
        (content,) = result.contents
        assert content_bytes(content) == b"new and longer\n"
        second = (await raw(client, "skills/get", {"uri": "skill://live/SKILL.md"}))["skill"]
    digests = [{r["uri"]: r["digest"] for r in s["resources"]} for s in (first, second)]
    expected = "sha256:" + hashlib.sha256(b"new and longer\n").hexdigest()
    assert digests[1]["skill://live/notes.md"] == expected != digests[0]["skill://live/notes.md"]


@pytest.mark.parametrize(
    ("page_skills", "page_resources", "pages"), [(4, 10_000, 3), (100, 7, 4), (1000, 8192, 1)]
)
async def test_pages_hold_every_skill_exactly_once_and_bad_cursors_are_refused(
    skills: SkillsFolder, page_skills: int, page_resources: int, pages: int
) -> None:
    for index in range(10):
        folder = skills.write(f"s-{index:02d}")
        (folder / "notes.md").write_text("notes\n", "utf-8")  # two files per skill
    publisher = SkillPublisher(
        SkillsState(), page_skills=page_skills, page_resources=page_resources
    )
    extension = SkillsExtension(publisher)
    server = MCPServer("paged", extensions=[extension], middleware=[extension.mime_types])
    async with Client(server) as client:
        entries, sent = await list_all(client)
        assert len(sent) == pages
        assert all(len(page["skills"]) <= page_skills for page in sent)
        assert all(
            sum(len(e["resources"]) for e in page["skills"]) <= max(page_resources, 2)
            for page in sent
        )
        uris = [e["uri"] for e in entries]
        assert uris == sorted(set(uris)) and len(uris) == 10
        for cursor in ["not-a-cursor", "YWZ0ZXI", ""]:
            with pytest.raises(MCPError) as refused:
                await raw(client, "skills/list", {"cursor": cursor})
            assert refused.value.error.code == INVALID_PARAMS


async def test_the_default_page_holds_a_thousand_skills(skills: SkillsFolder) -> None:
    for index in range(MAX_PAGE_SKILLS + 1):
        (skills.path / f"s-{index:04d}").mkdir()
        (skills.path / f"s-{index:04d}" / "SKILL.md").write_bytes(
            f"---\nname: s-{index:04d}\ndescription: D.\n---\n".encode()
        )
    async with Client(new_skills_server()) as client:
        entries, sent = await list_all(client)
    assert [len(page["skills"]) for page in sent] == [MAX_PAGE_SKILLS, 1]
    assert len({e["uri"] for e in entries}) == MAX_PAGE_SKILLS + 1


def sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


async def test_skills_over_the_limits_are_left_out_with_a_reason_and_hide_no_other(
    skills: SkillsFolder,
) -> None:
    skills.write("fine")
    many = skills.write("many-files")
    for index in range(512):
        (many / f"f{index:03d}.txt").write_bytes(b"x")
    sparse(skills.write("huge-skill") / "big.bin", 17 * 1024 * 1024)
    sparse(skills.write("big-file") / "big.bin", 2 * 1024 * 1024)  # over the 1 MB setting
    async with Client(new_skills_server()) as client:
        page = await raw(client, "skills/list")
        assert [e["uri"] for e in page["skills"]] == ["skill://fine/SKILL.md"]
        left_out = {d["skill"]: d["code"] for d in page["_meta"][LEFT_OUT_META_KEY]}
        assert left_out == {
            "many-files": "too_many_files",
            "huge-skill": "skill_too_large",
            "big-file": "file_too_large",
        }
        with pytest.raises(MCPError) as refused:
            await raw(client, "skills/get", {"uri": "skill://many-files/SKILL.md"})
        assert "too_many_files" in refused.value.error.message
        with pytest.raises(MCPError):
            await client.read_resource("skill://many-files/f000.txt")
        (many / "f511.txt").unlink()
        page = await raw(client, "skills/list")
        assert "skill://many-files/SKILL.md" in {e["uri"] for e in page["skills"]}


LONG = "d" * 1100
CASES: list[tuple[str, str, str | None]] = [
    # (folder, frontmatter, the code that leaves it out; None when it is served)
    ("served-plain", "name: served-plain\ndescription: Fine.\n", None),
    ("unquoted-colon", "name: unquoted-colon\ndescription: Use it: always.\n", None),
    ("nested-meta", "name: nested-meta\ndescription: D.\nmetadata:\n  a:\n    b: 1\n", None),
    ("no-name", "description: D.\n", "missing_name"),
    ("mismatch", "name: other-name\ndescription: D.\n", "name_mismatch"),
    ("Bad_Folder", "name: Bad_Folder\ndescription: D.\n", "folder_name_not_uri"),
    ("long-desc", f"name: long-desc\ndescription: {LONG}\n", "description_too_long"),
    ("long-compat", f"name: long-compat\ndescription: D.\ncompatibility: {'c' * 600}\n",
     "compatibility_too_long"),
    ("list-meta", "name: list-meta\ndescription: D.\nmetadata: [a]\n", "invalid_metadata"),
    ("number-license", "name: number-license\ndescription: D.\nlicense: 5\n", "invalid_license"),
    ("null-compat", "name: null-compat\ndescription: D.\ncompatibility:\n",
     "invalid_compatibility"),
    ("number-desc", "name: number-desc\ndescription: 42\n", "invalid_description"),
    ("map-tools", "name: map-tools\ndescription: D.\nallowed-tools: {a: b}\n",
     "invalid_allowed_tools"),
    ("infinite", "name: infinite\ndescription: D.\nscore: .inf\n", "frontmatter_not_json"),
    ("binary-value", "name: binary-value\ndescription: D.\nblob: !!binary aGk=\n",
     "frontmatter_not_json"),
    ("no-description", "name: no-description\n", "missing_description"),
]  # fmt: skip


async def test_each_diagnostic_maps_to_the_extension_as_the_documentation_says(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "1000000")  # list_skills whole
    reset_settings()
    for folder, frontmatter, _ in CASES:
        skills.write(folder, frontmatter)
    async with Client(new_skills_server()) as client:
        page = await raw(client, "skills/list")
        tool = await client.call_tool("list_skills", {})
    served = {e["frontmatter"]["name"] for e in page["skills"]}
    left_out = {d["skill"]: d["code"] for d in page["_meta"][LEFT_OUT_META_KEY]}
    assert served == {folder for folder, _, code in CASES if code is None}
    # A folder name that breaks the naming rule: listed by the tools with a warning, left
    # out by the extension with a diagnostic of its own.
    assert left_out == {folder: code for folder, _, code in CASES if code is not None}
    block = tool.content[0]
    assert isinstance(block, TextContent)
    # The five tools are unchanged: every skill they list with a warning is still listed.
    listed = {s["name"] for s in json.loads(block.text)["skills"]}
    assert listed == {folder for folder, _, code in CASES if code != "missing_description"}


def test_the_documentation_maps_every_diagnostic_code_to_the_extension() -> None:
    from doc_processing_std_tools.skills.core.diagnostics import CODES
    from doc_processing_std_tools.skills.extension.publishable import LEFT_OUT_CODES

    docs = Path(__file__).resolve().parents[4] / "docs" / "std-tools" / "skills-extension.md"
    text = docs.read_text("utf-8")
    validate_only = {"not_a_skill", "not_found", "no_skills"}  # dpt-skills validate's own
    codes = (set(CODES) - validate_only) | set(LEFT_OUT_CODES)
    assert {code for code in codes if f"`{code}`" not in text} == set()


def test_results_are_json_all_the_way_down(skills: SkillsFolder) -> None:
    """The listing is plain JSON data (so any transport carries it unchanged)."""
    from doc_processing_std_tools.config import get_settings
    from doc_processing_std_tools.skills.extension.publisher import SkillPublisher

    rich_skill(skills)
    page = SkillPublisher(SkillsState()).page(get_settings())
    assert json.loads(json.dumps(page.entries)) == page.entries


@CHANGE_MODES
async def test_an_edit_through_a_hard_link_outside_the_skill_is_seen(
    skills: SkillsFolder, tmp_path: Path, watch: bool
) -> None:
    """The kernel reports a write through any name of a watched file, not only the one
    inside the skill folder; the stat path sees the new stamp."""
    folder = skills.write("linked")
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("first\n", "utf-8")
    os.link(elsewhere, folder / "shared.md")
    async with Client(watched_server(watch)) as client:
        await list_all(client)
        with elsewhere.open("r+b") as handle:
            handle.write(b"FIRST")
        (entry,) = (await list_all(client))[0]
    digests = {r["uri"]: r["digest"] for r in entry["resources"]}
    assert digests["skill://linked/shared.md"] == (
        "sha256:" + hashlib.sha256(b"FIRST\n").hexdigest()
    )


async def test_with_the_kernel_watching_an_unchanged_listing_stats_no_skill_file(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(10):
        folder = rich_skill_named(skills, f"kit-{index}")
        assert folder.is_dir()
    await anyio.sleep(0.3)  # past the moments when a fresh stamp is not trusted
    counted: list[str] = []
    real_stat = os.stat

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        counted.append(str(path))
        return real_stat(path, *args, **kwargs)

    async with Client(watched_server(True)) as client:
        await list_all(client)
        await list_all(client)
        monkeypatch.setattr(os, "stat", counting_stat)
        entries, _ = await list_all(client)
        monkeypatch.setattr(os, "stat", real_stat)
    files = sum(len(e["resources"]) for e in entries)
    inside_skills = [p for p in counted if "/kit-" in p and not p.endswith("/SKILL.md")]
    assert files == 40 and inside_skills == [], inside_skills[:12]


def rich_skill_named(skills: SkillsFolder, name: str) -> Path:
    folder = skills.write(name)
    (folder / "references").mkdir()
    (folder / "references" / "a.md").write_text("a\n", "utf-8")
    (folder / "references" / "b.md").write_text("b\n", "utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n")
    return folder


@CHANGE_MODES
async def test_a_skills_tree_swapped_in_above_the_skills_folder_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    """A deployment renames a new tree into place above the skills folder. The new tree
    shares the old SKILL.md (a hard link, so the catalog sees the same file) but holds a
    new notes.md: no watched file or folder of the skill changes, yet the listing must."""
    old = tmp_path / "app" / "skills" / "tool"
    old.mkdir(parents=True)
    (old / "SKILL.md").write_text("---\nname: tool\ndescription: D.\n---\n", "utf-8")
    (old / "notes.md").write_text("old notes\n", "utf-8")
    new = tmp_path / "next" / "skills" / "tool"
    new.mkdir(parents=True)
    os.link(old / "SKILL.md", new / "SKILL.md")
    (new / "notes.md").write_text("new notes\n", "utf-8")
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "app" / "skills"))
    reset_settings()
    await anyio.sleep(0.3)
    try:
        async with Client(watched_server(watch)) as client:
            await list_all(client)
            await list_all(client)
            (tmp_path / "app").rename(tmp_path / "previous")
            (tmp_path / "next").rename(tmp_path / "app")
            (entry,) = (await list_all(client))[0]
    finally:
        reset_settings()
    digests = {r["uri"]: r["digest"] for r in entry["resources"]}
    expected = "sha256:" + hashlib.sha256(b"new notes\n").hexdigest()
    assert digests["skill://tool/notes.md"] == expected
