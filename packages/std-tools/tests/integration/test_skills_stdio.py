"""The skills server as a subprocess, driven over stdio by the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def make_skill(skills_dir: Path) -> None:
    folder = skills_dir / "hello-world"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: hello-world\ndescription: Greets people.\n---\n# Hello\n", encoding="utf-8"
    )
    (folder / "scripts" / "greet.py").write_text(
        "import sys\nprint('hello, ' + ' and '.join(sys.argv[1:]))\n", encoding="utf-8"
    )


SKILLS_TOOLS = [
    "list_skills",
    "search_skills",
    "load_skill",
    "load_skill_resource",
    "execute_skill_script",
    "create_skill",
]


@pytest.mark.parametrize(
    "module",
    [
        # The command the issue names: the composed server, which holds the skills tools.
        "doc_processing_std_tools",
        # The skills server alone, named skills-tools.
        "doc_processing_std_tools.skills",
    ],
)
async def test_the_skills_tools_work_over_stdio(tmp_path: Path, module: str) -> None:
    skills_dir = tmp_path / "skills"
    make_skill(skills_dir)
    (skills_dir / "hello-world" / "references").mkdir()
    (skills_dir / "hello-world" / "references" / "tone.md").write_text(
        "Be kind.\n", encoding="utf-8"
    )
    # A folder whose name is not UTF-8 could once make list_skills unanswerable: the reply
    # held a lone surrogate that the transport could not encode.
    undecodable = skills_dir / os.fsdecode(b"caf\xe9")
    undecodable.mkdir()
    (undecodable / "SKILL.md").write_text("---\ndescription: d\n---\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", module],
        env={"DPTTOOLS_SKILLS_DIR": str(skills_dir), "DPTTOOLS_SANDBOX_TIMEOUT": "20"},
        cwd=str(tmp_path),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        expected_name = "skills-tools" if module.endswith(".skills") else "doc-processing-std-tools"
        assert info.server_info.name == expected_name
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names >= set(SKILLS_TOOLS)
        if module.endswith(".skills"):
            assert sorted(names) == sorted(SKILLS_TOOLS)
        with anyio.fail_after(20):
            listed = await session.call_tool("list_skills", {})
        assert len(listed.content) == 1 and not listed.is_error
        payload = json.loads(text(listed))
        assert payload["skills_dir"] == str(skills_dir.resolve())
        assert [s["name"] for s in payload["skills"]] == ["hello-world"]
        assert [(d["skill"], d["code"]) for d in payload["diagnostics"]] == [
            ("caf\ufffd", "folder_name_not_utf8")
        ]

        loaded = text(await session.call_tool("load_skill", {"skill_name": "hello-world"}))
        assert loaded.startswith(
            f'<skill_content name="hello-world" directory="{skills_dir.resolve() / "hello-world"}">'
        )
        assert "<file>scripts/greet.py</file>" in loaded
        assert "<file>references/tone.md</file>" in loaded

        resource = await session.call_tool(
            "load_skill_resource",
            {"skill_name": "hello-world", "resource_path": "references/tone.md"},
        )
        assert text(resource) == "Be kind.\n"
        escape = await session.call_tool(
            "load_skill_resource",
            {"skill_name": "hello-world", "resource_path": "../../../etc/passwd"},
        )
        assert escape.is_error and "'..'" in text(escape)

        ran = await session.call_tool(
            "execute_skill_script",
            {
                "skill_name": "hello-world",
                "script_path": "scripts/greet.py",
                "args": "'Ann Lee' Bo",
            },
        )
        assert len(ran.content) == 1
        assert json.loads(text(ran)) == {
            "stdout": "hello, Ann Lee and Bo\n",
            "stderr": "",
            "exit_code": 0,
        }

        created = await session.call_tool(
            "create_skill", {"skill_name": "second-one", "description": "Another skill."}
        )
        assert not created.is_error
        assert str(skills_dir.resolve() / "second-one") in text(created)
        payload = json.loads(text(await session.call_tool("list_skills", {})))
        assert [s["name"] for s in payload["skills"]] == ["hello-world", "second-one"]

        refused = await session.call_tool("load_skill", {"skill_name": "Hello World"})
        assert refused.is_error and "lowercase letters" in text(refused)


def test_a_bad_setting_stops_the_server_with_a_message_naming_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools.skills"],
        env={"DPTTOOLS_SANDBOX_TIMEOUT": "soon", "PATH": ""},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "DPTTOOLS_SANDBOX_TIMEOUT" in done.stderr


async def test_without_the_variable_the_server_reads_agent_skills_in_its_folder(
    tmp_path: Path,
) -> None:
    make_skill(tmp_path / ".agent_skills")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "doc_processing_std_tools.skills"], cwd=str(tmp_path)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        payload = json.loads(text(await session.call_tool("list_skills", {})))
    assert payload["skills_dir"] == str((tmp_path / ".agent_skills").resolve())
    assert [s["name"] for s in payload["skills"]] == ["hello-world"]


def test_the_stdio_demo_runs_end_to_end() -> None:
    demo = Path(__file__).resolve().parents[4] / "examples" / "demo.py"
    done = subprocess.run(
        [sys.executable, str(demo)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "3 skill(s) in" in done.stdout
    assert "<file>scripts/normalise_totals.py</file>" in done.stdout
    assert "line_items[1].line_total: printed 154.50, computed 145.50" in done.stdout
