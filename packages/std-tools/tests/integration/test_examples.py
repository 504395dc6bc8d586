"""The std-tools examples run as documented and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def test_the_stdio_demo_lists_loads_and_runs_the_invoice_skill() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for skill in ("invoice-extraction", "pii-redaction", "table-profiling"):
        assert skill in done.stdout
    assert "exit_code: 0" in done.stdout
    assert "normalised: subtotal 2665.63, tax 533.13, total 3198.76 GBP" in done.stdout
    assert "total: printed 3209.56, computed 3198.76 (difference -10.80)" in done.stdout
