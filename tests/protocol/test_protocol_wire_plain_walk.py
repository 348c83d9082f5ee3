"""The plain walk (straight-line code generated per entity type) and the careful walk agree: on
any request, whole, cut short, with bytes changed or a tagged field added, the plain walk
either steps over it to the offset the careful walk reaches, where the careful walk finds no
tag to take out, or hands it to the careful walk. It never passes a frame the careful walk
refuses."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st
from kio.schema.errors import ErrorCode

from kafkasec.errors import InvalidRequestError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

from record_batches import record_batch
from request_rules_support import CASES, make


def _frames() -> list[bytes]:
    frames = []
    for case in CASES:
        for version in case.described_versions:
            try:
                frames.append(wire.encode_request(case.request(version), correlation_id=7, client_id="walk"))
            except Exception:  # a row whose values a version cannot carry
                continue
    produce = make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 1, "timeout": 30_000, "topic_data": [
        {"name": "t", "partition_data": [{"index": index, "records": record_batch([(None, b"v" * index)])}
                                         for index in range(3)]}]})
    frames.append(wire.encode_request(produce, correlation_id=7, client_id=None))
    return frames


FRAMES = _frames()


def _entity_types(frame: bytes) -> tuple[type, type]:
    schema = wire.request_schema(*wire.peek_api(frame))
    return (wire.RequestHeaderV2 if schema.__flexible__ else wire.RequestHeaderV1), schema


def _careful(frame: bytes, entity_types) -> tuple[int, int] | None:
    """The careful walk: (the offset after the last entity, the sections with unknown tags), or
    None when it refuses the frame."""
    try:
        offset = 0
        for entity_type in entity_types:
            offset = wire.check_lengths(entity_type, frame, offset)
        return offset, wire._known_tags_only(frame, entity_types)[1]
    except InvalidRequestError:
        return None


def _plain(frame: bytes, entity_types) -> int | None:
    try:
        offset = 0
        for entity_type in entity_types:
            offset = wire._plain_walker(entity_type)(frame, offset, len(frame))
        return offset
    except wire._PLAIN_STOPS:
        return None


def test_every_request_of_the_rule_table_is_walked_plainly():
    assert len(FRAMES) > 250
    for frame in FRAMES:
        types = _entity_types(frame)
        assert _plain(frame, types) == _careful(frame, types)[0] == len(frame), wire.peek_api(frame)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(FRAMES), st.data())
@example(FRAMES[0], None)
def test_the_plain_walk_passes_only_what_the_careful_walk_reads_whole(frame, data):
    mutated = bytearray(frame)
    if data is not None:
        for _ in range(data.draw(st.integers(0, 3))):
            at = data.draw(st.integers(4, len(mutated) - 1))  # the API key and version stay
            mutated[at] = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF]))
        cut = data.draw(st.integers(4, len(mutated)))
        mutated = mutated[:cut] + data.draw(st.sampled_from([b"", b"\x00", b"\x01\x00\x00", b"\xff\xff\xff\xff\x0f"]))
    types = _entity_types(frame)
    plain, careful = _plain(bytes(mutated), types), _careful(bytes(mutated), types)
    if plain is not None:
        assert careful == (plain, 0)


def test_a_tagged_field_goes_to_the_careful_walk_which_takes_it_out():
    frame = next(frame for frame in FRAMES if wire.peek_api(frame) == (ApiKey.METADATA, 12))
    types = _entity_types(frame)
    # The body's last byte is its empty tagged-field section: one tag (99, two bytes) instead.
    tagged = frame[:-1] + b"\x01\x63\x02\xab\xcd"
    assert _plain(tagged, types) is None
    assert wire._known_tags_only(tagged, types) == (frame, 1)


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize("new_leader", [False, True])
@pytest.mark.parametrize("current_leader", [False, True])
def test_an_answers_top_level_tags_are_found_whichever_walk_reads_it(version, new_leader, current_leader):
    """A Produce answer's top-level tags (KIP-951's node_endpoints, tag 0): none when the plain
    walk steps over it; found by the careful walk when a tag is there, at the top (the plain
    walk stops at it) or only inside a partition (current_leader: the plain walk stops there
    too, and the careful walk finds no top-level tag)."""
    partition = {"index": 0, "error_code": ErrorCode.not_leader_or_follower if current_leader else ErrorCode.none,
                 "base_offset": 7, "log_append_time": wire.instant(-1), "log_start_offset": 0, "record_errors": [],
                 "error_message": None}
    if current_leader:
        partition["current_leader"] = {"leader_id": 111, "leader_epoch": 3}
    values = {"responses": [{"name": "orders", "partition_responses": [partition]}], "throttle_time": 0}
    if new_leader:
        values["node_endpoints"] = [{"node_id": 111, "host": "10.0.0.9", "port": 9092, "rack": None}]
    frame = wire.encode_response(make(wire.response_schema(ApiKey.PRODUCE, version), values), correlation_id=3)
    assert wire.response_tags(frame, ApiKey.PRODUCE, version) == ({0} if new_leader else frozenset())
