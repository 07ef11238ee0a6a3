"""OIDC bearer tokens on `agent serve` (issue 35 item 1): JWTs signed by a key of the issuer's
JWKS, found through its discovery document, both served by the test on 127.0.0.1 (an RSA key
made with `cryptography`), checked by PyJWT through the real server; claims mapped to the
principal's name, tenant and roles by settings."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from durable_agents.contracts.principals import Principal
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.servers.auth.authenticator import Authenticator, Unauthenticated
from durable_agents.servers.auth.oidc import OidcSettings, OidcVerifier, roles_of
from tests.conftest import AgentHarness
from tests.http_api_support import live_api
from tests.test_access_attacks import TALLY

AUDIENCE = "durable-agents"
KID = "test-key-1"


@dataclass
class Issuer:
    """An OIDC issuer on 127.0.0.1: its discovery document, its JWKS, and its signing key."""

    url: str
    key: rsa.RSAPrivateKey
    fetches: list[str]

    def token(self, key: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": "alice@example.com",
            "tenant": "default",
            "roles": ["read", "start", "uma_authorization"],
            "iat": now,
            "exp": now + 300,
        } | claims
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": KID})


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True) | {"kid": KID, "use": "sig"}
    fetches: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetches.append(self.path)
            base = f"http://{self.headers['Host']}"
            documents = {
                "/.well-known/openid-configuration": {"issuer": base, "jwks_uri": base + "/jwks"},
                "/jwks": {"keys": [jwk]},
            }
            body = json.dumps(documents.get(self.path, {})).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Issuer(f"http://127.0.0.1:{server.server_address[1]}", key, fetches)
    finally:
        server.shutdown()


def verifier(issuer: Issuer, **settings: Any) -> Authenticator:
    return Authenticator(oidc=OidcVerifier(OidcSettings(issuer.url, AUDIENCE, **settings)))


async def test_an_oidc_token_is_its_principal_through_the_server(
    agent: AgentHarness, issuer: Issuer
) -> None:
    settings = EnvironmentSettings.from_env(
        {"AGENT_OIDC_ISSUER": issuer.url, "AGENT_OIDC_AUDIENCE": AUDIENCE}
    )
    authenticator = Authenticator.from_settings(settings)
    assert authenticator.listen_refusal("0.0.0.0") is None
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    now = int(time.time())
    refused = {
        "expired": (issuer.token(exp=now - 120, iat=now - 600), "expired"),
        "another audience": (issuer.token(aud="someone-else"), "Audience"),
        "another issuer": (issuer.token(iss="http://evil.example"), "issuer"),
        "signed by another key": (issuer.token(key=other_key), "Signature"),
        "no tenant claim": (issuer.token(tenant=None), "'tenant' claim"),
        "alg none": (_unsigned(issuer.url, now), "invalid OIDC token"),
        "HS256 keyed with the public key": (_hs256_with(public_pem, issuer.url, now), "invalid"),
    }
    async with live_api(agent, token=None, authenticator=authenticator) as api:
        good = await api.http.get("/v1/info", headers={"Authorization": f"Bearer {issuer.token()}"})
        assert good.status_code == 200, good.text
        for case, (token, reason) in refused.items():
            answer = await api.http.get("/v1/info", headers={"Authorization": f"Bearer {token}"})
            TALLY.refused(answer, 401, f"OIDC token {case}")
            assert reason in answer.json()["error"], (case, answer.text)
            assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        reader = issuer.token(roles=["read"])
        started = await api.http.post(
            "/v1/runs",
            json={"prompt": "hi", "id": "oidc-reader-run"},
            headers={"Authorization": f"Bearer {reader}"},
        )
        TALLY.refused(started, 403, "OIDC reader starting a run")
        assert "needs the 'start' role" in started.json()["error"]
    assert "/.well-known/openid-configuration" in issuer.fetches  # found through discovery


def _unsigned(issuer_url: str, now: int) -> str:
    """A token with `alg: none` and no signature."""
    claims = {"iss": issuer_url, "aud": AUDIENCE, "sub": "mallory", "tenant": "default",
              "roles": ["admin"], "exp": now + 60}  # fmt: skip
    return f"{_part({'alg': 'none', 'typ': 'JWT', 'kid': KID})}.{_part(claims)}."


def _part(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _hs256_with(secret_pem: bytes, issuer_url: str, now: int) -> str:
    """An HS256 token whose secret is the issuer's public key (the algorithm confusion
    attack): PyJWT must not verify it with the RSA key."""
    claims = {"iss": issuer_url, "aud": AUDIENCE, "sub": "mallory", "tenant": "default",
              "roles": ["admin"], "exp": now + 60}  # fmt: skip
    signing_input = f"{_part({'alg': 'HS256', 'typ': 'JWT', 'kid': KID})}.{_part(claims)}"
    signature = hmac.new(secret_pem, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


async def test_claims_map_to_name_tenant_and_roles(issuer: Issuer) -> None:
    nested = verifier(
        issuer,
        name_claim="email",
        tenant_claim="org.id",
        roles_claim="realm_access.roles",
        jwks_url=issuer.url + "/jwks",
    )
    token = issuer.token(
        email="bob@acme.example",
        org={"id": "acme"},
        realm_access={"roles": ["approve", "offline_access"]},
    )
    assert await nested.authenticate(token) == Principal(
        name="bob@acme.example", tenant="acme", roles=frozenset({"approve"})
    )
    fixed = verifier(issuer, tenant="support")
    principal = await fixed.authenticate(issuer.token(tenant=None, roles="read start"))
    assert (principal.tenant, principal.roles) == ("support", frozenset({"read", "start"}))
    with pytest.raises(Unauthenticated, match="not a tenant name"):
        await verifier(issuer).authenticate(issuer.token(tenant="../other"))
    assert roles_of("admin  read") == frozenset({"admin", "read"})
    assert roles_of({"admin": True}) == frozenset()
