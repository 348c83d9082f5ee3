"""A cluster of separate OS processes on one state: a controller and two brokers from
``kafkasec serve``, on SQLite and on a real PostgreSQL. Changes made through any node (by
confluent-kafka, kafkasec's own client, or the CLI) take effect on every node; a broker killed
with SIGKILL and restarted catches up and agrees with the others."""

from __future__ import annotations

import base64
import datetime
import signal
import subprocess
import sys
import threading
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import (  # noqa: E402
    AclBinding as ClientAcl,
    AclBindingFilter as ClientAclFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo as ClientCredentialInfo,
    ScramMechanism as ClientMechanism,
    UserScramCredentialDeletion as ClientDeletion,
    UserScramCredentialUpsertion as ClientUpsertion,
)

from kafkasec import AclBinding, KafkaSecurity  # noqa: E402
from kafkasec.errors import SaslAuthenticationError  # noqa: E402
from kafkasec.protocol import wire  # noqa: E402
from kafkasec.server import KafkaConnection  # noqa: E402

from server_support import CONFIG, PASSWORDS, add_users, run  # noqa: E402

pytestmark = pytest.mark.slow  # every test here takes several seconds

PROPAGATION_S = 5
"""How long a change may take to reach every node here (measured: milliseconds; see
benchmarks/README.md). Each test asserts within this bound, and records what it saw."""
TIMEOUT = 15
CREATE_TOKEN, RENEW_TOKEN, EXPIRE_TOKEN = 38, 39, 40


class Cluster:
    """A controller and brokers, each a `kafkasec serve` process, on the state in ``properties``."""

    def __init__(self, directory, properties: dict[str, str]):
        self.directory = directory
        self.config_file = directory / "server.properties"
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in properties.items()), encoding="utf-8")
        (directory / "broker.pw").write_text(PASSWORDS["broker"] + "\n", encoding="utf-8")
        (directory / "catalogue.json").write_text('{"topics": [{"name": "orders"}, {"name": "audit"}]}', encoding="utf-8")
        self.processes: dict[int, subprocess.Popen] = {}
        self.addresses: dict[int, tuple[str, int]] = {}

    def command(self, *arguments) -> list[str]:
        return [sys.executable, "-m", "kafkasec.cli", "--config", str(self.config_file), *arguments]

    def start(self, node_id: int, *roles) -> tuple[str, int]:
        process = subprocess.Popen(self.command("serve", "--port", "0", "--node-id", str(node_id),
                                                "--catalogue", str(self.directory / "catalogue.json"), *roles),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        if not line.startswith("kafkasec serve: "):
            process.kill()
            raise AssertionError(f"node {node_id} did not start: {line}{process.stderr.read()}")
        host, port = line.split()[-1].rsplit(":", 1)
        self.processes[node_id], self.addresses[node_id] = process, (host, int(port))
        return host, int(port)

    def start_controller(self):
        return self.start(0, "--process-roles", "controller")

    def start_broker(self, node_id: int):
        host, port = self.addresses[0]
        return self.start(node_id, "--controller-bootstrap-server", f"{host}:{port}", "--broker-user", "broker",
                          "--broker-password-file", str(self.directory / "broker.pw"))

    def kill(self, node_id: int) -> None:
        process = self.processes.pop(node_id)
        process.kill()
        process.wait(10)

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()

    def bootstrap(self, node_id: int) -> str:
        host, port = self.addresses[node_id]
        return f"{host}:{port}"

    def admin(self, node_id: int, user: str, password: str | None = None) -> AdminClient:
        return AdminClient({
            "bootstrap.servers": self.bootstrap(node_id), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user,
            "sasl.password": PASSWORDS.get(user, "") if password is None else password, "log_level": 0,
        })


def eventually(check, what: str):
    """``check()`` becomes true within PROPAGATION_S; how long it took."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > PROPAGATION_S:
            raise AssertionError(f"{what}: not within {PROPAGATION_S} s")
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.fixture(params=["sqlite", "postgresql"])
def cluster(request, tmp_path):
    if request.param == "sqlite":
        location = {"kafkasec.state.path": str(tmp_path / "state.db")}
    else:
        location = {"kafkasec.state.url": request.getfixturevalue("postgres_url")}
    properties = {**CONFIG, **location, "delegation.token.secret.key": "cluster-test-secret"}
    with KafkaSecurity.from_config(properties) as security:
        add_users(security)
    cluster = Cluster(tmp_path, properties)
    try:
        cluster.start_controller()
        cluster.start_broker(1)
        cluster.start_broker(2)
        yield cluster
    finally:
        cluster.stop_all()


def alice_sees_orders(cluster, node_id) -> bool:
    """Whether alice's Metadata through ``node_id`` lists the topic ``orders`` (DESCRIBE on it)."""
    topics = run(_request(cluster.addresses[node_id], "alice", wire.build(wire.request_schema(3, 12), topics=None)))[0].topics
    return "orders" in [topic.name for topic in topics]


async def _request(address, user, *bodies, password=None, token_auth=False, mechanism="SCRAM-SHA-256"):
    connection = await KafkaConnection.open(*address)
    try:
        await connection.login(mechanism, user, PASSWORDS.get(user, "") if password is None else password, token_auth=token_auth)
        return [await connection.request(body) for body in bodies]
    finally:
        await connection.close()


def can_log_in(address, user, password, token_auth=False) -> bool:
    try:
        run(_request(address, user, password=password, token_auth=token_auth, mechanism="SCRAM-SHA-512"))
        return True
    except SaslAuthenticationError:
        return False


def test_an_acl_created_through_one_broker_allows_at_the_other(cluster):
    grant = ClientAcl(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    assert not alice_sees_orders(cluster, 2)
    through_1, through_2 = cluster.admin(1, "admin"), cluster.admin(2, "admin")  # kept: a dropped client cancels
    assert through_1.create_acls([grant])[grant].result(timeout=TIMEOUT) is None  # forwarded to the controller
    eventually(lambda: alice_sees_orders(cluster, 2), "broker 2 allows what broker 1 created")
    matching = ClientAclFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                               AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    deleted = through_2.delete_acls([matching])[matching].result(timeout=TIMEOUT)
    assert len(deleted) == 1
    eventually(lambda: not alice_sees_orders(cluster, 1) and not alice_sees_orders(cluster, 0),
               "broker 1 and the controller deny what broker 2 deleted")


def test_a_scram_user_made_at_one_node_logs_in_everywhere_until_deleted(cluster):
    upsertion = ClientUpsertion("carol", ClientCredentialInfo(ClientMechanism.SCRAM_SHA_512, 4096), b"carol-secret")
    through_1, through_2 = cluster.admin(1, "admin"), cluster.admin(2, "admin")
    assert through_1.alter_user_scram_credentials([upsertion])["carol"].result(timeout=TIMEOUT) is None
    eventually(lambda: can_log_in(cluster.addresses[2], "carol", "carol-secret"), "carol logs in at broker 2")
    deletion = ClientDeletion("carol", ClientMechanism.SCRAM_SHA_512)
    assert through_2.alter_user_scram_credentials([deletion])["carol"].result(timeout=TIMEOUT) is None
    eventually(lambda: not can_log_in(cluster.addresses[1], "carol", "carol-secret")
               and not can_log_in(cluster.addresses[0], "carol", "carol-secret"), "carol refused everywhere")


def test_a_token_lives_and_dies_on_every_node(cluster):
    request_type = wire.request_schema(CREATE_TOKEN, 3)
    renewer = wire.build(wire.item_type(request_type, "renewers"), principal_type="User", principal_name="admin")
    create = wire.build(request_type, max_lifetime=datetime.timedelta(milliseconds=-1), renewers=(renewer,),
                        owner_principal_type="User", owner_principal_name="alice")
    [created] = run(_request(cluster.addresses[1], "admin", create))
    assert int(created.error_code) == 0
    token_id, password = created.token_id, base64.b64encode(created.hmac).decode("ascii")
    eventually(lambda: can_log_in(cluster.addresses[2], token_id, password, token_auth=True), "the token logs in at broker 2")
    renew = wire.build(wire.request_schema(RENEW_TOKEN, 2), hmac=created.hmac,
                       renew_period=datetime.timedelta(hours=1))
    [renewed] = run(_request(cluster.addresses[0], "admin", renew))
    assert int(renewed.error_code) == 0
    expire = wire.build(wire.request_schema(EXPIRE_TOKEN, 2), hmac=created.hmac,
                        expiry_time_period=datetime.timedelta(milliseconds=-1))
    [expired] = run(_request(cluster.addresses[2], "admin", expire))
    assert int(expired.error_code) == 0
    eventually(lambda: not any(can_log_in(cluster.addresses[n], token_id, password, token_auth=True) for n in (0, 1, 2)),
               "the expired token is refused everywhere")


def test_the_cli_changes_a_running_cluster(cluster):
    add = cluster.command("acls", "--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "orders")
    subprocess.run(add, check=True, capture_output=True, text=True)
    took = eventually(lambda: all(alice_sees_orders(cluster, n) for n in (0, 1, 2)), "every node follows the CLI")
    assert took < PROPAGATION_S
    with KafkaSecurity.from_config(dict(line.split("=", 1) for line in cluster.config_file.read_text().split())) as tool:
        from kafkasec import RequestContext

        admin = RequestContext.for_principal("User:admin", security_protocol="SASL_PLAINTEXT")
        token = tool.create_delegation_token(admin, owner="User:alice", renewers=["User:admin"])
    password = base64.b64encode(token.hmac).decode("ascii")
    eventually(lambda: can_log_in(cluster.addresses[1], token.token_id, password, token_auth=True), "the token logs in")
    expire = cluster.command("tokens", "--expire", "--hmac", base64.b64encode(token.hmac).decode("ascii"),
                             "--expiry-time-period", "-1", "--principal", "User:admin")
    completed = subprocess.run(expire, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    eventually(lambda: not can_log_in(cluster.addresses[1], token.token_id, password, token_auth=True),
               "the running broker refuses the token the CLI expired")


def describe_everything(cluster, node_id):
    """ACLs, SCRAM users and tokens as node ``node_id`` answers them over the wire."""
    acls_request = wire.build(wire.request_schema(29, 3), resource_type_filter=1, resource_name_filter=None,
                              pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
                              permission_type=1)
    users_request = wire.build(wire.request_schema(50, 0), users=None)
    tokens_request = wire.build(wire.request_schema(41, 3), owners=None)
    acls, users, tokens = run(_request(cluster.addresses[node_id], "admin", acls_request, users_request, tokens_request))
    return (
        sorted((r.resource_name, a.principal, int(a.operation)) for r in acls.resources for a in r.acls),
        sorted((u.user, tuple(sorted(int(i.mechanism) for i in u.credential_infos))) for u in users.results),
        sorted(t.token_id for t in tokens.tokens),
    )


@pytest.mark.slow
def test_a_killed_broker_restarts_and_agrees(cluster):
    stop, written = threading.Event(), []
    writer = KafkaSecurity.from_config(dict(line.split("=", 1) for line in cluster.config_file.read_text().split()))

    def keep_writing():
        number = 0
        while not stop.is_set():
            writer.create_acls([AclBinding.of("TOPIC", f"load-{number}", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
            written.append(number)
            number += 1
            time.sleep(0.005)

    thread = threading.Thread(target=keep_writing)
    thread.start()
    try:
        time.sleep(0.5)
        cluster.kill(2)  # SIGKILL while changes flow
        time.sleep(0.5)
        cluster.start_broker(2)
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(30)
    try:
        assert len(written) > 20
        expected = describe_everything(cluster, 0)
        assert len(expected[0]) == len(written)
        eventually(lambda: all(describe_everything(cluster, n) == expected for n in (1, 2)), "every node agrees")
        with KafkaSecurity.from_config(dict(line.split("=", 1) for line in cluster.config_file.read_text().split())) as fresh:
            assert sorted((b.pattern.name, b.entry.principal, int(b.entry.operation)) for b in fresh.acls()) == expected[0]
    finally:
        writer.close()
