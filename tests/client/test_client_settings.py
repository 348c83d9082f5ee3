"""ClientSettings from Kafka's client properties: protocols, mechanisms, JAAS logins, TLS, and
clear refusals of what kafkasec cannot log in with."""

import ssl

import pytest
from hypothesis import given, strategies as st

from kafkasec.client import ClientLogin, ClientSettings
from kafkasec.client.oauth import DEFAULT_TIMEOUT_S
from kafkasec.client.settings import is_client_only_setting, is_client_setting, parse_bootstrap_servers

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-plain";'
OAUTH_JAAS = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";'


def settings(**properties):
    return ClientSettings.from_properties({key.replace("_", "."): value for key, value in properties.items()}, "127.0.0.1:9092")


def test_plaintext_is_kafkas_default_and_logs_in_with_nothing():
    plain = settings()
    assert (plain.security_protocol, plain.login, plain.ssl_context) == ("PLAINTEXT", None, None)
    assert plain.bootstrap_servers == (("127.0.0.1", 9092),)


def test_a_scram_login_from_the_jaas_config_keeps_its_password_out_of_the_repr():
    scram = settings(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", sasl_jaas_config=SCRAM_JAAS)
    assert scram.login == ClientLogin("SCRAM-SHA-512", "admin", "admin-secret")
    assert "admin-secret" not in repr(scram)


def test_tokenauth_makes_a_delegation_token_login():
    jaas = SCRAM_JAAS.replace(";", " tokenauth=true;")
    login = settings(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", sasl_jaas_config=jaas).login
    assert login is not None and login.token_auth


def test_plain_and_unsecured_oauthbearer_logins():
    plain = settings(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_jaas_config=PLAIN_JAAS).login
    assert next(plain.conversation()) == b"\0alice\0alice-plain"
    oauth = settings(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER", sasl_jaas_config=OAUTH_JAAS).login
    assert next(oauth.conversation()).startswith(b"n,,\x01auth=Bearer ")


def test_the_token_endpoint_reads_within_sasl_login_read_timeout_ms():
    jaas = OAUTH_JAAS.replace(";", ' clientId="app" clientSecret="app-secret";')
    common = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": jaas,
              "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token"}
    login = ClientSettings.from_properties({**common, "sasl.login.read.timeout.ms": "2500"}, "127.0.0.1:9092").login
    assert login is not None and login.bearer_token.timeout_s == 2.5
    default = ClientSettings.from_properties(common, "127.0.0.1:9092").login
    assert default is not None and default.bearer_token.timeout_s == DEFAULT_TIMEOUT_S


def test_the_bootstrap_server_flag_wins_over_the_property():
    both = ClientSettings.from_properties({"bootstrap.servers": "elsewhere:1"}, "[::1]:9093,127.0.0.1:9092")
    assert both.bootstrap_servers == (("::1", 9093), ("127.0.0.1", 9092))
    assert ClientSettings.from_properties({"bootstrap.servers": "b1:9092"}).bootstrap_servers == (("b1", 9092),)


@pytest.mark.parametrize(
    "properties, message",
    [
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism GSSAPI (Kafka's default) is not one kafkasec logs in with"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, "GSSAPI is not one"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM_JAAS},
         "PLAIN logs in with org.apache.kafka.common.security.plain.PlainLoginModule"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
          "sasl.jaas.config": SCRAM_JAAS.replace('password="admin-secret"', "")}, "needs a username and a password"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
          "sasl.jaas.config": OAUTH_JAAS.replace("StringClaim_sub", "StringClaim_name")}, "needs unsecuredLoginStringClaim_sub"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
          "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token", "sasl.jaas.config": OAUTH_JAAS},
         "needs clientId and clientSecret"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
          "sasl.oauthbearer.token.endpoint.url": "ftp://idp/token", "sasl.jaas.config": OAUTH_JAAS}, "http, https or file URL"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.login.read.timeout.ms": "soon",
          "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token", "sasl.jaas.config": OAUTH_JAAS},
         "sasl.login.read.timeout.ms must be a positive number of milliseconds, not 'soon'"),
        ({"security.protocol": "TLS"}, "security.protocol must be one of"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "PEM keys and certificates only"),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"}, "truststore cannot be read"),
        ({"security.protocol": "SSL", "ssl.keystore.location": "/nonexistent/client.pem"}, "ssl.keystore.* cannot be read"),
    ],
)
def test_bad_properties_are_named(properties, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ClientSettings.from_properties(properties, "127.0.0.1:9092")


@pytest.mark.parametrize("text", ["", "localhost", "localhost:", ":9092", "host:port", "host:0", "host:70000", " , "])
def test_bad_bootstrap_servers(text):
    with pytest.raises(ValueError, match="bootstrap server"):
        parse_bootstrap_servers(text)


@given(st.lists(st.tuples(st.sampled_from(["localhost", "127.0.0.1", "::1", "broker-1.example"]),
                          st.integers(1, 65535)), min_size=1, max_size=4))
def test_bootstrap_servers_round_trip(servers):
    text = ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in servers)
    assert parse_bootstrap_servers(text) == tuple(servers)


def test_tls_checks_the_server_name_unless_told_not_to(tmp_path):
    from certificates import TestCertificateAuthority

    ca = TestCertificateAuthority(tmp_path)
    checked = settings(security_protocol="SSL", ssl_truststore_location=ca.ca_file).ssl_context
    assert checked.check_hostname and checked.verify_mode == ssl.CERT_REQUIRED
    unchecked = ClientSettings.from_properties(
        {"security.protocol": "SSL", "ssl.truststore.certificates": ca.certificate_pem,
         "ssl.endpoint.identification.algorithm": ""}, "127.0.0.1:9093").ssl_context
    assert not unchecked.check_hostname


def test_which_keys_are_a_clients():
    assert is_client_only_setting("sasl.jaas.config") and is_client_only_setting("sasl.oauthbearer.token.endpoint.url")
    assert is_client_setting("ssl.truststore.location") and not is_client_only_setting("ssl.truststore.location")
    assert not is_client_setting("super.users")
