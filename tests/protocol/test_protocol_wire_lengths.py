"""No length on the wire is trusted before it is checked against the bytes left: kio's native
reader would allocate what a count claims (a 2^32 count asks for 34 GB and aborts the process)."""

import asyncio
import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec.errors import InvalidRequestError
from kafkasec.protocol import wire

from server_support import logged_in, run

SCHEMAS = []
for api_key in range(0, 75):
    for version in range(0, 20):
        try:
            SCHEMAS.append(wire.request_schema(api_key, version))
        except Exception:
            pass

HUGE_COUNT = b"\xff\xff\xff\xff\x0f"  # the unsigned varint 2^32 - 1
CRASHER = struct.pack(">hhih", 3, 12, 7, -1) + b"\x00" + HUGE_COUNT + b"\x00"  # Metadata v12, 17 bytes


def test_every_request_schema_checks_its_own_default_body():
    assert len(SCHEMAS) > 150
    for schema in SCHEMAS:
        encoded = wire.encode(wire.build(schema))
        assert wire.check_lengths(schema, encoded) == len(encoded), schema


def test_a_huge_count_is_refused_before_any_allocation():
    with pytest.raises(InvalidRequestError, match="topics claims 4294967294 elements, but only 1 bytes remain"):
        wire.decode_request(CRASHER)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SCHEMAS), st.data())
def test_mutated_lengths_are_refused_or_read(schema, data):
    """Any body with bytes changed, cut short or extended: checked and refused, or read by kio."""
    encoded = bytearray(wire.encode(wire.build(schema)))
    for _ in range(data.draw(st.integers(0, 4))):
        if encoded:
            encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x0F]))
    encoded += data.draw(st.sampled_from([b"", HUGE_COUNT, b"\x7f\xff\xff\xff", b"\xff" * 9]))
    cut = data.draw(st.integers(0, len(encoded)))
    body = bytes(encoded[:cut])
    try:
        wire.check_lengths(schema, body)
    except InvalidRequestError:
        return
    from kio.serial import entity_reader

    try:
        entity_reader(schema)(body, 0)  # the lengths are sound: whatever kio says, it allocates no more than that
    except Exception:
        pass


def test_the_endpoint_answers_the_crasher_and_keeps_serving(endpoint):
    async def attack_then_ask():
        attacker = await logged_in(endpoint)
        try:
            await asyncio.wait_for(attacker.exchange(CRASHER), 5)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # closed: Kafka closes a connection whose request it cannot read
        finally:
            await attacker.close()
        honest = await logged_in(endpoint)
        try:
            return await honest.request(wire.build(wire.request_schema(3, 12), topics=None))
        finally:
            await honest.close()

    assert run(attack_then_ask()).topics  # the process is alive and answers others
