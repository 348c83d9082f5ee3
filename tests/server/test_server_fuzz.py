"""A structure-aware fuzzer of the endpoint, over real sockets.

For every API key and version the endpoint serves, a request is built from kio's schema (each
array with an item, each string filled), encoded, and then mutated where the structure is
fragile: a length or count replaced by a lie (2^31 - 1, -1, a 2^32 varint, null), bytes flipped,
the frame truncated, junk appended, the header's version pushed past the range. Each case goes
to a running endpoint on a logged-in connection; the login frames are fuzzed too, on fresh
connections. Any answer or a closed connection is fine; what may not happen is a crash, a
hang, an answer to another connection that stops coming, or memory that keeps growing.

``KAFKASEC_FUZZ_CASES`` (default 3000) sets how many mutated cases run; every case is named by
its seed, so ``FuzzCase.from_seed(seed)`` rebuilds a failing one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import struct
import time
import typing

import pytest

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection

from server_support import CATALOGUE, add_users, logged_in, open_security, serving

CASES = int(os.environ.get("KAFKASEC_FUZZ_CASES", "3000"))
WORKERS = 8
ANSWER_TIMEOUT_S = 10.0
MEMORY_BOUND_MIB = 200
SERVED_BEFORE_LOGIN = (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)


def sample(entity_type: type, rng: random.Random, depth: int = 0):
    """A valid instance of a kio class: arrays with one or two items, strings filled in."""
    values = {}
    for field in dataclasses.fields(entity_type):
        kafka_type = field.metadata.get("kafka_type")
        if kafka_type == "string":
            values[field.name] = rng.choice(["orders", "User:alice", "*", "billing", "x" * rng.randrange(1, 40)])
        elif kafka_type == "bytes":
            values[field.name] = rng.randbytes(rng.randrange(0, 24))
        elif kafka_type in ("int8", "int16", "int32", "int64"):
            values[field.name] = rng.choice([0, 1, 2, 3])
        elif depth < 3 and typing.get_origin(field.type) is not None:
            try:
                item = wire.item_type(entity_type, field.name)
            except ValueError:
                continue
            if dataclasses.is_dataclass(item):
                values[field.name] = tuple(sample(item, rng, depth + 1) for _ in range(rng.randrange(1, 3)))
    try:
        return wire.build(entity_type, **values)
    except (TypeError, ValueError):
        return wire.build(entity_type)  # a value outside a field's range: the zeros instead


LIES = [
    b"\x7f\xff\xff\xff",  # int32 count or bytes length: 2^31 - 1
    b"\xff\xff\xff\xff",  # int32 -1 (null) or a 2^32 - 1 count read unsigned
    b"\xff\xff",  # int16 string length -1 (null)
    b"\x7f\xff",  # int16 length 32767
    b"\xff\xff\xff\xff\x0f",  # compact length varint 2^32 - 1
    b"\x80\x80\x80\x80\x80\x80",  # an unterminated varint
    b"\x00",  # compact null
]


def mutate(frame: bytes, rng: random.Random, max_version: int) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(6)
    position = rng.randrange(len(data))
    if kind == 0:  # a length or count that lies, written over whatever is there
        lie = rng.choice(LIES)
        data[position : position + len(lie)] = lie
    elif kind == 1:  # the same lie inserted, shifting the rest
        data[position:position] = rng.choice(LIES)
    elif kind == 2:
        del data[position:]
    elif kind == 3:
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 4:
        data += rng.randbytes(rng.randrange(1, 64))
    else:  # a version the endpoint does not serve, or a negative one
        data[2:4] = struct.pack(">h", rng.choice([max_version + 1, -1, 0x7FFF]))
    return bytes(data)


@dataclasses.dataclass(frozen=True)
class FuzzCase:
    seed: int
    api_key: int
    version: int
    frame: bytes
    before_login: bool

    @classmethod
    def from_seed(cls, seed: int, ranges: dict, mutated: bool = True) -> FuzzCase:
        rng = random.Random(seed)
        api_key = rng.choice(sorted(ranges))
        low, high = ranges[api_key]
        version = rng.randint(low, high)
        body = sample(wire.request_schema(api_key, version), rng)
        frame = wire.encode_request(body, correlation_id=seed & 0x7FFFFFFF, client_id=rng.choice([None, "fuzz"]))
        if mutated:
            frame = mutate(frame, rng, high)
        return cls(seed, api_key, version, frame, before_login=api_key in SERVED_BEFORE_LOGIN and rng.random() < 0.5)


async def answer_or_close(connection: KafkaConnection, frame: bytes) -> bytes | None:
    """The answer to ``frame``, or None when the endpoint closed the connection."""
    try:
        return await asyncio.wait_for(connection.exchange(frame), ANSWER_TIMEOUT_S)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def resident_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    with open_security(tmp_path_factory.mktemp("fuzz") / "state.db") as security:
        add_users(security)
        with serving(security) as endpoint:
            yield endpoint


def test_every_served_api_and_version_is_generated_and_answered(endpoint):
    """Unmutated, the generator's requests reach every handler: an answer with their correlation id."""
    ranges = endpoint._apis.ranges
    wanted = {(api_key, version) for api_key, (low, high) in ranges.items() for version in range(low, high + 1)}

    async def each_once():
        answered = set()
        connection = await logged_in(endpoint)
        seed = 0
        while wanted - answered and seed < 50 * len(wanted):
            case = FuzzCase.from_seed(seed, ranges, mutated=False)
            seed += 1
            if (case.api_key, case.version) in answered:
                continue
            answer = await answer_or_close(connection, case.frame)
            assert answer is not None, f"seed {seed - 1}: API {case.api_key} v{case.version} closed the connection"
            assert struct.unpack(">i", answer[:4])[0] == case.seed & 0x7FFFFFFF
            answered.add((case.api_key, case.version))
        await connection.close()
        return answered

    assert asyncio.run(each_once()) == wanted


@pytest.mark.slow
def test_mutated_requests_never_crash_stall_or_bloat_the_endpoint(endpoint):
    ranges = endpoint._apis.ranges
    metadata = wire.build(wire.request_schema(3, 12), topics=None)

    async def fuzz():
        canary = await logged_in(endpoint)
        seeds = iter(range(1_000_000, 1_000_000 + CASES))
        outcomes = {"answered": 0, "closed": 0}

        async def worker():
            connection = None
            for seed in seeds:
                case = FuzzCase.from_seed(seed, ranges)
                if case.before_login:
                    fresh = await KafkaConnection.open(endpoint.host, endpoint.port)
                    answer = await answer_or_close(fresh, case.frame)
                    await fresh.close()
                else:
                    connection = connection or await logged_in(endpoint)
                    answer = await answer_or_close(connection, case.frame)
                    if answer is None:
                        await connection.close()
                        connection = None
                outcomes["answered" if answer is not None else "closed"] += 1
                if seed % 250 == 0:  # the endpoint keeps answering an innocent client
                    answered = await asyncio.wait_for(canary.request(metadata), ANSWER_TIMEOUT_S)
                    assert len(answered.topics) == len(CATALOGUE.topics), f"after seed {seed}"
            if connection is not None:
                await connection.close()

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
        await canary.close()
        return outcomes

    before = resident_mib()
    outcomes = asyncio.run(fuzz())
    grown = resident_mib() - before
    assert sum(outcomes.values()) == CASES
    assert outcomes["answered"] > CASES // 10 and outcomes["closed"] > CASES // 10, outcomes
    assert grown < MEMORY_BOUND_MIB, f"+{grown:.0f} MiB over {CASES} cases"
    # Every fuzzing connection (and the canary) is let go; the endpoint's thread may take a
    # moment to see the last closes.
    deadline = time.monotonic() + 5
    while endpoint.connection_count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert endpoint.connection_count == 0
