"""SASL/PLAIN against Kafka's PlainSaslServerTest and PlainSaslServer, the built-in credential
check (PlainServerCallbackHandler's user_<name> JAAS options) and malformed messages."""

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec import KafkaSecurity, hookimpl
from kafkasec.errors import IllegalSaslStateError, KafkaErrorCode, SaslAuthenticationError
from kafkasec.sasl import PlainServer
from kafkasec.sasl.plain import PlainServerState

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="x" '
    'user_alice="alice-secret" user_bob="bob-secret";'
)
LISTENER_JAAS = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}


def message(authorization_id, username, password) -> bytes:
    return f"{authorization_id}\0{username}\0{password}".encode()


def server(users=USERS):
    return PlainServer(lambda user, password: users.get(user) == password)


def refused(exchange, data) -> SaslAuthenticationError:
    with pytest.raises(SaslAuthenticationError) as error:
        exchange.evaluate_response(data)
    assert error.value.code == KafkaErrorCode.SASL_AUTHENTICATION_FAILED
    assert exchange.state is PlainServerState.FAILED
    return error.value


def test_no_authorization_id_logs_in_the_user():
    exchange = server()
    assert exchange.evaluate_response(message("", "alice", "alice-secret")) == b""
    assert exchange.is_complete and exchange.authorization_id == "alice"
    context = exchange.authentication_context("10.0.0.1")
    assert (context.mechanism, context.authorization_id) == ("PLAIN", "alice")


def test_an_authorization_id_equal_to_the_user_is_accepted():
    exchange = server()
    exchange.evaluate_response(message("alice", "alice", "alice-secret"))
    assert exchange.authorization_id == "alice"


def test_an_authorization_id_other_than_the_user_is_refused():
    error = refused(server(), message("bob", "alice", "alice-secret"))
    assert error.message == "Authentication failed: Client requested an authorization id that is different from username"


def test_a_wrong_password_or_an_unknown_user_gets_the_same_answer():
    for data in (message("", "alice", "wrong"), message("", "mallory", "x")):
        assert refused(server(), data).message == "Authentication failed: Invalid username or password"


@pytest.mark.parametrize(
    "authorization_id, username, password, answer",
    [
        ("", "", "", "username not specified"),
        ("", "", "p", "username not specified"),
        ("", "u", "", "password not specified"),
        ("a", "", "", "username not specified"),
        ("a", "", "p", "username not specified"),
        ("a", "u", "", "password not specified"),
    ],
)
def test_empty_tokens(authorization_id, username, password, answer):
    assert refused(server(), message(authorization_id, username, password)).message == f"Authentication failed: {answer}"


@pytest.mark.parametrize(
    "data, count",
    [(b"", 1), (b"alice", 1), (b"\0alice", 2), (b"a\0b\0c\0", 4), (b"a\0b\0c\0d\0e", 4)],
)
def test_anything_but_three_tokens_is_refused_with_kafkas_count(data, count):
    assert refused(server(), data).message == f"Invalid SASL/PLAIN response: expected 3 tokens, got {count}"


def test_a_failing_check_is_could_not_be_verified():
    def broken(user, password):
        raise OSError("the directory is down")

    error = refused(PlainServer(broken), message("", "alice", "alice-secret"))
    assert error.message == "Authentication failed: credentials for user could not be verified"
    assert "the directory is down" in error.reason


def test_a_message_after_the_exchange_is_an_illegal_state_and_fails_it():
    exchange = server()
    exchange.evaluate_response(message("", "alice", "alice-secret"))
    with pytest.raises(IllegalSaslStateError):
        exchange.evaluate_response(message("", "alice", "alice-secret"))
    assert exchange.state is PlainServerState.FAILED
    with pytest.raises(IllegalSaslStateError, match="has not completed"):
        _ = exchange.authorization_id
    with pytest.raises(TypeError, match="bytes"):
        server().evaluate_response("alice")


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_log_in_or_are_refused_cleanly(data):
    exchange = server()
    try:
        exchange.evaluate_response(data)
    except SaslAuthenticationError as error:
        assert error.message.startswith(("Authentication failed", "Invalid SASL/PLAIN response"))
        assert exchange.state is PlainServerState.FAILED
    else:
        assert exchange.authorization_id in USERS


def test_the_built_in_check_reads_the_listeners_jaas_users():
    with KafkaSecurity(config=LISTENER_JAAS) as security:
        exchange = security.sasl_server("PLAIN", listener_name="SASL_PLAINTEXT")
        exchange.evaluate_response(message("", "bob", "bob-secret"))
        assert exchange.authorization_id == "bob"
        # "admin" is the broker's own login (username/password), not a user_ option.
        refused(security.sasl_server("PLAIN"), message("", "admin", "x"))
        # Another listener has no PLAIN users.
        refused(security.sasl_server("PLAIN", listener_name="OTHER"), message("", "bob", "bob-secret"))


def test_a_jaas_config_of_another_module_gives_no_users():
    config = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS.replace("plain.PlainLoginModule", "scram.ScramLoginModule")}
    with KafkaSecurity(config=config) as security:
        refused(security.sasl_server("PLAIN"), message("", "bob", "bob-secret"))


def test_a_malformed_jaas_config_fails_the_start():
    with pytest.raises(ValueError, match="not terminated by ';'"):
        KafkaSecurity(config={"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS.rstrip(";")})


def test_a_plugin_checks_plain_passwords_first():
    class Directory:
        @hookimpl
        def kafkasec_authenticate_plain(self, security, username, password, listener_name):
            if username == "carol":
                return password == "from-the-directory"
            return None  # not mine: the JAAS users answer

    with KafkaSecurity(config=LISTENER_JAAS, plugins=[Directory()]) as security:
        for user, password in (("carol", "from-the-directory"), ("alice", "alice-secret")):
            exchange = security.sasl_server("PLAIN")
            exchange.evaluate_response(message("", user, password))
            assert exchange.authorization_id == user
        refused(security.sasl_server("PLAIN"), message("", "carol", "alice-secret"))
