"""A pipelined connection's answers, written in the order of its requests as each is ready.

Kafka's clients send several requests before the first answer and match the answers to them
in order. A gateway's answers are ready at different times: a refusal at once, a forwarded
request's when the upstream answers it, kafkasec's own answer when a thread has made it. Each
request takes a place (:meth:`AnswerQueue.reserve`) when it is read; a place is filled when
its answer is known, and every filled place at the head goes out in one write. No task or
queue hand-off per request: the upstream's answer fills its place from the link's read.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Awaitable, Sequence

from kafkasec.errors import KafkaError
from kafkasec.server.frame_reader import ConnectionClosed, FrameReader
from kafkasec.server.upstream import write_pieces

log = logging.getLogger("kafkasec.server.gateway")

MAX_IN_FLIGHT = 128
"""Requests of one connection awaiting their answers, before the gateway stops reading it
(Kafka's clients send at most max.in.flight.requests.per.connection, 5 by default)."""

Pieces = Sequence[bytes | memoryview]


class AnswerPlace:
    """One request's place among its connection's answers."""

    __slots__ = ("pieces", "filled", "failure")

    def __init__(self) -> None:
        self.pieces: Pieces | None = ()
        """What to write at this answer's turn; None: close the connection instead."""
        self.filled = False
        self.failure: str | None = None
        """Why the connection closes (logged), when it does."""


class AnswerQueue:
    """The answers of the connection that ``writer`` writes to, in order (see the module's
    docstring). A place that fails closes the connection when its turn comes: the answers
    before it are written, none after."""

    def __init__(self, writer, frames: FrameReader):
        self._writer = writer
        self._frames = frames
        self._places: collections.deque[AnswerPlace] = collections.deque()
        self._tasks: set[asyncio.Task] = set()
        self._room = asyncio.Event()
        self._room.set()
        self._all_written = asyncio.Event()
        self._all_written.set()
        self.closed = False
        """The connection was closed at a failed answer's turn, or ended."""

    def __len__(self) -> int:
        return len(self._places)

    def reserve(self) -> AnswerPlace:
        """A place for the answer to the request just read."""
        place = AnswerPlace()
        self._places.append(place)
        self._all_written.clear()
        if len(self._places) >= MAX_IN_FLIGHT:
            self._room.clear()
        return place

    def add(self, pieces: Pieces) -> None:
        """An answer known as its request is read."""
        self.fill(self.reserve(), pieces)

    def add_task(self, making: Awaitable[Pieces | None]) -> None:
        """An answer that ``making`` gives (None: close the connection at its turn)."""
        self.fill_from(self.reserve(), making)

    def fill(self, place: AnswerPlace, pieces: Pieces) -> None:
        place.pieces = pieces
        place.filled = True
        self._write_ready()

    def fail(self, place: AnswerPlace, reason: str | None) -> None:
        """Close the connection at ``place``'s turn; ``reason`` is logged (None: quietly)."""
        place.pieces = None
        place.failure = reason
        place.filled = True
        self._write_ready()

    def fill_from(self, place: AnswerPlace, making: Awaitable[Pieces | None]) -> None:
        """Fill ``place`` with what ``making`` gives, when it has (None: close quietly)."""
        task = asyncio.ensure_future(making)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._made(place, done))

    def _made(self, place: AnswerPlace, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            self.fail(place, None)
            return
        error = task.exception()
        if error is None:
            pieces = task.result()
            if pieces is None:
                self.fail(place, None)
            else:
                self.fill(place, pieces)
            return
        if not isinstance(error, (ConnectionError, ConnectionClosed, KafkaError)):
            log.error("making the answer to a request failed", exc_info=error)
        self.fail(place, str(error))

    def _write_ready(self) -> None:
        places = self._places
        if self.closed:
            return
        out: list[bytes | memoryview] = []
        while places and places[0].filled:
            place = places.popleft()
            if place.pieces is None or place.failure is not None:
                self._close(out, place.failure)
                return
            out += place.pieces
        if out:
            write_pieces(self._writer, out)
            self._frames.touch()
        if len(places) < MAX_IN_FLIGHT:
            self._room.set()
        if not places:
            self._all_written.set()

    def _close(self, out: list[bytes | memoryview], reason: str | None) -> None:
        if out:
            write_pieces(self._writer, out)
        if reason is not None:
            log.info("closing a client connection: %s", reason)
        self.close()
        self._writer.transport.abort()

    async def room(self) -> None:
        """Wait while MAX_IN_FLIGHT answers are awaited."""
        if not self._room.is_set():
            await self._room.wait()

    async def all_written(self) -> None:
        """Wait until every answer so far is written."""
        if not self._all_written.is_set():
            await self._all_written.wait()

    def close(self) -> None:
        """The connection ends: no more is written, and the answers still being made stop."""
        self.closed = True
        self._places.clear()
        self._room.set()
        self._all_written.set()
        for task in list(self._tasks):
            task.cancel()
