"""The gateway's other doors: client certificates and delegation tokens as logins, several
gateway processes on one security log, and a logged-in client sending frames that are not
Kafka's."""

from __future__ import annotations

import random
import re
import ssl
import struct
import subprocess
import sys
import time

import pytest
from cryptography.x509.oid import NameOID

from kafkasec import RequestContext
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection

from certificates import A, TestCertificateAuthority
from gateway_support import gateway_running, gateway_security
from request_rules_support import acl, make
from server_support import PASSWORDS, logged_in, run

METADATA = make(wire.request_schema(ApiKey.METADATA, 12), {"topics": None, "allow_auto_topic_creation": False})


def _topics(answer) -> list[str]:
    return sorted(t.name for t in answer.topics)


async def _metadata(connection: KafkaConnection):
    async with connection:
        return await connection.request(METADATA)


def _create_topics(gateway, *names):
    create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1} for name in names]})

    async def as_admin():
        async with await logged_in(gateway, "admin") as connection:
            return await connection.request(create)

    run(as_admin())


def test_a_client_certificate_is_the_principal_on_every_gateway_listener(tmp_path, server_state, tansu):
    ca = TestCertificateAuthority(tmp_path)
    key, certificate = ca.issue("server", A(NameOID.COMMON_NAME, "localhost"), ip="127.0.0.1")
    client_key, client_certificate = ca.issue("alice", A(NameOID.COMMON_NAME, "alice"))
    tls = {
        "ssl.keystore.key": open(key).read(), "ssl.keystore.certificate.chain": open(certificate).read(),
        "ssl.truststore.location": ca.ca_file, "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/,DEFAULT",
    }
    context = ssl.create_default_context(cafile=ca.ca_file)
    context.load_cert_chain(client_certificate, client_key)
    with gateway_security(server_state, tansu.bootstrap, **tls) as security, \
            gateway_running(security, security_protocol="SSL") as gateway:
        _create_topics_with_certificate(gateway, context, security)
        [broker_listener] = gateway.broker_listeners.values()
        assert broker_listener.security_protocol == "SSL"
        async def topics(listener):
            return _topics(await _metadata(await KafkaConnection.open(listener.host, listener.port, ssl_context=context)))

        for listener in (gateway, broker_listener):
            assert run(topics(listener)) == ["tls-visible"]


def _create_topics_with_certificate(gateway, context, security):
    security.create_acls([acl("CLUSTER", "kafka-cluster", "CREATE", "User:alice"),
                          acl("TOPIC", "tls-visible", "DESCRIBE", "User:alice")])
    create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1} for name in ("tls-visible", "tls-hidden")]})

    async def as_alice():
        async with await KafkaConnection.open(gateway.host, gateway.port, ssl_context=context) as connection:
            return await connection.request(create)

    assert {int(t.error_code) for t in run(as_alice()).topics} == {0}


def test_a_delegation_token_logs_in_through_the_gateway(server_state, tansu):
    with gateway_security(server_state, tansu.bootstrap, **{"delegation.token.secret.key": "gateway-tokens"}) as security, \
            gateway_running(security) as gateway:
        _create_topics(gateway, "token-visible")
        security.create_acls([acl("TOPIC", "token-visible", "DESCRIBE")])
        token = security.create_delegation_token(RequestContext.for_principal("User:alice", security_protocol="SASL_PLAINTEXT"))

        async def with_token():
            connection = await KafkaConnection.open(gateway.host, gateway.port)
            await connection.login("SCRAM-SHA-256", token.token_id, token.hmac_as_base64, token_auth=True)
            return await _metadata(connection)

        assert "token-visible" in _topics(run(with_token()))


def _serve(state, upstream, config_file):
    server = subprocess.Popen(
        [sys.executable, "-m", "kafkasec", "--state", str(state), "--config", str(config_file), "serve",
         "--upstream", upstream, "--port", "0", "--log-level", "WARNING"],
        stdout=subprocess.PIPE, text=True,
    )
    line = server.stdout.readline()
    match = re.search(r"listening on (\S+):(\d+)", line)
    assert match, line
    server.stdout.readline()  # the upstream broker's listener
    return server, (match.group(1), int(match.group(2)))


@pytest.mark.slow
def test_two_gateway_processes_follow_one_security_log(tmp_path, server_state, tansu):
    """Two gateways (separate OS processes) on one state file: an ACL added with the CLI while
    they run reaches both, as it would reach every broker of a cluster."""
    config = tmp_path / "server.properties"
    config.write_text("super.users=User:admin\n", encoding="ascii")
    servers = [_serve(server_state, tansu.bootstrap, config) for _ in range(2)]
    try:
        async def topics(address, user="alice"):
            connection = await KafkaConnection.open(*address)
            await connection.login("SCRAM-SHA-256", user, PASSWORDS[user])
            return _topics(await _metadata(connection))

        async def create():
            connection = await KafkaConnection.open(*servers[0][1])
            await connection.login("SCRAM-SHA-256", "admin", PASSWORDS["admin"])
            async with connection:
                await connection.request(make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
                    {"name": "shared-log", "num_partitions": 1, "replication_factor": 1}]}))

        run(create())
        assert [run(topics(address)) for _, address in servers] == [[], []]
        subprocess.run([sys.executable, "-m", "kafkasec", "--state", str(server_state), "acls", "--add",
                        "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "shared-log"],
                       check=True, capture_output=True)
        deadline = time.monotonic() + 10
        seen = [[], []]
        while seen != [["shared-log"], ["shared-log"]] and time.monotonic() < deadline:
            seen = [[t for t in run(topics(address)) if t == "shared-log"] for _, address in servers]
            time.sleep(0.1)
        assert seen == [["shared-log"], ["shared-log"]]
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(10)


def test_mutated_frames_from_a_logged_in_client_close_only_its_connection(gateway):
    """A logged-in client that sends Produce, Fetch and Metadata frames with random bytes
    flipped, cut short or lengthened: never a crash or a hang; each bad frame costs that
    connection at most, and the gateway answers a well-behaved client all along."""
    gateway.security.create_acls([acl("TOPIC", "fuzzed", "ALL")])
    produce = make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 1, "timeout": 1000, "topic_data": [
        {"name": "fuzzed", "partition_data": [{"index": 0, "records": b"\x00" * 61}]}]})
    fetch = make(wire.request_schema(ApiKey.FETCH, 12), {"max_wait": 0, "min_bytes": 0, "topics": [
        {"topic": "fuzzed", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}]})
    seeds = [wire.encode_request(body, correlation_id=9, client_id="fuzz") for body in (produce, fetch, METADATA)]
    chance = random.Random(28)

    def mutate(frame: bytes) -> bytes:
        data = bytearray(frame)
        kind = chance.randrange(4)
        if kind == 0:
            for _ in range(chance.randint(1, 6)):
                data[chance.randrange(4, len(data))] = chance.randrange(256)  # keep the API key and version
        elif kind == 1:
            del data[chance.randrange(8, len(data)):]
        elif kind == 2:
            data += bytes(chance.randrange(256) for _ in range(chance.randint(1, 64)))
        else:
            at = chance.randrange(8, len(data) - 4)
            data[at:at + 4] = struct.pack(">i", chance.choice([-1, 2**31 - 1, 2**20, 0]))
        return bytes(data)

    async def attack(rounds: int):
        closed = answered = 0
        for _ in range(rounds):
            connection = await logged_in(gateway, "alice")
            reader, writer = connection.streams()
            for _ in range(5):
                writer.write(wire.size_prefixed(mutate(chance.choice(seeds))))
            try:
                await writer.drain()
                while True:
                    head = await asyncio_wait(reader.readexactly(4), 5)
                    (size,) = struct.unpack(">i", head)
                    await asyncio_wait(reader.readexactly(size), 5)
                    answered += 1
            except (ConnectionError, EOFError, OSError):
                closed += 1
            except TimeoutError:
                pass  # every frame it sent was answered, and it waits for more: the connection stayed up
            await connection.close()
            # A well-behaved client is served in between.
            async with await logged_in(gateway, "admin") as connection:
                assert (await connection.request(METADATA)).brokers
        return closed, answered

    closed, answered = run(attack(40))
    assert closed + answered > 0


async def asyncio_wait(awaitable, seconds):
    import asyncio

    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise TimeoutError from None


def test_the_gateway_logs_in_upstream_as_its_client_properties_say(tmp_path, server_state):
    """In front of a broker that has logins of its own (here a kafkasec endpoint with SCRAM):
    kafkasec.upstream.* are the client properties the gateway logs in with; a refused login is
    a clear error naming the broker, at start."""
    from kafkasec.server.upstream import UpstreamError

    from server_support import add_users, open_security, serving

    def login(password):
        return {
            "kafkasec.upstream.security.protocol": "SASL_PLAINTEXT",
            "kafkasec.upstream.sasl.mechanism": "SCRAM-SHA-256",
            "kafkasec.upstream.sasl.jaas.config":
                f'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="{password}";',
        }

    with open_security(tmp_path / "upstream.db") as upstream_security:
        add_users(upstream_security)
        with serving(upstream_security) as upstream:
            with gateway_security(server_state, upstream.bootstrap, **login(PASSWORDS["admin"])) as security, \
                    gateway_running(security) as gateway:
                security.create_acls([acl("TOPIC", "orders", "DESCRIBE")])

                async def alices_topics():
                    async with await logged_in(gateway, "alice") as connection:
                        return _topics(await connection.request(METADATA))

                assert run(alices_topics()) == ["orders"]  # the upstream lists three; alice may see one
            with gateway_security(server_state, upstream.bootstrap, **login("wrong")) as security:
                with pytest.raises(UpstreamError, match=f"upstream broker {upstream.bootstrap}: .*SASL_AUTHENTICATION_FAILED"):
                    with gateway_running(security):
                        pass
