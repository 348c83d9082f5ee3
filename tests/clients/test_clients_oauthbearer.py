"""SASL/OAUTHBEARER logins from confluent-kafka (librdkafka) over 127.0.0.1: a JWT from a local
identity provider checked against its JWKS (KIP-768), refused when expired, for another audience,
or signed by a stranger; and librdkafka's own unsecured JWT against the unsecured validator."""

import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from kafkasec import AclBinding  # noqa: E402
from kafkasec.client.login import unsecured_jwt as unsecured_token  # noqa: E402

from identity_provider import AUDIENCE, ISSUER, IdentityProvider  # noqa: E402
from server_support import open_security, serving  # noqa: E402

ORDERS_FOR_ALICE = AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")


@pytest.fixture(scope="module")
def provider():
    provider = IdentityProvider()
    with provider.serving() as url:
        provider.url = url
        yield provider


@pytest.fixture
def jwt_endpoint(tmp_path, provider):
    config = {
        "sasl.enabled.mechanisms": "OAUTHBEARER,SCRAM-SHA-256",
        "sasl.oauthbearer.jwks.endpoint.url": provider.url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": ISSUER,
    }
    with open_security(tmp_path / "state.db", **config) as security:
        security.create_acls([ORDERS_FOR_ALICE])
        with serving(security) as endpoint:
            yield endpoint


def oauth_admin(endpoint, make_token, errors=None):
    def oauth_cb(_config):
        token = make_token()
        return token, time.time() + 300

    config = {
        "bootstrap.servers": endpoint.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": oauth_cb,
    }
    if errors is not None:
        config["error_cb"] = errors.append
    client = AdminClient(config)
    client.poll(0.5)  # librdkafka asks oauth_cb for its token from poll
    return client


def test_a_jwt_from_the_identity_provider_logs_in_as_its_subject(jwt_endpoint, provider):
    alice = oauth_admin(jwt_endpoint, lambda: provider.token("alice"))
    assert sorted(alice.list_topics(timeout=10).topics) == ["orders"]
    bob = oauth_admin(jwt_endpoint, lambda: provider.token("bob"))
    assert dict(bob.list_topics(timeout=10).topics) == {}


@pytest.mark.parametrize("why", ["expired", "another audience", "a stranger's signature", "alg none"])
def test_a_wrong_jwt_is_refused_with_the_rfc_7628_error(jwt_endpoint, provider, why):
    stranger = IdentityProvider()
    make = {
        "expired": lambda: provider.token("alice", lifetime_s=-120),
        "another audience": lambda: provider.token("alice", audience="someone-else"),
        "a stranger's signature": lambda: stranger.token("alice"),
        "alg none": lambda: unsecured_token(
            {"sub": "alice", "aud": AUDIENCE, "iss": ISSUER, "exp": int(time.time()) + 300}, {"alg": "none", "kid": "rsa-1"}
        ),
    }[why]
    errors = []
    client = oauth_admin(jwt_endpoint, make, errors)
    with pytest.raises(KafkaException):
        client.list_topics(timeout=3)
    client.poll(1)
    failures = [error.str() for error in errors if error.code() == confluent_kafka.KafkaError._AUTHENTICATION]
    assert failures and '{"status":"invalid_token"}' in failures[0], [error.str() for error in errors]


def test_librdkafkas_unsecured_jwt_logs_in_against_the_unsecured_validator(tmp_path):
    config = {"sasl.enabled.mechanisms": "OAUTHBEARER"}
    with open_security(tmp_path / "state.db", **config) as security:
        security.create_acls([ORDERS_FOR_ALICE])
        with serving(security) as endpoint:
            client = AdminClient({
                "bootstrap.servers": endpoint.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=alice scope=kafka",
            })
            assert sorted(client.list_topics(timeout=10).topics) == ["orders"]


def test_kafka_python_logs_in_with_a_jwt_and_its_extensions(jwt_endpoint, provider):
    from kafka import KafkaAdminClient
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class IdentityProviderTokens(AbstractTokenProvider):
        def token(self):
            return provider.token("alice")

        def extensions(self):
            return {"traceId": "kafka-python"}

    client = KafkaAdminClient(
        bootstrap_servers=jwt_endpoint.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=IdentityProviderTokens(), request_timeout_ms=10_000,
    )
    try:
        assert client.list_topics() == ["orders"]
    finally:
        client.close()
