"""What the endpoint tests share: a state file with users, a catalogue, a running endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import struct
import time

from kafkasec import KafkaSecurity, RequestContext, testing
from kafkasec.protocol import wire
from kafkasec.server import Catalogue, Endpoint, KafkaConnection

import security_support

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "broker": "broker-secret"}
MECHANISMS = testing.SCRAM_MECHANISMS
ADMIN = RequestContext.for_principal("User:admin")
CATALOGUE = Catalogue.of(
    topics=[{"name": "orders", "partitions": 3}, {"name": "payments"}, {"name": "audit", "partitions": 2}],
    groups=[
        {"group_id": "billing", "members": [{"member_id": "m-1", "client_id": "billing-app"}]},
        {"group_id": "reports"},
    ],
)
CONFIG = {
    "super.users": "User:admin;User:broker",
    "delegation.token.secret.key": "endpoint-test-secret",
    # Kafka's default is 100 ms; short keeps the refused-login tests quick and still measurable.
    "connection.failed.authentication.delay.ms": "50",
}


# The endpoint tests' security: CONFIG, which a test's own settings override.
open_security = functools.partial(security_support.open_security, **CONFIG)


def add_users(security: KafkaSecurity, users=PASSWORDS, iterations: int = 4096) -> None:
    testing.add_users(security, users, iterations)


@contextlib.contextmanager
def serving(security, catalogue=CATALOGUE, **endpoint_options):
    """An endpoint over ``security`` running in a background thread."""
    with Endpoint(security, catalogue, **endpoint_options).running_in_thread() as endpoint:
        yield endpoint


async def logged_in(endpoint, user="admin", mechanism="SCRAM-SHA-256", **login) -> KafkaConnection:
    connection = await KafkaConnection.open(endpoint.host, endpoint.port)
    await connection.login(mechanism, user, login.pop("password", PASSWORDS.get(user, "")), **login)
    return connection


def run(coroutine):
    """Run a coroutine of a test on its own event loop (the endpoint runs on another)."""
    return asyncio.run(coroutine)


async def heavy_then_light(endpoint, heavy_request, light_request, *, connections: int = 4):
    """bob sends ``heavy_request`` on ``connections`` connections at once and, once they are
    read (0.2 s later), alice sends ``light_request``: who was answered in what order ("bob",
    "alice"), alice's answer and bob's answers."""
    heavy = [await logged_in(endpoint, "bob") for _ in range(connections)]
    light = await logged_in(endpoint, "alice")
    answered: list[str] = []

    async def ask(connection, who, body):
        answer = await connection.request(body)
        answered.append(who)
        return answer

    try:
        for connection in (*heavy, light):
            await connection.negotiate()
        heavy_answers = [asyncio.ensure_future(ask(connection, "bob", heavy_request)) for connection in heavy]
        await asyncio.sleep(0.2)
        light_answer = await ask(light, "alice", light_request)
        answers = await asyncio.gather(*heavy_answers)
    finally:
        for connection in (*heavy, light):
            await connection.close()
    return answered, light_answer, answers


async def pipelined_answers(endpoint, user: str, bodies, first_correlation_id: int) -> list:
    """``bodies`` sent by ``user`` in one write, without waiting for any answer (correlation ids
    from ``first_correlation_id`` on), then every answer read: (its correlation id, its body)."""
    connection = await logged_in(endpoint, user)
    try:
        reader, writer = connection.streams()
        writer.write(b"".join(wire.size_prefixed(wire.encode_request(body, correlation_id=first_correlation_id + index,
                                                                     client_id="pipe"))
                              for index, body in enumerate(bodies)))
        await writer.drain()
        answers = []
        for body in bodies:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            answers.append(wire.decode_response(await reader.readexactly(size), body.__api_key__, body.__version__))
        return answers
    finally:
        await connection.close()


def request(api_key, version, **fields):
    """A request body of ``api_key`` at ``version`` with these fields (kio's dataclass)."""
    return wire.build(wire.request_schema(api_key, version), **fields)


def create_acl_request(principal="User:dave", name="orders"):
    creation_type = wire.item_type(wire.request_schema(30, 3), "creations")
    return request(30, 3, creations=(wire.build(
        creation_type, resource_type=2, resource_name=name, resource_pattern_type=3,
        principal=principal, host="*", operation=3, permission_type=3,
    ),))


def read_exactly(sock, size: int) -> bytes:
    """``size`` bytes from a blocking socket (plain or TLS); the endpoint must not close it first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the endpoint closed the connection"
        data += chunk
    return data


def wait_until(predicate, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` every 20 ms until it holds or ``timeout`` seconds pass; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
