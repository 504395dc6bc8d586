"""``dpt-agent batch`` says at once what is about to run, before any item has finished,
also on a terminal without rich (where no live bar shows anything).

The command runs in a child process whose standard error is a real pseudo-terminal, with
``rich`` made unimportable by a ``sitecustomize`` on PYTHONPATH, and the offline test
model waits before each reply, so no item can finish while the first line is awaited.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml

DELAY = 30.0
WAIT = 20.0


def read_first_line(fd: int, process: subprocess.Popen[bytes], timeout: float) -> str:
    """The first line written to `fd` within `timeout` seconds ("" when none came)."""
    shown = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in shown and time.monotonic() < deadline:
        if not select.select([fd], [], [], 0.1)[0]:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    return shown.decode("utf-8", "replace").split("\n")[0].strip()


def test_the_first_line_comes_before_the_first_item_finishes_without_rich(
    tmp_path: Path,
) -> None:
    shim = tmp_path / "no-rich"
    shim.mkdir()
    # None in sys.modules: `import rich` raises ImportError, find_spec("rich") is None.
    (shim / "sitecustomize.py").write_text(
        "import sys\nsys.modules['rich'] = None\n", encoding="utf-8"
    )
    config = tmp_path / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {"model": "test", "model_options": {"delay": DELAY}, "auto_inject_skills": False}
        ),
        encoding="utf-8",
    )
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"customer": f"c{n}"}) + "\n" for n in range(3)), encoding="utf-8"
    )
    output = tmp_path / "out.jsonl"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(shim), env.get("PYTHONPATH")]))
    main, secondary = os.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "doc_processing_toolkit.cli",
            "batch",
            "-c",
            str(config),
            "-p",
            "Hello {customer}",
            "-i",
            str(items),
            "-o",
            str(output),
            "-n",
            "2",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    try:
        first = read_first_line(main, process, WAIT)
        assert process.poll() is None, "the batch ended before its first item could finish"
        assert not output.exists() or output.read_text(encoding="utf-8") == ""
    finally:
        process.kill()
        process.wait()
        os.close(main)
    assert first, f"nothing on the terminal within {WAIT:g} s"
    assert "3 items" in first
    assert "engine local" in first and "concurrency 2" in first
    assert str(output) in first


def test_the_installation_page_names_the_rich_extra() -> None:
    page = Path(__file__).resolve().parents[4] / "docs" / "installation.md"
    text = page.read_text(encoding="utf-8")
    assert "doc-processing-toolkit[rich]" in text
    row = next(line for line in text.splitlines() if "doc-processing-toolkit[rich]" in line)
    assert "progress bar" in row
