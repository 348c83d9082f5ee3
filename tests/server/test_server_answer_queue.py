"""AnswerQueue: a pipelined connection's answers go out in the order of the requests whatever
order they are made in; a failed answer closes the connection at its turn, after the answers
before it and before any after it; at MAX_IN_FLIGHT the reader waits for room."""

from __future__ import annotations

import asyncio
import logging

from hypothesis import given, settings, strategies as st

from kafkasec.server.answer_queue import MAX_IN_FLIGHT, AnswerQueue
from kafkasec.server.frame_reader import FrameReader


async def _queue():
    """(an AnswerQueue writing to the server's side of a loopback connection, the client's reader, close)."""
    accepted: asyncio.Future = asyncio.get_running_loop().create_future()

    async def accept(reader, writer):
        accepted.set_result((reader, writer))
        await asyncio.sleep(3600)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    client_reader, client_writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    reader, writer = await accepted
    frames = FrameReader(reader, writer.transport, 60_000)
    queue = AnswerQueue(writer, frames)

    def close():
        queue.close()
        frames.close()
        client_writer.close()
        server.close()

    return queue, client_reader, close


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(8)))
def test_answers_go_out_in_request_order_whatever_order_they_are_made_in(order):
    async def scenario():
        queue, client, close = await _queue()
        places = [queue.reserve() for _ in range(8)]
        for index in order:
            queue.fill(places[index], (bytes([index]) * 3,))
        received = await client.readexactly(24)
        close()
        return received

    assert asyncio.run(scenario()) == b"".join(bytes([index]) * 3 for index in range(8))


def test_a_failed_answer_closes_the_connection_after_those_before_it(caplog):
    caplog.set_level(logging.INFO, "kafkasec.server.gateway")

    async def scenario():
        queue, client, close = await _queue()
        first, failed, after = queue.reserve(), queue.reserve(), queue.reserve()
        queue.fill(after, (b"after",))
        queue.fail(failed, "the upstream went away")
        assert client.at_eof() is False
        queue.fill(first, (b"first",))
        received = await client.read()  # to the end: the connection was closed
        assert queue.closed
        close()
        return received

    assert asyncio.run(scenario()) == b"first"
    assert "closing a client connection: the upstream went away" in caplog.text


def test_an_answer_made_by_a_task_takes_its_place_and_none_closes_quietly():
    async def scenario():
        queue, client, close = await _queue()

        async def slow(data):
            await asyncio.sleep(0.05)
            return (data,)

        async def nothing():
            return None

        queue.add_task(slow(b"1"))
        queue.add((b"2",))
        queue.add_task(nothing())
        queue.add((b"never",))
        received = await client.read()
        close()
        return received

    assert asyncio.run(scenario()) == b"12"


def test_at_max_in_flight_the_reader_waits_for_room():
    async def scenario():
        queue, client, close = await _queue()
        places = [queue.reserve() for _ in range(MAX_IN_FLIGHT)]
        waiting = asyncio.ensure_future(queue.room())
        await asyncio.sleep(0.01)
        assert not waiting.done()
        queue.fill(places[0], (b"x",))
        await asyncio.wait_for(waiting, 1)
        everything = asyncio.ensure_future(queue.all_written())
        await asyncio.sleep(0.01)
        assert not everything.done()
        for place in places[1:]:
            queue.fill(place, (b"x",))
        await asyncio.wait_for(everything, 1)
        assert await client.readexactly(MAX_IN_FLIGHT) == b"x" * MAX_IN_FLIGHT
        close()

    asyncio.run(scenario())
