"""KIP-368 re-authentication: a login lasts connections.max.reauth.ms (or until its credential
expires); a client re-authenticates on the same connection, as the same principal with the
same mechanism, or its next request after the session's end closes the connection."""

import asyncio
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient  # noqa: E402

from kafkasec.errors import SaslAuthenticationError  # noqa: E402
from kafkasec.protocol import wire  # noqa: E402
from kafkasec.protocol.api_keys import ApiKey  # noqa: E402

from server_support import CATALOGUE, PASSWORDS, add_users, logged_in, open_security, run, serving  # noqa: E402

METADATA = wire.build(wire.request_schema(ApiKey.METADATA, 12), topics=None)


@pytest.fixture
def reauth_endpoint(tmp_path):
    with open_security(tmp_path / "state.db", **{"connections.max.reauth.ms": "1300"}) as security:
        add_users(security)
        with serving(security) as endpoint:
            yield endpoint


def test_the_login_says_how_long_it_lasts_and_a_request_after_that_closes_the_connection(reauth_endpoint):
    async def scenario():
        async with await logged_in(reauth_endpoint, "admin") as connection:
            assert connection.session_lifetime_ms == 1300
            assert len((await connection.request(METADATA)).topics) == len(CATALOGUE.topics)
            await asyncio.sleep(1.5)
            with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
                await connection.request(METADATA)

    run(scenario())


def test_re_authenticating_in_time_keeps_the_connection(reauth_endpoint):
    async def scenario():
        async with await logged_in(reauth_endpoint, "admin") as connection:
            for _ in range(3):
                await asyncio.sleep(1.05)  # Kafka re-authenticates a connection at most once a second
                await connection.login("SCRAM-SHA-256", "admin", PASSWORDS["admin"])
                assert connection.session_lifetime_ms == 1300
                assert len((await connection.request(METADATA)).topics) == len(CATALOGUE.topics)

    run(scenario())
    assert reauth_endpoint.reauthentications == 3


def test_a_second_re_authentication_within_a_second_is_an_illegal_sasl_state(reauth_endpoint):
    # KafkaChannel.maybeBeginServerReauthentication: within a second of the last
    # re-authentication, a SaslHandshake is an ordinary request, which KafkaApis refuses (34).
    async def scenario():
        async with await logged_in(reauth_endpoint, "admin") as connection:
            await connection.login("SCRAM-SHA-256", "admin", PASSWORDS["admin"])
            handshake = await connection.request(wire.build(wire.request_schema(ApiKey.SASL_HANDSHAKE, 1), mechanism="SCRAM-SHA-256"))
            assert int(handshake.error_code) == 34
            assert len((await connection.request(METADATA)).topics) == len(CATALOGUE.topics)
            await asyncio.sleep(1.05)
            await connection.login("SCRAM-SHA-256", "admin", PASSWORDS["admin"])
            assert len((await connection.request(METADATA)).topics) == len(CATALOGUE.topics)

    run(scenario())
    assert reauth_endpoint.reauthentications == 2


def test_a_re_authentication_may_change_neither_principal_nor_mechanism(reauth_endpoint):
    async def as_another_user():
        async with await logged_in(reauth_endpoint, "admin") as connection:
            with pytest.raises(SaslAuthenticationError, match="Cannot change principals during re-authentication from User:admin: User:alice"):
                await connection.login("SCRAM-SHA-256", "alice", PASSWORDS["alice"])

    async def with_another_mechanism():
        async with await logged_in(reauth_endpoint, "admin") as connection:
            with pytest.raises(Exception, match="SCRAM-SHA-512 refused; the server offers SCRAM-SHA-256"):
                await connection.login("SCRAM-SHA-512", "admin", PASSWORDS["admin"])

    run(as_another_user())
    run(with_another_mechanism())


def test_without_a_session_limit_a_second_handshake_is_an_illegal_sasl_state(endpoint):
    async def scenario():
        async with await logged_in(endpoint, "admin") as connection:
            assert connection.session_lifetime_ms == 0
            handshake = await connection.request(wire.build(wire.request_schema(ApiKey.SASL_HANDSHAKE, 1), mechanism="SCRAM-SHA-256"))
            assert int(handshake.error_code) == 34

    run(scenario())


@pytest.mark.slow
def test_librdkafka_re_authenticates_before_its_session_ends(tmp_path):
    with open_security(tmp_path / "state.db", **{"connections.max.reauth.ms": "2000"}) as security:
        add_users(security)
        with serving(security) as endpoint:
            admin = AdminClient({
                "bootstrap.servers": endpoint.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": PASSWORDS["admin"],
            })
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                assert sorted(admin.list_topics(timeout=10).topics) == sorted(CATALOGUE.topics)
                time.sleep(0.5)
            assert endpoint.reauthentications >= 1
