"""The tenant reference plugin: tenant principals built at login, carried as bytes of their own
between brokers (KIP-590), and addressed by ACLs one user or one whole tenant at a time."""

import datetime
import random
import re
from pathlib import Path

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given, settings, strategies as st

import kafkasec_tenant
from kafkasec import (
    AclBinding,
    AclOperation,
    Action,
    AuthorizationResult,
    DefaultPrincipalSerde,
    KafkaErrorCode,
    KafkaPrincipal,
    KafkaSecurity,
    PrincipalDeserializationError,
    RequestContext,
    ResourcePattern,
    ResourceType,
    RuleKind,
)
from kafkasec.plugins import make_plugin_manager
from kafkasec.principals.authentication import (
    PlaintextAuthenticationContext,
    SaslAuthenticationContext,
    SslAuthenticationContext,
)
from kafkasec_tenant import ENABLED_SETTING, REQUIRED_SETTING, TenantPrincipal, TenantRequiredError

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugin-tenant.md"
ENABLED = {ENABLED_SETTING: "true"}
ALICE = TenantPrincipal.of("acme", "alice")


def enabled(**config):
    return KafkaSecurity(config={**ENABLED, **config}, plugins=[kafkasec_tenant])


def sasl(authorization_id, mechanism="SCRAM-SHA-256", token_authenticated=False):
    return SaslAuthenticationContext(
        mechanism=mechanism,
        authorization_id=authorization_id,
        client_address="10.0.0.7",
        token_authenticated=token_authenticated,
    )


KEY = ec.generate_private_key(ec.SECP256R1())


def certificate(*attributes):
    """A self-signed client certificate whose subject has ``attributes`` ((oid, value) pairs)."""
    subject = x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes])
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(KEY.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=365))
        .sign(KEY, hashes.SHA256())
    )


def ssl(*attributes):
    return SslAuthenticationContext(peer_certificate=certificate(*attributes), client_address="10.0.0.7")


def read_topic(name):
    return Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, name))


def allow_read(principal, topic, pattern="LITERAL", permission="ALLOW"):
    return AclBinding.of("TOPIC", topic, pattern, principal, "*", "READ", permission)


def authorize(security, principal, topic):
    return security.authorize(RequestContext(principal, "10.0.0.7"), [read_topic(topic)])[0]


# ------------------------------------------------------------------ TenantPrincipal


def test_a_tenant_principal_is_a_user_with_a_tenant_qualified_name():
    assert (ALICE.principal_type, ALICE.name) == ("User", "acme/alice")
    assert (ALICE.tenant, ALICE.user) == ("acme", "alice")
    assert str(ALICE) == "User:acme/alice"
    assert ALICE.tenant_principal == KafkaPrincipal("Tenant", "acme")
    assert isinstance(ALICE, KafkaPrincipal)
    assert ALICE != TenantPrincipal.of("globex", "alice")
    # The user part may contain the separator: the name splits at the first one.
    odd = TenantPrincipal.of("acme", "team/alice")
    assert (odd.tenant, odd.user, odd.name) == ("acme", "team/alice", "acme/team/alice")


def test_equality_follows_kafka():
    token = TenantPrincipal.of("acme", "alice", token_authenticated=True)
    assert token == ALICE and hash(token) == hash(ALICE)
    # Kafka's KafkaPrincipal.equals compares classes: a plain principal with the same text is
    # another principal (ACLs, which match on the text, treat them alike).
    assert ALICE != KafkaPrincipal("User", "acme/alice")
    assert TenantPrincipal.parse("User:acme/alice") == ALICE
    marked = attrs.evolve(ALICE, token_authenticated=True)
    assert type(marked) is TenantPrincipal and marked.token_authenticated


@pytest.mark.parametrize("tenant", ["", "ac/me", "ac.me", "ac me", "acmé", "CN=acme", "a,b", "ac:me"])
def test_a_bad_tenant_name_is_a_value_error(tenant):
    with pytest.raises(ValueError, match="tenant"):
        TenantPrincipal.of(tenant, "alice")


@pytest.mark.parametrize(
    "principal_type, name",
    [("User", "alice"), ("User", "acme/"), ("User", "/alice"), ("Group", "acme/alice"), ("User", "a.b/c")],
)
def test_a_tenant_principal_is_checked_however_it_is_built(principal_type, name):
    with pytest.raises(ValueError):
        TenantPrincipal(principal_type, name)
    with pytest.raises(ValueError):
        TenantPrincipal.parse(f"{principal_type}:{name}")


def test_misuse_is_a_type_error():
    with pytest.raises(TypeError):
        TenantPrincipal.of(None, "alice")
    with pytest.raises(TypeError):
        TenantPrincipal.of("acme", b"alice")
    with pytest.raises(TypeError):
        TenantPrincipal.of("acme", "alice", token_authenticated=1)
    with pytest.raises(TypeError):
        kafkasec_tenant.serialize(KafkaPrincipal("User", "acme/alice"))
    with pytest.raises(TypeError):
        kafkasec_tenant.deserialize("544e")


# ------------------------------------------------------------------ building principals


def test_a_sasl_login_with_a_tenant_gets_a_tenant_principal():
    with enabled() as security:
        principal = security.build_principal(sasl("acme/alice"))
        assert type(principal) is TenantPrincipal and principal == ALICE
        assert not principal.token_authenticated
        for mechanism in ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"):
            assert security.build_principal(sasl("globex/bob", mechanism)) == TenantPrincipal.of("globex", "bob")


def test_a_delegation_token_login_stays_token_authenticated():
    with enabled() as security:
        principal = security.build_principal(sasl("acme/alice", token_authenticated=True))
    assert type(principal) is TenantPrincipal and principal == ALICE
    assert principal.token_authenticated


@pytest.mark.parametrize("authorization_id", ["alice", "acme/", "/alice", "ac.me/alice", "Acme Inc/alice"])
def test_a_sasl_login_without_a_tenant_is_left_to_the_default_builder(authorization_id):
    with enabled() as security:
        principal = security.build_principal(sasl(authorization_id))
    assert type(principal) is KafkaPrincipal
    assert principal == KafkaPrincipal("User", authorization_id)


def test_kerberos_names_are_not_read_as_tenants():
    # Kerberos names use the tenant separator themselves: the default builder maps them.
    with enabled(**{"kafkasec.kerberos.default.realm": "EXAMPLE.COM"}) as security:
        principal = security.build_principal(sasl("kafka/broker1.example.com@EXAMPLE.COM", "GSSAPI"))
    assert type(principal) is KafkaPrincipal
    assert principal == KafkaPrincipal("User", "kafka")


def test_an_ssl_certificate_names_the_tenant_in_o_and_the_user_in_cn():
    with enabled() as security:
        principal = security.build_principal(
            ssl((NameOID.COUNTRY_NAME, "DE"), (NameOID.ORGANIZATION_NAME, "acme"), (NameOID.COMMON_NAME, "alice"))
        )
        assert type(principal) is TenantPrincipal and principal == ALICE
        principal = security.build_principal(
            ssl((NameOID.ORGANIZATION_NAME, "globex"), (NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), (NameOID.COMMON_NAME, "bob"))
        )
        assert principal == TenantPrincipal.of("globex", "bob")


@pytest.mark.parametrize(
    "attributes",
    [
        [(NameOID.COMMON_NAME, "alice")],
        [(NameOID.ORGANIZATION_NAME, "acme")],
        [(NameOID.ORGANIZATION_NAME, "Acme, Inc."), (NameOID.COMMON_NAME, "alice")],
        [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.ORGANIZATION_NAME, "globex"), (NameOID.COMMON_NAME, "alice")],
        [(NameOID.ORGANIZATION_NAME, "acme"), (NameOID.COMMON_NAME, "alice"), (NameOID.COMMON_NAME, "bob")],
    ],
    ids=["no O", "no CN", "O not a tenant name", "two O", "two CN"],
)
def test_a_certificate_without_one_tenant_and_one_user_is_left_to_the_default_builder(attributes):
    with enabled() as security:
        principal = security.build_principal(ssl(*attributes))
    assert type(principal) is KafkaPrincipal and principal.principal_type == "User"


def test_connections_without_an_identity_are_left_to_the_default_builder():
    with enabled() as security:
        assert type(security.build_principal(PlaintextAuthenticationContext(client_address="10.0.0.7"))) is KafkaPrincipal
        no_client_certificate = SslAuthenticationContext(peer_certificate=None, client_address="10.0.0.7")
        assert security.build_principal(no_client_certificate) == KafkaPrincipal("User", "ANONYMOUS")


@pytest.mark.parametrize(
    "context",
    [
        sasl("alice"),
        sasl("kafka/broker1.example.com@EXAMPLE.COM", "GSSAPI"),
        ssl((NameOID.COMMON_NAME, "alice")),
        SslAuthenticationContext(peer_certificate=None, client_address="10.0.0.7"),
        PlaintextAuthenticationContext(client_address="10.0.0.7"),
    ],
    ids=["sasl", "kerberos", "certificate", "no certificate", "plaintext"],
)
def test_with_tenants_required_a_login_without_one_is_refused(context):
    with enabled(**{REQUIRED_SETTING: "true"}) as security:
        with pytest.raises(TenantRequiredError, match=REQUIRED_SETTING):
            security.build_principal(context)
        assert security.build_principal(sasl("acme/alice")) == ALICE


# ------------------------------------------------------------------ serde


@pytest.mark.parametrize(
    "principal, hex_bytes",
    [
        # Tag "TN", compact "acme", compact "alice", false, no tagged fields.
        (ALICE, "544e 05 61636d65 06 616c696365 00 00"),
        (TenantPrincipal.of("acme", "alice", token_authenticated=True), "544e 05 61636d65 06 616c696365 01 00"),
        (TenantPrincipal.of("g-1_x", "é/ü"), "544e 06 672d315f78 06 c3a92fc3bc 00 00"),
        # A 127-byte user needs a two-byte varint (128 = 0x80 0x01).
        (TenantPrincipal.of("acme", "a" * 127), "544e 05 61636d65 8001" + "61" * 127 + " 00 00"),
    ],
)
def test_byte_vectors(principal, hex_bytes):
    expected = bytes.fromhex(hex_bytes.replace(" ", ""))
    assert kafkasec_tenant.serialize(principal) == expected
    with enabled() as security:
        assert security.serialize_principal(principal) == expected
        read = security.deserialize_principal(expected)
    assert type(read) is TenantPrincipal and read == principal
    assert read.token_authenticated == principal.token_authenticated


def test_the_tag_is_a_version_kafka_refuses():
    assert kafkasec_tenant.TAG.to_bytes(2, "big") == b"TN" and kafkasec_tenant.TAG == 21582
    with pytest.raises(PrincipalDeserializationError, match="version 21582"):
        DefaultPrincipalSerde().deserialize(kafkasec_tenant.serialize(ALICE))


tenants = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)
tenant_principals = st.builds(TenantPrincipal.of, tenants, st.text(min_size=1, max_size=300), st.booleans())


@given(tenant_principals)
def test_round_trip(principal):
    read = kafkasec_tenant.deserialize(kafkasec_tenant.serialize(principal))
    assert type(read) is TenantPrincipal
    assert (read.name, read.token_authenticated) == (principal.name, principal.token_authenticated)


def test_round_trip_through_the_facade_keeps_the_token_mark():
    token = TenantPrincipal.of("acme", "alice", token_authenticated=True)
    with enabled() as security:
        for principal in (ALICE, token):
            read = security.deserialize_principal(security.serialize_principal(principal))
            assert type(read) is TenantPrincipal and read == principal
            assert read.token_authenticated is principal.token_authenticated


@given(tenant_principals, st.data())
def test_every_truncation_and_extension_is_refused(principal, data):
    encoded = kafkasec_tenant.serialize(principal)
    cut = data.draw(st.integers(2, len(encoded) - 1))
    with pytest.raises(PrincipalDeserializationError):
        kafkasec_tenant.deserialize(encoded[:cut])
    with pytest.raises(PrincipalDeserializationError, match="follow the principal data"):
        kafkasec_tenant.deserialize(encoded + data.draw(st.binary(min_size=1, max_size=4)))


def test_every_truncation_is_error_97_through_the_facade():
    encoded = kafkasec_tenant.serialize(TenantPrincipal.of("acme", "alice", token_authenticated=True))
    with enabled() as security:
        for cut in range(len(encoded)):
            with pytest.raises(PrincipalDeserializationError) as raised:
                security.deserialize_principal(encoded[:cut])
            assert raised.value.error_code is KafkaErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


def outcome(data):
    """The principal ``data`` reads as, None (not this format) or error 97; anything else fails."""
    try:
        principal = kafkasec_tenant.deserialize(data)
    except PrincipalDeserializationError as error:
        assert error.error_code is KafkaErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
        return error
    if principal is not None:
        assert type(principal) is TenantPrincipal
        assert kafkasec_tenant.is_tenant_name(principal.tenant) and principal.user
    else:
        assert data[:2] != b"\x54\x4e"
    return principal


@pytest.mark.slow
@settings(max_examples=2000)
@given(st.one_of(st.binary(max_size=64), st.binary(max_size=64).map(lambda tail: b"\x54\x4e" + tail)))
def test_any_bytes_give_a_principal_none_or_error_97(data):
    outcome(data)


def test_mutations_of_valid_bytes_give_a_principal_or_error_97():
    generator = random.Random(590)
    encoded = [kafkasec_tenant.serialize(p) for p in (ALICE, TenantPrincipal.of("globex", "bob/" + "x" * 140, True))]
    for _ in range(20_000):
        data = bytearray(generator.choice(encoded))
        for _ in range(generator.randint(1, 3)):
            position = generator.randrange(2, len(data))
            choice = generator.random()
            if choice < 0.5:
                data[position] = generator.randrange(256)
            elif choice < 0.75:
                del data[position]
            else:
                data.insert(position, generator.randrange(256))
        outcome(bytes(data))


@pytest.mark.parametrize(
    "hex_bytes, message",
    [
        ("544e 05 61636d65 06 616c696365 02 00", "TokenAuthenticated must be 0 or 1"),
        ("544e 00 06 616c696365 00 00", "serialized as null"),
        ("544e 01 06 616c696365 00 00", "do not name a user"),
        ("544e 05 612e6d65 06 616c696365 00 00", "do not name a user"),
        ("544e 05 61636d65 01 00 00", "do not name a user"),
        ("544e 05 61636dff 06 616c696365 00 00", "not valid UTF-8"),
        ("544e 05 61636d65 06 616c696365 00 00 00", "follow the principal data"),
        ("544e 05 61636d65 06 616c696365 00 8080808080", "longer than 5 bytes"),
    ],
)
def test_malformed_bytes_of_this_format_are_error_97(hex_bytes, message):
    with pytest.raises(PrincipalDeserializationError, match=message):
        kafkasec_tenant.deserialize(bytes.fromhex(hex_bytes.replace(" ", "")))


def test_unknown_tagged_fields_are_skipped():
    # One tagged field (tag 7, 2 bytes), as a later version of the format might add.
    data = bytes.fromhex("544e 05 61636d65 06 616c696365 00 01 07 02 abcd".replace(" ", ""))
    assert kafkasec_tenant.deserialize(data) == ALICE


def test_kafka_format_is_still_read_with_the_plugin_enabled():
    kafka_bytes = bytes.fromhex("0000055573657206616c6963650000")
    with enabled() as security:
        read = security.deserialize_principal(kafka_bytes)
        assert type(read) is KafkaPrincipal and read == KafkaPrincipal("User", "alice")
        # A plain principal is written in Kafka's format even when its name looks qualified:
        # only the builder decides who belongs to a tenant.
        plain = KafkaPrincipal("User", "acme/alice")
        assert security.serialize_principal(plain) == DefaultPrincipalSerde().serialize(plain)
        assert type(security.deserialize_principal(security.serialize_principal(plain))) is KafkaPrincipal


def test_a_tenant_principal_crosses_from_one_broker_to_another():
    with enabled() as sender, enabled() as receiver:
        data = sender.serialize_principal(TenantPrincipal.of("acme", "alice", token_authenticated=True))
        read = receiver.deserialize_principal(data)
    assert type(read) is TenantPrincipal and read == ALICE and read.token_authenticated


def test_a_receiver_without_the_plugin_refuses_tenant_bytes_with_97():
    with enabled() as sender, KafkaSecurity(plugins=[kafkasec_tenant]) as receiver:
        data = sender.serialize_principal(ALICE)
        with pytest.raises(PrincipalDeserializationError, match="version 21582") as raised:
            receiver.deserialize_principal(data)
    assert raised.value.error_code is KafkaErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


def test_instances_sharing_a_plugin_manager_keep_their_own_settings():
    manager = make_plugin_manager(load_entrypoints=False, plugins=[kafkasec_tenant])
    with (
        KafkaSecurity(config=ENABLED, plugin_manager=manager) as tenanted,
        KafkaSecurity(plugin_manager=manager) as plain,
    ):
        data = tenanted.serialize_principal(ALICE)
        assert tenanted.deserialize_principal(data) == ALICE
        with pytest.raises(PrincipalDeserializationError):
            plain.deserialize_principal(data)
        assert type(plain.build_principal(sasl("acme/alice"))) is KafkaPrincipal
        assert plain.serialize_principal(ALICE) == DefaultPrincipalSerde().serialize(ALICE)


# ------------------------------------------------------------------ ACLs


def test_a_tenant_acl_applies_to_every_user_of_the_tenant_only():
    with enabled() as security:
        security.create_acls([allow_read("Tenant:acme", "acme.", "PREFIXED")])
        assert authorize(security, ALICE, "acme.orders") is ALLOWED
        assert authorize(security, TenantPrincipal.of("acme", "bob"), "acme.orders") is ALLOWED
        assert authorize(security, TenantPrincipal.of("globex", "alice"), "acme.orders") is DENIED
        assert authorize(security, ALICE, "globex.orders") is DENIED
        # Only the builder makes tenant principals: a plain principal with the same text is not one.
        assert authorize(security, KafkaPrincipal("User", "acme/alice"), "acme.orders") is DENIED
        decision = security.explain(RequestContext(ALICE, "10.0.0.7"), read_topic("acme.orders"))
    assert decision.rule.kind is RuleKind.ALLOW_ACL
    assert decision.rule.acl.binding.entry.principal == "Tenant:acme"


def test_a_user_acl_applies_to_one_user_of_one_tenant():
    with enabled() as security:
        security.create_acls([allow_read("User:acme/alice", "acme.orders")])
        assert authorize(security, ALICE, "acme.orders") is ALLOWED
        assert authorize(security, TenantPrincipal.of("acme", "bob"), "acme.orders") is DENIED
        assert authorize(security, TenantPrincipal.of("globex", "alice"), "acme.orders") is DENIED
        assert authorize(security, KafkaPrincipal("User", "alice"), "acme.orders") is DENIED


def test_a_tenant_deny_beats_a_user_allow():
    with enabled() as security:
        security.create_acls(
            [allow_read("User:acme/alice", "acme.orders"), allow_read("Tenant:acme", "acme.", "PREFIXED", "DENY")]
        )
        assert authorize(security, ALICE, "acme.orders") is DENIED
        decision = security.explain(RequestContext(ALICE, "10.0.0.7"), read_topic("acme.orders"))
    assert decision.rule.kind is RuleKind.DENY_ACL
    assert decision.rule.acl.binding.entry.principal == "Tenant:acme"


def test_a_built_and_forwarded_principal_keeps_its_tenant_acls():
    with enabled() as broker, enabled() as controller:
        controller.create_acls([allow_read("Tenant:acme", "acme.", "PREFIXED")])
        data = broker.serialize_principal(broker.build_principal(sasl("acme/alice")))
        assert authorize(controller, controller.deserialize_principal(data), "acme.orders") is ALLOWED


# ------------------------------------------------------------------ settings and loading


def test_disabled_the_plugin_registers_nothing():
    for config in ({}, {ENABLED_SETTING: "false"}, {ENABLED_SETTING: False}):
        with KafkaSecurity(config=config, plugins=[kafkasec_tenant]) as security:
            hook = security.plugin_manager.hook
            for caller in (
                hook.kafkasec_build_principal,
                hook.kafkasec_serialize_principal,
                hook.kafkasec_deserialize_principal,
                hook.kafkasec_expand_principal,
            ):
                assert not any(impl.plugin_name.startswith("tenant") for impl in caller.get_hookimpls())
            # Nothing expands principals, so the authorizer skips the hook entirely.
            assert security.authorizer.principal_expander is None
            security.create_acls([allow_read("Tenant:acme", "acme.", "PREFIXED")])
            assert authorize(security, ALICE, "acme.orders") is DENIED


@pytest.mark.parametrize(
    "config, setting",
    [
        ({ENABLED_SETTING: "yes"}, ENABLED_SETTING),
        ({ENABLED_SETTING: 1}, ENABLED_SETTING),
        ({ENABLED_SETTING: "true", REQUIRED_SETTING: "maybe"}, REQUIRED_SETTING),
        ({REQUIRED_SETTING: "true"}, REQUIRED_SETTING),
        ({ENABLED_SETTING: "false", REQUIRED_SETTING: "true"}, REQUIRED_SETTING),
        ({"kafkasec.tenant.enable": "true"}, "kafkasec.tenant.enable"),
    ],
)
def test_a_bad_setting_fails_startup_naming_it(config, setting):
    with pytest.raises(ValueError, match=re.escape(setting)):
        KafkaSecurity(config=config, plugins=[kafkasec_tenant])


def test_the_entry_point_loads_the_plugin_by_name(monkeypatch):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "tenant")
    with KafkaSecurity.from_config({ENABLED_SETTING: "true"}) as security:
        principal = security.build_principal(sasl("acme/alice"))
        assert type(principal) is TenantPrincipal
        assert security.serialize_principal(principal).hex() == "544e0561636d6506616c6963650000"
        security.create_acls([allow_read("Tenant:acme", "acme.", "PREFIXED")])
        assert authorize(security, principal, "acme.orders") is ALLOWED


def test_the_documented_examples_run(monkeypatch):
    # As a user runs them: the entry points load the plugin (conftest loads none).
    monkeypatch.delenv("KAFKASEC_LOAD_PLUGINS")
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks
    for number, block in enumerate(blocks):
        exec(compile(block, f"plugin-tenant.md block {number}", "exec"), {})
