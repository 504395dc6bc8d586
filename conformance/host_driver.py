"""The toolkit's Agent as the host under test in the conformance suite's client scenarios.

The suite starts a server of its own for each SEP-2640 client scenario and runs this
script with the server's URL as its last argument and the scenario's name in
``MCP_CONFORMANCE_SCENARIO``. The Agent connects to that server over streamable HTTP
(skills auto-injection finds the Skills extension and lists the skills), and a scripted
model plays a user's model:

- ``sep-2640-client-no-prefetch``: the model answers without loading anything, so the
  only traffic is what the host does on its own (it must read no skill file);
- the ``-verify-*`` scenarios: the model loads the first skill of the catalog, then asks
  for its reference file, as a model that follows a skill would; the suite's server
  tampers with the SKILL.md, and the host must refuse it and read nothing more of it.

What each tool call returned is printed, so the suite's record of the run shows what
the model was told. The script exits 0 whatever the host decided: the suite judges the
wire, not the exit code.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Final

import anyio

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

NO_PREFETCH: Final = "sep-2640-client-no-prefetch"
REFERENCE: Final = "references/FORMS.md"
"""The file the suite's fixture skill lists besides its SKILL.md, asked for when the
SKILL.md was refused (a refused load shows the model no file list)."""
_URI = re.compile(r'uri="(skill://[^"]+/SKILL\.md)"')
_LISTED = re.compile(r"^\s+(skill://\S+)$", re.MULTILINE)


def _results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]


def script(scenario: str) -> TestModel:
    """The scripted model for `scenario`."""

    def answer(request: ModelRequest) -> ModelResponse:
        results = _results(request)
        skill = _URI.search(request.system or "")
        if scenario == NO_PREFETCH or skill is None:
            return reply("No skill needed.")
        if not results:
            return tool_call("load_skill", {"uri": skill.group(1)})
        if len(results) == 1:
            listed = _LISTED.findall(results[0].content)
            base = skill.group(1).removesuffix("SKILL.md")
            return tool_call(
                "load_skill_resource", {"uri": listed[0] if listed else base + REFERENCE}
            )
        return reply("Done.")

    return TestModel(answer, name="conformance-host")


async def run(url: str, scenario: str) -> None:
    """One run of an Agent on the scenario's server at `url`."""
    server = {"type": "mcp_http", "url": url, "name": "scenario"}
    async with Agent(model=script(scenario), tools=[server]) as agent:
        result = await agent.run("Fill in the PDF form.")
    print(f"skills: {result.skills.status}, rejected: {sorted(result.skills.rejected)}")
    for call in result.tool_calls:
        outcome = "error" if call.is_error else "ok"
        print(f"{call.name}({call.arguments}) -> {outcome}: {call.content[:300]}")


def main() -> int:
    """Run the Agent against the scenario's server (the last argument)."""
    anyio.run(run, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
