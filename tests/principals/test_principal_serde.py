"""KafkaPrincipalSerde: Kafka's bytes exactly, and any other bytes refused with error 97."""

import os
import random

import pytest
from hypothesis import given, settings, strategies as st
from kio.schema.default_principal_data.v0 import DefaultPrincipalData

from kafkasec import (
    DefaultPrincipalSerde,
    KafkaErrorCode,
    KafkaPrincipal,
    KafkaSecurity,
    PrincipalDeserializationError,
    hookimpl,
)
from kafkasec.protocol import wire

SERDE = DefaultPrincipalSerde()


@pytest.mark.parametrize(
    "principal, hex_bytes",
    [
        # The vector: version, compact "User", compact "alice", false, no tagged fields.
        (KafkaPrincipal("User", "alice"), "0000 05 55736572 06 616c696365 00 00"),
        (KafkaPrincipal("User", "alice", token_authenticated=True), "0000 05 55736572 06 616c696365 01 00"),
        (KafkaPrincipal("User", ""), "0000 05 55736572 01 00 00"),
        (KafkaPrincipal("Group", "é"), "0000 06 47726f7570 03 c3a9 00 00"),
        # A 127-byte name needs a two-byte varint (128 = 0x80 0x01).
        (KafkaPrincipal("User", "a" * 127), "0000 05 55736572 8001" + "61" * 127 + " 00 00"),
    ],
)
def test_byte_vectors(principal, hex_bytes):
    expected = bytes.fromhex(hex_bytes.replace(" ", ""))
    assert SERDE.serialize(principal) == expected
    read = SERDE.deserialize(expected)
    assert read == principal and read.token_authenticated == principal.token_authenticated


principals = st.builds(
    KafkaPrincipal,
    st.text(max_size=20),
    st.text(max_size=300),
    st.booleans(),
)


@given(principals)
def test_round_trip(principal):
    read = SERDE.deserialize(SERDE.serialize(principal))
    assert (read.principal_type, read.name, read.token_authenticated) == (
        principal.principal_type,
        principal.name,
        principal.token_authenticated,
    )


@settings(max_examples=2000)
@given(st.binary(max_size=64))
def test_any_bytes_give_a_principal_or_error_97(data):
    try:
        principal = SERDE.deserialize(data)
    except PrincipalDeserializationError as error:
        assert error.error_code is KafkaErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
    else:
        # Whatever was accepted is exactly what Kafka's writer produces, modulo the lenient
        # boolean and skipped tagged fields.
        assert isinstance(principal, KafkaPrincipal)


@given(principals, st.data())
def test_every_truncation_and_extension_is_refused(principal, data):
    encoded = SERDE.serialize(principal)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(PrincipalDeserializationError):
        SERDE.deserialize(encoded[:cut])
    with pytest.raises(PrincipalDeserializationError, match="follow the principal data"):
        SERDE.deserialize(encoded + data.draw(st.binary(min_size=1, max_size=8)))


def test_random_bytes_fuzz():
    """A plain fuzzer: mutate valid encodings and throw random bytes, many times, quickly."""
    rng = random.Random(97)
    seeds = [SERDE.serialize(KafkaPrincipal("User", "alice")), SERDE.serialize(KafkaPrincipal("Tenant", "x" * 200, True))]
    accepted = refused = 0
    for _ in range(30_000):
        if rng.random() < 0.5:
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            data = os.urandom(rng.randint(0, 40))
        try:
            SERDE.deserialize(bytes(data))
            accepted += 1
        except PrincipalDeserializationError:
            refused += 1
    assert accepted and refused


@pytest.mark.parametrize(
    "hex_bytes, message",
    [
        ("", "inside the version"),
        ("0001 05 55736572 06 616c696365 00 00", "Invalid principal data version 1"),
        ("ffff 05 55736572 06 616c696365 00 00", "Invalid principal data version -1"),
        ("0000 00", "non-nullable field Type was serialized as null"),
        ("0000 05 5573", "inside Type"),
        ("0000 ffffffff0f", "string field Type had invalid length"),
        ("0000 8080808080", "longer than 5 bytes"),
        ("0000 03 ffff 01 00 00", "not valid UTF-8"),
        ("0000 05 55736572 06 616c696365 00", "inside the tagged-field count"),
        ("0000 05 55736572 06 616c696365 00 01 00 05 6162", "inside a tagged field"),
    ],
)
def test_malformed_bytes_are_error_97(hex_bytes, message):
    with pytest.raises(PrincipalDeserializationError, match=message) as raised:
        SERDE.deserialize(bytes.fromhex(hex_bytes.replace(" ", "")))
    assert raised.value.code == 97


def test_kafka_leniencies_are_kept():
    # Any non-zero byte is true, and unknown tagged fields are skipped, as Kafka's reader does.
    data = bytes.fromhex("0000 05 55736572 06 616c696365 07 01 03 02 abcd".replace(" ", ""))
    principal = SERDE.deserialize(data)
    assert principal == KafkaPrincipal("User", "alice") and principal.token_authenticated


def test_misuse_is_a_type_or_value_error():
    with pytest.raises(TypeError):
        SERDE.serialize("User:alice")
    with pytest.raises(TypeError):
        SERDE.deserialize("0000")
    with pytest.raises(ValueError, match="at most 32767"):
        SERDE.serialize(KafkaPrincipal("User", "x" * 0x8000))


class TenantSerde:
    """A serde of its own format (version 0x7e00), declining everything else."""

    MARK = b"\x7e\x00"

    @hookimpl
    def kafkasec_serialize_principal(self, security, principal):
        if principal.principal_type != "Tenant":
            return None
        return self.MARK + principal.name.encode()

    @hookimpl
    def kafkasec_deserialize_principal(self, security, data):
        if not data.startswith(self.MARK):
            return None
        if not data[2:]:
            raise ValueError("a tenant principal needs a name")
        return KafkaPrincipal("Tenant", data[2:].decode())


def test_serde_hooks_are_asked_first_and_may_decline():
    security = KafkaSecurity(plugins=[TenantSerde()])
    tenant, user = KafkaPrincipal("Tenant", "acme"), KafkaPrincipal("User", "alice")
    assert security.serialize_principal(tenant) == b"\x7e\x00acme"
    assert security.deserialize_principal(b"\x7e\x00acme") == tenant
    assert security.serialize_principal(user) == SERDE.serialize(user)
    assert security.deserialize_principal(SERDE.serialize(user)) == user


def test_facade_turns_any_plugin_failure_into_error_97():
    security = KafkaSecurity(plugins=[TenantSerde()])
    with pytest.raises(PrincipalDeserializationError, match="needs a name") as raised:
        security.deserialize_principal(b"\x7e\x00")
    assert raised.value.code == 97
    with pytest.raises(PrincipalDeserializationError, match="version"):
        security.deserialize_principal(b"\x00\x09")
    with pytest.raises(TypeError):
        security.deserialize_principal("not bytes")


# kio's DefaultPrincipalData is an independent implementation of the same generated schema.

@given(
    st.text(max_size=40), st.text(max_size=60), st.booleans()
)
def test_bytes_equal_kios_generated_default_principal_data(principal_type, name, token):
    principal = KafkaPrincipal(principal_type, name, token)
    kio_bytes = b"\x00\x00" + wire.encode(DefaultPrincipalData(type_=principal_type, name=name, token_authenticated=token))
    assert DefaultPrincipalSerde().serialize(principal) == kio_bytes


def _full_read(data):
    from kafkasec.principals.serde import PrincipalDataReader

    reader = PrincipalDataReader(data)
    assert reader.int16() == 0
    principal = KafkaPrincipal(reader.compact_string("Type"), reader.compact_string("Name"), reader.byte("t") != 0)
    reader.skip_tagged_fields()
    reader.end()
    return principal


@given(st.one_of(st.binary(max_size=40), st.builds(lambda p: DefaultPrincipalSerde().serialize(p), st.builds(
    KafkaPrincipal, st.text(max_size=130), st.text(max_size=130), st.booleans()))))
def test_the_short_form_path_agrees_with_the_full_reader(data):
    from kafkasec.principals.serde import _read_short_form

    short = _read_short_form(data)
    if short is not None:
        full = _full_read(data)
        assert (short, short.token_authenticated) == (full, full.token_authenticated)
