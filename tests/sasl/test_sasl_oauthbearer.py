"""SASL/OAUTHBEARER against Kafka's OAuthBearerSaslServer and OAuthBearerClientInitialResponse:
the client message grammar, the unsecured validator (KIP-255) and JWTs checked against a JWKS
served by a local identity provider (KIP-768), every way a token can be wrong, and fuzzing."""

import time

import jwt
import pytest
from hypothesis import given, settings, strategies as st

from kafkasec import KafkaSecurity
from kafkasec.client.login import oauthbearer_initial_response as client_first, unsecured_jwt as unsecured_token
from kafkasec.errors import SaslAuthenticationError
from kafkasec.sasl.jwks import JwksValidator
from kafkasec.sasl.oauthbearer import (
    InvalidTokenError,
    OAuthBearerServer,
    OAuthBearerServerState,
    UnsecuredJwtValidator,
)

from identity_provider import AUDIENCE, ISSUER, IdentityProvider, eventually, hmac_signed_with_public_key

NOW = int(time.time())
LATER = NOW + 6 * 3600  # valid however long after collection a test runs
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"


def unsecured_server(**options):
    return OAuthBearerServer(UnsecuredJwtValidator(**options))


def refused_with_error_json(server, message, expected_json):
    """Kafka's flow for a bad token: the error JSON as a challenge, %x01, then the failure."""
    assert server.evaluate_response(message) == expected_json.encode()
    assert server.state is OAuthBearerServerState.RECEIVE_ERROR_ACKNOWLEDGEMENT
    with pytest.raises(SaslAuthenticationError) as refused:
        server.evaluate_response(b"\x01")
    assert refused.value.message == expected_json and server.state is OAuthBearerServerState.FAILED


def test_an_unsecured_token_logs_in_with_its_extensions():
    server = unsecured_server()
    token = unsecured_token({"sub": "alice", "exp": LATER, "iat": NOW, "scope": "read write"})
    assert server.evaluate_response(client_first(token, nineteen="42", traceId="abc")) == b""
    assert server.is_complete and server.authorization_id == "alice"
    assert server.extensions == {"nineteen": "42", "traceId": "abc"}
    assert server.token.scope == {"read", "write"} and server.credential_lifetime_ms == LATER * 1000
    assert server.authentication_context("10.0.0.1").mechanism == "OAUTHBEARER"


def test_the_authorization_id_must_be_the_tokens_principal():
    token = unsecured_token({"sub": "alice", "exp": LATER})
    unsecured_server().evaluate_response(client_first(token, "alice"))
    with pytest.raises(SaslAuthenticationError) as refused:
        unsecured_server().evaluate_response(client_first(token, "bob"))
    assert refused.value.message == (
        "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"
    )


@pytest.mark.parametrize(
    "message, reason",
    [
        (b"n,,\x01auth=Bearer a.b.c\x01", "Invalid OAUTHBEARER client first message"),  # one ^A short
        (b"n,,\x01nineteen=42\x01\x01", "'auth' not specified"),
        (b"n,,\x01auth=Bearer\x01\x01", "invalid 'auth' format"),
        (b"n,,\x01auth=Basic abc\x01\x01", "Invalid scheme in OAUTHBEARER client first message: Basic"),
        (b"y,,\x01auth=Bearer a.b.c\x01\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,,\x01auth=Bearer a.b.c\x01bad key=1\x01\x01", "Invalid OAUTHBEARER client first message"),
    ],
)
def test_malformed_client_messages_get_the_generic_answer(message, reason):
    server = unsecured_server()
    with pytest.raises(SaslAuthenticationError) as refused:
        server.evaluate_response(message)
    assert refused.value.message == GENERIC and reason in refused.value.reason
    assert server.state is OAuthBearerServerState.FAILED


@pytest.mark.parametrize(
    "claims, header, options, answer",
    [
        ({"sub": "alice", "exp": NOW - 10}, None, {}, '{"status":"invalid_token"}'),  # expired
        ({"exp": LATER}, None, {}, '{"status":"invalid_token"}'),  # no principal
        ({"sub": "alice"}, None, {}, '{"status":"invalid_token"}'),  # no exp
        ({"sub": "alice", "exp": LATER}, {"alg": "HS256"}, {}, '{"status":"invalid_token"}'),
        ({"sub": "alice", "exp": LATER, "scope": "read"}, None, {"required_scope": ["write"]},
         '{"status":"insufficient_scope", "scope":"write"}'),
    ],
)
def test_an_unsecured_token_that_does_not_validate_gets_the_rfc_7628_error(claims, header, options, answer):
    refused_with_error_json(unsecured_server(**options), client_first(unsecured_token(claims, header)), answer)


def test_the_error_must_be_acknowledged_with_a_lone_control_a():
    server = unsecured_server()
    server.evaluate_response(client_first(unsecured_token({"sub": "a", "exp": NOW - 1})))
    with pytest.raises(SaslAuthenticationError) as refused:
        server.evaluate_response(b"something else")
    assert refused.value.message == GENERIC


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=120).map(lambda text: client_first(text)))
def test_any_bytes_are_refused_cleanly(data):
    server = unsecured_server()
    try:
        answer = server.evaluate_response(data)
    except SaslAuthenticationError:
        assert server.state is OAuthBearerServerState.FAILED
    else:
        assert server.is_complete or answer.startswith(b'{"status":')


# ----------------------------------------------------------------------------- JWKS (KIP-768)


@pytest.fixture(scope="module")
def provider():
    return IdentityProvider()


@pytest.fixture(scope="module")
def jwks_url(provider):
    with provider.serving() as url:
        yield url


@pytest.fixture
def validator(jwks_url):
    # The keys are fetched in the background: the tests start once they are there.
    with JwksValidator(jwks_url, expected_audience=[AUDIENCE], expected_issuer=ISSUER) as validator:
        assert validator.keys.wait_until_known(5)
        yield validator


def test_a_signed_token_validates_against_the_jwks(provider, validator):
    token = validator.validate(provider.token("alice", scope=["read", "write"]))
    assert token.principal_name == "alice" and token.scope == {"read", "write"}
    server = OAuthBearerServer(validator)
    server.evaluate_response(client_first(provider.token("bob")))
    assert server.authorization_id == "bob"


def forged_tokens(provider):
    """Every wrong token an attacker or a misconfigured client sends, by why it is wrong."""
    other = IdentityProvider()
    private, _ = provider.keys["rsa-1"]
    claims = {"sub": "alice", "aud": AUDIENCE, "iss": ISSUER, "exp": LATER}
    return {
        "expired": provider.token(lifetime_s=-120),
        "wrong audience": provider.token(audience="another-service"),
        "wrong issuer": provider.token(issuer="https://evil.example.test"),
        "signed by another key under our kid": other.token(kid="rsa-1"),
        "alg none": unsecured_token(claims, {"alg": "none", "kid": "rsa-1"}),
        "HS256 with the public key as secret": hmac_signed_with_public_key(provider, claims),
        "not a JWT": "abc.def.ghi",
        "no sub": jwt.encode({k: v for k, v in claims.items() if k != "sub"}, private, algorithm="RS256", headers={"kid": "rsa-1"}),
        "issued in the future": provider.token(nbf=LATER),
        "unknown key id": jwt.encode(claims, other.keys["rsa-1"][0], algorithm="RS256", headers={"kid": "nobody-has-this"}),
    }


@pytest.mark.parametrize("case", ["expired", "wrong audience", "wrong issuer", "signed by another key under our kid",
                                  "alg none", "HS256 with the public key as secret", "not a JWT", "no sub",
                                  "issued in the future", "unknown key id"])
def test_every_wrong_token_is_refused(provider, validator, case):
    token = forged_tokens(provider)[case]
    with pytest.raises(InvalidTokenError):
        validator.validate(token)
    refused_with_error_json(OAuthBearerServer(validator), client_first(token), '{"status":"invalid_token"}')


def test_a_rotated_key_is_fetched_when_a_token_names_it(provider, jwks_url):
    # As Kafka's RefreshingHttpsJwksVerificationKeyResolver: the login naming the new key is
    # refused and asks for the JWKS; the client's retry, after the fetch, passes.
    with JwksValidator(jwks_url, expected_audience=[AUDIENCE], expected_issuer=ISSUER, unknown_key_cooldown_ms=0) as validator:
        assert validator.keys.wait_until_known(5)
        validator.validate(provider.token())
        fetched = provider.requests
        validator.validate(provider.token())
        assert provider.requests == fetched  # cached
        provider.add_key("ec-2", "ES256")
        with pytest.raises(InvalidTokenError, match="no key of the JWKS has the token's key id 'ec-2'"):
            validator.validate(provider.token("carol", kid="ec-2"))
        assert eventually(lambda: "ec-2" in validator.keys.current.keys)
        assert validator.validate(provider.token("carol", kid="ec-2")).principal_name == "carol"
        assert provider.requests > fetched


def test_the_listener_takes_the_jwks_validator_from_kafkas_settings(provider, jwks_url):
    config = {
        "sasl.oauthbearer.jwks.endpoint.url": jwks_url,
        "sasl.oauthbearer.expected.audience": f"{AUDIENCE},other",
        "sasl.oauthbearer.expected.issuer": ISSUER,
    }
    with KafkaSecurity(config=config) as security:
        server = security.sasl_server("OAUTHBEARER")
        server.evaluate_response(client_first(provider.token("dave")))
        assert str(security.build_principal(server.authentication_context("10.0.0.1"))) == "User:dave"
    with pytest.raises(ValueError, match="unknown setting sasl.oauthbearer.expected.audiense"):
        KafkaSecurity(config={**config, "sasl.oauthbearer.expected.audiense": AUDIENCE})
    with pytest.raises(ValueError, match="must be an https://, http:// or file: URL"):
        JwksValidator("ftp://idp/jwks")


def test_without_a_jwks_the_listener_takes_the_unsecured_validator_with_its_jaas_options():
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredValidatorPrincipalClaimName="user" unsecuredValidatorRequiredScope="kafka";')
    with KafkaSecurity(config={"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas}) as security:
        server = security.sasl_server("OAUTHBEARER")
        server.evaluate_response(client_first(unsecured_token({"user": "erin", "exp": LATER, "scope": "kafka"})))
        assert server.authorization_id == "erin"
        refused_with_error_json(
            security.sasl_server("OAUTHBEARER"),
            client_first(unsecured_token({"user": "erin", "exp": LATER})),
            '{"status":"insufficient_scope", "scope":"kafka"}',
        )


def test_the_jwks_is_fetched_again_once_refresh_ms_is_over(provider, jwks_url):
    with JwksValidator(jwks_url, refresh_ms=1000, expected_audience=[AUDIENCE], expected_issuer=ISSUER) as validator:
        assert validator.keys.wait_until_known(5)
        fetched = provider.requests
        validator.validate(provider.token())
        validator.validate(provider.token())
        time.sleep(0.5)
        assert provider.requests == fetched  # validating fetches nothing, nor does a refresh come early
        assert eventually(lambda: provider.requests == fetched + 1, timeout_s=3)
        validator.validate(provider.token())
