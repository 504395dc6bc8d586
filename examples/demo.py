"""Drive the skills server over stdio with the MCP SDK's own client.

Starts ``python -m doc_processing_std_tools.skills`` with the example skills folder, lists
the catalog, loads the invoice-extraction skill and runs its normalise_totals.py script on
an example invoice whose printed totals are wrong. Run it with
``.venv/bin/python examples/demo.py``; ``make demo`` runs the agent version of the same task.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

HERE = Path(__file__).resolve().parent
SKILLS_DIR = HERE / "skills"
INVOICE = HERE / "invoices" / "harbour-freight-7731-wrong-totals.json"


def text_of(result: CallToolResult) -> str:
    """The text of a tool result; exits with its message when the tool failed."""
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    if result.is_error:
        raise SystemExit(f"tool error: {text}")
    return text


def heading(title: str) -> None:
    """Print a section title."""
    print(f"\n=== {title} ===")


async def main() -> None:
    """List, load and run through a real stdio session."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools.skills"],
        # The examples folder is the workspace, so the script can read the invoice in it
        # even when it runs sandboxed and this folder lies in one the sandbox hides (a
        # home folder or /tmp).
        env={
            "DPTTOOLS_SKILLS_DIR": str(SKILLS_DIR),
            "DPTTOOLS_WORKSPACE_DIR": str(HERE),
            "DPTTOOLS_SANDBOX_TIMEOUT": "20",
        },
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        heading("Tools")
        print(", ".join(tool.name for tool in tools.tools))

        heading("list_skills")
        catalog = json.loads(text_of(await session.call_tool("list_skills", {})))
        for skill in catalog["skills"]:
            print(f"- {skill['name']}: {skill['description']}")
        print(f"{catalog['count']} skill(s) in {catalog['skills_dir']}")
        for diagnostic in catalog.get("diagnostics", []):
            print(f"  {diagnostic['level']} {diagnostic['skill']}: {diagnostic['message']}")

        heading("load_skill invoice-extraction (first lines and resources)")
        loaded = text_of(
            await session.call_tool("load_skill", {"skill_name": "invoice-extraction"})
        )
        lines = loaded.splitlines()
        print("\n".join(lines[:12]))
        print("...")
        start = next(i for i, line in enumerate(lines) if line.startswith("<skill_resources"))
        print("\n".join(lines[start:]))

        heading(f"execute_skill_script normalise_totals.py {INVOICE.name}")
        ran = json.loads(
            text_of(
                await session.call_tool(
                    "execute_skill_script",
                    {
                        "skill_name": "invoice-extraction",
                        "script_path": "scripts/normalise_totals.py",
                        "args": shlex.quote(str(INVOICE)),
                    },
                )
            )
        )
        print(f"exit_code: {ran['exit_code']}")
        if ran["stderr"]:
            print(f"stderr: {ran['stderr']}")
        result = json.loads(ran["stdout"])
        invoice = result["invoice"]
        print(
            f"normalised: subtotal {invoice['subtotal']}, tax {invoice['tax_total']}, "
            f"total {invoice['total']} {invoice['currency']}"
        )
        for item in result["discrepancies"]:
            print(
                f"  {item['field']}: printed {item['stated']}, computed {item['computed']} "
                f"(difference {item['difference']})"
            )


if __name__ == "__main__":
    anyio.run(main)
