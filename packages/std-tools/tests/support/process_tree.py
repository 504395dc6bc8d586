"""CPU time of a process tree, read from /proc (Linux): what the document workers under
a server or a test process have spent."""

from __future__ import annotations

import os
from pathlib import Path


def tree_cpu_seconds(root: int | None = None) -> float:
    """User and system CPU seconds of `root` (default: this process) and every process
    below it, now."""
    top = os.getpid() if root is None else root
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        spent[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    tree = {top}
    while below := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= below
    return sum(spent.get(pid, 0.0) for pid in tree)
