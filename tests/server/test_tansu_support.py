"""tansu_support's broker is a real Kafka broker to confluent-kafka, and restarts on its own address."""

import socket

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import tansu_support  # noqa: E402
from tansu_support import TansuBroker  # noqa: E402

TIMEOUT = 15


def create_topic(broker, name, partitions):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT)


def produce(broker, topic, values):
    """``values`` with acks=all, each to partition ``index % 3``; every delivery must succeed."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    failures = []
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % 3,
                         on_delivery=lambda error, _message: error and failures.append(error))
    assert producer.flush(TIMEOUT) == 0
    assert failures == []


def consume(broker, topic, partitions, count):
    """``count`` values read from the start of each partition, assigned (Tansu's group join
    waits half the session timeout; assignment does not)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "tansu-support", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in range(partitions)])
    values = []
    try:
        for _ in range(TIMEOUT * 10):
            if len(values) == count:
                break
            message = consumer.poll(0.1)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_it_starts_on_another_free_port_when_the_one_it_picked_is_taken(monkeypatch):
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    picks = iter([taken])
    real_free_port = tansu_support.free_port
    monkeypatch.setattr(tansu_support, "free_port", lambda: next(picks, None) or real_free_port())
    with squatter, TansuBroker() as broker:
        assert broker.running and broker.port != taken
        assert broker.bootstrap == f"127.0.0.1:{broker.port}" and broker.host == "127.0.0.1"
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=TIMEOUT)
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", broker.port)]
        assert "AddrInUse" in broker.log_path.read_text()  # the first attempt, in the broker's log
    assert broker.process.poll() is not None and not broker.directory.exists()


def test_confluent_kafka_creates_a_topic_produces_and_consumes():
    values = [b"record-%d" % index for index in range(30)]
    with TansuBroker() as broker:
        create_topic(broker, "orders", 3)
        produce(broker, "orders", values)
        assert sorted(consume(broker, "orders", 3, len(values))) == sorted(values)


def test_restart_comes_back_on_the_same_port_and_empty():
    with TansuBroker() as broker:
        port = broker.port
        create_topic(broker, "before", 3)
        produce(broker, "before", [b"lost"] * 3)
        broker.kill()
        assert broker.process.returncode == -9 and not broker.running
        broker.restart()
        assert broker.running and broker.port == port
        # Memory storage: the restarted broker knows nothing of the topic (see tansu_support).
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=TIMEOUT)
        assert "before" not in metadata.topics
        create_topic(broker, "after", 3)
        produce(broker, "after", [b"kept-%d" % index for index in range(9)])
        assert len(consume(broker, "after", 3, 9)) == 9
        broker.restart()  # from running: stopped, then started again on the same port
        assert broker.port == port and broker.running
