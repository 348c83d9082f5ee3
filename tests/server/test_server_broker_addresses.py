"""Where answers name brokers (KIP-951's node_endpoints in Produce and Fetch, Metadata's brokers,
FindCoordinator's coordinators): which answers must be read to find them, and the gateway's
addresses written in their place. Sans I/O: answers built and encoded as a broker sends them."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server.broker_addresses import brokers_in, names_brokers, with_addresses

from request_rules_support import make


def _produce_answer(version: int, *, new_leader: bool):
    values = {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": ErrorCode.none, "base_offset": 7, "log_append_time": wire.instant(-1),
         "log_start_offset": 0, "record_errors": [], "error_message": None}]}], "throttle_time": 0}
    if new_leader:
        values["node_endpoints"] = [{"node_id": 111, "host": "10.0.0.9", "port": 9092, "rack": None}]
    body = make(wire.response_schema(ApiKey.PRODUCE, version), values)
    return body, wire.encode_response(body, correlation_id=3)


@pytest.mark.parametrize("version", [10, 11])
def test_a_produce_answer_naming_a_new_leader_is_read_and_pointed_at_the_gateway(version):
    body, frame = _produce_answer(version, new_leader=True)
    assert names_brokers(ApiKey.PRODUCE, version, frame)
    assert brokers_in(ApiKey.PRODUCE, body) == {111: ("10.0.0.9", 9092)}
    moved = with_addresses(ApiKey.PRODUCE, body, {111: ("127.0.0.1", 29204)})
    assert brokers_in(ApiKey.PRODUCE, moved) == {111: ("127.0.0.1", 29204)}
    assert moved.responses == body.responses  # nothing else changes


@pytest.mark.parametrize("version", [9, 10, 11])
def test_a_produce_answer_without_a_new_leader_passes_unread(version):
    _, frame = _produce_answer(version, new_leader=False)
    assert not names_brokers(ApiKey.PRODUCE, version, frame)


def test_answers_of_versions_without_a_broker_field_are_not_walked():
    # A Produce v9 answer has no node_endpoints: even bytes that are no answer at all are not
    # read (the walk would refuse them), since there is nothing to find.
    assert not names_brokers(ApiKey.PRODUCE, 9, b"\x00\x00\x00\x03garbage")
    assert not names_brokers(ApiKey.FETCH, 15, b"garbage")
    assert not names_brokers(ApiKey.API_VERSIONS, 3, b"garbage")
    assert names_brokers(ApiKey.METADATA, 12, b"garbage")  # Metadata always names its brokers
