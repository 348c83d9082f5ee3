"""The gateway's authorization invariant, by fuzzing: whatever reaches the broker was authorized.

A recording tap (upstream_tap.py) sits between the gateway and Tansu and decodes every request
the broker receives. Hypothesis gives alice random ACLs over a small universe of names (topics
t0..t3 that exist, t4 that does not, groups g0 g1, transactional ids x0 x1, the cluster) and
sends random requests of every API the gateway forwards, at every version it forwards, built
from kio's schemas field by field with names and ids drawn from the same universe, and with
the shapes that get around a gateway: a name beside a topic id, duplicate topics and
partitions, Produce records that are two batches, transactional, control or not magic 2, a
header of the other version, a body of another version than its header says.

Then every request the tap saw is judged by an oracle written from Kafka's source, not from
kafkasec.protocol.request_rules: for each API, what Kafka requires before it acts on each
resource (KafkaApis.scala, ControllerApis.scala, AuthorizerIntegrationTest.scala,
docs/request-authorization.md), asked of ``security.authorize`` for alice. The gateway's own
requests (its Metadata refreshes as ``kafkasec-gateway``, each link's ApiVersions) are the only
ones that may come from anyone else.

``KAFKASEC_FUZZ_EXAMPLES`` sets the examples per API (tests/README.md: the long run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import os
import struct
import typing
import uuid

import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings, strategies as st

from kafkasec import AclBinding, AclBindingFilter, RequestContext
from kafkasec.acl import ResourcePattern
from kafkasec.context import Action, AuthorizationResult
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import kio_versions
from kafkasec.protocol.request_rules import RULES
from kafkasec.server import KafkaConnection
from kafkasec.testing import free_port

from gateway_support import gateway_running, gateway_security
from record_batches import CONTROL, TRANSACTIONAL, end_transaction_marker, record_batch
from server_support import add_users, logged_in, open_security, run
from tansu_support import TansuBroker
from upstream_tap import UpstreamTap

LONG_RUN = "KAFKASEC_FUZZ_EXAMPLES" in os.environ
"""A long run explores new examples each time; the bounded one runs the same ones every time."""
EXAMPLES = int(os.environ.get("KAFKASEC_FUZZ_EXAMPLES", "30"))
ANSWER_TIMEOUT_S = 10.0
RESET_TIMEOUT = datetime.timedelta(seconds=5)
SENT_CORRELATION_ID, BARRIER_CORRELATION_ID = 1, 2

ALICE = "User:alice"
ALICE_CLIENT_ID = "alice-fuzz"
GATEWAY_CLIENT_ID = "kafkasec-gateway"
"""What the gateway's own Metadata refreshes carry (kafkasec/server/upstream.py)."""

TOPICS = ("t0", "t1", "t2", "t3")
MISSING_TOPIC = "t4"
GROUPS = ("g0", "g1")
TRANSACTIONAL_IDS = ("x0", "x1")
CLUSTER = "kafka-cluster"
OTHER_NAMES = ("", "*", "other")
ALL_NAMES = (*TOPICS, MISSING_TOPIC, *GROUPS, *TRANSACTIONAL_IDS, *OTHER_NAMES)
UNKNOWN_TOPIC_ID = uuid.UUID("0badc0de-0000-4000-8000-000000000000")


# ---------------------------------------------------------------------------- the tapped gateway


@pytest.fixture(scope="module")
def tapped_gateway(tmp_path_factory):
    """(gateway endpoint, tap, security): a gateway whose every upstream connection goes through
    the tap, Tansu advertising the tap's address so that the per-broker connections do too."""
    tap_port = free_port()
    with TansuBroker(advertised_port=tap_port) as tansu, UpstreamTap(tansu.host, tansu.port, port=tap_port) as tap:
        state = tmp_path_factory.mktemp("tapped") / "state.db"
        with open_security(state) as security:
            add_users(security)
        with gateway_security(state, tap.bootstrap) as security, gateway_running(security) as endpoint:
            yield endpoint, tap, security


class Universe:
    """The names and ids requests are drawn from, and what Tansu holds now. Each example starts
    from t0..t3 existing and t4 missing; ``topic_names`` keeps every id Tansu ever gave, since
    a topic alice deleted comes back under a new one."""

    def __init__(self, tansu: tuple[str, int]):
        self.tansu = tansu
        self.topic_names: dict[uuid.UUID, str] = {}
        self.ids_by_name: dict[str, uuid.UUID] = {}
        self.existing: frozenset[str] = frozenset()

    def reset(self) -> None:
        run(self._reset())

    async def _reset(self) -> None:
        async with await KafkaConnection.open(*self.tansu, client_id="fuzz-reset") as tansu:
            await tansu.negotiate()
            created = set((await self._learn(tansu)).values()) - set(TOPICS)  # by the last example (t4, "*" ...)
            if created:
                deleted = wire.item_type(tansu.request_schema(ApiKey.DELETE_TOPICS), "topics")
                await tansu.send(ApiKey.DELETE_TOPICS, topic_names=tuple(created), topics=tuple(
                    wire.build(deleted, name=name) for name in created
                ), timeout=RESET_TIMEOUT)
            topic = wire.item_type(tansu.request_schema(ApiKey.CREATE_TOPICS), "topics")
            await tansu.send(ApiKey.CREATE_TOPICS, topics=tuple(
                wire.build(topic, name=name, num_partitions=2, replication_factor=1) for name in TOPICS
            ), timeout=RESET_TIMEOUT)
            names = await self._learn(tansu)
            # A group an example left mid-rebalance makes Tansu hold a later SyncGroup for seconds.
            await tansu.send(ApiKey.DELETE_GROUPS, groups_names=ALL_NAMES)
        self.existing = frozenset(names.values())
        self.ids_by_name = {name: topic_id for topic_id, name in names.items()}
        assert self.existing == set(TOPICS), f"Tansu holds {sorted(self.existing)} after the reset"

    async def _learn(self, tansu: KafkaConnection) -> dict[uuid.UUID, str]:
        metadata = await tansu.send(ApiKey.METADATA, topics=None, allow_auto_topic_creation=False)
        names = {topic.topic_id: topic.name for topic in metadata.topics if topic.error_code == 0}
        self.topic_names.update(names)
        return names

    def topic_id(self, index: int) -> uuid.UUID:
        """The id of t0..t3 now (most draws: by name, so that an example means the same topic
        whatever ids Tansu gave), an id no topic has, or zero (none)."""
        choices = [*(self.ids_by_name[name] for name in TOPICS), UNKNOWN_TOPIC_ID, uuid.UUID(int=0)]
        return choices[index % len(choices)]


@pytest.fixture(scope="module")
def universe(tapped_gateway):
    _, tap, _ = tapped_gateway
    return Universe(tap.upstream)


def forwarded_ranges(endpoint) -> dict[int, tuple[int, int]]:
    return endpoint.gateway.forwarded_ranges


# ---------------------------------------------------------------------------- random ACLs

OPERATIONS = {
    "TOPIC": ("READ", "WRITE", "CREATE", "DELETE", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS", "ALL"),
    "GROUP": ("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"),
    "TRANSACTIONAL_ID": ("WRITE", "DESCRIBE", "ALL"),
    "CLUSTER": ("CREATE", "DELETE", "DESCRIBE", "CLUSTER_ACTION", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE_CONFIGS",
                "ALTER_CONFIGS", "ALL"),
}
NAMES = {"TOPIC": (*TOPICS, MISSING_TOPIC), "GROUP": GROUPS, "TRANSACTIONAL_ID": TRANSACTIONAL_IDS}


@st.composite
def acl_bindings(draw) -> AclBinding:
    resource_type = draw(st.sampled_from(sorted(OPERATIONS)))
    if resource_type == "CLUSTER":
        name, pattern_type = CLUSTER, "LITERAL"
    else:
        pattern_type = draw(st.sampled_from(("LITERAL", "LITERAL", "PREFIXED")))
        full_name = draw(st.sampled_from((*NAMES[resource_type], "*")))
        if pattern_type == "PREFIXED":
            name = full_name[:1] if full_name != "*" else "t"  # "t" covers every topic, as "g" every group
        else:
            name = full_name
    operation = draw(st.sampled_from(OPERATIONS[resource_type]))
    permission = draw(st.sampled_from(("ALLOW", "ALLOW", "ALLOW", "DENY")))
    return AclBinding.of(resource_type, name, pattern_type, ALICE, "*", operation, permission)


def acl_line(binding: AclBinding) -> str:
    pattern, entry = binding.pattern, binding.entry
    return (f"{entry.permission_type.name} {entry.operation.name} on {pattern.resource_type.name} "
            f"{pattern.name!r} {pattern.pattern_type.name}")


def give_alice(security, bindings) -> None:
    security.delete_acls([AclBindingFilter.of(principal=ALICE)])
    security.create_acls(bindings)


# ---------------------------------------------------------------------------- random requests

RECORD = ((b"k", b"v"),)
TIMESTAMP_MS = 1_700_000_000_000
PLAIN = record_batch(RECORD, timestamp_ms=TIMESTAMP_MS)
IN_TRANSACTION = record_batch(RECORD, producer_id=1, producer_epoch=0, base_sequence=0, transactional=True,
                              timestamp_ms=TIMESTAMP_MS)
RECORDS = (
    PLAIN,
    PLAIN,
    IN_TRANSACTION,
    PLAIN + PLAIN,
    PLAIN + IN_TRANSACTION,
    IN_TRANSACTION + PLAIN,
    record_batch((end_transaction_marker(committed=True),), producer_id=1, producer_epoch=0, transactional=True,
                 control=True, timestamp_ms=TIMESTAMP_MS),
    record_batch(RECORD, magic=1, timestamp_ms=TIMESTAMP_MS),
    record_batch(RECORD, magic=0, timestamp_ms=TIMESTAMP_MS),
    b"",
)
"""What a Produce partition's records are drawn from: one plain batch (most often), and each way
of carrying more than the gateway may have looked at."""

TOPIC_FIELDS = frozenset({"name", "topic", "topic_name", "topic_names", "resource_name"})
GROUP_FIELDS = frozenset({"group_id", "group_ids", "groups", "groups_names", "key", "coordinator_keys"})
TRANSACTIONAL_ID_FIELDS = frozenset({"transactional_id", "v3_and_below_transactional_id"})
STRING_POOLS = {
    **dict.fromkeys(TOPIC_FIELDS, (*TOPICS, MISSING_TOPIC)),
    **dict.fromkeys(GROUP_FIELDS, (*GROUPS, *TRANSACTIONAL_IDS)),
    **dict.fromkeys(TRANSACTIONAL_ID_FIELDS, TRANSACTIONAL_IDS),
}
"""Names by the field that holds them, mostly; any name otherwise, so that a group may be named
like a topic (and every other string field draws from all of them)."""

INTEGERS = {
    "replica_id": (-1, -1, -2, 0, 1),
    "partition": (0, 1, 1, 5, -1),
    "key_type": (0, 1, 2, 3),
    "resource_type": (2, 2, 4, 8, 16, 32, 0, 3),
    "isolation_level": (0, 1),
    "config_operation": (0, 1, 2, 3),
    "endpoint_type": (1, 2),
    "acks": (-1, 1, 0),
    "num_partitions": (-1, 1, 2),
    "replication_factor": (-1, 1),
    "session_id": (0, 1),
    "session_epoch": (-1, 0, 1),
    "max_bytes": (1 << 20,),
    "min_bytes": (0, 1),
    "response_partition_limit": (1, 2000),
}
PARTITION_FIELDS = frozenset({"partition", "partition_index", "index", "partitions", "partition_indexes"})
MILLISECONDS = {"transaction_timeout": (100, 60000), "retention_time": (-1, 0)}
"""Durations are short (Tansu holds a JoinGroup for half its session timeout, a Fetch for max_wait)."""


def _strings(field_name: str):
    pool = STRING_POOLS.get(field_name)
    if pool is None:
        return st.sampled_from(("", "m-1", "consumer", "range", *ALL_NAMES))
    return st.sampled_from(pool * 3 + ALL_NAMES)


def _primitives(field_name: str, kafka_type: str, universe: Universe):
    if kafka_type == "string":
        return _strings(field_name)
    if kafka_type == "records":
        return st.sampled_from(RECORDS)
    if kafka_type == "uuid":
        if field_name == "topic_id":
            return st.integers(0, 7).map(universe.topic_id)
        return st.sampled_from((uuid.UUID(int=0), UNKNOWN_TOPIC_ID))
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "bytes":
        return st.sampled_from((b"", b"\x00\x01\x00\x00"))
    if kafka_type.startswith("timedelta"):
        return st.sampled_from(MILLISECONDS.get(field_name, (0, 10, 100))).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type in ("int8", "int16", "int32", "int64"):
        name = "partition" if field_name in PARTITION_FIELDS else field_name
        return st.sampled_from(INTEGERS.get(name, (-1, 0, 1)))
    raise AssertionError(f"no strategy for {kafka_type} (field {field_name}): kio's schemas grew a type")


def _arrays(items):
    """Up to three items, and sometimes the first again: duplicate topics, partitions, groups."""
    return st.tuples(st.lists(items, max_size=3), st.booleans()).map(
        lambda drawn: tuple(drawn[0] + drawn[0][:1]) if drawn[1] else tuple(drawn[0])
    )


def _shape(field_type) -> tuple[bool, bool, typing.Any]:
    """Whether a field may be null, whether it is an array, and its item (or its own) type."""
    nullable = typing.get_origin(field_type) is not tuple and type(None) in typing.get_args(field_type)
    if nullable:
        field_type = next(arg for arg in typing.get_args(field_type) if arg is not type(None))
    if typing.get_origin(field_type) is tuple:
        return nullable, True, typing.get_args(field_type)[0]
    return nullable, False, field_type


@functools.lru_cache(maxsize=None)
def entities(entity_type: type, universe: Universe):
    """Any instance of a kio class: every field filled by its type and name (kio's schemas are
    the only description of a request this needs, so every version of every API is covered)."""
    fields = {}
    for field in dataclasses.fields(entity_type):
        nullable, array, item_type = _shape(field.type)
        kafka_type = field.metadata.get("kafka_type")
        items = entities(item_type, universe) if kafka_type is None else _primitives(field.name, kafka_type, universe)
        values = _arrays(items) if array else items
        fields[field.name] = st.one_of(st.none(), values) if nullable else values
    return st.fixed_dictionaries(fields).map(lambda values: entity_type(**values))


@dataclasses.dataclass(frozen=True)
class Sent:
    """A request as alice sends it: its body, and the header that goes before it."""

    api_key: int
    header_version: int
    body: typing.Any
    flexible_header: bool

    @property
    def frame(self) -> bytes:
        client_id = ALICE_CLIENT_ID.encode()
        header = struct.pack(">hhih", self.api_key, self.header_version, SENT_CORRELATION_ID, len(client_id)) + client_id
        return header + (b"\x00" if self.flexible_header else b"") + wire.encode(self.body)

    def __str__(self) -> str:
        body_version = self.body.__version__
        shape = f"header v{2 if self.flexible_header else 1}"
        if body_version != self.header_version:
            shape += f", body encoded as v{body_version}"
        return f"{ApiKey(self.api_key).name} v{self.header_version} ({shape}): {self.body!r}"


@st.composite
def requests_to_send(draw, api_key: int, versions: tuple[int, int], universe: Universe) -> Sent:
    version = draw(st.integers(*versions))
    shape = draw(st.sampled_from(("as Kafka", "as Kafka", "as Kafka", "as Kafka", "other header", "other body")))
    low, high = kio_versions(api_key)
    other_versions = [other for other in range(low, high + 1) if other != version]
    body_version = draw(st.sampled_from(other_versions)) if shape == "other body" and other_versions else version
    body = draw(entities(wire.request_schema(api_key, body_version), universe))
    flexible = wire.request_schema(api_key, version).__flexible__
    return Sent(api_key, version, body, flexible_header=flexible != (shape == "other header"))


# ---------------------------------------------------------------------------- sending as alice


async def _send_as_alice(endpoint, sent: Sent) -> str:
    """Send ``sent`` on a new connection as alice, then a Metadata for no topic: its answer
    means the gateway has dealt with the first (a Produce with acks=0 has no answer). What
    the gateway did, in words."""
    connection = await logged_in(endpoint, "alice")
    reader, writer = connection.streams()
    barrier = wire.encode_request(
        wire.build(wire.request_schema(ApiKey.METADATA, 12), topics=(), allow_auto_topic_creation=False),
        correlation_id=BARRIER_CORRELATION_ID, client_id=ALICE_CLIENT_ID,
    )
    writer.write(wire.size_prefixed(sent.frame) + wire.size_prefixed(barrier))
    answered = False
    try:
        while True:
            (size,) = wire.FRAME_SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), ANSWER_TIMEOUT_S))
            answer = await asyncio.wait_for(reader.readexactly(size), ANSWER_TIMEOUT_S)
            if int.from_bytes(answer[:4], "big", signed=True) == BARRIER_CORRELATION_ID:
                return "answered" if answered else "answered nothing"
            answered = True
    except (asyncio.IncompleteReadError, ConnectionError):
        return "closed the connection"
    except asyncio.TimeoutError:
        return f"no answer in {ANSWER_TIMEOUT_S:g} s"
    finally:
        await connection.close()


# ---------------------------------------------------------------------------- the oracle

Grant = tuple[str, str, str]
"""(operation, resource type, name); the name ANY_TOPIC asks about any topic (KIP-679)."""
ANY_TOPIC = object()


@dataclasses.dataclass(frozen=True)
class Need:
    """What Kafka requires before acting on one thing: any one of ``options``, each a set of
    grants that must all hold. No option: it may not reach the broker whatever the ACLs."""

    what: str
    options: tuple[tuple[Grant, ...], ...]


def need(what: str, *grants: Grant) -> Need:
    return Need(what, (grants,))


def either(what: str, *options: tuple[Grant, ...]) -> Need:
    return Need(what, options)


def refused(why: str) -> Need:
    """Whatever the ACLs, this may not reach the broker (``why`` says what Kafka does instead)."""
    return Need(why, ())


def topic_need(operation: str, name: str) -> Need:
    return need(f"{operation} on topic {name!r}", (operation, "TOPIC", name))


def group_need(operation: str, group_id: str) -> Need:
    return need(f"{operation} on group {group_id!r}", (operation, "GROUP", group_id))


def transactional_id_need(transactional_id: str | None) -> Need:
    if transactional_id is None:
        return refused("Kafka refuses it: a transactional batch needs a transactional id, and there is none")
    return need(f"WRITE on transactional id {transactional_id!r}", ("WRITE", "TRANSACTIONAL_ID", transactional_id))


def cluster_need(operation: str) -> Need:
    return need(f"{operation} on the cluster", (operation, "CLUSTER", CLUSTER))


def _field(body, name: str, default=None):
    return getattr(body, name, default)


def _by_name_or_id(entry, universe: Universe) -> list[str]:
    """The topics an entry names: by name, by id (when Tansu knows the id), or both."""
    names = []
    name = _field(entry, "name", _field(entry, "topic"))
    if name is not None:
        names.append(name)
    topic_id = _field(entry, "topic_id")
    if topic_id is not None and topic_id in universe.topic_names:
        names.append(universe.topic_names[topic_id])
    return names


def _batches(records: bytes | None) -> list[tuple[int, int]]:
    """(magic, attributes) of each batch (attributes 0 for magic 0 and 1)."""
    batches, offset = [], 0
    records = records or b""
    while offset + 17 <= len(records):
        (length,) = struct.unpack_from(">i", records, offset + 8)
        magic = records[offset + 16]
        attributes = struct.unpack_from(">h", records, offset + 21)[0] if magic == 2 else 0
        batches.append((magic, attributes))
        offset += 12 + max(length, 0)
    return batches


def _produce(body, version, universe):
    if any(attributes & TRANSACTIONAL for topic in body.topic_data for partition in topic.partition_data
           for _, attributes in _batches(partition.records)):
        yield transactional_id_need(body.transactional_id)  # KafkaApis.handleProduceRequest
    for topic in body.topic_data:
        for name in _by_name_or_id(topic, universe):
            yield topic_need("WRITE", name)


def _fetch(body, version, universe):
    replica_id = body.replica_state.replica_id if version >= 15 else body.replica_id
    if replica_id >= 0:  # FetchRequest.isFromFollower
        yield cluster_need("CLUSTER_ACTION")
        return
    if _field(body, "session_epoch", -1) > 0:
        # KIP-227: an incremental fetch also reads every partition already in the session, which
        # Kafka authorizes again on each request (KafkaApis.handleFetchRequest, fetchContext.foreachPartition)
        # and which this request does not name.
        yield refused(f"it is an incremental fetch (session {body.session_id}, epoch {body.session_epoch}): the "
                      "broker also reads the session's partitions, which it does not name")
    for topic in body.topics:
        for name in _by_name_or_id(topic, universe):
            yield topic_need("READ", name)


def _list_offsets(body, version, universe):
    for topic in body.topics:
        yield topic_need("DESCRIBE", topic.name)


def _metadata(body, version, universe):
    if body.topics is None or (version == 0 and not body.topics):
        return  # every topic: the answer is cut to those described (no one else's request)
    auto_create = version < 4 or body.allow_auto_topic_creation  # MetadataRequest: v0-3 always create
    for topic in body.topics:
        for name in _by_name_or_id(topic, universe):
            yield topic_need("DESCRIBE", name)
            if auto_create and name not in universe.existing:
                yield either(f"CREATE on the cluster or topic {name!r} (it does not exist and may be created)",
                             (("CREATE", "CLUSTER", CLUSTER),), (("CREATE", "TOPIC", name),))


def _offset_commit(body, version, universe):
    yield group_need("READ", body.group_id)
    for topic in body.topics:
        yield topic_need("READ", topic.name)


def _offset_fetch(body, version, universe):
    groups = body.groups if version >= 8 else (body,)
    for group in groups:
        yield group_need("DESCRIBE", group.group_id)
        for topic in group.topics or ():  # None: every topic, the answer cut to those described
            yield topic_need("DESCRIBE", topic.name)


def _find_coordinator(body, version, universe):
    key_type = _field(body, "key_type", 0)
    keys = body.coordinator_keys if version >= 4 else (body.key,)
    for key in keys:
        if key_type == 0:
            yield need(f"DESCRIBE on group {key!r}", ("DESCRIBE", "GROUP", key))
        elif key_type == 1:
            yield need(f"DESCRIBE on transactional id {key!r}", ("DESCRIBE", "TRANSACTIONAL_ID", key))
        elif key_type == 2 and version >= 6:
            yield cluster_need("CLUSTER_ACTION")
        else:  # FindCoordinatorRequest.CoordinatorType.forId, KafkaApis.getCoordinator
            yield refused(f"Kafka refuses key type {key_type} at v{version} (INVALID_REQUEST)")


def _group_member(body, version, universe):
    yield group_need("READ", body.group_id)


def _describe_groups(body, version, universe):
    for group_id in body.groups:
        yield group_need("DESCRIBE", group_id)


def _create_topics(body, version, universe):
    for topic in body.topics:  # ControllerApis.createTopics: CREATE on the cluster, else per topic
        yield either(f"CREATE on the cluster or topic {topic.name!r}",
                     (("CREATE", "CLUSTER", CLUSTER),), (("CREATE", "TOPIC", topic.name),))


def _delete_topics(body, version, universe):
    # ControllerApis.deleteTopics: DELETE on the cluster, else by id DELETE, by name DESCRIBE and DELETE.
    by_name = list(body.topic_names) if version < 6 else [topic.name for topic in body.topics if topic.name is not None]
    by_id = [] if version < 6 else [universe.topic_names[topic.topic_id] for topic in body.topics
                                    if topic.topic_id in universe.topic_names]
    for name in by_name:
        yield either(f"DELETE on the cluster, or DESCRIBE and DELETE on topic {name!r}",
                     (("DELETE", "CLUSTER", CLUSTER),), (("DESCRIBE", "TOPIC", name), ("DELETE", "TOPIC", name)))
    for name in by_id:
        yield either(f"DELETE on the cluster or topic {name!r} (named by id)",
                     (("DELETE", "CLUSTER", CLUSTER),), (("DELETE", "TOPIC", name),))


def _init_producer_id(body, version, universe):
    if body.transactional_id is not None:
        yield transactional_id_need(body.transactional_id)
    else:  # KafkaApis.handleInitProducerIdRequest, KIP-679
        yield either("IDEMPOTENT_WRITE on the cluster or WRITE on some topic",
                     (("IDEMPOTENT_WRITE", "CLUSTER", CLUSTER),), (("WRITE", "TOPIC", ANY_TOPIC),))


def _add_partitions_to_txn(body, version, universe):
    if version >= 4:  # "Newer versions of the request should only come from other brokers."
        yield cluster_need("CLUSTER_ACTION")
        return
    yield transactional_id_need(body.v3_and_below_transactional_id)
    for topic in body.v3_and_below_topics:
        yield topic_need("WRITE", topic.name)


def _add_offsets_to_txn(body, version, universe):
    yield transactional_id_need(body.transactional_id)
    yield group_need("READ", body.group_id)


def _end_txn(body, version, universe):
    yield transactional_id_need(body.transactional_id)


def _txn_offset_commit(body, version, universe):
    yield transactional_id_need(body.transactional_id)
    yield group_need("READ", body.group_id)
    for topic in body.topics:
        yield topic_need("READ", topic.name)


def _configs(operation: str):
    """DescribeConfigs / IncrementalAlterConfigs: per resource type (KafkaApis / ConfigAdminManager)."""

    def needs(body, version, universe):
        for resource in body.resources:
            name = resource.resource_name
            if resource.resource_type == 2:
                yield topic_need(operation, name)
            elif resource.resource_type == 32:
                yield group_need(operation, name)
            elif resource.resource_type in (4, 8, 16):  # broker, broker logger, client metrics
                yield cluster_need(operation)
            else:
                yield refused(f"Kafka refuses config resource type {resource.resource_type} (INVALID_REQUEST)")

    return needs


def _delete_groups(body, version, universe):
    for group_id in body.groups_names:
        yield group_need("DELETE", group_id)


def _consumer_group_describe(body, version, universe):
    for group_id in body.group_ids:
        yield group_need("DESCRIBE", group_id)


def _describe_topic_partitions(body, version, universe):
    for topic in body.topics:  # none: every topic, the answer cut to those described
        yield topic_need("DESCRIBE", topic.name)
    cursor = body.cursor
    if body.topics and cursor is not None and cursor.topic_name not in {topic.name for topic in body.topics}:
        yield refused(f"Kafka refuses a cursor on topic {cursor.topic_name!r}, not one of the topics asked for "
                      "(DescribeTopicPartitionsRequestHandler: INVALID_REQUEST)")


def _nothing(body, version, universe):
    return ()


def _cluster(operation: str):
    def needs(body, version, universe):
        yield cluster_need(operation)

    return needs


ORACLE = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _group_member,
    ApiKey.HEARTBEAT: _group_member,
    ApiKey.LEAVE_GROUP: _group_member,
    ApiKey.SYNC_GROUP: _group_member,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _nothing,  # the answer is cut to the groups described
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
    ApiKey.END_TXN: _end_txn,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.DESCRIBE_CONFIGS: _configs("DESCRIBE_CONFIGS"),
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs("ALTER_CONFIGS"),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster("DESCRIBE"),
    ApiKey.DESCRIBE_CLUSTER: _nothing,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: _nothing,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
}
"""What Kafka requires of each API the gateway forwards to Tansu, by the request's own fields."""


def _shape_problems(request: wire.Request, universe: Universe):
    """What Kafka refuses before any ACL is asked, that would let a broker act on what the
    gateway never judged: one topic named by name and by id, Produce records that are not
    exactly one magic 2 batch (ProduceRequest.validateRecords) or that are a control batch
    (LogValidator: "Clients are not allowed to write control records")."""
    body = request.body
    for field in dataclasses.fields(body):
        entries = getattr(body, field.name)
        if isinstance(entries, tuple) and entries and dataclasses.is_dataclass(entries[0]) and wire.has_field(entries[0], "topic_id"):
            by_name = {entry.name for entry in entries if _field(entry, "name") is not None}
            by_id = {universe.topic_names[entry.topic_id] for entry in entries if entry.topic_id in universe.topic_names}
            if by_name & by_id:
                yield f"{field.name} names {sorted(by_name & by_id)} both by name and by id"
    if request.api_key == ApiKey.PRODUCE:
        for topic in body.topic_data:
            for partition in topic.partition_data:
                batches = _batches(partition.records)
                if len(batches) != 1 or batches[0][0] != 2 or batches[0][1] & CONTROL:
                    yield (f"Produce {topic.name}-{partition.index} carries {len(batches)} batch(es) of magic "
                           f"{[magic for magic, _ in batches]}, attributes {[hex(a) for _, a in batches]}")


class Oracle:
    """Asks ``security`` whether alice holds each grant (once per grant and example)."""

    def __init__(self, security, universe: Universe):
        self.security = security
        self.universe = universe
        self.context = RequestContext.for_principal(ALICE, "127.0.0.1")
        self._answers: dict[Grant, bool] = {}

    def holds(self, grant: Grant) -> bool:
        if grant not in self._answers:
            operation, resource_type, name = grant
            if name is ANY_TOPIC:
                result = self.security.authorize_by_resource_type(self.context, operation, resource_type)
            else:
                action = Action(operation, ResourcePattern(resource_type, name), log_if_allowed=False, log_if_denied=False)
                (result,) = self.security.authorize(self.context, [action])
            self._answers[grant] = result is AuthorizationResult.ALLOWED
        return self._answers[grant]

    def violations(self, request: wire.Request):
        """What in one request that reached the broker alice was not allowed to make it do."""
        yield from _shape_problems(request, self.universe)
        for unmet in ORACLE[request.api_key](request.body, request.api_version, self.universe):
            if not any(all(self.holds(grant) for grant in option) for option in unmet.options):
                yield f"needs {unmet.what}" if unmet.options else unmet.what


def judge(tapped, oracle: Oracle) -> list[str]:
    """Every breach of the invariant in what the broker received, one line each."""
    problems = []
    for each in tapped:
        request = each.request
        if request is None:
            problems.append(f"the broker received a frame Kafka cannot read ({each.error}): {each.frame[:64].hex()}")
            continue
        client_id = request.header.client_id
        if request.api_key == ApiKey.API_VERSIONS:
            continue  # each upstream link's own negotiation: it names nothing
        if client_id == GATEWAY_CLIENT_ID:
            if request.api_key != ApiKey.METADATA or request.body.topics is not None or request.body.allow_auto_topic_creation:
                problems.append(f"the gateway sent, as itself, {request.body!r}")
            continue
        if client_id != ALICE_CLIENT_ID:
            problems.append(f"a request from neither alice nor the gateway (client id {client_id!r}): {request.body!r}")
            continue
        for violation in dict.fromkeys(oracle.violations(request)):  # once each, however many items share it
            problems.append(f"{ApiKey(request.api_key).name} v{request.api_version} reached the broker, but {violation}:"
                            f"\n      {request.body!r}")
    return problems


# ---------------------------------------------------------------------------- the tests


def test_the_oracle_covers_every_api_the_gateway_forwards(tapped_gateway):
    endpoint, _, _ = tapped_gateway
    assert set(forwarded_ranges(endpoint)) <= set(ORACLE)
    assert set(ORACLE) <= set(RULES)


def test_the_tap_records_what_reaches_the_broker_and_only_the_gateway_asks_as_itself(tapped_gateway, universe):
    """The tap sees the gateway's own refresh and an allowed request of alice's, decoded; the
    judge passes them and names a request that breaks the invariant."""
    endpoint, tap, security = tapped_gateway
    universe.reset()
    give_alice(security, [AclBinding.of("TOPIC", "t0", "LITERAL", ALICE, "*", "DESCRIBE", "ALLOW")])
    metadata = wire.build(wire.request_schema(ApiKey.METADATA, 12), topics=(
        wire.build(wire.item_type(wire.request_schema(ApiKey.METADATA, 12), "topics"), name="t0"),
    ), allow_auto_topic_creation=False)
    tap.clear()
    outcome = run(_send_as_alice(endpoint, Sent(ApiKey.METADATA, 12, metadata, flexible_header=True)))
    assert tap.wait_until_idle()
    tapped = tap.requests
    assert outcome.startswith("answered")
    assert [(each.request.api_key, each.request.header.client_id) for each in tapped if each.request.api_key != ApiKey.API_VERSIONS] == [
        (ApiKey.METADATA, ALICE_CLIENT_ID), (ApiKey.METADATA, ALICE_CLIENT_ID)
    ]
    assert [topic.name for topic in tapped[-2].request.body.topics] == ["t0"]
    oracle = Oracle(security, universe)
    assert judge(tapped, oracle) == []
    give_alice(security, [])
    assert judge(tapped, Oracle(security, universe)) == [
        f"METADATA v12 reached the broker, but needs DESCRIBE on topic 't0':\n      {tapped[-2].request.body!r}"
    ]


@pytest.mark.parametrize("api_key", sorted(RULES), ids=lambda api_key: ApiKey(api_key).name)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG_RUN, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(bindings=st.lists(acl_bindings(), max_size=8), data=st.data())
def test_what_reaches_the_broker_was_authorized_for_the_sender(tapped_gateway, universe, api_key, bindings, data):
    endpoint, tap, security = tapped_gateway
    ranges = forwarded_ranges(endpoint)
    if api_key not in ranges:
        pytest.skip(f"the gateway does not forward {ApiKey(api_key).name} to Tansu")
    universe.reset()
    give_alice(security, bindings)
    sent = data.draw(requests_to_send(api_key, ranges[api_key], universe), label="request")
    tap.clear()
    outcome = run(_send_as_alice(endpoint, sent))
    assert tap.wait_until_idle(), "the gateway kept its upstream connection after the client's closed"
    tapped = tap.requests
    problems = judge(tapped, Oracle(security, universe))
    reached = sum(1 for each in tapped if each.request is not None and each.request.header.client_id == ALICE_CLIENT_ID)
    event(f"{outcome}; alice's requests that reached the broker: {reached} (the barrier's included)")
    acls = sorted(acl_line(binding) for binding in bindings) or ["(none)"]
    note(f"alice's ACLs: {acls}")
    assert not problems, (
        f"alice sent {sent}\n  the gateway: {outcome}\n  alice's ACLs:\n    " + "\n    ".join(acls)
        + "\n  what reached the broker that should not have:\n    " + "\n    ".join(problems)
    )
