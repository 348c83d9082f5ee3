"""kafka-python against the endpoint over 127.0.0.1, including a delegation-token login through its
SCRAM mechanism extended with Kafka's ``tokenauth`` extension."""

import contextlib
import datetime

import pytest

kafka = pytest.importorskip("kafka")

from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import (  # noqa: E402
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.errors import (  # noqa: E402
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationFailedError,
)

from kafkasec import (
    RequestContext,  # noqa: E402
    ResourcePattern as Pattern,  # noqa: E402
)
from kafkasec.protocol import wire  # noqa: E402

from server_support import CATALOGUE, PASSWORDS, logged_in, open_security, run, serving  # noqa: E402


@contextlib.contextmanager
def admin_client(endpoint, user, password=None, mechanism="SCRAM-SHA-256"):
    client = KafkaAdminClient(
        bootstrap_servers=endpoint.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=PASSWORDS.get(user, "") if password is None else password,
        request_timeout_ms=10_000,
        bootstrap_timeout_ms=3_000,
    )
    try:
        yield client
    finally:
        client.close()


def refused_login(endpoint, user, password, mechanism="SCRAM-SHA-256"):
    # kafka-python gives up bootstrapping with a timeout and logs the server's refusal.
    with pytest.raises((KafkaTimeoutError, SaslAuthenticationFailedError, KafkaConnectionError)):
        with admin_client(endpoint, user, password, mechanism):
            pass


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login_and_a_wrong_password(endpoint, mechanism):
    with admin_client(endpoint, "admin", mechanism=mechanism) as admin:
        assert sorted(admin.list_topics()) == sorted(CATALOGUE.topics)
    refused_login(endpoint, "alice", "wrong", mechanism)


def test_the_refusal_is_sasl_authentication_failed_with_the_servers_message(endpoint):
    from kafka.net.manager import KafkaConnectionManager
    from kafka.net.selector import NetworkSelector

    selector = NetworkSelector()
    manager = KafkaConnectionManager(
        selector, bootstrap_servers=endpoint.bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice", sasl_plain_password="wrong", request_timeout_ms=3000,
    )

    async def login():
        connection = manager.get_connection(manager.cluster.bootstrap_brokers()[0].node_id, timeout_ms=3000)
        await connection

    try:
        # kafka-python sometimes drops the answer that arrives with the close and reports the close.
        with pytest.raises((SaslAuthenticationFailedError, KafkaConnectionError)) as refused:
            selector.run(login)
    finally:
        manager.close()
        selector.close()
    if isinstance(refused.value, SaslAuthenticationFailedError):
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(refused.value)


@pytest.mark.slow
def test_alter_user_scram_credentials_then_login_then_delete(endpoint):
    with admin_client(endpoint, "admin") as admin:
        result = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("zed", "SCRAM-SHA-512", "zed-password", iterations=8192)]
        )
        assert result == {"zed": None}
        described = admin.describe_user_scram_credentials(["zed"])["zed"]
        assert described["error"] is None and [info["iterations"] for info in described["credential_infos"]] == [8192]
    with admin_client(endpoint, "zed", "zed-password", "SCRAM-SHA-512") as zed:
        assert zed.list_topics() == []
    with admin_client(endpoint, "admin") as admin:
        assert admin.alter_user_scram_credentials([UserScramCredentialDeletion("zed", ScramMechanism.SCRAM_SHA_512)]) == {"zed": None}
    refused_login(endpoint, "zed", "zed-password", "SCRAM-SHA-512")


def test_acls_create_describe_delete_and_refusals(endpoint):
    acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
              ResourcePattern(ResourceType.TOPIC, "orders", ACLResourcePatternType.LITERAL))
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    with admin_client(endpoint, "admin") as admin:
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        described, error = admin.describe_acls(everything)
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in described] == [
            ("User:alice", ACLOperation.READ, "orders")
        ]
    with admin_client(endpoint, "alice") as alice:
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_acls(everything)
        assert len(alice.create_acls([acl])["failed"]) == 1
    with admin_client(endpoint, "admin") as admin:
        [(_, deleted, error)] = admin.delete_acls([everything])
        assert len(deleted) == 1 and error is kafka.errors.NoError
        assert admin.describe_acls(everything)[0] == []


def operations(security, resource_type, name):
    context = RequestContext.for_principal("User:bob", security_protocol="SASL_PLAINTEXT")
    return sorted(op.name for op in security.authorized_operations(context, Pattern(resource_type, name)))


def test_authorized_operations_for_a_non_super_user_match_the_authorizer(endpoint, server_security):
    bindings = [
        ACL("User:bob", "*", ACLOperation.ALTER, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, "aud", ACLResourcePatternType.PREFIXED)),
        ACL("User:bob", "*", ACLOperation.DELETE, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.GROUP, "reports", ACLResourcePatternType.LITERAL)),
        ACL("User:bob", "*", ACLOperation.ALTER_CONFIGS, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL)),
        ACL("User:bob", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL)),
    ]
    with admin_client(endpoint, "admin") as admin:
        assert admin.create_acls(bindings)["failed"] == []
    with admin_client(endpoint, "bob") as bob:
        [audit] = bob.describe_topics(["audit"])
        assert audit["error_code"] == 0 and len(audit["partitions"]) == 2
        assert sorted(audit["authorized_operations"]) == operations(server_security, "TOPIC", "audit") == ["ALTER", "DESCRIBE"]
        [orders] = bob.describe_topics(["orders"])
        assert orders["error_code"] == 29  # TOPIC_AUTHORIZATION_FAILED
        cluster = bob.describe_cluster()
        assert sorted(cluster["authorized_operations"]) == operations(server_security, "CLUSTER", "kafka-cluster")
        assert sorted(cluster["authorized_operations"]) == ["ALTER_CONFIGS", "DESCRIBE", "DESCRIBE_CONFIGS"]
        assert cluster["controller_id"] == 1
        assert [(b["broker_id"], b["port"], b["is_fenced"]) for b in cluster["brokers"]] == [(1, endpoint.port, False)]
        groups = bob.describe_groups(["reports"])
        assert sorted(groups["reports"]["authorized_operations"]) == operations(server_security, "GROUP", "reports") == ["DELETE", "DESCRIBE"]
        # kafka-python looks the coordinator up first, and FindCoordinator refuses bob already.
        with pytest.raises(GroupAuthorizationFailedError):
            bob.describe_groups(["billing"])


def test_a_restart_in_between_loses_nothing(server_state):
    acl = ACL("User:bob", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
              ResourcePattern(ResourceType.TOPIC, "payments", ACLResourcePatternType.LITERAL))
    with open_security(server_state) as security, serving(security) as endpoint:
        with admin_client(endpoint, "admin") as admin:
            assert admin.create_acls([acl])["failed"] == []
            assert admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion("yan", "SCRAM-SHA-256", "yan-pw", iterations=4096)]
            ) == {"yan": None}
    with open_security(server_state) as security, serving(security) as endpoint:
        with admin_client(endpoint, "bob") as bob:
            assert bob.list_topics() == ["payments"]
        with admin_client(endpoint, "yan", "yan-pw") as yan:
            assert yan.list_topics() == []


# ---------------------------------------------------------------------------------------------
# Token login: kafka-python's SCRAM client with Kafka's tokenauth extension in the client-first
# message (signed as part of the AuthMessage, as Kafka's ScramSaslClient does).


@contextlib.contextmanager
def kafka_python_token_logins():
    from kafka.net import sasl as kafka_sasl
    from kafka.net.sasl.scram import SaslMechanismScram, ScramClient

    class TokenScramClient(ScramClient):
        def first_message(self):
            bare = b"n=" + self.user + b",r=" + self.nonce + b",tokenauth=true"
            self.auth_message += bare
            return b"n,," + bare

    class TokenScramMechanism(SaslMechanismScram):
        def __init__(self, **config):
            super().__init__(**config)
            self._scram_client = TokenScramClient(
                config["sasl_plain_username"], config["sasl_plain_password"], config["sasl_mechanism"]
            )

    mechanisms = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    saved = {mechanism: kafka_sasl.get_sasl_mechanism(mechanism) for mechanism in mechanisms}
    for mechanism in mechanisms:
        kafka_sasl.register_sasl_mechanism(mechanism, TokenScramMechanism, overwrite=True)
    try:
        yield
    finally:
        for mechanism, mechanism_class in saved.items():
            kafka_sasl.register_sasl_mechanism(mechanism, mechanism_class, overwrite=True)


def create_token(endpoint, user):
    """A token for ``user``, created over the wire with kafkasec's kio-based client."""

    async def scenario():
        async with await logged_in(endpoint, user) as connection:
            response = await connection.request(wire.build(wire.request_schema(38, 3), max_lifetime=datetime.timedelta(milliseconds=-1)))
            assert int(response.error_code) == 0
            return response.token_id, bytes(response.hmac)

    return run(scenario())


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_token_login_with_kafka_pythons_scram_mechanism(endpoint, mechanism):
    import base64

    with admin_client(endpoint, "admin") as admin:
        admin.create_acls([ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                               ResourcePattern(ResourceType.TOPIC, "orders", ACLResourcePatternType.LITERAL))])
    token_id, hmac = create_token(endpoint, "alice")
    with kafka_python_token_logins():
        with admin_client(endpoint, token_id, base64.b64encode(hmac).decode(), mechanism) as as_alice:
            assert as_alice.list_topics() == ["orders"]
        refused_login(endpoint, token_id, base64.b64encode(b"not-the-hmac").decode(), mechanism)
    # Without the extension the token id is just an unknown user name.
    refused_login(endpoint, token_id, base64.b64encode(hmac).decode(), mechanism)
