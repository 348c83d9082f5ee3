"""TLS listeners with real clients over 127.0.0.1: SSL with client certificates mapped to
principals by ssl.principal.mapping.rules (confluent-kafka and kafka-python), SASL_SSL with
SCRAM, a client without a certificate or speaking plaintext refused while others are served."""

import contextlib
import socket

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

from kafkasec import AclBinding  # noqa: E402

from certificates import A, TestCertificateAuthority  # noqa: E402
from server_support import PASSWORDS, add_users, open_security, serving  # noqa: E402

RULES = "RULE:^CN=(.*?),OU=(.*?),O=Example$/$1/L,DEFAULT"
ORDERS_FOR_ALICE = AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return TestCertificateAuthority(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def client_certificates(ca):
    return {
        user: ca.issue(user, A(NameOID.ORGANIZATION_NAME, "Example"), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"),
                       A(NameOID.COMMON_NAME, user.upper()))
        for user in ("alice", "bob")
    }


def tls_config(ca, client_auth="required"):
    key, certificate = ca.issue("server", A(NameOID.COMMON_NAME, "localhost"), ip="127.0.0.1")
    with open(key) as key_file, open(certificate) as certificate_file:
        return {
            "ssl.keystore.key": key_file.read(),  # inline PEM, as Kafka's KIP-651 takes it
            "ssl.keystore.certificate.chain": certificate_file.read(),
            "ssl.truststore.location": ca.ca_file,
            "ssl.client.auth": client_auth,
            "ssl.principal.mapping.rules": RULES,
        }


@contextlib.contextmanager
def tls_endpoint(tmp_path, ca, security_protocol="SSL", **extra):
    with open_security(tmp_path / "state.db", **{**tls_config(ca), **extra}) as security:
        security.create_acls([ORDERS_FOR_ALICE])
        add_users(security)
        with serving(security, security_protocol=security_protocol) as endpoint:
            yield endpoint


def confluent_ssl(endpoint, ca, certificate=None, **extra):
    config = {"bootstrap.servers": endpoint.bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca.ca_file, **extra}
    if certificate is not None:
        config["ssl.key.location"], config["ssl.certificate.location"] = certificate
    return AdminClient(config)


def test_a_client_certificate_is_mapped_to_the_principal_the_acls_name(tmp_path, ca, client_certificates):
    with tls_endpoint(tmp_path, ca) as endpoint:
        alice = confluent_ssl(endpoint, ca, client_certificates["alice"])
        assert sorted(alice.list_topics(timeout=10).topics) == ["orders"]  # CN=ALICE -> User:alice
        bob = confluent_ssl(endpoint, ca, client_certificates["bob"])
        assert dict(bob.list_topics(timeout=10).topics) == {}


def test_without_a_certificate_a_required_client_auth_refuses_the_handshake(tmp_path, ca, client_certificates):
    with tls_endpoint(tmp_path, ca) as endpoint:
        with pytest.raises(KafkaException):
            confluent_ssl(endpoint, ca).list_topics(timeout=3)
        # A client speaking plaintext to the TLS port is dropped too.
        with socket.create_connection((endpoint.host, endpoint.port), timeout=5) as raw:
            raw.sendall(b"\x00\x00\x00\x0a" + b"\x00\x12\x00\x00" + b"\x00" * 6)
            raw.settimeout(5)
            received = b""
            while chunk := raw.recv(4096):  # a timeout here would mean the endpoint kept it open
                received += chunk
            assert not received.startswith(b"\x00")  # no Kafka answer: a TLS alert at most, then the close
        # ... and the endpoint keeps serving.
        assert sorted(confluent_ssl(endpoint, ca, client_certificates["alice"]).list_topics(timeout=10).topics) == ["orders"]


def test_a_refused_client_hears_the_tls_alert_instead_of_an_eof(tmp_path, ca):
    """librdkafka names OpenSSL's alert (as from a Kafka broker); before the endpoint ran TLS
    itself, asyncio dropped the connection and the client saw only an unexpected EOF."""
    errors = []
    with tls_endpoint(tmp_path, ca) as endpoint:
        admin = confluent_ssl(endpoint, ca, error_cb=lambda error: errors.append(str(error)))
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=5)
        admin.poll(1)  # serves the error callbacks
    assert any("alert certificate required" in error for error in errors), errors


def test_sasl_ssl_logs_in_with_scram_over_tls(tmp_path, ca):
    with tls_endpoint(tmp_path, ca, "SASL_SSL", **{"ssl.client.auth": "none"}) as endpoint:
        admin = AdminClient({
            "bootstrap.servers": endpoint.bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": ca.ca_file,
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": PASSWORDS["alice"],
        })
        assert sorted(admin.list_topics(timeout=10).topics) == ["orders"]


def test_kafka_python_over_ssl_with_a_client_certificate(tmp_path, ca, client_certificates):
    key, certificate = client_certificates["alice"]
    with tls_endpoint(tmp_path, ca) as endpoint:
        client = KafkaAdminClient(
            bootstrap_servers=endpoint.bootstrap, security_protocol="SSL", ssl_cafile=ca.ca_file,
            ssl_certfile=certificate, ssl_keyfile=key, request_timeout_ms=10_000,
        )
        try:
            assert client.list_topics() == ["orders"]
        finally:
            client.close()
