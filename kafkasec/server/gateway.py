"""The gateway: kafkasec's endpoint in front of a Kafka-compatible broker that has no security.

Clients log in to the gateway as to any kafkasec listener (SCRAM, PLAIN, OAUTHBEARER,
delegation tokens, TLS client certificates). The security APIs (ACLs, SCRAM credentials,
delegation tokens) are answered by kafkasec itself; every other request is authorized by
Kafka's rules (:mod:`kafkasec.protocol.request_rules`), its authorized part sent to the upstream
broker, and the answer merged with the refusals in Kafka's response shape:

- **Addresses.** The brokers an answer names (Metadata, DescribeCluster, FindCoordinator,
  KIP-951's new-leader hints) are replaced by the gateway's: one gateway listener per upstream
  broker, on the port after the bootstrap listener's plus the broker's node id (any free port
  when the bootstrap port is 0). A connection to a broker's listener is carried to that broker.
- **Versions.** ApiVersions lists, per API, the versions kafkasec and the upstream both speak
  (an API the upstream does not list is left out, as are those named in
  ``kafkasec.upstream.unadvertised.apis``); topic ids are mapped to names from the upstream's
  Metadata, so Fetch and Produce at their newest versions are authorized.
- **Bytes.** A request authorized whole goes upstream as the client's bytes (only the
  correlation id changes), so record batches pass untouched; a request authorized in part is
  re-encoded without the refused items (the records of the rest are the same bytes).
- **Order.** A connection's requests go upstream as they arrive, without waiting for answers
  (pipelining is kept), and the answers go back in the order of the requests.
- **Failures.** A client connection has its own connection to each upstream broker. When that
  breaks (the broker went away, sent garbage or a huge frame, or was silent past
  ``request.timeout.ms``), the client connection is closed: Kafka's clients treat that as a
  retriable network error, reconnect, and the gateway connects upstream again. Nothing is
  answered that the upstream did not answer.

Several gateway processes may follow the same security state (a SQLite file on one host,
PostgreSQL for several): each is a complete gateway, see docs/gateway.md.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import threading
import time
import uuid
from typing import Any, Mapping, Sequence

from kafkasec.client.settings import ClientSettings
from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import VersionRanges, kio_versions
from kafkasec.protocol.registry import ApiHandlers, unknown_server_error_frame
from kafkasec.protocol.request_rules import CONNECTION_APIS, RULES, authorize_request
from kafkasec.server.answer_queue import AnswerPlace, AnswerQueue
from kafkasec.server.broker_addresses import Address, brokers_in, names_brokers, with_addresses
from kafkasec.server.endpoint import ConnectionClosed, Endpoint
from kafkasec.server.frame_reader import FrameReader
from kafkasec.server.limits import SMALL_FRAME_BYTES
from kafkasec.server.refusal_log import log_refused
from kafkasec.server.upstream import UpstreamError, UpstreamLink, framed
from kafkasec.settings import parse_list

log = logging.getLogger("kafkasec.server.gateway")

UPSTREAM_PREFIX = "kafkasec.upstream."
UPSTREAM_BOOTSTRAP_SERVERS = UPSTREAM_PREFIX + "bootstrap.servers"
UNADVERTISED_APIS = UPSTREAM_PREFIX + "unadvertised.apis"
MAX_PRODUCER_IDS = 100_000
"""Transactional producers remembered per gateway process (a few MB at most)."""
_METADATA_VERSIONS = (10, 12)  # topic ids from v10; v13 only adds a top-level error
INLINE_FRAME_BYTES = SMALL_FRAME_BYTES
"""The largest request (a Produce's records not counted) read and authorized on the event
loop, and the largest upstream answer the gateway must read (to filter it, or to put its
own addresses in) that it reads there. Larger ones, whose work grows with the names and
partitions in them (a DescribeGroups of 40,000 groups takes the better part of a second), go
to the endpoint's ``num.io.threads`` threads, shared by principals in turns
(:class:`~kafkasec.server.fair_pool.FairPool`), so that one client's heavy requests do not
stop the loop that serves every other connection."""


def upstream_settings(config: Mapping[str, object]) -> ClientSettings:
    """How the gateway reaches and logs in to its upstream: the ``kafkasec.upstream.*``
    settings, read as a client's properties (``kafkasec.upstream.security.protocol``,
    ``kafkasec.upstream.sasl.jaas.config``, ``kafkasec.upstream.ssl.truststore.location`` ...)."""
    properties = {key[len(UPSTREAM_PREFIX):]: str(value) for key, value in config.items() if key.startswith(UPSTREAM_PREFIX)}
    if "bootstrap.servers" not in properties:
        raise ValueError(f"a gateway needs {UPSTREAM_BOOTSTRAP_SERVERS} (or --upstream HOST:PORT)")
    properties.pop("unadvertised.apis", None)
    return ClientSettings.from_properties(properties)


def _unadvertised(config: Mapping[str, object]) -> frozenset[ApiKey]:
    names = [part for part in parse_list(config.get(UNADVERTISED_APIS, "")) if part]
    by_title = {key.title: key for key in ApiKey}
    unknown = [name for name in names if name not in by_title]
    if unknown:
        raise ValueError(f"{UNADVERTISED_APIS} names APIs as Kafka spells them (DeleteRecords, ...), not {', '.join(unknown)}")
    return frozenset(by_title[name] for name in names)


class Gateway:
    """What all listeners of one gateway process share: how to reach the upstream, the API
    versions it speaks, its brokers, and the topic names behind topic ids."""

    def __init__(self, security, settings: ClientSettings | None = None):
        config = security.config
        self.security = security
        self.settings = settings if settings is not None else upstream_settings(config)
        self.unadvertised = _unadvertised(config)
        self.upstream_versions: dict[int, tuple[int, int]] = {}
        self.brokers: dict[int, Address] = {}
        """Upstream node id -> its (host, port), as the upstream's answers name it."""
        self.topic_names: dict[uuid.UUID, str] = {}
        self.producer_ids: collections.OrderedDict[int, str] = collections.OrderedDict()
        """Producer id -> the transactional id the upstream gave it, as this process saw
        InitProducerId answered (the newest MAX_PRODUCER_IDS): see docs/gateway.md."""
        self._learning = threading.Lock()
        """Held while what an answer tells is written: a large answer is read on a thread."""

    async def start(self) -> Gateway:
        """Learn the upstream's API versions, brokers and topics; UpstreamError when no
        bootstrap server answers."""
        link = await self.connect()
        try:
            self.upstream_versions = dict(link.server_versions)
            await self.refresh(link)
        finally:
            await link.close()
        return self

    async def connect(self, node_id: int | None = None) -> UpstreamLink:
        """A link to upstream broker ``node_id``, or to the first bootstrap server that answers."""
        if node_id is not None and node_id in self.brokers:
            return await UpstreamLink.open(self.settings, self.brokers[node_id])
        problems = []
        for address in self.settings.bootstrap_servers:
            try:
                return await UpstreamLink.open(self.settings, address)
            except UpstreamError as error:
                problems.append(str(error))
        raise UpstreamError("; ".join(problems))

    @property
    def forwarded_ranges(self) -> VersionRanges:
        """The APIs the gateway forwards: those with a rule, listed by the upstream and kio,
        at the versions all three speak."""
        ranges: dict[int, tuple[int, int]] = {}
        for api_key in RULES:
            if api_key in self.unadvertised or api_key not in self.upstream_versions:
                continue
            low, high = kio_versions(api_key)
            upstream_low, upstream_high = self.upstream_versions[api_key]
            if max(low, upstream_low) <= min(high, upstream_high):
                ranges[api_key] = (max(low, upstream_low), min(high, upstream_high))
        return ranges

    async def refresh(self, link: UpstreamLink) -> None:
        """Ask the upstream for every topic and broker (a Metadata request of the gateway's own)."""
        low, high = self.upstream_versions.get(ApiKey.METADATA, (0, -1))
        version = min(high, _METADATA_VERSIONS[1])
        if version < max(low, _METADATA_VERSIONS[0]):
            raise UpstreamError(f"the upstream speaks Metadata v{low}-v{high}; the gateway needs v10 or later (topic ids)")
        body = wire.build(wire.request_schema(ApiKey.METADATA, version), topics=None, allow_auto_topic_creation=False)
        answer = await link.request(body)
        # Every topic is in the answer: the names of deleted topics go.
        with self._learning:
            self.topic_names.clear()
            self._learn(ApiKey.METADATA, answer, None)

    @staticmethod
    def learns_from(api_key: int, request) -> bool:
        """Whether the answer to ``request`` tells what the gateway keeps (beyond brokers)."""
        return api_key == ApiKey.INIT_PRODUCER_ID and request.transactional_id is not None

    def learn(self, api_key: int, response, request=None) -> None:
        """What an upstream answer (to ``request``) tells of brokers, topic ids and producer ids."""
        with self._learning:
            self._learn(api_key, response, request)

    def _learn(self, api_key: int, response, request) -> None:
        if request is not None and self.learns_from(api_key, request):
            if response.error_code == 0 and response.producer_id >= 0:
                self.producer_ids[int(response.producer_id)] = request.transactional_id
                self.producer_ids.move_to_end(int(response.producer_id))
                while len(self.producer_ids) > MAX_PRODUCER_IDS:
                    self.producer_ids.popitem(last=False)
            return
        self.brokers.update(brokers_in(api_key, response))
        if api_key == ApiKey.METADATA:
            for topic in response.topics:
                topic_id = getattr(topic, "topic_id", None)
                if topic_id is not None and topic_id.int and topic.name is not None and topic.error_code == 0:
                    self.topic_names[topic_id] = topic.name


class GatewayEndpoint(Endpoint):
    """A gateway listener. The one built by the caller (the *bootstrap* listener) carries its
    connections to any upstream bootstrap server; it starts one listener per upstream broker
    (``upstream_node``), whose connections go to that broker."""

    def __init__(self, security, gateway: Gateway, *, bootstrap: GatewayEndpoint | None = None,
                 upstream_node: int | None = None, **endpoint):
        super().__init__(security, **endpoint)
        self.gateway = gateway
        self.upstream_node = upstream_node
        self._bootstrap = bootstrap
        self._requested_port = self.port
        self._broker_listeners: dict[int, GatewayEndpoint] = {}
        self._starting_listeners = asyncio.Lock()

    def _collect_apis(self) -> ApiHandlers:
        # Only the security APIs are answered here: Metadata, FindCoordinator and the rest
        # are the upstream's, filtered.
        apis = ApiHandlers.collect(self.security, {}, accepts_envelopes=False)
        apis.ranges = {**self.gateway.forwarded_ranges, **apis.ranges}
        return apis

    async def start(self) -> GatewayEndpoint:
        if not self.gateway.upstream_versions:  # the first listener of a gateway not yet started
            await self.gateway.start()
        await super().start()
        if self._bootstrap is None:
            await self.addresses_of(self.gateway.brokers)
        return self

    async def stop(self, *, grace_ms: int = 0) -> None:
        listeners = [*self._broker_listeners.values()]
        self._broker_listeners.clear()
        await asyncio.gather(*(listener.stop(grace_ms=grace_ms) for listener in listeners), super().stop(grace_ms=grace_ms))

    @property
    def broker_listeners(self) -> Mapping[int, GatewayEndpoint]:
        """Upstream node id -> the gateway listener that stands for it."""
        return self._broker_listeners

    async def addresses_of(self, node_ids) -> dict[int, Address]:
        """The gateway's address for each upstream node, starting its listener if needed."""
        if self._bootstrap is not None:
            return await self._bootstrap.addresses_of(node_ids)
        async with self._starting_listeners:
            for node_id in node_ids:
                if node_id not in self._broker_listeners:
                    port = 0 if self._requested_port == 0 else self._requested_port + 1 + node_id
                    if port > 65535:
                        raise ValueError(f"no port for upstream node {node_id}: {self._requested_port} + 1 + {node_id} > 65535")
                    listener = GatewayEndpoint(
                        self.security, self.gateway, bootstrap=self, upstream_node=node_id, host=self.host, port=port,
                        node_id=node_id, cluster_id=self.cluster_id, listener_name=self.listener_name,
                        security_protocol=self.security_protocol, metrics=self.metrics,
                    )
                    self._broker_listeners[node_id] = await listener.start()
                    log.info("upstream broker %d %s:%d is at %s", node_id, *self.gateway.brokers.get(node_id, ("?", 0)), listener.bootstrap)
            return {node_id: (self.host, self._broker_listeners[node_id].port) for node_id in node_ids}

    # ------------------------------------------------------------------ a connection

    async def _serve_requests(self, frames: FrameReader, writer, client_address: str, principal, session) -> None:
        answers = AnswerQueue(writer, frames)
        self._connection_work().answers = answers
        link: UpstreamLink | None = None
        connection_context = self._connection_context(principal, client_address)
        try:
            while True:
                for frame in await frames.frames(self.max_request_bytes):
                    if answers.closed:
                        return
                    if self.draining:  # no new request; what is in hand is answered
                        if link is not None:
                            link.flush()
                        await answers.all_written()
                        return
                    api_key = int.from_bytes(frame[:2], "big", signed=True)
                    if session is not None:
                        if api_key == ApiKey.SASL_HANDSHAKE:
                            # A re-authentication starts once every answer is out.
                            if link is not None:
                                link.flush()
                            await answers.all_written()
                        renewed = await self._renew_session(frames, writer, client_address, frame, principal, session)
                        if renewed is not None:
                            principal, session = renewed
                            connection_context = self._connection_context(principal, client_address)
                            continue
                    if api_key in self._api_handlers.handlers or api_key in CONNECTION_APIS:
                        answers.add_task(self._local_answer(principal, client_address, frame))
                    else:
                        if link is None or link.broken:
                            link = await self._link()
                        await self._forward(link, answers, connection_context, frame)
                if link is not None:
                    link.flush()
                    await link.drain()
                await writer.drain()
                await answers.room()
        except UpstreamError as error:
            raise ConnectionClosed(str(error)) from None
        finally:
            answers.close()
            if link is not None:
                if link.broken and self.metrics is not None:
                    self.metrics.upstream_failures.inc()
                await link.close()

    def _connection_context(self, principal, client_address: str) -> RequestContext:
        return RequestContext(principal, client_address, listener_name=self.listener_name,
                              security_protocol=self.security_protocol)

    async def _local_answer(self, principal, client_address: str, frame: bytes) -> Sequence[bytes] | None:
        """An API kafkasec answers itself (ApiVersions, the security APIs), as the endpoint does."""
        answer = await self._answer(principal, client_address, frame)
        return None if answer is None else (wire.size_prefixed(answer),)

    async def _link(self) -> UpstreamLink:
        try:
            link = await self.gateway.connect(self.upstream_node)
        except UpstreamError as error:
            if self.metrics is not None:
                self.metrics.upstream_failures.inc()
            raise ConnectionClosed(str(error)) from None
        if self.metrics is not None:
            self.metrics.upstream_links_opened.inc()
        return link

    async def _forward(self, link: UpstreamLink, answers: AnswerQueue, connection_context: RequestContext, frame: bytes) -> None:
        """Authorize a request and queue what may go on upstream, its answer's place kept in
        ``answers`` (none for a request answered by nothing). A large request is read and
        authorized on a thread (:data:`INLINE_FRAME_BYTES`); the connection's next request
        waits for it, as its order upstream must be kept."""
        started = time.perf_counter()
        request = self._read(frame)
        heavy = len(frame) > INLINE_FRAME_BYTES and _weight(frame, request) > INLINE_FRAME_BYTES
        if heavy:
            decision = await self._decide_on_thread(link, connection_context, frame, request, refreshed=False)
        else:
            decision = self._decide(connection_context, frame, request, refreshed=False)
        request = decision.request
        if decision.authorization is not None and decision.authorization.needs_topic_names:
            link.flush()  # the requests before this one go first, as they came
            try:
                await self.gateway.refresh(link)
            except (UpstreamError, KafkaError) as error:
                raise ConnectionClosed(f"could not learn topic ids: {error}") from None
            if heavy:
                decision = await self._decide_on_thread(link, connection_context, frame, request, refreshed=True)
            else:
                decision = self._decide(connection_context, frame, request, refreshed=True)
        if decision.answer is not None:
            answers.add(decision.answer)
            self._count(request.api_key, decision.result, started)
            return
        authorization = decision.authorization
        assert decision.out is not None and authorization is not None  # a decision forwards or answers
        on_answer = None
        if decision.answered:
            place = answers.reserve()
            on_answer = functools.partial(self._upstream_answered, answers, place, authorization, request,
                                          decision.context.principal, heavy, started, time.perf_counter())
        else:
            self._count(request.api_key, "ok", started)
        link.send(decision.out, on_answer)

    def _read(self, frame: bytes) -> wire.Request | None:
        """The request in ``frame``, or None when it is large and is read with its
        authorization (:meth:`_decide`). A Produce is read here whatever its size: its records
        are most of its bytes and are not parsed, and it is weighed by the rest (:func:`_weight`).
        ConnectionClosed when the API or version is not served."""
        try:
            api_key, version = wire.peek_api(frame)
        except KafkaError as error:
            raise ConnectionClosed(f"unreadable request: {error}") from None
        if not self._api_handlers.serves(api_key, version):
            raise ConnectionClosed(f"API key {api_key} v{version} is not served here")
        if api_key != ApiKey.PRODUCE and len(frame) > INLINE_FRAME_BYTES:
            return None
        return _decoded(frame)

    async def _decide_on_thread(self, link: UpstreamLink, connection_context: RequestContext, frame: bytes,
                                request: wire.Request | None, *, refreshed: bool) -> _Decision:
        """:meth:`_decide` for a heavy request, on a thread in its principal's turn."""
        link.flush()  # what came before it goes on while it waits
        assert self._io_pool is not None  # the endpoint is started
        return await self._io_pool.run(connection_context.principal, self._decide, connection_context, frame, request, refreshed)

    def _decide(self, connection_context: RequestContext, frame: bytes, request: wire.Request | None,
                refreshed: bool) -> _Decision:
        """What to do with the request in ``frame`` (``request``, or None when not yet read):
        the bytes to send upstream, or the answer to give now. Until the gateway has
        ``refreshed`` its topic names, a decision that needs them says so instead. No I/O: it
        may run on a thread."""
        if request is None:
            request = _decoded(frame)
        header = request.header
        api_key, version = request.api_key, request.api_version
        context = connection_context.for_request(api_key, version, header.client_id or "", int(header.correlation_id))
        principal = context.principal
        try:
            authorization = self._authorize(context, request)
        except Exception:
            log.exception("authorizing %s v%d from %s failed", ApiKey(api_key).title, version, principal)
            return _Decision(request, context, answer=self._unexpected_error(request, principal), result="error")
        if authorization.needs_topic_names and not refreshed:
            return _Decision(request, context, authorization)
        if authorization.refusals:
            log_refused(context, authorization)
        answered = not (api_key == ApiKey.PRODUCE and request.body.acks == 0)
        if not answered and authorization.refusals:
            # Kafka answers nothing to acks=0, and closes the connection when it refuses.
            raise ConnectionClosed("a Produce with acks=0 was refused")
        if authorization.forward is None:
            return _Decision(request, context, authorization, answer=self._response(request, principal, authorization.response),
                             result="refused" if authorization.refusals else "error")
        if authorization.unchanged and request.read_whole:
            return _Decision(request, context, authorization, out=frame, answered=answered)
        try:
            out = wire.encode_request(authorization.forward, correlation_id=int(header.correlation_id), client_id=header.client_id)
        except Exception:
            log.exception("encoding the authorized part of %s v%d from %s failed", ApiKey(api_key).title, version, principal)
            return _Decision(request, context, answer=self._unexpected_error(request, principal), result="error")
        return _Decision(request, context, authorization, out=out, answered=answered)

    def _upstream_answered(self, answers: AnswerQueue, place: AnswerPlace, authorization, request: wire.Request,
                           principal, heavy: bool, started: float, upstream_started: float,
                           frame: bytes | bytearray | None, error: UpstreamError | None) -> None:
        """The upstream's answer to a forwarded request (called as the link reads it): the
        client's answer takes its place, now; or from a task, when it names brokers or must
        be made on a thread: from a large answer, or to a ``heavy`` request (its refusals are
        merged into the answer: a Metadata naming 40,000 topics may get a small answer)."""
        if error is not None:
            answers.fail(place, str(error))
            self._count(request.api_key, "error", started, upstream_started)
            return
        assert frame is not None  # an answer, or the error that came instead
        try:
            answer = self._passed_answer(frame, authorization, request)
            if answer is None and (heavy or len(frame) > INLINE_FRAME_BYTES):
                answers.fill_from(place, self._answer_on_thread(frame, authorization, request, principal, started, upstream_started))
                return
            if answer is None:
                answer = self._client_answer(frame, authorization, request, principal)
        except (UpstreamError, ConnectionClosed, KafkaError) as failure:
            answers.fail(place, str(failure))
            self._count(request.api_key, "error", started, upstream_started)
            return
        self._count(request.api_key, "refused" if authorization.refusals else "ok", started, upstream_started)
        if isinstance(answer, tuple):
            answers.fill(place, answer)
        else:
            answers.fill_from(place, answer)

    async def _answer_on_thread(self, frame: bytes | bytearray, authorization, request: wire.Request, principal,
                                started: float, upstream_started: float) -> Sequence[bytes]:
        """:meth:`_client_answer` of a large answer, on a thread in the principal's turn."""
        assert self._io_pool is not None  # the endpoint is started
        try:
            answer = await self._io_pool.run(principal, self._client_answer, frame, authorization, request, principal, True)
            if not isinstance(answer, tuple):
                answer = await answer
        except (UpstreamError, ConnectionClosed, KafkaError):
            self._count(request.api_key, "error", started, upstream_started)
            raise
        self._count(request.api_key, "refused" if authorization.refusals else "ok", started, upstream_started)
        return answer

    def _count(self, api_key: int, result: str, started: float, upstream_started: float | None = None) -> None:
        if self.metrics is not None:
            self.metrics.request(api_key, result, started, upstream_started)

    def _authorize(self, context, request: wire.Request):
        return authorize_request(
            self.security, context, request.body, request.api_version, topic_names=self.gateway.topic_names,
            producer_ids=self.gateway.producer_ids,
        )

    def _passed_answer(self, frame: bytes | bytearray, authorization, request: wire.Request) -> tuple[bytes | memoryview, ...] | None:
        """The upstream's ``frame`` as the client's answer, with the client's correlation id,
        when its bytes may pass as they are (nothing to filter, merge or learn, no brokers
        named); None when it must be read."""
        api_key, version = request.api_key, request.api_version
        if not authorization.passes_response or self.gateway.learns_from(api_key, request.body):
            return None
        try:
            if names_brokers(api_key, version, frame):
                return None
        except KafkaError as error:
            raise UpstreamError(f"sent an unreadable {ApiKey(api_key).title} answer: {error}") from None
        return framed(frame, int(request.header.correlation_id), 0)

    def _client_answer(self, frame: bytes | bytearray, authorization, request: wire.Request, principal,
                       heavy: bool = False):
        """The client's answer made from the upstream's ``frame`` (read, learnt from, merged
        with the refusals), in pieces to write one after the other; or, for an answer naming
        brokers, the coroutine that makes it (the gateway's listeners for them may need
        starting; a ``heavy`` one is encoded on a thread). It may run on a thread."""
        api_key, version, correlation_id = request.api_key, request.api_version, int(request.header.correlation_id)
        try:
            _, answer = wire.decode_response(frame, api_key, version)
        except KafkaError as error:
            raise UpstreamError(f"sent an unreadable {ApiKey(api_key).title} answer: {error}") from None
        self.gateway.learn(api_key, answer, request.body)
        try:
            response = authorization.response(answer)
            brokers = brokers_in(api_key, response)
        except Exception:
            log.exception("answering %s v%d from %s failed", ApiKey(api_key).title, version, principal)
            return self._unexpected_error(request, principal)
        if brokers:
            return self._with_gateway_addresses(request, principal, response, brokers, heavy)
        if response is answer:
            return framed(frame, correlation_id, 0)
        return self._response(request, principal, lambda: response)

    async def _with_gateway_addresses(self, request: wire.Request, principal, response, brokers, heavy: bool) -> Sequence[bytes]:
        addresses = await self.addresses_of(brokers)
        make = functools.partial(with_addresses, request.api_key, response, addresses)
        if not heavy:
            return self._response(request, principal, make)
        assert self._io_pool is not None  # the endpoint is started
        return await self._io_pool.run(principal, self._response, request, principal, make)

    def _response(self, request: wire.Request, principal, make) -> Sequence[bytes]:
        """The frame of the response ``make()`` gives; Kafka's answer to an unexpected error
        when making or encoding it fails (a name past what a non-flexible version can carry)."""
        try:
            return (wire.size_prefixed(wire.encode_response(make(), correlation_id=int(request.header.correlation_id))),)
        except Exception:
            log.exception("answering %s v%d from %s failed", ApiKey(request.api_key).title, request.api_version, principal)
            return self._unexpected_error(request, principal)

    @staticmethod
    def _unexpected_error(request: wire.Request, principal) -> Sequence[bytes]:
        """What Kafka answers a request whose handling failed unexpectedly (logged by the
        caller): UNKNOWN_SERVER_ERROR in the response's shape, or, where that shape cannot
        carry it or be encoded, a clean close."""
        frame = unknown_server_error_frame(request.api_key, request.api_version, request.body, int(request.header.correlation_id))
        if frame is None:
            what = f"{ApiKey(request.api_key).title} v{request.api_version} from {principal}"
            raise ConnectionClosed(f"{what}: no error response can be given; closing the connection")
        return (wire.size_prefixed(frame),)


def _decoded(frame: bytes) -> wire.Request:
    try:
        return wire.decode_request(frame)
    except KafkaError as error:
        raise ConnectionClosed(f"unreadable request: {error}") from None


def _weight(frame: bytes, request: wire.Request | None) -> int:
    """The bytes of a request that its reading and authorization grow with: its frame's, less
    a Produce's records (passed on as they are, never parsed)."""
    if request is None or request.api_key != ApiKey.PRODUCE:
        return len(frame)
    records = sum(len(partition.records or b"") for topic in request.body.topic_data for partition in topic.partition_data)
    return len(frame) - records


class _Decision:
    """What :meth:`GatewayEndpoint._decide` made of a request: the bytes to send upstream
    (``out``; ``answered`` says whether an answer comes back), or the client's ``answer``
    made now (``result`` for the metrics), or neither, when ``authorization`` needs topic
    names the gateway must learn first."""

    __slots__ = ("request", "context", "authorization", "out", "answered", "answer", "result")

    def __init__(self, request: wire.Request, context: RequestContext, authorization: Any = None, *,
                 out: bytes | None = None, answered: bool = True, answer: Sequence[bytes] | None = None,
                 result: str = "ok"):
        self.request, self.context, self.authorization = request, context, authorization
        self.out, self.answered, self.answer, self.result = out, answered, answer, result
