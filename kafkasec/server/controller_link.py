"""A broker's connection to its controller, over which admin writes travel in envelopes (KIP-590).

:class:`ControllerLink` drives a :class:`~kafkasec.protocol.forwarding.ForwardingExchange` with real I/O:
it sends each envelope the exchange produces, feeds back the answer or the loss of the
connection, waits ``retry_backoff_ms`` before sending again (a NOT_CONTROLLER answer, a broken
connection) and gives up at the exchange's deadline. The link logs in once per connection, as
the broker's own principal, which the controller must allow CLUSTER_ACTION on the cluster.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from kafkasec.client.connection import KafkaConnection
from kafkasec.errors import KafkaError
from kafkasec.protocol.forwarding import DEFAULT_TIMEOUT_MS, ForwardingExchange, ForwardingState

DEFAULT_RETRY_BACKOFF_MS = 100

log = logging.getLogger(__name__)


class ControllerLink:
    """Where the controller listens and how to log in to it (``mechanism`` None: PLAINTEXT)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        mechanism: str | None = "SCRAM-SHA-512",
        username: str | None = None,
        password: str | None = None,
        retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
        request_timeout_ms: int = DEFAULT_TIMEOUT_MS,
        client_id: str = "kafkasec-forwarding",
    ):
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"the controller's port must be 1-65535, not {port!r}")
        if mechanism is not None and (not username or password is None):
            raise ValueError(f"a {mechanism} login to the controller needs a username and a password")
        for name, value in (("retry_backoff_ms", retry_backoff_ms), ("request_timeout_ms", request_timeout_ms)):
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, not {value!r}")
        self.host = host
        self.port = port
        self.mechanism = mechanism
        self.username = username
        self._password = password
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self._connection: KafkaConnection | None = None
        self._connecting = asyncio.Lock()

    def __repr__(self) -> str:
        return f"ControllerLink({self.host}:{self.port}, mechanism={self.mechanism}, username={self.username!r})"

    async def _open(self) -> KafkaConnection:
        async with self._connecting:
            if self._connection is None:
                connection = await KafkaConnection.open(self.host, self.port, client_id=self.client_id)
                try:
                    if self.mechanism is not None:
                        assert self.username is not None and self._password is not None  # checked in __init__
                        await connection.login(self.mechanism, self.username, self._password)
                except BaseException:
                    await connection.close()
                    raise
                self._connection = connection
            return self._connection

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def close(self) -> None:
        await self._drop()

    def exchange(self, security, context, request_frame: bytes, *, now_ms: int) -> ForwardingExchange:
        """A ForwardingExchange for one client request, with this link's request timeout."""
        return ForwardingExchange(
            security, context, request_frame, now_ms=now_ms, timeout_ms=self.request_timeout_ms, envelope_client_id=self.client_id
        )

    async def forward(self, exchange: ForwardingExchange, *, clock: Callable[[], int]) -> bytes | None:
        """Run ``exchange`` to the end; the client's response frame (None: close its connection)."""
        while exchange.state is not ForwardingState.DONE:
            if exchange.state is ForwardingState.READY_TO_SEND and exchange.attempts:
                await asyncio.sleep(self.retry_backoff_ms / 1000)
            try:
                connection = await self._open()
            except (OSError, asyncio.TimeoutError, KafkaError) as error:
                # Not reachable or the login was refused: as a lost connection, retried until the
                # deadline; said in the log, since the client only ever sees REQUEST_TIMED_OUT.
                log.warning("cannot reach or log in to the controller at %s:%s as %r with %s: %s; retrying",
                            self.host, self.port, self.username, self.mechanism, error)
                if exchange.send_envelope(now_ms=clock()) is None:
                    break
                exchange.connection_lost(now_ms=clock())
                continue
            envelope = exchange.send_envelope(now_ms=clock(), correlation_id=connection.next_correlation_id())
            if envelope is None:
                break
            remaining = max(exchange.deadline_ms - clock(), 0) / 1000
            try:
                answer = await asyncio.wait_for(connection.exchange(envelope), remaining)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                await self._drop()
                exchange.connection_lost(now_ms=clock())
                continue
            exchange.receive_envelope_response(answer, now_ms=clock())
        return exchange.client_response
