"""DefaultPrincipalBuilder (Kafka's DefaultKafkaPrincipalBuilderTest, with real certificates) and
the kafkasec_build_principal hook through KafkaSecurity."""

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID
from hypothesis import given, strategies as st

from kafkasec import (
    DefaultPrincipalBuilder,
    KafkaError,
    KafkaPrincipal,
    KafkaSecurity,
    PlaintextAuthenticationContext,
    SaslAuthenticationContext,
    SslAuthenticationContext,
    hookimpl,
)
from kafkasec.errors import KafkaErrorCode, UnknownServerError
from kafkasec.plugins import DEFAULT_PLUGINS, make_plugin_manager
from kafkasec.principals.mapping_rules import NoMatchingRule
from kafkasec.principals.principal import ANONYMOUS

from certificates import A, self_signed

DUKE = self_signed(
    A(NameOID.COUNTRY_NAME, "US"),
    A(NameOID.ORGANIZATION_NAME, "Org"),
    A(NameOID.ORGANIZATIONAL_UNIT_NAME, "ServiceUsers"),
    A(NameOID.COMMON_NAME, "Duke"),
)


def ssl(certificate, address="127.0.0.1"):
    return SslAuthenticationContext(certificate, address)


def sasl(mechanism, authorization_id, **kwargs):
    return SaslAuthenticationContext(mechanism, authorization_id, "127.0.0.1", **kwargs)


# ---------------------------------------------------------------- Kafka's DefaultKafkaPrincipalBuilderTest


def test_return_anonymous_principal_for_plaintext():
    assert DefaultPrincipalBuilder().build(PlaintextAuthenticationContext("127.0.0.1")) == ANONYMOUS


def test_use_the_peer_principal_for_ssl():
    principal = DefaultPrincipalBuilder().build(ssl(DUKE))
    assert principal == KafkaPrincipal("User", "CN=Duke,OU=ServiceUsers,O=Org,C=US")


def test_principal_if_ssl_peer_is_not_authenticated():
    assert DefaultPrincipalBuilder().build(ssl(None)) == ANONYMOUS


def test_principal_with_ssl_principal_mapper():
    builder = DefaultPrincipalBuilder(
        ", ".join(
            [
                "RULE:^CN=(.*),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*),OU=(.*),O=(.*),L=(.*),ST=(.*),C=(.*)$/$1@$2/L",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    sme = self_signed(
        A(NameOID.COUNTRY_NAME, "US"), A(NameOID.STATE_OR_PROVINCE_NAME, "MD"), A(NameOID.LOCALITY_NAME, "Fulton"),
        A(NameOID.ORGANIZATION_NAME, "mycp"), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "SME"), A(NameOID.COMMON_NAME, "Duke"),
    )
    javasoft = self_signed(
        A(NameOID.ORGANIZATION_NAME, "Sun Microsystems"), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "JavaSoft"),
        A(NameOID.COMMON_NAME, "duke"),
    )
    anonymous_cn = self_signed(
        A(NameOID.COUNTRY_NAME, "US"), A(NameOID.ORGANIZATION_NAME, "Sun Microsystems"),
        A(NameOID.ORGANIZATIONAL_UNIT_NAME, "JavaSoft"),
    )
    assert builder.build(ssl(DUKE)).name == "duke"
    assert builder.build(ssl(sme)).name == "duke@sme"
    assert builder.build(ssl(javasoft)).name == "DUKE"
    assert builder.build(ssl(anonymous_cn)).name == "OU=JavaSoft,O=Sun Microsystems,C=US"


def test_principal_builder_scram():
    principal = DefaultPrincipalBuilder().build(sasl("SCRAM-SHA-256", "foo"))
    assert (principal.principal_type, principal.name) == ("User", "foo")


def test_principal_builder_gssapi():
    builder = DefaultPrincipalBuilder(default_realm="REALM.COM")
    assert builder.build(sasl("GSSAPI", "foo/host@REALM.COM")) == KafkaPrincipal("User", "foo")


# ---------------------------------------------------------------- certificates with awkward subjects


@pytest.mark.parametrize(
    "rdns, name",
    [
        ([A(NameOID.COMMON_NAME, 'a,b+c="d"')], r'CN=a\,b\+c\=\"d\"'),
        ([[A(NameOID.COMMON_NAME, "svc"), A(NameOID.USER_ID, "42")]], "CN=svc+UID=42"),
        ([A(NameOID.COMMON_NAME, "alice"), A(NameOID.EMAIL_ADDRESS, "alice@example.com")],
         "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice"),
        ([A(NameOID.ORGANIZATION_NAME, "Société Générale"), A(NameOID.COMMON_NAME, "Zoë")], "CN=Zoë,O=Société Générale"),
    ],
)
def test_default_rule_gives_javas_dn_text(rdns, name):
    assert DefaultPrincipalBuilder().build(ssl(self_signed(*rdns))) == KafkaPrincipal("User", name)


def test_rules_see_the_escaped_dn():
    builder = DefaultPrincipalBuilder(r"RULE:^CN=((\\,|[^,])+),O=.*$/$1/, RULE:^1\.2\.840\.113549\.1\.9\.1=#[0-9a-f]+,CN=(.*)$/$1/L")
    tkac = self_signed(A(NameOID.ORGANIZATION_NAME, "geodis"), A(NameOID.COMMON_NAME, "Tkac, Adam"))
    mailed = self_signed(A(NameOID.COMMON_NAME, "Alice"), A(NameOID.EMAIL_ADDRESS, "alice@example.com"))
    assert builder.build(ssl(tkac)).name == r"Tkac\, Adam"
    assert builder.build(ssl(mailed)).name == "alice"


def test_a_dn_no_rule_maps_fails_as_kafka_fails_the_connection():
    builder = DefaultPrincipalBuilder("RULE:^CN=(.*),OU=ServiceUsers.*$/$1/")
    stranger = self_signed(A(NameOID.COMMON_NAME, "mallory"))
    with pytest.raises(UnknownServerError, match="Failed to map name for 'CN=mallory'") as failure:
        builder.build(ssl(stranger))
    assert failure.value.error_code is KafkaErrorCode.UNKNOWN_SERVER_ERROR
    assert isinstance(failure.value.__cause__, NoMatchingRule)


def test_kerberos_failures_fail_the_connection():
    builder = DefaultPrincipalBuilder(kerberos_rules=["RULE:[2:$1/$2]", "DEFAULT"], default_realm="R")
    with pytest.raises(UnknownServerError, match="Failed to set name for 'bob@OTHER'"):
        builder.build(sasl("GSSAPI", "bob@OTHER"))
    with pytest.raises(UnknownServerError, match="Non-simple name"):
        builder.build(sasl("GSSAPI", "kafka/host@R"))
    with pytest.raises(UnknownServerError, match="Malformed Kerberos name"):
        builder.build(sasl("GSSAPI", "a@b@c"))
    assert builder.build(sasl("GSSAPI", "alice@R")).name == "alice"
    assert builder.build(sasl("GSSAPI", "local-user")).name == "local-user"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER", "gssapi"])
def test_other_mechanisms_use_the_authorization_id_unchanged(mechanism):
    builder = DefaultPrincipalBuilder(kerberos_rules=[])  # no rule would map a Kerberos name
    assert builder.build(sasl(mechanism, "alice@EXAMPLE.COM")).name == "alice@EXAMPLE.COM"


def test_unknown_contexts_are_refused():
    with pytest.raises(TypeError, match="Unhandled authentication context type: str"):
        DefaultPrincipalBuilder().build("PLAINTEXT")


# ---------------------------------------------------------------- configuration


def test_from_config_reads_kafkas_settings():
    builder = DefaultPrincipalBuilder.from_config(
        {
            "ssl.principal.mapping.rules": "  RULE:^CN=(.*?),.*$/$1/U , DEFAULT ",
            "sasl.kerberos.principal.to.local.rules": " RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*// ,\tDEFAULT ",
            "kafkasec.kerberos.default.realm": "CORP.COM",
        }
    )
    assert builder.ssl_principal_mapping_rules == "RULE:^CN=(.*?),.*$/$1/U , DEFAULT"
    assert builder.kerberos_rules == ("RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*//", "DEFAULT")
    assert builder.build(ssl(DUKE)).name == "DUKE"
    assert builder.build(sasl("GSSAPI", "alice@EXAMPLE.COM")).name == "alice"
    assert builder.build(sasl("GSSAPI", "bob/h@CORP.COM")).name == "bob"


def test_defaults():
    builder = DefaultPrincipalBuilder.from_config({})
    assert builder == DefaultPrincipalBuilder() == DefaultPrincipalBuilder(None, None, None)
    assert (builder.ssl_principal_mapping_rules, builder.kerberos_rules, builder.default_realm) == ("DEFAULT", ("DEFAULT",), "")


def test_kerberos_rules_are_a_kafka_list():
    # An empty string is an empty list; a trailing comma leaves an empty rule, which Kafka refuses.
    assert DefaultPrincipalBuilder(kerberos_rules="").kerberos_rules == ()
    assert DefaultPrincipalBuilder(kerberos_rules=("DEFAULT",)).kerberos_rules == ("DEFAULT",)
    with pytest.raises(ValueError, match=r"sasl.kerberos.principal.to.local.rules: invalid rule ''"):
        DefaultPrincipalBuilder(kerberos_rules="DEFAULT,")
    # A comma inside a regular expression splits the rule, as in Kafka.
    with pytest.raises(ValueError, match=r"invalid rule 'RULE:\[1:\$1\]\(a'"):
        DefaultPrincipalBuilder(kerberos_rules="RULE:[1:$1](a,b)")


@pytest.mark.parametrize(
    "config, setting",
    [
        ({"ssl.principal.mapping.rules": ["DEFAULT"]}, "ssl.principal.mapping.rules"),
        ({"sasl.kerberos.principal.to.local.rules": 3}, "sasl.kerberos.principal.to.local.rules"),
        ({"sasl.kerberos.principal.to.local.rules": ["DEFAULT", 3]}, "sasl.kerberos.principal.to.local.rules"),
        ({"kafkasec.kerberos.default.realm": 1}, "kafkasec.kerberos.default.realm"),
    ],
)
def test_settings_of_the_wrong_type(config, setting):
    with pytest.raises(ValueError, match=setting):
        DefaultPrincipalBuilder.from_config(config)


# ---------------------------------------------------------------- authentication contexts


def test_contexts():
    assert PlaintextAuthenticationContext("::1").client_address == "0:0:0:0:0:0:0:1"
    assert PlaintextAuthenticationContext("10.0.0.1").security_protocol == "PLAINTEXT"
    assert ssl(None).security_protocol == "SSL" and ssl(None).listener_name == "SSL"
    context = sasl("PLAIN", "alice", security_protocol="SASL_SSL", listener_name="EXTERNAL")
    assert (context.security_protocol, context.listener_name) == ("SASL_SSL", "EXTERNAL")
    with pytest.raises(ValueError):
        sasl("PLAIN", "alice", security_protocol="SSL")
    with pytest.raises(ValueError, match="client_address"):
        PlaintextAuthenticationContext("not-an-address")


def test_the_certificate_may_be_der_or_pem_bytes():
    der, pem = DUKE.public_bytes(Encoding.DER), DUKE.public_bytes(Encoding.PEM)
    assert ssl(der).peer_certificate == ssl(pem).peer_certificate == ssl(bytearray(der)).peer_certificate == DUKE
    with pytest.raises(ValueError, match="not a DER X.509 certificate"):
        ssl(b"\x30\x03\x02\x01\x01")
    with pytest.raises(ValueError, match="not a PEM X.509 certificate"):
        ssl(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(TypeError, match="peer_certificate"):
        ssl("CN=Duke")


def test_only_scram_logins_use_delegation_tokens():
    assert sasl("SCRAM-SHA-512", "alice", token_authenticated=True).token_authenticated
    with pytest.raises(ValueError, match="only a SCRAM login"):
        sasl("PLAIN", "alice", token_authenticated=True)


# ---------------------------------------------------------------- through KafkaSecurity


@pytest.fixture
def security():
    with KafkaSecurity.from_config(
        {
            "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT",
            "sasl.kerberos.principal.to.local.rules": "RULE:[2:$1@$0](.*@EXAMPLE.COM)s/@.*//,DEFAULT",
            "kafkasec.kerberos.default.realm": "EXAMPLE.COM",
        }
    ) as security:
        yield security


def test_each_protocol_through_the_facade(security):
    assert security.build_principal(PlaintextAuthenticationContext("10.0.0.1")) == ANONYMOUS
    assert security.build_principal(ssl(DUKE)) == KafkaPrincipal("User", "duke")
    assert security.build_principal(ssl(None)) == ANONYMOUS
    assert security.build_principal(sasl("PLAIN", "alice")) == KafkaPrincipal("User", "alice")
    assert security.build_principal(sasl("GSSAPI", "kafka/broker1@EXAMPLE.COM")) == KafkaPrincipal("User", "kafka")
    with pytest.raises(KafkaError, match="Failed to set name for 'kafka/broker1@OTHER.COM'"):
        security.build_principal(sasl("GSSAPI", "kafka/broker1@OTHER.COM"))


def test_token_login_gives_a_token_authenticated_principal(security):
    principal = security.build_principal(sasl("SCRAM-SHA-256", "alice", token_authenticated=True))
    assert principal == KafkaPrincipal.user("alice") and principal.token_authenticated
    assert not security.build_principal(sasl("SCRAM-SHA-256", "alice")).token_authenticated


@pytest.mark.parametrize(
    "config, message",
    [
        ({"ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ServiceUsers.*$/L"}, "ssl.principal.mapping.rules.*'RULE:\\^CN=\\(\\.\\*\\?\\)'"),
        ({"ssl.principal.mapping.rules": "RULE:^CN=\\p{L}+$/x/"}, "ssl.principal.mapping.rules.*Unicode properties"),
        ({"sasl.kerberos.principal.to.local.rules": "RULE:[1:$2]"}, "sasl.kerberos.principal.to.local.rules: invalid rule 'RULE:\\[1:\\$2\\]'"),
        ({"sasl.kerberos.principal.to.local.rules": "default"}, "sasl.kerberos.principal.to.local.rules: invalid rule 'default'"),
    ],
)
def test_bad_rules_stop_the_facade_from_starting(config, message):
    with pytest.raises(ValueError, match=message):
        KafkaSecurity.from_config(config)
    with pytest.raises(ValueError, match=message):
        KafkaSecurity(config=config)


class Tenants:
    """A principal builder of its own: principals of the TENANT listener carry the tenant."""

    def __init__(self):
        self.asked = []

    @hookimpl
    def kafkasec_build_principal(self, security, context):
        self.asked.append(context.listener_name)
        if context.listener_name != "TENANT" or not isinstance(context, SaslAuthenticationContext):
            return None  # not mine: Kafka's rules decide
        tenant, _, user = context.authorization_id.partition("/")
        return KafkaPrincipal("Tenant", f"{tenant}:{user}")


def test_a_plugin_answers_first_and_declines_what_is_not_its_own():
    plugin = Tenants()
    with KafkaSecurity(plugins=[plugin]) as security:
        mine = sasl("SCRAM-SHA-256", "acme/alice", listener_name="TENANT", token_authenticated=True)
        principal = security.build_principal(mine)
        assert principal == KafkaPrincipal("Tenant", "acme:alice")
        assert principal.token_authenticated  # the facade marks token logins whoever built the principal
        assert security.build_principal(sasl("PLAIN", "acme/alice")) == KafkaPrincipal("User", "acme/alice")
        assert security.build_principal(ssl(None, "::1")) == ANONYMOUS
    assert plugin.asked == ["TENANT", "SASL_PLAINTEXT", "SSL"]


def test_the_builder_is_a_built_in_plugin_that_answers_last():
    assert "kafkasec.principals.builder" in DEFAULT_PLUGINS
    impls = make_plugin_manager(plugins=[Tenants()]).hook.kafkasec_build_principal.get_hookimpls()
    assert impls[0].plugin_name == "kafkasec.principals.builder" and impls[0].trylast


@given(st.text(), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]))
def test_non_kerberos_logins_keep_any_authorization_id(authorization_id, mechanism):
    assert DefaultPrincipalBuilder().build(sasl(mechanism, authorization_id)) == KafkaPrincipal.user(authorization_id)
