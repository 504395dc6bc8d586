"""What structured output costs a JSON tool call: list_skills and get_file_info over an
in-process MCP session, as served (text block, structured content, output schema checked
by the server and by the SDK's client) and as a text-only tool doing the same work.

    .venv/bin/python benchmarks/bench_structured_output.py

Datasets: 100 and 1,000 generated skills with the default output limit (50,000
characters: the catalog of 1,000 is cut), 1,000 with a limit that holds the whole catalog
(about 450,000 characters of JSON), and one workspace file for get_file_info. Each number
is the median of warm calls, the two tools called in turns so that both see the same
machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread
from mcp import Client
from mcp.server.mcpserver import MCPServer

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools._building import new_server
from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.filesystem import operations
from doc_processing_std_tools.skills.server import skills_server_state as skills_state
from doc_processing_std_tools.workspace import Workspace


def generate(root: Path, count: int) -> Path:
    """Write `count` skills with a license and metadata under `root`."""
    for index in range(count):
        folder = root / f"generated-skill-{index:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: generated-skill-{index:04d}\n"
            f"description: Extracts the fields of document type {index} into JSON and checks "
            "them against the glossary. Use when a user hands over such a document.\n"
            "license: MIT\nmetadata:\n  owner: benchmark\n  version: '1.0'\n---\n\n# Steps\n",
            encoding="utf-8",
        )
    # Let the files age past the catalog's guard against same-tick edits.
    time.sleep(0.3)
    return root


def text_only_server() -> MCPServer:
    """The two tools as they were before structured output: the same logic, text only."""
    server = new_server(MCPServer, "text-only")

    @server.tool(structured_output=False)
    async def list_skills() -> str:
        settings = get_settings()
        catalog = skills_state.cached(settings)
        if catalog is None:
            catalog = await anyio.to_thread.run_sync(skills_state.scan, settings)
        return catalog.json_within(settings.output_truncation_limit)

    @server.tool(structured_output=False)
    def get_file_info(path: str) -> str:
        return operations.get_file_info(Workspace.from_settings(get_settings()), path)

    return server


async def in_turns(
    calls: dict[str, Callable[[], Awaitable[object]]], repeat: int
) -> dict[str, float]:
    """Median milliseconds of each call, the calls taken in turns."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            started = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in times.items()}


async def measure(skills: Path, workspace: Path, limit: int, repeat: int) -> None:
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_SKILLS_DIR": str(skills),
                "DPTTOOLS_WORKSPACE_DIR": str(workspace),
                "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": str(limit),
            }
        )
    )
    async with (
        Client(make_composed_server()) as served,
        Client(text_only_server()) as plain,
    ):
        listed = await served.call_tool("list_skills", {})
        text = listed.content[0].text  # type: ignore[union-attr]
        assert listed.structured_content is not None
        for tool, arguments in (("list_skills", {}), ("get_file_info", {"path": "notes.md"})):
            result = await in_turns(
                {
                    "structured": lambda t=tool, a=arguments: served.call_tool(t, a),
                    "text only": lambda t=tool, a=arguments: plain.call_tool(t, a),
                },
                repeat,
            )
            ratio = result["structured"] / result["text only"]
            size = f", {len(text):,} characters of JSON" if tool == "list_skills" else ""
            print(
                f"{tool:<14} limit {limit:>9,}{size}: structured {result['structured']:.2f} ms, "
                f"text only {result['text only']:.2f} ms, ratio {ratio:.2f}x"
            )
    reset_settings()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=60, help="calls per median")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "notes.md").write_text("# Notes\n\nline\n" * 50, encoding="utf-8")
        for count, limit in ((100, 50_000), (1000, 50_000), (1000, 1_000_000)):
            skills = Path(tmp) / f"skills-{count}"
            if not skills.exists():
                generate(skills, count)
            print(f"{count} skills:")
            anyio.run(measure, skills, workspace, limit, options.repeat)


if __name__ == "__main__":
    main()
