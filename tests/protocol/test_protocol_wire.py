"""The wire codec over kio: Kafka's byte layouts for headers, envelopes and ACL requests."""

import random

import pytest
from hypothesis import given, strategies as st
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.create_topics.v7.response import CreatableTopicResult, CreateTopicsResponse
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2

from kafkasec.errors import InvalidRequestError, KafkaError
from kafkasec.principals.serde import unsigned_varint
from kafkasec.protocol import wire
from kafkasec.protocol.forwardable import FORWARDABLE_APIS

CREATE_ACLS = CreateAclsRequest(
    creations=(
        AclCreation(
            resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host="*",
            operation=3, permission_type=3,
        ),
    )
)


def test_flexible_request_has_header_v2():
    frame = wire.encode_request(CREATE_ACLS, correlation_id=5, client_id="c")
    assert frame.hex() == (
        "001e" "0003" "00000005" "0001" "63" "00"  # header v2: key, version, id, int16-length client id, no tags
        "02"  # one creation (compact array: count + 1)
        "02" "0274" "03" "07557365723a61" "022a" "03" "03" "00"  # TOPIC "t" LITERAL User:a * READ ALLOW
        "00"
    )
    request = wire.decode_request(frame)
    assert (request.api_key, request.api_version, request.header.client_id) == (30, 3, "c")
    assert request.body == CREATE_ACLS


def test_envelope_request_layout():
    envelope = EnvelopeRequest(request_data=b"ab", request_principal=None, client_host_address=bytes([127, 0, 0, 1]))
    frame = wire.encode_request(envelope, correlation_id=1, client_id=None)
    # Header v2 with a null client id (int16 -1), then compact bytes, null, compact bytes, no tags.
    assert frame.hex() == "003a" "0000" "00000001" "ffff" "00" "036162" "00" "057f000001" "00"
    assert wire.decode_request(frame).body == envelope


def test_envelope_response_layout():
    frame = wire.encode_response(EnvelopeResponse(response_data=None, error_code=wire.error_code(41)), correlation_id=2)
    assert frame.hex() == "00000002" "00" "00" "0029" "00"  # header v1, null data, NOT_CONTROLLER
    assert wire.decode_response(frame, 58, 0)[1].error_code == 41


def test_non_flexible_response_has_header_v0():
    from kio.schema.create_acls.v1.response import CreateAclsResponse

    frame = wire.encode_response(wire.build(CreateAclsResponse), correlation_id=3)
    assert frame.hex() == "00000003" "00000000" "00000000"  # no tag byte: throttle 0, empty array


def test_trailing_bytes_after_a_request_are_ignored():
    frame = wire.encode_request(CREATE_ACLS, correlation_id=5, client_id="c")
    assert wire.decode_request(frame + b"\x00\x00\x01").body == CREATE_ACLS


def test_unknown_api_or_version_is_unsupported_version():
    with pytest.raises(wire.UnsupportedVersionError) as raised:
        wire.decode_request(bytes.fromhex("001e0063") + b"\x00" * 10)
    assert raised.value.code == 35
    with pytest.raises(wire.UnsupportedVersionError):
        wire.response_schema(999, 0)


def test_truncated_requests_are_invalid_request():
    frame = wire.encode_request(CREATE_ACLS, correlation_id=5, client_id="c")
    for end in range(len(frame) - 1):
        with pytest.raises(KafkaError) as raised:
            wire.decode_request(frame[:end])
        assert raised.value.code in (42, 35)


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_a_kafka_error(data):
    try:
        wire.decode_request(data)
    except KafkaError as error:
        assert error.code in (42, 35)


def test_mutated_envelopes_never_raise_anything_else():
    envelope = wire.encode_request(
        EnvelopeRequest(request_data=b"x" * 40, request_principal=b"p" * 10, client_host_address=b"\x01" * 4),
        correlation_id=1,
        client_id="broker",
    )
    rng = random.Random(7)
    for _ in range(3000):
        mutated = bytearray(envelope)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            wire.decode_request(bytes(mutated))
        except KafkaError:
            pass


def test_build_fills_zeros_and_keeps_schema_defaults():
    result = wire.build(CreatableTopicResult, name="x", error_code=wire.error_code(29))
    assert (result.num_partitions, result.replication_factor, result.error_message) == (-1, -1, "")
    assert wire.build(CreateTopicsResponse).topics == ()


def test_build_drops_fields_a_version_lacks():
    from kio.schema.create_delegation_token.v1.response import CreateDelegationTokenResponse

    response = wire.build(CreateDelegationTokenResponse, token_requester_principal_name="bob", principal_name="al")
    assert response.principal_name == "al"


@pytest.mark.parametrize("api_key", sorted(FORWARDABLE_APIS))
def test_every_forwardable_api_has_schemas_in_kio(api_key):
    from kio.schema.index import api_key_map, schema_name_map

    versions = schema_name_map[api_key_map[api_key]]
    assert versions, api_key
    for version in versions:
        wire.request_schema(api_key, version)
        wire.response_schema(api_key, version)


def test_decode_errors_name_what_could_not_be_read():
    with pytest.raises(InvalidRequestError, match="request header"):
        wire.decode_request(b"\x00\x1e")


@given(
    version=st.integers(0, 13),
    names=st.lists(st.from_regex(r"[a-z]{1,20}", fullmatch=True), max_size=300),
    partitions=st.integers(0, 3),
    cluster_id=st.one_of(st.none(), st.text(max_size=5)),
)
def test_items_encoded_apart_make_the_same_bytes_as_the_whole(version, names, partitions, cluster_id):
    # Metadata's topics array: compact (v9+) or int32-counted, before and after other fields,
    # with counts that take one and two varint bytes.
    response_type = wire.response_schema(3, version)
    topic_type = wire.item_type(response_type, "topics")
    partition_type = wire.item_type(topic_type, "partitions")
    topics = tuple(
        wire.build(topic_type, name=name, partitions=tuple(wire.build(partition_type, partition_index=i) for i in range(partitions)))
        for name in names
    )
    whole = wire.build(response_type, cluster_id=cluster_id, controller_id=3, topics=topics, cluster_authorized_operations=7)
    assembled = wire.encode_with_items(whole, "topics", [wire.encode(topic) for topic in topics])
    assert assembled.data == wire.encode(whole)
    assert wire.encode_response(assembled, correlation_id=9) == wire.encode_response(whole, correlation_id=9)


# ---------------------------------------------------------------------- tagged fields the schema lacks (issue 39)

METADATA_V9 = wire.encode_request(
    wire.build(wire.request_schema(3, 9), topics=(wire.build(wire.item_type(wire.request_schema(3, 9), "topics"), name="orders"),)),
    correlation_id=4,
    client_id="c",
)
HEADER_END = wire.check_lengths(RequestHeaderV2, METADATA_V9)
SECTIONS = {
    "header": HEADER_END - 1,
    # the topics array's length (1 byte), then the one topic, whose tagged fields end it
    "topic entry": HEADER_END + len(wire.encode(wire.decode_request(METADATA_V9).body.topics[0])),
    "body": len(METADATA_V9) - 1,
}
"""Where the empty tagged-field sections (one 0 byte each) of METADATA_V9 are."""

# librdkafka 2.16.0's Metadata v9 for every topic (an AdminClient's list_topics, PLAINTEXT, to a
# server that listed Metadata v9 only), as it came: after the header, 00 00 00 00 01 00 00 00.
# Read as Kafka reads it: null topics, three false booleans, a tagged section holding tag 0 of
# size 0, and a byte after the body. kio refused it ("Unknown tagged field tag: 0").
LIBRDKAFKA_METADATA_V9 = bytes.fromhex("0003000900000003000772646b61666b61000000000001000000")


def with_tags(frame: bytes, at: int, *fields: tuple[int, bytes]) -> bytes:
    """``frame`` whose empty tagged-field section at ``at`` holds ``fields`` ((tag, value) each)."""
    assert frame[at] == 0, "not an empty tagged-field section"
    section = unsigned_varint(len(fields)) + b"".join(
        unsigned_varint(tag) + unsigned_varint(len(value)) + value for tag, value in fields
    )
    return frame[:at] + section + frame[at + 1:]


def test_metadata_v9_has_its_tagged_sections_where_the_tests_put_tags():
    assert wire.decode_request(METADATA_V9).read_whole
    assert [METADATA_V9[at] for at in SECTIONS.values()] == [0, 0, 0]
    assert METADATA_V9[SECTIONS["topic entry"] - 7:SECTIONS["topic entry"]] == b"\x07orders"


@pytest.mark.parametrize("where", [*[[name] for name in SECTIONS], list(SECTIONS)], ids=[*SECTIONS, "all three"])
def test_unknown_tags_are_skipped_wherever_they_are(where):
    unknown = [(0, b""), (300, b"xyz")]  # tag 0 empty, as librdkafka sends it; a tag of two varint bytes
    frame = METADATA_V9
    for at in sorted((SECTIONS[name] for name in where), reverse=True):  # from the end: offsets before stay
        frame = with_tags(frame, at, *unknown)
    request, plain = wire.decode_request(frame), wire.decode_request(METADATA_V9)
    assert (request.header, request.body) == (plain.header, plain.body)
    assert (request.read_whole, request.unknown_tag_sections, request.trailing_bytes) == (False, len(where), 0)


@pytest.mark.parametrize("extra, sections", [((), 0), (((5, b"zz"),), 1)], ids=["known alone", "known and unknown"])
def test_a_known_tag_keeps_its_value_beside_unknown_ones(extra, sections):
    # Fetch v12's cluster_id is its tag 0 (a compact nullable string).
    fetch = wire.build(wire.request_schema(1, 12), replica_id=-1)
    frame = wire.encode_request(fetch, correlation_id=1, client_id="c")
    frame = with_tags(frame, len(frame) - 1, (0, b"\x03c1"), *extra)
    request = wire.decode_request(frame)
    assert request.body == wire.build(wire.request_schema(1, 12), replica_id=-1, cluster_id="c1")
    assert (request.read_whole, request.unknown_tag_sections) == (not sections, sections)


@pytest.mark.parametrize("where", list(SECTIONS))
def test_an_unknown_tag_whose_size_runs_past_the_frame_is_refused(where):
    frame = METADATA_V9[:SECTIONS[where]] + bytes.fromhex("01" "09" "c801") + b"ab" + METADATA_V9[SECTIONS[where] + 1:]
    assert len(frame) - SECTIONS[where] < 200  # the size claimed: 200 (varint c8 01)
    with pytest.raises(InvalidRequestError, match="tagged field 9 claims 200 bytes"):
        wire.decode_request(frame)


def test_librdkafkas_metadata_v9_for_every_topic_is_read_as_kafka_reads_it():
    request = wire.decode_request(LIBRDKAFKA_METADATA_V9)
    assert (request.api_key, request.api_version, int(request.header.correlation_id), request.header.client_id) == (
        3, 9, 3, "rdkafka",
    )
    assert request.body == wire.build(wire.request_schema(3, 9), topics=None, allow_auto_topic_creation=False)
    assert (request.read_whole, request.unknown_tag_sections, request.trailing_bytes) == (False, 1, 1)
