"""Helpers of the HTTP tests: the folders a server is started with (the server itself runs
through the shared `http_child` helper), and in-process JOSE material (keys, a JWKS,
tokens)."""

from __future__ import annotations

import base64
import hmac
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.types import Tool
from script_user_access import give_to_script_user


@dataclass
class Folders:
    """A skills folder with one skill and a workspace with one file."""

    skills: Path
    workspace: Path

    def args(self) -> list[str]:
        """The command-line options that point a server to these folders."""
        return ["--skills-dir", str(self.skills), "--workspace", str(self.workspace)]

    @classmethod
    def make(cls, root: Path) -> Folders:
        """Under `root`: a skill with a script, and a workspace holding notes.txt."""
        skills = root / "skills"
        (skills / "invoice-check" / "scripts").mkdir(parents=True)
        (skills / "invoice-check" / "SKILL.md").write_text(
            "---\nname: invoice-check\ndescription: Checks invoice totals.\n---\n\n# Steps\n",
            encoding="utf-8",
        )
        (skills / "invoice-check" / "scripts" / "hello.py").write_text(
            "print('hello from the script')\n", encoding="utf-8"
        )
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("first line\n", encoding="utf-8")
        give_to_script_user(workspace)
        return cls(skills.resolve(), workspace.resolve())


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
