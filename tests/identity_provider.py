"""A local identity provider for OAUTHBEARER tests: keys made with cryptography, a JWKS and a
client-credentials token endpoint served over HTTP on 127.0.0.1, and JWTs signed with those keys
(or forged, expired, unsigned)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.server
import json
import threading
import time
import urllib.parse

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

ISSUER = "https://idp.example.test"
AUDIENCE = "kafka-broker"


class IdentityProvider:
    """Signs tokens with its current keys and serves their public halves as a JWKS."""

    def __init__(self):
        self.keys = {"rsa-1": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")}
        self.requests = 0
        self.clients: dict[str, str] = {}
        """client id -> secret: who the token endpoint gives tokens to (the client id is the subject)."""
        self.token_requests: list[dict] = []
        """The form of each token request, for tests to check."""
        self.answering = threading.Event()
        """Cleared, the JWKS endpoint takes requests (and counts them) but answers none until it is
        set again: an identity provider that hangs."""
        self.answering.set()

    def add_key(self, kid: str, algorithm: str = "ES256") -> None:
        private = ec.generate_private_key(ec.SECP256R1()) if algorithm.startswith("ES") else rsa.generate_private_key(65537, 2048)
        self.keys[kid] = (private, algorithm)

    def jwks(self) -> dict:
        keys = []
        for kid, (private, algorithm) in self.keys.items():
            jwk = json.loads(jwt.algorithms.get_default_algorithms()[algorithm].to_jwk(private.public_key()))
            keys.append({**jwk, "kid": kid, "alg": algorithm, "use": "sig"})
        return {"keys": keys}

    def token(self, subject="alice", *, kid="rsa-1", lifetime_s=300, audience=AUDIENCE, issuer=ISSUER, **claims) -> str:
        private, algorithm = self.keys[kid]
        now = int(time.time())
        payload = {"sub": subject, "iat": now, "exp": now + lifetime_s, "aud": audience, "iss": issuer, **claims}
        return jwt.encode(payload, private, algorithm=algorithm, headers={"kid": kid})

    @contextlib.contextmanager
    def serving(self, port: int = 0):
        """The JWKS at ``http://127.0.0.1:<port>/jwks.json`` and the token endpoint at ``/token``
        while the block runs; yields the JWKS URL. ``port`` 0 is a free one; a port served
        before serves the same URL again (an identity provider back after an outage)."""
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                provider.token_requests.append(form)
                scheme, _, credentials = (self.headers.get("Authorization") or "").partition(" ")
                client_id, _, secret = base64.b64decode(credentials or "").decode().partition(":")
                client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
                allowed = scheme == "Basic" and provider.clients.get(client_id) == secret and self.path == "/token"
                status, answer = (200, {"access_token": provider.token(client_id), "token_type": "Bearer"}) if allowed else (
                    401, {"error": "invalid_client"})
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                provider.requests += 1
                provider.answering.wait()
                body = json.dumps(provider.jwks()).encode()
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
        finally:
            server.shutdown()
            server.server_close()


def eventually(condition, timeout_s: float = 5.0) -> bool:
    """Whether ``condition()`` comes true within ``timeout_s``: for what a background thread does."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def hmac_signed_with_public_key(provider: IdentityProvider, claims: dict, kid: str = "rsa-1") -> str:
    """The algorithm-confusion forgery: HS256 keyed with the RSA key's public PEM, which a
    validator that lets the token's header choose the algorithm would accept."""
    from cryptography.hazmat.primitives import serialization

    public_pem = provider.keys[kid][0].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signing_input = f"{_part({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{_part(claims)}"
    signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def _part(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


