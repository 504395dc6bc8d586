"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``; the test
skips with the reason where it is not installed) parses the page and draws its charts,
which the screenshot's pixels show, with no network and no script."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eval_support as support
import pytest

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.evals import TriggerReport, evaluate_triggers, render_html

# The colours of html.py's marks: query bars by label, a failing pass-rate bar.
POSITIVE = (0x15, 0x65, 0xC0)
NEGATIVE = (0x6D, 0x4C, 0x41)
FAIL = (0xC6, 0x28, 0x28)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium; .ci/run installs "
            "it), so the report cannot be rendered in a real browser here"
        )
    return found


def run_chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with a fresh profile for each call and its home, both inside
    `tmp_path`."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tempfile.mkdtemp(prefix='profile-', dir=tmp_path)}",
        *arguments,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.fixture
async def report(std_tools: Callable[..., Any]) -> TriggerReport:
    async with Agent(model=TestModel(support.Picker()), tools=[std_tools()]) as agent:
        found = await evaluate_triggers(agent, runs=2, split=0.4)
    assert isinstance(found, TriggerReport)
    return found


@pytest.mark.anyio
async def test_the_report_is_one_file_that_needs_no_network_and_no_script(
    report: TriggerReport,
) -> None:
    page = render_html(report)
    assert not re.search(r"https?://|<script|<link|<img|<iframe|@import|url\(", page)
    assert page.count('<svg class="chart') == 1 + len(report.skills)
    assert page.count('class="threshold"') == len(report.skills)
    assert "Redact the invoice before booking it" in page  # a failing query's row
    assert "pii-redaction &times;2" in page


@pytest.mark.anyio
async def test_chromium_draws_the_pass_rate_chart_and_each_skill_s_trigger_chart(
    report: TriggerReport, tmp_path: Path
) -> None:
    PIL = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot")
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")

    dumped = run_chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    # Parsed as SVG: the bars and threshold lines are elements of the live document.
    queries = sum(len(skill.queries) for skill in report.skills.values())
    assert dom.count('class="bar query"') == queries
    assert dom.count('<rect class="bar" data-skill=') == len(report.skills)
    assert dom.count('class="threshold"') == len(report.skills)
    assert dom.count('class="set-mark"') == 2 * len(report.skills)  # train and validation

    shot = tmp_path / "report.png"
    done = run_chromium(tmp_path, "--window-size=1100,2600", f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    with PIL.open(shot) as image:
        pixels = Counter(image.convert("RGB").get_flattened_data())
    # Drawn charts fill hundreds of pixels with each mark's colour (the legend's
    # swatches are 100 pixels each).
    for colour in (POSITIVE, NEGATIVE, FAIL):
        assert pixels[colour] > 1500, (colour, pixels[colour])
