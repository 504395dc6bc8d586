"""The skills tools (the five of the contract and search_skills), driven through a real
in-memory MCP client."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import TextContent

from doc_processing_std_tools import make_skills_server, skills_server
from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.errors import (
    AlreadyExistsError,
    NotRegularFileError,
)
from doc_processing_std_tools.skills import actions, register_skills_tools
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

TOOLS = [
    "list_skills",
    "search_skills",
    "load_skill",
    "load_skill_resource",
    "execute_skill_script",
    "create_skill",
]
BAD_NAMES = ["", "Invoice", "-a", "a-", "a--b", "a_b", "a" * 65, "../x", "a/b", ".hidden", "é"]


async def call(name: str, **arguments: Any) -> tuple[str, bool]:
    """Call a tool of skills_server; return its single text block and is_error."""
    async with Client(skills_server) as client:
        result = await client.call_tool(name, arguments)
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


async def ok(name: str, **arguments: Any) -> str:
    text, is_error = await call(name, **arguments)
    assert not is_error, text
    return text


async def fails(name: str, **arguments: Any) -> str:
    text, is_error = await call(name, **arguments)
    assert is_error, text
    return text


async def listing() -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(await ok("list_skills"))
    return payload


# ---- The server and its tools.


async def test_the_server_is_named_skills_tools_and_has_exactly_the_six_tools() -> None:
    assert skills_server.name == "skills-tools"
    async with Client(skills_server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(TOOLS)
    params = {name: tool.input_schema["properties"] for name, tool in tools.items()}
    assert params["list_skills"] == {}
    assert list(params["load_skill"]) == ["skill_name"]
    assert list(params["load_skill_resource"]) == ["skill_name", "resource_path"]
    assert list(params["execute_skill_script"]) == ["skill_name", "script_path", "args"]
    assert params["execute_skill_script"]["args"]["default"] == ""
    assert list(params["create_skill"]) == ["skill_name", "description"]
    assert all(tool.description for tool in tools.values())


async def test_register_skills_tools_adds_the_six_tools_to_any_server() -> None:
    server = MCPServer("composed")
    register_skills_tools(server)
    assert sorted(tool.name for tool in await server.list_tools()) == sorted(TOOLS)


def test_importing_the_package_does_not_load_the_mcp_sdk() -> None:
    code = (
        "import sys, doc_processing_std_tools as d\n"
        "assert 'mcp' not in sys.modules, 'mcp imported'\n"
        "assert 'yaml' not in sys.modules, 'yaml imported'\n"
        "d.skills_server\nassert 'mcp' in sys.modules\n"
        "assert set(d.__all__) >= {'skills_server', 'make_skills_server'}\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ---- list_skills


async def test_list_skills_returns_the_payload_as_one_text_block(skills: SkillsFolder) -> None:
    skills.write("beta", "name: beta\ndescription: Second.\nlicense: MIT\n")
    skills.write("alpha")
    payload = await listing()
    assert payload["count"] == 2
    assert payload["skills_dir"] == str(skills.path)
    assert [s["name"] for s in payload["skills"]] == ["alpha", "beta"]
    beta = payload["skills"][1]
    assert beta == {
        "name": "beta",
        "description": "Second.",
        "path": str(skills.path / "beta" / "SKILL.md"),
        "directory": str(skills.path / "beta"),
        "license": "MIT",
    }
    assert "diagnostics" not in payload and "note" not in payload


async def test_list_skills_reports_diagnostics_only_when_something_is_wrong(
    skills: SkillsFolder,
) -> None:
    skills.write("good")
    skills.write("draft-skill", "name: draft-skill\n")
    payload = await listing()
    assert [s["name"] for s in payload["skills"]] == ["good"]
    assert payload["diagnostics"] == [
        {
            "skill": "draft-skill",
            "level": "error",
            "code": "missing_description",
            "message": payload["diagnostics"][0]["message"],
        }
    ]


# Every row of the frontmatter table: (folder, SKILL.md, listed?, [(level, code), ...]).
FRONTMATTER_ROWS = [
    ("no-frontmatter", "# Just Markdown\n", False, [("error", "missing_frontmatter")]),
    ("bad-yaml", "---\ndescription: [unclosed\n---\n", False, [("error", "invalid_yaml")]),
    (
        "no-description",
        "---\nname: no-description\n---\n",
        False,
        [("error", "missing_description")],
    ),
    (
        "empty-description",
        "---\nname: empty-description\ndescription: ''\n---\n",
        False,
        [("error", "missing_description")],
    ),
    (
        "colon",
        "---\nname: colon\ndescription: Use when: asked\n---\n",
        True,
        [("warning", "unquoted_colon")],
    ),
    ("no-name", "---\ndescription: d\n---\n", True, [("warning", "missing_name")]),
    ("other-name", "---\nname: else\ndescription: d\n---\n", True, [("warning", "name_mismatch")]),
    (
        "Bad_Name",
        "---\nname: Bad_Name\ndescription: d\n---\n",
        True,
        [("warning", "invalid_folder_name")],
    ),
    (
        "a" * 65,
        f"---\nname: {'a' * 65}\ndescription: d\n---\n",
        True,
        [("warning", "invalid_folder_name")],
    ),
    (
        "bad-name",
        "---\nname: Bad_Name\ndescription: d\n---\n",
        True,
        [("warning", "invalid_name")],
    ),
    (
        "long-description",
        f"---\nname: long-description\ndescription: {'d' * 1025}\n---\n",
        True,
        [("warning", "description_too_long")],
    ),
    (
        "long-compat",
        f"---\nname: long-compat\ndescription: d\ncompatibility: {'c' * 501}\n---\n",
        True,
        [("warning", "compatibility_too_long")],
    ),
    (
        "list-metadata",
        "---\nname: list-metadata\ndescription: d\nmetadata: [a, b]\n---\n",
        True,
        [("warning", "invalid_metadata")],
    ),
    (
        "tools",
        "---\nname: tools\ndescription: d\nallowed-tools: Bash Read\n---\n",
        True,
        [],  # an audit finding: audit and validate say it, list_skills does not
    ),
    (
        # The specification's own example frontmatter: no diagnostic at all.
        "spec-example",
        "---\nname: spec-example\ndescription: d\nallowed-tools: Bash(git:*) Read\n---\n",
        True,
        [],
    ),
    ("read-only", "---\nname: read-only\ndescription: d\nallowed-tools: Read\n---\n", True, []),
    ("bom-crlf", "\ufeff---\r\nname: bom-crlf\r\ndescription: d\r\n---\r\nBody\r\n", True, []),
]


@pytest.mark.parametrize(
    ("folder", "text", "listed", "expected"),
    FRONTMATTER_ROWS,
    ids=[row[0][:20] for row in FRONTMATTER_ROWS],
)
async def test_every_frontmatter_rule_reaches_list_skills_with_its_code(
    skills: SkillsFolder, folder: str, text: str, listed: bool, expected: list[tuple[str, str]]
) -> None:
    skills.write("healthy")
    skills.write_bytes(folder, text.encode("utf-8"))
    payload = await listing()
    names = [s["name"] for s in payload["skills"]]
    assert names == sorted(["healthy", folder] if listed else ["healthy"])
    found = [(d["level"], d["code"]) for d in payload.get("diagnostics", [])]
    assert found == expected
    assert all(d["skill"] == folder and d["message"] for d in payload.get("diagnostics", []))
    for skill in payload["skills"]:
        assert "allowed-tools" not in skill and "allowed_tools" not in skill
        if skill["name"] == "list-metadata":
            assert "metadata" not in skill


async def test_metadata_values_reach_the_client_as_strings(skills: SkillsFolder) -> None:
    skills.write(
        "meta",
        "name: meta\ndescription: d\ncompatibility: Python 3.11+\n"
        "metadata:\n  version: 2\n  beta: true\n  since: 2025-01-31\n  tags: [a, b]\n",
    )
    (skill,) = (await listing())["skills"]
    assert skill["compatibility"] == "Python 3.11+"
    assert skill["metadata"] == {
        "version": "2",
        "beta": "true",
        "since": "2025-01-31",
        "tags": '["a", "b"]',
    }
    assert "license" not in skill


async def test_no_file_or_folder_name_makes_list_skills_fail(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every diagnostic is counted below, so none may be cut for the output limit.
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "1000000")
    reset_settings()
    rng = random.Random(7)
    tags = ["!!binary aGVsbG8=", "!!set {a, b}", "!!float nan", "!!omap [a: 1]", "!!null", ""]
    values = ["", "x: y", "[1, {a: 2}]", "{? [1]: 2}", "&a [*a]", "2025-13-45", "'", "|"]
    folders: set[str] = set()
    for index in range(60):
        # Folder names from random bytes, some of them not UTF-8.
        raw = bytes(rng.choice(b"abcz-_.\xe9\xff\x80 ") for _ in range(rng.randrange(1, 12)))
        name = f"{index:02d}" + os.fsdecode(raw).replace("/", "")
        folders.add(name)
        fields = [
            f"{key}: {rng.choice(tags)} {rng.choice(values)}"
            for key in rng.sample(
                ["name", "description", "license", "compatibility", "metadata", "allowed-tools"],
                rng.randrange(0, 6),
            )
        ]
        skills.write_bytes(name, ("---\n" + "\n".join(fields) + "\n---\nbody\n").encode())
    async with Client(skills_server) as client:
        result = await client.call_tool("list_skills", {})
    assert not result.is_error and len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    block.text.encode("utf-8")  # what a transport has to do with it
    payload = json.loads(block.text)
    errors = {d["skill"] for d in payload.get("diagnostics", []) if d["level"] == "error"}
    assert payload["count"] + len(errors) == len(folders)


async def test_list_skills_on_a_missing_folder_is_empty_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "nowhere"))
    reset_settings()
    try:
        payload = await listing()
    finally:
        reset_settings()
    assert payload["skills"] == [] and payload["count"] == 0
    assert "does not exist" in payload["note"]


async def test_list_skills_reads_the_settings_when_called(
    skills: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills.write("first")
    assert (await listing())["count"] == 1
    other = tmp_path / "other"
    (other / "x-one").mkdir(parents=True)
    (other / "x-one" / "SKILL.md").write_text("---\ndescription: d\n---\n", encoding="utf-8")
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(other))
    reset_settings()
    payload = await listing()
    assert payload["skills_dir"] == str(other.resolve())
    assert [s["name"] for s in payload["skills"]] == ["x-one"]


async def test_skills_added_changed_and_removed_in_a_session_show_on_the_next_call(
    skills: SkillsFolder,
) -> None:
    async with Client(skills_server) as client:

        async def names() -> list[tuple[str, str]]:
            result = await client.call_tool("list_skills", {})
            block = result.content[0]
            assert isinstance(block, TextContent)
            return [(s["name"], s["description"]) for s in json.loads(block.text)["skills"]]

        assert await names() == []
        skills.write("one", description="Before.")
        assert await names() == [("one", "Before.")]
        skills.write("one", description="Later.")
        assert await names() == [("one", "Later.")]
        (skills.path / "one" / "SKILL.md").unlink()
        assert await names() == []


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DPTTOOLS_SANDBOX_TIMEOUT", "soon"),
        ("DPTTOOLS_MAX_FILE_SIZE_MB", "-1"),
        ("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "1.5"),
        ("DPTTOOLS_SKILLS_DIR", ""),
    ],
)
async def test_a_bad_setting_is_a_tool_error_naming_the_variable(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    reset_settings()
    message = await fails("list_skills")
    assert variable in message


# ---- Skill names in tool calls.


@pytest.mark.parametrize("name", BAD_NAMES)
async def test_every_tool_refuses_a_bad_skill_name_stating_the_rule(
    skills: SkillsFolder, name: str
) -> None:
    for tool, extra in [
        ("load_skill", {}),
        ("load_skill_resource", {"resource_path": "a.md"}),
        ("execute_skill_script", {"script_path": "a.py"}),
        ("create_skill", {"description": "d"}),
    ]:
        message = await fails(tool, skill_name=name, **extra)
        assert "lowercase letters" in message and "hyphen" in message
    assert not any(skills.path.iterdir())


async def test_tool_calls_use_the_folder_name_not_the_frontmatter_name(
    skills: SkillsFolder,
) -> None:
    skills.write("folder-name", "name: other-name\ndescription: d\n")
    assert "no skill named 'other-name'" in await fails("load_skill", skill_name="other-name")
    text = await ok("load_skill", skill_name="folder-name")
    assert text.startswith('<skill_content name="folder-name"')
    assert [s["name"] for s in (await listing())["skills"]] == ["folder-name"]


async def test_an_unknown_skill_is_a_clear_error(skills: SkillsFolder) -> None:
    message = await fails("load_skill", skill_name="nothing-here")
    assert "no skill named 'nothing-here'" in message and "list_skills" in message


# ---- load_skill


async def test_load_skill_wraps_the_skill_md_and_lists_its_resources(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("inv", body="# Invoice\n\nRun scripts/normalise.py.\n")
    for relative in [
        "scripts/normalise.py",
        "references/glossary.md",
        "notes.txt",
        "scripts/lib/util.py",
        ".secret",
        ".git/config",
        "scripts/__pycache__/normalise.cpython-311.pyc",
        "node_modules/pkg/index.js",
        "scripts/.cache",
    ]:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text("x", encoding="utf-8")
    text = await ok("load_skill", skill_name="inv")
    assert text.startswith(f'<skill_content name="inv" directory="{folder}">\n---\nname: inv\n')
    assert "# Invoice\n\nRun scripts/normalise.py." in text
    assert text.endswith("</skill_content>")
    resources = text[text.index("<skill_resources") : text.index("</skill_resources>")]
    assert resources.splitlines()[1:] == [
        "<file>notes.txt</file>",
        "<file>references/glossary.md</file>",
        "<file>scripts/normalise.py</file>",
    ]


async def test_load_skill_lists_at_most_50_files_then_the_count_of_the_rest(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("many")
    (folder / "references").mkdir()
    for index in range(60):
        (folder / "references" / f"r{index:02d}.md").write_text("x", encoding="utf-8")
    text = await ok("load_skill", skill_name="many")
    assert text.count("<file>") == 50
    assert "<file>references/r49.md</file>" in text
    assert "<file>references/r50.md</file>" not in text
    assert "10 more files are not listed" in text


async def test_load_skill_escapes_attribute_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / 'odd & "quoted" <dir>'
    (folder / "esc").mkdir(parents=True)
    (folder / "esc" / "SKILL.md").write_text("---\ndescription: d\n---\nbody\n", encoding="utf-8")
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(folder))
    reset_settings()
    try:
        text = await ok("load_skill", skill_name="esc")
    finally:
        reset_settings()
    first_line = text.splitlines()[0]
    assert "&amp;" in first_line and "&quot;quoted&quot;" in first_line
    assert "&lt;dir&gt;" in first_line and '"quoted"' not in first_line


async def test_a_long_skill_md_is_cut_but_keeps_the_resources_and_directory(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("long", body="word " * 5000)
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print(1)\n", encoding="utf-8")
    text = await ok("load_skill", skill_name="long")
    assert len(text) <= 4000
    assert "truncated" in text and "load_skill_resource" in text
    assert "<file>scripts/run.py</file>" in text
    assert f'directory="{folder}"' in text
    assert text.endswith("</skill_content>")


# ---- load_skill_resource


async def test_load_skill_resource_returns_the_file_text(skills: SkillsFolder) -> None:
    folder = skills.write("res")
    (folder / "references").mkdir()
    (folder / "references" / "g.md").write_bytes("\ufeff# Glossary\r\nTerm\r\n".encode())
    text = await ok("load_skill_resource", skill_name="res", resource_path="references/g.md")
    assert text == "# Glossary\nTerm\n"
    assert "name: res" in await ok(
        "load_skill_resource", skill_name="res", resource_path="SKILL.md"
    )


@pytest.mark.parametrize("path", ["/etc/passwd", "../other/SKILL.md", "references/../../x"])
async def test_absolute_paths_and_dot_dot_are_refused(skills: SkillsFolder, path: str) -> None:
    skills.write("res")
    skills.write("other")
    message = await fails("load_skill_resource", skill_name="res", resource_path=path)
    assert "absolute" in message or "'..'" in message


async def test_a_symlink_leading_outside_the_skills_folder_is_refused_even_if_it_exists(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    folder = skills.write("res")
    (folder / "leak.md").symlink_to(secret)
    (folder / "leakdir").symlink_to(tmp_path)
    for path in ["leak.md", "leakdir/secret.txt"]:
        message = await fails("load_skill_resource", skill_name="res", resource_path=path)
        assert "outside" in message and "top secret" not in message
    loaded = await ok("load_skill", skill_name="res")
    # Not offered as a file, but not passed over in silence either (issue 17, item 4).
    assert "<file>leak.md</file>" not in loaded
    assert "leak.md (a link leading outside the skills folder, not readable)" in loaded
    assert str(tmp_path) + "/secret" not in loaded


async def test_load_skill_refuses_a_skill_md_linked_outside_even_though_it_exists(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\ndescription: d\n---\ntop secret\n", encoding="utf-8")
    (skills.path / "leak").mkdir()
    (skills.path / "leak" / "SKILL.md").symlink_to(secret)
    message = await fails("load_skill", skill_name="leak")
    assert "outside" in message and "top secret" not in message


async def test_a_symlink_to_another_skill_inside_the_folder_is_allowed(
    skills: SkillsFolder,
) -> None:
    shared = skills.write("shared")
    (shared / "common.md").write_text("shared text", encoding="utf-8")
    folder = skills.write("res")
    (folder / "common.md").symlink_to(shared / "common.md")
    assert await ok("load_skill_resource", skill_name="res", resource_path="common.md") == (
        "shared text"
    )


async def test_large_binary_non_utf8_missing_and_folder_resources_are_refused(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("res")
    (folder / "big.txt").write_text("x" * (1024 * 1024 + 1), encoding="utf-8")
    (folder / "blob.bin").write_bytes(b"\x7fELF\x00\x00\x00")
    (folder / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "sub").mkdir()
    expectations = {
        "big.txt": "DPTTOOLS_MAX_FILE_SIZE_MB",
        "blob.bin": "binary",
        "cut.png": "cut short or damaged",
        "latin.txt": "UTF-8",
        "missing.md": "does not exist",
        "sub": "is a folder",
    }
    for path, expected in expectations.items():
        message = await fails("load_skill_resource", skill_name="res", resource_path=path)
        assert expected in message, message


async def test_links_and_paths_through_a_file_name_what_is_really_there(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("res")
    (folder / "notes.md").write_text("notes", encoding="utf-8")
    (folder / "references").mkdir()
    (folder / "refs").symlink_to(folder / "references")
    (folder / "dangling.md").symlink_to(folder / "gone.md")
    (folder / "self").symlink_to(folder / "self")
    expectations = {
        "refs": "is a folder in skill 'res'",
        "dangling.md": "does not exist in skill 'res'",
        "notes.md/inner.md": "does not exist in skill 'res'",
        "self": "loop of symbolic links",
    }
    for path, expected in expectations.items():
        message = await fails("load_skill_resource", skill_name="res", resource_path=path)
        assert expected in message, message


def test_a_resource_of_exactly_the_size_limit_is_read_whole(skills: SkillsFolder) -> None:
    folder = skills.write("res")
    limit = get_settings().max_file_size_bytes
    (folder / "exact.txt").write_bytes(b"ab" * (limit // 2) + b"c" * (limit % 2))
    settings = load_settings(
        {
            "DPTTOOLS_SKILLS_DIR": str(skills.path),
            "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
            "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": str(2 * limit),
        }
    )
    text = actions.load_skill_resource(skills_state, settings, "res", "exact.txt")
    assert len(text) == limit and text.startswith("abab")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.timeout(20)
def test_a_named_pipe_resource_is_refused_without_waiting_for_a_writer(
    skills: SkillsFolder,
) -> None:
    folder = skills.write("res")
    os.mkfifo(folder / "pipe")
    # Called directly, on the test's own thread, so that a regression that waits for a
    # writer is stopped by the timeout instead of hanging a worker thread.
    with pytest.raises(NotRegularFileError, match="resource_path 'pipe' is not a regular file"):
        actions.load_skill_resource(skills_state, get_settings(), "res", "pipe")


async def test_a_long_resource_is_cut_with_a_marker(skills: SkillsFolder) -> None:
    folder = skills.write("res")
    (folder / "long.md").write_text("y" * 10_000, encoding="utf-8")
    text = await ok("load_skill_resource", skill_name="res", resource_path="long.md")
    assert len(text) <= 4000 and "truncated" in text


# ---- execute_skill_script


async def test_execute_skill_script_returns_json_output(skills: SkillsFolder) -> None:
    folder = skills.write("run")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "echo.py").write_text(
        "import os, sys\nprint(' | '.join(sys.argv[1:]))\nprint(os.path.basename(os.getcwd()))\n"
        "print('note', file=sys.stderr)\nsys.exit(4)\n",
        encoding="utf-8",
    )
    text = await ok(
        "execute_skill_script",
        skill_name="run",
        script_path="scripts/echo.py",
        args="'two words' plain",
    )
    assert json.loads(text) == {
        "stdout": "two words | plain\nscripts\n",
        "stderr": "note\n",
        "exit_code": 4,
    }


async def test_only_python_files_of_the_skill_can_be_run(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    folder = skills.write("run")
    (folder / "tool.sh").write_text("echo hi\n", encoding="utf-8")
    outside = tmp_path / "evil.py"
    outside.write_text("print('escaped')\n", encoding="utf-8")
    (folder / "link.py").symlink_to(outside)
    assert "not a Python file" in await fails(
        "execute_skill_script", skill_name="run", script_path="tool.sh"
    )
    assert "does not exist" in await fails(
        "execute_skill_script", skill_name="run", script_path="missing.py"
    )
    for path in ["link.py", str(outside), "../run/../../evil.py"]:
        message = await fails("execute_skill_script", skill_name="run", script_path=path)
        assert "escaped" not in message and (
            "outside" in message or "absolute" in message or "'..'" in message
        )


async def test_a_script_that_times_out_returns_exit_code_minus_one(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = skills.write("slow")
    (folder / "sleep.py").write_text("import time\ntime.sleep(30)\n", encoding="utf-8")
    monkeypatch.setenv("DPTTOOLS_SANDBOX_TIMEOUT", "0.5")
    reset_settings()
    payload = json.loads(
        await ok("execute_skill_script", skill_name="slow", script_path="sleep.py")
    )
    assert payload["exit_code"] == -1
    assert "Timed out" in payload["stderr"]


async def test_script_output_is_cut_at_the_output_limit(skills: SkillsFolder) -> None:
    folder = skills.write("loud")
    (folder / "loud.py").write_text("print('z' * 100_000)\n", encoding="utf-8")
    payload = json.loads(await ok("execute_skill_script", skill_name="loud", script_path="loud.py"))
    assert len(payload["stdout"]) <= 4000 and "truncated" in payload["stdout"]


async def test_bad_args_quoting_is_a_clear_error(skills: SkillsFolder) -> None:
    folder = skills.write("run")
    (folder / "x.py").write_text("print(1)\n", encoding="utf-8")
    message = await fails("execute_skill_script", skill_name="run", script_path="x.py", args="'a")
    assert "close every quote" in message


# ---- create_skill


async def test_create_skill_writes_a_template_that_the_next_list_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills_dir = tmp_path / "not-yet" / "skills"
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(skills_dir))
    reset_settings()
    try:
        message = await ok(
            "create_skill",
            skill_name="contract-review",
            description="Reviews contracts: parties, term, 'notice' periods & fees.",
        )
        payload = await listing()
    finally:
        reset_settings()
    folder = skills_dir.resolve() / "contract-review"
    assert str(folder) in message
    skill_md = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert skill_md.startswith("---\nname: contract-review\ndescription: ")
    assert "TODO" in skill_md
    assert payload["skills"][0]["name"] == "contract-review"
    assert payload["skills"][0]["description"] == (
        "Reviews contracts: parties, term, 'notice' periods & fees."
    )
    assert "diagnostics" not in payload
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]


async def test_create_skill_never_overwrites_an_existing_skill(skills: SkillsFolder) -> None:
    folder = skills.write("taken", description="Original.")
    before = (folder / "SKILL.md").read_bytes()
    message = await fails("create_skill", skill_name="taken", description="New.")
    assert "already exists" in message
    assert (folder / "SKILL.md").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]


async def test_create_skill_fills_an_existing_folder_that_has_no_skill_md(
    skills: SkillsFolder,
) -> None:
    (skills.path / "half" / "scripts").mkdir(parents=True)
    await ok("create_skill", skill_name="half", description="Half made.")
    assert (skills.path / "half" / "SKILL.md").is_file()
    assert (skills.path / "half" / "scripts").is_dir()


def test_racing_create_skill_calls_publish_one_whole_file_and_overwrite_nothing(
    skills: SkillsFolder,
) -> None:
    settings = get_settings()
    outcomes: dict[int, str] = {}
    start = threading.Barrier(12)

    def create(index: int) -> None:
        start.wait()
        try:
            actions.create_skill(skills_state, settings, "raced", f"Written by caller {index}.")
            outcomes[index] = "created"
        except AlreadyExistsError as exc:
            outcomes[index] = str(exc)

    workers = [threading.Thread(target=create, args=(i,)) for i in range(12)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    winners = [i for i, outcome in outcomes.items() if outcome == "created"]
    assert len(outcomes) == 12 and len(winners) == 1
    assert all("nothing was" in o for o in outcomes.values() if o != "created")
    folder = skills.path / "raced"
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == actions.render_template(
        "raced", f"Written by caller {winners[0]}."
    )


async def test_execute_skill_script_refuses_a_script_in_a_linked_folder_outside(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "evil.py").write_text("print('escaped')\n", encoding="utf-8")
    folder = skills.write("run")
    (folder / "scripts").symlink_to(elsewhere)
    message = await fails("execute_skill_script", skill_name="run", script_path="scripts/evil.py")
    assert "outside" in message and "escaped" not in message


@pytest.mark.parametrize("description", ["", "   ", "d" * 1025])
async def test_create_skill_checks_the_description(skills: SkillsFolder, description: str) -> None:
    message = await fails("create_skill", skill_name="new-one", description=description)
    assert "description" in message
    assert not (skills.path / "new-one").exists()


# ---- make_skills_server


async def test_make_skills_server_is_none_without_skills(
    skills: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert make_skills_server() is None
    (skills.path / "not-a-skill").mkdir()
    assert make_skills_server() is None
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "missing"))
    reset_settings()
    assert make_skills_server() is None


async def test_make_skills_server_gives_a_full_server_when_a_skill_exists(
    skills: SkillsFolder,
) -> None:
    skills.write("present")
    server = make_skills_server()
    assert server is not None and server is not skills_server
    assert server.name == "skills-tools"
    async with Client(server) as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOLS)
    (skills.path / "present" / "SKILL.md").unlink()
    assert make_skills_server() is None


# ---- Loops of symbolic links: clear errors, never a hidden crash.


async def test_symbolic_link_loops_give_clear_errors(skills: SkillsFolder) -> None:
    folder = skills.write("loopy")
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    (skills.path / "selfloop").mkdir()
    (skills.path / "selfloop" / "SKILL.md").symlink_to(skills.path / "selfloop" / "SKILL.md")
    (skills.path / "dirloop").symlink_to(skills.path / "dirloop")

    payload = await listing()
    assert [s["name"] for s in payload["skills"]] == ["loopy"]
    assert [(d["skill"], d["level"], d["code"]) for d in payload["diagnostics"]] == [
        ("selfloop", "error", "unreadable")
    ]
    assert "loop" in payload["diagnostics"][0]["message"].lower()
    # A second, warm call gives the same answer.
    assert await listing() == payload

    loaded = await ok("load_skill", skill_name="loopy")
    assert '<skill_resources count="0">' in loaded
    message = await fails("load_skill_resource", skill_name="loopy", resource_path="a")
    assert "loop of symbolic links" in message
    message = await fails("execute_skill_script", skill_name="loopy", script_path="a/x.py")
    assert "loop of symbolic links" in message
