"""aiokafka against the endpoint over 127.0.0.1: SCRAM logins and topic listing.

aiokafka sends ApiVersions v0, Metadata v5 with allow_auto_topic_creation=true, and SaslHandshake
v1 with SaslAuthenticate; the endpoint never creates topics, whatever that flag says.
"""

import pytest

aiokafka = pytest.importorskip("aiokafka")

from aiokafka import AIOKafkaConsumer  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient  # noqa: E402
from aiokafka.errors import KafkaConnectionError  # noqa: E402

from kafkasec import AccessControlEntry, AclBinding, ResourcePattern  # noqa: E402

from server_support import CATALOGUE, PASSWORDS, run, serving  # noqa: E402


@pytest.fixture
def endpoint(server_security):
    server_security.create_acls(
        [AclBinding(ResourcePattern("TOPIC", "pay", "PREFIXED"), AccessControlEntry("User:bob", "*", "READ", "ALLOW"))]
    )
    with serving(server_security) as endpoint:
        yield endpoint


def sasl(user, mechanism, password=None):
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORDS[user] if password is None else password,
        "request_timeout_ms": 10_000,
    }


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_login_and_topic_listing(endpoint, mechanism):
    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=endpoint.bootstrap, **sasl("bob", mechanism))
        await consumer.start()
        try:
            bob_sees = await consumer.topics()
        finally:
            await consumer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=endpoint.bootstrap, **sasl("admin", mechanism))
        await admin.start()
        try:
            admin_sees = await admin.list_topics()
        finally:
            await admin.close()
        return bob_sees, admin_sees

    bob_sees, admin_sees = run(scenario())
    assert bob_sees == {"payments"}
    assert sorted(admin_sees) == sorted(CATALOGUE.topics)


def test_a_wrong_password_fails_the_bootstrap(endpoint):
    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=endpoint.bootstrap, **sasl("bob", "SCRAM-SHA-256", "wrong"))
        with pytest.raises(KafkaConnectionError):
            await consumer.start()
        await consumer.stop()

    run(scenario())
