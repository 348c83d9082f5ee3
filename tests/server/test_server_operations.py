"""What an operator reads from a gateway over real sockets, in front of Tansu: the Prometheus
metrics (decisions, requests, logins, connections, ACLs, the security log), /healthz and
/readyz, the per-principal refusal counts and their cap, and one INFO line per refused request
on kafkasec.authorizer.logger, nothing secret in it."""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("prometheus_client")

from kafkasec import AclBinding  # noqa: E402
from kafkasec.errors import SaslAuthenticationError  # noqa: E402
from kafkasec.protocol import wire  # noqa: E402
from kafkasec.protocol.api_keys import ApiKey  # noqa: E402
from kafkasec.server.gateway import Gateway, GatewayEndpoint  # noqa: E402
from kafkasec.server.metrics import ServerMetrics  # noqa: E402
from kafkasec.server.operations_http import OperationsServer  # noqa: E402

from gateway_support import gateway_security  # noqa: E402
from record_batches import record_batch  # noqa: E402
from server_support import PASSWORDS, logged_in, run  # noqa: E402


def _produce(topic: str):
    schema = wire.request_schema(ApiKey.PRODUCE, 9)
    topic_type = wire.item_type(schema, "topic_data")
    partition = wire.build(wire.item_type(topic_type, "partition_data"), index=0, records=record_batch([(None, b"v")]))
    return wire.build(schema, acks=1, timeout=datetime.timedelta(seconds=10),
                      topic_data=(wire.build(topic_type, name=topic, partition_data=(partition,)),))


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sample(text: str, name: str, **labels) -> float:
    """The value of one series of a Prometheus text page (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
            if all(found.get(key) == value for key, value in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture
def operated(server_state, tansu):
    """(a gateway with metrics, its operations server, the Tansu behind it)."""
    with gateway_security(server_state, tansu.bootstrap) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", operation, "ALLOW")
                              for operation in ("WRITE", "CREATE", "DESCRIBE")])
        metrics = ServerMetrics(security, refusals_by_principal_max=1)
        security.authorization.observe_results(metrics.authorized)
        endpoint = GatewayEndpoint(security, Gateway(security), metrics=metrics)
        with endpoint.running_in_thread():
            operations = OperationsServer(metrics, [("listeners open", lambda: endpoint.listening),
                                                    ("upstream answers", lambda: tansu.running)]).start()
            try:
                yield endpoint, operations, tansu
            finally:
                operations.stop()
                security.authorization.observe_results(None)


def test_a_scrape_counts_decisions_requests_logins_connections_acls_and_the_log(operated, caplog):
    caplog.set_level(logging.INFO, "kafkasec.authorizer.logger")
    endpoint, operations, _ = operated
    base = f"http://127.0.0.1:{operations.port}"

    async def traffic():
        for user in ("alice", "bob"):
            connection = await logged_in(endpoint, user)
            async with connection:
                await connection.request(_produce("orders"))
                await connection.request(_produce("payments"))
        connection = await endpoint_connection(endpoint)
        with pytest.raises(SaslAuthenticationError):
            await connection.login("SCRAM-SHA-256", "alice", "not-her-password")

    run(traffic())
    status, page = _get(base + "/metrics")
    assert status == 200
    assert _sample(page, "kafkasec_authorizer_authorizations_total", operation="WRITE", resource_type="TOPIC", result="ALLOWED") >= 1
    assert _sample(page, "kafkasec_authorizer_authorizations_total", operation="WRITE", resource_type="TOPIC", result="DENIED") >= 3
    assert _sample(page, "kafkasec_network_requests_total", request="Produce", result="ok") >= 1
    assert _sample(page, "kafkasec_network_requests_total", request="Produce", result="refused") == 3
    assert _sample(page, "kafkasec_network_request_total_time_seconds_count", request="Produce") == 4
    assert _sample(page, "kafkasec_gateway_upstream_time_seconds_count", request="Produce") >= 1
    assert _sample(page, "kafkasec_server_authentications_total", mechanism="SCRAM-SHA-256", result="success") == 2
    assert _sample(page, "kafkasec_server_authentications_total", mechanism="SCRAM-SHA-256", result="failure") == 1
    assert _sample(page, "kafkasec_server_connections_accepted_total", listener="SASL_PLAINTEXT") == 3
    assert _sample(page, "kafkasec_authorizer_acls_total_count") == 3
    assert _sample(page, "kafkasec_state_ready") == 1
    # No principal or resource name is a label, except the refusal counts asked for (one principal, the rest 'other').
    assert "payments" not in page and "orders" not in page
    assert _sample(page, "kafkasec_authorizer_denied_by_principal_total", principal="User:alice") >= 1
    assert _sample(page, "kafkasec_authorizer_denied_by_principal_total", principal="other") >= 2
    assert "User:bob" not in page
    refused = [record for record in caplog.records if record.name == "kafkasec.authorizer.logger"]
    assert len(refused) == 3 and all(record.levelno == logging.INFO for record in refused)
    assert "Principal = User:alice is Denied from host = 127.0.0.1 for request = Produce v9" in refused[0].getMessage()
    assert "Principal = User:bob is Denied from host = 127.0.0.1 for request = Produce v9" in refused[1].getMessage()
    assert "resource = Topic:LITERAL:orders TOPIC_AUTHORIZATION_FAILED" in refused[1].getMessage()
    assert refused[1].refusals == ["resource = Topic:LITERAL:orders TOPIC_AUTHORIZATION_FAILED"]
    assert not any(secret in caplog.text for secret in PASSWORDS.values()) and "not-her-password" not in caplog.text


async def endpoint_connection(endpoint):
    from kafkasec.server import KafkaConnection

    return await KafkaConnection.open(endpoint.host, endpoint.port)


def test_health_and_readiness(operated):
    endpoint, operations, tansu = operated
    base = f"http://127.0.0.1:{operations.port}"
    assert _get(base + "/healthz") == (200, "ok\n")
    assert _get(base + "/readyz") == (200, "listeners open: ok\nupstream answers: ok\n")
    tansu.stop()
    status, body = _get(base + "/readyz")
    assert (status, body) == (503, "listeners open: ok\nupstream answers: not ready\n")
    assert _get(base + "/healthz")[0] == 200  # alive, only not ready
    assert _get(base + "/nothing")[0] == 404
    tansu.start()


def test_a_scrape_of_a_large_gateway_is_quick(operated):
    # Issue 41's target: 100,000 ACLs and 1,000 connections answer a scrape in <= 100 ms. The
    # scrape reads counts, never the ACLs themselves.
    endpoint, operations, _ = operated
    security = endpoint.security
    security.create_acls([AclBinding.of("TOPIC", f"t-{number}", "LITERAL", f"User:u-{number % 500}", "*", "READ", "ALLOW")
                          for number in range(100_000)])

    async def connect_many():
        opened = [await asyncio.open_connection(endpoint.host, endpoint.port) for _ in range(1000)]
        try:
            deadline = time.monotonic() + 10
            while endpoint.connection_count < 1000 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert endpoint.connection_count == 1000
            timings = []
            for _ in range(5):
                started = time.perf_counter()
                status, page = await asyncio.to_thread(_get, f"http://127.0.0.1:{operations.port}/metrics")
                timings.append(time.perf_counter() - started)
                assert status == 200
            return page, min(timings)
        finally:
            for _, writer in opened:
                writer.close()

    page, best = run(connect_many())
    assert _sample(page, "kafkasec_authorizer_acls_total_count") == 100_003
    assert _sample(page, "kafkasec_server_connection_count", listener="SASL_PLAINTEXT") == 1000
    assert best < 0.1, f"a scrape took {best * 1000:.0f} ms"


def test_refusal_counts_per_principal_are_off_unless_asked(server_state):
    from server_support import open_security

    with open_security(server_state) as security:
        metrics = ServerMetrics.from_config(security)
        assert metrics.registry.get_sample_value("kafkasec_authorizer_denied_by_principal_total", {"principal": "other"}) is None
        with pytest.raises(ValueError, match="kafkasec.metrics.refusals.by.principal.max is a count"):
            ServerMetrics(security, refusals_by_principal_max=-1)


def test_decisions_counted_on_many_threads_add_up(server_state):
    # Counts are kept per thread without a lock and summed at the scrape: none may be lost.
    import threading

    from kafkasec.acl import AclOperation, ResourcePattern, ResourceType
    from kafkasec.context import Action, AuthorizationResult, RequestContext

    from server_support import open_security

    with open_security(server_state) as security:
        metrics = ServerMetrics(security)
        context = RequestContext.for_principal("User:alice")
        actions = [Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, "t"))]

        def count(result):
            for _ in range(5000):
                metrics.authorized(context, actions, [result])

        threads = [threading.Thread(target=count, args=(result,))
                   for result in (AuthorizationResult.ALLOWED, AuthorizationResult.DENIED) * 3]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        labels = {"operation": "READ", "resource_type": "TOPIC"}
        sample = metrics.registry.get_sample_value
        assert sample("kafkasec_authorizer_authorizations_total", {**labels, "result": "ALLOWED"}) == 15_000
        assert sample("kafkasec_authorizer_authorizations_total", {**labels, "result": "DENIED"}) == 15_000
