"""A Kafka broker in one file that embeds kafkasec: the proof that a broker's security is a few lines.

Its data is an in-memory log per topic (one partition each) and a dict of committed offsets. It
serves what Kafka's clients need to produce, to consume in a group (one member per group, as a
Kafka broker with ``group.max.size=1``) or by assignment, and to commit: Metadata, CreateTopics,
Produce, Fetch, ListOffsets, FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, and InitProducerId for idempotent producers (no transactions).

All of its security goes through :class:`kafkasec.server.SecureConnection`: the SASL/SCRAM login,
ApiVersions, the ACL and SCRAM admin APIs, and Kafka's authorization of every request, the
refused topics and groups answered in Kafka's shape. The lines marked ``# security`` are all of
it; docs/embedding.md walks through the file and counts them.

Run it on a state file whose users and ACLs the ``kafkasec`` command made::

    python examples/embedded_broker.py --state state.db --port 9092 --topic orders

With ``security=None`` (``--no-security``) it answers every request unchecked, over PLAINTEXT:
the baseline of benchmarks/bench_embedded_broker.py.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import itertools
import logging
import struct
import time
import uuid
from typing import Any, Callable

from kafkasec import KafkaErrorCode, KafkaSecurity
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules import RequestAuthorization
from kafkasec.server import Close, Handle, SecureConnection, Send  # security
from kafkasec.server.endpoint import running_in_thread

logger = logging.getLogger("embedded_broker")

VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 9),
    ApiKey.METADATA: (1, 12),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
}
"""The client APIs this broker serves, API key -> (lowest, highest) version: SecureConnection
lists in ApiVersions the part of each range kafkasec authorizes, and adds its own APIs."""

NODE_ID = 1
EARLIEST = -2
"""ListOffsets' timestamp for the log start; any other is answered with the log end."""
NONE, UNKNOWN_TOPIC = KafkaErrorCode.NONE, KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION

# A record batch (magic 2) starts with baseOffset (int64); lastOffsetDelta is the int32 at byte
# 23. The batch's CRC covers only what follows its attributes, so the log may set baseOffset, as
# Kafka's does on append.
BASE_OFFSET = struct.Struct(">q")
LAST_OFFSET_DELTA = struct.Struct(">i")
LAST_OFFSET_DELTA_AT = 23


def error(code: KafkaErrorCode) -> Any:
    """A response's error code field."""
    return wire.error_code(code)


@dataclasses.dataclass
class TopicLog:
    """A topic's one partition: its record batches, each with its base offset set."""

    topic_id: uuid.UUID = dataclasses.field(default_factory=uuid.uuid4)
    batches: list[bytes] = dataclasses.field(default_factory=list)
    ends: list[int] = dataclasses.field(default_factory=list)
    """The offset after each batch's last record, in order: where a fetch starts is a bisection."""
    end_offset: int = 0

    def append(self, batch: bytes) -> int:
        """Append a Produce's batch (exactly one per partition, as SecureConnection checks), its
        offsets from the log end on; its base offset. Its lastOffsetDelta is taken as it is."""
        base_offset = self.end_offset
        (last_offset_delta,) = LAST_OFFSET_DELTA.unpack_from(batch, LAST_OFFSET_DELTA_AT)
        self.batches.append(BASE_OFFSET.pack(base_offset) + batch[BASE_OFFSET.size:])
        self.end_offset += last_offset_delta + 1
        self.ends.append(self.end_offset)
        return base_offset

    def read(self, offset: int, max_bytes: int) -> bytes:
        """The batches from the one holding ``offset`` on, up to ``max_bytes`` but at least one (as Kafka)."""
        first = last = bisect.bisect_right(self.ends, offset)
        size = 0
        while last < len(self.batches) and (last == first or size + len(self.batches[last]) <= max_bytes):
            size += len(self.batches[last])
            last += 1
        return b"".join(self.batches[first:last])


@dataclasses.dataclass
class Group:
    """A consumer group of at most one member."""

    generation: int = 0
    member_id: str = ""
    protocol_type: str | None = None
    protocol_name: str | None = None
    session_timeout_s: float = 0.0
    last_seen: float = 0.0

    def held_by_another(self, member_id: str) -> bool:
        alive = time.monotonic() - self.last_seen < self.session_timeout_s
        return bool(self.member_id) and member_id != self.member_id and alive


class EmbeddedBroker:
    """The broker, node 1: ``security`` (a KafkaSecurity; None: none at all, PLAINTEXT) served on
    ``host:port`` (0: a free port, :attr:`port` once started), with ``topics`` made at the start."""

    def __init__(self, security: KafkaSecurity | None, *, host: str = "127.0.0.1", port: int = 0,
                 topics: tuple[str, ...] = (), auto_create_topics: bool = False):
        self.security = security
        self.host, self.port = host, port
        self.auto_create_topics = auto_create_topics
        self.logs: dict[str, TopicLog] = {}
        self.topic_names: dict[uuid.UUID, str] = {}
        """Topic id -> name: Metadata lists the ids, Fetch v13+ names topics by them."""
        self.groups: dict[str, Group] = {}
        self.offsets: dict[tuple[str, str, int], tuple[int, str | None]] = {}
        """(group, topic, partition) -> the committed offset and its metadata."""
        self.producer_ids = itertools.count(1000)
        self.handlers: dict[ApiKey, Callable[[Any, int], Any]] = {
            ApiKey.PRODUCE: self.produce, ApiKey.LIST_OFFSETS: self.list_offsets, ApiKey.METADATA: self.metadata,
            ApiKey.CREATE_TOPICS: self.create_topics, ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.FIND_COORDINATOR: self.find_coordinator, ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.SYNC_GROUP: self.sync_group, ApiKey.HEARTBEAT: self.heartbeat, ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.OFFSET_COMMIT: self.offset_commit, ApiKey.OFFSET_FETCH: self.offset_fetch,
        }
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task] = set()
        self._appended = asyncio.Event()  # set, and replaced, at each append: wakes the fetches waiting
        for name in topics:
            self.create_topic(name)

    @property
    def bootstrap(self) -> str:
        """``host:port``, for a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    # ------------------------------------------------------------------ connections

    async def start(self) -> None:
        self._server = await asyncio.start_server(self.serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    def running_in_thread(self) -> contextlib.AbstractContextManager[EmbeddedBroker]:
        """Serve on an event loop of a background thread until the block ends (tests, the docs)."""
        return running_in_thread(self, "embedded-broker")

    def connect(self, peer: str) -> SecureConnection | Unsecured:
        """The security of a new connection from ``peer`` (its address)."""
        if self.security is None:
            return Unsecured()
        return SecureConnection(self.security, peer, broker_versions=VERSIONS, topic_names=self.topic_names)  # security

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: its requests answered one at a time, in order, as Kafka's clients expect."""
        peer = writer.get_extra_info("peername")[0]
        connection = self.connect(peer)
        task = asyncio.current_task()
        assert task is not None  # start_server runs each connection in a task of its own
        self._connections.add(task)
        try:
            while data := await reader.read(65536):
                for event in connection.receive_data(data):  # security
                    if isinstance(event, Handle):  # security
                        answer = await self.handle(event.api_key, event.version, event.request)
                        if event.api_key == ApiKey.PRODUCE and event.request.acks == 0:
                            continue  # Kafka answers a Produce with acks=0 with nothing
                        event = Send(connection.respond(event, answer))  # security
                    await asyncio.sleep(event.delay_ms / 1000)  # security
                    if isinstance(event, Close):  # security
                        logger.info("closing the connection from %s: %s", peer, event.reason)
                        return  # security
                    writer.write(event.data)  # security
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or stop() ended the connection
        finally:
            self._connections.discard(task)
            writer.close()

    async def handle(self, api_key: ApiKey, version: int, request: Any) -> Any:
        """The answer (a kio response body) to ``request``, a request body of ``api_key`` at ``version``."""
        if api_key == ApiKey.FETCH:
            return await self.fetch(request, version)  # the one request that waits
        return self.handlers[api_key](request, version)

    # ------------------------------------------------------------------ topics and records

    def create_topic(self, name: str) -> TopicLog:
        topic_log = self.logs[name] = TopicLog()
        self.topic_names[topic_log.topic_id] = name
        return topic_log

    def metadata(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.METADATA, version)
        topic_type = wire.item_type(schema, "topics")
        partition = wire.build(wire.item_type(topic_type, "partitions"), partition_index=0, leader_id=NODE_ID,
                               leader_epoch=0, replica_nodes=(NODE_ID,), isr_nodes=(NODE_ID,))
        # Before v4 a request cannot say "do not create".
        creates = self.auto_create_topics and (version < 4 or request.allow_auto_topic_creation)
        topics = []
        for name in self.logs if request.topics is None else [topic.name for topic in request.topics]:
            if name not in self.logs and creates:
                self.create_topic(name)
            topic_log = self.logs.get(name)
            if topic_log is None:
                topics.append(wire.build(topic_type, name=name, error_code=error(UNKNOWN_TOPIC)))
            else:
                topics.append(wire.build(topic_type, name=name, topic_id=topic_log.topic_id, partitions=(partition,)))
        broker = wire.build(wire.item_type(schema, "brokers"), node_id=NODE_ID, host=self.host, port=self.port)
        return wire.build(schema, brokers=(broker,), cluster_id="embedded", controller_id=NODE_ID, topics=tuple(topics))

    def create_topics(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.CREATE_TOPICS, version)
        topic_type = wire.item_type(schema, "topics")
        results = []
        for topic in request.topics:
            if topic.name in self.logs:
                result = {"error_code": error(KafkaErrorCode.TOPIC_ALREADY_EXISTS)}
            elif topic.num_partitions not in (-1, 1):
                result = {"error_code": error(KafkaErrorCode.INVALID_PARTITIONS),
                          "error_message": "this broker has one partition per topic"}
            elif request.validate_only:
                result = {"num_partitions": 1, "replication_factor": 1}
            else:
                result = {"topic_id": self.create_topic(topic.name).topic_id, "num_partitions": 1, "replication_factor": 1}
            results.append(wire.build(topic_type, name=topic.name, **result))
        return wire.build(schema, topics=tuple(results))

    def produce(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.PRODUCE, version)
        topic_type = wire.item_type(schema, "responses")
        partition_type = wire.item_type(topic_type, "partition_responses")
        responses = []
        for topic in request.topic_data:
            partitions = []
            for partition in topic.partition_data:
                topic_log = self.logs.get(topic.name)
                if topic_log is None or partition.index != 0:
                    partitions.append(wire.build(partition_type, index=partition.index, error_code=error(UNKNOWN_TOPIC),
                                                 base_offset=-1))
                else:
                    base_offset = topic_log.append(bytes(partition.records))
                    partitions.append(wire.build(partition_type, index=0, base_offset=base_offset, log_start_offset=0))
            responses.append(wire.build(topic_type, name=topic.name, partition_responses=tuple(partitions)))
        self._appended.set()
        self._appended = asyncio.Event()
        return wire.build(schema, responses=tuple(responses))

    def topic_log_of(self, fetched: Any) -> TopicLog | None:
        """The log of a Fetch's topic: by name, or by id from v13 on."""
        return self.logs.get(fetched.topic if hasattr(fetched, "topic") else self.topic_names.get(fetched.topic_id, ""))

    async def fetch(self, request: Any, version: int) -> Any:
        """Fetch, a long poll: waits up to ``max_wait`` for records when there are none yet (any
        record will do: ``min_bytes`` is taken as 1)."""
        wanted = [(self.topic_log_of(topic), partition.fetch_offset) for topic in request.topics for partition in topic.partitions]
        deadline = time.monotonic() + request.max_wait.total_seconds()
        while not any(log and offset < log.end_offset for log, offset in wanted) and time.monotonic() < deadline:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._appended.wait(), deadline - time.monotonic())
        schema = wire.response_schema(ApiKey.FETCH, version)
        topic_type = wire.item_type(schema, "responses")
        partition_type = wire.item_type(topic_type, "partitions")
        responses = []
        for topic in request.topics:
            topic_log = self.topic_log_of(topic)
            partitions = []
            for partition in topic.partitions:
                if topic_log is None or partition.partition != 0:
                    found = {"error_code": error(UNKNOWN_TOPIC), "high_watermark": -1}
                elif partition.fetch_offset > topic_log.end_offset:
                    found = {"error_code": error(KafkaErrorCode.OFFSET_OUT_OF_RANGE), "high_watermark": topic_log.end_offset}
                else:
                    found = {"high_watermark": topic_log.end_offset, "last_stable_offset": topic_log.end_offset,
                             "log_start_offset": 0,
                             "records": topic_log.read(partition.fetch_offset, partition.partition_max_bytes)}
                # Without records they are empty, not null, as Kafka sends them.
                partitions.append(wire.build(partition_type, partition_index=partition.partition, **{"records": b"", **found}))
            responses.append(wire.build(topic_type, topic=getattr(topic, "topic", None), topic_id=getattr(topic, "topic_id", None),
                                        partitions=tuple(partitions)))
        return wire.build(schema, responses=tuple(responses))

    def list_offsets(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.LIST_OFFSETS, version)
        topic_type = wire.item_type(schema, "topics")
        partition_type = wire.item_type(topic_type, "partitions")
        topics = []
        for topic in request.topics:
            topic_log = self.logs.get(topic.name)
            partitions = []
            for partition in topic.partitions:
                if topic_log is None or partition.partition_index != 0:
                    found = {"error_code": error(UNKNOWN_TOPIC), "offset": -1}
                else:
                    found = {"offset": 0 if partition.timestamp == EARLIEST else topic_log.end_offset, "leader_epoch": 0}
                partitions.append(wire.build(partition_type, partition_index=partition.partition_index, timestamp=-1, **found))
            topics.append(wire.build(topic_type, name=topic.name, partitions=tuple(partitions)))
        return wire.build(schema, topics=tuple(topics))

    def init_producer_id(self, request: Any, version: int) -> Any:
        # An idempotent producer asks for an id; this broker keeps no sequence numbers and has no transactions.
        return wire.build(wire.response_schema(ApiKey.INIT_PRODUCER_ID, version), producer_id=next(self.producer_ids))

    # ------------------------------------------------------------------ groups and offsets

    def find_coordinator(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.FIND_COORDINATOR, version)
        if version < 4:
            return wire.build(schema, node_id=NODE_ID, host=self.host, port=self.port)
        coordinator_type = wire.item_type(schema, "coordinators")
        return wire.build(schema, coordinators=tuple(
            wire.build(coordinator_type, key=key, node_id=NODE_ID, host=self.host, port=self.port)
            for key in request.coordinator_keys
        ))

    def join_group(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.JOIN_GROUP, version)
        group = self.groups.setdefault(request.group_id, Group())
        if group.held_by_another(request.member_id):
            return wire.build(schema, error_code=error(KafkaErrorCode.GROUP_MAX_SIZE_REACHED), generation_id=-1)
        # The one member leads: it is sent its own subscription and assigns itself everything.
        protocol = request.protocols[0]
        group.member_id = request.member_id or f"member-{uuid.uuid4()}"
        group.generation += 1
        group.protocol_type, group.protocol_name = request.protocol_type, protocol.name
        group.session_timeout_s = request.session_timeout.total_seconds()
        group.last_seen = time.monotonic()
        member = wire.build(wire.item_type(schema, "members"), member_id=group.member_id, metadata=protocol.metadata)
        return wire.build(schema, generation_id=group.generation, protocol_type=group.protocol_type,
                          protocol_name=group.protocol_name, leader=group.member_id, member_id=group.member_id,
                          members=(member,))

    def member_error(self, group_id: str, member_id: str, generation: int) -> KafkaErrorCode:
        """Whether a request comes from the group's member, at its generation (which keeps it alive)."""
        group = self.groups.get(group_id)
        if group is None or group.member_id != member_id:
            return KafkaErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return KafkaErrorCode.ILLEGAL_GENERATION
        group.last_seen = time.monotonic()
        return NONE

    def sync_group(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.SYNC_GROUP, version)
        refused = self.member_error(request.group_id, request.member_id, request.generation_id)
        if refused is not NONE:
            return wire.build(schema, error_code=error(refused))
        group = self.groups[request.group_id]
        assignment = next((bytes(a.assignment) for a in request.assignments if a.member_id == group.member_id), b"")
        return wire.build(schema, protocol_type=group.protocol_type, protocol_name=group.protocol_name, assignment=assignment)

    def heartbeat(self, request: Any, version: int) -> Any:
        refused = self.member_error(request.group_id, request.member_id, request.generation_id)
        return wire.build(wire.response_schema(ApiKey.HEARTBEAT, version), error_code=error(refused))

    def leave_group(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.LEAVE_GROUP, version)
        leaving = [member.member_id for member in request.members] if version >= 3 else [request.member_id]
        group = self.groups.get(request.group_id)
        if group is not None and group.member_id in leaving:
            group.member_id = ""
        if version < 3:
            return wire.build(schema)
        member_type = wire.item_type(schema, "members")
        return wire.build(schema, members=tuple(wire.build(member_type, member_id=member_id) for member_id in leaving))

    def offset_commit(self, request: Any, version: int) -> Any:
        # Taken from any client the security lets through: a consumer that assign()s commits as generation -1.
        schema = wire.response_schema(ApiKey.OFFSET_COMMIT, version)
        topic_type = wire.item_type(schema, "topics")
        partition_type = wire.item_type(topic_type, "partitions")
        topics = []
        for topic in request.topics:
            partitions = []
            for partition in topic.partitions:
                index = partition.partition_index
                known = topic.name in self.logs and index == 0
                if known:
                    self.offsets[request.group_id, topic.name, index] = (partition.committed_offset, partition.committed_metadata)
                partitions.append(wire.build(partition_type, partition_index=index, error_code=error(NONE if known else UNKNOWN_TOPIC)))
            topics.append(wire.build(topic_type, name=topic.name, partitions=tuple(partitions)))
        return wire.build(schema, topics=tuple(topics))

    def offset_fetch(self, request: Any, version: int) -> Any:
        schema = wire.response_schema(ApiKey.OFFSET_FETCH, version)
        if version < 8:
            return wire.build(schema, topics=self.committed(schema, request.group_id, request.topics))
        group_type = wire.item_type(schema, "groups")  # v8+ asks about several groups at once
        return wire.build(schema, groups=tuple(
            wire.build(group_type, group_id=group.group_id, topics=self.committed(group_type, group.group_id, group.topics))
            for group in request.groups
        ))

    def committed(self, schema: type, group_id: str, topics: Any) -> tuple:
        """OffsetFetch's answer for ``group_id`` (the ``topics`` field of ``schema``): for the ``topics``
        asked, or None: every partition it committed."""
        topic_type = wire.item_type(schema, "topics")
        partition_type = wire.item_type(topic_type, "partitions")
        if topics is None:
            asked = {(topic, index) for group, topic, index in self.offsets if group == group_id}
        else:
            asked = {(topic.name, index) for topic in topics for index in topic.partition_indexes}
        by_topic: dict[str, list] = {}
        for name, index in sorted(asked):
            offset, metadata = self.offsets.get((group_id, name, index), (-1, ""))
            by_topic.setdefault(name, []).append(
                wire.build(partition_type, partition_index=index, committed_offset=offset, metadata=metadata))
        return tuple(wire.build(topic_type, name=name, partitions=tuple(partitions)) for name, partitions in by_topic.items())


class Unsecured:
    """No security, the benchmark's baseline: frames decoded and answered as they come, over
    PLAINTEXT, nothing checked or refused. It gives SecureConnection's events."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def receive_data(self, data: bytes) -> list[Send | Handle | Close]:
        self._buffer += data
        events: list[Send | Handle | Close] = []
        while len(self._buffer) >= 4 and len(self._buffer) >= 4 + (size := int.from_bytes(self._buffer[:4], "big")):
            request = wire.decode_request(bytes(self._buffer[4:4 + size]))
            del self._buffer[:4 + size]
            api_key, version, correlation_id = ApiKey(request.api_key), request.api_version, int(request.header.correlation_id)
            if api_key == ApiKey.API_VERSIONS:
                answer = wire.encode_response(self.api_versions(version), correlation_id=correlation_id)
                events.append(Send(wire.size_prefixed(answer)))
            else:
                everything = RequestAuthorization(api_key, version, request.body, forward=request.body)
                events.append(Handle(api_key, version, request.body, everything, correlation_id))
        return events

    def respond(self, handled: Handle, answer: Any) -> bytes:
        return wire.size_prefixed(wire.encode_response(answer, correlation_id=handled.correlation_id))

    @staticmethod
    def api_versions(version: int) -> Any:
        schema = wire.response_schema(ApiKey.API_VERSIONS, version)
        key_type = wire.item_type(schema, "api_keys")
        served = {**VERSIONS, ApiKey.API_VERSIONS: (0, version)}
        return wire.build(schema, api_keys=tuple(
            wire.build(key_type, api_key=api_key, min_version=low, max_version=high) for api_key, (low, high) in served.items()
        ))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A Kafka broker with an in-memory log that embeds kafkasec.")
    parser.add_argument("--state", help="kafkasec's state file: the users and ACLs (see the kafkasec command)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9092, help="0: any free port")
    parser.add_argument("--topic", action="append", default=[], help="a topic to make at the start (repeat it)")
    parser.add_argument("--auto-create-topics", action="store_true", help="Metadata creates the topics it names")
    parser.add_argument("--no-security", action="store_true", help="PLAINTEXT, nothing checked (for benchmarks)")
    args = parser.parse_args(argv)
    if not args.no_security and not args.state:
        parser.error("--state is needed (or --no-security)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    security = None if args.no_security else KafkaSecurity.from_config({"kafkasec.state.path": args.state})  # security
    broker = EmbeddedBroker(security, host=args.host, port=args.port, topics=tuple(args.topic),
                            auto_create_topics=args.auto_create_topics)

    async def serve_forever() -> None:
        await broker.start()
        logger.info("serving on %s", broker.bootstrap)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_forever())


if __name__ == "__main__":
    main()
