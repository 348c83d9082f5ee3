"""kafkasec's own SCRAM client: RFC 7677's exchange byte for byte, Kafka's extensions signed as
Kafka signs them, and a state machine that refuses calls out of order."""

import pytest

from kafkasec import IllegalSaslStateError, SaslAuthenticationError, ScramServer
from kafkasec.scram import ScramFormatter
from kafkasec.scram.client import ScramClient, ScramClientState

from scram_support import RFC_CLIENT_FIRST, RFC_FINALS, RFC_SALT, RFC_SERVER_FIRST, RFC_SERVER_NONCE

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_rfc7677_exchange_byte_for_byte(mechanism):
    client = ScramClient(mechanism, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == RFC_CLIENT_FIRST
    final, server_final = RFC_FINALS[mechanism]
    assert client.final_message(RFC_SERVER_FIRST) == final.encode()
    client.verify_server_final(server_final.encode())
    assert client.is_complete


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_extensions_are_signed_and_accepted_by_the_server(mechanism):
    credential = ScramFormatter(mechanism).generate_credential("pencil", 4096, salt=RFC_SALT)
    server = ScramServer(mechanism, {"a,b=c": credential}.get, nonce_factory=lambda: RFC_SERVER_NONCE)
    client = ScramClient(mechanism, "a,b=c", "pencil", extensions={"traceid": "42"})
    first = client.first_message()
    assert first.startswith(b"n,,n=a=2Cb=3Dc,r=") and first.endswith(b",traceid=42")
    client.verify_server_final(server.evaluate_response(client.final_message(server.evaluate_response(first))))
    assert server.authorization_id == "a,b=c"


def test_a_wrong_server_signature_or_an_error_is_refused():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="Invalid server signature"):
        client.verify_server_final(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    assert client.state is ScramClientState.FAILED
    other = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    other.first_message()
    other.final_message(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError, match="invalid-proof"):
        other.verify_server_final(b"e=invalid-proof")


@pytest.mark.parametrize(
    "server_first",
    [b"", b"r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
     b"r=rOprNGfwEbeRWgbNEkqOx,s=,i=4096", b"r=rOprNGfwEbeRWgbNEkqOx,s=AAAA,i=0", b"\xff\xfe"],
)
def test_malformed_server_first_messages_fail_the_exchange(server_first):
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    client.first_message()
    with pytest.raises(SaslAuthenticationError):
        client.final_message(server_first)
    assert client.state is ScramClientState.FAILED


def test_calls_out_of_order_are_illegal():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    with pytest.raises(IllegalSaslStateError):
        client.final_message(RFC_SERVER_FIRST)
    assert client.state is ScramClientState.FAILED
    with pytest.raises(IllegalSaslStateError):
        client.first_message()


@pytest.mark.parametrize("extensions", [{"bad-name": "x"}, {"ok": ""}, {"ok": "a,b"}])
def test_bad_extensions_are_misuse(extensions):
    with pytest.raises(ValueError):
        ScramClient("SCRAM-SHA-256", "user", "pencil", extensions=extensions)
