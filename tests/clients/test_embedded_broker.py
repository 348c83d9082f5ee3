"""examples/embedded_broker.py, the broker docs/embedding.md walks through, with three Kafka clients.

alice may write and read ``orders`` and commit for the group ``billing``; she may only DESCRIBE
``payments``, so her clients find it in Metadata and send real Produce and Fetch requests, which
SecureConnection refuses TOPIC_AUTHORIZATION_FAILED; the group ``reports`` is not hers
(GROUP_AUTHORIZATION_FAILED). Users and passwords are server_support's; ``admin`` is a super user.
"""

import asyncio
import contextlib
import datetime
import time

import pytest

from kafkasec import AclBinding
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

from embedded_broker import EmbeddedBroker
from record_batches import record_batch
from server_support import PASSWORDS, logged_in, run

TIMEOUT = 10
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
ALICE_ACLS = [
    *(AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", operation, "ALLOW") for operation in ("WRITE", "READ")),
    AclBinding.of("TOPIC", "payments", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"),
    AclBinding.of("GROUP", "billing", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
]
VALUES = [f"order-{number}".encode() for number in range(5)]


@pytest.fixture
def broker(server_security):
    server_security.create_acls(ALICE_ACLS)
    with EmbeddedBroker(server_security, topics=("orders", "payments", "audit")).running_in_thread() as broker:
        yield broker


def committed_offset(broker, group="billing", topic="orders"):
    return broker.offsets.get((group, topic, 0), (None, None))[0]


# ---------------------------------------------------------------------------------------------- confluent-kafka


def confluent_config(broker, user="alice", password=None, mechanism="SCRAM-SHA-256", **extra):
    return {
        "bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": user, "sasl.password": PASSWORDS[user] if password is None else password, **extra,
    }


def confluent_messages(consumer, count):
    """``count`` messages, or the first error the consumer reports."""
    messages, deadline = [], time.monotonic() + TIMEOUT
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            if message.error():
                return message.error()
            messages.append(message)
    return messages


def test_confluent_produces_consumes_and_commits(broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(confluent_config(broker, mechanism="SCRAM-SHA-512"))
    for value in VALUES:
        producer.produce("orders", value)
    assert producer.flush(TIMEOUT) == 0
    consumer = confluent_kafka.Consumer(confluent_config(
        broker, **{"group.id": "billing", "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    try:
        assert sorted(consumer.list_topics(timeout=TIMEOUT).topics) == ["orders", "payments"]  # audit: no DESCRIBE
        consumer.subscribe(["orders"])
        messages = confluent_messages(consumer, len(VALUES))
        assert [message.value() for message in messages] == VALUES
        assert [message.offset() for message in messages] == list(range(len(VALUES)))
        [committed] = consumer.commit(asynchronous=False)
        assert committed.error is None and committed.offset == len(VALUES)
        assert [tp.offset for tp in consumer.committed([confluent_kafka.TopicPartition("orders", 0)], timeout=TIMEOUT)] == [5]
    finally:
        consumer.close()
    assert committed_offset(broker) == len(VALUES)


def test_confluent_produce_and_fetch_refused(broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    reports = []
    producer = confluent_kafka.Producer(confluent_config(broker))
    producer.produce("payments", b"not alice's", on_delivery=lambda error, _message: reports.append(error))
    assert producer.flush(TIMEOUT) == 0
    assert [error.code() for error in reports] == [confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert broker.logs["payments"].end_offset == 0

    consumer = confluent_kafka.Consumer(confluent_config(broker, **{"group.id": "billing"}))
    try:
        consumer.assign([confluent_kafka.TopicPartition("payments", 0, 0)])
        refused = confluent_messages(consumer, 1)
        assert refused.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_confluent_refused_group(broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    consumer = confluent_kafka.Consumer(confluent_config(broker, **{"group.id": "reports"}))
    try:
        consumer.subscribe(["orders"])
        refused = confluent_messages(consumer, 1)
        assert refused.code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    assert "reports" not in broker.groups  # refused before the broker saw it


def test_confluent_create_topics_needs_create(broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    as_alice, as_admin = AdminClient(confluent_config(broker)), AdminClient(confluent_config(broker, "admin"))  # held: a collected client cancels its futures
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        as_alice.create_topics([NewTopic("invoices", 1)])["invoices"].result(timeout=TIMEOUT)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert as_admin.create_topics([NewTopic("invoices", 1)])["invoices"].result(timeout=TIMEOUT) is None
    assert "invoices" in broker.logs


def test_confluent_wrong_password_then_the_broker_serves_others(broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    errors = []
    refused = confluent_kafka.Producer(confluent_config(broker, password="not-the-password", error_cb=errors.append))
    refused.produce("orders", b"never sent")
    refused.flush(2)
    assert confluent_kafka.KafkaError._AUTHENTICATION in {error.code() for error in errors}
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in next(
        error.str() for error in errors if error.code() == confluent_kafka.KafkaError._AUTHENTICATION)
    producer = confluent_kafka.Producer(confluent_config(broker))
    producer.produce("orders", b"sent")
    assert producer.flush(TIMEOUT) == 0
    assert broker.logs["orders"].end_offset == 1


# ---------------------------------------------------------------------------------------------- kafka-python


def kafka_python_config(broker, user="alice", password=None, mechanism="SCRAM-SHA-256"):
    """A kafka-python client's settings; aiokafka takes the same names."""
    return {
        "bootstrap_servers": broker.bootstrap, "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
        "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user] if password is None else password,
        "request_timeout_ms": TIMEOUT * 1000,
    }


@contextlib.contextmanager
def closing(client):
    try:
        yield client
    finally:
        client.close()


def test_kafka_python_produces_consumes_and_commits(broker):
    kafka = pytest.importorskip("kafka")
    # Idempotent by default: InitProducerId, then Produce with a producer id.
    with closing(kafka.KafkaProducer(**kafka_python_config(broker))) as producer:
        sent = [producer.send("orders", value) for value in VALUES]
        assert [future.get(timeout=TIMEOUT).offset for future in sent] == list(range(len(VALUES)))
    with closing(kafka.KafkaConsumer("orders", group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False,
                                     consumer_timeout_ms=TIMEOUT * 1000, **kafka_python_config(broker))) as consumer:
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == len(VALUES):
                break
        assert values == VALUES
        consumer.commit()
        assert consumer.committed(kafka.TopicPartition("orders", 0)) == len(VALUES)
    assert committed_offset(broker) == len(VALUES)


def test_kafka_python_produce_and_fetch_refused(broker):
    kafka = pytest.importorskip("kafka")
    from kafka.errors import TopicAuthorizationFailedError

    with closing(kafka.KafkaProducer(**kafka_python_config(broker))) as producer:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("payments", b"not alice's").get(timeout=TIMEOUT)
    assert broker.logs["payments"].end_offset == 0
    with closing(kafka.KafkaConsumer(**kafka_python_config(broker))) as consumer:
        payments = kafka.TopicPartition("payments", 0)
        consumer.assign([payments])
        consumer.seek(payments, 0)
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.poll(timeout_ms=TIMEOUT * 1000)


def test_kafka_python_refused_group(broker):
    kafka = pytest.importorskip("kafka")
    from kafka.errors import GroupAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata

    with closing(kafka.KafkaConsumer(group_id="reports", enable_auto_commit=False, **kafka_python_config(broker))) as consumer:
        orders = kafka.TopicPartition("orders", 0)
        consumer.assign([orders])
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.commit({orders: OffsetAndMetadata(1, "", -1)})
    assert committed_offset(broker, "reports") is None


def test_kafka_python_wrong_password_then_the_broker_serves_others(broker, caplog):
    kafka = pytest.importorskip("kafka")
    from kafka.errors import KafkaTimeoutError

    # kafka-python gives up bootstrapping with a timeout. It logs the server's refusal when it
    # read it before the close; a close that meets bytes the client sent meanwhile resets the
    # connection, and the refusal is lost with it (the sans-I/O tests check the answer itself).
    with pytest.raises(KafkaTimeoutError):
        kafka.KafkaProducer(**kafka_python_config(broker, password="not-the-password"), bootstrap_timeout_ms=2000)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in caplog.text or "disconnected" in caplog.text
    with closing(kafka.KafkaProducer(**kafka_python_config(broker))) as producer:
        assert producer.send("orders", b"sent").get(timeout=TIMEOUT).offset == 0


# ---------------------------------------------------------------------------------------------- aiokafka


@contextlib.asynccontextmanager
async def started(client):
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


def test_aiokafka_produces_consumes_and_commits(broker):
    aiokafka = pytest.importorskip("aiokafka")

    async def scenario():
        async with started(aiokafka.AIOKafkaProducer(**kafka_python_config(broker, mechanism="SCRAM-SHA-512"))) as producer:
            offsets = [(await producer.send_and_wait("orders", value)).offset for value in VALUES]
        consumer = aiokafka.AIOKafkaConsumer("orders", group_id="billing", auto_offset_reset="earliest",
                                             enable_auto_commit=False, **kafka_python_config(broker))
        async with started(consumer):
            values = [(await asyncio.wait_for(consumer.getone(), TIMEOUT)).value for _ in VALUES]
            await consumer.commit()
            committed = await consumer.committed(aiokafka.TopicPartition("orders", 0))
        return offsets, values, committed

    offsets, values, committed = run(scenario())
    assert offsets == list(range(len(VALUES))) and values == VALUES and committed == len(VALUES)
    assert committed_offset(broker) == len(VALUES)


def test_aiokafka_produce_and_fetch_refused(broker):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.errors import TopicAuthorizationFailedError

    async def scenario():
        async with started(aiokafka.AIOKafkaProducer(**kafka_python_config(broker))) as producer:
            with pytest.raises(TopicAuthorizationFailedError):
                await producer.send_and_wait("payments", b"not alice's")
        async with started(aiokafka.AIOKafkaConsumer(**kafka_python_config(broker))) as consumer:
            payments = aiokafka.TopicPartition("payments", 0)
            consumer.assign([payments])
            consumer.seek(payments, 0)
            with pytest.raises(TopicAuthorizationFailedError):
                await asyncio.wait_for(consumer.getone(), TIMEOUT)

    run(scenario())
    assert broker.logs["payments"].end_offset == 0


def test_aiokafka_refused_group(broker):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.errors import GroupAuthorizationFailedError

    async def scenario():
        consumer = aiokafka.AIOKafkaConsumer(group_id="reports", enable_auto_commit=False, **kafka_python_config(broker))
        async with started(consumer):
            orders = aiokafka.TopicPartition("orders", 0)
            consumer.assign([orders])
            with pytest.raises(GroupAuthorizationFailedError):
                await consumer.commit({orders: 1})

    run(scenario())
    assert committed_offset(broker, "reports") is None


def test_aiokafka_wrong_password_then_the_broker_serves_others(broker, caplog):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.errors import KafkaConnectionError

    async def scenario():
        refused = aiokafka.AIOKafkaProducer(**kafka_python_config(broker, password="not-the-password"))
        with pytest.raises(KafkaConnectionError):
            await refused.start()
        await refused.stop()
        async with started(aiokafka.AIOKafkaProducer(**kafka_python_config(broker))) as producer:
            return (await producer.send_and_wait("orders", b"sent")).offset

    assert run(scenario()) == 0
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in caplog.text  # aiokafka logs the refusal


# ---------------------------------------------------------------------------------------------- raw requests


def test_a_raw_produce_is_authorized_per_topic(broker):
    """One Produce to a topic alice may write and one she may not: the first is appended, the
    second answered TOPIC_AUTHORIZATION_FAILED beside it, in one response."""
    schema = wire.request_schema(ApiKey.PRODUCE, 9)
    topic_type = wire.item_type(schema, "topic_data")
    partition_type = wire.item_type(topic_type, "partition_data")
    request = wire.build(schema, acks=-1, timeout=datetime.timedelta(seconds=TIMEOUT), topic_data=tuple(
        wire.build(topic_type, name=name, partition_data=(wire.build(partition_type, index=0, records=record_batch()),))
        for name in ("orders", "payments")
    ))

    async def scenario():
        async with await logged_in(broker, "alice") as connection:
            return await connection.request(request)

    response = run(scenario())
    answers = {topic.name: topic.partition_responses[0] for topic in response.responses}
    assert {name: int(answer.error_code) for name, answer in answers.items()} == {
        "orders": 0, "payments": TOPIC_AUTHORIZATION_FAILED}
    assert (answers["orders"].base_offset, answers["payments"].base_offset) == (0, -1)
    assert (broker.logs["orders"].end_offset, broker.logs["payments"].end_offset) == (1, 0)


def test_a_produce_with_acks_0_is_carried_out_and_not_answered(broker):
    """The broker sends nothing for acks=0: the next answer on the connection is the next request's."""
    schema = wire.request_schema(ApiKey.PRODUCE, 9)
    topic_type = wire.item_type(schema, "topic_data")
    partition = wire.build(wire.item_type(topic_type, "partition_data"), index=0, records=record_batch())
    request = wire.build(schema, acks=0, timeout=datetime.timedelta(seconds=TIMEOUT),
                         topic_data=(wire.build(topic_type, name="orders", partition_data=(partition,)),))

    async def scenario():
        async with await logged_in(broker, "alice") as connection:
            _, writer = connection.streams()
            writer.write(wire.size_prefixed(wire.encode_request(request, correlation_id=1000, client_id="raw")))
            # KafkaConnection.request checks the correlation id of the answer it reads.
            return await connection.request(wire.build(wire.request_schema(ApiKey.METADATA, 12), topics=None))

    metadata = run(scenario())
    assert sorted(topic.name for topic in metadata.topics) == ["orders", "payments"]
    assert broker.logs["orders"].end_offset == 1


def test_a_raw_fetch_by_topic_id_is_authorized(broker):
    """Fetch v13+ names topics by id: SecureConnection reads them through the broker's topic_names."""
    broker.logs["payments"].append(record_batch())
    schema = wire.request_schema(ApiKey.FETCH, 16)
    topic_type = wire.item_type(schema, "topics")
    partition_type = wire.item_type(topic_type, "partitions")
    request = wire.build(schema, max_bytes=2**20, topics=tuple(
        wire.build(topic_type, topic_id=broker.logs[name].topic_id, partitions=(
            wire.build(partition_type, partition=0, fetch_offset=0, partition_max_bytes=2**20),))
        for name in ("orders", "payments")
    ))

    async def scenario():
        async with await logged_in(broker, "alice") as connection:
            return await connection.request(request)

    response = run(scenario())
    names = {topic_id: name for name, topic_id in ((n, broker.logs[n].topic_id) for n in broker.logs)}
    answers = {names[topic.topic_id]: topic.partitions[0] for topic in response.responses}
    assert int(answers["orders"].error_code) == 0 and answers["orders"].high_watermark == 0
    assert int(answers["payments"].error_code) == TOPIC_AUTHORIZATION_FAILED
    assert answers["payments"].high_watermark == -1 and not answers["payments"].records


def test_metadata_creates_topics_for_who_may_create_them(server_security):
    """With auto_create_topics, Metadata makes the topics it names, only for a caller with CREATE:
    for alice (no CREATE, no DESCRIBE on it) SecureConnection answers TOPIC_AUTHORIZATION_FAILED."""
    server_security.create_acls(ALICE_ACLS)
    metadata = wire.request_schema(ApiKey.METADATA, 12)

    async def ask(broker, user, topic):
        request = wire.build(metadata, allow_auto_topic_creation=True,
                             topics=(wire.build(wire.item_type(metadata, "topics"), name=topic),))
        async with await logged_in(broker, user) as connection:
            [answer] = (await connection.request(request)).topics
            return int(answer.error_code)

    with EmbeddedBroker(server_security, auto_create_topics=True).running_in_thread() as broker:
        assert run(ask(broker, "alice", "invoices")) == TOPIC_AUTHORIZATION_FAILED
        assert "invoices" not in broker.logs
        assert run(ask(broker, "admin", "invoices")) == 0
        assert "invoices" in broker.logs


def test_security_off_serves_plaintext_clients():
    """The benchmark's baseline (security=None): the same broker, over PLAINTEXT, nothing checked."""
    kafka = pytest.importorskip("kafka")
    with EmbeddedBroker(None, topics=("orders",)).running_in_thread() as broker:
        with closing(kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)) as producer:
            assert producer.send("orders", b"unchecked").get(timeout=TIMEOUT).offset == 0
        with closing(kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                                         consumer_timeout_ms=TIMEOUT * 1000)) as consumer:
            consumer.assign([kafka.TopicPartition("orders", 0)])
            assert next(iter(consumer)).value == b"unchecked"
