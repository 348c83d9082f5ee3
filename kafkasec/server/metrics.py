"""kafkasec serve's metrics, in Prometheus' format (docs/operations.md has the table).

One :class:`ServerMetrics` per process holds a registry of its own. What is counted per request
and per decision is kept by the thread that counts it, in plain dicts without a lock
(:class:`ThreadCounts`), and summed when scraped: prometheus_client's own counters and
histograms take a lock per update and walk the buckets in Python, which cost a gateway a tenth
of its CPU per small request. Rare events (connections, logins, upstream links) use
prometheus_client's counters. What can be read when scraped (the ACL count, connections open,
the security log's position and lag) is read then, and costs the request path nothing. No principal or resource name is a label by default (their
number has no bound); ``kafkasec.metrics.refusals.by.principal.max`` opts in to refusal counts
per principal, the first N principals by name and the rest as ``other``.

Names follow Kafka's metrics where Kafka has one (the authorizer's
``authorization-request-rate-per-minute``, SocketServer's ``connection-count``,
``successful-authentication-total`` and ``failed-authentication-total``, RequestMetrics'
``RequestsPerSec`` and ``TotalTimeMs``), with kafkasec's prefix and Prometheus' conventions
(``_total`` counters, seconds).
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

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
        self.decisions = ThreadCounts()
        """(operation, resource type, result) -> decisions; with per-principal refusals,
        also ("principal", name) -> denied decisions."""
        self.requests = ThreadCounts()
        """(API key, result) -> requests; ("total", API key) and ("upstream", API key) ->
        [bucket counts, sum of seconds], the latency histograms."""
        self._principals_named: set[str] = set()
        self._principals_max = refusals_by_principal_max
        self.connections_accepted = Counter(
            "kafkasec_server_connections_accepted", "Connections accepted (Kafka: connection-creation-total), by listener",
            ["listener"], registry=registry)
        self.authentications = Counter(
            "kafkasec_server_authentications", "SASL logins (Kafka: successful-authentication-total and "
            "failed-authentication-total), by listener, mechanism and result", ["listener", "mechanism", "result"],
            registry=registry)
        self.upstream_failures = Counter(
            "kafkasec_gateway_upstream_failures", "Upstream links that could not be opened or broke", registry=registry)
        self.upstream_links_opened = Counter(
            "kafkasec_gateway_upstream_connections_opened", "Upstream links opened", registry=registry)
        self._endpoints: list[Endpoint] = []
        self._lock = threading.Lock()
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
        counts = self.decisions.mine()
        for action, result in zip(actions, results):
            key = (action.operation, action.resource_pattern.resource_type, result)
            counts[key] = counts.get(key, 0) + 1
            if result is DENIED and self._principals_max:
                principal = ("principal", self._principal_label(context))
                counts[principal] = counts.get(principal, 0) + 1

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
        counts = self.requests.mine()
        key = (api_key, result)
        counts[key] = counts.get(key, 0) + 1
        _observe(counts, ("total", api_key), now - started)
        if upstream_started is not None:
            _observe(counts, ("upstream", api_key), now - upstream_started)

    def login(self, listener: str, mechanism: str | None, succeeded: bool) -> None:
        self.authentications.labels(listener, mechanism or "none", "success" if succeeded else "failure").inc()

    def endpoints(self) -> list[Endpoint]:
        with self._lock:
            return list(self._endpoints)


DENIED = AuthorizationResult.DENIED


class ThreadCounts:
    """Counts kept per thread, each thread's in a dict only it writes (no lock on the request
    path), summed when read. A dict is copied whole under the interpreter lock, so a scrape
    sees each thread's counts as they were at one instant."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._dicts: list[dict[Any, Any]] = []

    def mine(self) -> dict[Any, Any]:
        """The calling thread's counts."""
        try:
            return self._local.counts
        except AttributeError:
            counts: dict[Any, Any] = {}
            self._local.counts = counts
            with self._lock:
                self._dicts.append(counts)
            return counts

    def snapshots(self) -> list[dict[Any, Any]]:
        with self._lock:
            dicts = list(self._dicts)
        return [dict(counts) for counts in dicts]


def _observe(counts: dict, key: tuple, seconds: float) -> None:
    entry = counts.get(key)
    if entry is None:
        entry = counts[key] = [[0] * (len(LATENCY_BUCKETS_S) + 1), 0.0]
    entry[0][bisect.bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
    entry[1] += seconds


class _ScrapeTimeCollector:
    """What is read when Prometheus asks: the threads' counts of decisions and requests, the
    ACL count, the open connections by listener, and where this process stands in the
    security log."""

    def __init__(self, metrics: ServerMetrics):
        self._metrics = metrics

    def _counted(self) -> Iterable[Any]:
        decisions: dict[tuple, int] = {}
        principals: dict[str, int] = {}
        for counts in self._metrics.decisions.snapshots():
            for key, count in counts.items():
                if key[0] == "principal":
                    principals[key[1]] = principals.get(key[1], 0) + count
                else:
                    decisions[key] = decisions.get(key, 0) + count
        family = CounterMetricFamily(
            "kafkasec_authorizer_authorizations", "Authorization decisions (Kafka: authorization-request-rate-per-minute), "
            "by operation, resource type and result", labels=["operation", "resource_type", "result"])
        labelled = {(AclOperation(operation).name, ResourceType(resource_type).name, result.name): count
                    for (operation, resource_type, result), count in decisions.items()}
        for labels, count in sorted(labelled.items()):
            family.add_metric(list(labels), count)
        yield family
        if self._metrics._principals_max:
            family = CounterMetricFamily(
                "kafkasec_authorizer_denied_by_principal", f"Denied decisions by principal (the first "
                f"{REFUSALS_BY_PRINCIPAL_MAX} principals by name, the rest as '{OTHER_PRINCIPALS}')", labels=["principal"])
            for principal, count in sorted(principals.items()):
                family.add_metric([principal], count)
            yield family
        requests: dict[tuple, int] = {}
        latencies: dict[tuple, tuple[list[int], float]] = {}
        for counts in self._metrics.requests.snapshots():
            for key, value in counts.items():
                if isinstance(value, int):
                    requests[key] = requests.get(key, 0) + value
                    continue
                buckets, total = latencies.get(key, ([0] * (len(LATENCY_BUCKETS_S) + 1), 0.0))
                latencies[key] = ([a + b for a, b in zip(buckets, value[0])], total + value[1])
        family = CounterMetricFamily(
            "kafkasec_network_requests", "Requests answered (Kafka: RequestsPerSec), by API and result (ok; refused: "
            "some or all of it refused, by an ACL or as malformed; error: answered with an error or by closing)",
            labels=["request", "result"])
        for (api_key, result), count in sorted(requests.items()):
            family.add_metric([ApiKey.title_of(api_key), result], count)
        yield family
        for kind, name, what in (
            ("total", "kafkasec_network_request_total_time_seconds",
             "From the request read whole to its answer made (Kafka: TotalTimeMs), by API"),
            ("upstream", "kafkasec_gateway_upstream_time_seconds",
             "The part of it spent waiting for the upstream broker (a gateway; Kafka: RemoteTimeMs), by API"),
        ):
            histogram = HistogramMetricFamily(name, what, labels=["request"])
            for (entry_kind, api_key), (buckets, total) in sorted(latencies.items()):
                if entry_kind != kind:
                    continue
                cumulative: list[tuple[str, float]] = []
                running = 0
                for bound, count in zip([*map(str, LATENCY_BUCKETS_S), "+Inf"], buckets):
                    running += count
                    cumulative.append((bound, running))
                histogram.add_metric([ApiKey.title_of(api_key)], cumulative, sum_value=total)
            yield histogram

    def collect(self) -> Iterable[Any]:
        yield from self._counted()
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
