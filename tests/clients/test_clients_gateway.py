"""Real Kafka clients (librdkafka, kafka-python, aiokafka) through the gateway in front of Tansu,
over 127.0.0.1.

The gateway authorizes each request by Kafka's rules and sends what is allowed on to Tansu, a
Kafka-compatible broker without ACLs. These tests check what each client library makes of the
answers: records written and read back when allowed, and when refused, the exception or error
each library raises for Kafka's code. Tansu is shared by the module (memory storage), so each
test has topics, groups and transactional ids of its own; topics are created through the gateway
as the super user, so that no test depends on auto-creation.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kafkasec import AclBinding

from gateway_support import FAST_GROUPS
from server_support import PASSWORDS, logged_in, request, run

pytestmark = pytest.mark.slow  # a consumer group takes a few seconds to form (Tansu holds JoinGroup)

TIMEOUT = 20
"""Seconds any one client call or poll loop may take."""


def grant(gateway, user, *rules):
    """ALLOW ``user`` each (resource type, literal name, operation) of ``rules``."""
    bindings = [
        AclBinding.of(resource_type, name, "LITERAL", f"User:{user}", "*", operation, "ALLOW")
        for resource_type, name, operation in rules
    ]
    for result in gateway.security.create_acls(bindings):
        assert result.error is None, result


# --------------------------------------------------------------------------- confluent-kafka


def confluent(gateway, user, **config):
    """librdkafka's configuration logging ``user`` in to the gateway with SCRAM-SHA-256."""
    return {
        "bootstrap.servers": gateway.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
        **config,
    }


def create_topics(gateway, *names, partitions=1):
    """Create ``names`` as the super user, through the gateway."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(confluent(gateway, "admin"))
    futures = admin.create_topics([NewTopic(name, partitions) for name in names], operation_timeout=TIMEOUT)
    for future in futures.values():
        future.result(timeout=TIMEOUT)


def deliver(gateway, user, topic, values, **config) -> list:
    """Produce ``values`` to ``topic`` as ``user``: each record's delivery error, None when delivered."""
    from confluent_kafka import Producer

    reports: list = []
    producer = Producer(confluent(gateway, user, **{"message.timeout.ms": TIMEOUT * 1000 // 2, **config}))
    for value in values:
        producer.produce(topic, value, on_delivery=lambda error, _message: reports.append(error))
    assert producer.flush(TIMEOUT) == 0
    return reports


def consumer_of(gateway, user, group, **config):
    """A classic-group consumer of ``group`` reading from the start (FAST_GROUPS: Tansu holds a
    JoinGroup for half the session timeout)."""
    from confluent_kafka import Consumer

    return Consumer(confluent(gateway, user, **{"group.id": group, "auto.offset.reset": "earliest", **FAST_GROUPS, **config}))


def read(consumer, count: int) -> list[tuple[str, bytes]]:
    """Poll until ``count`` records came (their topic and value), failing on a consumer error."""
    records: list[tuple[str, bytes]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(records) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert message.error() is None, message.error()
        records.append((message.topic(), message.value()))
    return records


def polled_for(consumer, seconds: float) -> list:
    """Everything the consumer gives in ``seconds``: (topic, value) records and errors."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None:
            seen.append((message.topic(), message.value()) if message.error() is None else message.error())
    return seen


def first_error(consumer, timeout: float = TIMEOUT):
    """Poll until the consumer reports an error (a KafkaError); fail if a record comes instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert message.error() is not None, f"a record came: {message.value()!r}"
        return message.error()
    pytest.fail(f"no consumer error in {timeout:g} s")


def test_confluent_produce_then_consume_when_allowed(gateway):
    pytest.importorskip("confluent_kafka")
    create_topics(gateway, "c-allowed", partitions=3)
    grant(gateway, "alice", ("TOPIC", "c-allowed", "WRITE"))
    grant(gateway, "bob", ("TOPIC", "c-allowed", "READ"), ("GROUP", "c-allowed-group", "READ"))
    values = [f"record-{number}".encode() for number in range(10)]
    assert deliver(gateway, "alice", "c-allowed", values) == [None] * len(values)

    consumer = consumer_of(gateway, "bob", "c-allowed-group")
    try:
        consumer.subscribe(["c-allowed"])
        records = read(consumer, len(values))
    finally:
        consumer.close()
    assert sorted(records) == sorted(("c-allowed", value) for value in values)  # three partitions: no order across them


@pytest.mark.parametrize("describe", [False, True], ids=["no-acl", "describe-only"])
def test_confluent_produce_refused(gateway, describe):
    """Without DESCRIBE the Metadata answer refuses the topic; with DESCRIBE only, the Produce
    request itself reaches the gateway and is refused there: the same code either way."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = f"c-refused-{describe}"
    create_topics(gateway, topic)
    if describe:
        grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))
    reports = deliver(gateway, "alice", topic, [b"one", b"two"])
    assert [error.code() for error in reports] == [confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2


def test_confluent_consumer_refused_group(gateway):
    """FindCoordinator refuses the group; librdkafka hands that to poll() as a consumer error."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    create_topics(gateway, "c-nogroup")
    grant(gateway, "bob", ("TOPIC", "c-nogroup", "READ"))
    consumer = consumer_of(gateway, "bob", "c-nogroup-group")
    try:
        consumer.subscribe(["c-nogroup"])
        error = first_error(consumer)
    finally:
        consumer.close()
    assert error.code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED


@pytest.mark.parametrize("describe", [
    pytest.param(False, id="no-acl"),
    pytest.param(True, id="describe-only"),
])
def test_confluent_consumer_refused_topic(gateway, describe):
    """Without any ACL on the topic, Metadata refuses it ("Subscribed topic not available");
    with DESCRIBE but no READ, the group forms and Fetch is refused."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = f"c-notopic-{describe}"
    create_topics(gateway, topic)
    assert deliver(gateway, "admin", topic, [b"secret"]) == [None]
    grant(gateway, "bob", ("GROUP", f"{topic}-group", "READ"))
    if describe:
        grant(gateway, "bob", ("TOPIC", topic, "DESCRIBE"))
    consumer = consumer_of(gateway, "bob", f"{topic}-group")
    try:
        consumer.subscribe([topic])
        error = first_error(consumer, timeout=10)
    finally:
        consumer.close()
    assert error.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_for_no_topics_names_no_topic(gateway):
    """librdkafka's "brokers only" request (Metadata v12, ``topics`` empty): Kafka answers it
    with no topics whoever asks; Tansu answers every topic, and the gateway must cut that to
    none, or bob, who may DESCRIBE nothing, would learn each topic, its id and partitions."""
    pytest.importorskip("confluent_kafka")
    create_topics(gateway, "c-hidden")

    async def ask():
        async with await logged_in(gateway, "bob") as connection:
            for_no_topics = await connection.request(request(3, 12, topics=(), allow_auto_topic_creation=False))
            for_every_topic = await connection.request(request(3, 12, topics=None, allow_auto_topic_creation=False))
        return for_no_topics, for_every_topic

    for_no_topics, for_every_topic = run(ask())
    assert [topic.name for topic in for_every_topic.topics] == []  # the listing is cut to what bob may describe
    assert [topic.name for topic in for_no_topics.topics] == []


def test_confluent_idempotent_producer_with_topic_write_only(gateway):
    """KIP-679: WRITE on a topic implies IDEMPOTENT_WRITE, so InitProducerId is allowed."""
    pytest.importorskip("confluent_kafka")
    create_topics(gateway, "c-idempotent")
    grant(gateway, "alice", ("TOPIC", "c-idempotent", "WRITE"))
    values = [f"i-{n}".encode() for n in range(5)]
    assert deliver(gateway, "alice", "c-idempotent", values, **{"enable.idempotence": True}) == [None] * 5
    consumer = consumer_of(gateway, "admin", "c-idempotent-group")
    try:
        consumer.subscribe(["c-idempotent"])
        records = read(consumer, 5)
    finally:
        consumer.close()
    assert records == [("c-idempotent", value) for value in values]


def test_confluent_transaction_committed(gateway):
    """Tansu hands aborted records to read_committed consumers too, so only a commit is checked."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    create_topics(gateway, "c-txn")
    grant(gateway, "alice", ("TRANSACTIONAL_ID", "c-txn-id", "WRITE"), ("TOPIC", "c-txn", "WRITE"))
    grant(gateway, "bob", ("TOPIC", "c-txn", "READ"), ("GROUP", "c-txn-group", "READ"))
    producer = confluent_kafka.Producer(confluent(gateway, "alice", **{"transactional.id": "c-txn-id"}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    values = [f"t-{n}".encode() for n in range(4)]
    for value in values:
        producer.produce("c-txn", value)
    producer.commit_transaction(TIMEOUT)

    consumer = consumer_of(gateway, "bob", "c-txn-group", **{"isolation.level": "read_committed"})
    try:
        consumer.subscribe(["c-txn"])
        records = read(consumer, len(values))
    finally:
        consumer.close()
    assert records == [("c-txn", value) for value in values]


@pytest.mark.parametrize("group_read", [True, False], ids=["group-read", "no-group-read"])
def test_confluent_transaction_sends_offsets(gateway, group_read):
    """AddOffsetsToTxn and TxnOffsetCommit need READ on the group besides WRITE on the
    transactional id; refused, librdkafka raises GROUP_AUTHORIZATION_FAILED."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka import TopicPartition

    topic = f"c-txn-offsets-{group_read}"
    create_topics(gateway, topic)
    grant(gateway, "alice", ("TRANSACTIONAL_ID", f"{topic}-id", "WRITE"), ("TOPIC", topic, "WRITE"), ("TOPIC", topic, "READ"))
    if group_read:
        grant(gateway, "alice", ("GROUP", f"{topic}-group", "READ"))
    producer = confluent_kafka.Producer(confluent(gateway, "alice", **{"transactional.id": f"{topic}-id"}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, b"processed")
    group = consumer_of(gateway, "alice", f"{topic}-group")  # only for its group metadata: never subscribes
    try:
        offsets = [TopicPartition(topic, 0, 1)]
        if not group_read:
            with pytest.raises(confluent_kafka.KafkaException) as refused:
                producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), TIMEOUT)
            assert refused.value.args[0].code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
            return
        producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), TIMEOUT)
        producer.commit_transaction(TIMEOUT)
        [committed] = group.committed([TopicPartition(topic, 0)], TIMEOUT)
    finally:
        group.close()
    assert committed.offset == 1


@pytest.mark.parametrize("describe", [False, True], ids=["no-acl", "describe-only"])
def test_confluent_transaction_refused(gateway, describe):
    """Without DESCRIBE on the transactional id, FindCoordinator refuses it; with DESCRIBE but
    not WRITE, InitProducerId does. librdkafka makes either a fatal error of init_transactions."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = f"c-txn-refused-{describe}"
    create_topics(gateway, topic)
    grant(gateway, "alice", ("TOPIC", topic, "WRITE"))
    if describe:
        grant(gateway, "alice", ("TRANSACTIONAL_ID", f"{topic}-id", "DESCRIBE"))
    producer = confluent_kafka.Producer(confluent(gateway, "alice", **{"transactional.id": f"{topic}-id"}))
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        producer.init_transactions(TIMEOUT)
    error = refused.value.args[0]
    assert error.code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error.fatal()
    refused_by = "acquire transactional PID" if describe else "find transaction coordinator"
    assert refused_by in error.str()


def test_confluent_admin_create_topics(gateway):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    grant(gateway, "alice", ("TOPIC", "c-created", "CREATE"))
    alice = AdminClient(confluent(gateway, "alice"))
    futures = alice.create_topics([NewTopic("c-created", 2), NewTopic("c-not-created", 1)], operation_timeout=TIMEOUT)
    assert futures["c-created"].result(timeout=TIMEOUT) is None
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        futures["c-not-created"].result(timeout=TIMEOUT)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    topics = AdminClient(confluent(gateway, "admin")).list_topics(timeout=TIMEOUT).topics
    assert len(topics["c-created"].partitions) == 2
    assert "c-not-created" not in topics  # refused at the gateway: Tansu never heard of it


def test_confluent_list_topics_shows_what_may_be_described(gateway):
    pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    create_topics(gateway, "c-listed", "c-unlisted")
    grant(gateway, "alice", ("TOPIC", "c-listed", "DESCRIBE"))
    assert sorted(AdminClient(confluent(gateway, "alice")).list_topics(timeout=TIMEOUT).topics) == ["c-listed"]
    assert {"c-listed", "c-unlisted"} <= set(AdminClient(confluent(gateway, "admin")).list_topics(timeout=TIMEOUT).topics)


def test_confluent_regex_subscription_gets_the_topics_it_may_read(gateway):
    """librdkafka matches a regex against a Metadata listing of every topic, which the gateway
    cuts to what the caller may DESCRIBE: the topic bob may not read is never assigned.
    (No other test of this module names a topic ``orders*``.)"""
    pytest.importorskip("confluent_kafka")
    create_topics(gateway, "orders-eu", "orders-us")
    for topic in ("orders-eu", "orders-us"):
        assert deliver(gateway, "admin", topic, [f"{topic}-{n}".encode() for n in range(3)]) == [None] * 3
    grant(gateway, "bob", ("TOPIC", "orders-eu", "READ"), ("GROUP", "c-regex-group", "READ"))
    consumer = consumer_of(gateway, "bob", "c-regex-group")
    try:
        consumer.subscribe(["^orders.*"])
        records = read(consumer, 3)
        records += polled_for(consumer, 1.0)  # nothing more: no orders-us record, no error
        assignment = consumer.assignment()
    finally:
        consumer.close()
    assert sorted(records) == [("orders-eu", f"orders-eu-{n}".encode()) for n in range(3)]
    assert {partition.topic for partition in assignment} == {"orders-eu"}


# --------------------------------------------------------------------------- kafka-python


def kafka_python(gateway, user, **config):
    """kafka-python's settings logging ``user`` in with SCRAM-SHA-256 (aiokafka spells them alike)."""
    return {
        "bootstrap_servers": gateway.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORDS[user],
        "request_timeout_ms": 10_000,
        **config,
    }


def kafka_python_consumer(gateway, user, topic, group):
    kafka = pytest.importorskip("kafka")
    return kafka.KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", session_timeout_ms=FAST_GROUPS["session.timeout.ms"],
        heartbeat_interval_ms=1000, consumer_timeout_ms=TIMEOUT * 1000, **kafka_python(gateway, user),
    )


def test_kafka_python_produce_then_consume_when_allowed(gateway):
    """kafka-python 3 producers are idempotent by default: WRITE on the topic is enough (KIP-679)."""
    kafka = pytest.importorskip("kafka")
    create_topics(gateway, "kp-allowed")
    grant(gateway, "alice", ("TOPIC", "kp-allowed", "WRITE"))
    grant(gateway, "bob", ("TOPIC", "kp-allowed", "READ"), ("GROUP", "kp-allowed-group", "READ"))
    values = [f"kp-{n}".encode() for n in range(5)]
    producer = kafka.KafkaProducer(**kafka_python(gateway, "alice"))
    try:
        sent = [producer.send("kp-allowed", value).get(timeout=TIMEOUT) for value in values]
    finally:
        producer.close(timeout=5)
    assert [record.offset for record in sent] == list(range(5))

    consumer = kafka_python_consumer(gateway, "bob", "kp-allowed", "kp-allowed-group")
    received = []
    try:
        for record in consumer:  # ends after consumer_timeout_ms without records
            received.append(record.value)
            if len(received) == len(values):
                break
    finally:
        consumer.close()
    assert received == values


@pytest.mark.parametrize("describe", [False, True], ids=["no-acl", "describe-only"])
def test_kafka_python_produce_refused(gateway, describe):
    """Refused by Metadata (no ACL) or by Produce (DESCRIBE only): TopicAuthorizationFailedError
    from the send's future either way."""
    kafka = pytest.importorskip("kafka")
    from kafka.errors import TopicAuthorizationFailedError

    topic = f"kp-refused-{describe}"
    create_topics(gateway, topic)
    if describe:
        grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))
    producer = kafka.KafkaProducer(**kafka_python(gateway, "alice", enable_idempotence=False, max_block_ms=TIMEOUT * 1000))
    try:
        with pytest.raises(TopicAuthorizationFailedError) as refused:
            producer.send(topic, b"no").get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=5)
    assert refused.value.errno == 29 and topic in str(refused.value)


@pytest.mark.parametrize("writes_elsewhere", [False, True], ids=["no-write", "write-elsewhere"])
def test_kafka_python_idempotent_produce_refused(gateway, writes_elsewhere):
    """An idempotent producer first asks InitProducerId, which needs IDEMPOTENT_WRITE or WRITE on
    some topic (KIP-679): with neither it is CLUSTER_AUTHORIZATION_FAILED, which kafka-python
    wraps in a plain KafkaError; with WRITE on another topic, the Produce is what is refused."""
    kafka = pytest.importorskip("kafka")
    from kafka import errors

    topic = f"kp-idempotent-refused-{writes_elsewhere}"
    create_topics(gateway, topic)
    grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))
    if writes_elsewhere:
        grant(gateway, "alice", ("TOPIC", "kp-elsewhere", "WRITE"))
    producer = kafka.KafkaProducer(**kafka_python(gateway, "alice", enable_idempotence=True, max_block_ms=TIMEOUT * 1000))
    try:
        with pytest.raises(errors.KafkaError) as refused:
            producer.send(topic, b"no").get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=5)
    if writes_elsewhere:
        assert type(refused.value) is errors.TopicAuthorizationFailedError
    else:
        assert type(refused.value) is errors.KafkaError
        assert "InitProducerIdResponse" in str(refused.value) and "ClusterAuthorizationFailedError" in str(refused.value)


def test_kafka_python_consumer_refused_group(gateway):
    """FindCoordinator refuses the group: poll() raises GroupAuthorizationFailedError naming it."""
    pytest.importorskip("kafka")
    from kafka.errors import GroupAuthorizationFailedError

    create_topics(gateway, "kp-nogroup")
    grant(gateway, "bob", ("TOPIC", "kp-nogroup", "READ"))
    consumer = kafka_python_consumer(gateway, "bob", "kp-nogroup", "kp-nogroup-group")
    try:
        with pytest.raises(GroupAuthorizationFailedError) as refused:
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=200)
    finally:
        consumer.close()
    assert refused.value.errno == 30 and "kp-nogroup-group" in str(refused.value)


# --------------------------------------------------------------------------- aiokafka


def test_aiokafka_produce_then_consume_when_allowed(gateway):
    aiokafka = pytest.importorskip("aiokafka")
    create_topics(gateway, "aio-allowed")
    grant(gateway, "alice", ("TOPIC", "aio-allowed", "WRITE"))
    grant(gateway, "bob", ("TOPIC", "aio-allowed", "READ"), ("GROUP", "aio-allowed-group", "READ"))
    values = [f"aio-{n}".encode() for n in range(5)]

    async def produce():
        producer = aiokafka.AIOKafkaProducer(**kafka_python(gateway, "alice"))
        await producer.start()
        try:
            return [await producer.send_and_wait("aio-allowed", value) for value in values]
        finally:
            await producer.stop()

    async def consume():
        consumer = aiokafka.AIOKafkaConsumer(
            "aio-allowed", group_id="aio-allowed-group", auto_offset_reset="earliest",
            session_timeout_ms=FAST_GROUPS["session.timeout.ms"], heartbeat_interval_ms=1000, **kafka_python(gateway, "bob"),
        )
        await consumer.start()
        received = []
        try:
            async for record in consumer:
                received.append(record.value)
                if len(received) == len(values):
                    return received
        finally:
            await consumer.stop()

    async def scenario():
        return await asyncio.wait_for(produce(), TIMEOUT), await asyncio.wait_for(consume(), TIMEOUT)

    sent, received = asyncio.run(scenario())
    assert [record.offset for record in sent] == list(range(5))
    assert received == values


@pytest.mark.parametrize("describe", [False, True], ids=["no-acl", "describe-only"])
def test_aiokafka_produce_refused(gateway, describe):
    """Refused by Metadata (no ACL) or by Produce (DESCRIBE only): TopicAuthorizationFailedError."""
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.errors import TopicAuthorizationFailedError

    topic = f"aio-refused-{describe}"
    create_topics(gateway, topic)
    if describe:
        grant(gateway, "alice", ("TOPIC", topic, "DESCRIBE"))

    async def scenario():
        producer = aiokafka.AIOKafkaProducer(**kafka_python(gateway, "alice"))
        await producer.start()
        try:
            with pytest.raises(TopicAuthorizationFailedError) as refused:
                await asyncio.wait_for(producer.send_and_wait(topic, b"no"), TIMEOUT)
        finally:
            await producer.stop()
        return refused.value

    error = asyncio.run(scenario())
    assert error.errno == 29 and topic in str(error)
