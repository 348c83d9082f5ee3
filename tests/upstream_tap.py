"""A recording tap between the gateway and its upstream broker: what reached the broker, decoded.

The gateway's invariant is about what the broker acts on, so the tests read it where the broker
reads it: :class:`UpstreamTap` is a TCP proxy on the loopback that the gateway connects to as
if it were the broker. It forwards bytes both ways, one whole frame at a time, and records each
request frame before the broker gets it (so a test that has its answer from the gateway finds
the request recorded). A frame that ``wire.decode_request`` cannot read is recorded with the
reason, and forwarded all the same: the broker's parser is not ours.

``answer_filter(frame) -> frame`` rewrites each answer frame (without its size prefix) on its
way back to the gateway, to play a broker that misbehaves.

The gateway connects to the brokers named in the upstream's Metadata answers, so a broker
behind a tap must advertise the tap's address (``TansuBroker(advertised_port=...)``), or the
gateway's per-broker connections go around it. ``port`` lets a test choose the tap's port
before the broker starts.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import threading
import time
from collections.abc import Callable

from kafkasec.errors import KafkaError
from kafkasec.protocol import wire

HOST = "127.0.0.1"
_SIZE = wire.FRAME_SIZE


@dataclasses.dataclass(frozen=True)
class TappedRequest:
    """One request frame the broker received: decoded, or why it could not be."""

    frame: bytes
    request: wire.Request | None
    error: str | None = None

    @classmethod
    def read(cls, frame: bytes) -> TappedRequest:
        try:
            return cls(frame, wire.decode_request(frame))
        except KafkaError as error:
            return cls(frame, None, f"{type(error).__name__}: {error}")


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    """``size`` bytes, or None when the peer closed (or the tap is closing) first."""
    data = bytearray()
    while len(data) < size:
        try:
            chunk = connection.recv(size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _frames(connection: socket.socket):
    """The frames (without size prefix) read from ``connection`` until it closes."""
    while (prefix := _read_exactly(connection, _SIZE.size)) is not None:
        (size,) = _SIZE.unpack(prefix)
        frame = _read_exactly(connection, max(size, 0))
        if frame is None:
            return
        yield frame


class UpstreamTap:
    """A TCP proxy from ``HOST:port`` to ``upstream_host:upstream_port`` in background threads
    (a context manager); ``requests`` is every request frame forwarded, in the order each
    connection sent them."""

    def __init__(self, upstream_host: str, upstream_port: int, *,
                 answer_filter: Callable[[bytes], bytes] | None = None, port: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.answer_filter = answer_filter
        self._listener = socket.create_server((HOST, port))
        self.host, self.port = HOST, self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._requests: list[TappedRequest] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closing = False

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def requests(self) -> list[TappedRequest]:
        """A copy of what was recorded so far."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._sockets) // 2

    def wait_until_idle(self, timeout: float = 10.0) -> bool:
        """Wait until every connection through the tap has ended: then every frame the gateway
        wrote before closing its side is recorded. Whether it did within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.open_connections and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self.open_connections

    def start(self) -> UpstreamTap:
        self._spawn(self._accept, "tap-accept")
        return self

    def stop(self) -> None:
        with self._lock:
            self._closing = True
            sockets = [self._listener, *self._sockets]
        for each in sockets:
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected, or closed by its peer already
            each.close()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(5)

    def __enter__(self) -> UpstreamTap:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _spawn(self, target, name: str, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                gateway_side, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed: stop()
            try:
                broker_side = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                gateway_side.close()  # as a broker that is down: the gateway sees the connection end
                continue
            broker_side.settimeout(None)
            with self._lock:
                if self._closing:
                    gateway_side.close()
                    broker_side.close()
                    return
                self._sockets += [gateway_side, broker_side]
            ends = threading.Barrier(2, action=functools.partial(self._forget, gateway_side, broker_side))
            self._spawn(self._pump, "tap-requests", gateway_side, broker_side, self._record, ends)
            self._spawn(self._pump, "tap-answers", broker_side, gateway_side, self.answer_filter, ends)

    def _forget(self, *sockets: socket.socket) -> None:
        """Close a connection's two sockets once both its pumps have ended (a fuzz run opens
        hundreds of connections: they are not kept until stop())."""
        with self._lock:
            self._sockets = [each for each in self._sockets if each not in sockets]
            self._threads = [thread for thread in self._threads if thread.is_alive()]
        for each in sockets:
            each.close()

    def _record(self, frame: bytes) -> bytes:
        tapped = TappedRequest.read(frame)
        with self._lock:
            self._requests.append(tapped)
        return frame

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, through: Callable[[bytes], bytes] | None,
              ends: threading.Barrier) -> None:
        """Copy frames from ``source`` to ``sink`` (each through ``through``); when either end
        closes, shut both, as a broker's connection ends for both sides."""
        try:
            for frame in _frames(source):
                out = frame if through is None else through(frame)
                sink.sendall(_SIZE.pack(len(out)) + out)
        except OSError:
            pass  # the other side went away: both are shut below
        finally:
            for each in (source, sink):
                try:
                    each.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # closed already
            try:
                ends.wait(5)
            except threading.BrokenBarrierError:
                pass  # stop() closes what is left


__all__ = ["TappedRequest", "UpstreamTap"]
