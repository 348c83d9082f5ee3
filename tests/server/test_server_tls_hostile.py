"""A TLS listener under hostile clients, over real sockets on 127.0.0.1: handshakes that stop
half-way count against the connection caps and are let go after
kafkasec.server.ssl.handshake.timeout.ms; what a pending handshake holds is small; a refused
certificate gets OpenSSL's alert, not a silent close; honest clients are served throughout."""

import contextlib
import logging
import socket
import ssl
import time
import tracemalloc

import pytest
from cryptography.x509.oid import NameOID

from kafkasec.client.connection import KafkaConnection
from kafkasec.protocol.api_keys import ApiKey

from certificates import A, TestCertificateAuthority
from server_support import PASSWORDS, add_users, open_security, read_exactly, run, serving, wait_until


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return TestCertificateAuthority(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def alice_certificate(ca):
    return ca.issue("alice", A(NameOID.COMMON_NAME, "alice"))


def tls_settings(ca, **extra):
    key, certificate = ca.issue("server", A(NameOID.COMMON_NAME, "localhost"), ip="127.0.0.1")
    return {
        "ssl.keystore.location": _pem_bundle(key, certificate),
        "ssl.truststore.location": ca.ca_file,
        "ssl.client.auth": "required",
        "allow.everyone.if.no.acl.found": "true",
        **extra,
    }


def _pem_bundle(key: str, certificate: str) -> str:
    bundle = key.replace(".key.pem", ".bundle.pem")
    with open(bundle, "w") as out, open(key) as key_file, open(certificate) as certificate_file:
        out.write(key_file.read() + certificate_file.read())
    return bundle


@contextlib.contextmanager
def tls_endpoint(tmp_path, ca, **extra):
    with open_security(tmp_path / "state.db", **tls_settings(ca, **extra)) as security:
        with serving(security, security_protocol="SSL") as endpoint:
            yield endpoint


def client_context(ca, certificate=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca.ca_file)
    context.check_hostname = False
    if certificate is not None:
        key, chain = certificate
        context.load_cert_chain(chain, key)
    return context


def client_hello(context: ssl.SSLContext) -> bytes:
    """The first flight of a TLS client: what a client that then stops has sent."""
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_side=False)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def metadata_over_tls(endpoint, context: ssl.SSLContext) -> float:
    """Connect, handshake, ask ApiVersions; the seconds it took."""
    started = time.perf_counter()
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as raw:
        with context.wrap_socket(raw) as tls:
            # ApiVersions v0, correlation id 7, no client id: the answer starts with the id.
            tls.sendall(b"\x00\x00\x00\x0a" + ApiKey.API_VERSIONS.to_bytes(2, "big") + b"\x00\x00\x00\x00\x00\x07\xff\xff")
            header = read_exactly(tls, 8)
            assert header[4:8] == (7).to_bytes(4, "big")
    return time.perf_counter() - started


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return True


def test_a_certificate_from_another_ca_gets_the_tls_alert(tmp_path, ca):
    (tmp_path / "other-ca").mkdir()
    stranger = TestCertificateAuthority(tmp_path / "other-ca")
    with tls_endpoint(tmp_path, ca) as endpoint:
        context = client_context(ca, stranger.issue("mallory", A(NameOID.COMMON_NAME, "mallory")))
        with pytest.raises(ssl.SSLError) as refused:
            metadata_over_tls(endpoint, context)
        # OpenSSL's alert names the reason; without it the client sees only an EOF.
        assert "ALERT" in str(refused.value).upper(), refused.value
        assert not isinstance(refused.value, ssl.SSLEOFError)


def test_a_client_without_a_certificate_gets_the_certificate_required_alert(tmp_path, ca, alice_certificate):
    with tls_endpoint(tmp_path, ca) as endpoint:
        with pytest.raises(ssl.SSLError) as refused:
            metadata_over_tls(endpoint, client_context(ca))
        assert "ALERT" in str(refused.value).upper(), refused.value
        assert metadata_over_tls(endpoint, client_context(ca, alice_certificate)) < 10


def test_stalled_handshakes_count_against_the_per_ip_cap(tmp_path, ca, alice_certificate):
    hello = client_hello(client_context(ca, alice_certificate))
    with tls_endpoint(tmp_path, ca, **{"max.connections.per.ip": "5"}) as endpoint:
        sockets = []
        try:
            for _ in range(20):
                sock = socket.create_connection((endpoint.host, endpoint.port), timeout=5)
                sock.sendall(hello)
                sockets.append(sock)
            assert wait_until(lambda: endpoint.connection_count == 5)
            closed = [closed_by_server(sock, 0.5) for sock in sockets]
            assert closed.count(True) == 15, closed  # the five first stay, half-way through their handshakes
            assert endpoint.connection_count == 5
        finally:
            for sock in sockets:
                sock.close()
        assert wait_until(lambda: endpoint.connection_count == 0)
        assert metadata_over_tls(endpoint, client_context(ca, alice_certificate)) < 10


@pytest.mark.parametrize("sends", ["nothing", "a ClientHello"])
def test_a_handshake_that_stops_is_let_go_after_the_handshake_timeout(tmp_path, ca, alice_certificate, caplog, sends):
    hello = client_hello(client_context(ca, alice_certificate))
    with tls_endpoint(tmp_path, ca, **{"kafkasec.server.ssl.handshake.timeout.ms": "300"}) as endpoint:
        with caplog.at_level(logging.INFO, logger="kafkasec.server"):
            with socket.create_connection((endpoint.host, endpoint.port), timeout=5) as stalled:
                if sends != "nothing":
                    stalled.sendall(hello)
                started = time.monotonic()
                assert closed_by_server(stalled, 5)
                assert 0.25 < time.monotonic() - started < 5
            # The endpoint's thread logs once the socket is closed.
            assert wait_until(lambda: "no TLS handshake within kafkasec.server.ssl.handshake.timeout.ms=300" in caplog.text)
        assert endpoint.connection_count == 0
        assert metadata_over_tls(endpoint, client_context(ca, alice_certificate)) < 10


def test_a_pending_handshake_holds_little_memory_and_honest_clients_are_served(tmp_path, ca, alice_certificate):
    """asyncio's TLS allocated 256 KiB per accepted socket before the handshake; here a
    pending handshake holds its last read and OpenSSL's state."""
    hello = client_hello(client_context(ca, alice_certificate))
    pending = 200
    with tls_endpoint(tmp_path, ca) as endpoint:
        metadata_over_tls(endpoint, client_context(ca, alice_certificate))  # warm: imports, first allocations
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            sockets = []
            try:
                for _ in range(pending):
                    sock = socket.create_connection((endpoint.host, endpoint.port), timeout=5)
                    sock.sendall(hello)
                    sockets.append(sock)
                assert wait_until(lambda: endpoint.connection_count == pending)
                # Each stalled client has had the server's answer to its ClientHello.
                assert all(sock.recv(1, socket.MSG_PEEK) for sock in sockets)
                held = tracemalloc.get_traced_memory()[0] - before
                assert held / pending < 32 * 1024, f"{held / pending:.0f} bytes of Python memory per pending handshake"
                # Honest clients are served while the others hang half-way.
                for _ in range(3):
                    assert metadata_over_tls(endpoint, client_context(ca, alice_certificate)) < 10
            finally:
                for sock in sockets:
                    sock.close()
        finally:
            tracemalloc.stop()
        assert wait_until(lambda: endpoint.connection_count == 0)


def test_sasl_ssl_logs_in_and_answers_large_requests_over_the_endpoints_tls(tmp_path, ca):
    """The decrypting streams carry a SCRAM login and frames larger than one TLS record."""
    with open_security(tmp_path / "state.db", **tls_settings(ca, **{"ssl.client.auth": "none"})) as security:
        add_users(security)
        with serving(security, security_protocol="SASL_SSL") as endpoint:

            async def describe_many():
                connection = await KafkaConnection.open(endpoint.host, endpoint.port, ssl_context=client_context(ca))
                await connection.login("SCRAM-SHA-512", "alice", PASSWORDS["alice"])
                await connection.negotiate()
                try:
                    groups = [f"group-{index:05d}" for index in range(5_000)]  # a ~60 KB request, four records
                    answer = await connection.send(ApiKey.DESCRIBE_GROUPS, groups=groups)
                    return [group.group_id for group in answer.groups]
                finally:
                    await connection.close()

            assert run(describe_many()) == [f"group-{index:05d}" for index in range(5_000)]
