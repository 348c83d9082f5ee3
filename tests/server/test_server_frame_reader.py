"""FrameReader (a connection's frames read a chunk at a time, one idle deadline per
connection) over real loopback sockets: frames split and joined any way, the size rules, the
budget before login, and the idle deadline moved by frames and answers."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec.server.frame_reader import ConnectionClosed, FrameReader
from kafkasec.server.limits import LimitExceeded, UnauthenticatedBytes


@contextlib.asynccontextmanager
async def _connected(idle_timeout_ms: int = 10_000):
    """(a FrameReader on the server's side of a loopback connection, the client's writer),
    both closed when the block ends."""
    accepted: asyncio.Future = asyncio.get_running_loop().create_future()

    async def accept(reader, writer):
        accepted.set_result((reader, writer))
        await asyncio.sleep(3600)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, client = await asyncio.open_connection("127.0.0.1", port)
    reader, writer = await accepted
    frames = FrameReader(reader, writer.transport, idle_timeout_ms)
    try:
        yield frames, client
    finally:
        frames.close()
        client.close()
        server.close()


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@settings(max_examples=30, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=12), cuts=st.lists(st.integers(1, 64), max_size=40))
def test_frames_come_out_whole_and_in_order_however_the_bytes_arrive(payloads, cuts):
    stream = b"".join(_framed(payload) for payload in payloads)
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(stream[at:at + cut])
        at += cut
    pieces.append(stream[at:])

    async def scenario():
        async with _connected() as (frames, client):
            async def send():
                for piece in pieces:
                    if piece:
                        client.write(piece)
                        await client.drain()
                        await asyncio.sleep(0)

            sending = asyncio.ensure_future(send())
            received: list[bytes] = []
            while len(received) < len(payloads):
                received += await frames.frames(1 << 20)
            await sending
            return received

    assert asyncio.run(scenario()) == payloads


@pytest.mark.parametrize("size, message", [(-1, r"Invalid receive \(size = -1\)"),
                                           (1025, r"Invalid receive \(size = 1025 larger than 1024\)")])
def test_a_size_out_of_bounds_closes_the_connection(size, message):
    async def scenario():
        async with _connected() as (frames, client):
            client.write(struct.pack(">i", size) + b"x" * 8)
            with pytest.raises(ConnectionClosed, match=message):
                await frames.frame(1024)

    asyncio.run(scenario())


def test_a_large_frame_before_login_draws_on_the_budget_while_it_is_read():
    budget = UnauthenticatedBytes(100_000)

    async def scenario():
        async with _connected() as (frames, client):
            client.write(struct.pack(">i", 60_000) + b"a" * 1000)  # the rest comes later
            reading = asyncio.ensure_future(frames.frame(512 * 1024, budget=budget))
            await asyncio.sleep(0.1)
            with pytest.raises(LimitExceeded):
                budget.reserve(60_000)  # held by the frame being read
            client.write(b"a" * 59_000)
            assert len(await reading) == 60_000
            assert budget.reserve(60_000) == 60_000  # given back

    asyncio.run(scenario())


def test_a_frame_the_budget_cannot_hold_closes_the_connection():
    async def scenario():
        async with _connected() as (frames, client):
            client.write(struct.pack(">i", 60_000) + b"a" * 10)
            with pytest.raises(ConnectionClosed):
                await frames.frame(512 * 1024, budget=UnauthenticatedBytes(50_000))

    asyncio.run(scenario())


def test_the_idle_deadline_moves_with_frames_and_answers_and_closes_a_silent_connection():
    async def scenario():
        async with _connected(idle_timeout_ms=300) as (frames, client):
            started = time.monotonic()
            for _ in range(4):  # active for longer than the deadline: frames in, answers out
                client.write(_framed(b"ping"))
                assert await frames.frame(1024) == b"ping"
                await asyncio.sleep(0.1)
                frames.touch()
                await asyncio.sleep(0.1)
            assert time.monotonic() - started > 0.6 and not frames.idle
            client.write(struct.pack(">i", 100) + b"half")  # then only part of a frame
            with pytest.raises(ConnectionClosed, match=r"idle for connections.max.idle.ms \(300 ms\)"):
                await frames.frame(1024)
            assert frames.idle

    asyncio.run(scenario())


def test_the_client_going_away_is_an_incomplete_read_not_an_idle_close():
    async def scenario():
        async with _connected() as (frames, client):
            client.write(struct.pack(">i", 10) + b"abc")
            client.close()
            with pytest.raises(asyncio.IncompleteReadError):
                await frames.frame(1024)
            assert not frames.idle

    asyncio.run(scenario())
