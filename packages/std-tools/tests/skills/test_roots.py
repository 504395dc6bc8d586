"""Several skills folders, nested collections and folder names tool calls cannot reach.

Every test goes through a real in-memory MCP session and holds the server to one promise:
whatever list_skills lists, load_skill (and the resource and script tools) reach, and they
reach the same folder that list_skills named.

The real-collection tests use the public collections kept next to the repository (absent
from a fresh clone, so they skip then). Attribution, as their README asks:
anthropics-skills (github.com/anthropics/skills, Apache-2.0 per skill), openai-skills
(github.com/openai/skills, Apache-2.0; notion-* MIT, Notion Labs), obra-superpowers
(github.com/obra/superpowers, MIT, (c) 2025 Jesse Vincent), k-dense-scientific-skills
(github.com/K-Dense-AI/claude-scientific-skills, MIT, (c) 2025 K-Dense Inc.).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent
from skill_collections import HOW_TO_GET, corpora

from doc_processing_std_tools.config import ConfigError, load_settings, reset_settings
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

pytestmark = pytest.mark.anyio


def write_skill(folder: Path, name: str | None = None, body: str = "Do it.\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    name = folder.name if name is None else name
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Does {folder.as_posix()} things.\n---\n\n{body}",
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Settings read again from the environment the test sets, and reset afterwards."""
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "200000")
    reset_settings()
    yield monkeypatch
    reset_settings()


def use(monkeypatch: pytest.MonkeyPatch, *roots: Path, depth: int | None = None) -> None:
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", os.pathsep.join(str(r) for r in roots))
    if depth is None:
        monkeypatch.delenv("DPTTOOLS_SKILLS_DEPTH", raising=False)
    else:
        monkeypatch.setenv("DPTTOOLS_SKILLS_DEPTH", str(depth))
    reset_settings()


async def call(client: Client, tool: str, **arguments: Any) -> tuple[str, bool]:
    result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


async def list_then_load_everything(client: Client) -> dict[str, Any]:
    """list_skills, then load_skill on every listed name: each loads from the directory
    list_skills gave for it (except a folder whose name breaks the naming rule, which is
    listed with a warning saying tool calls cannot name it)."""
    text, is_error = await call(client, "list_skills")
    assert not is_error, text
    listing: dict[str, Any] = json.loads(text)
    unreachable = {
        d["skill"] for d in listing.get("diagnostics", []) if d["code"] == "invalid_folder_name"
    }
    for skill in listing["skills"]:
        loaded, failed = await call(client, "load_skill", skill_name=skill["name"])
        if skill["name"] in unreachable:
            assert failed and "is listed, but its folder name breaks" in loaded
            assert skill["path"] in loaded
            continue
        assert not failed, loaded
        assert loaded.startswith(f'<skill_content name="{skill["name"]}"')
        assert f'directory="{skill["directory"]}"' in loaded.split("\n", 1)[0]
    return listing


def codes(listing: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["skill"], d["code"]) for d in listing.get("diagnostics", [])]


async def test_several_roots_list_as_one_and_the_first_root_keeps_a_name(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "team", tmp_path / "shared"
    write_skill(first / "report", body="the team's report\n")
    write_skill(second / "report", body="the shared report\n")
    write_skill(second / "summary")
    use(environment, first, second)
    async with Client(skills_server) as client:
        listing = await list_then_load_everything(client)
        loaded, _ = await call(client, "load_skill", skill_name="report")
        resource, _ = await call(
            client, "load_skill_resource", skill_name="report", resource_path="SKILL.md"
        )
    assert [s["name"] for s in listing["skills"]] == ["report", "summary"]
    assert listing["skills_dir"] == str(first.resolve())
    assert listing["skills_dirs"] == [str(first.resolve()), str(second.resolve())]
    assert listing["skills"][0]["directory"] == str((first / "report").resolve())
    assert codes(listing) == [("report", "duplicate_name")]
    message = listing["diagnostics"][0]["message"]
    assert (
        str(second.resolve() / "report") in message and str(first.resolve() / "report") in message
    )
    assert "the team's report" in loaded and "the team's report" in resource


async def test_one_root_keeps_the_seed_payload_without_skills_dirs(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    write_skill(tmp_path / "only" / "alpha")
    use(environment, tmp_path / "only")
    async with Client(skills_server) as client:
        listing = await list_then_load_everything(client)
    assert set(listing) == {"skills", "skills_dir", "count"}


async def test_a_nested_collection_is_found_at_its_depth_and_tools_reach_inside_it(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "collection"
    for plugin, skill in [("pdf", "pdf-tools"), ("sheets", "xlsx-tools"), ("sheets", "csv")]:
        folder = write_skill(root / "plugins" / plugin / "skills" / skill)
        (folder / "references").mkdir()
        (folder / "references" / "notes.md").write_text(f"notes of {skill}\n", encoding="utf-8")
        (folder / "run.py").write_text(f"print('ran {skill}')\n", encoding="utf-8")
    use(environment, root)
    async with Client(skills_server) as client:
        shallow = await list_then_load_everything(client)
    assert shallow["skills"] == []
    assert [(d["code"], d["level"]) for d in shallow["diagnostics"]] == [
        ("skills_deeper", "warning")
    ]
    message = shallow["diagnostics"][0]["message"]
    assert "plugins/pdf/skills/pdf-tools" in message and "DPTTOOLS_SKILLS_DEPTH=4" in message

    use(environment, root, depth=4)
    async with Client(skills_server) as client:
        deep = await list_then_load_everything(client)
        notes, notes_failed = await call(
            client, "load_skill_resource", skill_name="csv", resource_path="references/notes.md"
        )
        ran, ran_failed = await call(
            client, "execute_skill_script", skill_name="xlsx-tools", script_path="run.py"
        )
        escape, escaped = await call(
            client, "load_skill_resource", skill_name="csv", resource_path="../xlsx-tools/run.py"
        )
    assert [s["name"] for s in deep["skills"]] == ["csv", "pdf-tools", "xlsx-tools"]
    assert "diagnostics" not in deep
    assert not notes_failed and notes == "notes of csv\n"
    assert not ran_failed and json.loads(ran)["stdout"] == "ran xlsx-tools\n"
    assert escaped and "csv" in escape


async def test_a_name_found_twice_in_one_nested_root_goes_to_the_shallowest(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "collection"
    write_skill(root / "b" / "skills" / "lint", body="deep b\n")
    write_skill(root / "a" / "skills" / "lint", body="deep a\n")
    write_skill(root / "lint", body="shallow\n")
    use(environment, root, depth=3)
    async with Client(skills_server) as client:
        listing = await list_then_load_everything(client)
        loaded, _ = await call(client, "load_skill", skill_name="lint")
    assert [s["name"] for s in listing["skills"]] == ["lint"]
    assert "shallow" in loaded
    assert codes(listing) == [
        ("a/skills/lint", "duplicate_name"),
        ("b/skills/lint", "duplicate_name"),
    ]


async def test_a_skill_added_deep_inside_a_known_collection_is_listed_at_once(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "collection"
    write_skill(root / "plugins" / "one" / "skills" / "first")
    use(environment, root, depth=4)
    async with Client(skills_server) as client:
        before = await list_then_load_everything(client)
        write_skill(root / "plugins" / "one" / "skills" / "second")
        after = await list_then_load_everything(client)
    assert [s["name"] for s in before["skills"]] == ["first"]
    assert [s["name"] for s in after["skills"]] == ["first", "second"]


async def test_a_folder_name_that_breaks_the_rule_is_listed_with_a_warning_saying_rename(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "skills"
    write_skill(root / "good-skill")
    write_skill(root / "Bad_Folder", name="bad-folder")
    write_skill(root / "PDF Tools", name="pdf-tools")
    use(environment, root)
    async with Client(skills_server) as client:
        listing = await list_then_load_everything(client)
        refused, failed = await call(client, "load_skill", skill_name="Bad_Folder")
        missing, absent = await call(client, "load_skill", skill_name="bad-folder")
    # The seed's frontmatter table: a name that breaks the naming pattern is loaded with a
    # warning; tool calls keep their strict rule.
    assert [s["name"] for s in listing["skills"]] == ["Bad_Folder", "PDF Tools", "good-skill"]
    assert codes(listing) == [
        ("Bad_Folder", "invalid_folder_name"),
        ("Bad_Folder", "name_mismatch"),
        ("PDF Tools", "invalid_folder_name"),
        ("PDF Tools", "name_mismatch"),
    ]
    for diagnostic in listing["diagnostics"]:
        assert diagnostic["level"] == "warning"
    message = listing["diagnostics"][0]["message"]
    assert "cannot reach it by this name" in message
    assert "rename the folder (for example to 'bad-folder'" in message
    assert failed and "is listed, but its folder name breaks the naming rule" in refused
    assert "'bad-folder'" in refused
    assert absent and "no skill named 'bad-folder'" in missing


async def test_an_unlisted_skill_is_refused_with_the_reason_it_was_left_out(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "skills"
    (root / "draft").mkdir(parents=True)
    (root / "draft" / "SKILL.md").write_text("---\nname: draft\n---\nbody\n", encoding="utf-8")
    use(environment, root)
    async with Client(skills_server) as client:
        text, failed = await call(client, "load_skill", skill_name="draft")
    assert failed
    assert "is not listed, so it cannot be loaded" in text and "description" in text


def test_the_skills_setting_is_a_path_list_and_the_depth_a_positive_integer(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    settings = load_settings(
        {"DPTTOOLS_SKILLS_DIR": f"{a}{os.pathsep}{os.pathsep}{b}{os.pathsep}{a}"}
    )
    assert settings.skill_roots == (a.resolve(), b.resolve())
    assert settings.skills_dir == a.resolve() and settings.skills_depth == 1
    assert load_settings({"DPTTOOLS_SKILLS_DIR": str(a)}).skill_roots == (a.resolve(),)
    for bad in ("0", "deep", "-2"):
        with pytest.raises(ConfigError, match="DPTTOOLS_SKILLS_DEPTH"):
            load_settings({"DPTTOOLS_SKILLS_DEPTH": bad})


def test_an_unchanged_set_of_roots_gives_the_same_catalog_object(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    write_skill(tmp_path / "a" / "one")
    write_skill(tmp_path / "b" / "two")
    use(environment, tmp_path / "a", tmp_path / "b")
    from doc_processing_std_tools.config import get_settings

    settings = get_settings()
    old = time.time() - 60  # written long ago: no stamp is too recent to trust
    for path in tmp_path.rglob("*"):
        os.utime(path, (old, old))
    first = skills_state.scan(settings)
    assert skills_state.scan(settings) is first
    assert skills_state.cached(settings) in (first, None)
    write_skill(tmp_path / "b" / "three")
    assert [s.name for s in skills_state.scan(settings).skills] == ["one", "three", "two"]


async def test_collections_pointed_at_whole_list_then_load_every_skill(
    environment: pytest.MonkeyPatch,
) -> None:
    root = corpora()
    on_disk = {
        p.parent.name
        for p in root.rglob("SKILL.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }
    use(environment, root)
    async with Client(skills_server) as client:
        shallow = await list_then_load_everything(client)
    assert shallow["skills"] == []
    use(environment, root, depth=3)
    async with Client(skills_server) as client:
        deep = await list_then_load_everything(client)
    listed = {s["name"] for s in deep["skills"]}
    left_out = {
        d["skill"].rpartition("/")[2] for d in deep.get("diagnostics", []) if d["level"] == "error"
    }
    assert listed | left_out == on_disk
    assert len(listed) > 100


async def test_hidden_collection_folders_can_be_listed_as_roots(
    environment: pytest.MonkeyPatch,
) -> None:
    base = corpora() / "openai-skills" / "skills"
    roots = sorted(p for p in base.iterdir() if p.is_dir() and p.name.startswith("."))
    if not roots:
        pytest.skip(HOW_TO_GET)
    use(environment, *roots)
    async with Client(skills_server) as client:
        listing = await list_then_load_everything(client)
    assert listing["count"] == len(list(base.rglob("SKILL.md")))
    # Folders are reported as the server resolved them (a linked collection by its target).
    assert listing["skills_dirs"] == [str(r.resolve()) for r in roots]


async def test_the_skills_extension_lists_the_same_skills_from_the_same_folders(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    from doc_processing_std_tools.skills.server import new_skills_server

    from ..skills_extension.support import list_all, raw

    first, second = tmp_path / "team", tmp_path / "collection"
    write_skill(first / "report", body="the team's report\n")
    write_skill(first / "Bad_Folder", name="bad-folder")
    write_skill(second / "plugins" / "p" / "skills" / "report", body="a nested report\n")
    nested = write_skill(second / "plugins" / "p" / "skills" / "pdf-tools")
    (nested / "notes.md").write_text("nested notes\n", encoding="utf-8")
    use(environment, first, second, depth=4)
    async with Client(new_skills_server()) as client:
        listing = await list_then_load_everything(client)
        entries, _ = await list_all(client)
        by_name = {entry["frontmatter"]["name"]: entry for entry in entries}
        notes = await raw(client, "resources/read", {"uri": "skill://pdf-tools/notes.md"})
        report = await raw(client, "resources/read", {"uri": "skill://report/SKILL.md"})
    # The tools list a folder whose name breaks the rule (with a warning); the extension,
    # whose URIs need a valid name, leaves it out.
    assert [s["name"] for s in listing["skills"]] == ["Bad_Folder", "pdf-tools", "report"]
    assert sorted(by_name) == ["pdf-tools", "report"]
    assert notes["contents"][0]["text"] == "nested notes\n"
    assert "the team's report" in report["contents"][0]["text"]


async def test_the_composed_server_over_stdio_takes_a_folder_list_and_a_depth(
    tmp_path: Path,
) -> None:
    import sys

    from mcp.client.stdio import StdioServerParameters

    first, collection = tmp_path / "team", tmp_path / "collection"
    write_skill(first / "report")
    write_skill(collection / "plugins" / "p" / "skills" / "pdf-tools")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "doc_processing_std_tools",
            "--skills-dir",
            f"{first}{os.pathsep}{collection}",
            "--skills-depth",
            "4",
            "--workspace",
            str(tmp_path),
        ],
        env={"DPTTOOLS_SKILLS_DEPTH": "1"},
    )
    async with Client(params) as client:
        listing = await list_then_load_everything(client)
    assert [s["name"] for s in listing["skills"]] == ["pdf-tools", "report"]
    assert listing["skills_dirs"] == [str(first), str(collection)]


def test_more_roots_than_the_cache_used_to_hold_stay_warm(tmp_path: Path) -> None:
    from doc_processing_std_tools.skills.catalog.scan import SkillCatalog

    roots = tuple(
        write_skill(tmp_path / f"root-{i:02d}" / f"skill-{i:02d}").parent for i in range(40)
    )
    old = time.time() - 60
    for path in tmp_path.rglob("*"):
        os.utime(path, (old, old))
    catalog = SkillCatalog()
    first = catalog.scan_roots(roots, max_bytes=1 << 20)
    assert first.count == 40
    assert catalog.scan_roots(roots, max_bytes=1 << 20) is first
    assert catalog.peek_roots(roots, max_bytes=1 << 20) is first


def test_every_diagnostic_of_a_nested_skill_names_its_folder_from_the_root(
    tmp_path: Path,
) -> None:
    from doc_processing_std_tools.skills.catalog.scan import scan_once

    skills = tmp_path / "collection" / "plugins" / "p" / "skills"
    write_skill(skills / "good")
    binary = skills / "binary"
    binary.mkdir()
    (binary / "SKILL.md").write_bytes(b"---\nname: binary\ndescription: d\n---\n\x00\n")
    write_skill(skills / "other", name="else")
    catalog = scan_once(tmp_path / "collection", max_bytes=1 << 20, depth=4)
    assert [(d.skill, d.code) for d in catalog.diagnostics] == [
        ("plugins/p/skills/binary", "binary_skill_md"),
        ("plugins/p/skills/other", "name_mismatch"),
    ]


async def test_a_link_from_one_skills_folder_into_another_is_refused(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    """Attack: each skill is confined to the folder it was found in, not to every folder
    listed; a link (or a '..' path) from a skill of the second folder into the first, or
    from a nested skill out of its collection, reads nothing."""
    first, second = tmp_path / "private", tmp_path / "shared"
    secret = write_skill(first / "private-skill") / "secret.md"
    secret.write_text("the secret\n", encoding="utf-8")
    outside = tmp_path / "outside.py"
    outside.write_text("print('outside ran')\n", encoding="utf-8")
    shared = write_skill(second / "plugins" / "p" / "skills" / "shared-skill")
    (shared / "peek.md").symlink_to(secret)
    (shared / "run.py").symlink_to(outside)
    use(environment, first, second, depth=4)
    async with Client(skills_server) as client:
        await list_then_load_everything(client)
        linked, linked_failed = await call(
            client, "load_skill_resource", skill_name="shared-skill", resource_path="peek.md"
        )
        climbed, climbed_failed = await call(
            client,
            "load_skill_resource",
            skill_name="shared-skill",
            resource_path="../../../../../private/private-skill/secret.md",
        )
        ran, ran_failed = await call(
            client, "execute_skill_script", skill_name="shared-skill", script_path="run.py"
        )
        own, own_failed = await call(
            client, "load_skill_resource", skill_name="private-skill", resource_path="secret.md"
        )
    assert linked_failed and "the secret" not in linked and "outside" in linked
    assert climbed_failed and "the secret" not in climbed
    assert ran_failed and "outside ran" not in ran
    assert not own_failed and own == "the secret\n"
