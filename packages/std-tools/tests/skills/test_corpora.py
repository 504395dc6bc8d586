"""Real skill collections written by other people list without a crash, as they deserve.

The collections live in ../shared/corpora next to the repository and are absent from a
fresh clone, so these tests skip when the folder is missing. Attribution, as the data's
README asks:

- anthropics-skills: github.com/anthropics/skills, Apache-2.0 per skill.
- openai-skills: github.com/openai/skills, Apache-2.0 per skill; the notion-* skills are
  MIT (Notion Labs).
- obra-superpowers: github.com/obra/superpowers, MIT, (c) 2025 Jesse Vincent.
- k-dense-scientific-skills: github.com/K-Dense-AI/claude-scientific-skills, MIT,
  (c) 2025 K-Dense Inc.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from mcp.types import TextContent
from skill_collections import COLLECTIONS, corpora, skills_folders

from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.audit.folders import audit_skill
from doc_processing_std_tools.skills.catalog.scan import Catalog, scan_once
from doc_processing_std_tools.skills.server import skills_server

pytestmark = pytest.mark.anyio

MAX = 50 * 1024 * 1024
CODES_OF_FIELDS = {"description_too_long", "name_mismatch", "missing_name", "invalid_metadata"}


def independent_expectation(skill_md: Path) -> set[str]:
    """The warning codes a skill deserves, worked out with plain PyYAML."""
    text = skill_md.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    match = re.match(r"---\n(.*?)\n---", text, re.DOTALL)
    assert match, skill_md
    fields: dict[str, Any] = yaml.safe_load(match.group(1))
    folder = skill_md.parent.name
    expected: set[str] = set()
    if "name" not in fields:
        expected.add("missing_name")
    elif fields["name"] != folder:
        expected.add("name_mismatch")
    if len(str(fields["description"]).strip()) > 1024:
        expected.add("description_too_long")
    if len(str(fields.get("compatibility") or "")) > 500:
        expected.add("compatibility_too_long")
    if "metadata" in fields and not isinstance(fields["metadata"], dict | None):
        expected.add("invalid_metadata")
    # Of the audit's findings, list_skills carries hidden text only (a warning under its
    # own code; in SKILL.md, the one hidden_text warning); the rest stay in audit and
    # validate.
    for finding in audit_skill(skill_md.parent):
        if finding.code in HIDDEN_KINDS:
            expected.add("hidden_text" if finding.file == "SKILL.md" else finding.code)
    return expected


HIDDEN_KINDS = {
    "tag_characters",
    "variation_selectors",
    "zero_width_characters",
    "bidi_controls",
    "format_characters",
}


@pytest.mark.parametrize("name", COLLECTIONS)
def test_every_collection_lists_with_the_diagnostics_its_skills_deserve(name: str) -> None:
    collection = corpora() / name
    folders = skills_folders(collection)
    assert folders
    listed = 0
    for folder in folders:
        catalog = scan_once(folder, max_bytes=MAX)
        on_disk = sorted(
            p.name
            for p in folder.iterdir()
            if not p.name.startswith(".") and (p / "SKILL.md").is_file()
        )
        assert [s.name for s in catalog.skills] == on_disk
        listed += catalog.count
        got: dict[str, set[str]] = {}
        for diagnostic in catalog.diagnostics:
            assert diagnostic.level == "warning", diagnostic
            got.setdefault(diagnostic.skill, set()).add(diagnostic.code)
        for skill in catalog.skills:
            assert got.get(skill.name, set()) == independent_expectation(skill.path), skill.name
        json.loads(catalog.json)
    assert listed == len(list(collection.rglob("SKILL.md")))


def test_the_known_facts_about_the_collections_hold() -> None:
    root = corpora()

    def catalog(relative: str) -> Catalog:
        return scan_once(root / relative, max_bytes=MAX)

    anthropics = catalog("anthropics-skills/skills")
    assert anthropics.count == 12
    assert [(d.skill, d.code) for d in anthropics.diagnostics if d.code in CODES_OF_FIELDS] == [
        ("claude-api", "description_too_long")
    ]
    k_dense = catalog("k-dense-scientific-skills/scientific-skills")
    assert k_dense.count == 129
    assert ("database-lookup", "description_too_long") in {
        (d.skill, d.code) for d in k_dense.diagnostics
    }
    # CRLF line endings load like any other file.
    geomaster = k_dense.get("geomaster")
    assert geomaster is not None and "\r" not in geomaster.description
    # Nested metadata values become JSON text.
    mermaid = k_dense.get("markdown-mermaid-writing")
    assert mermaid is not None and mermaid.metadata is not None
    assert any(value.startswith(("{", "[")) for value in mermaid.metadata.values())
    # The openai skills sit in hidden folders, which a skills folder never lists.
    assert catalog("openai-skills/skills").count == 0
    assert catalog("openai-skills/skills/.curated").count == 6
    assert catalog("obra-superpowers/skills").count == 14


def test_descriptions_with_markup_characters_survive_unchanged() -> None:
    root = corpora()
    seen = 0
    for folder in skills_folders(root):
        payload = json.loads(scan_once(folder, max_bytes=MAX).json)
        for skill in payload["skills"]:
            if any(ch in skill["description"] for ch in "<>&"):
                seen += 1
                raw = Path(skill["path"]).read_text(encoding="utf-8-sig")
                first = skill["description"].split()[0]
                assert first in raw
    assert seen > 0


async def test_every_skill_of_every_collection_loads_through_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = corpora()
    loaded = 0
    try:
        for folder in skills_folders(root):
            monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(folder))
            reset_settings()
            async with Client(skills_server) as client:
                result = await client.call_tool("list_skills", {})
                block = result.content[0]
                assert isinstance(block, TextContent) and not result.is_error
                for skill in json.loads(block.text)["skills"]:
                    answer = await client.call_tool("load_skill", {"skill_name": skill["name"]})
                    text = answer.content[0]
                    assert isinstance(text, TextContent)
                    assert not answer.is_error, text.text
                    assert text.text.startswith(f'<skill_content name="{skill["name"]}"')
                    loaded += 1
    finally:
        reset_settings()
    assert loaded == len(list(root.rglob("SKILL.md")))
