"""A listener's TLS settings (Kafka's PEM settings, KIP-651): what is missing or wrong is named."""

import ssl

import pytest
from cryptography.x509.oid import NameOID

from kafkasec import KafkaSecurity
from kafkasec.server import Endpoint
from kafkasec.tls import server_ssl_context

from certificates import A, TestCertificateAuthority


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return TestCertificateAuthority(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def keystore(ca):
    key, certificate = ca.issue("server", A(NameOID.COMMON_NAME, "localhost"), ip="127.0.0.1")
    return {"ssl.keystore.location": None, "key": key, "certificate": certificate}


def pem_settings(keystore):
    with open(keystore["key"]) as key, open(keystore["certificate"]) as chain:
        return {"ssl.keystore.key": key.read(), "ssl.keystore.certificate.chain": chain.read()}


def test_inline_pem_or_a_pem_file_and_client_auth(ca, keystore, tmp_path):
    context = server_ssl_context({**pem_settings(keystore), "ssl.client.auth": "requested", "ssl.truststore.location": ca.ca_file}, "SSL")
    assert context.verify_mode is ssl.CERT_OPTIONAL
    combined = tmp_path / "keystore.pem"
    combined.write_text(open(keystore["key"]).read() + open(keystore["certificate"]).read())
    context = server_ssl_context({"ssl.keystore.location": str(combined)}, "SSL")
    assert context.verify_mode is ssl.CERT_NONE and context.minimum_version is ssl.TLSVersion.TLSv1_2
    # A listener-prefixed setting wins for its listener.
    prefixed = {"listener.name.internal.ssl.enabled.protocols": "TLSv1.3", "ssl.keystore.location": str(combined)}
    assert server_ssl_context(prefixed, "INTERNAL").minimum_version is ssl.TLSVersion.TLSv1_3
    assert server_ssl_context(prefixed, "EXTERNAL").minimum_version is ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize(
    "settings, error",
    [
        ({}, "needs ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key"),
        ({"ssl.keystore.location": "/nonexistent/keystore.pem"}, "cannot be read"),
        ({"ssl.keystore.type": "JKS"}, "PEM keys and certificates only"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols names TLSv1.1"),
        ({"ssl.client.auth": "always"}, "ssl.client.auth must be one of required, requested, none"),
        ({"ssl.client.auth": "required"}, "needs ssl.truststore.certificates or ssl.truststore.location"),
        ({"ssl.client.auth": "required", "ssl.truststore.certificates": "not a PEM"}, "truststore of listener SSL cannot be read"),
    ],
)
def test_wrong_settings_are_named(keystore, settings, error):
    base = {} if settings == {} or "ssl.keystore.location" in settings else pem_settings(keystore)
    with pytest.raises(ValueError, match=error):
        server_ssl_context({**base, **settings}, "SSL")


def test_an_endpoint_checks_its_tls_settings_when_built():
    with KafkaSecurity() as security, pytest.raises(ValueError, match="needs ssl.keystore.location"):
        Endpoint(security, security_protocol="SSL")
