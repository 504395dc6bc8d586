"""What the composed server's tools/list costs a model, in tokens, on every run.

Lists the tools of `make_composed_server()` over an in-process session with the MCP SDK's
own client and counts, for the whole tools/list result as JSON and for the descriptions
alone: characters, tokens, and description lines that start with whitespace (docstring
indentation carried over into what the model reads).

Tokens are counted with OpenAI's o200k_base and cl100k_base encodings from the
`bpe-openai` package when it can be imported (it ships its vocabularies, so nothing is
downloaded); other providers' tokenizers differ by some per cent. Without it, the script
prints characters / 4 as an estimate and says so.

Run by hand: .venv/bin/python benchmarks/bench_tools_list_tokens.py
(for real token counts: pip install bpe-openai into the environment, or a folder on
PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any

import anyio
from mcp import Client


def _counters() -> dict[str, Callable[[str], int]]:
    try:
        import bpe_openai  # type: ignore[import-not-found]
    except ImportError:
        return {"estimate (characters / 4)": lambda text: round(len(text) / 4)}
    counters: dict[str, Callable[[str], int]] = {}
    for name in ("o200k_base", "cl100k_base"):
        encoding = bpe_openai.get_encoding(name)
        counters[name] = lambda text, encoding=encoding: len(encoding.encode(text))
    return counters


async def _tools_list() -> list[dict[str, Any]]:
    from doc_processing_std_tools import make_composed_server

    async with Client(make_composed_server()) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


def main() -> None:
    """Print the sizes of the composed server's tools/list."""
    with tempfile.TemporaryDirectory() as folder:
        os.environ.setdefault("DPTTOOLS_WORKSPACE_DIR", folder)
        os.environ.setdefault("DPTTOOLS_SKILLS_DIR", folder)
        tools = anyio.run(_tools_list)
    whole = json.dumps({"tools": tools}, ensure_ascii=False, separators=(",", ":"))
    descriptions = "\n".join(str(tool.get("description", "")) for tool in tools)
    indented = sum(
        1
        for tool in tools
        for line in str(tool.get("description", "")).splitlines()
        if line[:1].isspace()
    )
    print(f"tools: {len(tools)}")
    print(f"description lines starting with whitespace: {indented}")
    print(f"{'':28} {'whole tools/list':>18} {'descriptions':>14}")
    print(f"{'characters':28} {len(whole):>18,} {len(descriptions):>14,}")
    for name, count in _counters().items():
        print(f"{'tokens, ' + name:28} {count(whole):>18,} {count(descriptions):>14,}")


if __name__ == "__main__":
    main()
