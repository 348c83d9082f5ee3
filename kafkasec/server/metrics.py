"""kafkasec serve's metrics, in Prometheus' format (docs/operations.md has the table).

One :class:`ServerMetrics` per process holds a registry of its own. Counters and histograms are
updated on the request path through label children looked up once (a dict hit, then an add
under the child's lock: a few hundred nanoseconds); what can be read when scraped (the ACL
count, connections open, the security log's position and lag) is read then, by a collector,
and costs the request path nothing. No principal or resource name is a label by default (their
number has no bound); ``kafkasec.metrics.refusals.by.principal.max`` opts in to refusal counts
per principal, the first N principals by name and the rest as ``other``.

Names follow Kafka's metrics where Kafka has one (the authorizer's
``authorization-request-rate-per-minute``, SocketServer's ``connection-count``,
``successful-authentication-total`` and ``failed-authentication-total``, RequestMetrics'
``RequestsPerSec`` and ``TotalTimeMs``), with kafkasec's prefix and Prometheus' conventions
(``_total`` counters, seconds).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from kafkasec.acl import AclOperation, ResourceType
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.settings import parse_count

if TYPE_CHECKING:
    from kafkasec.server.endpoint import Endpoint

REFUSALS_BY_PRINCIPAL_MAX = "kafkasec.metrics.refusals.by.principal.max"
OTHER_PRINCIPALS = "other"

LATENCY_BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""From 100 µs (the gateway's own work on a small request) to 10 s (a Fetch that waits)."""


class ServerMetrics:
    """The metrics of one ``kafkasec serve`` process (see the module's docstring)."""

    def __init__(self, security, *, refusals_by_principal_max: int = 0):
        if refusals_by_principal_max < 0:
            raise ValueError(f"{REFUSALS_BY_PRINCIPAL_MAX} is a count, not {refusals_by_principal_max}")
        self.security = security
        self.registry = CollectorRegistry()
        registry = self.registry
        self._authorizations = Counter(
            "kafkasec_authorizer_authorizations", "Authorization decisions (Kafka: authorization-request-rate-per-minute), "
            "by operation, resource type and result", ["operation", "resource_type", "result"], registry=registry)
        self._refused_principals = Counter(
            "kafkasec_authorizer_denied_by_principal", f"Denied decisions by principal (the first "
            f"{REFUSALS_BY_PRINCIPAL_MAX} principals by name, the rest as '{OTHER_PRINCIPALS}')",
            ["principal"], registry=registry) if refusals_by_principal_max else None
        self._principals_named: set[str] = set()
        self._principals_max = refusals_by_principal_max
        self.connections_accepted = Counter(
            "kafkasec_server_connections_accepted", "Connections accepted (Kafka: connection-creation-total), by listener",
            ["listener"], registry=registry)
        self.authentications = Counter(
            "kafkasec_server_authentications", "SASL logins (Kafka: successful-authentication-total and "
            "failed-authentication-total), by listener, mechanism and result", ["listener", "mechanism", "result"],
            registry=registry)
        self._requests = Counter(
            "kafkasec_network_requests", "Requests answered (Kafka: RequestsPerSec), by API and result "
            "(ok, refused: some or all of it refused by ACLs, error: answered with an error or by closing)",
            ["request", "result"], registry=registry)
        self._request_seconds = Histogram(
            "kafkasec_network_request_total_time_seconds", "From the request read whole to its answer written "
            "(Kafka: TotalTimeMs), by API", ["request"], buckets=LATENCY_BUCKETS_S, registry=registry)
        self._upstream_seconds = Histogram(
            "kafkasec_gateway_upstream_time_seconds", "The gateway's share of TotalTime spent waiting for the "
            "upstream broker, by API", ["request"], buckets=LATENCY_BUCKETS_S, registry=registry)
        self.upstream_failures = Counter(
            "kafkasec_gateway_upstream_failures", "Upstream links that could not be opened or broke", registry=registry)
        self.upstream_links_opened = Counter(
            "kafkasec_gateway_upstream_connections_opened", "Upstream links opened", registry=registry)
        self._endpoints: list[Endpoint] = []
        self._lock = threading.Lock()
        self._decision_children: dict[tuple, object] = {}
        self._request_children: dict[tuple[int, str], object] = {}
        self._latency_children: dict[int, object] = {}
        self._upstream_children: dict[int, object] = {}
        registry.register(_ScrapeTimeCollector(self))

    @classmethod
    def from_config(cls, security) -> ServerMetrics:
        config: Mapping[str, object] = security.config
        return cls(security, refusals_by_principal_max=parse_count(config, REFUSALS_BY_PRINCIPAL_MAX, 0, unit="principals"))

    # ------------------------------------------------------------------ what the server reports

    def add_endpoint(self, endpoint: Endpoint) -> None:
        """An endpoint whose open connections are counted at each scrape."""
        with self._lock:
            self._endpoints.append(endpoint)

    def remove_endpoint(self, endpoint: Endpoint) -> None:
        with self._lock:
            if endpoint in self._endpoints:
                self._endpoints.remove(endpoint)

    def authorized(self, context: RequestContext, actions: Sequence[Action], results: list[AuthorizationResult]) -> None:
        """Every authorize call's answers (AuthorizationService.observe_results)."""
        children = self._decision_children
        for action, result in zip(actions, results):
            key = (action.operation, action.resource_pattern.resource_type, result)
            child = children.get(key)
            if child is None:
                child = children[key] = self._authorizations.labels(
                    AclOperation(key[0]).name, ResourceType(key[1]).name, AuthorizationResult(key[2]).name)
            child.inc()  # type: ignore[attr-defined]  # a labelled Counter
            if result is AuthorizationResult.DENIED and self._refused_principals is not None:
                self._refused_principals.labels(self._principal_label(context)).inc()

    def _principal_label(self, context: RequestContext) -> str:
        name = context.principal_text
        if name in self._principals_named:
            return name
        with self._lock:
            if len(self._principals_named) < self._principals_max:
                self._principals_named.add(name)
                return name
        return OTHER_PRINCIPALS

    def request(self, api_key: int, result: str, started: float, upstream_started: float | None = None) -> None:
        """One request answered: ``result`` ok, refused or error; ``started`` when it was read
        whole and ``upstream_started`` when it went upstream (``time.perf_counter()``)."""
        now = time.perf_counter()
        child = self._request_children.get((api_key, result))
        if child is None:
            child = self._request_children[(api_key, result)] = self._requests.labels(_api_name(api_key), result)
        child.inc()  # type: ignore[attr-defined]
        latency = self._latency_children.get(api_key)
        if latency is None:
            latency = self._latency_children[api_key] = self._request_seconds.labels(_api_name(api_key))
        latency.observe(now - started)  # type: ignore[attr-defined]
        if upstream_started is not None:
            upstream = self._upstream_children.get(api_key)
            if upstream is None:
                upstream = self._upstream_children[api_key] = self._upstream_seconds.labels(_api_name(api_key))
            upstream.observe(now - upstream_started)  # type: ignore[attr-defined]

    def login(self, listener: str, mechanism: str | None, succeeded: bool) -> None:
        self.authentications.labels(listener, mechanism or "none", "success" if succeeded else "failure").inc()

    def endpoints(self) -> list[Endpoint]:
        with self._lock:
            return list(self._endpoints)


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).title
    except ValueError:
        return str(api_key)


class _ScrapeTimeCollector:
    """What is read when Prometheus asks: the ACL count, the open connections by listener,
    and where this process stands in the security log."""

    def __init__(self, metrics: ServerMetrics):
        self._metrics = metrics

    def collect(self) -> Iterable[GaugeMetricFamily]:
        security = self._metrics.security
        acls = GaugeMetricFamily("kafkasec_authorizer_acls_total_count", "ACLs this process enforces (Kafka: acls-total-count)")
        acls.add_metric([], len(security.authorizer.index))
        yield acls
        connections = GaugeMetricFamily("kafkasec_server_connection_count",
                                        "Client connections open (Kafka: connection-count), by listener", labels=["listener"])
        by_listener: dict[str, int] = {}
        for endpoint in self._metrics.endpoints():
            by_listener[endpoint.listener_name] = by_listener.get(endpoint.listener_name, 0) + endpoint.connection_count
        for listener, count in sorted(by_listener.items()):
            connections.add_metric([listener], count)
        yield connections
        follower = security.follower
        if follower is not None:
            position = GaugeMetricFamily("kafkasec_state_log_applied_offset", "The last security-log record applied here")
            position.add_metric([], follower.applied_offset)
            yield position
            lag = GaugeMetricFamily("kafkasec_state_log_lag", "Security-log records committed but not applied here")
            lag.add_metric([], follower.lag)
            yield lag
            ready = GaugeMetricFamily("kafkasec_state_ready", "1 when the state is loaded and followed")
            ready.add_metric([], 1 if follower.ready else 0)
            yield ready
