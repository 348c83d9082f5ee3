"""The SASL/SCRAM server against RFC 7677's exchange, Kafka's ScramSaslServerTest and
ScramMessagesTest, real clients (scramp, kafka-python) and malformed input.

Where Kafka departs from RFC 5802 (a reserved m= accepted, the channel binding not compared
with the gs2 header, a final nonce that only has to end with the server's, extensions signed in
HashMap order), the expected behaviour was checked against Kafka's ScramSaslServer itself.
"""

import base64
import importlib
import re
import time
from pathlib import Path

import pytest
import scramp
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec.errors import IllegalSaslStateError, KafkaError, KafkaErrorCode
from kafkasec.principals.authentication import SaslAuthenticationContext
from kafkasec.scram import ScramFormatter, ScramMechanism, server as server_module
from kafkasec.scram.server import (
    SaslAuthenticationError,
    ScramServer,
    ScramServerState,
    sasl_name,
    username_from_sasl_name,
)

from scram_support import (
    MECHANISMS,
    PASSWORDS,
    RFC_CLIENT_FIRST,
    RFC_FINALS,
    RFC_NONCE,
    RFC_SERVER_FIRST,
    RFC_SERVER_NONCE,
    TOKEN_CREDENTIALS,
    TOKEN_PASSWORD,
    credentials,
    server_for,
)

ROOT = Path(__file__).resolve().parents[2]
FAILED_GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"

class KafkaStyleClient:
    """A SCRAM client that signs exactly what it is told to, to reach every corner of the server."""

    def __init__(self, mechanism, username, password, *, nonce="clientnonce", extensions="", gs2="n,,"):
        self.formatter = ScramFormatter(mechanism)
        self.password = password
        self.gs2 = gs2
        self.bare = f"n={sasl_name(username)},r={nonce}" + (f",{extensions}" if extensions else "")

    def first(self) -> bytes:
        return (self.gs2 + self.bare).encode()

    def final(self, server_first: bytes, *, channel="biws", nonce=None, signed_bare=None, signed_channel=None, extra=""):
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        nonce = fields["r"] if nonce is None else nonce
        salted = self.formatter.salted_password(self.password, base64.b64decode(fields["s"]), int(fields["i"]))
        without_proof = f"c={signed_channel or channel},r={nonce}"
        self.auth_message = f"{signed_bare or self.bare},{server_first.decode()},{without_proof}".encode()
        proof = self.formatter.client_proof(salted, self.auth_message)
        self.server_signature = self.formatter.server_signature(self.formatter.server_key(salted), self.auth_message)
        return f"c={channel},r={nonce}{extra},p={base64.b64encode(proof).decode()}".encode()


def exchange(server, client, **final_kwargs):
    server_first = server.evaluate_response(client.first())
    return server.evaluate_response(client.final(server_first, **final_kwargs))


def refused(server, message, *, reason, generic=True):
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate_response(message)
    error = info.value
    assert error.code == 58 and error.error_name == "SASL_AUTHENTICATION_FAILED"
    assert error.reason == reason
    if generic:
        assert error.message == FAILED_GENERIC.format(server.mechanism_name)
    # Every refusal is held back for connection.failed.authentication.delay.ms.
    assert error.delay_ms == server.failed_authentication_delay_ms
    assert server.state is ScramServerState.FAILED
    assert not server.is_complete
    return error


# --- RFC 7677, byte for byte ------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_rfc7677_exchange_byte_for_byte(mechanism):
    server = server_for(mechanism)
    assert server.state is ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE
    assert server.evaluate_response(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.state is ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE and not server.is_complete
    client_final, server_final = RFC_FINALS[mechanism]
    assert server.evaluate_response(client_final.encode()) == server_final.encode()
    assert server.is_complete and server.state is ScramServerState.COMPLETE
    assert server.authorization_id == "user"
    assert server.token_authenticated is False
    assert server.mechanism_name == mechanism


def test_mechanism_may_be_given_as_member_code_or_name():
    for mechanism in (ScramMechanism.SCRAM_SHA_512, 2, "SCRAM-SHA-512"):
        assert ScramServer(mechanism, credentials("SCRAM-SHA-512")).mechanism_name == "SCRAM-SHA-512"


def test_server_accepts_bytearray_and_memoryview():
    server = server_for()
    assert server.evaluate_response(bytearray(RFC_CLIENT_FIRST)) == RFC_SERVER_FIRST
    server.evaluate_response(memoryview(RFC_FINALS["SCRAM-SHA-256"][0].encode()))
    assert server.is_complete


# --- Real clients, no sockets -----------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("username", ["user", "alice", "a,b=c"])
def test_scramp_client_authenticates(mechanism, username):
    client = scramp.ScramClient([mechanism], username, PASSWORDS[username])
    server = ScramServer(mechanism, credentials(mechanism))
    client.set_server_first(server.evaluate_response(client.get_client_first().encode()).decode())
    client.set_server_final(server.evaluate_response(client.get_client_final().encode()).decode())
    assert server.is_complete and server.authorization_id == username


def test_scramp_client_with_a_password_saslprep_changes_is_refused_as_kafka_refuses_it():
    # scramp SASLpreps the password and Kafka does not: for Kafka this is another password.
    password = "I\u00adX\u2168"
    store = {"carol": ScramFormatter("SCRAM-SHA-256").generate_credential(password, 4096)}
    client = scramp.ScramClient(["SCRAM-SHA-256"], "carol", password)
    server = ScramServer("SCRAM-SHA-256", store.get)
    client.set_server_first(server.evaluate_response(client.get_client_first().encode()).decode())
    refused(server, client.get_client_final().encode(), reason="Invalid client credentials")


def kafka_python_scram_client():
    """kafka-python's ScramClient, wherever this kafka-python keeps it."""
    for module in ("kafka.net.sasl.scram", "kafka.sasl.scram", "kafka.scram"):
        try:
            return importlib.import_module(module).ScramClient
        except ImportError:
            continue
    pytest.skip("this kafka-python has no SCRAM client")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_client_authenticates(mechanism):
    client = kafka_python_scram_client()("alice", PASSWORDS["alice"], mechanism)
    server = ScramServer(mechanism, credentials(mechanism))
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    client.process_server_final_message(server.evaluate_response(client.final_message()))
    assert server.is_complete and server.authorization_id == "alice"


def test_kafka_python_client_does_not_escape_usernames_so_kafka_cannot_parse_them():
    client = kafka_python_scram_client()("a,b=c", PASSWORDS["a,b=c"], "SCRAM-SHA-256")
    server = ScramServer("SCRAM-SHA-256", credentials("SCRAM-SHA-256"))
    first = client.first_message()
    assert first.startswith(b"n,,n=a,b=c,r=")
    refused(server, first, reason=f"Invalid SCRAM client first message format ({len(first)} bytes)")


def test_kafka_python_client_sees_a_wrong_server_signature():
    client = kafka_python_scram_client()("alice", "not the password", "SCRAM-SHA-256")
    server = ScramServer("SCRAM-SHA-256", credentials("SCRAM-SHA-256"))
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    refused(server, client.final_message(), reason="Invalid client credentials")


# --- Usernames and their escapes (Kafka's ScramFormatterTest.saslName, ScramMessagesTest) -----


@pytest.mark.parametrize("username", ["user1", "123", "1,2", "user=A", "user==B", "user,1", "user 1", ",", "=", ",=", "=="])
def test_sasl_name_round_trip(username):
    name = sasl_name(username)
    assert "," not in name
    assert "=" not in name.replace("=2C", "").replace("=3D", "")
    assert username_from_sasl_name(name) == username


@pytest.mark.parametrize("name, username", [("test=2Cuser", "test,user"), ("test=3Duser", "test=user"), ("=3D2C", "=2C")])
def test_username_unescaping(name, username):
    assert username_from_sasl_name(name) == username


@pytest.mark.parametrize("name", ["a=b", "a=2c", "=", "a=3"])
def test_other_equals_signs_are_invalid(name):
    with pytest.raises(ValueError, match="Invalid username"):
        username_from_sasl_name(name)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_escaped_username_authenticates_as_the_unescaped_name(mechanism):
    client = KafkaStyleClient(mechanism, "a,b=c", PASSWORDS["a,b=c"])
    assert client.first() == b"n,,n=a=2Cb=3Dc,r=clientnonce"
    server = server_for(mechanism)
    exchange(server, client)
    assert server.authorization_id == "a,b=c"


def test_unescaped_equals_in_a_username_is_malformed():
    server = server_for()
    refused(server, b"n,,n=a=b,r=abc", reason="Invalid SCRAM client first message format (14 bytes)")


def test_non_ascii_usernames_are_outside_kafkas_grammar():
    message = "n,,n=jos\u00e9,r=abc".encode()
    refused(server_for(), message, reason=f"Invalid SCRAM client first message format ({len(message)} bytes)")


# --- Authorization ids (Kafka's ScramSaslServerTest) ------------------------------------------


def test_no_authorization_id_specified():
    assert server_for().evaluate_response(b"n,,n=alice,r=abc")


def test_authorization_id_equals_authentication_id():
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"], gs2="n,a=alice,")
    exchange(server, client)
    assert server.authorization_id == "alice"


def test_authorization_id_different_from_username_is_refused_with_kafkas_own_message():
    error = refused(
        server_for(),
        b"n,a=user,n=alice,r=abc",
        reason="Authentication failed: Client requested an authorization id that is different from username",
        generic=False,
    )
    assert error.message == error.reason and error.respond


def test_authorization_id_is_compared_as_sent_with_the_unescaped_username():
    # Kafka does not unescape the authzid: a user with a comma cannot name itself.
    refused(
        server_for(),
        b"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=abc",
        reason="Authentication failed: Client requested an authorization id that is different from username",
        generic=False,
    )


def test_unknown_user_with_an_authzid_is_an_unknown_user():
    refused(server_for(), b"n,a=other,n=nobody,r=abc", reason="Authentication failed: Invalid user credentials")


# --- Failures ---------------------------------------------------------------------------------


def test_unknown_user_fails_at_the_client_first_message():
    server = server_for()
    error = refused(server, b"n,,n=nobody,r=abc", reason="Authentication failed: Invalid user credentials")
    assert error.respond and isinstance(error, KafkaError)
    assert error.error_code is KafkaErrorCode.SASL_AUTHENTICATION_FAILED
    assert str(error) == "SASL_AUTHENTICATION_FAILED (58): " + FAILED_GENERIC.format("SCRAM-SHA-256")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_fails_at_the_client_final_message(mechanism):
    server = server_for(mechanism)
    client = KafkaStyleClient(mechanism, "alice", "wrong")
    server_first = server.evaluate_response(client.first())
    refused(server, client.final(server_first), reason="Invalid client credentials")


def test_wrong_nonce_is_refused():
    # Kafka's ScramSaslServerTest.validateFailedNonceExchange.
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    server_first = server.evaluate_response(client.first())
    refused(
        server,
        client.final(server_first, nonce="clientnonce" + "another"),
        reason="Invalid client nonce in the final client message.",
    )


def test_client_nonce_alone_is_refused():
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    server_first = server.evaluate_response(client.first())
    refused(
        server, client.final(server_first, nonce="clientnonce"), reason="Invalid client nonce in the final client message."
    )


def test_server_nonce_starts_with_the_client_nonce():
    # Kafka's ScramSaslServerTest.validateNonceExchange, with Kafka's random server nonce.
    server = ScramServer("SCRAM-SHA-256", credentials("SCRAM-SHA-256"))
    fields = dict(part.split("=", 1) for part in server.evaluate_response(b"n,,n=alice,r=abc").decode().split(","))
    assert fields["r"].startswith("abc") and re.fullmatch(r"[0-9a-z]+", fields["r"][3:])
    other = ScramServer("SCRAM-SHA-256", credentials("SCRAM-SHA-256")).evaluate_response(b"n,,n=alice,r=abc")
    assert other.split(b",")[0] != f"r={fields['r']}".encode()


def test_final_nonce_need_only_end_with_the_servers_as_in_kafka():
    # Kafka checks nonce.endsWith(serverNonce); the longer nonce is what the proof signs.
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    server_first = server.evaluate_response(client.first())
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    server.evaluate_response(client.final(server_first, nonce="extra" + fields["r"]))
    assert server.is_complete


def test_tampered_channel_binding_breaks_the_proof():
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    server_first = server.evaluate_response(client.first())
    refused(server, client.final(server_first, channel="eSws", signed_channel="biws"), reason="Invalid client credentials")


def test_channel_binding_is_not_compared_with_the_gs2_header_as_in_kafka():
    # c=eSws is "y,,"; Kafka never compares it with the gs2 header "n,,": the proof signs it.
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    exchange(server, client, channel="eSws")
    assert server.is_complete


def test_channel_binding_is_signed_as_kafka_re_encodes_it():
    # "bix=" decodes to "n," as "biw=" does (the last two bits are padding); Kafka signs the
    # re-encoded "biw=", not the text sent.
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    server_first = server.evaluate_response(client.first())
    refused(server, client.final(server_first, channel="bix="), reason="Invalid client credentials")
    server = server_for()
    server_first = server.evaluate_response(client.first())
    server.evaluate_response(client.final(server_first, channel="bix=", signed_channel="biw="))
    assert server.is_complete


@pytest.mark.parametrize("channel", ["ab", "biws=", "b!ws"])
def test_malformed_channel_binding_is_malformed(channel):
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    final = client.final(server.evaluate_response(client.first()), channel=channel)
    refused(server, final, reason=f"Invalid SCRAM client final message format ({len(final)} bytes)")


@pytest.mark.parametrize("proof", [b"", b"short", bytes(64)])
def test_proof_of_the_wrong_length_closes_the_connection_unanswered(proof):
    # Kafka's xor throws IllegalArgumentException: no SaslAuthenticate response, the broker
    # closes the connection. The exchange is over here too.
    server = server_for()
    server.evaluate_response(b"n,,n=alice,r=abc")
    message = f"c=biws,r=abc{RFC_SERVER_NONCE},p={base64.b64encode(proof).decode()}".encode()
    error = refused(server, message, reason="Argument arrays must be of the same length")
    assert error.respond is False


def test_malformed_proof_is_malformed():
    server = server_for()
    server.evaluate_response(b"n,,n=alice,r=abc")
    message = f"c=biws,r=abc{RFC_SERVER_NONCE},p=123".encode()
    refused(server, message, reason=f"Invalid SCRAM client final message format ({len(message)} bytes)")


def test_too_few_iterations_are_refused():
    weak = {"weak": ScramFormatter("SCRAM-SHA-512").generate_credential("pw", 1024)}
    server = ScramServer("SCRAM-SHA-512", weak.get)
    refused(server, b"n,,n=weak,r=abc", reason="Iterations 1024 is less than the minimum 4096 for SCRAM_SHA_512")


# --- Kafka's message grammar (ScramMessagesTest) ----------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "y,,n=alice,r=abc",  # channel binding supported by the client: Kafka only takes "n"
        "p=tls-unique,,n=alice,r=abc",
        "n,x=something,n=alice,r=abc",
        "n,a=,n=alice,r=abc",
        "n,,m,n=alice,r=abc",
        "n,,m=name,value,n=alice,r=abc",
        "n,,m=,,n=alice,r=abc",
        "n,,n=alice,r=abc,ext1=value",
        "n,,n=alice,r=abc,ext",
        "n,,n=alice,r=abc,ext=value1,value2",
        "n,,n=alice,r=abc,ext=,",
        "n,,n=alice,r=abc,ext =value",
        "n,,n=alice,r=a b",
        "n,,n=alice,r=",
        "n,,n=,r=abc",
        "n,,n=alice",
        "n,,r=abc,n=alice",
        "n,,n=alice,r=abc\n",
        "",
    ],
)
def test_malformed_client_first_messages(message):
    server = server_for()
    refused(server, message.encode(), reason=f"Invalid SCRAM client first message format ({len(message.encode())} bytes)")


@pytest.mark.parametrize(
    "extensions",
    ["ext=val1", "anotherext=name1=value1 name2=another test value \"'!$[]()", "first=val1,second=name1 = value ,third=123"],
)
def test_valid_extensions_are_accepted(extensions):
    assert server_for().evaluate_response(f"n,,n=alice,r=abc,{extensions}".encode())


@pytest.mark.parametrize("reserved", ["m=reserved-value", "m=name1=value1 name2=another test value \"'!$[]()"])
def test_reserved_attribute_is_accepted_and_left_out_of_the_auth_message(reserved):
    # RFC 5802 says a server must fail on m=; Kafka parses it and drops it when it rebuilds the
    # client-first-bare, so only a client that signed without it gets in.
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    first = f"n,,{reserved},{client.bare}".encode()
    server = server_for()
    server_first = server.evaluate_response(first)
    server.evaluate_response(client.final(server_first))
    assert server.is_complete
    server = server_for()
    server_first = server.evaluate_response(first)
    refused(server, client.final(server_first, signed_bare=f"{reserved},{client.bare}"), reason="Invalid client credentials")


@pytest.mark.parametrize("extensions", ["ext=val1", "first=val1,second=name1 = value ,third=123"])
def test_client_final_extensions_are_accepted_and_not_signed(extensions):
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    exchange(server, client, extra="," + extensions)
    assert server.is_complete


# Java's HashMap order, from Kafka's ScramMessages on JDK 21+ (the JDK of Apache Kafka's image);
# JDK 17 sizes the copied map differently and gives "a=1,b=2,tokenauth=true" for the first.
EXTENSION_ORDERS = [
    ("tokenauth=true,a=1,b=2", "a=1,tokenauth=true,b=2"),
    ("foo=bar,tokenauth=true", "tokenauth=true,foo=bar"),
    ("b=1,a=2", "a=2,b=1"),
    ("alpha=1,beta=2,gamma=3", "beta=2,gamma=3,alpha=1"),
    ("tokenauth=true,tokenauth=false,a=1", "a=1,tokenauth=false"),
]


@pytest.mark.parametrize("sent, signed", EXTENSION_ORDERS)
def test_extensions_are_signed_in_kafkas_hash_map_order(sent, signed):
    token = "tokenauth=true" in signed
    username, password = ("token-1", TOKEN_PASSWORD) if token else ("alice", PASSWORDS["alice"])
    client = KafkaStyleClient("SCRAM-SHA-256", username, password, extensions=sent)
    server = server_for()
    server_first = server.evaluate_response(client.first())
    server.evaluate_response(client.final(server_first, signed_bare=f"n={username},r=clientnonce,{signed}"))
    assert server.is_complete and server.token_authenticated is token
    if sent != signed:
        server = server_for()
        server_first = server.evaluate_response(client.first())
        refused(server, client.final(server_first), reason="Invalid client credentials")


# --- Delegation tokens (tokenauth=true) -------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("flag", ["true", "TRUE", "True"])
def test_token_login_authorizes_the_owner(mechanism, flag):
    client = KafkaStyleClient(mechanism, "token-1", TOKEN_PASSWORD, extensions=f"tokenauth={flag}")
    server = server_for(mechanism)
    server_final = exchange(server, client)
    assert server_final == b"v=" + base64.b64encode(client.server_signature)
    assert server.authorization_id == "alice"
    assert server.token_authenticated is True


def test_token_login_with_scramp_is_not_possible_without_extensions():
    # scramp sends no extensions: the token id is looked up as a user, and there is none.
    client = scramp.ScramClient(["SCRAM-SHA-256"], "token-1", TOKEN_PASSWORD)
    refused(server_for(), client.get_client_first().encode(), reason="Authentication failed: Invalid user credentials")


def test_unknown_token_is_refused():
    refused(
        server_for(),
        b"n,,n=token-9,r=abc,tokenauth=true",
        reason="Token Authentication failed: Invalid tokenId : token-9",
    )


def test_token_without_a_credential_for_the_mechanism_is_refused():
    refused(
        server_for(),
        b"n,,n=token-no-credential,r=abc,tokenauth=true",
        reason="Authentication failed: Invalid user credentials",
    )


def test_without_a_token_callback_every_token_is_unknown():
    refused(
        server_for(token_callback=None),
        b"n,,n=token-1,r=abc,tokenauth=true",
        reason="Token Authentication failed: Invalid tokenId : token-1",
    )


def test_token_password_is_not_a_user_password():
    # tokenauth=false (or absent) looks the name up as a user.
    refused(server_for(), b"n,,n=token-1,r=abc,tokenauth=false", reason="Authentication failed: Invalid user credentials")


def test_unsupported_extensions_are_ignored():
    server = server_for()
    client = KafkaStyleClient("SCRAM-SHA-256", "token-1", TOKEN_PASSWORD, extensions="tokenauth=true,foo=bar")
    exchange(server, client)
    assert server.authorization_id == "alice" and server.token_authenticated


# --- Callbacks --------------------------------------------------------------------------------


def test_callback_failure_is_an_authentication_failure():
    def broken(username):
        raise OSError("credential store unreachable")

    server = ScramServer("SCRAM-SHA-256", broken)
    error = refused(server, b"n,,n=alice,r=abc", reason="Authentication failed: Credentials could not be obtained")
    assert isinstance(error.__cause__, OSError)


def test_token_callback_failure_is_an_authentication_failure():
    def broken(token_id):
        raise RuntimeError("token cache not loaded")

    server = server_for(token_callback=broken)
    refused(server, b"n,,n=t,r=abc,tokenauth=true", reason="Authentication failed: Credentials could not be obtained")


def test_kafka_error_from_a_callback_fails_the_exchange_unchanged(monkeypatch):
    # A KafkaError subclass registers itself for its code: this one must not outlive the test.
    monkeypatch.setattr(KafkaError, "_by_code", dict(KafkaError._by_code))

    class Throttled(KafkaError):
        default_error_code = KafkaErrorCode.THROTTLING_QUOTA_EXCEEDED

    def throttled(username):
        raise Throttled("slow down")

    server = ScramServer("SCRAM-SHA-256", throttled)
    with pytest.raises(Throttled):
        server.evaluate_response(b"n,,n=alice,r=abc")
    assert server.state is ScramServerState.FAILED


@pytest.mark.parametrize("answer", ["not a credential", b"salt=...", ("alice",)])
def test_callback_returning_the_wrong_type_is_a_type_error(answer):
    server = ScramServer("SCRAM-SHA-256", lambda username: answer)
    with pytest.raises(TypeError):
        server.evaluate_response(b"n,,n=alice,r=abc")
    assert server.state is ScramServerState.FAILED


@pytest.mark.parametrize("answer", ["alice", ("alice", "credential"), (None, TOKEN_CREDENTIALS["SCRAM-SHA-256"])])
def test_token_callback_returning_the_wrong_shape_is_a_type_error(answer):
    server = server_for(token_callback=lambda token_id: answer)
    with pytest.raises(TypeError):
        server.evaluate_response(b"n,,n=t,r=abc,tokenauth=true")


@pytest.mark.parametrize("nonce", ["", "a,b", "caf\u00e9", "sp ace", 42])
def test_nonce_factory_must_give_a_printable_nonce(nonce):
    server = ScramServer("SCRAM-SHA-256", credentials("SCRAM-SHA-256"), nonce_factory=lambda: nonce)
    with pytest.raises(ValueError):
        server.evaluate_response(b"n,,n=alice,r=abc")


@pytest.mark.parametrize(
    "kwargs", [{"credential_callback": {}}, {"token_callback": "tokens"}, {"nonce_factory": "nonce"}]
)
def test_callbacks_must_be_callable(kwargs):
    arguments = {"credential_callback": credentials("SCRAM-SHA-256"), **kwargs}
    with pytest.raises(TypeError):
        ScramServer("SCRAM-SHA-256", arguments.pop("credential_callback"), **arguments)


@pytest.mark.parametrize("mechanism", [ScramMechanism.UNKNOWN, "SCRAM-SHA-1", "PLAIN", 7])
def test_unsupported_mechanisms_are_value_errors(mechanism):
    with pytest.raises(ValueError):
        ScramServer(mechanism, credentials("SCRAM-SHA-256"))


# --- States -----------------------------------------------------------------------------------


def test_client_final_message_first_is_a_malformed_client_first_message():
    message = RFC_FINALS["SCRAM-SHA-256"][0].encode()
    refused(server_for(), message, reason=f"Invalid SCRAM client first message format ({len(message)} bytes)")


def test_client_first_message_twice_is_a_malformed_client_final_message():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    refused(server, RFC_CLIENT_FIRST, reason=f"Invalid SCRAM client final message format ({len(RFC_CLIENT_FIRST)} bytes)")


def test_message_after_completion_is_an_illegal_state_and_fails_the_exchange():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    server.evaluate_response(RFC_FINALS["SCRAM-SHA-256"][0].encode())
    assert server.is_complete
    with pytest.raises(IllegalSaslStateError) as info:
        server.evaluate_response(RFC_CLIENT_FIRST)
    assert info.value.code == 34 and info.value.error_name == "ILLEGAL_SASL_STATE"
    assert info.value.message == "Unexpected challenge in Sasl server state COMPLETE"
    assert isinstance(info.value, ValueError)
    # As Kafka's ScramSaslServer: the unexpected message fails the finished exchange.
    assert server.state is ScramServerState.FAILED and not server.is_complete
    with pytest.raises(IllegalSaslStateError):
        _ = server.authorization_id


def test_failed_exchange_stays_failed():
    server = server_for()
    with pytest.raises(SaslAuthenticationError):
        server.evaluate_response(b"n,,n=nobody,r=abc")
    for message in (RFC_CLIENT_FIRST, RFC_FINALS["SCRAM-SHA-256"][0].encode(), b""):
        with pytest.raises(IllegalSaslStateError, match="Unexpected challenge in Sasl server state FAILED"):
            server.evaluate_response(message)
        assert server.state is ScramServerState.FAILED


@pytest.mark.parametrize("attribute", ["authorization_id", "token_authenticated"])
def test_results_are_not_available_before_completion(attribute):
    server = server_for()
    with pytest.raises(IllegalSaslStateError, match="Authentication exchange has not completed"):
        getattr(server, attribute)
    server.evaluate_response(RFC_CLIENT_FIRST)
    with pytest.raises(IllegalSaslStateError):
        getattr(server, attribute)


@pytest.mark.parametrize("message", ["n,,n=alice,r=abc", None, 42])
def test_client_message_must_be_bytes_and_a_wrong_type_changes_nothing(message):
    server = server_for()
    with pytest.raises(TypeError):
        server.evaluate_response(message)
    assert server.state is ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE
    assert server.evaluate_response(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST


def test_secrets_are_not_in_the_repr():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    text = repr(server)
    assert text == "ScramServer(SCRAM-SHA-256, state=RECEIVE_CLIENT_FINAL_MESSAGE)"


def test_credential_is_dropped_when_the_exchange_ends():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    server.evaluate_response(RFC_FINALS["SCRAM-SHA-256"][0].encode())
    assert all(value is None for name, value in vars(server).items() if name in ("_credential", "_nonce"))


# --- The authentication context ---------------------------------------------------------------


def test_authentication_context_of_a_user_login():
    server = server_for("SCRAM-SHA-512")
    server.evaluate_response(RFC_CLIENT_FIRST)
    server.evaluate_response(RFC_FINALS["SCRAM-SHA-512"][0].encode())
    context = server.authentication_context("::1", listener_name="CLIENTS", security_protocol="SASL_SSL")
    assert context == SaslAuthenticationContext(
        "SCRAM-SHA-512", "user", "0:0:0:0:0:0:0:1", listener_name="CLIENTS", security_protocol="SASL_SSL"
    )
    assert context.token_authenticated is False


def test_authentication_context_of_a_token_login():
    server = server_for()
    exchange(server, KafkaStyleClient("SCRAM-SHA-256", "token-1", TOKEN_PASSWORD, extensions="tokenauth=true"))
    context = server.authentication_context("10.0.0.7")
    assert (context.mechanism, context.authorization_id, context.token_authenticated) == ("SCRAM-SHA-256", "alice", True)
    assert (context.listener_name, context.security_protocol) == ("SASL_PLAINTEXT", "SASL_PLAINTEXT")


def test_no_authentication_context_before_completion():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    with pytest.raises(IllegalSaslStateError):
        server.authentication_context("10.0.0.7")


# --- Malformed and truncated input: always a named error, quickly ------------------------------


def assert_named_failure(server, message):
    started = time.perf_counter()
    try:
        server.evaluate_response(message)
    except (SaslAuthenticationError, IllegalSaslStateError):
        assert server.state is ScramServerState.FAILED
    else:
        assert server.state in (ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE, ScramServerState.COMPLETE)
    assert time.perf_counter() - started < 0.5


def mutated(message: bytes, data) -> bytes:
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(message)), st.binary(max_size=3), st.integers(0, 3)), max_size=4))
    buffer = bytearray(message)
    for position, inserted, deleted in edits:
        position = min(position, len(buffer))
        buffer[position : position + deleted] = inserted
    return bytes(buffer)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=300))
def test_random_client_first_messages(message):
    assert_named_failure(server_for(), message)


@FUZZ
@given(st.data())
def test_mutated_client_first_messages(data):
    base = data.draw(
        st.sampled_from(
            [
                RFC_CLIENT_FIRST,
                b"n,a=alice,n=alice,r=abc",
                b"n,,m=x,n=a=2Cb=3Dc,r=abc,tokenauth=true",
                b"n,,n=token-1,r=a,tokenauth=true,x=y",
            ]
        )
    )
    assert_named_failure(server_for(), mutated(base, data))


@FUZZ
@given(st.data())
def test_mutated_and_truncated_client_final_messages(data):
    mechanism = data.draw(st.sampled_from(MECHANISMS))
    final = RFC_FINALS[mechanism][0].encode()
    message = data.draw(st.one_of(st.builds(lambda n: final[:n], st.integers(0, len(final))), st.just(None)))
    if message is None:
        message = mutated(final, data)
    server = server_for(mechanism)
    server.evaluate_response(RFC_CLIENT_FIRST)
    assert_named_failure(server, message)


@FUZZ
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_random_messages_after_a_good_first_message(second, third):
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    assert_named_failure(server, second)
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(third)


# Kafka's ClientFinalMessage pattern in one piece; the server matches it in two (see server.py).
KAFKA_CLIENT_FINAL = re.compile(
    rf"c=(?:{server_module._BASE64}),r=(?:{server_module._PRINTABLE})"
    rf"{server_module._EXTENSIONS},p=(?:{server_module._BASE64})"
)
FINAL_PIECES = ["c=", "r=", "p=", ",", "=", "biws", "AAAA", "AA==", "AAA=", "A", "x", "1", "+/", "!", " ", "\x01", "\u00e9"]


@FUZZ
@given(st.lists(st.sampled_from(FINAL_PIECES), max_size=16).map("".join))
def test_client_final_grammar_is_kafkas(text):
    server = server_for()
    server.evaluate_response(b"n,,n=alice,r=abc")
    try:
        server.evaluate_response(text.encode())
    except SaslAuthenticationError as error:
        malformed = error.reason.startswith("Invalid SCRAM client final message format")
    else:
        malformed = False
    assert malformed == (KAFKA_CLIENT_FINAL.fullmatch(text) is None)


@pytest.mark.parametrize(
    "message",
    [
        b"n,,n=" + b"a" * 100_000 + b",r=" + b"b" * 100_000 + b"," * 1000,
        b"n,,n=alice,r=abc" + b",a=b" * 20_000 + b",",
        b"n,,n=" + b"=2C" * 30_000 + b"=2",
        b"n,,n=alice,r=abc," + b"a=" * 50_000,
    ],
)
def test_long_pathological_client_first_messages_fail_quickly(message):
    assert_named_failure(server_for(), message)


def test_long_pathological_client_final_message_fails_quickly():
    server = server_for()
    server.evaluate_response(RFC_CLIENT_FIRST)
    assert_named_failure(server, f"c=biws,r={RFC_NONCE}".encode() + b",x=y" * 20_000 + b",p=" + b"AAAA" * 10_000 + b"A")


def test_many_extensions_are_parsed_quickly():
    extensions = ",".join(f"k{'abcdefghijklmnopqrstuvwxyz'[i % 26]}{'xyz'[i % 3] * (i % 7)}=v{i}" for i in range(2000))
    assert_named_failure(server_for(), f"n,,n=alice,r=abc,{extensions}".encode())


# --- The docs ---------------------------------------------------------------------------------


def server_section_blocks():
    """The python blocks of docs/scram.md's server section (other sections have their own tests)."""
    text = (ROOT / "docs" / "scram.md").read_text(encoding="utf-8")
    section = re.search(r"^## The SASL/SCRAM server\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert section, "docs/scram.md has no section 'The SASL/SCRAM server'"
    return re.findall(r"```python\n(.*?)```", section.group(1), flags=re.S)


def test_server_docs_examples_run():
    blocks = server_section_blocks()
    assert blocks, "the server section of docs/scram.md has no python example"
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/scram.md server block {number}", "exec"), {})


def test_a_token_logins_credential_lifetime_is_the_tokens_expiry():
    from kafkasec.scram.client import ScramClient

    expiry_ms = 1_900_000_000_000
    server = server_for(
        "SCRAM-SHA-256", nonce=RFC_SERVER_NONCE,
        token_callback=lambda token_id: ("alice", TOKEN_CREDENTIALS["SCRAM-SHA-256"], expiry_ms),
    )
    client = ScramClient("SCRAM-SHA-256", "token-1", TOKEN_PASSWORD, token_auth=True)
    client.verify_server_final(server.evaluate_response(client.final_message(server.evaluate_response(client.first_message()))))
    assert server.token_authenticated and server.credential_lifetime_ms == expiry_ms
    password_login = server_for("SCRAM-SHA-256")
    user = ScramClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    user.verify_server_final(password_login.evaluate_response(user.final_message(password_login.evaluate_response(user.first_message()))))
    assert password_login.credential_lifetime_ms is None  # a password does not expire
    with pytest.raises(TypeError, match="epoch milliseconds"):
        bad = server_for("SCRAM-SHA-256", token_callback=lambda token_id: ("alice", TOKEN_CREDENTIALS["SCRAM-SHA-256"], "soon"))
        bad.evaluate_response(ScramClient("SCRAM-SHA-256", "t", TOKEN_PASSWORD, token_auth=True).first_message())
