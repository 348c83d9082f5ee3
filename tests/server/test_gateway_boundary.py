"""The gateway is a boundary (issue 38): requests Kafka refuses before authorizing, or answers
otherwise than a gateway that reads them another way, sent over real sockets through the gateway
in front of Tansu. Each test is one finding; what it expects is what Kafka answers, with the
place in Kafka's source that says so.

Tansu is shared by the module, so every test creates topics of its own (as the super user).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import pytest

from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

from gateway_support import gateway_running
from record_batches import end_transaction_marker, record_batch
from request_rules_support import acl, make
from server_support import PASSWORDS, logged_in, run

ANSWER_TIMEOUT = 5
"""Seconds a request may wait for its answer: a gateway that neither answers nor closes fails here."""
ZERO_UUID = uuid.UUID(int=0)
INVALID_REQUEST = KafkaErrorCode.INVALID_REQUEST
INVALID_RECORD = KafkaErrorCode.INVALID_RECORD
TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
UNKNOWN_TOPIC_OR_PARTITION = KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def _exchange(endpoint, user: str, *bodies) -> list:
    """Log ``user`` in and send ``bodies`` one after the other on that one connection: their answers."""
    async with await logged_in(endpoint, user) as connection:
        return [await asyncio.wait_for(connection.request(body), ANSWER_TIMEOUT) for body in bodies]


def _request(api: ApiKey, version: int, values: dict):
    return make(wire.request_schema(api, version), values)


def _ask(endpoint, user: str, api: ApiKey, version: int, values: dict):
    """The answer to one request of ``api`` at ``version`` from ``user``."""
    [answer] = run(_exchange(endpoint, user, _request(api, version, values)))
    return answer


def _create_topics(gateway, *names: str) -> None:
    answer = _ask(gateway, "admin", ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1} for name in names]})
    assert {t.name: int(t.error_code) for t in answer.topics} == dict.fromkeys(names, 0)


def _existing(gateway, *names: str) -> dict:
    """Those of ``names`` that exist, as the super user sees them (Metadata v12): name -> topic."""
    answer = _ask(gateway, "admin", ApiKey.METADATA, 12, {"topics": [{"name": name} for name in names],
                                                          "allow_auto_topic_creation": False})
    return {t.name: t for t in answer.topics if t.error_code == 0}


def _grant(gateway, user: str, *rules: tuple[str, str, str]) -> None:
    """ALLOW ``user`` each (resource type, literal name, operation) of ``rules``."""
    results = gateway.security.create_acls([acl(kind, name, operation, f"User:{user}") for kind, name, operation in rules])
    assert [result.error for result in results] == [None] * len(rules)


# ------------------------------------------------------------------ 1. DeleteTopics v6 entries Kafka refuses


# ControllerApis.deleteTopics: each case's topics (by placeholder: "mine", "victim" and the
# victim's id), and the one entry Kafka answers for them: name, id, INVALID_REQUEST's message.
_INVALID_DELETIONS = {
    "name-and-id": ([("mine", "victim-id")], ("mine", "victim-id", "You may not specify both topic name and topic id.")),
    "neither": ([(None, None)], (None, None, "Neither topic name nor id were specified.")),
    "duplicate-names": ([("mine", None), ("mine", None)], ("mine", None, "Duplicate topic name.")),
    "duplicate-ids": ([(None, "victim-id"), (None, "victim-id")], (None, "victim-id", "Duplicate topic id.")),
}


@pytest.mark.parametrize("case", _INVALID_DELETIONS)
def test_delete_topics_v6_entries_kafka_refuses_delete_nothing(gateway, case):
    """alice may DELETE (and DESCRIBE) her own topic only. Kafka answers an entry that names a
    topic and an id, neither, or what another entry names already INVALID_REQUEST before any
    authorization, and deletes nothing: the gateway must not authorize the name and let the
    broker act on the id."""
    mine, victim = f"{case}-mine-del", f"{case}-victim"
    _create_topics(gateway, mine, victim)
    victim_id = _existing(gateway, victim)[victim].topic_id
    _grant(gateway, "alice", ("TOPIC", mine, "DELETE"), ("TOPIC", mine, "DESCRIBE"))
    placeholders = {"mine": mine, "victim-id": victim_id, None: None}
    entries, (name, topic_id, message) = _INVALID_DELETIONS[case]
    topics = [{"name": placeholders[n], "topic_id": placeholders[i] or ZERO_UUID} for n, i in entries]

    answer = _ask(gateway, "alice", ApiKey.DELETE_TOPICS, 6, {"topics": topics, "timeout": 5000})

    # kio reads the zero id as None.
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in answer.responses] == [
        (placeholders[name], placeholders[topic_id], INVALID_REQUEST, message)]
    assert set(_existing(gateway, mine, victim)) == {mine, victim}


# ------------------------------------------------------------------ 2. Produce records Kafka refuses


def _latest_offset(gateway, topic: str) -> int:
    """The offset the next record of partition 0 gets (ListOffsets LATEST, as the super user)."""
    answer = _ask(gateway, "admin", ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    [partition] = answer.topics[0].partitions
    assert partition.error_code == 0
    return partition.offset


# The records of one partition. Kafka's answer carries no message for any of them: validateRecords'
# refusal becomes PartitionResponse(error), and the append's InvalidRecordException is not one of
# the exceptions whose message ReplicaManager passes on (hasCustomErrorMessage).
_INVALID_RECORDS = {
    # ProduceRequest.validateRecords: v3+ carries exactly one batch per partition. Only the first
    # batch is looked at for transactions (RequestUtils.hasTransactionalRecords), so without this
    # check the second rides past the TRANSACTIONAL_ID authorization.
    "plain-then-transactional": record_batch([(b"k", b"plain")]) + record_batch(
        [(b"k", b"in a transaction")], producer_id=4242, producer_epoch=0, base_sequence=0, transactional=True),
    # LogValidator.validateBatch: "Clients are not allowed to write control records".
    "control": record_batch([end_transaction_marker(committed=True)], control=True),
    # ProduceRequest.validateRecords: v3+ carries magic 2 batches only.
    "magic-1": record_batch([(b"k", b"legacy")], magic=1),
}


@pytest.mark.parametrize("case", _INVALID_RECORDS)
def test_produce_v11_records_kafka_refuses_are_not_appended(gateway, case):
    """alice may WRITE the topic and has no TRANSACTIONAL_ID ACL; a Produce v11 (acks=1, no
    transactional id) whose partition carries records Kafka refuses: that partition answered
    INVALID_RECORD, and nothing appended."""
    topic = f"produce-{case}"
    _create_topics(gateway, topic)
    _grant(gateway, "alice", ("TOPIC", topic, "WRITE"))
    before = _latest_offset(gateway, topic)

    answer = _ask(gateway, "alice", ApiKey.PRODUCE, 11, {
        "transactional_id": None, "acks": 1, "timeout": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": _INVALID_RECORDS[case]}]}]})

    [[partition]] = [t.partition_responses for t in answer.responses]
    assert (partition.index, partition.error_code) == (0, INVALID_RECORD)
    assert _latest_offset(gateway, topic) == before


# ------------------------------------------------------------------ 3. A transactional producer still works

TRANSACTION_TIMEOUT = 15
"""Seconds a librdkafka call or poll loop may take."""


def _librdkafka(gateway, user: str, **config) -> dict:
    """librdkafka's configuration logging ``user`` in to the gateway with SCRAM-SHA-256."""
    return {"bootstrap.servers": gateway.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": PASSWORDS[user], **config}


def _read_committed(gateway, topic: str, count: int) -> list[bytes]:
    """The values of the first ``count`` committed records of partition 0, read as the super user
    from an assigned partition (no group to join: Tansu holds a JoinGroup for seconds)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(_librdkafka(gateway, "admin", **{
        "group.id": f"{topic}-reader", "isolation.level": "read_committed", "enable.auto.commit": False}))
    messages: list = []
    deadline = time.monotonic() + TRANSACTION_TIMEOUT
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while len(messages) < count and time.monotonic() < deadline:
            messages += consumer.consume(count - len(messages), 0.5)
    finally:
        consumer.close()
    assert [m.error() for m in messages if m.error() is not None] == []
    return [m.value() for m in messages]


@pytest.mark.parametrize("write_on_id", [True, False], ids=["write-on-id", "describe-only"])
def test_a_transactional_producer_commits_through_the_gateway(gateway, write_on_id):
    """What the checks on record batches must leave alone: librdkafka's transactional producer
    (InitProducerId, AddPartitionsToTxn, transactional batches, EndTxn). Without WRITE on its
    transactional id, InitProducerId refuses it (KafkaApis.handleInitProducerIdRequest)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic, transactional_id = f"txn-{write_on_id}", f"txn-{write_on_id}-id"
    _create_topics(gateway, topic)
    _grant(gateway, "alice", ("TOPIC", topic, "WRITE"), ("TRANSACTIONAL_ID", transactional_id, "DESCRIBE"))
    if write_on_id:
        _grant(gateway, "alice", ("TRANSACTIONAL_ID", transactional_id, "WRITE"))
    producer = confluent_kafka.Producer(_librdkafka(gateway, "alice", **{"transactional.id": transactional_id}))
    if not write_on_id:
        with pytest.raises(confluent_kafka.KafkaException) as refused:
            producer.init_transactions(TRANSACTION_TIMEOUT)
        assert refused.value.args[0].code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return
    values = [f"committed-{n}".encode() for n in range(3)]
    producer.init_transactions(TRANSACTION_TIMEOUT)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value, partition=0)
    producer.commit_transaction(TRANSACTION_TIMEOUT)

    assert _read_committed(gateway, topic, len(values)) == values


# ------------------------------------------------------------------ 4. Metadata auto-creation without CREATE


@pytest.mark.parametrize("version", [4, 9])
def test_metadata_auto_creation_without_create_is_refused_and_the_connection_stays(gateway, version):
    """alice may DESCRIBE a topic that does not exist, and not CREATE it; a Metadata asking to
    create it is answered TOPIC_AUTHORIZATION_FAILED for it (KafkaApis.handleTopicMetadataRequest:
    unauthorizedForCreateTopics), and the connection answers the next request: the topic was not
    created, so it is unknown."""
    topic = f"auto-create-v{version}"
    _grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))
    creating, looking = (_request(ApiKey.METADATA, version, {"topics": [{"name": topic}], "allow_auto_topic_creation": allow})
                         for allow in (True, False))

    answers = run(_exchange(gateway, "alice", creating, looking))

    assert [[(t.name, t.error_code, t.partitions) for t in answer.topics] for answer in answers] == [
        [(topic, TOPIC_AUTHORIZATION_FAILED, ())], [(topic, UNKNOWN_TOPIC_OR_PARTITION, ())]]


# ------------------------------------------------------------------ 5. Metadata v12 by topic id


@pytest.mark.parametrize("user", ["admin", "alice", "bob"])
def test_metadata_v12_by_topic_id(gateway, user):
    """A topic named by its id only: who may DESCRIBE it gets it, name and partitions; anyone else
    TOPIC_AUTHORIZATION_FAILED with the id and no name (ids are not secret, names are:
    KafkaApis.handleTopicMetadataRequest, unauthorizedForDescribeTopicMetadata with useTopicId)."""
    topic = f"by-id-{user}"
    _create_topics(gateway, topic)
    topic_id = _existing(gateway, topic)[topic].topic_id
    _grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))

    answer = _ask(gateway, user, ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": topic_id}],
                                                       "allow_auto_topic_creation": False})

    [found] = answer.topics
    described = (topic, 0, 1) if user != "bob" else (None, TOPIC_AUTHORIZATION_FAILED, 0)
    assert (found.topic_id, found.name, found.error_code, len(found.partitions)) == (topic_id, *described)


# ------------------------------------------------------------------ 6. DeleteTopics through a gateway that never saw the topic


@pytest.mark.parametrize("version", [4, 6])
def test_delete_topics_through_a_fresh_gateway_tells_refused_from_missing(gateway, version):
    """A gateway whose picture of the topics is older than the topic (another gateway created
    it). alice may DESCRIBE an existing topic and a missing one, DELETE neither: Kafka answers
    the existing one TOPIC_AUTHORIZATION_FAILED and the missing one UNKNOWN_TOPIC_OR_PARTITION
    (ControllerApis.deleteTopics: describable, then unknown, then not deletable)."""
    existing, missing = f"fresh-v{version}-existing", f"fresh-v{version}-missing"
    _grant(gateway, "alice", ("TOPIC", existing, "DESCRIBE"), ("TOPIC", missing, "DESCRIBE"))
    names = [existing, missing]
    values = {"topic_names": names} if version < 6 else {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in names]}
    with gateway_running(gateway.security) as fresh:  # it learns the topics as it starts: before this one
        _create_topics(gateway, existing)
        answer = _ask(fresh, "alice", ApiKey.DELETE_TOPICS, version, {**values, "timeout": 5000})

    assert {r.name: r.error_code for r in answer.responses} == {
        existing: TOPIC_AUTHORIZATION_FAILED, missing: UNKNOWN_TOPIC_OR_PARTITION}
    assert set(_existing(gateway, existing)) == {existing}


# ------------------------------------------------------------------ 7. FindCoordinator v1-v3 refused


@pytest.mark.parametrize("version", [1, 2, 3])
def test_find_coordinator_refused_carries_the_default_message(gateway, version):
    """Refused before v4, Kafka's answer is FindCoordinatorRequest.getErrorResponse: the error,
    its default message (Errors.message()) and no node."""
    answer = _ask(gateway, "alice", ApiKey.FIND_COORDINATOR, version, {"key": "not-alices-group", "key_type": 0})

    refused = KafkaErrorCode.GROUP_AUTHORIZATION_FAILED
    assert (answer.error_code, answer.error_message, answer.node_id, answer.host, answer.port) == (
        refused, refused.message, -1, "", -1)


# ------------------------------------------------------------------ 8. An answer its version cannot carry


def test_an_answer_too_long_for_its_version_fails_only_its_connection(gateway, caplog):
    """A 40,000-character resource name in an ACL (CreateAcls v3 is flexible, its strings have
    no limit) and a DescribeAcls v1 listing it: v1 is not flexible, its strings hold at most
    32,767 bytes. Kafka fails that response only (a well-formed error, or the connection
    closed); the gateway logs the API and version at ERROR, lets nothing escape its connection
    handler, and goes on serving."""
    caplog.set_level(logging.ERROR)
    long_name = "n" * 40_000
    created = _ask(gateway, "admin", ApiKey.CREATE_ACLS, 3, {"creations": [{
        "resource_type": 2, "resource_name": long_name, "resource_pattern_type": 3, "principal": "User:alice",
        "host": "*", "operation": 3, "permission_type": 3}]})
    assert [r.error_code for r in created.results] == [0]
    every_acl = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                 "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}

    try:
        answer = _ask(gateway, "admin", ApiKey.DESCRIBE_ACLS, 1, every_acl)
    except ConnectionError:
        answer = None  # closed: as good an answer as an error
    if answer is not None:
        assert (answer.error_code, answer.resources) == (KafkaErrorCode.UNKNOWN_SERVER_ERROR, ())

    listed = _ask(gateway, "admin", ApiKey.DESCRIBE_ACLS, 2, every_acl)
    assert [r.resource_name for r in listed.resources] == [long_name]
    logged = [record.getMessage() for record in caplog.records]
    assert any("DescribeAcls v1" in line for line in logged), logged
    assert not any("Unhandled exception" in line or "never retrieved" in line for line in logged), logged
