"""The gateway in front of a real broker (Tansu), at the protocol level over real sockets:
Kafka's rules per API, the versions offered, the addresses handed out, topic ids, order and
pipelining, and an upstream that breaks or lies."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import api_versions_response, kio_versions
from kafkasec.protocol.request_rules import INTER_BROKER_APIS, RULES
from kafkasec.server import KafkaConnection

from gateway_support import gateway_running, gateway_security
from record_batches import record_batch
from request_rules_support import AUTHORIZATION_ERRORS, CASES, GROUP, TOPIC, acl, error_codes, make
from server_support import logged_in, pipelined_answers, run

# Tansu closes the connection on these even when the request is allowed (a stub or a crash
# behind an advertised API); what the gateway decides about them is tested in the library tests.
_UPSTREAM_CLOSES = {ApiKey.END_TXN, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.JOIN_GROUP}


def _served_cases(gateway):
    ranges = gateway._api_handlers.ranges
    for case in CASES:
        if case.api not in ranges:
            continue
        low, high = ranges[case.api]
        version = min(case.at_version, high)
        if version >= low:
            yield case, version


async def _ask(endpoint, request, user="alice"):
    connection = await logged_in(endpoint, user)
    try:
        return await connection.request(request)
    finally:
        await connection.close()


def test_every_forwarded_api_refused_without_the_acls_and_allowed_with_them(gateway):
    cases = list(_served_cases(gateway))
    assert {case.api for case, _ in cases} >= {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
                                              ApiKey.FIND_COORDINATOR, ApiKey.INIT_PRODUCER_ID, ApiKey.CREATE_TOPICS}
    for case, version in cases:
        response = run(_ask(gateway, case.request(version)))
        if case.error:
            assert case.error in error_codes(response), (case.id, version, response)
    gateway.security.create_acls({grant for case, _ in cases for grant in case.grants})
    for case, version in cases:
        if case.api in _UPSTREAM_CLOSES:
            continue
        response = run(_ask(gateway, case.request(version)))
        assert not error_codes(response) & AUTHORIZATION_ERRORS, (case.id, version, response)


def test_api_versions_offer_what_both_kafkasec_and_the_upstream_speak(gateway, tansu):
    async def versions():
        connection = await KafkaConnection.open(gateway.host, gateway.port)
        async with connection:
            return await connection.negotiate()

    offered = run(versions())
    assert offered[ApiKey.PRODUCE] == (3, 11)  # kio from v3, Tansu up to v11
    assert offered[ApiKey.FETCH][1] == 17
    for api in (ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_PRODUCERS,
                ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.DELETE_RECORDS):
        assert api not in offered  # Tansu does not list them, or closes on them (DeleteRecords)
    assert offered[ApiKey.CREATE_ACLS] == kio_versions(ApiKey.CREATE_ACLS)  # answered by kafkasec itself
    assert not set(offered) & INTER_BROKER_APIS
    assert set(offered) <= set(RULES) | {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                                         ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_ACLS,
                                         ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                                         ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                                         ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN}


def test_acls_are_kafkasecs_own_never_the_upstreams(gateway):
    request = make(wire.request_schema(ApiKey.CREATE_ACLS, 3), {"creations": [{
        "resource_type": 2, "resource_name": "orders", "resource_pattern_type": 3, "principal": "User:dave",
        "host": "*", "operation": 3, "permission_type": 3}]})
    answer = run(_ask(gateway, request, "admin"))
    assert [int(r.error_code) for r in answer.results] == [0]
    assert [str(b.entry.principal) for b in gateway.security.acls()] == ["User:dave"]


def _metadata(topics=None, version=12):
    return make(wire.request_schema(ApiKey.METADATA, version), {"topics": topics, "allow_auto_topic_creation": False})


def test_metadata_names_the_gateways_listeners_and_only_the_topics_the_caller_may_describe(gateway, tansu):
    create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
        {"name": name, "num_partitions": 2, "replication_factor": 1} for name in ("meta-public", "meta-secret")]})
    run(_ask(gateway, create, "admin"))
    gateway.security.create_acls([acl("TOPIC", "meta-public", "DESCRIBE")])
    answer = run(_ask(gateway, _metadata()))
    [broker] = answer.brokers
    listener = gateway.broker_listeners[broker.node_id]
    assert (broker.host, broker.port) == (listener.host, listener.port) != (tansu.host, tansu.port)
    assert [t.name for t in answer.topics] == ["meta-public"]
    # Named: refused before its existence is looked at.
    named = run(_ask(gateway, _metadata([{"name": "meta-secret"}, {"name": "meta-missing"}])))
    assert {t.name: int(t.error_code) for t in named.topics} == {"meta-secret": 29, "meta-missing": 29}
    # FindCoordinator's node is the gateway's too.
    find = make(wire.request_schema(ApiKey.FIND_COORDINATOR, 3), {"key": "any-group", "key_type": 0})
    gateway.security.create_acls([acl("GROUP", "any-group", "DESCRIBE")])
    coordinator = run(_ask(gateway, find))
    assert (coordinator.host, coordinator.port) == (listener.host, listener.port)


def test_a_connection_to_a_brokers_listener_is_carried_to_that_broker(gateway):
    [listener] = gateway.broker_listeners.values()
    answer = run(_ask(listener, _metadata(), "admin"))
    assert [b.port for b in answer.brokers] == [listener.port]


def test_produce_and_fetch_by_topic_id_are_authorized_by_the_upstreams_names(gateway, tansu):
    create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [{"name": "by-id", "num_partitions": 1, "replication_factor": 1}]})
    [created] = run(_ask(gateway, create, "admin")).topics
    topic_id = created.topic_id
    gateway.gateway.topic_names.clear()  # as if the gateway had never seen it: it asks the upstream
    fetch = make(wire.request_schema(ApiKey.FETCH, 17), {"max_wait": 0, "min_bytes": 0, "topics": [
        {"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}]})
    refused = run(_ask(gateway, fetch))
    assert error_codes(refused) == {29}
    gateway.security.create_acls([acl("TOPIC", "by-id", "READ")])
    assert not error_codes(run(_ask(gateway, fetch)))
    assert gateway.gateway.topic_names[topic_id] == "by-id"


def test_pipelined_requests_are_answered_in_order(gateway):
    gateway.security.create_acls([acl("TOPIC", TOPIC, "DESCRIBE"), acl("GROUP", GROUP, "DESCRIBE")])

    async def pipelined():
        connection = await logged_in(gateway, "alice")
        reader, writer = connection.streams()
        frames = []
        for index in range(40):
            body = _metadata([{"name": TOPIC}]) if index % 2 else make(wire.request_schema(ApiKey.DESCRIBE_GROUPS, 5), {"groups": [GROUP]})
            frames.append((body, 1000 + index))
            writer.write(wire.size_prefixed(wire.encode_request(body, correlation_id=1000 + index, client_id="pipe")))
        await writer.drain()
        answered = []
        for body, _ in frames:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            frame = await reader.readexactly(size)
            answered_id, _ = wire.decode_response(frame, body.__api_key__, body.__version__)
            answered.append(answered_id)
        await connection.close()
        return answered

    assert run(pipelined()) == list(range(1000, 1040))


def test_answers_made_in_different_places_still_go_back_in_the_order_of_the_requests(gateway, tansu):
    # Forwarded requests are answered when the upstream answers, refusals at once, the ACL APIs
    # on kafkasec's threads and ApiVersions on the loop: pipelined together, they must still be
    # answered in the order they were sent (Kafka's clients match answers to requests by order).
    gateway.security.create_acls([acl("TOPIC", TOPIC, "DESCRIBE"), acl("TOPIC", TOPIC, "WRITE"), acl("TOPIC", TOPIC, "CREATE")])
    every_acl = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                 "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}

    def produce(topic: str):
        schema = wire.request_schema(ApiKey.PRODUCE, 9)
        return make(schema, {"acks": 1, "timeout": 30_000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": record_batch([(None, b"v")])}]}]})

    kinds = [
        lambda: _metadata([{"name": TOPIC}]),  # forwarded (and creates the topic: alice may CREATE it)
        lambda: produce("not-hers"),  # refused here, answered at once
        lambda: make(wire.request_schema(ApiKey.DESCRIBE_ACLS, 3), every_acl),  # kafkasec's, on a thread
        lambda: produce(TOPIC),  # forwarded
        lambda: make(wire.request_schema(ApiKey.API_VERSIONS, 3), {"client_software_name": "t", "client_software_version": "1"}),
    ]

    bodies = [kinds[index % len(kinds)]() for index in range(50)]
    answered = [(answered_id, body.__api_key__, answer)
                for body, (answered_id, answer) in zip(bodies, run(pipelined_answers(gateway, "alice", bodies, 2000)))]
    assert [answer_id for answer_id, _, _ in answered] == list(range(2000, 2050))
    refused = [answer for _, api_key, answer in answered[1::5]]
    assert all(answer.responses[0].partition_responses[0].error_code == 29 for answer in refused)
    assert all(answer.error_code == 31 for _, _, answer in answered[2::5])  # alice may not DESCRIBE ACLs: CLUSTER_AUTHORIZATION_FAILED


def test_an_api_key_nobody_knows_closes_only_that_connection(gateway):
    async def unknown_then_known():
        connection = await logged_in(gateway, "admin")
        reader, writer = connection.streams()
        writer.write(wire.size_prefixed(struct.pack(">hhih", 10000, 0, 7, 0)))
        await writer.drain()
        assert await reader.read(4) == b""  # closed, as a Kafka broker closes it
        await connection.close()
        return await _ask(gateway, _metadata(), "admin")

    assert run(unknown_then_known()).brokers


def test_an_acks_zero_produce_is_answered_by_nothing_and_a_refused_one_closes_the_connection(gateway, tansu):
    produce = make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 0, "timeout": 1000, "topic_data": [
        {"name": "acks-zero", "partition_data": [{"index": 0, "records": record_batch()}]}]})

    async def send(user):
        connection = await logged_in(gateway, user)
        reader, writer = connection.streams()
        writer.write(wire.size_prefixed(wire.encode_request(produce, correlation_id=5, client_id="z")))
        after = _metadata([{"name": "acks-zero"}])
        writer.write(wire.size_prefixed(wire.encode_request(after, correlation_id=6, client_id="z")))
        await writer.drain()
        head = await reader.read(4)
        if not head:
            return None
        (size,) = struct.unpack(">i", head)
        answered_id, _ = wire.decode_response(await reader.readexactly(size), ApiKey.METADATA, 12)
        await connection.close()
        return answered_id

    assert run(send("admin")) == 6  # the Metadata's answer is the first: Tansu's answer to acks=0 was dropped
    assert run(send("alice")) is None


# ---------------------------------------------------------------------- a hostile or broken upstream


class FakeUpstream:
    """A broker that answers ApiVersions and Metadata as Kafka does, then misbehaves with
    ``mode`` on every other request: 'garbage', 'huge', 'silent' or 'close'."""

    def __init__(self, mode: str, extra_apis=None):
        self.mode = mode
        self.apis = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 12), ApiKey.LIST_GROUPS: (0, 4), **(extra_apis or {})}
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._threads: list[threading.Thread] = []
        self._stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._stopping:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            thread.start()

    def _serve(self, connection):
        with connection:
            while True:
                head = connection.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                frame = connection.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                api_key, version = wire.peek_api(frame)
                correlation_id = struct.unpack(">i", frame[4:8])[0]
                if api_key == ApiKey.API_VERSIONS:
                    body = api_versions_response(min(version, 3), self.apis)
                elif api_key == ApiKey.METADATA:
                    schema = wire.response_schema(ApiKey.METADATA, version)
                    body = make(schema, {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port}], "controller_id": 1})
                elif self.mode == "garbage":
                    connection.sendall(struct.pack(">i", 12) + struct.pack(">i", correlation_id) + b"\xff" * 8)
                    continue
                elif self.mode == "huge":
                    connection.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 64)
                    continue
                elif self.mode == "silent":
                    time.sleep(30)
                    return
                else:
                    return
                connection.sendall(wire.size_prefixed(wire.encode_response(body, correlation_id=correlation_id)))

    def close(self):
        self._stopping = True
        self.sock.close()


@pytest.mark.parametrize("mode", ["garbage", "huge", "silent", "close"])
def test_a_broken_upstream_closes_the_clients_connection_and_the_gateway_serves_on(server_state, mode):
    upstream = FakeUpstream(mode)
    list_groups = make(wire.request_schema(ApiKey.LIST_GROUPS, 4), {})
    try:
        with gateway_security(server_state, upstream.bootstrap, **{"kafkasec.upstream.request.timeout.ms": "500"}) as security, \
                gateway_running(security) as gateway:
            for _ in range(3):  # each time: that client's connection closes; the next is served
                started = time.monotonic()
                with pytest.raises(ConnectionError):
                    # alice's answer is read by the gateway (cut to the groups she may see)
                    run(_ask(gateway, list_groups, "alice"))
                assert time.monotonic() - started < 5
                assert run(_ask(gateway, _metadata(), "admin")).brokers
    finally:
        upstream.close()


def test_an_api_key_the_upstream_lists_and_nobody_knows_is_not_offered(server_state):
    """A broker newer than kio (or a fork) lists API keys kafkasec has no schema or rule for:
    the gateway starts, offers what it can authorize, and leaves the rest out (Kroxylicious
    crashed on key 10000 from the cluster it fronted)."""
    upstream = FakeUpstream("close", extra_apis={10000: (0, 3), 93: (0, 1), ApiKey.FETCH: (4, 99)})
    try:
        with gateway_security(server_state, upstream.bootstrap) as security, gateway_running(security) as gateway:
            async def offered():
                async with await KafkaConnection.open(gateway.host, gateway.port) as connection:
                    return await connection.negotiate()

            versions = run(offered())
            assert 10000 not in versions and 93 not in versions
            assert versions[ApiKey.FETCH] == (4, kio_versions(ApiKey.FETCH)[1])  # not beyond what kio reads
            assert versions[ApiKey.METADATA] == (0, 12)
    finally:
        upstream.close()


def test_the_gateway_starts_only_with_an_upstream_that_answers(server_state):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    from kafkasec.server.upstream import UpstreamError

    with gateway_security(server_state, f"127.0.0.1:{port}") as security:
        with pytest.raises(UpstreamError, match=f"127.0.0.1:{port} unreachable"):
            with gateway_running(security):
                pass


@pytest.mark.slow
def test_the_upstream_killed_and_restarted_under_a_producer(server_state, tansu):
    """A broker that dies gives the producer retriable errors (its connections close) and the
    gateway connects again once it is back; what the gateway acknowledged, the broker had
    acknowledged (Tansu's memory storage loses what it had, so what is checked is that every
    record acknowledged after the restart is in the broker, read straight from it)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with gateway_security(server_state, tansu.bootstrap) as security, gateway_running(security) as gateway:
        security.create_acls([acl("TOPIC", "restarts", "ALL")])
        acked, failed = [], []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": gateway.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": "alice-secret", "linger.ms": 5, "message.timeout.ms": 30000,
            "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 100,
        })

        def report(error, message):
            (failed if error else acked).append((message.value(), error))

        deadline = time.monotonic() + 60
        for index in range(600):
            if index == 200:
                producer.flush(10)
                tansu.kill()
                killed_at = len(acked)
                threading.Timer(1.0, tansu.restart).start()
            producer.produce("restarts", value=str(index).encode(), on_delivery=report)
            producer.poll(0)
            time.sleep(0.005)
        assert producer.flush(max(deadline - time.monotonic(), 1)) == 0
        assert not [e for _, e in failed if not e.retriable()], failed
        after = {value for value, _ in acked[killed_at:]}
        assert len(acked) + len(failed) == 600 and len(after) >= 300

    consumer = confluent_kafka.Consumer({"bootstrap.servers": tansu.bootstrap, "group.id": "restarts-check",
                                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    partitions = consumer.list_topics("restarts", timeout=10).topics["restarts"].partitions
    consumer.assign([confluent_kafka.TopicPartition("restarts", p, 0) for p in partitions])
    stored, end = set(), time.monotonic() + 20
    while not after <= stored and time.monotonic() < end:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            stored.add(message.value())
    consumer.close()
    assert after <= stored


def test_the_gateways_own_metadata_request_learns_ids_and_brokers(gateway, tansu):
    async def refresh():
        link = await gateway.gateway.connect()
        try:
            await gateway.gateway.refresh(link)
        finally:
            await link.close()

    run(refresh())
    assert gateway.gateway.brokers == {111: (tansu.host, tansu.port)}


def test_a_refused_login_never_reaches_the_upstream(gateway):
    async def wrong_password():
        connection = await KafkaConnection.open(gateway.host, gateway.port)
        async with connection:
            await connection.login("SCRAM-SHA-256", "alice", "wrong")

    from kafkasec.errors import SaslAuthenticationError

    with pytest.raises(SaslAuthenticationError):
        run(wrong_password())
