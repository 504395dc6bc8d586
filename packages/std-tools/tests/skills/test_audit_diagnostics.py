"""The audit's findings are validate warnings, under the audit's code, never hiding the
skill; list_skills carries only hidden text among them (the rest stay in audit and
validate). The findings in a skill's files are kept with the stamps of those files, so a
new process reads none of them again and an edited, added or removed file is audited
again on the next list. Real files, a real in-memory MCP client, the real command line."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import skills_server
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.audit.folders import audit_skill
from doc_processing_std_tools.skills.catalog.scan import Catalog, SkillCatalog
from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.core.diagnostics import AUDIT_CODES, CODES

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

MAX = 1 << 20
FETCH = "import json\n\nimport socket\n\nprint(json.dumps({}))\n"
CLEAN = "import json\n\nprint(json.dumps({'ok': True}))\n"
# Text a reader does not see: the audit finding that list_skills carries.
HIDING = "import json\n\n# Amount: \u202e0001\nprint(json.dumps({}))\n"

_opened: list[str] = []
_counting = threading.local()


def _audit_hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and getattr(_counting, "on", False):
        path = args[0]
        if isinstance(path, str | bytes):
            _opened.append(os.fsdecode(path))


sys.addaudithook(_audit_hook)


def files_opened(action: Any) -> tuple[Any, list[str]]:
    """Run `action`; return its result and every path this thread opened by name."""
    _opened.clear()
    _counting.on = True
    try:
        result = action()
    finally:
        _counting.on = False
    return result, list(_opened)


def age(root: Path) -> None:
    """Date every file back a minute, as files that were not just written."""
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 60_000_000_000), follow_symlinks=False)


def flagged(skills: SkillsFolder) -> None:
    """One skill per finding the issue names, and one with none."""
    (skills.write("shell-setup") / "scripts").mkdir()
    (skills.path / "shell-setup" / "scripts" / "setup.sh").write_text("echo hi\n", "utf-8")
    (skills.write("pytest-hook") / "conftest.py").write_text("x = 1\n", "utf-8")
    (skills.write("npm-kit") / "package.json").write_text(
        '{\n  "name": "kit",\n  "scripts": {\n    "postinstall": "node x.js"\n  }\n}\n', "utf-8"
    )
    (skills.write("fetcher") / "scripts").mkdir()
    (skills.path / "fetcher" / "scripts" / "fetch.py").write_text(FETCH, "utf-8")
    (skills.write("plain") / "notes.md").write_text("# Notes\n", "utf-8")


EXPECTED = {
    "fetcher": [("python_network", "scripts/fetch.py, line 3: imports socket")],
    "npm-kit": [("lifecycle_script", "package.json, line 4: declares postinstall")],
    "pytest-hook": [("conftest", "conftest.py: a conftest.py")],
    "shell-setup": [("non_python_script", "scripts/setup.sh, line 1: ships a shell script")],
}


def by_skill(diagnostics: list[dict[str, str]]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for d in diagnostics:
        assert d["level"] == "warning", d
        prefix = next(start for _, start in EXPECTED.get(d["skill"], [("", "")]))
        found.setdefault(d["skill"], []).append((d["code"], d["message"][: len(prefix)]))
    return found


async def call(client: Client, name: str, **arguments: Any) -> str:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def roomy(skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch) -> SkillsFolder:
    """The skills folder with an output limit that holds every diagnostic."""
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "100000")
    reset_settings()
    return skills


async def test_audit_findings_other_than_hidden_text_stay_out_of_list_skills(
    roomy: SkillsFolder,
) -> None:
    flagged(roomy)
    async with Client(skills_server) as client:
        catalog = json.loads(await call(client, "list_skills"))
        assert [s["name"] for s in catalog["skills"]] == [
            "fetcher",
            "npm-kit",
            "plain",
            "pytest-hook",
            "shell-setup",
        ]
        assert "diagnostics" not in catalog  # audit and validate say them
        # Listed means loadable: a finding is a warning about the skill, not a refusal.
        loaded = await call(client, "load_skill", skill_name="shell-setup")
        assert "scripts/setup.sh" in loaded


async def test_editing_adding_and_removing_files_changes_the_findings_on_the_next_list(
    roomy: SkillsFolder,
) -> None:
    folder = roomy.write("fetcher")
    (folder / "scripts").mkdir()
    script = folder / "scripts" / "fetch.py"
    script.write_text(CLEAN, "utf-8")
    age(roomy.path)

    async def codes(client: Client) -> list[str]:
        catalog = json.loads(await call(client, "list_skills"))
        return [d["code"] for d in catalog.get("diagnostics", [])]

    async with Client(skills_server) as client:
        assert await codes(client) == []
        assert await codes(client) == []  # unchanged: answered from what was kept
        script.write_text(HIDING, "utf-8")  # edited in place: only the file's stamp moves
        assert await codes(client) == ["bidi_controls"]
        added = folder / "scripts" / "notes.md"
        added.write_text("Say \U000e0068\U000e0069\n", "utf-8")  # added
        assert sorted(await codes(client)) == ["bidi_controls", "tag_characters"]
        script.write_text(CLEAN, "utf-8")
        added.unlink()  # removed
        assert await codes(client) == []


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat"])
def test_peek_sees_a_script_edit_deep_in_a_skill(skills: SkillsFolder, watch: bool) -> None:
    folder = skills.write("fetcher")
    (folder / "scripts" / "lib").mkdir(parents=True)
    script = folder / "scripts" / "lib" / "fetch.py"
    script.write_text(CLEAN, "utf-8")
    age(skills.path)
    catalog = SkillCatalog(watch=watch)
    first = catalog.scan(skills.path, max_bytes=MAX)
    assert first.diagnostics == ()
    assert catalog.peek(skills.path, max_bytes=MAX) is first
    script.write_text(HIDING, "utf-8")
    assert catalog.peek(skills.path, max_bytes=MAX) is None
    codes = [d.code for d in catalog.scan(skills.path, max_bytes=MAX).diagnostics]
    assert codes == ["bidi_controls"]
    catalog.clear()


def scan_with(cache: Path, root: Path) -> Catalog:
    """What a new server process does first: a new catalog on the persistent index."""
    return SkillCatalog(cache_dir=cache).scan(root, max_bytes=MAX)


def test_a_new_process_reuses_the_findings_kept_in_the_index(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    flagged(skills)
    (skills.write("hider") / "notes.md").write_text("Amount: \u202e0001\n", "utf-8")
    age(skills.path)
    cache = tmp_path / "cache"
    first, opened = files_opened(lambda: scan_with(cache, skills.path))
    read = {
        Path(p).relative_to(skills.path).as_posix()
        for p in opened
        if p.startswith(str(skills.path))
    }
    assert "fetcher/scripts/fetch.py" in read and "npm-kit/package.json" in read
    again, opened = files_opened(lambda: scan_with(cache, skills.path))
    assert [p for p in opened if p.startswith(str(skills.path))] == []
    assert again.diagnostics == first.diagnostics
    assert {d.skill for d in again.diagnostics} == {"hider"}
    # A file edited while no server ran (same size, old modification time put back):
    # the next process audits that skill's files again, and only those.
    notes = skills.path / "hider" / "notes.md"
    before = notes.stat()
    notes.write_text("Amount: \u20140001\n", "utf-8")
    os.utime(notes, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed, opened = files_opened(lambda: scan_with(cache, skills.path))
    assert [p for p in opened if p.startswith(str(skills.path))] == [str(notes)]
    assert "hider" not in {d.skill for d in changed.diagnostics}


def test_validate_prints_the_findings_and_strict_fails_on_them(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    flagged(skills)
    assert main(["validate", str(skills.path)]) == 0
    out = capsys.readouterr().out
    for skill, [(code, start)] in EXPECTED.items():
        assert f"{skills.path / skill}: warning [{code}] {start}" in out
    assert out.splitlines()[-1] == "Checked 5 skill(s): 0 error(s), 4 warning(s)."
    assert main(["validate", "--strict", str(skills.path / "fetcher")]) == 1
    out = capsys.readouterr().out
    assert "[python_network] scripts/fetch.py, line 3" in out
    assert out.splitlines()[-1] == "Failed: --strict treats warnings as errors."
    assert main(["validate", "--strict", str(skills.path / "plain")]) == 0


LINKS_NAMED = (
    "1 name(s) in this skill are symbolic links leading outside the skills folder, which "
    "no tool reads and load_skill marks as not readable"
)


def test_hidden_text_and_links_are_said_once(skills: SkillsFolder, tmp_path: Path) -> None:
    folder = skills.write("sneaky", body="# Steps\n\nUse the pass\u200bword tool.\n")
    (folder / "notes.txt").write_text("Amount: \u202e0001\n", "utf-8")
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n", "utf-8")
    (folder / "shown-link.txt").symlink_to(outside)  # link_outside_skill names it
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "deep-link.txt").symlink_to(outside)  # deeper: the audit does
    other = skills.write("other")
    (folder / "sibling.txt").symlink_to(other / "SKILL.md")  # inside the skills folder
    catalog = SkillCatalog().scan(skills.path, max_bytes=MAX)
    found = sorted((d.code, d.message.split(":")[0]) for d in catalog.diagnostics)
    assert found == [
        ("bidi_controls", "notes.txt, line 1"),
        ("hidden_text", "SKILL.md hides text"),
        ("link_outside_skill", LINKS_NAMED),
    ]
    assert all(d.level == "warning" for d in catalog.diagnostics)


def test_every_audit_code_is_a_warning_diagnostic_code() -> None:
    for code in AUDIT_CODES:
        assert CODES[code].level == "warning", code


def test_every_credential_marker_and_home_word_makes_the_parse_happen() -> None:
    """The words that decide whether a script is parsed cover every literal check."""
    from doc_processing_std_tools.skills.audit import python_code as audit_python

    words = audit_python.LITERAL_WORDS
    for marker in (*audit_python.CREDENTIAL_MARKERS, "expanduser", "HOME", "USERPROFILE"):
        assert any(word in marker for word in words), marker
    for module in audit_python.NETWORK_MODULES:
        assert any(word in module for word in words), module


@pytest.mark.parametrize(
    ("source", "line", "what"),
    [
        ("import os\nimport socket\n", 2, "imports socket"),
        ("import os, urllib.request as r\n", 1, "imports urllib.request"),
        ("x = 1; import ssl\n", 1, "imports ssl"),
        ("def f():\n    from http.client import HTTPConnection\n", 2, "imports from http.client"),
        ('"""Fetch from https://example.org: no import here."""\nimport json\n', 0, ""),
        ("from .socket import x\nimport requestsx\n", 0, ""),
    ],
)
def test_imports_are_found_with_or_without_other_words(
    tmp_path: Path, source: str, line: int, what: str
) -> None:
    """The network finding is the same whatever else the script names."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "t.py").write_text(source, "utf-8")
    fast = [(f.line, f.message.split(":")[0]) for f in audit_skill(folder)]
    assert fast == ([(line, what)] if line else [])
    # The same file with a word that makes it parsed gives the same network finding.
    (folder / "t.py").write_text(source + "# home\n", "utf-8")
    parsed = [
        (f.line, f.message.split(":")[0]) for f in audit_skill(folder) if f.code == "python_network"
    ]
    assert parsed == fast


def test_the_word_search_finds_what_a_plain_search_finds() -> None:
    """The automaton that decides whether a script is parsed agrees with a plain search:
    every literal word anywhere, and every network module's name standing alone (no
    letter, digit or ``_`` next to it), in each context a script can hold it in."""
    import re

    from doc_processing_std_tools.skills.audit import python_code as audit_python

    literal_words = audit_python.LITERAL_WORDS[: -len(audit_python.NETWORK_MODULES)]
    contexts = ["{}", "x = '{}'\n", "import {}\n", "a{}", "{}b", "_{}_", "({})", "# {}.x", "1{}2"]
    for word in (*audit_python.LITERAL_WORDS, "https", "requestsx", "assl"):
        for context in contexts:
            text = "import json\n" + context.format(word) + "\nprint(1)\n"
            expected_literal = any(literal in text for literal in literal_words)
            expected_modules = sorted(
                match.start()
                for module in audit_python.NETWORK_MODULES
                for match in re.finditer(rf"(?<![A-Za-z0-9_])(?={module}(?![A-Za-z0-9_]))", text)
            )
            assert audit_python._words_named(text) == (expected_literal, expected_modules), text


@pytest.mark.parametrize(
    "suffix", [".sh", ".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd"]
)
def test_a_shell_script_named_in_skill_md_is_found_in_any_case(tmp_path: Path, suffix: str) -> None:
    folder = tmp_path / "shelly"
    folder.mkdir()
    names = [f"setup{suffix}", f"tool{suffix.upper()}", f"run{suffix[:2].upper()}{suffix[2:]}"]
    body = "".join(f"- Run `scripts/{name}` — then carry on.\n" for name in names)
    (folder / "SKILL.md").write_text(
        f"---\nname: shelly\ndescription: Runs.\n---\n\n<!-- note -->\n{body}", "utf-8"
    )
    found = [(f.code, f.line) for f in audit_skill(folder)]
    assert found == [
        ("html_comment", 6),
        *(("non_python_script_referenced", line) for line in (7, 8, 9)),
    ]


def test_every_invisible_character_is_unprintable_or_a_variation_selector() -> None:
    """What lets most text with characters outside ASCII skip the character-by-character
    look: Python's `str.isprintable` is False for every hidden character but the
    variation selectors, whose UTF-8 starts with one of two byte pairs (every code point
    checked, with the Unicode data of the Python that runs the tests)."""
    from doc_processing_std_tools.skills.audit import hidden as audit_hidden

    starts = (audit_hidden._SELECTOR_START_1, audit_hidden._SELECTOR_START_2)
    for point in range(0x80, 0x110000):
        char = chr(point)
        if audit_hidden._is_invisible(char) and char.isprintable():
            assert char.encode("utf-8", "surrogatepass").startswith(starts), hex(point)


@pytest.mark.parametrize(
    "broken",
    [b"caf\xc3A\xa9", b"\xed\xa0\x80", b"\xc0\xaf", b"tail \xe2\x80"],
    ids=["ascii-inside-a-character", "surrogate", "overlong", "cut-short"],
)
def test_bytes_that_are_not_utf8_are_checked_by_name_only(tmp_path: Path, broken: bytes) -> None:
    """Whether a file is text is decided by the whole file, even where the bytes outside
    ASCII alone would decode (an ASCII byte inside a character): such a file's hidden
    characters, frontmatter and #! line are not read, and its name is."""
    folder = tmp_path / "broken"
    folder.mkdir()
    hidden = "\u200b\u200b hidden \u202e".encode()
    (folder / "SKILL.md").write_bytes(
        b"---\nname: broken\ndescription: x\nallowed-tools: Bash\n---\n<!-- c -->" + broken
    )
    (folder / "notes.md").write_bytes(hidden + broken)
    (folder / "setup.sh").write_bytes(b"#!/bin/sh\n" + broken)
    (folder / "tool").write_bytes(b"#!/usr/bin/env node\n" + hidden + broken)
    found = [(f.file, f.code, f.line, f.message.split(";")[0]) for f in audit_skill(folder)]
    assert found == [("setup.sh", "non_python_script", 0, "ships a shell script.")]
    # The same files made UTF-8 are read in full.
    for path in folder.iterdir():
        path.write_bytes(path.read_bytes().replace(broken, b"ok"))
    assert sorted({(f.file, f.code) for f in audit_skill(folder)}) == [
        ("SKILL.md", "html_comment"),
        ("SKILL.md", "shell_tool_allowed"),
        ("notes.md", "bidi_controls"),
        ("notes.md", "zero_width_characters"),
        ("setup.sh", "non_python_script"),
        ("tool", "bidi_controls"),
        ("tool", "non_python_script"),
        ("tool", "zero_width_characters"),
    ]
