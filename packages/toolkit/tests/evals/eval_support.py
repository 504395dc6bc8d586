"""Helpers of the skill eval tests: skill folders with eval files, std-tools' skills server
over stdio, and a scripted test model that picks a skill by the words of the query
(loaded by path: the tests run with --import-mode=importlib)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from doc_processing_toolkit.messages import ModelResponse
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

SKILLS: dict[str, str] = {
    "invoice-extraction": "Extracts header fields and line items from supplier invoices.",
    "pii-redaction": "Redacts e-mail addresses and phone numbers from extracted text.",
    "table-profiling": "Profiles a CSV table (column types, empty cells and ranges).",
}

INVOICE_QUERIES = [
    {"query": "Extract the fields of this invoice", "should_trigger": True},
    {"query": "Read the supplier invoice line items", "should_trigger": True},
    # The model sends this one to pii-redaction: a failing query with a confusion.
    {"query": "Redact the invoice before booking it", "should_trigger": True},
    {"query": "Translate this letter to German", "should_trigger": False},
    # The model wrongly loads invoice-extraction for this one.
    {"query": "Create an invoice template for my shop", "should_trigger": False},
]
PII_QUERIES = [
    {"query": "Redact the phone numbers from this text", "should_trigger": True},
    {"query": "Redact e-mail addresses before sharing", "should_trigger": True},
    {"query": "Profile the csv table", "should_trigger": False},
    {"query": "Summarise the meeting notes", "should_trigger": False},
]


def write_skill(root: Path, name: str, queries: list[dict[str, Any]] | None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {SKILLS[name]}\n---\n\n# {name}\n\nDo the task.\n",
        encoding="utf-8",
    )
    if queries is not None:
        (folder / "evals").mkdir()
        (folder / "evals" / "eval_queries.json").write_text(json.dumps(queries), encoding="utf-8")
    return folder


def stdio_skills(root: Path) -> dict[str, Any]:
    """std-tools' skills server as a child process over stdio."""
    return {
        "type": "mcp_command",
        "command": sys.executable,
        "args": ["-m", "doc_processing_std_tools.skills"],
        "env": {"DPTTOOLS_SKILLS_DIR": str(root)},
        "name": "skills",
    }


def last_user_text(request: ModelRequest) -> str:
    return next(m.text for m in reversed(request.messages) if m.role == "user")


class Picker:
    """A scripted model's brain: loads the skill whose keyword the query holds (first
    rule wins), else answers; counts the requests per query. `flaky` queries load their
    skill on two runs of every three."""

    def __init__(self, *, by_uri: bool = False, flaky: tuple[str, ...] = ()) -> None:
        self.by_uri = by_uri
        self.flaky = flaky
        self.seen: Counter[str] = Counter()
        self.rules = [
            ("redact", "pii-redaction"),
            ("invoice", "invoice-extraction"),
            ("csv", "table-profiling"),
        ]

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if any(m.role == "assistant" for m in request.messages):
            return reply("done")  # after a tool round
        text = last_user_text(request)
        self.seen[text] += 1
        if text in self.flaky and self.seen[text] % 3 == 0:
            return reply("I can do this without a skill.")
        for word, skill in self.rules:
            if word in text.lower():
                if self.by_uri:
                    return tool_call("load_skill", {"uri": f"skill://{skill}/SKILL.md"})
                return tool_call("load_skill", {"skill_name": skill})
        return reply("No skill needed.")
