"""A client connection's frames, read a chunk at a time, and its idle deadline.

Kafka's frames are an int32 size and that many bytes. Reading each with two
``readexactly`` calls costs two awaits a frame, and a timer a frame for the idle deadline;
at a few thousand small requests a second that machinery cost more than the requests. A
:class:`FrameReader` reads whatever the socket has (up to :data:`CHUNK_BYTES`) and hands over
every whole frame it holds, and keeps one deadline for the connection, moved on when a frame
arrives or an answer leaves (Kafka's ``connections.max.idle.ms`` counts both).
"""

from __future__ import annotations

import asyncio

from kafkasec.protocol import wire
from kafkasec.server.limits import LimitExceeded, UnauthenticatedBytes

CHUNK_BYTES = 64 * 1024
"""What one read asks of the socket: many small frames, or a good piece of a large one."""


class ConnectionClosed(Exception):
    """The endpoint closes this connection; ``args[0]`` says why, for the log."""


class FrameReader:
    """Size-prefixed frames from ``reader`` (an ``asyncio.StreamReader``, or the decrypted side
    of a TLS connection), and the idle deadline of the connection whose ``transport`` it aborts
    after ``idle_timeout_ms`` without a whole frame in or an answer out (:meth:`touch`)."""

    def __init__(self, reader, transport: asyncio.WriteTransport, idle_timeout_ms: int):
        self._reader = reader
        self._transport = transport
        self._buffer = bytearray()
        self._idle_timeout_ms = idle_timeout_ms
        self._idle_s = idle_timeout_ms / 1000
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        self.idle = False
        """The connection was aborted for being idle."""
        # One timer for the connection's life: when it fires early (the connection was active
        # meanwhile) it is set again for the new deadline, instead of moving it at every frame.
        self._timer = self._loop.call_at(self.last_active + self._idle_s, self._check_idle)

    def touch(self) -> None:
        """The connection was active now (an answer went out)."""
        self.last_active = self._loop.time()

    def close(self) -> None:
        self._timer.cancel()

    def _check_idle(self) -> None:
        deadline = self.last_active + self._idle_s
        if self._loop.time() >= deadline:
            self.idle = True
            self._transport.abort()
        else:
            self._timer = self._loop.call_at(deadline, self._check_idle)

    async def frame(self, limit: int, *, budget: UnauthenticatedBytes | None = None) -> bytes:
        """The next frame, at most ``limit`` bytes; a large one before login draws on ``budget``
        (the bytes held for clients not logged in) while it is read. ConnectionClosed when the
        size breaks the rules or the connection was idle too long."""
        while len(self._buffer) < wire.FRAME_SIZE.size:
            await self._fill()
        size = self._size(limit)
        reserved = 0
        if budget is not None and len(self._buffer) < wire.FRAME_SIZE.size + size:
            try:
                reserved = budget.reserve(size)
            except LimitExceeded as refused:
                raise ConnectionClosed(refused.args[0]) from None
        try:
            while len(self._buffer) < wire.FRAME_SIZE.size + size:
                await self._fill()
        finally:
            if reserved:
                budget.release(reserved)  # type: ignore[union-attr]  # reserved only with a budget
        return self._take(size)

    async def frames(self, limit: int) -> list[bytes]:
        """Every whole frame the connection has sent so far: at least one, waiting for it."""
        frames = [await self.frame(limit)]
        buffer = self._buffer
        while len(buffer) >= wire.FRAME_SIZE.size:
            size = self._size(limit)
            if len(buffer) < wire.FRAME_SIZE.size + size:
                break
            frames.append(self._take(size))
        return frames

    def _size(self, limit: int) -> int:
        (size,) = wire.FRAME_SIZE.unpack_from(self._buffer)
        if size < 0 or size > limit:
            raise ConnectionClosed(f"Invalid receive (size = {size} larger than {limit})" if size > 0 else f"Invalid receive (size = {size})")
        return size

    def _take(self, size: int) -> bytes:
        frame = wire.cut_frame(self._buffer, size)
        self.last_active = self._loop.time()
        return frame

    async def _fill(self) -> None:
        try:
            data = await self._reader.read(CHUNK_BYTES)
        except ConnectionError:
            if self.idle:
                raise self._idle_error() from None
            raise
        if not data:
            if self.idle:
                raise self._idle_error()
            raise asyncio.IncompleteReadError(bytes(self._buffer), None)
        self._buffer += data

    def _idle_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"idle for connections.max.idle.ms ({self._idle_timeout_ms} ms)")
