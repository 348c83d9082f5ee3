"""The gateway's link upstream reads answers with a protocol of its own (upstream._AnswerReader):
the socket fills a chunk buffer, and an answer larger than the chunk a buffer of its own, which
grows as the answer's bytes come. Whatever sizes the answers have and however the socket splits
them, each answer reaches the link whole, once, in order; a size no broker sends breaks the link
and nothing after it is read; a size announced is not set aside before its bytes come."""

from __future__ import annotations

import tracemalloc

from hypothesis import example, given, settings, strategies as st

from kafkasec.client.connection import MAX_RESPONSE_BYTES
from kafkasec.protocol import wire
from kafkasec.server.upstream import CHUNK_BYTES, LARGE_ANSWER_FIRST_BYTES, UpstreamError, _AnswerReader


class RecordingLink:
    """What _AnswerReader calls on its link: the answers it hands over, and the error that broke it."""

    def __init__(self) -> None:
        self.answers: list[bytes | bytearray] = []
        self.error: UpstreamError | None = None

    @property
    def broken(self) -> bool:
        return self.error is not None

    def _answered(self, frame: bytes | bytearray) -> None:
        self.answers.append(frame)

    def _fail(self, error: UpstreamError) -> None:
        self.error = error


def answer(index: int, size: int) -> bytes:
    """An answer frame of ``size`` bytes that says which it is (its first 4 bytes, the place of a
    correlation id) and whose other bytes differ from its neighbours'."""
    body = index.to_bytes(4, "big") + bytes((index + n) % 251 for n in range(min(size - 4, 512)))
    return (body * (size // len(body) + 1))[:size]


def socket_reads(reader: _AnswerReader, stream: bytes, splits: list[int]) -> None:
    """Give ``stream`` to ``reader`` as a transport does: each read fills (part of) the buffer
    get_buffer() offers, as much as the socket had (``splits`` cycled) and no more than offered."""
    at, turn = 0, 0
    while at < len(stream):
        room = reader.get_buffer(-1)
        assert len(room) > 0
        taken = min(len(room), len(stream) - at, splits[turn % len(splits)])
        room[:taken] = stream[at:at + taken]
        reader.buffer_updated(taken)
        at += taken
        turn += 1


sizes = st.one_of(st.integers(4, 300), st.integers(300, 70_000), st.integers(CHUNK_BYTES - 8, CHUNK_BYTES + 4),
                  st.integers(CHUNK_BYTES + 5, 3 * CHUNK_BYTES))


# The first room for a large answer: the default (every large answer here fits it), or so small
# that the answers above 1.5 chunks grow it once or more while they are read.
first_rooms = st.sampled_from([LARGE_ANSWER_FIRST_BYTES, CHUNK_BYTES + CHUNK_BYTES // 2, CHUNK_BYTES])


@settings(max_examples=80, deadline=None)
@given(st.lists(sizes, min_size=1, max_size=6), st.lists(st.integers(1, 400_000), min_size=1, max_size=8), first_rooms)
@example([CHUNK_BYTES - 6, 10], [CHUNK_BYTES], LARGE_ANSWER_FIRST_BYTES)  # the chunk ends two bytes into the next answer's size
@example([30, CHUNK_BYTES - 100], [CHUNK_BYTES], LARGE_ANSWER_FIRST_BYTES)  # an answer that fits the chunk, but not where it starts
@example([CHUNK_BYTES - 4, 4], [CHUNK_BYTES, 1], LARGE_ANSWER_FIRST_BYTES)  # an answer exactly the chunk's size
@example([3 * CHUNK_BYTES, 20], [CHUNK_BYTES], CHUNK_BYTES)  # grown twice, each time exactly full
def test_every_answer_arrives_whole_once_and_in_order_however_the_socket_splits_them(answer_sizes, splits, first_room):
    frames = [answer(index, size) for index, size in enumerate(answer_sizes)]
    link = RecordingLink()
    reader = _AnswerReader(link, large_first_bytes=first_room)  # type: ignore[arg-type]  # the link's side it calls, recorded
    socket_reads(reader, b"".join(wire.size_prefixed(frame) for frame in frames), splits)
    assert link.error is None
    assert [bytes(got) for got in link.answers] == frames
    for got in link.answers:
        # Larger than the chunk: the buffer the socket filled, handed over as it is.
        assert type(got) is (bytearray if wire.FRAME_SIZE.size + len(got) > CHUNK_BYTES else bytes)


@settings(max_examples=30, deadline=None)
@given(st.lists(sizes, max_size=4), st.integers(1, 400_000))
def test_bytes_read_before_the_take_over_come_first(answer_sizes, split):
    frames = [answer(index, size) for index, size in enumerate([*answer_sizes, 40])]
    stream = b"".join(wire.size_prefixed(frame) for frame in frames)
    link = RecordingLink()
    reader = _AnswerReader(link)  # type: ignore[arg-type]
    read_ahead = min(split, len(stream))
    reader.feed(stream[:read_ahead])
    socket_reads(reader, stream[read_ahead:], [split])
    assert [bytes(got) for got in link.answers] == frames and link.error is None


def test_a_size_no_broker_sends_breaks_the_link_and_nothing_after_it_is_read():
    for bad_size in (-1, 0, 3, MAX_RESPONSE_BYTES + 1, 2**31 - 1):
        link = RecordingLink()
        reader = _AnswerReader(link)  # type: ignore[arg-type]
        good = answer(1, 30)
        stream = wire.size_prefixed(good) + wire.FRAME_SIZE.pack(bad_size) + answer(2, 30)
        socket_reads(reader, stream[:len(stream)], [len(stream)])
        assert link.answers == [good]
        assert isinstance(link.error, UpstreamError)
        assert f"announced a {bad_size}-byte answer (at most {MAX_RESPONSE_BYTES})" in str(link.error)


def test_an_answer_announced_huge_holds_only_what_came_of_it():
    """An upstream that announces the largest answer allowed and sends a few bytes of it makes
    the link set aside LARGE_ANSWER_FIRST_BYTES, not the 256 MiB announced; as the bytes come,
    the room grows with them, and the answer arrives whole."""
    link = RecordingLink()
    reader = _AnswerReader(link)  # type: ignore[arg-type]
    tracemalloc.start()
    try:
        socket_reads(reader, wire.FRAME_SIZE.pack(MAX_RESPONSE_BYTES) + bytes(CHUNK_BYTES), [CHUNK_BYTES])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert link.error is None and link.answers == []
    assert held < 2 * LARGE_ANSWER_FIRST_BYTES

    first_room = 4 * CHUNK_BYTES
    size = 5 * first_room + 123  # grown three times while it is read
    link = RecordingLink()
    reader = _AnswerReader(link, large_first_bytes=first_room)  # type: ignore[arg-type]
    frame = answer(7, size)
    socket_reads(reader, wire.size_prefixed(frame) + wire.size_prefixed(answer(8, 40)), [65_536, 1_000_000, 3])
    assert [bytes(got) for got in link.answers] == [frame, answer(8, 40)] and link.error is None
