"""confluent-kafka (librdkafka) against the endpoint over 127.0.0.1: a Kafka client nobody here wrote."""

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import KafkaException, TopicCollection  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kafkasec import (
    RequestContext,  # noqa: E402
    ResourcePattern as Pattern,  # noqa: E402
)

from server_support import CATALOGUE, PASSWORDS, open_security, serving  # noqa: E402

TIMEOUT = 15


def admin_client(endpoint, user, password=None, mechanism="SCRAM-SHA-256", errors=None):
    config = {
        "bootstrap.servers": endpoint.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": PASSWORDS.get(user, "") if password is None else password,
    }
    if errors is not None:
        config["error_cb"] = errors.append
    return AdminClient(config)


def results(futures):
    return {key: future.result(timeout=TIMEOUT) for key, future in futures.items()}


def login_refused(endpoint, user, password, mechanism="SCRAM-SHA-256") -> str:
    """Try a login that must fail; librdkafka's authentication error text."""
    errors = []
    client = admin_client(endpoint, user, password, mechanism, errors)
    with pytest.raises(KafkaException):
        client.list_topics(timeout=2)
    client.poll(1)  # error callbacks are served by poll
    failures = [error for error in errors if error.code() == confluent_kafka.KafkaError._AUTHENTICATION]
    assert failures, [error.str() for error in errors]
    return failures[0].str()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login_and_a_wrong_password(endpoint, mechanism):
    topics = admin_client(endpoint, "admin", mechanism=mechanism).list_topics(timeout=TIMEOUT).topics
    assert sorted(topics) == sorted(CATALOGUE.topics)
    message = login_refused(endpoint, "alice", "not-the-password", mechanism)
    assert f"invalid credentials with SASL mechanism {mechanism}" in message


def test_alter_user_scram_credentials_then_login_then_delete(endpoint):
    admin = admin_client(endpoint, "admin")
    upsertion = UserScramCredentialUpsertion(
        "zed", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"zed-password"
    )
    assert results(admin.alter_user_scram_credentials([upsertion])) == {"zed": None}
    described = results(admin.describe_user_scram_credentials(["zed"]))["zed"]
    assert [(info.mechanism, info.iterations) for info in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    assert admin_client(endpoint, "zed", "zed-password", "SCRAM-SHA-512").list_topics(timeout=TIMEOUT).topics == {}
    deletion = UserScramCredentialDeletion("zed", ScramMechanism.SCRAM_SHA_512)
    assert results(admin.alter_user_scram_credentials([deletion])) == {"zed": None}
    login_refused(endpoint, "zed", "zed-password", "SCRAM-SHA-512")


def test_describe_all_users_sends_an_empty_list(endpoint):
    admin = admin_client(endpoint, "admin")  # held: a collected client cancels its futures
    described = admin.describe_user_scram_credentials().result(timeout=TIMEOUT)
    assert sorted(described) == sorted(PASSWORDS)


def test_a_non_super_user_may_not_alter_credentials(endpoint):
    upsertion = UserScramCredentialUpsertion("zed", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw")
    alice = admin_client(endpoint, "alice")
    future = alice.alter_user_scram_credentials([upsertion])["zed"]
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=TIMEOUT)
    assert refused.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"


def test_acls_create_describe_delete(endpoint, server_security):
    admin = admin_client(endpoint, "admin")
    bindings = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "bill", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    ]
    assert set(results(admin.create_acls(bindings)).values()) == {None}
    assert len(server_security.acls()) == 2  # the same state the authorizer decides with
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    assert sorted(map(str, admin.describe_acls(everything).result(timeout=TIMEOUT))) == sorted(map(str, bindings))
    groups = AclBindingFilter(ResourceType.GROUP, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    [deleted] = results(admin.delete_acls([groups])).values()
    assert [str(binding) for binding in deleted] == [str(bindings[1])]
    assert [str(binding) for binding in admin.describe_acls(everything).result(timeout=TIMEOUT)] == [str(bindings[0])]


def test_a_non_super_user_may_not_create_acls(endpoint):
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW)
    alice = admin_client(endpoint, "alice")
    future = alice.create_acls([binding])[binding]
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=TIMEOUT)
    assert refused.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"


def operation_names(operations):
    return sorted(operation.name for operation in operations or ())


def grant_alice(admin):
    bindings = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "billing", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    ]
    assert set(results(admin.create_acls(bindings)).values()) == {None}


def expected_operations(security, resource_type, name):
    context = RequestContext.for_principal("User:alice", security_protocol="SASL_PLAINTEXT")
    return sorted(operation.name for operation in security.authorized_operations(context, Pattern(resource_type, name)))


def test_authorized_operations_for_a_non_super_user_match_the_authorizer(endpoint, server_security):
    grant_alice(admin_client(endpoint, "admin"))
    alice = admin_client(endpoint, "alice")
    topics = results(alice.describe_topics(TopicCollection(["orders", "payments"]), include_authorized_operations=True))
    for name, description in topics.items():
        assert operation_names(description.authorized_operations) == expected_operations(server_security, "TOPIC", name)
    assert operation_names(topics["orders"].authorized_operations) == ["DESCRIBE", "WRITE"]
    assert len(topics["orders"].partitions) == 3
    with pytest.raises(KafkaException) as refused:
        alice.describe_topics(TopicCollection(["audit"]))["audit"].result(timeout=TIMEOUT)
    assert refused.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"

    cluster = alice.describe_cluster(include_authorized_operations=True).result(timeout=TIMEOUT)
    assert operation_names(cluster.authorized_operations) == expected_operations(server_security, "CLUSTER", "kafka-cluster") == ["DESCRIBE"]
    assert cluster.controller.id == 1 and cluster.controller.port == endpoint.port
    assert [node.id for node in cluster.nodes] == [1]

    groups = results(alice.describe_consumer_groups(["billing"], include_authorized_operations=True))
    billing = groups["billing"]
    assert operation_names(billing.authorized_operations) == expected_operations(server_security, "GROUP", "billing") == ["DESCRIBE", "READ"]
    assert [member.member_id for member in billing.members] == ["m-1"]
    with pytest.raises(KafkaException) as refused:
        alice.describe_consumer_groups(["reports"])["reports"].result(timeout=TIMEOUT)
    assert refused.value.args[0].name() == "GROUP_AUTHORIZATION_FAILED"


def test_a_restart_in_between_loses_nothing(server_state):
    with open_security(server_state) as security, serving(security) as endpoint:
        admin = admin_client(endpoint, "admin")
        grant_alice(admin)
        upsertion = UserScramCredentialUpsertion("yan", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"yan-pw")
        assert results(admin.alter_user_scram_credentials([upsertion])) == {"yan": None}
    with open_security(server_state) as security, serving(security) as endpoint:
        assert admin_client(endpoint, "yan", "yan-pw").list_topics(timeout=TIMEOUT).topics == {}
        alice = admin_client(endpoint, "alice")
        assert sorted(alice.list_topics(timeout=TIMEOUT).topics) == ["orders", "payments"]
        cluster = alice.describe_cluster(include_authorized_operations=True).result(timeout=TIMEOUT)
        assert operation_names(cluster.authorized_operations) == ["DESCRIBE"]



def test_a_user_name_with_comma_and_equals_logs_in(endpoint):
    # librdkafka escapes ',' and '=' in the SCRAM user name (as =2C and =3D); kafka-python does not.
    admin = admin_client(endpoint, "admin")
    name = "ops=team,eu"
    upsertion = UserScramCredentialUpsertion(name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw")
    assert results(admin.alter_user_scram_credentials([upsertion])) == {name: None}
    assert admin_client(endpoint, name, "pw").list_topics(timeout=TIMEOUT).topics == {}
