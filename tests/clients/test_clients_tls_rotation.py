"""A listener's certificate replaced without a restart (docs/operations.md, "Certificate rotation"):
a certificate about to expire and its renewal written over the keystore file, seen by new
connections (Python's ssl module tells the serial served; confluent-kafka connects) while an
open connection keeps its certificate; bad replacements refused with one log line and the old
certificate served on; SIGHUP to a real ``kafkasec serve`` process."""

import contextlib
import datetime
import logging
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from kafkasec.protocol import wire  # noqa: E402
from kafkasec.protocol.api_keys import ApiKey  # noqa: E402
from kafkasec.server import Endpoint  # noqa: E402
from kafkasec.server.certificates import CHECK_INTERVAL_S  # noqa: E402

from certificates import A, TestCertificateAuthority  # noqa: E402
from server_support import open_security, read_exactly, request, serving, wait_until  # noqa: E402

SERVER_NAME = A(NameOID.COMMON_NAME, "localhost")
SERVER_IP = "127.0.0.1"
PAST_THE_NEXT_LOOK_S = CHECK_INTERVAL_S + 0.2
"""Long enough for the listener to look at its files again at the next connection."""
API_VERSIONS = wire.size_prefixed(wire.encode_request(request(ApiKey.API_VERSIONS, 0), correlation_id=7, client_id="rotation"))


@pytest.fixture
def ca(tmp_path):
    return TestCertificateAuthority(tmp_path)


def write_keystore(path, key_pem: str, certificate_pem: str) -> None:
    """Write ssl.keystore.location's file as an operator rotates it: a new file renamed over the old."""
    new = path.with_name(path.name + ".new")
    new.write_text(key_pem + certificate_pem, encoding="ascii")
    os.replace(new, path)


def renew(ca, keystore, valid_for=datetime.timedelta(days=2)) -> x509.Certificate:
    """A new key and certificate for the server's name and address, written to ``keystore``."""
    key_pem, certificate_pem, certificate = ca.issue_pem(SERVER_NAME, ip=SERVER_IP, valid_for=valid_for)
    write_keystore(keystore, key_pem, certificate_pem)
    return certificate


@contextlib.contextmanager
def tls_listener(tmp_path, ca, valid_for=datetime.timedelta(days=2), **settings):
    """An SSL endpoint whose key and certificate are in a keystore file: (endpoint, its keystore
    file, the certificate it serves)."""
    keystore = tmp_path / "server.keystore.pem"
    certificate = renew(ca, keystore, valid_for)
    with open_security(tmp_path / "state.db", **{"ssl.keystore.location": str(keystore), **settings}) as security, \
            serving(security, security_protocol="SSL") as endpoint:
        yield endpoint, keystore, certificate


def tls_client(address: tuple[str, int], ca) -> ssl.SSLSocket:
    """A TLS connection that checks the server's certificate against the test CA."""
    context = ssl.create_default_context(cafile=ca.ca_file)
    return context.wrap_socket(socket.create_connection(address, timeout=10), server_hostname=address[0])


def served_serial(connection: ssl.SSLSocket) -> int:
    certificate = connection.getpeercert(binary_form=True)
    assert certificate is not None
    return x509.load_der_x509_certificate(certificate).serial_number


def serial_served_to_a_new_connection(address: tuple[str, int], ca) -> int:
    with tls_client(address, ca) as connection:
        return served_serial(connection)


def answers_api_versions(connection: ssl.SSLSocket) -> bool:
    connection.sendall(API_VERSIONS)
    size = int.from_bytes(read_exactly(connection, 4), "big")
    correlation_id, answer = wire.decode_response(read_exactly(connection, size), ApiKey.API_VERSIONS, 0)
    return correlation_id == 7 and answer.error_code == 0


def confluent_cluster_id(address: tuple[str, int], ca) -> str | None:
    """What a new confluent-kafka client over TLS is told the cluster is."""
    admin = AdminClient({"bootstrap.servers": f"{address[0]}:{address[1]}", "security.protocol": "SSL",
                         "ssl.ca.location": ca.ca_file})
    return admin.list_topics(timeout=10).cluster_id


def refusals(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "kafkasec.server" and record.levelno == logging.WARNING and "keeps its TLS certificate" in record.getMessage()]


def test_a_renewed_certificate_is_served_to_new_connections_and_an_open_connection_keeps_its_own(tmp_path, ca, caplog):
    caplog.set_level(logging.INFO, logger="kafkasec.server")
    with tls_listener(tmp_path, ca, valid_for=datetime.timedelta(seconds=3)) as (endpoint, keystore, expiring):
        address = (endpoint.host, endpoint.port)
        open_connection = tls_client(address, ca)
        assert served_serial(open_connection) == expiring.serial_number and answers_api_versions(open_connection)
        assert confluent_cluster_id(address, ca) == endpoint.cluster_id
        # Once it has expired, every client refuses the certificate.
        time.sleep(max(0.0, (expiring.not_valid_after_utc - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1)
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            tls_client(address, ca)

        renewed = renew(ca, keystore)
        time.sleep(PAST_THE_NEXT_LOOK_S)
        assert serial_served_to_a_new_connection(address, ca) == renewed.serial_number
        assert confluent_cluster_id(address, ca) == endpoint.cluster_id
        # The connection opened before keeps its certificate, and is served.
        assert served_serial(open_connection) == expiring.serial_number and answers_api_versions(open_connection)
        open_connection.close()
    taken = [record.getMessage() for record in caplog.records if "serves a new TLS certificate" in record.getMessage()]
    assert taken == [f"listener SSL serves a new TLS certificate (its files changed): CN=localhost, serial {renewed.serial_number:X}, "
                     f"valid until {renewed.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC"]
    assert refusals(caplog) == []


def _unparseable(ca, keystore):
    keystore.write_text("not a PEM file\n", encoding="ascii")


def _key_of_another_certificate(ca, keystore):
    key_pem, _, _ = ca.issue_pem(SERVER_NAME, ip=SERVER_IP)
    _, certificate_pem, _ = ca.issue_pem(SERVER_NAME, ip=SERVER_IP)
    write_keystore(keystore, key_pem, certificate_pem)


def _missing(ca, keystore):
    keystore.unlink()


def _another_subject(ca, keystore):
    key_pem, certificate_pem, _ = ca.issue_pem(A(NameOID.COMMON_NAME, "intruder"), ip=SERVER_IP)
    write_keystore(keystore, key_pem, certificate_pem)


def _without_the_address(ca, keystore):
    key_pem, certificate_pem, _ = ca.issue_pem(SERVER_NAME)
    write_keystore(keystore, key_pem, certificate_pem)


def _expired(ca, keystore):
    renew(ca, keystore, valid_for=datetime.timedelta(minutes=-1))


@pytest.mark.parametrize(
    ("replace", "why"),
    [
        pytest.param(_unparseable, "cannot be read from {keystore}: .*PEM", id="unparseable"),
        pytest.param(_key_of_another_certificate, "cannot be read from {keystore}: .*KEY_VALUES_MISMATCH", id="key-mismatch"),
        pytest.param(_missing, "cannot be read from {keystore}: .*No such file", id="missing"),
        pytest.param(_another_subject, "the certificate in {keystore} names the subject 'CN=intruder', not the current "
                     r"'CN=localhost' \(ssl.allow.dn.changes=false\)", id="another-subject"),
        pytest.param(_without_the_address, "the certificate in {keystore} lacks the current one's subject alternative names "
                     r"127.0.0.1 \(ssl.allow.san.changes=false\)", id="san-dropped"),
        pytest.param(_expired, "the certificate in {keystore} expired at ", id="expired"),
    ],
)
def test_a_bad_replacement_is_refused_with_one_log_line_and_the_old_certificate_served_on(tmp_path, ca, caplog, replace, why):
    caplog.set_level(logging.INFO, logger="kafkasec.server")
    with tls_listener(tmp_path, ca) as (endpoint, keystore, served):
        address = (endpoint.host, endpoint.port)
        replace(ca, keystore)
        for _ in range(2):  # two looks at the same refused files: one line
            time.sleep(PAST_THE_NEXT_LOOK_S)
            assert serial_served_to_a_new_connection(address, ca) == served.serial_number
        [refusal] = refusals(caplog)
        assert refusal.startswith("listener SSL keeps its TLS certificate (its files changed): ")
        assert re.search(why.format(keystore=keystore), refusal), refusal
        # Good files after bad ones are taken.
        renewed = renew(ca, keystore)
        time.sleep(PAST_THE_NEXT_LOOK_S)
        assert serial_served_to_a_new_connection(address, ca) == renewed.serial_number


def test_ssl_allow_dn_and_san_changes_let_in_a_certificate_of_other_names(tmp_path, ca, caplog):
    caplog.set_level(logging.INFO, logger="kafkasec.server")
    with tls_listener(tmp_path, ca, **{"ssl.allow.dn.changes": "true", "ssl.allow.san.changes": "true"}) as (endpoint, keystore, _):
        key_pem, certificate_pem, other = ca.issue_pem(A(NameOID.COMMON_NAME, "gateway.example"))
        write_keystore(keystore, key_pem, certificate_pem)
        time.sleep(PAST_THE_NEXT_LOOK_S)
        # Not by Python's client: the new certificate does not name 127.0.0.1.
        context = ssl.create_default_context(cafile=ca.ca_file)
        context.check_hostname = False
        with context.wrap_socket(socket.create_connection((endpoint.host, endpoint.port), timeout=10)) as connection:
            assert served_serial(connection) == other.serial_number
    assert refusals(caplog) == []


def test_the_listeners_of_one_name_share_one_context(tmp_path, ca):
    """A gateway's listeners for the upstream brokers are its bootstrap listener's: one context
    reads the files and logs a change once."""
    keystore = tmp_path / "server.keystore.pem"
    renew(ca, keystore)
    with open_security(tmp_path / "state.db", **{"ssl.keystore.location": str(keystore)}) as security:
        first, second = (Endpoint(security, security_protocol="SSL") for _ in range(2))
        other_listener = Endpoint(security, security_protocol="SSL", listener_name="EXTERNAL")
        assert first.ssl_context is second.ssl_context is not other_listener.ssl_context


def test_sighup_makes_kafkasec_serve_re_read_its_certificate(tmp_path, ca):
    keystore = tmp_path / "server.keystore.pem"
    first = renew(ca, keystore)
    (tmp_path / "server.properties").write_text(f"ssl.keystore.location={keystore}\n", encoding="utf-8")
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "kafkasec.cli", "--state", str(tmp_path / "state.db"), "--config", str(tmp_path / "server.properties"),
             "serve", "--security-protocol", "SSL", "--port", "0"],
            stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=tmp_path,
        )
    try:
        line = process.stdout.readline()
        assert line.startswith("kafkasec serve: SSL listening on "), line + log.read_text()
        host, _, port = line.split()[-1].rpartition(":")
        address = (host, int(port))
        assert serial_served_to_a_new_connection(address, ca) == first.serial_number

        _key_of_another_certificate(ca, keystore)
        process.send_signal(signal.SIGHUP)
        assert wait_until(lambda: "listener SSL keeps its TLS certificate (SIGHUP)" in log.read_text()), log.read_text()
        assert serial_served_to_a_new_connection(address, ca) == first.serial_number

        renewed = renew(ca, keystore)
        process.send_signal(signal.SIGHUP)
        assert wait_until(lambda: "listener SSL serves a new TLS certificate (SIGHUP)" in log.read_text()), log.read_text()
        assert serial_served_to_a_new_connection(address, ca) == renewed.serial_number
        assert process.poll() is None  # SIGHUP did not end it
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)
