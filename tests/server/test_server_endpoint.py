"""The endpoint over real loopback sockets, with kafkasec's own kio-based client: logins, frames
that break the rules, stalled and many connections, restarts, forwarding, delegation tokens."""

import asyncio
import random
import socket
import struct
import time

import pytest

from kafkasec import AccessControlEntry, AclBinding, KafkaSecurity, RequestContext, ResourcePattern
from kafkasec.errors import KafkaErrorCode, SaslAuthenticationError
from kafkasec.protocol import wire
from kafkasec.server import ControllerLink, Endpoint, KafkaConnection

from server_support import (
    CATALOGUE,
    add_users,
    create_acl_request,
    logged_in,
    open_security,
    request,
    run,
    serving,
    wait_until,
)


def all_topics(version=12, **fields):
    return request(3, version, topics=None, **fields)


def raw_socket(endpoint) -> socket.socket:
    sock = socket.create_connection((endpoint.host, endpoint.port), timeout=5)
    return sock


def closed_by_server(sock, timeout=5.0) -> bool:
    """True once the server has closed the socket (a read returns EOF or is reset)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_scram_logins_and_an_authorized_metadata_request(endpoint):
    async def scenario():
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            async with await logged_in(endpoint, "admin", mechanism) as connection:
                response = await connection.request(all_topics())
                assert sorted(topic.name for topic in response.topics) == sorted(CATALOGUE.topics)

    run(scenario())


def test_a_wrong_password_is_refused_after_the_delay_and_the_connection_closed(endpoint):
    async def scenario():
        connection = await KafkaConnection.open(endpoint.host, endpoint.port)
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationError) as refused:
            await connection.login("SCRAM-SHA-256", "alice", "not-her-password")
        assert time.monotonic() - started >= 0.05  # connection.failed.authentication.delay.ms
        assert refused.value.code == 58 and "invalid credentials" in refused.value.message
        with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
            await connection.request(all_topics())
        await connection.close()

    run(scenario())


def test_sasl_requests_after_login_are_illegal_sasl_state(endpoint):
    async def scenario():
        async with await logged_in(endpoint) as connection:
            handshake = await connection.request(request(17, 1, mechanism="SCRAM-SHA-256"))
            assert int(handshake.error_code) == KafkaErrorCode.ILLEGAL_SASL_STATE == 34
            answer = await connection.request(request(36, 2, auth_bytes=b"x"))
            assert int(answer.error_code) == 34 and "after successful authentication" in answer.error_message
            # The connection is still good.
            assert (await connection.request(all_topics())).topics

    run(scenario())


def test_api_versions_after_login_lists_what_is_served(endpoint):
    async def scenario():
        async with await logged_in(endpoint) as connection:
            response = await connection.request(request(18, 3, client_software_name="t", client_software_version="1"))
            served = {int(key.api_key): (int(key.min_version), int(key.max_version)) for key in response.api_keys}
            assert served[3] == (0, 13) and served[60] == (0, 2) and served[36] == (0, 2)
            assert {29, 30, 31, 38, 39, 40, 41, 50, 51, 10, 15, 17, 18} <= set(served)
            assert 58 not in served  # this listener takes no envelopes

    run(scenario())


def test_bytes_after_a_request_body_are_ignored_as_kafka_does(endpoint):
    # librdkafka sends a few trailing bytes after some request bodies.
    async def scenario():
        async with await logged_in(endpoint) as connection:
            frame = wire.encode_request(all_topics(), correlation_id=77, client_id="x") + b"\x00\x00\x00"
            correlation_id, response = wire.decode_response(await connection.exchange(frame), 3, 12)
            assert correlation_id == 77 and len(response.topics) == len(CATALOGUE.topics)

    run(scenario())


def test_an_api_that_is_not_served_closes_the_connection(endpoint):
    async def scenario():
        async with await logged_in(endpoint) as connection:
            produce = wire.encode_request(request(0, 9), correlation_id=99, client_id="x")
            with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
                await connection.exchange(produce)

    run(scenario())


@pytest.mark.parametrize("size", [600_000, 2**31 - 1, -1])
def test_oversized_or_negative_frames_before_login_close_the_connection(endpoint, size):
    sock = raw_socket(endpoint)
    sock.sendall(struct.pack(">i", size) + b"\x00" * 16)
    assert closed_by_server(sock)
    sock.close()
    run(_still_serving(endpoint))


def test_frames_over_socket_request_max_bytes_after_login_close_the_connection(tmp_path):
    with open_security(tmp_path / "s.db", **{"socket.request.max.bytes": "4096"}) as security:
        add_users(security)
        with serving(security) as endpoint:

            async def scenario():
                async with await logged_in(endpoint) as connection:
                    big = request(3, 12, topics=tuple(
                        wire.build(wire.item_type(wire.request_schema(3, 12), "topics"), name=f"t{i:05d}") for i in range(600)
                    ))
                    with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
                        await connection.request(big)

            run(scenario())
            run(_still_serving(endpoint))


async def _still_serving(endpoint):
    async with await logged_in(endpoint) as connection:
        assert (await connection.request(all_topics())).topics


def test_fuzzed_frames_are_answered_or_closed_and_the_endpoint_stays_up(endpoint):
    rng = random.Random(20261123)
    valid = wire.encode_request(all_topics(), correlation_id=5, client_id="fuzz")

    def mutated() -> bytes:
        frame = bytearray(valid)
        for _ in range(rng.randint(1, 8)):
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        return bytes(frame[: rng.randint(0, len(frame))])

    async def one(frame: bytes, login: bool):
        connection = await (logged_in(endpoint) if login else KafkaConnection.open(endpoint.host, endpoint.port))
        try:
            await asyncio.wait_for(connection.exchange(frame), 5)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # closed: the expected answer to most garbage
        finally:
            await connection.close()

    async def scenario():
        for index in range(120):
            junk = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
            await one(junk if index % 2 else mutated(), login=index % 3 != 0)

    run(scenario())
    run(_still_serving(endpoint))
    assert wait_until(lambda: endpoint.connection_count == 0)


@pytest.fixture
def impatient_endpoint(tmp_path):
    with open_security(tmp_path / "impatient.db", **{"connections.max.idle.ms": "400"}) as security:
        with serving(security) as endpoint:
            yield endpoint


def test_stalled_connections_are_freed_after_the_idle_timeout(impatient_endpoint):
    endpoint = impatient_endpoint
    sockets = [raw_socket(endpoint) for _ in range(5)]
    sockets[0].sendall(b"\x00\x00")  # half a size prefix
    sockets[1].sendall(struct.pack(">i", 100) + b"\x00" * 10)  # a frame that never completes
    assert wait_until(lambda: endpoint.connection_count == 5, 2)
    started = time.monotonic()
    assert all(closed_by_server(sock) for sock in sockets)
    assert time.monotonic() - started < 3  # connections.max.idle.ms is 400 here
    assert wait_until(lambda: endpoint.connection_count == 0)
    for sock in sockets:
        sock.close()


def test_two_hundred_concurrent_connections(endpoint):
    async def client(index: int):
        user = ("alice", "bob", "admin")[index % 3]
        async with await logged_in(endpoint, user, ("SCRAM-SHA-256", "SCRAM-SHA-512")[index % 2]) as connection:
            await asyncio.sleep(0.2)  # all two hundred are open at once
            return len((await connection.request(all_topics())).topics)

    async def scenario():
        return await asyncio.gather(*(client(index) for index in range(200)))

    counts = run(scenario())
    # alice and bob have no ACLs: they see no topic; admin (a super user) sees all.
    assert sorted(set(counts)) == [0, len(CATALOGUE.topics)]
    assert counts.count(len(CATALOGUE.topics)) == len(range(2, 200, 3))
    assert wait_until(lambda: endpoint.connection_count == 0)


def test_plaintext_listener_clients_are_anonymous(server_security):
    security = server_security
    security.create_acls([AclBinding(ResourcePattern("TOPIC", "orders"), AccessControlEntry("User:ANONYMOUS", "*", "DESCRIBE", "ALLOW"))])
    with serving(security, security_protocol="PLAINTEXT") as endpoint:

        async def scenario():
            async with await KafkaConnection.open(endpoint.host, endpoint.port) as connection:
                response = await connection.request(all_topics())
                assert [topic.name for topic in response.topics] == ["orders"]

        run(scenario())


def test_acls_and_credentials_created_over_the_wire_survive_a_restart(tmp_path):
    path = tmp_path / "restart.db"
    from kafkasec.scram.credentials import ScramFormatter

    salt = b"0123456789abcdef"
    salted = ScramFormatter("SCRAM-SHA-256").salted_password("carol-secret", salt, 4096)

    async def administer(endpoint):
        async with await logged_in(endpoint) as connection:
            creation_type = wire.item_type(wire.request_schema(30, 3), "creations")
            created = await connection.request(request(30, 3, creations=(wire.build(
                creation_type, resource_type=2, resource_name="audit", resource_pattern_type=3,
                principal="User:carol", host="*", operation=8, permission_type=3,
            ),)))
            assert int(created.results[0].error_code) == 0
            upsertion_type = wire.item_type(wire.request_schema(51, 0), "upsertions")
            altered = await connection.request(request(51, 0, upsertions=(wire.build(
                upsertion_type, name="carol", mechanism=1, iterations=4096, salt=salt, salted_password=salted,
            ),)))
            assert int(altered.results[0].error_code) == 0

    async def as_carol(endpoint):
        async with await logged_in(endpoint, "carol", password="carol-secret") as connection:
            return [topic.name for topic in (await connection.request(all_topics())).topics]

    with open_security(path) as security:
        add_users(security)
        with serving(security) as endpoint:
            run(administer(endpoint))
            assert run(as_carol(endpoint)) == ["audit"]
    with open_security(path) as security, serving(security) as endpoint:
        assert run(as_carol(endpoint)) == ["audit"]


# ---------------------------------------------------------------------------------------------
# KIP-590: a broker endpoint forwards admin writes to a controller endpoint in envelopes.


def test_admin_writes_reach_the_controller_in_envelopes(broker_and_controller):
    security, broker, controller = broker_and_controller

    async def scenario():
        async with await logged_in(broker, "admin") as connection:
            response = await connection.request(create_acl_request())
            assert int(response.results[0].error_code) == 0
        async with await logged_in(broker, "alice") as connection:
            refused = await connection.request(create_acl_request("User:alice", "payments"))
            assert int(refused.results[0].error_code) == KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED

    run(scenario())
    assert [str(binding.entry.principal) for binding in security.acls()] == ["User:dave"]
    # One forwarded request, the admin's; alice's never left the broker.
    assert sum(security.forwarded_requests().values()) == 1


def test_the_controller_listener_lists_envelope_and_the_client_listener_does_not(broker_and_controller):
    _, broker, controller = broker_and_controller

    async def served(endpoint):
        async with await logged_in(endpoint, "broker", "SCRAM-SHA-512") as connection:
            response = await connection.request(request(18, 3, client_software_name="t", client_software_version="1"))
            return {int(key.api_key) for key in response.api_keys}

    assert 58 in run(served(controller)) and 58 not in run(served(broker))


def test_an_envelope_from_a_client_without_cluster_action_is_refused(broker_and_controller):
    _, _, controller = broker_and_controller
    from kafkasec.protocol.forwarding import ForwardingExchange

    async def scenario():
        async with await logged_in(controller, "alice") as connection:
            exchange = ForwardingExchange(
                KafkaSecurity(super_users="User:alice"), RequestContext.for_principal("User:alice"),
                wire.encode_request(create_acl_request(), correlation_id=1, client_id="x"), now_ms=0,
            )
            envelope = exchange.send_envelope(now_ms=0, correlation_id=connection.next_correlation_id())
            _, answer = wire.decode_response(await connection.exchange(envelope), 58, 0)
            assert int(answer.error_code) == KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED

    run(scenario())


def test_a_controller_that_is_down_times_the_request_out(tmp_path):
    with open_security(tmp_path / "b.db") as security:
        add_users(security)
        unused = socket.socket()
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        unused.close()
        link = ControllerLink("127.0.0.1", port, username="broker", password="x", retry_backoff_ms=20, request_timeout_ms=300)
        with serving(security, controller=link) as broker:

            async def scenario():
                async with await logged_in(broker, "admin") as connection:
                    started = time.monotonic()
                    response = await connection.request(create_acl_request())
                    assert int(response.results[0].error_code) == KafkaErrorCode.REQUEST_TIMED_OUT
                    assert 0.25 < time.monotonic() - started < 3

            run(scenario())


def test_controller_link_arguments_are_checked():
    with pytest.raises(ValueError, match="port must be 1-65535"):
        ControllerLink("127.0.0.1", 0, mechanism=None)
    with pytest.raises(ValueError, match="username and a password"):
        ControllerLink("127.0.0.1", 1, mechanism="SCRAM-SHA-256")
    with pytest.raises(ValueError, match="retry_backoff_ms"):
        ControllerLink("127.0.0.1", 1, mechanism=None, retry_backoff_ms=-1)
    with pytest.raises(TypeError, match="ControllerLink"):
        Endpoint(KafkaSecurity(), controller=("127.0.0.1", 1))
    with pytest.raises(ValueError, match="security_protocol"):
        Endpoint(KafkaSecurity(), security_protocol="SSH")
    with pytest.raises(ValueError, match="names GSSAPI, which no plugin serves"):
        Endpoint(KafkaSecurity(config={"sasl.enabled.mechanisms": "PLAIN,GSSAPI"}))
    with pytest.raises(ValueError, match="socket.request.max.bytes"):
        Endpoint(KafkaSecurity(config={"socket.request.max.bytes": "lots"}))
