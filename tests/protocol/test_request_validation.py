"""Kafka's request validation (kafkasec.protocol.request_rules.validation) as the library applies
it: what Kafka refuses as malformed is answered with Kafka's error code and message, and never
forwarded. Each test names the place in Kafka's source whose behaviour it expects."""

from __future__ import annotations

import struct
import uuid

import crc32c
import pytest
from hypothesis import given, settings, strategies as st

from kafkasec import RequestContext
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules import authorize_request
from kafkasec.protocol.request_rules.validation import produce_records_problem

from record_batches import end_transaction_marker, record_batch
from request_rules_support import acl, make
from security_support import open_security

ALICE = RequestContext.for_principal("User:alice")
ZERO_UUID = uuid.UUID(int=0)
MINE_ID = uuid.UUID("6d696e65-0000-4000-8000-000000000001")
VICTIM_ID = uuid.UUID("76696374-0000-4000-8000-000000000002")
TOPIC_NAMES = {MINE_ID: "mine", VICTIM_ID: "victim"}

INVALID_REQUEST = KafkaErrorCode.INVALID_REQUEST
INVALID_RECORD = KafkaErrorCode.INVALID_RECORD
INVALID_TOPIC = KafkaErrorCode.INVALID_TOPIC_EXCEPTION
INVALID_PRODUCER_ID_MAPPING = KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING
TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED

PLAIN = record_batch([(b"k", b"v")], timestamp_ms=0)
CONTROL = record_batch([end_transaction_marker(committed=True)], producer_id=3, producer_epoch=0, transactional=True,
                       control=True, timestamp_ms=0)


def transactional(producer_id: int) -> bytes:
    return record_batch([(b"k", b"in a transaction")], producer_id=producer_id, producer_epoch=0, base_sequence=0,
                        transactional=True, timestamp_ms=0)


def zstd(batch: bytes) -> bytes:
    """``batch`` with its compression bits set to zstd (4) and its crc made again, as a producer
    sends a zstd batch: validateRecords refuses it by the attributes alone, before reading records."""
    attributes = struct.unpack_from(">h", batch, 21)[0] | 4
    after_crc = struct.pack(">h", attributes) + batch[23:]
    return batch[:17] + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


def request(api: ApiKey, version: int, values: dict):
    return make(wire.request_schema(api, version), values)


def answer(api: ApiKey, version: int, values: dict):
    return make(wire.response_schema(api, version), values)


def decide(grants, api: ApiKey, version: int, values: dict, context=ALICE, **known):
    """The authorization of ``values`` as a request of ``api`` at ``version`` from a caller with ``grants``."""
    with open_security(acls=grants) as security:
        return authorize_request(security, context, request(api, version, values), version, **known)


# ---------------------------------------------------------------------- 1. one partition's records

_AT_LEAST_ONE = "Produce requests with version 9 must have at least one record batch per partition"
_EXACTLY_ONE = "Produce requests with version 9 are only allowed to contain exactly one record batch per partition"


@pytest.mark.parametrize("version, records, expected", [
    # ProduceRequest.validateRecords: no batch at all, or one cut short (MemoryRecords reads no batch).
    (9, None, (INVALID_RECORD, _AT_LEAST_ONE)),
    (9, b"", (INVALID_RECORD, _AT_LEAST_ONE)),
    (9, PLAIN[:-1], (INVALID_RECORD, _AT_LEAST_ONE)),
    (9, record_batch([(b"k", b"legacy")], magic=1, timestamp_ms=0),
     (INVALID_RECORD, "Produce requests with version 9 are only allowed to contain record batches with magic version 2")),
    (9, PLAIN + PLAIN, (INVALID_RECORD, _EXACTLY_ONE)),
    # Stricter than Kafka (its reader ignores them): bytes after the batch are refused as a second one.
    (9, PLAIN + b"garbage", (INVALID_RECORD, _EXACTLY_ONE)),
    (6, zstd(PLAIN), (KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                      "Produce requests with version 6 are not allowed to use ZStandard compression")),
    (7, zstd(PLAIN), None),
    # LogValidator: a client may not write control batches.
    (9, CONTROL, (INVALID_RECORD, "Clients are not allowed to write control records in topic partition t-0")),
    (9, PLAIN, None),
    (9, transactional(7), None),
], ids=["none", "empty", "cut-short", "magic-1", "two-batches", "trailing-garbage", "zstd-v6", "zstd-v7", "control",
        "valid", "valid-transactional"])
def test_produce_records_problem(version, records, expected):
    problem = produce_records_problem(version, records, "t", 0)
    assert (None if problem is None else (problem.error, problem.message)) == expected


_BATCHES = st.sampled_from([PLAIN, CONTROL, transactional(7), record_batch([(None, b"x" * 300)] * 3, timestamp_ms=0)])


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(_BATCHES, min_size=1, max_size=3), trailing=st.binary(max_size=80), version=st.integers(3, 11))
def test_records_pass_exactly_when_they_are_one_batch_a_client_may_write(batches, trailing, version):
    records = b"".join(batches) + trailing
    one_client_batch = len(batches) == 1 and not trailing and batches[0] is not CONTROL
    assert (produce_records_problem(version, records, "t", 0) is None) == one_client_batch


# ---------------------------------------------------------------------- 2. Produce through the rules


def produce(partitions: dict[int, bytes], *, topic: str = "t", transactional_id: str | None = None):
    return {"transactional_id": transactional_id, "acks": -1, "timeout": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": index, "records": records} for index, records in partitions.items()]}]}


def partition_errors(response) -> dict[tuple[str, int], int]:
    return {(topic.name, p.index): int(p.error_code) for topic in response.responses for p in topic.partition_responses}


def test_a_partition_of_two_batches_is_refused_and_its_neighbour_goes_on_byte_for_byte():
    authorization = decide([acl("TOPIC", "t", "WRITE")], ApiKey.PRODUCE, 9, produce({0: PLAIN + PLAIN, 1: PLAIN}))

    [topic] = authorization.forward.topic_data
    assert [(p.index, p.records) for p in topic.partition_data] == [(1, PLAIN)]
    merged = authorization.response(answer(ApiKey.PRODUCE, 9, {"responses": [
        {"name": "t", "partition_responses": [{"index": 1, "base_offset": 5}]}]}))
    assert partition_errors(merged) == {("t", 0): INVALID_RECORD, ("t", 1): 0}
    assert [(r.item, r.error, r.message) for r in authorization.refusals] == [(("t", 0), INVALID_RECORD, _EXACTLY_ONE)]


def test_a_refused_topics_invalid_records_are_answered_topic_authorization_failed():
    """KafkaApis.handleProduceRequest authorizes each topic first; validateRecords runs on the authorized only."""
    authorization = decide([], ApiKey.PRODUCE, 9, produce({0: PLAIN + PLAIN}))

    assert authorization.forward is None
    assert partition_errors(authorization.response()) == {("t", 0): TOPIC_AUTHORIZATION_FAILED}


@pytest.mark.parametrize("client_id, refused", [("some-client", True), ("__admin_client", False)])
def test_an_internal_topic_takes_records_from_the_admin_client_id_only(client_id, refused):
    """ReplicaManager.appendToLocalLog: "Cannot append to internal topic", unless the client id is
    AdminUtils.ADMIN_CLIENT_ID; WRITE on every topic does not change that."""
    context = RequestContext.for_principal("User:alice", client_id=client_id)
    authorization = decide([acl("TOPIC", "*", "WRITE")], ApiKey.PRODUCE, 9, produce({0: PLAIN}, topic="__consumer_offsets"),
                           context=context)

    if refused:
        assert authorization.forward is None
        assert partition_errors(authorization.response()) == {("__consumer_offsets", 0): INVALID_TOPIC}
    else:
        assert authorization.unchanged


_MINE_WRITES = [acl("TOPIC", "t", "WRITE"), acl("TRANSACTIONAL_ID", "mine", "WRITE")]


@pytest.mark.parametrize("partitions, producer_ids", [
    # ReplicaManager: "Transactional records contained more than one producer ID".
    ({0: transactional(7), 1: transactional(8)}, {}),
    # The transaction coordinator: producer 7 was given to another transactional id.
    ({0: transactional(7), 1: transactional(7)}, {7: "other-txn"}),
], ids=["two-producers", "producer-of-another-transaction"])
def test_transactional_batches_of_a_producer_not_this_transactions_are_refused_on_every_partition(partitions, producer_ids):
    authorization = decide(_MINE_WRITES, ApiKey.PRODUCE, 9, produce(partitions, transactional_id="mine"),
                           producer_ids=producer_ids)

    assert authorization.forward is None
    assert partition_errors(authorization.response()) == {("t", index): INVALID_PRODUCER_ID_MAPPING for index in partitions}


def test_a_producer_id_of_this_transaction_goes_on_unchanged():
    authorization = decide(_MINE_WRITES, ApiKey.PRODUCE, 9, produce({0: transactional(7)}, transactional_id="mine"),
                           producer_ids={7: "mine"})

    assert authorization.unchanged


# ---------------------------------------------------------------------- 3. Fetch sessions

_FETCH_PARTITIONS = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]


def fetch(session_id: int, session_epoch: int, forgotten: list) -> dict:
    return {"max_wait": 0, "min_bytes": 0, "session_id": session_id, "session_epoch": session_epoch,
            "topics": [{"topic": "t", "partitions": _FETCH_PARTITIONS}], "forgotten_topics_data": forgotten}


def test_a_fetch_in_a_session_goes_on_sessionless_and_otherwise_equal():
    """A broker's fetch session would serve partitions earlier requests named: every Fetch goes on
    as a full one (session 0, epoch -1, nothing forgotten)."""
    values = fetch(5, 3, [{"topic": "t", "partitions": [1]}])
    authorization = decide([acl("TOPIC", "t", "READ")], ApiKey.FETCH, 12, values)

    assert authorization.refusals == ()
    assert authorization.forward == request(ApiKey.FETCH, 12, fetch(0, -1, []))


def test_a_sessionless_fetch_goes_on_unchanged():
    assert decide([acl("TOPIC", "t", "READ")], ApiKey.FETCH, 12, fetch(0, -1, [])).unchanged


# ---------------------------------------------------------------------- 4. DeleteTopics

# ControllerApis.deleteTopics, before any ACL: each case's entries (name, id) and the one entry
# Kafka answers, INVALID_REQUEST with its message. alice may DELETE "mine"; nothing is deleted.
_INVALID_DELETIONS = {
    "name-and-id": ([("mine", VICTIM_ID)], ("mine", VICTIM_ID, "You may not specify both topic name and topic id.")),
    "neither": ([(None, ZERO_UUID)], (None, ZERO_UUID, "Neither topic name nor id were specified.")),
    "duplicate-names": ([("mine", ZERO_UUID), ("mine", ZERO_UUID)], ("mine", ZERO_UUID, "Duplicate topic name.")),
    "duplicate-ids": ([(None, MINE_ID), (None, MINE_ID)], (None, MINE_ID, "Duplicate topic id.")),
    "name-of-a-given-id": ([("mine", ZERO_UUID), (None, MINE_ID)],
                           ("mine", MINE_ID, "The provided topic name maps to an ID that was already supplied.")),
}
_DELETE_MINE = [acl("TOPIC", "mine", "DELETE"), acl("TOPIC", "mine", "DESCRIBE")]


@pytest.mark.parametrize("case", _INVALID_DELETIONS)
def test_delete_topics_v6_entries_kafka_refuses(case):
    entries, expected = _INVALID_DELETIONS[case]
    values = {"topics": [{"name": name, "topic_id": topic_id} for name, topic_id in entries], "timeout": 1000}
    authorization = decide(_DELETE_MINE, ApiKey.DELETE_TOPICS, 6, values, topic_names=TOPIC_NAMES)

    assert authorization.forward is None
    responses = authorization.response().responses
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in responses] == [(*expected[:2], INVALID_REQUEST, expected[2])]


def test_delete_topics_v4_duplicate_names_are_refused_and_the_rest_goes_on():
    values = {"topic_names": ["mine", "victim", "mine"], "timeout": 1000}
    grants = [*_DELETE_MINE, acl("TOPIC", "victim", "DELETE")]
    authorization = decide(grants, ApiKey.DELETE_TOPICS, 4, values, topic_names=TOPIC_NAMES)

    assert authorization.forward.topic_names == ("victim",)
    merged = authorization.response(answer(ApiKey.DELETE_TOPICS, 4, {"responses": [{"name": "victim"}]}))
    assert [(r.name, r.error_code) for r in merged.responses] == [("victim", 0), ("mine", INVALID_REQUEST)]


def test_delete_topics_a_describable_name_the_caller_cannot_delete_and_nobody_knows_is_asked_about():
    """Kafka answers it UNKNOWN_TOPIC_OR_PARTITION if it is missing: whether it is, the gateway learns."""
    values = {"topics": [{"name": "elsewhere", "topic_id": ZERO_UUID}], "timeout": 1000}
    authorization = decide([acl("TOPIC", "elsewhere", "DESCRIBE")], ApiKey.DELETE_TOPICS, 6, values, topic_names=TOPIC_NAMES)

    assert authorization.unknown_topic_names == {"elsewhere"} and authorization.needs_topic_names
    assert [(r.name, r.error_code) for r in authorization.response().responses] == [
        ("elsewhere", KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


# ---------------------------------------------------------------------- 5. Metadata


def metadata_topics(response) -> list[tuple]:
    return [(t.name, getattr(t, "topic_id", None), int(t.error_code)) for t in response.topics]


@pytest.mark.parametrize("version, topic", [(11, {"name": "mine", "topic_id": MINE_ID}), (10, {"name": None})],
                         ids=["v11-topic-id", "v10-null-name"])
def test_metadata_before_v12_by_id_or_without_a_name_is_refused_whole(version, topic):
    """KafkaApis.handleTopicMetadataRequest throws InvalidRequestException; MetadataRequest.getErrorResponse
    answers every topic of the request with it (a null name as "")."""
    values = {"topics": [topic, {"name": "victim"}], "allow_auto_topic_creation": False}
    authorization = decide([acl("TOPIC", "*", "DESCRIBE")], ApiKey.METADATA, version, values)

    assert authorization.forward is None
    assert [(name, code) for name, _, code in metadata_topics(authorization.response())] == [
        (topic["name"] or "", INVALID_REQUEST), ("victim", INVALID_REQUEST)]


def test_metadata_v12_by_id_goes_on_by_name_and_the_answer_keeps_the_id():
    values = {"topics": [{"name": None, "topic_id": MINE_ID}], "allow_auto_topic_creation": False}
    authorization = decide([acl("TOPIC", "mine", "DESCRIBE")], ApiKey.METADATA, 12, values, topic_names=TOPIC_NAMES)

    assert [(t.name, t.topic_id) for t in authorization.forward.topics] == [("mine", ZERO_UUID)]
    broker = answer(ApiKey.METADATA, 12, {"topics": [{"name": "mine", "topic_id": MINE_ID}]})
    assert metadata_topics(authorization.response(broker)) == [("mine", MINE_ID, 0)]


def test_metadata_v12_by_id_without_describe_is_refused_without_the_name():
    values = {"topics": [{"name": None, "topic_id": MINE_ID}], "allow_auto_topic_creation": False}
    authorization = decide([], ApiKey.METADATA, 12, values, topic_names=TOPIC_NAMES)

    broker = answer(ApiKey.METADATA, 12, {"topics": []})
    assert metadata_topics(authorization.response(broker)) == [(None, MINE_ID, TOPIC_AUTHORIZATION_FAILED)]


@pytest.mark.parametrize("version, name, grants, expected", [
    (4, "missing", [acl("TOPIC", "missing", "DESCRIBE")], TOPIC_AUTHORIZATION_FAILED),
    (9, "missing", [acl("TOPIC", "missing", "DESCRIBE")], TOPIC_AUTHORIZATION_FAILED),
    # Topic.validate: a name Kafka cannot hold is never created, CREATE or not.
    (12, "bad/name", [acl("TOPIC", "bad/name", "DESCRIBE"), acl("CLUSTER", "kafka-cluster", "CREATE")], INVALID_TOPIC),
])
def test_metadata_auto_creation_kafka_would_not_make_goes_on_without_it(version, name, grants, expected):
    """KafkaApis.handleTopicMetadataRequest: a missing topic the caller may not create is answered
    TOPIC_AUTHORIZATION_FAILED (unauthorizedForCreateTopics), one whose name is invalid INVALID_TOPIC_EXCEPTION."""
    values = {"topics": [{"name": name}], "allow_auto_topic_creation": True}
    authorization = decide(grants, ApiKey.METADATA, version, values)

    assert authorization.forward.allow_auto_topic_creation is False
    broker = answer(ApiKey.METADATA, version, {"topics": [{"name": name, "error_code": 3}]})
    response = authorization.response(broker)
    assert [(t.name, int(t.error_code), t.partitions) for t in response.topics] == [(name, expected, ())]
    wire.encode(response)


# ---------------------------------------------------------------------- 6. CreateTopics, CreatePartitions


def create_topics(*names: str) -> dict:
    return {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1} for name in names], "timeout": 1000}


def created_entries(authorization) -> list[tuple]:
    return [(t.name, int(t.error_code), t.error_message) for t in authorization.response().topics]


_CREATE_ANY = [acl("CLUSTER", "kafka-cluster", "CREATE")]


@pytest.mark.parametrize("names, expected", [
    # ControllerApis.createTopics: one entry per name given twice, no copy created.
    (["a", "b", "a", "b", "a"], [("a", 42, "Duplicate topic name."), ("b", 42, "Duplicate topic name.")]),
    (["__cluster_metadata"], [("__cluster_metadata", 42, "Creation of internal topic __cluster_metadata is prohibited.")]),
    # ReplicationControlManager.validateNewTopicNames: Topic.validate's messages.
    ([".."], [("..", 17, 'Topic name cannot be "." or ".."')]),
    (["a" * 250], [("a" * 250, 17, "Topic name is illegal, it can't be longer than 249 characters, topic name: " + "a" * 250)]),
    (["bad/name"], [("bad/name", 17,
                     "Topic name \"bad/name\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'")]),
], ids=["duplicates", "cluster-metadata", "dot-dot", "too-long", "slash"])
def test_create_topics_kafka_refuses_are_answered_and_not_forwarded(names, expected):
    authorization = decide(_CREATE_ANY, ApiKey.CREATE_TOPICS, 7, create_topics(*names))

    assert authorization.forward is None
    assert created_entries(authorization) == expected


def test_create_topics_forwards_the_valid_beside_the_refused():
    authorization = decide(_CREATE_ANY, ApiKey.CREATE_TOPICS, 7, create_topics("ok", "bad/name", "ok-too"))

    assert [t.name for t in authorization.forward.topics] == ["ok", "ok-too"]


def test_create_topics_an_invalid_name_the_caller_may_not_create_is_refused_topic_authorization_failed():
    """ControllerApis.createTopics authorizes first and hands only the authorized topics to the
    controller, whose validateNewTopicNames then refuses invalid names: a caller without CREATE
    learns nothing of the name's validity."""
    authorization = decide([], ApiKey.CREATE_TOPICS, 7, create_topics("bad/name"))

    assert [(name, code) for name, code, _ in created_entries(authorization)] == [("bad/name", 29)]


def test_create_partitions_duplicates_are_refused_once_per_name():
    """ControllerApis.createPartitions: one "Duplicate topic name." entry per name given twice."""
    values = {"topics": [{"name": name, "count": 2, "assignments": None} for name in ("a", "b", "a")],
              "timeout": 1000, "validate_only": False}
    authorization = decide([acl("TOPIC", "*", "ALTER")], ApiKey.CREATE_PARTITIONS, 3, values)

    assert [t.name for t in authorization.forward.topics] == ["b"]
    merged = authorization.response(answer(ApiKey.CREATE_PARTITIONS, 3, {"results": [{"name": "b"}]}))
    assert [(r.name, int(r.error_code), r.error_message) for r in merged.results] == [
        ("b", 0, None), ("a", 42, "Duplicate topic name.")]


# ---------------------------------------------------------------------- 7. configs


def resource(resource_type: int, name: str, configs=()) -> dict:
    return {"resource_type": resource_type, "resource_name": name,
            "configs": [{"name": key, "config_operation": op, "value": value} for key, op, value in configs]}


def config_answers(authorization, api: ApiKey, version: int, broker_entries=()) -> list[tuple]:
    response = authorization.response(None if authorization.forward is None else answer(api, version, {
        "results" if api == ApiKey.DESCRIBE_CONFIGS else "responses": list(broker_entries)}))
    entries = response.results if api == ApiKey.DESCRIBE_CONFIGS else response.responses
    return [(e.resource_type, e.resource_name, int(e.error_code), e.error_message) for e in entries]


_CONFIG_GRANTS = [acl("TOPIC", "*", "DESCRIBE_CONFIGS"), acl("TOPIC", "*", "ALTER_CONFIGS"),
                  acl("CLUSTER", "kafka-cluster", "ALTER_CONFIGS")]


def test_describe_configs_of_an_unknown_resource_type_is_refused_whole():
    """KafkaApis.handleDescribeConfigsRequest throws for a type it does not know;
    DescribeConfigsRequest.getErrorResponse answers every resource with the error's default message."""
    values = {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None},
                            {"resource_type": 3, "resource_name": "x", "configuration_keys": None}]}
    authorization = decide(_CONFIG_GRANTS, ApiKey.DESCRIBE_CONFIGS, 4, values)

    assert authorization.forward is None
    assert config_answers(authorization, ApiKey.DESCRIBE_CONFIGS, 4) == [
        (2, "t", 42, INVALID_REQUEST.message), (3, "x", 42, INVALID_REQUEST.message)]


def test_alter_configs_of_a_broker_logger_is_refused_and_the_topic_goes_on():
    """AlterConfigs has no broker-logger resources (ConfigAdminManager.preprocess)."""
    values = {"resources": [resource(8, "1", [("kafka", 0, "DEBUG")]), resource(2, "t", [("retention.ms", 0, "1")])],
              "validate_only": True}
    authorization = decide(_CONFIG_GRANTS, ApiKey.ALTER_CONFIGS, 2, values)

    assert [r.resource_name for r in authorization.forward.resources] == ["t"]
    broker_entry = {"resource_type": 2, "resource_name": "t", "error_message": None}
    assert config_answers(authorization, ApiKey.ALTER_CONFIGS, 2, [broker_entry]) == [
        (2, "t", 0, None), (8, "1", 42, "Unknown resource type 8")]


@pytest.mark.parametrize("resources, expected", [
    ([resource(2, "t", [("a", 0, "1")]), resource(2, "t", [("b", 0, "2")])],
     [(2, "t", 42, "Each resource must appear at most once.")]),
    ([resource(2, "t", [("a", 0, "1"), ("a", 0, "2")])], [(2, "t", 42, "Error due to duplicate config keys")]),
    ([resource(2, "t", [("k", 0, None)])], [(2, "t", 42, "Null value not supported for : k")]),
], ids=["duplicate-resources", "duplicate-keys", "null-set"])
def test_incremental_alter_configs_kafka_refuses(resources, expected):
    """ConfigAdminManager.preprocess(IncrementalAlterConfigsRequestData)."""
    authorization = decide(_CONFIG_GRANTS, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": resources, "validate_only": True})

    assert authorization.forward is None
    assert config_answers(authorization, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1) == expected


def test_incremental_alter_configs_delete_needs_no_value():
    values = {"resources": [resource(2, "t", [("k", 1, None)])], "validate_only": True}
    assert decide(_CONFIG_GRANTS, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, values).unchanged


# ---------------------------------------------------------------------- 8. FindCoordinator


def test_find_coordinator_v3_of_an_unknown_key_type_is_refused_whole():
    """CoordinatorType.forId throws; FindCoordinatorRequest.getErrorResponse answers with no node
    (prepareOldResponse with Node.noNode(): id -1, host "", port -1) and the error's default message."""
    authorization = decide([acl("GROUP", "*", "DESCRIBE")], ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 7})

    assert authorization.forward is None
    response = authorization.response()
    assert (response.error_code, response.error_message, response.node_id, response.host, response.port) == (
        INVALID_REQUEST, KafkaErrorCode.INVALID_REQUEST.message, -1, "", -1)


def test_find_coordinator_v4_of_an_unknown_key_type_refuses_every_key():
    authorization = decide([acl("GROUP", "*", "DESCRIBE")], ApiKey.FIND_COORDINATOR, 4,
                           {"key_type": 7, "coordinator_keys": ["g", "h"]})

    assert authorization.forward is None
    assert [(c.key, int(c.error_code), c.node_id) for c in authorization.response().coordinators] == [
        ("g", 42, -1), ("h", 42, -1)]


# ---------------------------------------------------------------------- 9. heartbeats


def test_consumer_group_heartbeat_with_a_regex_is_refused_whole():
    """The broker behind would assign every topic its regex matches, those alice may not DESCRIBE too."""
    values = {"group_id": "g", "member_id": "m", "member_epoch": 0, "subscribed_topic_regex": "t.*"}
    authorization = decide([acl("GROUP", "g", "READ"), acl("TOPIC", "*", "DESCRIBE")], ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, values)

    assert authorization.forward is None
    assert authorization.response().error_code == TOPIC_AUTHORIZATION_FAILED


def streams_heartbeat(**subtopology) -> dict:
    sub = {"subtopology_id": "0", "source_topics": ["in"], "source_topic_regex": [], "repartition_sink_topics": ["app-rep"],
           "state_changelog_topics": [{"name": "app-changelog", "partitions": 1, "replication_factor": 1, "topic_configs": []}],
           "repartition_source_topics": [{"name": "app-rep", "partitions": 1, "replication_factor": 1, "topic_configs": []}],
           "copartition_groups": [], **subtopology}
    return {"group_id": "g", "member_id": "m", "member_epoch": 0, "endpoint_information_epoch": 0, "rebalance_timeout": 1000,
            "topology": {"epoch": 1, "subtopologies": [sub]}}


_STREAMS_DESCRIBE = [acl("GROUP", "g", "READ"), *(acl("TOPIC", name, "DESCRIBE") for name in ("in", "app-rep", "app-changelog"))]


@pytest.mark.parametrize("grants, allowed", [
    ([acl("GROUP", "g", "READ")], False),
    (_STREAMS_DESCRIBE, False),  # no CREATE on the topics the broker makes for the topology
    (_STREAMS_DESCRIBE[:-1] + [acl("TOPIC", "app-rep", "CREATE"), acl("TOPIC", "app-changelog", "CREATE")], False),
    ([*_STREAMS_DESCRIBE, acl("TOPIC", "app-rep", "CREATE"), acl("TOPIC", "app-changelog", "CREATE")], True),
    ([*_STREAMS_DESCRIBE, acl("CLUSTER", "kafka-cluster", "CREATE")], True),
], ids=["group-only", "describe-only", "changelog-not-described", "create-each", "create-on-cluster"])
def test_streams_group_heartbeat_needs_describe_on_its_topology_and_create_on_what_the_broker_makes(grants, allowed):
    authorization = decide(grants, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, streams_heartbeat())

    if allowed:
        assert authorization.unchanged
    else:
        assert authorization.forward is None
        assert authorization.response().error_code == TOPIC_AUTHORIZATION_FAILED


def test_streams_group_heartbeat_with_a_source_regex_is_refused():
    grants = [*_STREAMS_DESCRIBE, acl("CLUSTER", "kafka-cluster", "CREATE"), acl("TOPIC", "*", "DESCRIBE")]
    authorization = decide(grants, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, streams_heartbeat(source_topic_regex=["in.*"]))

    assert authorization.forward is None
    assert authorization.response().error_code == TOPIC_AUTHORIZATION_FAILED


# ---------------------------------------------------------------------- 10. InitProducerId


def init_producer(**values) -> dict:
    return {"transactional_id": "mine", "transaction_timeout": 60000, **values}


@pytest.mark.parametrize("version, values, producer_ids, expected", [
    # KIP-939: two-phase commit needs TWO_PHASE_COMMIT, which no ACL here grants.
    (6, {"enable2_pc": True}, {}, KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    (5, {}, {}, None),
    # The transaction coordinator: producer 9 belongs to another transactional id.
    (5, {"producer_id": 9, "producer_epoch": 0}, {9: "other"}, INVALID_PRODUCER_ID_MAPPING),
], ids=["two-phase-commit", "plain", "producer-of-another"])
def test_init_producer_id(version, values, producer_ids, expected):
    authorization = decide([acl("TRANSACTIONAL_ID", "mine", "WRITE")], ApiKey.INIT_PRODUCER_ID, version,
                           init_producer(**values), producer_ids=producer_ids)

    if expected is None:
        assert authorization.unchanged
    else:
        assert authorization.forward is None
        assert authorization.response().error_code == expected


# ---------------------------------------------------------------------- 11. DescribeTopicPartitions


@pytest.mark.parametrize("cursor_topic, kept", [("secret", False), ("mine", True)])
def test_describe_topic_partitions_cursor_naming_a_topic_not_described_is_dropped(cursor_topic, kept):
    listing = request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [], "response_partition_limit": 1})
    broker = answer(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
        "topics": [{"name": "mine", "topic_id": MINE_ID}, {"name": "secret", "topic_id": VICTIM_ID}],
        "next_cursor": {"topic_name": cursor_topic, "partition_index": 1}})
    with open_security(acls=[acl("TOPIC", "mine", "DESCRIBE")]) as security:
        # The answer is filtered by what the caller may describe, asked as it comes.
        response = authorize_request(security, ALICE, listing, 0).response(broker)

    assert [t.name for t in response.topics] == ["mine"]
    assert response.next_cursor == (broker.next_cursor if kept else None)


# ---------------------------------------------------------------------- 12. bytes after the body


@pytest.mark.parametrize("trailing", [b"", b"xyz"])
def test_decode_request_counts_the_bytes_after_the_body(trailing):
    frame = wire.encode_request(request(ApiKey.METADATA, 12, {"topics": None}), correlation_id=1, client_id="c")
    assert wire.decode_request(frame + trailing).trailing_bytes == len(trailing)
