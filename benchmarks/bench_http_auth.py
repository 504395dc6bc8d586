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
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# The tests' helper that runs a server as a child process on a free port.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/std-tools/tests/support"))
from http_child import serving

ISSUER = "https://idp.example.test/"
TOKEN = "bench-" + "t" * 40


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
        samples: dict[str, list[float]] = {name: [] for name in servers}
        with ExitStack() as running:
            started = {
                name: running.enter_context(serving("--workspace", str(workspace), env=env))
                for name, (env, _) in servers.items()
            }
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
                        Client(streamable_http_client(started[name].url, http_client=http))
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
    base = statistics.median(samples["no authentication"])
    print(f"{'server':<26} {'median ms':>10} {'ratio':>7}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<26} {median:>10.2f} {median / base:>6.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    anyio.run(main, parser.parse_args().calls)
