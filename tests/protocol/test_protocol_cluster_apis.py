"""Metadata, DescribeCluster, FindCoordinator and DescribeGroups: Kafka's authorization rules, every
version, each response round-tripped through the wire."""

import uuid

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    ResourceType,
    operations_to_bitfield,
)
from kafkasec.acl import bitfield_to_operations
from kafkasec.errors import InvalidRequestError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.cluster_apis import AUTHORIZED_OPERATIONS_OMITTED, ClusterRequests
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.registry import error_response
from kafkasec.server import Catalogue, Node

from server_support import CATALOGUE

NODE = Node(7, "127.0.0.1", 19092)
ALICE = RequestContext.for_principal("User:alice", security_protocol="SASL_PLAINTEXT")
ADMIN = RequestContext.for_principal("User:admin", security_protocol="SASL_PLAINTEXT")
METADATA, FIND_COORDINATOR, DESCRIBE_GROUPS, LIST_GROUPS, DESCRIBE_CLUSTER = 3, 10, 15, 16, 60


def allow(principal, resource_type, name, operation, pattern_type="LITERAL"):
    return AclBinding(ResourcePattern(resource_type, name, pattern_type), AccessControlEntry(principal, "*", operation, "ALLOW"))


@pytest.fixture
def security():
    with KafkaSecurity(super_users="User:admin") as security:
        security.create_acls(
            [
                allow("User:alice", "TOPIC", "orders", "READ"),
                allow("User:alice", "TOPIC", "pay", "DESCRIBE", "PREFIXED"),
                allow("User:alice", "GROUP", "billing", "DESCRIBE"),
                allow("User:alice", "GROUP", "reports", "READ"),
                allow("User:alice", "GROUP", "nobody-here", "DESCRIBE"),
                allow("User:alice", "TRANSACTIONAL_ID", "tx-1", "WRITE"),
                allow("User:alice", "TOPIC", "ghost", "DESCRIBE"),
            ]
        )
        yield security


@pytest.fixture
def cluster():
    return ClusterRequests(CATALOGUE, NODE, "test-cluster")


def call(cluster, security, context, api_key, version, **fields):
    """Build the request at ``version``, handle it, and read the response back off the wire."""
    body = wire.build(wire.request_schema(api_key, version), **fields)
    response = cluster.handlers()[api_key](security, context, body, version)
    _, decoded = wire.decode_response(wire.encode_response(response, correlation_id=1), api_key, version)
    return decoded


def metadata_topics(version, names):
    if names is None:
        return None
    topic_type = wire.item_type(wire.request_schema(METADATA, version), "topics")
    return tuple(wire.build(topic_type, name=name) for name in names)


def by_name(response):
    return {topic.name: topic for topic in response.topics}


@pytest.mark.parametrize("version", range(1, 14))
def test_metadata_all_topics_leaves_out_what_the_caller_may_not_describe(cluster, security, version):
    response = call(cluster, security, ALICE, METADATA, version, topics=None)
    assert list(by_name(response)) == ["orders", "payments"]  # READ implies DESCRIBE; PREFIXED pay
    assert all(int(topic.error_code) == 0 for topic in response.topics)
    orders = by_name(response)["orders"]
    assert [int(p.partition_index) for p in orders.partitions] == [0, 1, 2]
    assert {int(p.leader_id) for p in orders.partitions} == {7}
    assert [(int(b.node_id), b.host, int(b.port)) for b in response.brokers] == [(7, "127.0.0.1", 19092)]
    assert int(response.controller_id) == 7
    if version >= 2:
        assert response.cluster_id == "test-cluster"
    if version >= 10:
        assert orders.topic_id == CATALOGUE.topics["orders"].topic_id != uuid.UUID(int=0)
    if version >= 13:
        assert int(response.error_code) == 0


def test_metadata_v0_empty_list_means_all_topics_and_v1_means_none(cluster, security):
    assert list(by_name(call(cluster, security, ALICE, METADATA, 0, topics=()))) == ["orders", "payments"]
    assert call(cluster, security, ALICE, METADATA, 1, topics=()).topics == ()


@pytest.mark.parametrize("version", [0, 4, 9, 12, 13])
def test_metadata_named_topics_refused_unknown_and_invalid(cluster, security, version):
    names = ["orders", "audit", "missing-but-denied", "ghost", "bad/name"]
    response = call(cluster, security, ALICE, METADATA, version, topics=metadata_topics(version, names))
    codes = {topic.name: int(topic.error_code) for topic in response.topics}
    # audit exists but may not be described: same answer as a topic that does not exist.
    assert codes == {"orders": 0, "audit": 29, "missing-but-denied": 29, "ghost": 3, "bad/name": 29}
    admin = call(cluster, security, ADMIN, METADATA, version, topics=metadata_topics(version, ["bad/name", "ghost"]))
    assert {topic.name: int(topic.error_code) for topic in admin.topics} == {"bad/name": 17, "ghost": 3}


def test_metadata_never_creates_topics_even_when_asked(cluster, security):
    topics = metadata_topics(13, ["ghost"])
    response = call(cluster, security, ADMIN, METADATA, 13, topics=topics, allow_auto_topic_creation=True)
    assert int(response.topics[0].error_code) == 3 and "ghost" not in CATALOGUE.topics


@pytest.mark.parametrize("version", range(8, 14))
def test_metadata_authorized_operations_only_when_asked(cluster, security, version):
    fields = {"include_topic_authorized_operations": True, "include_cluster_authorized_operations": True}
    response = call(cluster, security, ALICE, METADATA, version, topics=None, **fields)
    orders = by_name(response)["orders"]
    assert bitfield_to_operations(int(orders.topic_authorized_operations)) == {AclOperation.READ, AclOperation.DESCRIBE}
    assert int(orders.topic_authorized_operations) == operations_to_bitfield(
        security.authorized_operations(ALICE, ResourcePattern(ResourceType.TOPIC, "orders"))
    )
    if version <= 10:
        # Alice may not DESCRIBE the cluster: zero, not "omitted".
        assert int(response.cluster_authorized_operations) == 0
        admin = call(cluster, security, ADMIN, METADATA, version, topics=None, **fields)
        assert int(admin.cluster_authorized_operations) == operations_to_bitfield(
            security.authorized_operations(ADMIN, ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"))
        )
    plain = call(cluster, security, ALICE, METADATA, version, topics=None)
    assert int(by_name(plain)["orders"].topic_authorized_operations) == AUTHORIZED_OPERATIONS_OMITTED
    if version <= 10:
        assert int(plain.cluster_authorized_operations) == AUTHORIZED_OPERATIONS_OMITTED


def topics_by_id(version, *entries):
    """Request topics of Metadata ``version``: (name, topic id) pairs."""
    topic_type = wire.item_type(wire.request_schema(METADATA, version), "topics")
    return tuple(wire.build(topic_type, name=name, topic_id=topic_id) for name, topic_id in entries)


ZERO = uuid.UUID(int=0)
ORDERS_ID, AUDIT_ID = CATALOGUE.topics["orders"].topic_id, CATALOGUE.topics["audit"].topic_id


@pytest.mark.parametrize("version", [12, 13])
def test_metadata_by_topic_id_as_kafka_answers_it(cluster, security, version):
    stranger = uuid.uuid4()
    topics = topics_by_id(version, (None, ORDERS_ID), (None, stranger), (None, AUDIT_ID), ("payments", ZERO))
    response = call(cluster, security, ALICE, METADATA, version, topics=topics, include_topic_authorized_operations=True)
    answers = [(topic.name, topic.topic_id, int(topic.error_code)) for topic in response.topics]
    # Unknown ids first (UNKNOWN_TOPIC_ID), then what may be described, then the refused ids,
    # named by id only (an id is not secret); a name beside ids is not asked about.
    assert answers == [(None, stranger, 100), ("orders", ORDERS_ID, 0), (None, AUDIT_ID, 29)]
    orders = response.topics[1]
    assert len(orders.partitions) == CATALOGUE.topics["orders"].partitions
    assert bitfield_to_operations(int(orders.topic_authorized_operations)) == security.authorized_operations(
        ALICE, ResourcePattern(ResourceType.TOPIC, "orders")
    )
    admin = call(cluster, security, ADMIN, METADATA, version, topics=topics_by_id(version, (None, AUDIT_ID)))
    assert [(t.name, t.topic_id, int(t.error_code)) for t in admin.topics] == [("audit", AUDIT_ID, 0)]


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_below_v12_refuses_topic_ids_and_null_names(cluster, security, version):
    with pytest.raises(InvalidRequestError, match=f"Topic IDs are not supported in requests for version {version}"):
        cluster.handle_metadata(security, ALICE, wire.build(
            wire.request_schema(METADATA, version), topics=topics_by_id(version, ("orders", ORDERS_ID))), version)
    with pytest.raises(InvalidRequestError, match=f"Topic name can not be null for version {version}"):
        cluster.handle_metadata(security, ALICE, wire.build(
            wire.request_schema(METADATA, version), topics=topics_by_id(version, (None, ZERO))), version)


@pytest.mark.parametrize("version", [1, 9, 11, 12, 13])
def test_a_refused_metadata_request_carries_the_error_on_each_topic(version):
    """Kafka's MetadataRequest.getErrorResponse: below v13 there is no top-level error code, so
    the error must be on each topic asked about, or a client reads an empty success."""
    if version >= 12:
        topics = topics_by_id(version, ("orders", ZERO), (None, ORDERS_ID))
    else:
        topics = metadata_topics(version, ["orders", "audit"])
    body = wire.build(wire.request_schema(METADATA, version), topics=topics)
    response = error_response(METADATA, version, body, ApiError.of(KafkaErrorCode.INVALID_REQUEST))
    _, decoded = wire.decode_response(wire.encode_response(response, correlation_id=1), METADATA, version)
    assert {int(topic.error_code) for topic in decoded.topics} == {KafkaErrorCode.INVALID_REQUEST}
    assert [topic.name for topic in decoded.topics] == (["orders", ""] if version >= 12 else ["orders", "audit"])
    if version >= 12:
        assert [topic.topic_id or ZERO for topic in decoded.topics] == [ZERO, ORDERS_ID]  # kio reads zero as None
    if version >= 13:
        assert int(decoded.error_code) == KafkaErrorCode.INVALID_REQUEST
    assert all(topic.partitions == () for topic in decoded.topics)


def test_a_catalogue_gives_each_topic_its_own_id():
    with pytest.raises(ValueError, match="its own topic_id"):
        Catalogue.of(topics=[{"name": "a", "topic_id": str(ORDERS_ID)}, {"name": "b", "topic_id": str(ORDERS_ID)}])
    assert CATALOGUE.topics_by_id[ORDERS_ID].name == "orders"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_answers_anyone_with_operations_only_for_describers(cluster, security, version):
    response = call(cluster, security, ALICE, DESCRIBE_CLUSTER, version, include_cluster_authorized_operations=True)
    assert int(response.error_code) == 0 and int(response.controller_id) == 7
    assert int(response.cluster_authorized_operations) == 0
    [broker] = response.brokers
    assert (int(broker.broker_id), broker.host, int(broker.port)) == (7, "127.0.0.1", 19092)
    if version >= 2:
        assert broker.is_fenced is False
    admin = call(cluster, security, ADMIN, DESCRIBE_CLUSTER, version, include_cluster_authorized_operations=True)
    assert AclOperation.ALTER in bitfield_to_operations(int(admin.cluster_authorized_operations))
    plain = call(cluster, security, ADMIN, DESCRIBE_CLUSTER, version, include_cluster_authorized_operations=False)
    assert int(plain.cluster_authorized_operations) == AUTHORIZED_OPERATIONS_OMITTED


def test_describe_cluster_for_controllers_is_a_mismatched_endpoint(cluster, security):
    assert int(call(cluster, security, ALICE, DESCRIBE_CLUSTER, 1, endpoint_type=2).error_code) == 114
    assert int(call(cluster, security, ALICE, DESCRIBE_CLUSTER, 1, endpoint_type=9).error_code) == 115


@pytest.mark.parametrize("version", range(0, 4))
def test_find_coordinator_single_key(cluster, security, version):
    found = call(cluster, security, ALICE, FIND_COORDINATOR, version, key="billing")
    assert (int(found.error_code), int(found.node_id), found.host, int(found.port)) == (0, 7, "127.0.0.1", 19092)
    refused = call(cluster, security, ALICE, FIND_COORDINATOR, version, key="secret-group")
    assert (int(refused.error_code), int(refused.node_id), refused.host, int(refused.port)) == (30, -1, "", -1)
    if version >= 1:
        assert found.error_message == "NONE"
        transaction = call(cluster, security, ALICE, FIND_COORDINATOR, version, key="tx-1", key_type=1)
        assert int(transaction.error_code) == 0  # WRITE implies DESCRIBE
        assert int(call(cluster, security, ALICE, FIND_COORDINATOR, version, key="tx-2", key_type=1).error_code) == 53


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched_keys(cluster, security, version):
    response = call(cluster, security, ALICE, FIND_COORDINATOR, version, coordinator_keys=("billing", "other"))
    assert [(c.key, int(c.error_code), int(c.node_id)) for c in response.coordinators] == [("billing", 0, 7), ("other", 30, -1)]
    if version >= 6:
        share = call(cluster, security, ALICE, FIND_COORDINATOR, version, key_type=2, coordinator_keys=("billing",))
        assert int(share.coordinators[0].error_code) == 31  # CLUSTER_ACTION is for brokers


def test_find_coordinator_unknown_key_type_is_invalid(cluster, security):
    body = wire.build(wire.request_schema(FIND_COORDINATOR, 4), key_type=9, coordinator_keys=("x",))
    with pytest.raises(InvalidRequestError, match="Unknown coordinator type"):
        cluster.handle_find_coordinator(security, ALICE, body, 4)


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_groups(cluster, security, version):
    response = call(
        cluster, security, ALICE, DESCRIBE_GROUPS, version, groups=("secret", "billing", "reports", "nobody-here"),
        include_authorized_operations=True,
    )
    groups = [(g.group_id, int(g.error_code)) for g in response.groups]
    missing = 69 if version >= 6 else 0
    # Refused groups come first, then the coordinator's answers in request order.
    assert groups[0] == ("secret", 30)
    assert sorted(groups[1:]) == sorted([("billing", 0), ("reports", 0), ("nobody-here", missing)])
    found = {g.group_id: g for g in response.groups}
    billing = found["billing"]
    assert (billing.group_state, billing.protocol_type, billing.protocol_data) == ("Stable", "consumer", "range")
    assert [m.member_id for m in billing.members] == ["m-1"]
    assert found["nobody-here"].group_state == "Dead"
    if version >= 3:
        assert bitfield_to_operations(int(billing.authorized_operations)) == {AclOperation.DESCRIBE}
        assert bitfield_to_operations(int(found["reports"].authorized_operations)) == {AclOperation.READ, AclOperation.DESCRIBE}
        assert int(found["secret"].authorized_operations) == AUTHORIZED_OPERATIONS_OMITTED


def test_describe_groups_without_operations_leaves_them_omitted(cluster, security):
    response = call(cluster, security, ALICE, DESCRIBE_GROUPS, 5, groups=("billing",), include_authorized_operations=False)
    assert int(response.groups[0].authorized_operations) == AUTHORIZED_OPERATIONS_OMITTED


@pytest.mark.parametrize("version", range(0, 6))
def test_list_groups_shows_what_the_caller_may_describe(cluster, security, version):
    """Everything with DESCRIBE on the cluster; else each group the caller may DESCRIBE (READ
    implies it), and nothing refused."""
    listed = call(cluster, security, ALICE, LIST_GROUPS, version)
    assert int(listed.error_code) == 0 and sorted(g.group_id for g in listed.groups) == ["billing", "reports"]
    stranger = RequestContext.for_principal("User:bob", security_protocol="SASL_PLAINTEXT")
    assert call(cluster, security, stranger, LIST_GROUPS, version).groups == ()
    everything = call(cluster, security, ADMIN, LIST_GROUPS, version)
    assert sorted(g.group_id for g in everything.groups) == ["billing", "reports"]
    assert {g.protocol_type for g in everything.groups} == {"consumer"}
    if version >= 4:
        assert everything.groups[0].group_state == "Stable"
    if version >= 5:
        assert everything.groups[0].group_type == "Classic"


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"states_filter": ("stable",)}, ["billing", "reports"]),
        ({"states_filter": ("Empty", "Dead")}, []),
        ({"types_filter": ("classic",)}, ["billing", "reports"]),
        ({"types_filter": ("consumer",)}, []),
        ({"states_filter": (), "types_filter": ()}, ["billing", "reports"]),
    ],
)
def test_list_groups_filters_by_state_and_type(cluster, security, filters, expected):
    listed = call(cluster, security, ADMIN, LIST_GROUPS, 5, **filters)
    assert sorted(g.group_id for g in listed.groups) == expected


# ---------------------------------------------------------------------------------------------
# The rule as a property: for any ACLs, an all-topics Metadata answer is exactly the topics the
# authorizer lets the caller DESCRIBE, each with the authorizer's KIP-430 operations.

TOPIC_NAMES = ["orders", "payments", "audit"]
ACL = st.builds(
    lambda topic, operation, permission, host, pattern: AclBinding(
        ResourcePattern("TOPIC", topic if pattern == "LITERAL" else topic[:2], pattern),
        AccessControlEntry("User:alice", host, operation, permission),
    ),
    st.sampled_from(TOPIC_NAMES + ["*"]),
    st.sampled_from(["READ", "WRITE", "DESCRIBE", "ALTER", "DELETE", "ALL", "DESCRIBE_CONFIGS"]),
    st.sampled_from(["ALLOW", "DENY"]),
    st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]),
    st.sampled_from(["LITERAL", "PREFIXED"]),
).filter(lambda acl: not (acl.pattern.name == "*" and acl.pattern.pattern_type.name == "PREFIXED"))


@settings(max_examples=60, deadline=None)
@given(st.lists(ACL, max_size=8))
def test_metadata_matches_the_authorizer_for_any_acls(acls):
    with KafkaSecurity() as security:
        security.create_acls(acls)
        cluster = ClusterRequests(Catalogue.of(topics=[{"name": n} for n in TOPIC_NAMES]), NODE, "c")
        response = call(cluster, security, ALICE, METADATA, 12, topics=None, include_topic_authorized_operations=True)
        expected = {
            name: security.authorized_operations(ALICE, ResourcePattern(ResourceType.TOPIC, name))
            for name in TOPIC_NAMES
            if security.is_allowed(ALICE, "DESCRIBE", ResourcePattern(ResourceType.TOPIC, name))
        }
        assert {t.name: bitfield_to_operations(int(t.topic_authorized_operations)) for t in response.topics} == expected
