"""SCRAM logins through the facade: credentials written by the KIP-554 operations into SQLite,
checked by KafkaSecurity.scram_server, the principal made by the principal builder."""

import pytest
import scramp

from kafkasec import KafkaPrincipal, KafkaSecurity, ScramCredentialInfo, UserScramCredentialUpsertion
from kafkasec.errors import SaslAuthenticationError
from kafkasec.scram.server import DEFAULT_FAILED_AUTHENTICATION_DELAY_MS, ScramServerState

from security_support import open_security

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def add_user(security, user, password, mechanism, iterations=4096):
    upsertion = UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password)
    [result] = security.alter_user_scram_credentials([upsertion])
    assert result.error is None


def login(security, mechanism, user, password):
    """A scramp client against the facade's server; returns the server once it is COMPLETE."""
    client = scramp.ScramClient([mechanism], user, password)
    server = security.scram_server(mechanism)
    server_first = server.evaluate_response(client.get_client_first().encode())
    client.set_server_first(server_first.decode())
    server_final = server.evaluate_response(client.get_client_final().encode())
    client.set_server_final(server_final.decode())  # scramp checks the server's signature
    return server


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_user_made_by_kip_554_logs_in_after_a_restart(tmp_path, mechanism):
    with open_security(tmp_path / "state.db") as security:
        add_user(security, "alice", "alice-secret", mechanism, iterations=8192)
    with open_security(tmp_path / "state.db") as security:
        server = login(security, mechanism, "alice", "alice-secret")
        assert server.is_complete and server.authorization_id == "alice" and not server.token_authenticated
        principal = security.build_principal(server.authentication_context("10.0.0.5"))
    assert principal == KafkaPrincipal("User", "alice")


def test_only_the_mechanism_with_a_credential_logs_in(tmp_path):
    with open_security(tmp_path / "state.db") as security:
        add_user(security, "alice", "alice-secret", "SCRAM-SHA-256")
        assert login(security, "SCRAM-SHA-256", "alice", "alice-secret").is_complete
        with pytest.raises(SaslAuthenticationError) as refused:
            login(security, "SCRAM-SHA-512", "alice", "alice-secret")
    assert refused.value.code == 58


def test_wrong_password_and_unknown_user_look_the_same_and_wait_the_configured_delay(tmp_path):
    with open_security(tmp_path / "state.db", **{"connection.failed.authentication.delay.ms": "250"}) as security:
        add_user(security, "alice", "alice-secret", "SCRAM-SHA-256")
        errors = []
        for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
            with pytest.raises(SaslAuthenticationError) as refused:
                login(security, "SCRAM-SHA-256", user, password)
            errors.append(refused.value)
    assert [e.message for e in errors] == [errors[0].message] * 2
    assert [e.delay_ms for e in errors] == [250, 250]
    assert "alice" not in errors[0].message and "mallory" not in errors[1].message


def test_a_deleted_user_can_no_longer_log_in(tmp_path):
    from kafkasec import UserScramCredentialDeletion

    with open_security(tmp_path / "state.db") as security:
        add_user(security, "bob", "bob-secret", "SCRAM-SHA-512")
        security.alter_user_scram_credentials([UserScramCredentialDeletion("bob", "SCRAM-SHA-512")])
        with pytest.raises(SaslAuthenticationError):
            login(security, "SCRAM-SHA-512", "bob", "bob-secret")


def test_the_delay_defaults_to_kafkas_and_is_validated(tmp_path):
    with KafkaSecurity() as security:
        assert security.scram_server("SCRAM-SHA-256").failed_authentication_delay_ms == DEFAULT_FAILED_AUTHENTICATION_DELAY_MS == 100
    with pytest.raises(ValueError, match="connection.failed.authentication.delay.ms"):
        KafkaSecurity.from_config({"connection.failed.authentication.delay.ms": "-5"})
    with KafkaSecurity() as security, pytest.raises(ValueError, match="failed_authentication_delay_ms"):
        security.scram_server("SCRAM-SHA-256", failed_authentication_delay_ms=-1)


@pytest.mark.parametrize("mechanism", ["UNKNOWN", 0, "PLAIN", "SCRAM-SHA-1"])
def test_a_server_for_something_other_than_scram_256_or_512_is_misuse(mechanism):
    with KafkaSecurity() as security, pytest.raises(ValueError):
        security.scram_server(mechanism)


def test_a_new_server_per_login_starts_fresh(tmp_path):
    with open_security(tmp_path / "state.db") as security:
        first, second = security.scram_server("SCRAM-SHA-256"), security.scram_server("SCRAM-SHA-256")
    assert first is not second
    assert first.state is second.state is ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE
