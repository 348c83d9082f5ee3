"""The asyncio shell of kafkasec's Kafka-protocol endpoint: sockets, frames, timers.

Everything that decides lives elsewhere and does no I/O: the login in
:mod:`kafkasec.server.authenticator`, the APIs in :mod:`kafkasec.protocol.registry`, forwarding in
:mod:`kafkasec.protocol.forwarding`, the caps in :mod:`kafkasec.server.limits`. This module reads
size-prefixed frames, hands them over, writes the answers in order, sleeps where a refused
login must wait, and closes connections that break the rules:

- a connection over ``max.connections`` or ``max.connections.per.ip`` (with
  ``max.connections.per.ip.overrides``) is closed as soon as it is accepted;
- a frame larger than the cap (``sasl.server.max.receive.size``, 512 KiB, before login;
  ``socket.request.max.bytes``, 100 MiB, after) or with a negative size closes the connection,
  and so does a large frame before login that the shared budget
  (``kafkasec.server.unauthenticated.max.bytes``) cannot hold;
- a connection that sends nothing, or only part of a frame, for ``connections.max.idle.ms``
  is closed, and a TLS client that has not finished its handshake after
  ``kafkasec.server.ssl.handshake.timeout.ms`` (10 s);
- an API or version the endpoint does not serve, or bytes that do not parse, close the
  connection, as on a Kafka broker (its clients re-read ApiVersions and reconnect).

Each is logged on ``kafkasec.server`` with the peer's address and the reason.

The event loop does only what is cheap and bounded: framing, the login steps of the SASL
mechanisms that do no I/O (HMACs over a few hundred bytes; a token's PBKDF2 is done when the
token is learnt, not at login; a JWT checked against keys already fetched), and small
requests of the APIs whose answers the request bounds (:data:`INLINE_APIS`). The rest runs on
threads, so that a state write waiting for a lock or a large Metadata answer stalls no other
connection:

- requests that write the security state (and envelopes, which carry them), on one thread:
  writes take the store's lock one at a time anyway, as Kafka's controller applies its queue;
- every other request, on ``num.io.threads`` threads (Kafka's request handler threads), shared
  by principals in turns (:class:`~kafkasec.server.fair_pool.FairPool`): one principal's
  requests use at most all threads but one, so a user sending four 40,000-name requests waits
  for its own while everyone else's go on. The default is the number of CPUs (at most 8), not
  Kafka's 8: Python threads share one interpreter lock, and more CPU-bound threads than cores
  only make the others wait longer;
- TLS handshake steps (:mod:`kafkasec.server.tls_stream`) and the login steps of a mechanism
  that says it blocks (``SaslMechanism.blocking``: an LDAP bind, a call to an identity
  provider), on the same kind of pool keyed by the client's address.

A hop to a thread costs a few hundred microseconds of wake-ups, which is why cheap requests
stay on the loop. A connection's requests are still answered one at a time, in order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Sized

from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.principals.authentication import PlaintextAuthenticationContext, SslAuthenticationContext
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import answer_api_versions
from kafkasec.protocol.catalogue import Catalogue, Node
from kafkasec.protocol.cluster_apis import ClusterRequests
from kafkasec.protocol.forwarding import EnvelopeAction, open_envelope, privileged_listeners
from kafkasec.protocol.registry import ApiHandlers
from kafkasec.server.authenticator import SCRAM_MECHANISMS, Authenticator, LoginSession, answer_after_login
from kafkasec.server.certificates import ReloadingSslContext
from kafkasec.server.controller_link import ControllerLink
from kafkasec.server.fair_pool import FairPool
from kafkasec.server.frame_reader import ConnectionClosed, FrameReader
from kafkasec.server.limits import SMALL_FRAME_BYTES, ConnectionQuotas, LimitExceeded, UnauthenticatedBytes
from kafkasec.server.tls_stream import HandshakeBurst, TlsHandshakeError, accept_tls, release_freed_memory
from kafkasec.settings import SECURITY_PROTOCOLS, parse_bool, parse_count, parse_list, parse_milliseconds

if TYPE_CHECKING:
    from kafkasec.server.metrics import ServerMetrics

log = logging.getLogger("kafkasec.server")

MAX_REQUEST_BYTES = "socket.request.max.bytes"
DEFAULT_MAX_REQUEST_BYTES = 104_857_600
MAX_SASL_RECEIVE_BYTES = "sasl.server.max.receive.size"
DEFAULT_MAX_SASL_RECEIVE_BYTES = 524_288
IDLE_TIMEOUT_MS = "connections.max.idle.ms"
DEFAULT_IDLE_TIMEOUT_MS = 600_000
SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
MAX_REAUTH_MS = "connections.max.reauth.ms"
IO_THREADS = "num.io.threads"
REUSE_PORT = "kafkasec.server.reuse.port"
SSL_HANDSHAKE_TIMEOUT_MS = "kafkasec.server.ssl.handshake.timeout.ms"
DEFAULT_SSL_HANDSHAKE_TIMEOUT_MS = 10_000
DEFAULT_IO_THREADS = min(8, os.cpu_count() or 1)
INLINE_APIS = frozenset({
    ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
    ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_GROUPS, ApiKey.DESCRIBE_CLUSTER,
})
"""APIs answered on the event loop when their frame is small: the work is bounded by the
request (a few keys or groups), never by the size of the state or the catalogue."""
DEFAULT_CLUSTER_ID = "kafkasec-cluster"

DRAIN_CHECK_S = 0.05
"""How often a graceful stop looks for connections with nothing in hand (only while it stops)."""


class ConnectionWork:
    """One open connection: the writer its answers go to, and what it has in hand (the
    requests read and not answered, the answers a pipelining connection awaits). A graceful
    stop closes it once there is none."""

    __slots__ = ("writer", "requests", "answers")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        """The connection's writer (after TLS, the decrypted side's)."""
        self.requests = 0
        self.answers: Sized | None = None

    @property
    def busy(self) -> bool:
        return self.requests > 0 or (self.answers is not None and len(self.answers) > 0)


class _Deadline:
    """Aborts a connection unless the ``with`` block ends within ``seconds`` (a TLS handshake);
    the read error that the abort causes (not one of the client going away) leaves the block
    as ConnectionClosed(``reason``)."""

    def __init__(self, writer, seconds: float, reason: str):
        self.expired = False
        self._writer = writer
        self._seconds = seconds
        self._reason = reason

    def __enter__(self) -> _Deadline:
        self._timer = asyncio.get_running_loop().call_later(self._seconds, self._expire)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self._timer.cancel()
        if self.expired and isinstance(error, (asyncio.IncompleteReadError, ConnectionError)):
            raise ConnectionClosed(self._reason) from None

    def _expire(self) -> None:
        self.expired = True
        self._writer.transport.abort()


class Endpoint:
    """A Kafka-protocol listener on ``host:port`` backed by ``security`` (a KafkaSecurity).

    ``security_protocol`` is SASL_PLAINTEXT (SASL logins), PLAINTEXT (every client is
    ANONYMOUS), SSL (the principal from the client's certificate, ``ssl.principal.mapping.rules``)
    or SASL_SSL (SASL logins over TLS); TLS is set up from Kafka's PEM settings
    (:mod:`kafkasec.tls`), re-read when its files change (:mod:`kafkasec.server.certificates`).
    With ``controller`` (a :class:`ControllerLink`) the endpoint is a broker that
    forwards admin writes to that controller in envelopes; without, it is the controller and
    handles them itself, and accepts envelopes if its listener is a privileged one
    (``inter.broker.listener.name``, ``controller.listener.names``). ``port=0`` picks a free
    port; :attr:`port` has it once started.
    """

    def __init__(
        self,
        security,
        catalogue: Catalogue | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        node_id: int = 1,
        cluster_id: str = DEFAULT_CLUSTER_ID,
        listener_name: str | None = None,
        security_protocol: str = "SASL_PLAINTEXT",
        controller: ControllerLink | None = None,
        metrics: ServerMetrics | None = None,
    ):
        if security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, not {security_protocol!r}")
        if controller is not None and not isinstance(controller, ControllerLink):
            raise TypeError(f"controller must be a ControllerLink or None, not {controller!r}")
        config = security.config
        self.security = security
        self.catalogue = catalogue or Catalogue()
        self.host = host
        self.port = port
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.listener_name = listener_name or security_protocol
        self.security_protocol = security_protocol
        self.controller = controller
        self.metrics = metrics
        """Where this listener's connections, logins and requests are counted (None: nowhere)."""
        self.max_request_bytes = parse_count(config, MAX_REQUEST_BYTES, DEFAULT_MAX_REQUEST_BYTES, unit="bytes")
        self.max_sasl_receive_bytes = parse_count(config, MAX_SASL_RECEIVE_BYTES, DEFAULT_MAX_SASL_RECEIVE_BYTES, unit="bytes")
        self.idle_timeout_ms = parse_milliseconds(config, IDLE_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS)
        self.max_reauth_ms = parse_milliseconds(config, MAX_REAUTH_MS, 0)
        self.reauthentications = 0
        """How many times a connection re-authenticated (KIP-368), for tests and monitoring."""
        self.io_threads = parse_count(config, IO_THREADS, DEFAULT_IO_THREADS, unit="threads")
        self.ssl_handshake_timeout_ms = parse_milliseconds(config, SSL_HANDSHAKE_TIMEOUT_MS, DEFAULT_SSL_HANDSHAKE_TIMEOUT_MS)
        # Several processes on one host may share a listener's port (SO_REUSEPORT): the kernel
        # spreads their connections, one core each (docs/gateway.md).
        self.reuse_port = parse_bool(REUSE_PORT, config.get(REUSE_PORT, False))
        if self.io_threads < 1:
            raise ValueError(f"{IO_THREADS} must be at least 1, not {self.io_threads}")
        self.connection_quotas = ConnectionQuotas.from_config(config)
        self.unauthenticated_bytes = UnauthenticatedBytes.from_config(config)
        mechanisms = str(config.get(SASL_ENABLED_MECHANISMS, ",".join(SCRAM_MECHANISMS)))
        self.mechanisms = tuple(part for part in parse_list(mechanisms) if part)
        self.accepts_envelopes = controller is None and self.listener_name in privileged_listeners(config)
        # TLS settings are read now, so that a missing key or a bad file fails at start-up.
        self.ssl_context = ReloadingSslContext.of_listener(config, self.listener_name) if security_protocol.endswith("SSL") else None
        self._server: asyncio.base_events.Server | None = None
        self._write_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._io_pool: FairPool | None = None
        self._login_pool: FairPool | None = None
        self._handshakes = HandshakeBurst()
        self._connections: dict[asyncio.Task, ConnectionWork] = {}
        self.draining = False
        """A graceful stop has begun: no new request is taken."""
        self._apis: ApiHandlers | None = None
        self._write_apis: frozenset[int] = frozenset()
        # Checked now, so that a bad mechanism list fails at start-up, not at the first login.
        Authenticator(security, "127.0.0.1", ranges={}, mechanisms=self.mechanisms)

    @property
    def node(self) -> Node:
        return Node(self.node_id, self.host, self.port)

    @property
    def bootstrap(self) -> str:
        """``host:port``, for a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def listening(self) -> bool:
        """Started, and not stopping."""
        return self._server is not None and self._server.is_serving()

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def _api_handlers(self) -> ApiHandlers:
        # start() builds them before the loop can accept a connection, and stop() keeps them.
        assert self._apis is not None, "a connection is served only once the endpoint is started"
        return self._apis

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> Endpoint:
        if self._server is not None:
            raise ValueError("this endpoint is already started")
        # A small read buffer: what a connection holds beyond the frame it is reading is bounded.
        # TLS is not asyncio's (ssl=): the endpoint runs the handshake itself, under its limits.
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, limit=SMALL_FRAME_BYTES, reuse_port=self.reuse_port or None,
        )
        self._write_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"kafkasec-write-{self.node_id}")
        self._io_pool = FairPool(self.io_threads, f"kafkasec-io-{self.node_id}")
        self._login_pool = FairPool(self.io_threads, f"kafkasec-login-{self.node_id}")
        self.port = self._server.sockets[0].getsockname()[1]
        self._apis = self._collect_apis()
        self._write_apis = self._apis.forwardable | {ApiKey.ENVELOPE}
        if self.metrics is not None:
            self.metrics.add_endpoint(self)
        log.info("listening on %s (%s, node %d)", self.bootstrap, self.listener_name, self.node_id)
        return self

    def _collect_apis(self) -> ApiHandlers:
        """The APIs this listener answers: the plugins' and its catalogue's read APIs."""
        # The node clients are told about is this listener's own address (librdkafka sends admin
        # requests to controller_id), so the table is built once the port is known.
        cluster = ClusterRequests(self.catalogue, self.node, self.cluster_id)
        return ApiHandlers.collect(self.security, cluster.handlers(), accepts_envelopes=self.accepts_envelopes)

    async def stop(self, *, grace_ms: int = 0) -> None:
        """Stop listening and close every connection (and the link to the controller).

        With ``grace_ms`` (a rolling restart), first let the connections finish the requests
        they have in hand, for at most that long: each is closed as soon as none is (its
        client sees a network error, which Kafka's clients retry on another connection), and
        no new request is taken from any."""
        if self._server is None:
            return
        self._server.close()
        if grace_ms > 0 and self._connections:
            await self._drain(grace_ms / 1000)
        # Aborting the sockets ends each connection's loop through its own error path.
        for work in list(self._connections.values()):
            work.writer.transport.abort()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None
        for pool in (self._write_pool, self._io_pool, self._login_pool):
            if pool is not None:
                pool.shutdown()
        self._write_pool = self._io_pool = self._login_pool = None
        if self.controller is not None:
            await self.controller.close()
        if self.metrics is not None:
            self.metrics.remove_endpoint(self)
        log.info("stopped %s", self.bootstrap)

    async def _drain(self, grace_s: float) -> None:
        self.draining = True
        log.info("draining %s: %d connections, at most %g s", self.bootstrap, len(self._connections), grace_s)
        deadline = time.monotonic() + grace_s
        while self._connections and time.monotonic() < deadline:
            for work in list(self._connections.values()):
                if not work.busy:
                    work.writer.transport.abort()
            await asyncio.sleep(DRAIN_CHECK_S)
        if self._connections:
            log.warning("%s: %d connections still busy after %g s, closed", self.bootstrap, len(self._connections), grace_s)

    async def __aenter__(self) -> Endpoint:
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.stop()

    def running_in_thread(self):
        """Run the endpoint on an event loop in a background thread, for synchronous callers
        (tests with blocking Kafka clients, the demo); stopped when the block ends."""
        return running_in_thread(self, f"kafkasec-endpoint-{self.node_id}")

    # ------------------------------------------------------------------ connections

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("0.0.0.0", 0)
        try:
            self.connection_quotas.open(peer[0])
        except LimitExceeded as refused:
            log.info("refusing connection from %s:%s: %s", peer[0], peer[1], refused.args[0])
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None  # start_server runs each connection's callback in a task of its own
        work = self._connections[task] = ConnectionWork(writer)
        if self.metrics is not None:
            self.metrics.connections_accepted.labels(self.listener_name).inc()
        try:
            if self.ssl_context is not None:
                reader, writer = await self._handshake(reader, writer, peer[0])
                work.writer = writer
            frames = FrameReader(reader, writer.transport, self.idle_timeout_ms)
            try:
                await self._serve(frames, writer, peer[0])
            finally:
                frames.close()
        except ConnectionClosed as closed:
            log.info("closing connection from %s:%s: %s", peer[0], peer[1], closed.args[0])
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        finally:
            self._connections.pop(task, None)
            self.connection_quotas.close(peer[0])
            writer.close()

    async def _handshake(self, reader, writer, client_address: str):
        """TLS on an accepted connection (:mod:`kafkasec.server.tls_stream`): its decrypted
        streams; ConnectionClosed when the handshake fails or takes longer than
        ``kafkasec.server.ssl.handshake.timeout.ms``."""
        assert self.ssl_context is not None and self._login_pool is not None  # an SSL listener, started
        pool = self._login_pool
        self._handshakes.begin()
        try:
            with _Deadline(writer, self.ssl_handshake_timeout_ms / 1000,
                           f"no TLS handshake within {SSL_HANDSHAKE_TIMEOUT_MS}={self.ssl_handshake_timeout_ms}"):
                return await accept_tls(self.ssl_context.for_new_connection(), reader, writer, lambda step: pool.run(client_address, step))
        except TlsHandshakeError as error:
            raise ConnectionClosed(error.args[0]) from None
        finally:
            if self._handshakes.end():
                # Later: the burst's last connections still hold their OpenSSL state here.
                asyncio.get_running_loop().call_later(1.0, release_freed_memory)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, frame: bytes) -> None:
        writer.write(wire.size_prefixed(frame))
        await writer.drain()

    async def _serve(self, frames: FrameReader, writer, client_address: str) -> None:
        session: LoginSession | None = None  # SASL connections whose login lasts a while (KIP-368)
        if self.security_protocol == "PLAINTEXT":
            principal = self.security.build_principal(PlaintextAuthenticationContext(client_address, self.listener_name))
        elif self.security_protocol == "SSL":
            tls = writer.get_extra_info("ssl_object")
            certificate = None if tls is None else tls.getpeercert(binary_form=True)
            principal = self.security.build_principal(SslAuthenticationContext(certificate, client_address, self.listener_name))
        else:
            principal, session = await self._login(frames, writer, client_address)
        await self._serve_requests(frames, writer, client_address, principal, session)

    async def _serve_requests(self, frames: FrameReader, writer, client_address: str, principal, session: LoginSession | None) -> None:
        """Answer a logged-in connection's requests, one at a time, in order."""
        metrics = self.metrics
        work = self._connection_work()
        while True:
            frame = await frames.frame(self.max_request_bytes)
            if self.draining:
                raise ConnectionClosed("the listener is shutting down")
            work.requests = 1
            started = time.perf_counter()
            if session is not None:
                renewed = await self._renew_session(frames, writer, client_address, frame, principal, session)
                if renewed is not None:
                    principal, session = renewed
                    continue
            answer = await self._answer(principal, client_address, frame)
            if metrics is not None:
                metrics.request(int.from_bytes(frame[:2], "big", signed=True), "ok" if answer is not None else "error", started)
            if answer is None:
                raise ConnectionClosed("the request is answered by closing the connection")
            await self._send(writer, answer)
            work.requests = 0

    def _connection_work(self) -> ConnectionWork:
        """The work record of the connection this task serves."""
        task = asyncio.current_task()
        assert task is not None and task in self._connections  # _accept made it for this connection's task
        return self._connections[task]

    async def _renew_session(self, frames: FrameReader, writer, client_address: str, frame: bytes, principal, session: LoginSession):
        """KIP-368: a SaslHandshake starts a re-authentication (the new principal and session),
        unless one began less than a second ago (it is then answered as any request); any
        other request after the session's end closes the connection, as Kafka's broker does.
        None: ``frame`` is an ordinary request."""
        if int.from_bytes(frame[:2], "big", signed=True) == ApiKey.SASL_HANDSHAKE and session.may_reauthenticate():
            renewed = await self._login(frames, writer, client_address, frame, renewing=(principal, session))
            self.reauthentications += 1
            return renewed
        if session.expired():
            raise ConnectionClosed("the authentication session expired and the client did not re-authenticate")
        return None

    async def _login(self, frames: FrameReader, writer, client_address: str, first_frame: bytes | None = None, renewing=None):
        """Log the connection in (or, with ``renewing``, the principal and session being
        renewed, re-authenticate it, starting from ``first_frame``): (principal, session)."""
        authenticator = Authenticator(
            self.security,
            client_address,
            ranges=self._api_handlers.ranges,
            listener_name=self.listener_name,
            security_protocol=self.security_protocol,
            mechanisms=self.mechanisms,
            max_reauth_ms=self.max_reauth_ms,
            reauthenticating=None if renewing is None else (renewing[0], renewing[1].mechanism),
        )
        while not authenticator.is_complete:
            if first_frame is not None:
                frame, first_frame = first_frame, None
            else:
                frame = await frames.frame(self.max_sasl_receive_bytes, budget=self.unauthenticated_bytes)
            if authenticator.blocking:
                assert self._login_pool is not None  # the endpoint is started
                reply = await self._login_pool.run(client_address, authenticator.receive, frame)
            else:
                reply = authenticator.receive(frame)
            if reply.delay_ms:
                await asyncio.sleep(reply.delay_ms / 1000)
            if self.metrics is not None and (reply.close or authenticator.is_complete):
                # Counted before the answer goes: a client that has read it finds it counted.
                self.metrics.login(self.listener_name, authenticator.mechanism, succeeded=not reply.close)
            if reply.frame is not None:
                await self._send(writer, reply.frame)
            if reply.close:
                raise ConnectionClosed(f"login failed: {reply.reason}")
        return authenticator.principal, LoginSession.after(authenticator, None if renewing is None else renewing[1])

    async def _answer(self, principal, client_address: str, frame: bytes) -> bytes | None:
        """The response frame to an authenticated request; None closes the connection."""
        # The API key's two bytes say where to answer; a frame too short for them fails in _respond.
        api_key = int.from_bytes(frame[:2], "big", signed=True)
        if api_key in INLINE_APIS and len(frame) <= SMALL_FRAME_BYTES:
            answer = self._respond(principal, client_address, frame)
        elif api_key in self._write_apis:
            answer = await asyncio.get_running_loop().run_in_executor(self._write_pool, self._respond, principal, client_address, frame)
        else:
            assert self._io_pool is not None  # the endpoint is started
            answer = await self._io_pool.run(principal, self._respond, principal, client_address, frame)
        if isinstance(answer, RequestContext):
            controller = self.controller
            assert controller is not None  # _respond returns a context only when there is a controller to forward to
            exchange = controller.exchange(self.security, answer, frame, now_ms=_now_ms())
            return await controller.forward(exchange, clock=_now_ms)
        return answer

    def _respond(self, principal, client_address: str, frame: bytes) -> bytes | RequestContext | None:
        """On a handler thread: the response frame, None to close the connection, or the
        request's context when this broker forwards the request to its controller."""
        try:
            api_key, version = wire.peek_api(frame)
            if api_key == ApiKey.API_VERSIONS:  # at any version: an unknown one is answered, not closed
                return answer_api_versions(frame, self._api_handlers.ranges)[0]
            if not self._api_handlers.serves(api_key, version):
                raise ConnectionClosed(f"API key {api_key} v{version} is not served here")
            request = wire.decode_request(frame)
        except KafkaError as error:
            raise ConnectionClosed(f"unreadable request: {error}") from None
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return answer_after_login(request)
        context = wire.request_context(
            request, principal, client_address, listener_name=self.listener_name, security_protocol=self.security_protocol
        )
        if api_key == ApiKey.ENVELOPE:
            return self._open_envelope(context, frame)
        if self.controller is not None and api_key in self._api_handlers.forwardable:
            return context
        return self._api_handlers.handle(self.security, context, request)

    def _open_envelope(self, context, frame: bytes) -> bytes | None:
        opened = open_envelope(self.security, context, frame, is_active_controller=self.controller is None)
        if opened.action is EnvelopeAction.CLOSE_CONNECTION:
            raise ConnectionClosed(opened.reason)
        if opened.action is EnvelopeAction.RESPOND:
            return opened.response
        inner, inner_context = opened.request, opened.context
        assert inner is not None and inner_context is not None  # a HANDLE envelope carries both
        if inner.api_key not in self._api_handlers.handlers or not self._api_handlers.serves(inner.api_key, inner.api_version):
            return opened.refuse(KafkaErrorCode.UNSUPPORTED_VERSION)
        response = self._api_handlers.handle(self.security, inner_context, inner)
        if response is None:
            raise ConnectionClosed(f"no response to the enveloped {ApiKey(inner.api_key).title} could be encoded")
        return opened.respond(response)


@contextlib.contextmanager
def running_in_thread(server, name: str):
    """Run ``server`` (anything with ``async start()`` and ``async stop()``: an endpoint, a
    broker of yours) on an event loop of a background thread named ``name``, for synchronous
    callers such as tests; stopped, and the loop closed, when the block ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result()
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000

