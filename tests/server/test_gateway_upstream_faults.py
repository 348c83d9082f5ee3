"""The gateway over real sockets when the upstream misbehaves or a client borrows another's
producer: Tansu behind a recording tap (upstream_tap.py), the gateway in front of the tap.

- An answer carrying the wrong correlation id cannot be matched to its request: the gateway
  fails the link it came on, and so that client's connection, at once (the client must not
  wait for an answer that will never come), and goes on serving new connections.
- A producer id the upstream gave one transactional id may not write in another's transaction
  (Kafka's transaction coordinator answers INVALID_PRODUCER_ID_MAPPING; Tansu does not check):
  the gateway learns the ids from InitProducerId's answers and refuses such a Produce itself.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kafkasec.client import KafkaConnection
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.testing import free_port

from gateway_support import gateway_running, gateway_security
from record_batches import record_batch
from request_rules_support import acl, make
from server_support import PASSWORDS, add_users, open_security, run
from tansu_support import TansuBroker
from upstream_tap import UpstreamTap

ANSWER_TIMEOUT = 5
CLOSED_WITHIN = 2.0
"""Seconds within which a client whose answer cannot be given must see its connection end."""
POISONED_CLIENT = "poisoned-client"
TRANSACTION_TIMEOUT = 15


class WrongCorrelationIds:
    """The tap's answer filter: the answer to the first request of the client id ``POISONED_CLIENT``
    comes back with another correlation id, as from a broker that mixed up its answers. Once only:
    links number their requests alike, so a later connection's answer could match the same id."""

    def __init__(self):
        self.tap: UpstreamTap | None = None
        self.rewritten = threading.Event()

    def __call__(self, frame: bytes) -> bytes:
        correlation_id = frame[:4]
        poisoned = not self.rewritten.is_set() and any(
            tapped.request is not None and tapped.request.header.client_id == POISONED_CLIENT
            and tapped.frame[4:8] == correlation_id
            for tapped in self.tap.requests
        )
        if not poisoned:
            return frame
        self.rewritten.set()
        wrong = (int.from_bytes(correlation_id, "big") + 1000) & 0x7FFFFFFF
        return wrong.to_bytes(4, "big") + frame[4:]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """(gateway endpoint, tap, answer filter): every upstream connection of the gateway through the tap."""
    tap_port = free_port()
    rewrite = WrongCorrelationIds()
    with TansuBroker(advertised_port=tap_port) as tansu, \
            UpstreamTap(tansu.host, tansu.port, port=tap_port, answer_filter=rewrite) as tap:
        rewrite.tap = tap
        state = tmp_path_factory.mktemp("faults") / "state.db"
        with open_security(state) as security:
            add_users(security)
        with gateway_security(state, tap.bootstrap) as security, gateway_running(security) as endpoint:
            yield endpoint, tap, rewrite


async def _logged_in(endpoint, user: str, client_id: str) -> KafkaConnection:
    connection = await KafkaConnection.open(endpoint.host, endpoint.port, client_id=client_id)
    await connection.login("SCRAM-SHA-256", user, PASSWORDS[user])
    return connection


def _metadata():
    return make(wire.request_schema(ApiKey.METADATA, 12), {"topics": None, "allow_auto_topic_creation": False})


async def _how_the_poisoned_request_ends(endpoint) -> tuple[str, float]:
    """What the client of the poisoned connection sees for its Metadata request, and after how many seconds."""
    async with await _logged_in(endpoint, "admin", POISONED_CLIENT) as connection:
        started = time.monotonic()
        try:
            await asyncio.wait_for(connection.request(_metadata()), CLOSED_WITHIN * 2)
            outcome = "answered"
        except asyncio.TimeoutError:
            outcome = "hung"
        except (ConnectionError, asyncio.IncompleteReadError):
            outcome = "closed"
        return outcome, time.monotonic() - started


async def _metadata_answer(endpoint, user: str):
    async with await _logged_in(endpoint, user, f"{user}-client") as connection:
        return await asyncio.wait_for(connection.request(_metadata()), ANSWER_TIMEOUT)


def test_an_answer_with_the_wrong_correlation_id_closes_that_clients_connection_promptly(faulty):
    endpoint, _, rewrite = faulty

    outcome, seconds = run(_how_the_poisoned_request_ends(endpoint))

    assert rewrite.rewritten.is_set()
    assert outcome == "closed" and seconds < CLOSED_WITHIN, (outcome, seconds)
    assert run(_metadata_answer(endpoint, "admin")).brokers  # a new connection is served


# ---------------------------------------------------------------------- a producer id of another transaction


def _librdkafka(endpoint, user: str, **config) -> dict:
    return {"bootstrap.servers": endpoint.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": PASSWORDS[user], **config}


async def _produce(endpoint, user: str, client_id: str, body):
    async with await _logged_in(endpoint, user, client_id) as connection:
        return await asyncio.wait_for(connection.request(body), ANSWER_TIMEOUT)


def test_a_produce_with_the_producer_id_of_another_transactional_id_is_refused_and_never_forwarded(faulty):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    endpoint, tap, _ = faulty
    topic = "borrowed-producer"
    owner = confluent_kafka.Producer(_librdkafka(endpoint, "admin", **{"transactional.id": "owner-txn"}))
    owner.init_transactions(TRANSACTION_TIMEOUT)
    [owner_producer_id] = [pid for pid, txn in endpoint.gateway.producer_ids.items() if txn == "owner-txn"]
    endpoint.security.create_acls([acl("TOPIC", topic, "WRITE"), acl("TRANSACTIONAL_ID", "mine", "WRITE")])
    borrowed = record_batch([(b"k", b"in another's transaction")], producer_id=owner_producer_id, producer_epoch=0,
                            base_sequence=0, transactional=True)
    body = make(wire.request_schema(ApiKey.PRODUCE, 11), {
        "transactional_id": "mine", "acks": -1, "timeout": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": borrowed}, {"index": 1, "records": borrowed}]}]})

    answer = run(_produce(endpoint, "alice", "alice-borrower", body))

    assert {(t.name, p.index, p.error_code) for t in answer.responses for p in t.partition_responses} == {
        (topic, 0, KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING), (topic, 1, KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING)}
    assert not [tapped for tapped in tap.requests if tapped.request is not None
                and tapped.request.api_key == ApiKey.PRODUCE and tapped.request.header.client_id == "alice-borrower"]
