"""Helpers of the HTTP tests: the composed server as a real child process on a free
local port, and in-process JOSE material (keys, a JWKS, tokens)."""

from __future__ import annotations

import base64
import hmac
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.types import Tool


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Folders:
    """A skills folder with one skill and a workspace with one file."""

    skills: Path
    workspace: Path


@dataclass
class Started:
    """A server child process that has exited or is listening."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_server(
    folders: Folders,
    *args: str,
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
) -> Started:
    """Start `python -m doc_processing_std_tools --transport streamable-http` and wait
    until it listens on 127.0.0.1 or exits (whichever comes first, within 30 s)."""
    port = free_port()
    environ = {key: value for key, value in os.environ.items() if not key.startswith("DPTTOOLS_")}
    environ.update(env or {})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "doc_processing_std_tools",
            "--transport",
            "streamable-http",
            "--host",
            host,
            "--port",
            str(port),
            "--skills-dir",
            str(folders.skills),
            "--workspace",
            str(folders.workspace),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environ,
    )
    deadline = time.monotonic() + 30
    while process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                stop(process)
                pytest.fail("the HTTP server did not start listening within 30 s")
            time.sleep(0.05)
    return Started(process, port)


def stop(process: subprocess.Popen[bytes]) -> str:
    """Stop the child (if it still runs) and return what it wrote on stderr."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    return stderr


@contextmanager
def serving(
    folders: Folders, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[Started]:
    """A listening server for the block; fails the test when it exits early."""
    started = start_server(folders, *args, env=env)
    if started.process.poll() is not None:
        pytest.fail(f"the HTTP server exited early: {stop(started.process)}")
    try:
        yield started
    finally:
        stop(started.process)


def tool_names(tools: Sequence[Tool]) -> set[str]:
    return {tool.name for tool in tools}


# --- JOSE material ----------------------------------------------------------------------

ISSUER = "https://idp.example.test/"
AUDIENCE = "https://documents.example.test/mcp"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Keys:
    """An RSA key pair (kid "k1") and an EC one (kid "e1"), and a JWKS of their public
    halves; tokens are minted with PyJWT."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key()))
        ec_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key()))
        return {
            "keys": [
                {**rsa_jwk, "kid": "k1", "use": "sig"},
                {**ec_jwk, "kid": "e1", "use": "sig", "alg": "ES256"},
            ]
        }

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "user-1",
            "client_id": "test-client",
            "iat": now,
            "exp": now + 600,
            "scope": "read write execute",
        }
        claims.update(overrides)
        return {key: value for key, value in claims.items() if value is not None}

    def token(self, *, alg: str = "RS256", kid: str = "k1", **overrides: Any) -> str:
        key: Any = self.ec if alg.startswith("ES") else self.rsa
        return jwt.encode(self.claims(**overrides), key, algorithm=alg, headers={"kid": kid})

    def public_pem(self) -> bytes:
        return self.rsa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def forged(header: dict[str, Any], claims: dict[str, Any], signer: bytes | None) -> str:
    """A token built by hand: signed with HMAC-SHA256 under `signer`, or unsigned."""
    head = b64url(json.dumps(header).encode())
    body = b64url(json.dumps(claims).encode())
    signing_input = f"{head}.{body}".encode()
    signature = b"" if signer is None else hmac.new(signer, signing_input, "sha256").digest()
    return f"{head}.{body}.{b64url(signature)}"
