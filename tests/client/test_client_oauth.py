"""OAUTHBEARER tokens from an identity provider's token endpoint (a real one over 127.0.0.1, and
broken ones) or from a file, as Kafka's OAuthBearerLoginCallbackHandler gets them."""

import json
import threading

import pytest

from kafkasec.client.oauth import TokenEndpoint
from kafkasec.errors import SaslAuthenticationError
from kafkasec.sasl.oauthbearer import jwt_part

from identity_provider import IdentityProvider


@pytest.fixture(scope="module")
def provider():
    provider = IdentityProvider()
    provider.clients["kafka-admin"] = "s3cret:with/odd chars"
    with provider.serving() as jwks_url:
        provider.token_url = jwks_url.replace("/jwks.json", "/token")
        yield provider


def test_a_token_from_the_client_credentials_grant(provider):
    # The secret holds ':' and '/': Kafka URL-encodes id and secret before base64 (KIP-768),
    # and the provider decodes them so, or refuses the client.
    endpoint = TokenEndpoint(provider.token_url, {"clientId": "kafka-admin", "clientSecret": "s3cret:with/odd chars",
                                                  "scope": "kafka"})
    token = endpoint()
    assert jwt_part(token.split(".")[1])["sub"] == "kafka-admin"
    assert provider.token_requests[-1] == {"grant_type": "client_credentials", "scope": "kafka"}
    assert "s3cret" not in repr(endpoint)


def test_a_refused_client_is_one_clear_error(provider):
    endpoint = TokenEndpoint(provider.token_url, {"clientId": "kafka-admin", "clientSecret": "wrong"})
    with pytest.raises(SaslAuthenticationError, match="answered HTTP 401"):
        endpoint()


def test_a_token_file_is_read_at_each_login(tmp_path):
    path = tmp_path / "token.jwt"
    path.write_text("first\n")
    endpoint = TokenEndpoint(path.as_uri(), {})
    assert endpoint() == "first"
    path.write_text("second")
    assert endpoint() == "second"
    path.write_text("")
    with pytest.raises(SaslAuthenticationError, match="is empty"):
        endpoint()
    path.unlink()
    with pytest.raises(SaslAuthenticationError, match="cannot be read"):
        endpoint()


class _OneAnswerServer:
    """An HTTP server on 127.0.0.1 that answers every request with ``body``."""

    def __init__(self, body: bytes):
        import http.server

        answer = body

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                # Read the form first: a socket closed with it unread is reset, and the client
                # could see the reset before the answer.
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    "body, message",
    [
        (b"<html>no</html>", "without an access_token"),
        (json.dumps({"token_type": "Bearer"}).encode(), "without an access_token"),
        (json.dumps({"access_token": ""}).encode(), "empty access_token"),
        (b"x" * (1 << 20 | 1), "more than"),
    ],
)
def test_bad_token_endpoint_answers(body, message):
    server = _OneAnswerServer(body)
    try:
        with pytest.raises(SaslAuthenticationError, match=message):
            TokenEndpoint(server.url, {"clientId": "c", "clientSecret": "s"})()
    finally:
        server.close()


def test_an_unreachable_token_endpoint():
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    endpoint = TokenEndpoint(f"http://127.0.0.1:{port}/token", {"clientId": "c", "clientSecret": "s"}, timeout_s=2)
    with pytest.raises(SaslAuthenticationError, match="cannot be reached"):
        endpoint()

