"""SecureConnection sans I/O: a client's bytes in, Send/Close/Handle events out, no sockets.

The SCRAM client is scramp's (an RFC 5802 client nobody here wrote); requests are kio bodies
encoded as a client writes them; answers are decoded with wire.decode_response.
"""

import datetime
import logging
import struct
import time
import uuid

import pytest
import scramp
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID
from kio.schema.request_header.v2.header import RequestHeader
from kio.static.primitive import i16, i32

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import kio_versions
from kafkasec.protocol.request_rules import CONNECTION_APIS, SECURITY_APIS, client_api_versions
from kafkasec.server import Close, Handle, SecureConnection, Send

from certificates import A, self_signed
from record_batches import record_batch
from request_rules_support import acl, make
from server_support import PASSWORDS, open_security

DELAY_MS = 50  # server_support.CONFIG's connection.failed.authentication.delay.ms
ACLS = (acl("TOPIC", "orders", "WRITE"), acl("TOPIC", "orders", "READ"), acl("GROUP", "billing", "READ"))
"""alice may write and read orders and be in the group billing; payments is nobody's but the super users'."""
RECORDS = record_batch(timestamp_ms=1_700_000_000_000)
BROKER_VERSIONS = {
    **{api_key: versions for api_key, versions in client_api_versions().items() if api_key != ApiKey.DESCRIBE_CONFIGS},
    ApiKey.METADATA: (5, 9),
}
"""A broker that serves every client API kafkasec authorizes but DescribeConfigs, and Metadata v5-v9 only."""


@pytest.fixture
def state(server_state):
    """server_state (the SCRAM users of server_support.PASSWORDS) with ACLS."""
    with open_security(server_state, acls=ACLS):
        pass
    return server_state


@pytest.fixture
def opened(state):
    """opened(**settings): a KafkaSecurity over ``state`` with server_support.CONFIG and these settings."""
    securities = []

    def open_with(**settings):
        security = open_security(state, **settings)
        securities.append(security)
        return security

    yield open_with
    for security in securities:
        security.close()


@pytest.fixture
def security(opened):
    return opened()


def connect(security, **options) -> SecureConnection:
    return SecureConnection(security, "10.1.2.3", broker_versions=BROKER_VERSIONS, **options)


def body(api_key, version, **fields):
    """A request body from nested dicts and lists (request_rules_support.make)."""
    return make(wire.request_schema(api_key, version), fields)


def framed(request_body, correlation_id=7) -> bytes:
    """``request_body`` as a client writes it: size, header, body."""
    return wire.size_prefixed(wire.encode_request(request_body, correlation_id=correlation_id, client_id="test"))


def request_frame(api_key, version, correlation_id=7, **fields) -> bytes:
    return framed(body(api_key, version, **fields), correlation_id)


def header_only(api_key, version) -> bytes:
    """A frame that is a v2 header alone: enough for an API kio has no schema of (LeaderAndIsr)."""
    header = RequestHeader(
        request_api_key=i16(api_key), request_api_version=i16(version), correlation_id=i32(7), client_id="t"
    )
    return wire.size_prefixed(wire.encode(header))


def answer(event, api_key, version):
    """(correlation id, body) of the response a Send carries, its size prefix checked."""
    assert isinstance(event, Send), event
    return decoded(event.data, api_key, version)


def decoded(data: bytes, api_key, version):
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    return wire.decode_response(data[4:], api_key, version)


def fed_in_pieces(connection, data: bytes, sizes=(1, 3, 2, 7, 5)) -> list:
    """The events of ``data`` handed over in pieces of these sizes, over and over: frames and
    their size prefixes cut at odd places."""
    events, at, turn = [], 0, 0
    while at < len(data):
        size = sizes[turn % len(sizes)]
        events += connection.receive_data(data[at:at + size])
        at, turn = at + size, turn + 1
    return events


def scram_client(user="alice", mechanism="SCRAM-SHA-256", password=None):
    return scramp.ScramClient([mechanism], user, PASSWORDS[user] if password is None else password)


def opening(client, mechanism) -> bytes:
    """SaslHandshake v1 and the client-first SaslAuthenticate, written at once."""
    first = request_frame(36, 2, 9, auth_bytes=client.get_client_first().encode())
    return request_frame(17, 1, 8, mechanism=mechanism) + first


def closing(client, events) -> bytes:
    """The client-final SaslAuthenticate, from the server-first the last of ``events`` carries."""
    _, server_first = answer(events[-1], 36, 2)
    assert int(server_first.error_code) == 0, server_first
    client.set_server_first(bytes(server_first.auth_bytes).decode())
    return request_frame(36, 2, 10, auth_bytes=client.get_client_final().encode())


def log_in(connection, user="alice", mechanism="SCRAM-SHA-256", password=None) -> list:
    """A SCRAM login through receive_data; the events of its last frame."""
    client = scram_client(user, mechanism, password)
    return connection.receive_data(closing(client, connection.receive_data(opening(client, mechanism))))


def logged_in(security, user="alice", **options) -> SecureConnection:
    connection = connect(security, **options)
    events = log_in(connection, user)
    assert [type(event) for event in events] == [Send] and connection.logged_in, events
    return connection


def produce(*topics, acks=1, version=9):
    return body(0, version, acks=acks, timeout=1000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": RECORDS}]} for topic in topics
    ])


def produce_answer(*topics, version=9):
    """A broker's answer to a Produce of ``topics``: partition 0 of each appended at offset 42."""
    schema = wire.response_schema(0, version)
    topic_type = wire.item_type(schema, "responses")
    partition_type = wire.item_type(topic_type, "partition_responses")
    return wire.build(schema, responses=tuple(
        wire.build(topic_type, name=topic, partition_responses=(wire.build(partition_type, index=0, base_offset=42),))
        for topic in topics
    ))


def partition_errors(produce_response) -> dict:
    return {
        topic.name: [(int(p.index), int(p.error_code), int(p.base_offset)) for p in topic.partition_responses]
        for topic in produce_response.responses
    }


# ---------------------------------------------------------------------- the login


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_scram_login_cut_at_odd_places_and_written_several_frames_at_once(security, mechanism):
    connection = connect(security)
    client = scram_client("alice", mechanism)
    versions = request_frame(18, 3, 6, client_software_name="scramp", client_software_version="1.4")
    events = fed_in_pieces(connection, versions + opening(client, mechanism))
    assert [type(event) for event in events] == [Send] * 3
    answered = [answer(event, key, version)[0] for event, (key, version) in zip(events, [(18, 3), (17, 1), (36, 2)])]
    assert answered == [6, 8, 9]  # correlation ids, in order
    assert connection.principal is None and not connection.logged_in
    final = fed_in_pieces(connection, closing(client, events), sizes=(1,))
    assert [type(event) for event in final] == [Send] and final[0].delay_ms == 0
    correlation_id, server_final = answer(final[0], 36, 2)
    assert correlation_id == 10 and int(server_final.error_code) == 0
    client.set_server_final(bytes(server_final.auth_bytes).decode())  # scramp checks the server's signature
    assert str(connection.principal) == "User:alice" and connection.logged_in


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_answered_58_after_the_delay_then_closed(security, mechanism):
    connection = connect(security)
    events = log_in(connection, "alice", mechanism, password="wrong")
    assert [type(event) for event in events] == [Send, Close]
    assert events[0].delay_ms == security.failed_authentication_delay_ms == DELAY_MS
    assert int(answer(events[0], 36, 2)[1].error_code) == 58
    assert connection.principal is None


def test_a_request_before_the_login_closes_without_an_answer(security):
    connection = connect(security)
    events = connection.receive_data(request_frame(3, 9, topics=[{"name": "orders"}]))
    assert [type(event) for event in events] == [Close] and connection.principal is None


@pytest.mark.parametrize("how", ["a request before the login", "a wrong password in a bare-token login"])
def test_a_failed_login_without_an_answer_still_waits_the_delay(security, how):
    # Kafka closes a connection whose login failed only after connection.failed.authentication.delay.ms,
    # whether or not an answer goes out (the Authenticator's Reply carries it): without it a
    # SaslHandshake v0 client learns at once that a password was wrong, and may guess the next.
    connection = connect(security)
    if how == "a request before the login":
        events = connection.receive_data(request_frame(3, 9, topics=[{"name": "orders"}]))
    else:
        client = scram_client(password="wrong")
        handshake = connection.receive_data(request_frame(17, 0, mechanism="SCRAM-SHA-256"))
        assert int(answer(handshake[0], 17, 0)[1].error_code) == 0
        first = connection.receive_data(wire.size_prefixed(client.get_client_first().encode()))
        client.set_server_first(first[0].data[4:].decode())
        events = connection.receive_data(wire.size_prefixed(client.get_client_final().encode()))
    assert isinstance(events[-1], Close)
    assert max(getattr(event, "delay_ms", 0) for event in events) == DELAY_MS, events


def _certificate() -> bytes:
    return self_signed(A(NameOID.COMMON_NAME, "alice")).public_bytes(serialization.Encoding.DER)


@pytest.mark.parametrize("protocol, certificate, principal", [
    ("PLAINTEXT", None, "User:ANONYMOUS"),
    ("SSL", None, "User:ANONYMOUS"),  # ssl.client.auth not required and no certificate: Kafka's builder
    ("SSL", _certificate(), "User:CN=alice"),
])
def test_plaintext_and_ssl_principals_need_no_login(security, protocol, certificate, principal):
    connection = connect(security, security_protocol=protocol, peer_certificate=certificate)
    assert str(connection.principal) == principal and connection.logged_in
    events = connection.receive_data(request_frame(3, 9, topics=[]))
    assert [type(event) for event in events] == [Handle]


# ---------------------------------------------------------------------- KIP-368 re-authentication


def test_a_reauthentication_renews_the_session_and_a_request_after_its_end_closes(opened):
    connection = connect(opened(**{"connections.max.reauth.ms": "400"}))
    login = log_in(connection)
    started = time.monotonic()
    assert answer(login[0], 36, 2)[1].session_lifetime == datetime.timedelta(milliseconds=400)
    time.sleep(0.25)
    renewed = time.monotonic()
    renewal = log_in(connection)  # a SaslHandshake after the login starts a new one
    assert [type(event) for event in renewal] == [Send] and connection.logged_in
    assert int(answer(renewal[0], 36, 2)[1].error_code) == 0
    time.sleep(max(0.0, started + 0.45 - time.monotonic()))  # past the first session's end
    assert time.monotonic() < renewed + 0.4, "the machine was too slow for this test's margins"
    assert [type(event) for event in connection.receive_data(request_frame(3, 9, topics=[]))] == [Handle]
    time.sleep(max(0.0, renewed + 0.45 - time.monotonic()))  # past the renewed session's end
    events = connection.receive_data(request_frame(3, 9, topics=[]))
    assert [type(event) for event in events] == [Close] and "expired" in events[0].reason


def test_a_reauthentication_as_another_principal_fails_and_closes(opened):
    connection = logged_in(opened(**{"connections.max.reauth.ms": "60000"}))
    events = log_in(connection, "bob")
    assert isinstance(events[-1], Close)
    assert str(connection.principal) == "User:alice"


@pytest.mark.parametrize("case", ["no session end", "SaslAuthenticate", "a second re-authentication within a second"])
def test_sasl_requests_that_start_no_reauthentication_are_illegal_sasl_state(opened, case):
    # KafkaApis answers them ILLEGAL_SASL_STATE (34). Kafka begins a re-authentication only on a
    # connection whose session ends, and at most once a second (KafkaChannel's
    # MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS): a handshake sooner is handled as any other request.
    reauth_ms = "0" if case == "no session end" else "60000"
    connection = logged_in(opened(**{"connections.max.reauth.ms": reauth_ms}))
    if case == "a second re-authentication within a second":
        assert [type(event) for event in log_in(connection)] == [Send]
    api_key, version = (36, 2) if case == "SaslAuthenticate" else (17, 1)
    fields = {"auth_bytes": b"n,,n=alice,r=x"} if api_key == 36 else {"mechanism": "SCRAM-SHA-256"}
    events = connection.receive_data(request_frame(api_key, version, **fields))
    assert [type(event) for event in events] == [Send], events
    assert int(answer(events[0], api_key, version)[1].error_code) == 34
    assert connection.logged_in


# ---------------------------------------------------------------------- ApiVersions and what is served


def test_api_versions_lists_the_broker_versions_kafkasec_authorizes_and_its_own(security):
    broker_versions = {
        ApiKey.PRODUCE: (0, 99),  # wider than kafkasec's on both sides: kafkasec's range
        ApiKey.METADATA: (5, 9),  # narrower: the broker's
        ApiKey.FETCH: (0, 3),  # no version in common: not listed
        ApiKey.LEADER_AND_ISR: (0, 7),  # inter-broker: never listed to clients
        ApiKey.DESCRIBE_ACLS: (0, 1),  # a security API: kafkasec answers it, at its versions
    }
    connection = SecureConnection(security, "10.1.2.3", broker_versions=broker_versions)
    events = connection.receive_data(request_frame(18, 3, client_software_name="test", client_software_version="1"))
    _, listed = answer(events[0], 18, 3)
    assert int(listed.error_code) == 0
    assert {int(key.api_key): (int(key.min_version), int(key.max_version)) for key in listed.api_keys} == {
        ApiKey.PRODUCE: client_api_versions()[ApiKey.PRODUCE],
        ApiKey.METADATA: (5, 9),
        **{api_key: kio_versions(api_key) for api_key in SECURITY_APIS | CONNECTION_APIS},
    }


@pytest.mark.parametrize("user, error", [("admin", 0), ("alice", 31)])
def test_the_security_apis_are_answered_by_kafkasec(security, user, error):
    connection = logged_in(security, user)
    creation = {"resource_type": 2, "resource_name": "audit", "resource_pattern_type": 3, "principal": "User:dave",
                "host": "*", "operation": 3, "permission_type": 3}
    events = connection.receive_data(request_frame(30, 3, 11, creations=[creation]) + request_frame(29, 3, 12, **{
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
        "host_filter": None, "operation": 1, "permission_type": 1,
    }))
    assert [type(event) for event in events] == [Send, Send]  # never a Handle: the broker has no part in them
    _, created = answer(events[0], 30, 3)
    _, described = answer(events[1], 29, 3)
    assert [int(result.error_code) for result in created.results] == [error]
    assert int(described.error_code) == error
    if not error:
        assert {resource.resource_name for resource in described.resources} == {"orders", "billing", "audit"}


@pytest.mark.parametrize("frame", [
    pytest.param(request_frame(32, 4, resources=[{"resource_type": 2, "resource_name": "o"}]), id="API not listed"),
    pytest.param(request_frame(3, 12, topics=[]), id="version above the broker's"),
    pytest.param(header_only(ApiKey.PRODUCE, 2), id="version below kafkasec's"),
    pytest.param(header_only(ApiKey.LEADER_AND_ISR, 7), id="LeaderAndIsr"),
    pytest.param(request_frame(63, 1, broker_id=1, broker_epoch=1), id="BrokerHeartbeat"),
    pytest.param(wire.size_prefixed(request_frame(3, 9, topics=[{"name": "orders"}])[4:-3]), id="truncated body"),
    pytest.param(wire.size_prefixed(b"\x00\x03\x00"), id="shorter than a header"),
])
def test_what_a_broker_does_not_serve_to_clients_closes(security, frame):
    connection = connect(security, security_protocol="PLAINTEXT")
    events = connection.receive_data(frame)
    assert [type(event) for event in events] == [Close], events


@pytest.mark.parametrize("setting, protocol", [
    ("socket.request.max.bytes", "PLAINTEXT"),
    ("sasl.server.max.receive.size", "SASL_PLAINTEXT"),  # before the login
])
def test_a_frame_over_the_limit_closes_on_its_size_alone(opened, setting, protocol):
    frame = request_frame(36, 2, auth_bytes=b"x" * 61) if protocol != "PLAINTEXT" else framed(produce("orders"))
    assert len(frame) - 4 > 64
    # The size prefix is enough: the broker need not read (or buffer) what the frame claims.
    assert connect(opened(), security_protocol=protocol).receive_data(frame[:4]) == []  # under the default limit
    events = connect(opened(**{setting: "64"}), security_protocol=protocol).receive_data(frame[:4])
    assert [type(event) for event in events] == [Close], events


# ---------------------------------------------------------------------- authorization of what goes on


def test_a_produce_allowed_whole_is_handled_as_the_client_sent_it(security):
    connection = logged_in(security)
    request = produce("orders")
    events = connection.receive_data(framed(request, 21) + framed(request, 22))
    assert [type(event) for event in events] == [Handle, Handle]
    handle = events[0]
    assert (handle.api_key, handle.version, handle.correlation_id) == (ApiKey.PRODUCE, 9, 21)
    assert handle.request == request and handle.authorization.unchanged
    assert decoded(connection.respond(handle, produce_answer("orders")), 0, 9) == (21, produce_answer("orders"))
    assert events[1].correlation_id == 22


def test_a_produce_refused_in_part_is_handled_without_the_refused_topic(security):
    connection = logged_in(security)
    events = connection.receive_data(framed(produce("orders", "payments"), 23))
    assert [type(event) for event in events] == [Handle]
    assert events[0].request == produce("orders")
    correlation_id, response = decoded(connection.respond(events[0], produce_answer("orders")), 0, 9)
    assert correlation_id == 23
    assert partition_errors(response) == {"orders": [(0, 0, 42)], "payments": [(0, 29, -1)]}


def test_a_produce_refused_whole_is_answered_29_and_not_handled(security):
    connection = logged_in(security)
    events = connection.receive_data(framed(produce("payments")))
    assert [type(event) for event in events] == [Send]
    assert partition_errors(answer(events[0], 0, 9)[1]) == {"payments": [(0, 29, -1)]}


@pytest.mark.parametrize("topics", [("payments",), ("orders", "payments")])
def test_an_acks_0_produce_with_a_refused_topic_closes(security, topics):
    # Kafka closes it: a producer that wants no answer learns of the refusal only so.
    connection = logged_in(security)
    events = connection.receive_data(framed(produce(*topics, acks=0)))
    assert [type(event) for event in events] == [Close]


def test_an_acks_0_produce_allowed_is_handled_and_nothing_waits_for_its_answer(security):
    connection = logged_in(security)
    request = produce("orders", acks=0)
    versions = request_frame(18, 3, 8, client_software_name="a", client_software_version="1")
    events = connection.receive_data(framed(request) + versions)
    assert [type(event) for event in events] == [Handle, Send]
    assert events[0].request == request
    assert answer(events[1], 18, 3)[0] == 8


@pytest.mark.parametrize("topics", [("orders",), ("orders", "payments")], ids=["allowed whole", "refused in part"])
@pytest.mark.parametrize("wrong", [
    pytest.param(lambda: wire.build(wire.response_schema(3, 9)), id="a Metadata response"),
    pytest.param(lambda: produce_answer("orders", version=8), id="a Produce response of another version"),
    pytest.param(lambda: {"responses": []}, id="not a kio entity"),
])
def test_respond_with_an_answer_of_another_api_or_version_is_a_misuse(security, topics, wrong):
    # The broker's bug, not the client's: raised, not answered (nor sent as it is).
    connection = logged_in(security)
    (handle,) = connection.receive_data(framed(produce(*topics)))
    with pytest.raises((TypeError, ValueError)):
        connection.respond(handle, wrong())


def test_respond_without_an_answer_is_a_misuse(security):
    connection = logged_in(security)
    (handle,) = connection.receive_data(framed(produce("orders")))
    with pytest.raises(ValueError, match="needs its answer"):
        connection.respond(handle, None)


def test_an_answer_that_cannot_be_encoded_is_logged_and_answered_unknown_server_error(security, caplog):
    connection = logged_in(security)
    (handle,) = connection.receive_data(request_frame(12, 3, 31, group_id="billing", generation_id=1, member_id="m"))
    too_long = wire.build(wire.response_schema(12, 3), throttle_time=datetime.timedelta(days=100))  # past int32 ms
    with caplog.at_level(logging.ERROR, logger="kafkasec.server.secure_connection"):
        sent = connection.respond(handle, too_long)
    assert decoded(sent, 12, 3) == (31, wire.build(wire.response_schema(12, 3), error_code=wire.error_code(-1)))
    assert [record.levelno for record in caplog.records] == [logging.ERROR]


def test_an_answer_that_cannot_be_encoded_where_no_error_fits_gives_no_bytes(security, caplog):
    # A Produce v8 answer has no whole-request error code; the broker closes instead.
    connection = logged_in(security)
    (handle,) = connection.receive_data(framed(produce("orders", version=8)))
    unencodable = produce_answer("o" * 40_000, version=8)  # a legacy string holds 32,767 bytes
    with caplog.at_level(logging.ERROR, logger="kafkasec.server.secure_connection"):
        assert connection.respond(handle, unencodable) == b""
    assert logging.ERROR in [record.levelno for record in caplog.records]


@pytest.mark.parametrize("known, granted, error", [(True, True, None), (True, False, 29), (False, True, 100)])
def test_a_fetch_by_topic_id_is_authorized_by_the_name_the_broker_maps_it_to(security, known, granted, error):
    topic_id = uuid.UUID("6b6b6b6b-0000-4000-8000-000000000001")
    names: dict = {}
    connection = logged_in(security, topic_names=names)
    if known:
        names[topic_id] = "orders" if granted else "payments"  # learned after connecting: the mapping is read live
    request = body(1, 13, replica_id=-1, max_wait=0, min_bytes=0, topics=[
        {"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]},
    ])
    events = connection.receive_data(framed(request))
    if error is None:
        assert [type(event) for event in events] == [Handle] and events[0].request == request
        return
    assert [type(event) for event in events] == [Send]
    _, response = answer(events[0], 1, 13)
    assert [(topic.topic_id, [int(p.error_code) for p in topic.partitions]) for topic in response.responses] == [
        (topic_id, [error]),
    ]


# ---------------------------------------------------------------------- after a close


@pytest.mark.parametrize("receive", [
    pytest.param(lambda connection, frame: connection.receive_data(frame), id="receive_data"),
    pytest.param(lambda connection, frame: connection.receive_frame(frame[4:]), id="receive_frame"),
])
def test_nothing_is_received_after_a_close(security, receive):
    connection = connect(security, security_protocol="PLAINTEXT")
    assert [type(event) for event in connection.receive_data(header_only(ApiKey.LEADER_AND_ISR, 7))] == [Close]
    with pytest.raises(ValueError, match="closed"):
        receive(connection, request_frame(18, 3, client_software_name="a", client_software_version="1"))
