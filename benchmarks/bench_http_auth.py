"""What bearer-token authentication costs per request on the composed server over HTTP.

Three copies of the composed server run as child processes on 127.0.0.1: without
authentication, with a static token file, and with JWTs checked against a JWKS file
(RS256, 2048-bit key). One SDK client session per server sends the same call
(get_file_info of a small file), the servers taking turns; medians are printed with each
authenticated server's ratio to the one without authentication.

Run by hand: .venv/bin/python benchmarks/bench_http_auth.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ISSUER = "https://idp.example.test/"
TOKEN = "bench-" + "t" * 40


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(workspace: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DPTTOOLS_")}
    environ.update(env)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "doc_processing_std_tools",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--workspace",
            str(workspace),
        ],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("a server did not start")


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        (root / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1"}]}))
        tokens = root / "tokens.txt"
        tokens.write_text(f"bench {TOKEN} read\n", encoding="utf-8")
        tokens.chmod(0o600)
        servers = {
            "no authentication": ({}, None),
            "static token file": ({"DPTTOOLS_AUTH_TOKENS_FILE": str(tokens)}, TOKEN),
            "JWT (RS256, JWKS file)": (
                {
                    "DPTTOOLS_AUTH_JWKS_FILE": str(root / "jwks.json"),
                    "DPTTOOLS_AUTH_ISSUER": ISSUER,
                    "DPTTOOLS_AUTH_AUDIENCE": "bench",
                },
                "jwt",
            ),
        }
        started = {name: start(workspace, env) for name, (env, _) in servers.items()}
        samples: dict[str, list[float]] = {name: [] for name in servers}
        try:
            async with AsyncExitStack() as stack:
                clients = {}
                for name, (_, token) in servers.items():
                    if token == "jwt":
                        token = jwt.encode(
                            {
                                "iss": ISSUER,
                                "aud": "bench",
                                "exp": int(time.time()) + 3600,
                                "scope": "read",
                            },
                            key,
                            algorithm="RS256",
                            headers={"kid": "k1"},
                        )
                    headers = {"Authorization": f"Bearer {token}"} if token else {}
                    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
                    clients[name] = await stack.enter_async_context(
                        Client(streamable_http_client(started[name][1], http_client=http))
                    )
                for _ in range(20):
                    for client in clients.values():
                        await client.call_tool("get_file_info", {"path": "notes.txt"})
                # The servers take turns, so a busy moment of the machine hits all three.
                for _ in range(calls):
                    for name, client in clients.items():
                        begin = time.perf_counter()
                        result = await client.call_tool("get_file_info", {"path": "notes.txt"})
                        samples[name].append((time.perf_counter() - begin) * 1000)
                        assert not result.is_error
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait()
    base = statistics.median(samples["no authentication"])
    print(f"{'server':<26} {'median ms':>10} {'ratio':>7}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<26} {median:>10.2f} {median / base:>6.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    anyio.run(main, parser.parse_args().calls)
