"""The endpoint's limits (kafkasec.server.limits) and its event loop that never waits: connection
caps, the bytes held for clients not yet logged in, and state writes that wait off the loop."""

import asyncio
import json
import socket
import sqlite3
import struct
import subprocess
import sys
import time

import pytest

from kafkasec.protocol import wire
from kafkasec.server import KafkaConnection
from kafkasec.server.limits import (
    SMALL_FRAME_BYTES,
    ConnectionQuotas,
    LimitExceeded,
    UnauthenticatedBytes,
    canonical_address,
    parse_overrides,
)

from server_support import PASSWORDS, add_users, logged_in, open_security, run, serving

CREATE_ACLS, METADATA = 30, 3


# ---------------------------------------------------------------------- the limits, sans I/O


def test_per_address_and_listener_caps():
    quotas = ConnectionQuotas(max_connections=3, max_per_ip=2, overrides={"10.0.0.9": 5})
    quotas.open("10.0.0.1")
    quotas.open("::ffff:10.0.0.1")  # the same client, spelled as IPv6
    with pytest.raises(LimitExceeded, match="10.0.0.1 already has the configured maximum of 2"):
        quotas.open("10.0.0.1")
    quotas.open("10.0.0.9")
    with pytest.raises(LimitExceeded, match="max.connections"):
        quotas.open("10.0.0.9")  # its override allows 5, the listener no more than 3
    assert (quotas.count(), quotas.count("10.0.0.1")) == (3, 2)
    quotas.close("10.0.0.1")
    quotas.open("10.0.0.9")
    assert quotas.count("10.0.0.9") == 2


def test_overrides_are_parsed_as_kafka_writes_them():
    assert parse_overrides("127.0.0.1:200, [::1]:7,") == {"127.0.0.1": 200, "::1": 7}
    assert parse_overrides("localhost:3")["127.0.0.1"] == 3
    for bad in ("127.0.0.1", ":5", "127.0.0.1:many", "127.0.0.1:-1"):
        with pytest.raises(ValueError, match="max.connections.per.ip.overrides"):
            parse_overrides(bad)
    with pytest.raises(ValueError, match="zero only if max.connections.per.ip.overrides"):
        ConnectionQuotas.from_config({"max.connections.per.ip": "0"})
    only_listed = ConnectionQuotas.from_config({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:1"})
    only_listed.open("127.0.0.1")
    with pytest.raises(LimitExceeded):
        only_listed.open("127.0.0.2")


def test_canonical_address():
    assert canonical_address("::FFFF:127.0.0.1") == "127.0.0.1"
    assert canonical_address("fe80::1%eth0") == "fe80::1"
    assert canonical_address("0:0:0:0:0:0:0:1") == "::1"


def test_unauthenticated_bytes_bound_large_frames_only():
    budget = UnauthenticatedBytes(max_bytes=100_000)
    assert budget.reserve(SMALL_FRAME_BYTES) == 0  # small frames are always read
    taken = budget.reserve(60_000)
    with pytest.raises(LimitExceeded, match="kafkasec.server.unauthenticated.max.bytes"):
        budget.reserve(60_000)
    budget.release(taken)
    assert budget.reserve(60_000) == 60_000 and budget.held == 60_000


# ---------------------------------------------------------------------- over the network


def closed_at_once(port: int) -> bool:
    """Whether the endpoint closes a new connection before it sends anything."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        try:
            return connection.recv(1) == b""
        except ConnectionResetError:
            return True


@pytest.mark.parametrize(
    "config, allowed",
    [
        ({"max.connections.per.ip": "2"}, 2),
        ({"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.1:4"}, 4),
        ({"max.connections": "3"}, 3),
    ],
)
def test_a_connection_over_the_cap_is_refused_and_the_others_served(tmp_path, config, allowed):
    with open_security(tmp_path / "state.db", **config) as security:
        add_users(security)
        with serving(security) as endpoint:

            async def fill_then_overflow():
                held = [await logged_in(endpoint) for _ in range(allowed)]
                refused = await asyncio.to_thread(closed_at_once, endpoint.port)
                metadata = await held[0].request(wire.build(wire.request_schema(METADATA, 12), topics=None))
                await held.pop().close()
                for _ in range(100):  # the endpoint counts the close once it has seen it
                    if endpoint.connection_quotas.count() < allowed:
                        break
                    await asyncio.sleep(0.01)
                again = await logged_in(endpoint)
                for connection in (*held, again):
                    await connection.close()
                return refused, len(metadata.topics)

            assert run(fill_then_overflow()) == (True, 3)


def serve_process(tmp_path, config: dict):
    """``kafkasec serve`` as its own process (its memory measured alone); stderr to a file, so
    that a flood of log lines never blocks it on a full pipe."""
    state = tmp_path / "state.db"
    with open_security(state) as security:
        add_users(security)
    properties = tmp_path / "server.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in config.items()), encoding="utf-8")
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"topics": [{"name": "orders"}]}), encoding="utf-8")
    stderr = open(tmp_path / "serve.log", "w", encoding="utf-8")
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(state), "--config", str(properties),
               "serve", "--port", "0", "--catalogue", str(catalogue)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    line = process.stdout.readline()
    assert line.startswith("kafkasec serve: "), line + (tmp_path / "serve.log").read_text()
    return process, int(line.split()[-1].rsplit(":", 1)[1]), stderr


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def half_sent_frames(port: int, count: int, size: int) -> list[socket.socket]:
    """``count`` connections that each announce a ``size``-byte frame and send all but its last
    byte, as fast as the kernel takes it."""
    sockets = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.setblocking(False)
        try:
            connection.send(struct.pack(">i", size) + b"\x00" * (size - 1))
        except OSError:
            pass  # refused already: the endpoint closed it
        sockets.append(connection)
    return sockets


def test_a_thousand_half_sent_frames_before_login_hold_bounded_memory(tmp_path):
    """Once +535 MB until the idle timeout; now the large frames draw on a 4 MiB budget and
    every connection's read buffer is small. An honest client still logs in meanwhile."""
    process, port, stderr = serve_process(tmp_path, {"kafkasec.server.unauthenticated.max.bytes": 4 * 1024 * 1024})
    hostile = []
    try:
        run(login_once(port))
        before = resident_mib(process.pid)
        hostile = half_sent_frames(port, 1000, 512 * 1024)
        time.sleep(1.0)
        started = time.monotonic()
        run(login_once(port))
        login_seconds = time.monotonic() - started
        grown = resident_mib(process.pid) - before
        assert process.poll() is None
        assert grown < 120, f"+{grown:.0f} MiB with 1,000 hostile connections"
        assert login_seconds < 5
    finally:
        for connection in hostile:
            connection.close()
        process.terminate()
        process.wait(10)
        stderr.close()
    log = (tmp_path / "serve.log").read_text()
    assert "kafkasec.server.unauthenticated.max.bytes" in log


async def login_once(port: int) -> None:
    connection = await KafkaConnection.open("127.0.0.1", port)
    try:
        await connection.login("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    finally:
        await connection.close()


# ---------------------------------------------------------------------- a busy state file


def create_acl_request():
    creation_type = wire.item_type(wire.request_schema(CREATE_ACLS, 3), "creations")
    creation = wire.build(
        creation_type, resource_type=2, resource_name="orders", resource_pattern_type=3,
        principal="User:bob", host="*", operation=3, permission_type=3,
    )
    return wire.build(wire.request_schema(CREATE_ACLS, 3), creations=(creation,))


def locked(path):
    """Another process's write transaction on the state file, held until closed."""
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    return blocker


def test_a_write_on_a_busy_state_file_is_a_retriable_error(tmp_path):
    with open_security(tmp_path / "state.db", **{"kafkasec.state.write.lock.timeout.ms": "200"}) as security:
        add_users(security)
        with serving(security) as endpoint:

            async def create_while_locked():
                async with await logged_in(endpoint) as admin:
                    blocker = locked(tmp_path / "state.db")
                    try:
                        refused = await admin.request(create_acl_request())
                    finally:
                        blocker.close()
                    accepted = await admin.request(create_acl_request())
                return refused.results[0], accepted.results[0]

            refused, accepted = run(create_while_locked())
    assert int(refused.error_code) == 7  # REQUEST_TIMED_OUT: retriable, and nothing written
    assert int(accepted.error_code) == 0


def test_a_write_waiting_for_the_state_file_stalls_no_other_connection(tmp_path):
    """The write waits on a handler thread; meanwhile another client logs in and is answered."""
    with open_security(tmp_path / "state.db") as security:
        add_users(security)
        with serving(security) as endpoint:

            async def others_served_meanwhile():
                async with await logged_in(endpoint) as admin:
                    blocker = locked(tmp_path / "state.db")
                    write = asyncio.create_task(admin.request(create_acl_request()))
                    try:
                        async with await logged_in(endpoint) as other:
                            metadata = await other.request(wire.build(wire.request_schema(METADATA, 12), topics=None))
                        still_waiting = not write.done()
                    finally:
                        blocker.close()
                    return still_waiting, len(metadata.topics), (await write).results[0]

            still_waiting, topics, created = run(others_served_meanwhile())
    assert still_waiting and topics == 3
    assert int(created.error_code) == 0
