"""The gateway's side toward the broker behind it: pipelined connections to each upstream broker.

An :class:`UpstreamLink` is one connection to one upstream broker, opened and logged in the
way ``--command-config`` describes (:class:`~kafkasec.client.settings.ClientSettings`: TLS, SASL
with SCRAM, PLAIN or OAUTHBEARER), then used as a pipe: frames go out as they come, each with
the link's own correlation id, and the answers, which a Kafka broker sends in order, are
matched to them in that order. A request Kafka answers with nothing (a Produce with acks=0)
may be answered all the same by a broker that is not Kafka (Tansu answers it): such an answer
is read and dropped, and an answer that skips it is taken as the next one.

What the upstream sends is not trusted: a frame announced larger than
``MAX_RESPONSE_BYTES`` or negative, an answer that does not carry the correlation id expected
next, or silence longer than the request timeout (``request.timeout.ms`` of the upstream's
properties) breaks the link: every request waiting on it fails with :class:`UpstreamError`,
and the gateway closes the client connections that were using it (their clients treat it as
a retriable network error, reconnect, and the gateway opens a new link).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Callable, Sequence

from kafkasec.client.connection import MAX_RESPONSE_BYTES, KafkaConnection
from kafkasec.client.settings import ClientSettings
from kafkasec.errors import KafkaError
from kafkasec.protocol import wire

log = logging.getLogger("kafkasec.server.upstream")


MAX_UNANSWERED = 4096
CHUNK_BYTES = 16 * 1024
"""The buffer a link reads small answers into: dozens of them at a time. Every client
connection has its own link, so this is memory per connection; an answer larger than this is
read into a buffer of its own (see :class:`_AnswerReader`)."""
LARGE_ANSWER_FIRST_BYTES = 8 * 1024 * 1024
"""The most a link sets aside for an answer larger than its chunk before the answer's bytes
come: beyond it the buffer grows (doubling) only as they arrive, so an upstream that announces a
frame of MAX_RESPONSE_BYTES and sends a few bytes makes a link hold 8 MiB, not 256. Fetch
answers up to it (eight partitions at the consumers' default max.partition.fetch.bytes of
1 MiB) are read straight into one buffer of their size, as before; a larger one is copied as its
buffer doubles, at most its own size in all."""


class UpstreamError(ConnectionError):
    """The upstream broker could not be reached, went away, or sent what a broker does not."""


COPY_BELOW_BYTES = 64 * 1024
"""Frames smaller than this are copied whole; larger ones go in two pieces (see :func:`framed`)."""


def framed(frame: bytes | bytearray, correlation_id: int, offset: int) -> tuple[bytes | memoryview, ...]:
    """``frame`` as it goes on a connection (its size first) with the int32 correlation id at
    ``offset`` replaced (4 in a request header, 0 in a response header), as pieces to write one
    after the other. A large frame is two: the few bytes up to the id, and a view of the rest,
    so that a Produce's records or a Fetch answer of megabytes is not copied to change four
    bytes; a small one is one piece, since each piece may cost a system call, which is dearer
    than copying a few kilobytes (:func:`write_pieces` writes them so)."""
    head = wire.FRAME_SIZE.pack(len(frame)) + frame[:offset] + correlation_id.to_bytes(4, "big", signed=True)
    if len(frame) < COPY_BELOW_BYTES:
        return (head + frame[offset + 4:],)
    return head, memoryview(frame)[offset + 4:]


AnswerCallback = Callable[[bytes | bytearray | None, "UpstreamError | None"], None]
"""Called with the answer frame (its correlation id the link's; a bytearray when it was larger
than the link's chunk buffer, read into its own), or with the error that broke the link before
it came."""


def write_pieces(writer, pieces: Sequence[bytes | memoryview]) -> None:
    """Write ``pieces`` (frames, and :func:`framed`'s views of large ones) in as few calls as
    they allow: runs of small pieces joined into one write, each view written as it is (a
    join would copy the megabytes it exists not to copy)."""
    if len(pieces) == 1:
        writer.write(pieces[0])
        return
    small: list[bytes | memoryview] = []
    for piece in pieces:
        if isinstance(piece, memoryview):
            if small:
                writer.write(b"".join(small))
                small.clear()
            writer.write(piece)
        else:
            small.append(piece)
    if small:
        writer.write(b"".join(small) if len(small) > 1 else small[0])


class UpstreamLink:
    """One logged-in, pipelined connection to one upstream broker; build it with :meth:`open`.

    Requests are queued with :meth:`send` and go out together at :meth:`flush` (one write for
    all the requests a client's read brought); answers are read by the link's own protocol
    (:class:`_AnswerReader`) as the socket gives them, and each is handed to its request's
    callback as soon as it is whole, in order: no task, stream or copy between the socket and
    the callback."""

    def __init__(self, connection: KafkaConnection, address: tuple[str, int], *, request_timeout_s: float):
        self.address = address
        self.server_versions = connection.server_versions
        self._correlation_id = connection.next_correlation_id()
        self._pending: collections.deque[tuple[int, AnswerCallback | None, float]] = collections.deque()
        """Requests sent and not yet answered, in order, with when each was sent; None: an
        answer that may not come."""
        self._outgoing: list[bytes | memoryview] = []
        self._request_timeout_s = request_timeout_s
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._error: UpstreamError | None = None
        self._closing = False
        self._writable: asyncio.Future | None = None
        """Set while the upstream reads slower than the link writes (the transport paused it)."""
        self._closed = self._loop.create_future()
        self._transport, read_ahead = connection.detach()
        self._connection = connection  # kept: its StreamWriter closes the transport when collected
        answers = _AnswerReader(self)
        self._transport.set_protocol(answers)
        answers.feed(read_ahead)

    @classmethod
    async def open(cls, settings: ClientSettings, address: tuple[str, int]) -> UpstreamLink:
        """Connect to ``address``, log in as ``settings`` says and learn its API versions;
        UpstreamError naming the broker and why when that fails."""
        host, port = address
        timeout_s = settings.connection_setup_timeout_ms / 1000
        try:
            connection = await KafkaConnection.open(
                host, port, client_id=settings.client_id, timeout=timeout_s, ssl_context=settings.ssl_context,
            )
        except (OSError, asyncio.TimeoutError) as error:
            raise UpstreamError(f"upstream broker {host}:{port} unreachable: {error or type(error).__name__}") from None
        try:
            await asyncio.wait_for(cls._log_in(connection, settings), timeout_s)
        except asyncio.TimeoutError:
            await connection.close()
            raise UpstreamError(f"upstream broker {host}:{port} did not answer the login in {timeout_s:g} s") from None
        except (OSError, EOFError, KafkaError) as error:
            # Unreachable, not a Kafka broker, or it refused the gateway's login (a KafkaError
            # with its code: SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM ...).
            await connection.close()
            raise UpstreamError(f"upstream broker {host}:{port}: {error}") from None
        except BaseException:
            await connection.close()
            raise
        return cls(connection, address, request_timeout_s=settings.request_timeout_ms / 1000)

    @staticmethod
    async def _log_in(connection: KafkaConnection, settings: ClientSettings) -> None:
        await connection.negotiate()
        if settings.login is not None:
            await connection.authenticate(settings.login)

    @property
    def broken(self) -> bool:
        return self._error is not None

    def _next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return self._correlation_id

    def send(self, frame: bytes, on_answer: AnswerCallback | None) -> None:
        """Queue a request frame (its own correlation id is replaced) to go out at the next
        :meth:`flush`; ``on_answer`` gets its answer frame (whose correlation id is the link's:
        the caller puts its own back), or None when no answer comes. Frames go out in the
        order of the calls."""
        if self._error is not None:
            raise self._error
        correlation_id = self._next_correlation_id()
        self._pending.append((correlation_id, on_answer, self._loop.time()))
        # Kafka never answers acks=0: their entries, at the head, are let go once there are
        # many (a broker that does answer them, as Tansu, has answered long before).
        while len(self._pending) > MAX_UNANSWERED and self._pending[0][1] is None:
            self._pending.popleft()
        self._outgoing += framed(frame, correlation_id, 4)
        if on_answer is not None and self._timer is None:
            self._timer = self._loop.call_at(self._loop.time() + self._request_timeout_s, self._check_timeout)

    def flush(self) -> None:
        """Write the queued requests, in one system call where the socket takes them."""
        if self._outgoing and self._error is None:
            write_pieces(self._transport, self._outgoing)
        self._outgoing.clear()

    async def drain(self) -> None:
        """Wait while the upstream reads slower than clients send (back pressure); UpstreamError
        when the link breaks meanwhile."""
        if self._writable is not None:
            await self._writable
        if self._error is not None:
            raise self._error

    async def request(self, body):
        """Send a kio request body of the gateway's own (a Metadata refresh); its response body."""
        frame = wire.encode_request(body, correlation_id=0, client_id="kafkasec-gateway")
        answer: asyncio.Future = self._loop.create_future()

        def answered(frame: bytes | bytearray | None, error: UpstreamError | None) -> None:
            if answer.done():
                return
            if error is None:
                answer.set_result(frame)
            else:
                answer.set_exception(error)

        self.send(frame, answered)
        self.flush()
        await self.drain()
        return wire.decode_response(await answer, body.__api_key__, body.__version__)[1]

    def _lost(self, error: Exception | None) -> None:
        """The connection ended (the transport is gone): every request waiting fails."""
        reason = "closed the connection" if error is None else str(error) or type(error).__name__
        self._fail(UpstreamError(reason), quietly=self._closing)
        for waiting in (self._closed, self._writable):
            if waiting is not None and not waiting.done():
                waiting.set_result(None)

    def _answered(self, frame: bytes | bytearray) -> None:
        answered = int.from_bytes(frame[:4], "big", signed=True)
        pending = self._pending
        while pending and pending[0][1] is None and pending[0][0] != answered:
            pending.popleft()  # an acks=0 Produce the upstream did not answer
        if not pending:
            raise UpstreamError(f"sent an answer (correlation id {answered}) to no request")
        expected = pending[0][0]
        if answered != expected:
            # Raised before the request leaves the queue, so that failing the link fails it
            # too: its client is answered by a close, not left waiting.
            raise UpstreamError(f"answered correlation id {answered} where {expected} was next")
        _, on_answer, _ = pending.popleft()
        if on_answer is not None:
            on_answer(frame, None)

    def _check_timeout(self) -> None:
        """Fail the link if the oldest request awaiting an answer has waited request.timeout.ms.

        One timer for the link, set again for the next deadline when it fires early, not one
        per read. (Not asyncio.wait_for either: on Python 3.11 it can swallow the cancellation
        that closing the link sends, leaving the reader running.)"""
        self._timer = None
        oldest = next((sent_at for _, on_answer, sent_at in self._pending if on_answer is not None), None)
        if oldest is None or self._error is not None:
            return
        deadline = oldest + self._request_timeout_s
        if self._loop.time() >= deadline:
            self._fail(UpstreamError(f"no answer in {self._request_timeout_s:g} s (request.timeout.ms)"))
        else:
            self._timer = self._loop.call_at(deadline, self._check_timeout)

    def _fail(self, error: UpstreamError, *, quietly: bool = False) -> None:
        if self._error is None:
            self._error = UpstreamError(f"upstream broker {self.address[0]}:{self.address[1]}: {error}")
            if not quietly:
                log.warning("%s", self._error)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._outgoing.clear()
        while self._pending:
            _, on_answer, _ = self._pending.popleft()
            if on_answer is not None:
                on_answer(None, self._error)
        self._transport.abort()

    async def close(self) -> None:
        """Close the link; requests still waiting fail with UpstreamError."""
        self._closing = True
        self._fail(UpstreamError("the link was closed"), quietly=True)
        await self._closed  # the transport's connection_lost: nothing more is read


class _AnswerReader(asyncio.BufferedProtocol):
    """A link's side of its socket: answers read straight into buffers the link owns.

    The socket fills one chunk buffer (:data:`CHUNK_BYTES`), and each whole answer in it is
    copied out once and handed to :meth:`UpstreamLink._answered`. An answer larger than the
    chunk (a Fetch of megabytes) gets a buffer of its own, which the socket fills directly: it
    reaches the callback as that bytearray. The buffer starts at the answer's size up to
    ``large_first_bytes`` and doubles as it fills (one copy each time, at most the answer's
    size in all), so what an upstream announces is not set aside before it is sent. What it
    announces is checked first: a size outside 4..MAX_RESPONSE_BYTES breaks the link."""

    def __init__(self, link: UpstreamLink, *, large_first_bytes: int = LARGE_ANSWER_FIRST_BYTES):
        self._link = link
        self._large_first_bytes = large_first_bytes
        self._chunk = bytearray(CHUNK_BYTES)
        self._view = memoryview(self._chunk)
        self._start = self._end = 0
        """The bytes read and not yet taken: ``_chunk[_start:_end]``."""
        self._large: bytearray | None = None
        """An answer larger than the chunk, being read into its own buffer."""
        self._large_view: memoryview | None = None
        self._large_size = 0
        """The size of the answer being read into ``_large``."""
        self._filled = 0

    def feed(self, data: bytes) -> None:
        """Bytes that were read before this protocol took the socket over, read first."""
        at = 0
        while at < len(data) and not self._link.broken:
            room = self.get_buffer(len(data) - at)
            taken = min(len(room), len(data) - at)
            room[:taken] = data[at:at + taken]
            at += taken
            self.buffer_updated(taken)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large_view is not None:
            return self._large_view[self._filled:]
        return self._view[self._end:]

    def buffer_updated(self, nbytes: int) -> None:
        try:
            if self._large is not None:
                self._filled += nbytes
                if self._filled == self._large_size:
                    answer, self._large, self._large_view = self._large, None, None
                    self._link._answered(answer)
                elif self._filled == len(self._large):
                    self._grow_large()
                return
            self._end += nbytes
            self._take_answers()
        except UpstreamError as error:
            self._link._fail(error)

    def _take_answers(self) -> None:
        link, chunk, view = self._link, self._chunk, self._view
        start, end = self._start, self._end
        while end - start >= wire.FRAME_SIZE.size and not link.broken:
            (size,) = wire.FRAME_SIZE.unpack_from(chunk, start)
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise UpstreamError(f"announced a {size}-byte answer (at most {MAX_RESPONSE_BYTES})")
            frame_end = start + wire.FRAME_SIZE.size + size
            if frame_end <= end:
                answer = bytes(view[start + wire.FRAME_SIZE.size:frame_end])
                start = self._start = frame_end  # taken before the callback, which may fail the link
                link._answered(answer)
                continue
            if wire.FRAME_SIZE.size + size > len(chunk):
                # Too large for the chunk: what came of it moves to a buffer of its own,
                # which the socket fills from now on.
                self._large_size = size
                self._large = bytearray(min(size, max(self._large_first_bytes, end - start)))
                self._large_view = memoryview(self._large)
                self._filled = end - start - wire.FRAME_SIZE.size
                self._large_view[:self._filled] = view[start + wire.FRAME_SIZE.size:end]
                start = end
            elif frame_end > len(chunk):
                # It fits the chunk, but not where it starts: it moves to the front.
                chunk[:end - start] = chunk[start:end]
                start, end = 0, end - start
            break
        if start == end:
            start = end = 0
        elif end == len(chunk):  # the start of a size only, at the very end
            chunk[:end - start] = chunk[start:end]
            start, end = 0, end - start
        self._start, self._end = start, end

    def _grow_large(self) -> None:
        """The large answer's buffer is full and more of it is to come: twice the room."""
        assert self._large is not None  # reading a large answer
        grown = bytearray(min(self._large_size, 2 * len(self._large)))
        grown[:self._filled] = self._large
        self._large, self._large_view = grown, memoryview(grown)

    def eof_received(self) -> bool:
        return False  # the transport closes; connection_lost fails the link

    def connection_lost(self, exc: Exception | None) -> None:
        self._link._lost(exc)

    def pause_writing(self) -> None:
        link = self._link
        if link._writable is None or link._writable.done():
            link._writable = link._loop.create_future()

    def resume_writing(self) -> None:
        writable = self._link._writable
        if writable is not None and not writable.done():
            writable.set_result(None)
