"""search_skills: ranked full-text search over the listed skills, through a real MCP client."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import make_composed_server, skills_server
from doc_processing_std_tools.config import get_settings, reset_settings
from doc_processing_std_tools.skills.catalog import search as searching
from doc_processing_std_tools.skills.core.records import Catalog
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

DISTINCT = {
    "pdf-form-filler": "Fills in the fields of PDF forms and flattens them. Use for fillable PDFs.",
    "invoice-extraction": "Extracts header fields and line items from supplier invoices.",
    "slide-deck-builder": "Builds PowerPoint presentations from an outline, with speaker notes.",
    "meeting-minutes": "Turns a meeting transcript into minutes with decisions and actions.",
}
TOPICS = ["budget", "payroll", "contract", "recipe", "timesheet", "itinerary", "survey"]


def fill(skills: SkillsFolder, distractors: int = 200) -> None:
    for name, description in DISTINCT.items():
        skills.write(name, description=description)
    for index in range(distractors):
        topic = TOPICS[index % len(TOPICS)]
        skills.write(
            f"{topic}-helper-{index:03d}",
            description=f"Reviews {topic} documents of kind {index} and writes a short summary.",
        )


async def search(client: Client, **arguments: Any) -> tuple[dict[str, Any] | str, bool]:
    result = await client.call_tool("search_skills", arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    if result.is_error:
        return block.text, True
    payload = json.loads(block.text)
    assert result.structured_content == payload
    return payload, False


async def test_the_best_match_comes_first_with_the_documented_fields(
    skills: SkillsFolder,
) -> None:
    fill(skills)
    async with Client(skills_server) as client:
        found, is_error = await search(client, query="please fill in this PDF form for me")
    assert not is_error and isinstance(found, dict)
    assert set(found) == {"query", "skills", "count"}
    assert found["query"] == "please fill in this PDF form for me"
    first = found["skills"][0]
    assert first["name"] == "pdf-form-filler"
    assert set(first) == {"name", "description", "path", "score"}
    assert first["path"] == str(skills.path / "pdf-form-filler" / "SKILL.md")
    scores = [skill["score"] for skill in found["skills"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert found["count"] == len(found["skills"]) <= 10


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("extract the line items from these invoices", "invoice-extraction"),
        ("make a presentation with speaker notes", "slide-deck-builder"),
        ("write up the decisions from our meeting transcript", "meeting-minutes"),
    ],
)
async def test_stemmed_words_find_the_skill(
    skills: SkillsFolder, query: str, expected: str
) -> None:
    fill(skills)
    async with Client(skills_server) as client:
        found, _ = await search(client, query=query, limit=3)
    assert isinstance(found, dict)
    assert found["skills"][0]["name"] == expected


async def test_a_word_finds_a_skill_whose_name_starts_with_it(skills: SkillsFolder) -> None:
    fill(skills)
    skills.write("slackbot-automation", description="Automates a bot for chat workspaces.")
    for index in range(4):  # more words of the request than the Slack skill has
        skills.write(f"channel-digest-{index}", description="Summarises a team channel each week.")
    skills.write("invoice-checker", description="Checks one supplier invoice for errors.")
    async with Client(skills_server) as client:
        slack, _ = await search(client, query="post a message to our team Slack channel", limit=5)
        invoices, _ = await search(client, query="check these invoices", limit=5)
    assert isinstance(slack, dict) and isinstance(invoices, dict)
    assert "slackbot-automation" in [skill["name"] for skill in slack["skills"]]
    assert invoices["skills"][0]["name"] == "invoice-checker"


def fts5_ranking(catalog: Catalog, query: str) -> list[tuple[str, float]]:
    """Every skill matching `query`, ranked by SQLite's FTS5 bm25() over the same columns,
    tokenizer, weights and words (a long word also as a prefix): the reference."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE skills USING fts5(name, description, metadata, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    for record in catalog.skills:
        metadata = " ".join(record.metadata.values()) if record.metadata else ""
        db.execute(
            "INSERT INTO skills VALUES (?, ?, ?, ?)",
            (record.name.replace("-", " "), record.description, metadata, record.excerpt),
        )
    terms = []
    for word in searching.query_words(query):
        terms.append(f'"{word}"')
        if len(word) >= searching.MIN_PREFIX:
            terms.append(f'"{word}"*')
    rows = db.execute(
        "SELECT name, bm25(skills, 2.0, 1.0, 0.5, 1.5) AS rank FROM skills "
        "WHERE skills MATCH ? ORDER BY rank",
        (" OR ".join(terms),),
    ).fetchall()
    db.close()
    return [(name.replace(" ", "-"), round(-rank, 4)) for name, rank in rows]


@pytest.mark.parametrize(
    "query",
    [
        "extract the line items of supplier invoices",
        "slack meeting notes",
        "review budgets and payroll documents",
        "PDF forms",
        "contracts recipes itineraries surveys timesheets",
    ],
)
def test_the_ranking_is_fts5_bm25(skills: SkillsFolder, query: str) -> None:
    fill(skills, distractors=120)
    skills.write("slackbot-notes", description="Posts meeting notes to Slack channels.")
    skills.write(
        "budget-review",
        description="Reviews budgets.",
        body="# Budget\n\nCompare each budget line, payroll totals and budget notes.\n",
    )
    settings = get_settings()
    catalog = skills_state.scan(settings)
    expected = fts5_ranking(catalog, query)
    found = searching.SkillSearch().search(catalog, query, searching.MAX_SEARCH_LIMIT)
    assert expected, "the reference finds something"
    assert [(hit.record.name, hit.score) for hit in found] == sorted(
        expected, key=lambda hit: (-hit[1], hit[0])
    )[: searching.MAX_SEARCH_LIMIT]


def test_the_index_follows_removed_and_changed_skills_like_fts5(skills: SkillsFolder) -> None:
    fill(skills, distractors=60)
    settings = get_settings()
    search = searching.SkillSearch()
    search.search(skills_state.scan(settings), "budget", 5)
    for index in range(0, 60, 2):
        topic = TOPICS[index % len(TOPICS)]
        shutil.rmtree(skills.path / f"{topic}-helper-{index:03d}")
    skills.write("budget-helper-001", description="Plans a budget for a budget review.")
    time.sleep(0.05)
    catalog = skills_state.scan(settings)
    found = search.search(catalog, "budget review", 50)
    expected = sorted(fts5_ranking(catalog, "budget review"), key=lambda h: (-h[1], h[0]))
    assert [(hit.record.name, hit.score) for hit in found] == expected[:50]


async def test_limit_bounds_the_answer_and_is_checked(skills: SkillsFolder) -> None:
    fill(skills)
    async with Client(skills_server) as client:
        found, _ = await search(client, query="budget documents summary", limit=50)
        assert isinstance(found, dict) and found["count"] == 50
        found, _ = await search(client, query="budget documents summary", limit=1)
        assert isinstance(found, dict) and found["count"] == 1
        for bad in (0, 51, -3):
            text, is_error = await search(client, query="budget", limit=bad)
            assert is_error and "limit" in str(text) and "1 to 50" in str(text)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_an_empty_query_is_an_error_naming_the_argument(
    skills: SkillsFolder, query: str
) -> None:
    fill(skills, distractors=3)
    async with Client(skills_server) as client:
        text, is_error = await search(client, query=query)
    assert is_error and "query" in str(text)


@pytest.mark.parametrize(
    "query",
    ['"pdf', "pdf AND (form", "NEAR(pdf form)", "form*", "name:pdf", "^pdf -form", "'; DROP"],
)
async def test_search_syntax_in_a_query_is_plain_text(skills: SkillsFolder, query: str) -> None:
    fill(skills, distractors=10)
    async with Client(skills_server) as client:
        found, is_error = await search(client, query=query)
    assert not is_error, found
    assert isinstance(found, dict)


async def test_a_query_without_a_match_says_so(skills: SkillsFolder) -> None:
    fill(skills, distractors=5)
    async with Client(skills_server) as client:
        found, is_error = await search(client, query="zebra quokka ...")
    assert not is_error and isinstance(found, dict)
    assert found["count"] == 0 and found["skills"] == []
    assert "list_skills" in found["note"]


async def test_changes_are_seen_as_list_skills_sees_them(skills: SkillsFolder) -> None:
    fill(skills, distractors=20)
    async with Client(skills_server) as client:
        found, _ = await search(client, query="astronomy telescope")
        assert isinstance(found, dict) and found["count"] == 0
        skills.write("star-charts", description="Plans a night of astronomy with a telescope.")
        found, _ = await search(client, query="astronomy telescope")
        assert isinstance(found, dict) and found["skills"][0]["name"] == "star-charts"
        # Edited: the old words no longer find it, the new ones do.
        skills.write("star-charts", description="Draws tide tables for a harbour.")
        found, _ = await search(client, query="astronomy telescope")
        assert isinstance(found, dict) and found["count"] == 0
        found, _ = await search(client, query="tide tables")
        assert isinstance(found, dict) and found["skills"][0]["name"] == "star-charts"
        # Removed.
        (skills.path / "star-charts" / "SKILL.md").unlink()
        found, _ = await search(client, query="tide tables")
        assert isinstance(found, dict) and found["count"] == 0


async def test_only_listed_skills_are_found(
    skills: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills.write("good-lighthouse", description="Keeps the lighthouse log.")
    skills.write("broken-lighthouse", frontmatter="name: broken-lighthouse\n")
    second = tmp_path / "second"
    (second / "good-lighthouse").mkdir(parents=True)
    (second / "good-lighthouse" / "SKILL.md").write_text(
        "---\nname: good-lighthouse\ndescription: A lighthouse duplicate, left out.\n---\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", f"{skills.path}{os.pathsep}{second}")
    reset_settings()
    async with Client(skills_server) as client:
        found, _ = await search(client, query="lighthouse duplicate broken log", limit=50)
    assert isinstance(found, dict)
    assert [skill["name"] for skill in found["skills"]] == ["good-lighthouse"]
    assert found["skills"][0]["path"] == str(skills.path / "good-lighthouse" / "SKILL.md")


async def test_the_composed_server_searches_too(skills: SkillsFolder) -> None:
    fill(skills, distractors=5)
    async with Client(make_composed_server()) as client:
        found, is_error = await search(client, query="invoices")
    assert not is_error and isinstance(found, dict)
    assert found["skills"][0]["name"] == "invoice-extraction"


async def test_a_cut_listing_names_search_skills_and_search_reaches_the_rest(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(1000):
        skills.write(
            f"skill-{index:04d}",
            description=f"Handles documents of family {index} ({'word ' * 20}).",
        )
    skills.write("zz-last-lantern", description="Restores antique brass lanterns.")
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "50000")
    reset_settings()
    async with Client(skills_server) as client:
        block = (await client.call_tool("list_skills", {})).content[0]
        assert isinstance(block, TextContent)
        listed = json.loads(block.text)
        assert listed["count"] == 1001 and len(listed["skills"]) < 1001
        assert "search_skills" in listed["truncated"]
        assert "zz-last-lantern" not in {skill["name"] for skill in listed["skills"]}
        found, _ = await search(client, query="brass lantern restoration")
    assert isinstance(found, dict) and found["skills"][0]["name"] == "zz-last-lantern"


def test_the_search_follows_each_new_catalog_by_difference(skills: SkillsFolder) -> None:
    fill(skills, distractors=30)
    settings = get_settings()
    first = skills_state.search_skills(settings, "invoices", 5)
    skills.write("invoice-archive", description="Archives paid invoices by year.")
    second = json.loads(skills_state.search_skills(settings, "invoices archive", 5))
    assert second["skills"][0]["name"] == "invoice-archive"
    assert json.loads(first)["skills"][0]["name"] == "invoice-extraction"
