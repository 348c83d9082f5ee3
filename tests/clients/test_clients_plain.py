"""SASL/PLAIN logins from confluent-kafka (librdkafka) and kafka-python over 127.0.0.1: users
from the listener's JAAS options, ACLs answered for the principal the login proved."""

import contextlib

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402
from kafka.errors import KafkaConnectionError, KafkaTimeoutError, SaslAuthenticationFailedError  # noqa: E402

from kafkasec import AclBinding  # noqa: E402

from server_support import CATALOGUE, PASSWORDS, add_users, open_security, serving  # noqa: E402

PLAIN_USERS = {"carol": "carol-plain", "dave": "dave-plain"}
PLAIN_CONFIG = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in PLAIN_USERS.items())
        + ";"
    ),
}


@pytest.fixture
def plain_endpoint(tmp_path):
    with open_security(tmp_path / "state.db", **PLAIN_CONFIG) as security:
        # carol may describe "orders" only; dave has no ACL at all.
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:carol", "*", "DESCRIBE", "ALLOW")])
        add_users(security)  # SCRAM users (server_support.PASSWORDS), beside the PLAIN ones
        with serving(security) as endpoint:
            yield endpoint


def confluent_admin(endpoint, user, password, errors=None):
    config = {
        "bootstrap.servers": endpoint.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }
    if errors is not None:
        config["error_cb"] = errors.append
    return AdminClient(config)


def test_confluent_kafka_logs_in_with_plain_and_sees_what_its_acls_allow(plain_endpoint):
    carol = confluent_admin(plain_endpoint, "carol", PLAIN_USERS["carol"])
    assert sorted(carol.list_topics(timeout=10).topics) == ["orders"]
    dave = confluent_admin(plain_endpoint, "dave", PLAIN_USERS["dave"])
    assert dict(dave.list_topics(timeout=10).topics) == {}


def test_confluent_kafka_is_told_why_a_plain_login_is_refused(plain_endpoint):
    errors = []
    client = confluent_admin(plain_endpoint, "carol", "wrong", errors)
    with pytest.raises(KafkaException):
        client.list_topics(timeout=2)
    client.poll(1)
    failures = [error.str() for error in errors if error.code() == confluent_kafka.KafkaError._AUTHENTICATION]
    assert failures and "Authentication failed: Invalid username or password" in failures[0]


@contextlib.contextmanager
def kafka_python_admin(endpoint, user, password):
    client = KafkaAdminClient(
        bootstrap_servers=endpoint.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=password,
        request_timeout_ms=10_000,
        bootstrap_timeout_ms=3_000,
    )
    try:
        yield client
    finally:
        client.close()


def test_kafka_python_logs_in_with_plain(plain_endpoint):
    with kafka_python_admin(plain_endpoint, "carol", PLAIN_USERS["carol"]) as carol:
        assert carol.list_topics() == ["orders"]
    with pytest.raises((KafkaTimeoutError, SaslAuthenticationFailedError, KafkaConnectionError)):
        with kafka_python_admin(plain_endpoint, "dave", "wrong"):
            pass


def test_scram_logins_work_beside_plain_and_the_two_keep_their_own_users(plain_endpoint):
    admin = AdminClient({
        "bootstrap.servers": plain_endpoint.bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": PASSWORDS["admin"],
    })
    assert sorted(admin.list_topics(timeout=10).topics) == sorted(CATALOGUE.topics)  # a super user
    errors = []
    client = confluent_admin(plain_endpoint, "admin", PASSWORDS["admin"], errors)  # SCRAM's password over PLAIN
    with pytest.raises(KafkaException):
        client.list_topics(timeout=2)
