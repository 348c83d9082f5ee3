"""The client side of SASL logins: each mechanism's messages and Kafka's unsecured OAUTHBEARER token."""

import pytest

from kafkasec.client.login import ClientLogin, oauthbearer_initial_response, unsecured_login_token
from kafkasec.errors import SaslAuthenticationError
from kafkasec.sasl.oauthbearer import UnsecuredJwtValidator, jwt_part


def claims_of(token: str) -> dict:
    return jwt_part(token.split(".")[1])


def test_unsecured_token_as_kafkas_login_callback_handler_makes_it():
    token = unsecured_login_token(
        {"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": ",read,write",
         "unsecuredLoginNumberClaim_tier": "3", "unsecuredLoginLifetimeSeconds": "60"},
        now=1_700_000_000.0,
    )
    header, _, signature = token.split(".")
    assert jwt_part(header) == {"alg": "none"} and signature == ""
    assert claims_of(token) == {"sub": "alice", "scope": ["read", "write"], "tier": 3,
                                "iat": 1_700_000_000.0, "exp": 1_700_000_060.0}


def test_kafkasecs_own_validator_accepts_the_unsecured_token():
    validated = UnsecuredJwtValidator().validate(unsecured_login_token({"unsecuredLoginStringClaim_sub": "alice"}))
    assert validated.principal_name == "alice"


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs unsecuredLoginStringClaim_sub"),
        ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_n": "x"}, "must be a number"),
        ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "soon"}, "whole number of seconds"),
        ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginOther": "x"}, "unknown unsecured login option"),
    ],
)
def test_bad_unsecured_options(options, message):
    with pytest.raises(ValueError, match=message):
        unsecured_login_token(options)


def test_each_mechanisms_conversation():
    plain = ClientLogin("PLAIN", "alice", "pw").conversation()
    assert next(plain) == b"\0alice\0pw"
    with pytest.raises(StopIteration):
        plain.send(b"")
    scram = ClientLogin("SCRAM-SHA-256", "alice", "pw").conversation()
    assert next(scram).startswith(b"n,,n=alice,r=")


def test_a_refused_oauthbearer_token_is_acknowledged_then_reported():
    conversation = ClientLogin("OAUTHBEARER", secret="token").conversation()
    assert next(conversation) == oauthbearer_initial_response("token")
    assert conversation.send(b'{"status":"invalid_token"}') == b"\x01"
    with pytest.raises(SaslAuthenticationError, match="invalid_token"):
        conversation.send(b"")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("GSSAPI", "a", "b"), "kafkasec clients log in with"),
        (("PLAIN", "", "b"), "needs a username and a password"),
        (("SCRAM-SHA-512", "a", None), "needs a username and a password"),
        (("OAUTHBEARER",), "needs a token"),
    ],
)
def test_bad_logins(arguments, message):
    with pytest.raises(ValueError, match=message):
        ClientLogin(*arguments)
