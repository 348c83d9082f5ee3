"""Kafka's request validation: what Kafka refuses as malformed, refused here the same way.

A gateway has two parsers, its own and the broker's. Whatever the broker behind would act on
but kafkasec did not judge (a topic id beside the name that was authorized, a second record
batch after the one whose header was read) is a way around the ACLs. So the rules refuse what
Kafka refuses (its request classes, KafkaApis, ControllerApis and LogValidator), with Kafka's
error code and message, and such items never reach the broker. Each check here is a pure
function of the request; the rules call them where Kafka makes them:

- before any ACL is asked (DeleteTopics' names and ids, duplicate topics in CreateTopics and
  CreatePartitions, Metadata's names and ids per version): what ControllerApis and
  KafkaApis check first;
- after a topic is authorized (a Produce's records): ``ProduceRequest.validateRecords``, called
  from KafkaApis.handleProduceRequest for the authorized partitions, and the checks
  LogValidator makes of a client's batch before it is appended.

docs/request-authorization.md lists every field of every forwarded API and why it is safe.
"""

from __future__ import annotations

import collections
import struct
import uuid
from typing import Iterable, Sequence

from attrs import frozen

from kafkasec.errors import KafkaErrorCode

ZERO_UUID = uuid.UUID(int=0)

# ---------------------------------------------------------------------- record batches

# A record batch (magic 2), as Kafka's DefaultRecordBatch lays it out: baseOffset int64,
# batchLength int32 (the bytes after it), partitionLeaderEpoch int32, magic int8, crc uint32,
# attributes int16 (compression in bits 0-2, bit 4 transactional, bit 5 control) ... 61 bytes
# of header in all. Magic sits at offset 16 in every message format, v0 and v1 included.
LOG_OVERHEAD = 12
MAGIC_AT = 16
ATTRIBUTES_AT = 21
V2_HEADER_BYTES = 61
COMPRESSION_BITS = 0x07
ZSTD = 4
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20


@frozen
class Invalid:
    """Why Kafka refuses an item: its error code and the message Kafka writes."""

    error: KafkaErrorCode
    message: str


_BATCH_LENGTH = struct.Struct(">i")
_PRODUCER = struct.Struct(">qh")
PRODUCER_AT = 43
"""The producer id (int64) and epoch (int16) of a v2 batch header."""


def invalid_produce_partitions(version: int, topic: str, partitions: Sequence) -> list[tuple[object, Invalid]]:
    """The partitions of an authorized topic of a Produce of ``version`` (3 and later) whose
    records Kafka refuses, each with why (:func:`produce_records_problem`)."""
    malformed = []
    batch_length = _BATCH_LENGTH.unpack_from
    for partition in partitions:
        records = partition.records
        # One well-formed batch, told in a few byte reads without a call: this runs for every
        # partition of every Produce, and all but an attacker's pass here.
        size = len(records) if records else 0
        if size >= V2_HEADER_BYTES and records[MAGIC_AT] == 2 and batch_length(records, 8)[0] == size - LOG_OVERHEAD:
            attributes = records[ATTRIBUTES_AT + 1]
            if not attributes & CONTROL_BIT and (version >= 7 or attributes & COMPRESSION_BITS != ZSTD):
                continue
        problem = produce_records_problem(version, records, topic, partition.index)
        if problem is not None:
            malformed.append((partition, problem))
    return malformed


def produce_records_problem(version: int, records: bytes | None, topic: str, partition: int) -> Invalid | None:
    """What Kafka says of one partition's records in a Produce of ``version`` (3 and later),
    or None when they are one well-formed batch a client may write.

    ``ProduceRequest.validateRecords``: at least one batch, of magic 2, not zstd before v7,
    and exactly one. Then LogValidator's refusal of a client's control batch. Stricter than
    Kafka in one respect: bytes after the batch that do not make a whole batch, which Kafka's
    reader ignores and its log trims, are refused as a second batch, so that no broker
    behind can read them as one.
    """
    size = len(records) if records else 0
    first = LOG_OVERHEAD + _BATCH_LENGTH.unpack_from(records, 8)[0] if records and size >= LOG_OVERHEAD else 0
    if not records or first <= MAGIC_AT or first > size:
        return Invalid(KafkaErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} must have at least one record batch per partition")
    if records[MAGIC_AT] != 2:
        return Invalid(KafkaErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} are only allowed to contain record batches with magic version 2")
    if first < V2_HEADER_BYTES:
        return Invalid(KafkaErrorCode.CORRUPT_MESSAGE,
                       f"Record batch is corrupt (the size {first} is smaller than the minimum allowed overhead {V2_HEADER_BYTES})")
    attributes = records[ATTRIBUTES_AT + 1]  # the low byte holds every bit checked here
    if version < 7 and attributes & COMPRESSION_BITS == ZSTD:
        return Invalid(KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                       f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if first != size:
        return Invalid(KafkaErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} are only allowed to contain exactly one record batch per partition")
    if attributes & CONTROL_BIT:
        return Invalid(KafkaErrorCode.INVALID_RECORD, f"Clients are not allowed to write control records in topic partition {topic}-{partition}")
    return None


def transactional_producer(records: bytes | None) -> tuple[int, int] | None:
    """The (producer id, epoch) of a partition's batch when it is transactional, else None
    (Kafka's ``RequestUtils.hasTransactionalRecords`` reads the same bit of the first batch).
    Only the header is read: the records pass as bytes."""
    if records and len(records) >= V2_HEADER_BYTES and records[MAGIC_AT] == 2 and records[ATTRIBUTES_AT + 1] & TRANSACTIONAL_BIT:
        return _PRODUCER.unpack_from(records, PRODUCER_AT)
    return None


# ---------------------------------------------------------------------- topics by name and id

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's ``Topic.INTERNAL_TOPICS``: its coordinators' state, which clients may not write."""
ADMIN_CLIENT_ID = "__admin_client"
"""The client id Kafka lets write to internal topics (AdminUtils.ADMIN_CLIENT_ID)."""
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
def duplicates(values: Iterable) -> list:
    """The values given more than once, each once, in the order they first repeat."""
    seen: collections.Counter = collections.Counter()
    repeated = []
    for value in values:
        seen[value] += 1
        if seen[value] == 2:
            repeated.append(value)
    return repeated


DUPLICATE_NAME = "Duplicate topic name."
DUPLICATE_ID = "Duplicate topic id."
NEITHER_NAME_NOR_ID = "Neither topic name nor id were specified."
BOTH_NAME_AND_ID = "You may not specify both topic name and topic id."
NAME_OF_A_GIVEN_ID = "The provided topic name maps to an ID that was already supplied."


@frozen
class TopicStates:
    """DeleteTopics' topics sorted as ControllerApis.deleteTopics sorts them before any ACL is
    asked: the names and ids it goes on with, and the entries it refuses INVALID_REQUEST
    (``invalid``: (name, id, message), each answered with that name and id)."""

    names: tuple[str, ...]
    ids: tuple[uuid.UUID, ...]
    invalid: tuple[tuple[str | None, uuid.UUID, str], ...]


def delete_topic_states(names: Sequence[str], states: Sequence) -> TopicStates:
    """``names`` (v0-v5's ``topic_names``) and ``states`` (v6+'s ``topics``, each a name or an
    id): a name and an id together, neither, or either given twice is refused."""
    given_names = list(names)
    given_ids = []
    invalid: list[tuple[str | None, uuid.UUID, str]] = []
    for state in states:
        has_id = state.topic_id not in (None, ZERO_UUID)
        if state.name is None and not has_id:
            invalid.append((None, ZERO_UUID, NEITHER_NAME_NOR_ID))
        elif state.name is None:
            given_ids.append(state.topic_id)
        elif not has_id:
            given_names.append(state.name)
        else:
            invalid.append((state.name, state.topic_id, BOTH_NAME_AND_ID))
    repeated_names, repeated_ids = duplicates(given_names), duplicates(given_ids)
    invalid += [(name, ZERO_UUID, DUPLICATE_NAME) for name in repeated_names]
    invalid += [(None, topic_id, DUPLICATE_ID) for topic_id in repeated_ids]
    return TopicStates(
        tuple(name for name in dict.fromkeys(given_names) if name not in repeated_names),
        tuple(topic_id for topic_id in dict.fromkeys(given_ids) if topic_id not in repeated_ids),
        tuple(invalid),
    )


def metadata_topics_problem(version: int, topics: Sequence | None) -> str | None:
    """KafkaApis.handleTopicMetadataRequest: before v12 a named topic needs its name and may
    not carry an id. The whole request is refused INVALID_REQUEST with this message."""
    if topics is None or version >= 12:
        return None
    for topic in topics:
        if topic.name is None:
            return f"Topic name can not be null for version {version}"
        if getattr(topic, "topic_id", None) not in (None, ZERO_UUID):
            return f"Topic IDs are not supported in requests for version {version}"
    return None


# ---------------------------------------------------------------------- config resources


def alter_configs_problems(resources: Sequence, known_types: frozenset[int], *, deleting: bool) -> list[tuple[object, Invalid]]:
    """ConfigAdminManager.preprocess for AlterConfigs (``deleting`` False) and
    IncrementalAlterConfigs: each resource of an unknown type, given twice (every copy), with a
    config key twice, or with a null value where one is needed, refused INVALID_REQUEST."""
    invalid_request = KafkaErrorCode.INVALID_REQUEST
    repeated = set(duplicates((resource.resource_type, resource.resource_name) for resource in resources))
    problems = []
    for resource in resources:
        if (resource.resource_type, resource.resource_name) in repeated:
            problems.append((resource, Invalid(invalid_request, "Each resource must appear at most once.")))
        elif resource.resource_type not in known_types:
            problems.append((resource, Invalid(invalid_request, f"Unknown resource type {resource.resource_type}")))
        elif duplicates(config.name for config in resource.configs):
            problems.append((resource, Invalid(invalid_request, "Error due to duplicate config keys")))
        else:
            # IncrementalAlterConfigs' DELETE (1) needs no value; everything else does.
            missing = [config.name for config in resource.configs
                       if config.value is None and not (deleting and config.config_operation == 1)]
            if missing:
                problems.append((resource, Invalid(invalid_request, "Null value not supported for : " + ", ".join(missing))))
    return problems


def cursor_problem(topics: Sequence, cursor) -> str | None:
    """DescribeTopicPartitionsRequestHandler: a cursor must name one of the topics asked about
    (when some are) and a partition; else the whole request is refused INVALID_REQUEST."""
    if cursor is None:
        return None
    if topics and cursor.topic_name not in {topic.name for topic in topics}:
        return f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {cursor.topic_name}"
    if cursor.partition_index < 0:
        return f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor.topic_name}-{cursor.partition_index}"
    return None
