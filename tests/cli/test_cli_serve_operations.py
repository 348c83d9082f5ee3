"""Operating `kafkasec serve --upstream` as separate OS processes in front of Tansu: a real
Prometheus scrapes it, its log is JSON on request, and two gateway processes sharing one port
are restarted in turn under a producer (acks=all) and a consumer group, which see only
retriable errors and lose no acknowledged record."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("prometheus_client")

from kafkasec import AclBinding  # noqa: E402
from kafkasec.testing import free_port  # noqa: E402

from gateway_support import FAST_GROUPS, TANSU_SETTINGS  # noqa: E402
from server_support import PASSWORDS, add_users, open_security  # noqa: E402

TOPIC, GROUP = "rolling", "rolling-group"


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "state.db"
    with open_security(path) as security:
        add_users(security)
        security.create_acls([
            *(AclBinding.of("TOPIC", TOPIC, "LITERAL", "User:alice", "*", operation, "ALLOW")
              for operation in ("WRITE", "READ", "CREATE", "DESCRIBE")),
            AclBinding.of("GROUP", GROUP, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
            AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW"),
        ])
    return path


class Gateway:
    """One `kafkasec serve --upstream` process."""

    def __init__(self, state, tansu, directory, *, port: int = 0, log_format: str = "text", **settings):
        properties = directory / f"gateway-{port}-{time.monotonic_ns()}.properties"
        lines = {"super.users": "User:admin", **TANSU_SETTINGS, **settings}
        properties.write_text("".join(f"{key}={value}\n" for key, value in lines.items()), encoding="utf-8")
        command = [sys.executable, "-m", "kafkasec", "--state", str(state), "--config", str(properties), "serve",
                   "--port", str(port), "--upstream", tansu.bootstrap, "--log-format", log_format]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=directory)
        self.lines = []
        for line in self.process.stdout:
            self.lines.append(line)
            if " upstream broker " in line:
                break
        assert self.lines and " upstream broker " in self.lines[-1], "".join(self.lines) + self.process.stderr.read()
        self.bootstrap = next(line.split()[-1] for line in self.lines if " listening on " in line)
        self.metrics_url = next((line.split()[-1] for line in self.lines if " metrics on " in line), None)

    def stop(self) -> str:
        """SIGTERM, and the log once the process has ended."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(30) == 0
        return self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _client(bootstrap: str, **config) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": PASSWORDS["alice"], **config}


RETRIABLE = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
             "COORDINATOR_LOAD_IN_PROGRESS", "REQUEST_TIMED_OUT", "_TIMED_OUT", "NETWORK_EXCEPTION", "REBALANCE_IN_PROGRESS",
             "_MSG_TIMED_OUT", "LEADER_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PART"}
"""What a client may see while a gateway process restarts: connections dropping and coming back."""


@pytest.mark.slow
def test_two_gateways_sharing_a_port_restarted_in_turn_lose_no_acknowledged_record(state, tansu, tmp_path):
    port = free_port()
    settings = {"kafkasec.server.reuse.port": "true", "kafkasec.server.shutdown.timeout.ms": "10000"}
    gateways = [Gateway(state, tansu, tmp_path, port=port, **settings) for _ in range(2)]
    bootstrap = gateways[0].bootstrap
    acknowledged: list[int] = []
    failed: list[str] = []
    errors: list[str] = []
    consumed: set[int] = set()
    producing = threading.Event()
    producing.set()

    def on_error(error) -> None:
        errors.append(error.name())

    def produce() -> None:
        producer = confluent_kafka.Producer(_client(bootstrap, acks="all", **{"enable.idempotence": True, "linger.ms": 5,
                                                                            "error_cb": on_error}))

        def delivered(error, message) -> None:
            if error is None:
                acknowledged.append(int(message.value()))
            else:
                failed.append(error.name())

        number = 0
        while producing.is_set():
            producer.produce(TOPIC, str(number).encode(), on_delivery=delivered)
            number += 1
            producer.poll(0.005)
        assert producer.flush(60) == 0

    def consume(until: threading.Event) -> None:
        consumer = confluent_kafka.Consumer(_client(bootstrap, **{"group.id": GROUP, "auto.offset.reset": "earliest",
                                                                  "error_cb": on_error, **FAST_GROUPS}))
        consumer.subscribe([TOPIC])
        try:
            while not until.is_set() or not set(acknowledged) <= consumed:
                message = consumer.poll(0.2)
                if message is None:
                    continue
                if message.error() is not None:
                    errors.append(message.error().name())
                    continue
                consumed.add(int(message.value()))
                if until.is_set() and time.monotonic() > consumer_deadline[0]:
                    break
        finally:
            consumer.close()

    consumer_deadline = [float("inf")]
    consumer_done = threading.Event()
    producer_thread = threading.Thread(target=produce)
    consumer_thread = threading.Thread(target=consume, args=(consumer_done,))
    try:
        producer_thread.start()
        consumer_thread.start()
        time.sleep(5)
        drained = 0
        for index in range(2):  # restart each in turn while the other serves
            log = gateways[index].stop()
            drained += sum(int(count) for count in re.findall(r"draining [\d.:]+: (\d+) connections", log))
            gateways[index] = Gateway(state, tansu, tmp_path, port=port, **settings)
            time.sleep(4)
        assert drained >= 2  # the clients' connections were on the processes restarted, and moved
        producing.clear()
        producer_thread.join(90)
        consumer_deadline[0] = time.monotonic() + 60
        consumer_done.set()
        consumer_thread.join(90)
    finally:
        producing.clear()
        consumer_done.set()
        for gateway in gateways:
            gateway.kill()
    assert len(acknowledged) > 100
    assert failed == [], failed
    assert set(acknowledged) <= consumed, f"{len(set(acknowledged) - consumed)} acknowledged records never read"
    assert set(errors) <= RETRIABLE, set(errors) - RETRIABLE


@pytest.mark.slow
def test_a_real_prometheus_scrapes_the_gateway(state, tansu, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("Prometheus is not installed: .ci/install-debian-packages installs Debian's prometheus")
    gateway = Gateway(state, tansu, tmp_path, **{"kafkasec.metrics.port": free_port()})
    web_port = free_port()
    config = tmp_path / "prometheus.yml"
    target = urllib.parse.urlsplit(gateway.metrics_url).netloc
    config.write_text(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kafkasec\n"
                      f"    static_configs:\n      - targets: ['{target}']\n", encoding="utf-8")
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{web_port}",
                               f"--storage.tsdb.path={tmp_path / 'tsdb'}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        producer = confluent_kafka.Producer(_client(gateway.bootstrap, **{"message.timeout.ms": 5000}))
        reports = []
        producer.produce("not-alices", b"x", on_delivery=lambda error, _message: reports.append(error))
        producer.flush(10)
        assert [report.name() for report in reports] == ["TOPIC_AUTHORIZATION_FAILED"]
        # librdkafka asks Metadata for the topic first, and that is what the gateway refuses.
        query = urllib.parse.urlencode({"query": 'sum(kafkasec_network_requests_total{result="refused"})'})
        deadline, value = time.monotonic() + 30, 0.0
        while time.monotonic() < deadline and value < 1:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/api/v1/query?{query}", timeout=2) as answer:
                    result = json.load(answer)["data"]["result"]
                value = float(result[0]["value"][1]) if result else 0.0
            except OSError:
                pass  # Prometheus still starting
            time.sleep(0.5)
        assert value >= 1, "Prometheus never saw the refused request"
    finally:
        server.terminate()
        server.wait(10)
        gateway.stop()


def test_the_log_in_json_carries_each_refused_request_and_no_secret(state, tansu, tmp_path):
    gateway = Gateway(state, tansu, tmp_path, log_format="json")
    try:
        producer = confluent_kafka.Producer(_client(gateway.bootstrap, **{"message.timeout.ms": 5000}))
        producer.produce("not-alices", b"x")
        producer.flush(10)
    finally:
        log = gateway.stop()
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert records and len(records) == len([line for line in log.splitlines() if line.strip()]) - 1  # and "stopped"
    refused = [record for record in records if record["logger"] == "kafkasec.authorizer.logger"]
    assert refused and refused[0]["level"] == "INFO" and refused[0]["principal"] == "User:alice"
    assert refused[0]["refusals"] == ["resource = Topic:LITERAL:not-alices TOPIC_AUTHORIZATION_FAILED"]
    assert not any(secret in log for secret in PASSWORDS.values())
