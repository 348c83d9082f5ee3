"""TLS on an accepted connection, done by the endpoint itself rather than by asyncio.

``asyncio.start_server(ssl=...)`` runs the handshake before the endpoint sees the connection,
so none of its limits apply to a client that stops half-way: connection caps and the pre-login
byte budget start counting after the handshake, asyncio allocates a 256 KiB buffer for every
accepted TLS socket, and the server's private-key operation for every ClientHello runs on the
event loop. It also drops a refused handshake without the TLS alert that OpenSSL prepared, so
Kafka's Java client waits out its API timeout instead of reporting an SSL failure.

Here the connection is accepted as plain TCP, counted and capped like any other, and
:func:`accept_tls` runs OpenSSL over memory buffers (:class:`ssl.SSLObject`):

- each handshake step runs on a thread through a caller-supplied runner (the endpoint's
  :class:`~kafkasec.server.fair_pool.FairPool`, one turn per client address): OpenSSL releases
  the interpreter lock while it computes, so the loop keeps serving others, and a flood of
  ClientHellos from one address takes turns with everyone else's handshakes;
- what a pending handshake holds is the bytes of one read (:data:`READ_BYTES`) and OpenSSL's
  own state, not a fixed large buffer;
- a refused handshake (a certificate from another CA, none where one is required) sends the
  alert OpenSSL queued before the connection is closed.

After the handshake, :class:`TlsReader` and :class:`TlsWriter` give the endpoint the parts of
asyncio's stream interface it uses (``read``; ``write``, ``drain``, ``close``,
``transport``, ``get_extra_info``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import ssl
from typing import Any, Awaitable, Callable

READ_BYTES = 64 * 1024
"""Bytes read from the socket at a time, during the handshake and after it."""

HandshakeRunner = Callable[[Callable[[], None]], Awaitable[None]]
"""Runs one OpenSSL handshake step (a callable that may block on CPU) and waits for it."""


class TlsHandshakeError(Exception):
    """The handshake failed; ``args[0]`` says why, for the log (the client got OpenSSL's alert)."""


class _TlsSession:
    """One connection's OpenSSL state over memory buffers, and the socket's streams under it."""

    def __init__(self, context: ssl.SSLContext, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.reader = reader
        self.writer = writer

    def flush(self) -> None:
        """Put on the socket what OpenSSL has written (records, alerts, session tickets)."""
        pending = self.outgoing.read()
        if pending:
            self.writer.write(pending)

    async def receive(self) -> bool:
        """Hand OpenSSL the next bytes from the socket; False when the client closed it."""
        data = await self.reader.read(READ_BYTES)
        if not data:
            return False
        self.incoming.write(data)
        return True


async def accept_tls(
    context: ssl.SSLContext, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, run_step: HandshakeRunner
) -> tuple[TlsReader, TlsWriter]:
    """The server side of a TLS handshake on an accepted socket; the connection's decrypted
    streams. TlsHandshakeError when it fails (after sending the client OpenSSL's alert);
    ``IncompleteReadError`` or ``ConnectionError`` when the socket goes away. It does not time
    out by itself: the caller aborts the socket when the handshake takes too long."""
    session = _TlsSession(context, reader, writer)
    while True:
        try:
            await run_step(session.tls.do_handshake)
            break
        except ssl.SSLWantReadError:
            session.flush()
            if not await session.receive():
                raise asyncio.IncompleteReadError(b"", None) from None
        except ssl.SSLError as error:
            session.flush()  # the alert: the client reports an SSL failure, not a timeout
            await _drain_quietly(writer)
            raise TlsHandshakeError(f"TLS handshake failed: {error.reason or error}") from None
    session.flush()
    await writer.drain()
    return TlsReader(session), TlsWriter(session)


async def _drain_quietly(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
    except ConnectionError:
        pass


class TlsReader:
    """Decrypted bytes of a connection, read the way the endpoint reads a stream."""

    def __init__(self, session: _TlsSession):
        self._session = session

    async def read(self, size: int) -> bytes:
        """What the client has sent, at most ``size`` bytes (at least one, waiting for it);
        ``b""`` once the connection has ended, as ``asyncio.StreamReader.read``."""
        session = self._session
        while True:
            try:
                return session.tls.read(size)  # b"" on the client's close_notify
            except ssl.SSLWantReadError:
                session.flush()  # a TLS 1.3 key update or session ticket may be due
                if not await session.receive():
                    return b""
            except ssl.SSLZeroReturnError:
                return b""
            except ssl.SSLError as error:
                raise ConnectionResetError(f"TLS error: {error.reason or error}") from None


class TlsWriter:
    """Bytes to a connection, encrypted; the parts of ``asyncio.StreamWriter`` the endpoint uses."""

    def __init__(self, session: _TlsSession):
        self._session = session

    @property
    def transport(self) -> asyncio.BaseTransport:
        """The socket's transport: ``abort()`` closes the connection at once."""
        return self._session.writer.transport

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._session.tls
        if name == "cipher":
            return self._session.tls.cipher()
        if name == "peercert":
            return self._session.tls.getpeercert()
        return self._session.writer.get_extra_info(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        try:
            self._session.tls.write(data)
        except ssl.SSLError as error:
            raise ConnectionResetError(f"TLS error: {error.reason or error}") from None
        self._session.flush()

    async def drain(self) -> None:
        await self._session.writer.drain()

    def close(self) -> None:
        """Send close_notify (without waiting for the client's) and close the socket."""
        session = self._session
        if not session.writer.transport.is_closing():
            try:
                session.tls.unwrap()
            except ssl.SSLError:
                pass  # SSLWantReadError: the client's close_notify is not awaited
            session.flush()
        session.writer.close()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    return getattr(ctypes.CDLL(library), "malloc_trim", None)  # glibc only


def release_freed_memory() -> None:
    """Hand the C heap's free pages back to the operating system (glibc's ``malloc_trim``).

    OpenSSL frees a handshake's state when its connection's objects are collected (some only
    by the cycle collector: an exception's traceback holds the frames that held them), and
    glibc then keeps the freed pages in its arenas (one per thread that ran handshake steps),
    so a process that survived a flood of half-open handshakes would keep their memory for
    good. Called once after a burst, not per connection: the collection takes tens of ms on a
    large heap. Does nothing where the C library has no ``malloc_trim``."""
    trim = _malloc_trim()
    if trim is not None:
        gc.collect()
        trim(0)


class HandshakeBurst:
    """Counts the handshakes under way, to say when a burst of them is over: the moment to give
    the heap's free pages back (:func:`release_freed_memory`), rather than after every one."""

    BURST = 64
    """Handshakes at once that make a burst worth trimming the heap after."""

    def __init__(self) -> None:
        self.pending = 0
        self._peak = 0

    def begin(self) -> None:
        self.pending += 1
        self._peak = max(self._peak, self.pending)

    def end(self) -> bool:
        """One handshake is over (done or failed); True when it ended a burst."""
        self.pending -= 1
        if self.pending or self._peak < self.BURST:
            return False
        self._peak = 0
        return True
