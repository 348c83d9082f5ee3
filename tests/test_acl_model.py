"""Kafka's ACL model: enum codes and spellings, KIP-430 operation sets and bitfields, patterns,
entries, bindings, and the filter rules of Kafka's ResourcePatternFilter,
AccessControlEntryFilter and AclBindingFilter (ported cases from apache/kafka's
ResourcePatternFilterTest and AclBindingTest, plus properties).
"""

from __future__ import annotations

import enum
import pickle
from decimal import Decimal

import attrs
import pytest
from hypothesis import assume, given, strategies as st

from kafkasec import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourcePatternType,
    ResourceType,
    bitfield_to_operations,
    operations_to_bitfield,
    supported_operations,
)
from kafkasec._enums import KafkaEnum

ALL_ENUMS = [AclOperation, AclPermissionType, ResourceType, PatternType]

# --------------------------------------------------------------------------------------------
# Enum codes, exactly as Kafka ships them
# --------------------------------------------------------------------------------------------

EXPECTED_CODES = {
    AclOperation: {
        "UNKNOWN": 0,
        "ANY": 1,
        "ALL": 2,
        "READ": 3,
        "WRITE": 4,
        "CREATE": 5,
        "DELETE": 6,
        "ALTER": 7,
        "DESCRIBE": 8,
        "CLUSTER_ACTION": 9,
        "DESCRIBE_CONFIGS": 10,
        "ALTER_CONFIGS": 11,
        "IDEMPOTENT_WRITE": 12,
        "CREATE_TOKENS": 13,
        "DESCRIBE_TOKENS": 14,
    },
    AclPermissionType: {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3},
    ResourceType: {
        "UNKNOWN": 0,
        "ANY": 1,
        "TOPIC": 2,
        "GROUP": 3,
        "CLUSTER": 4,
        "TRANSACTIONAL_ID": 5,
        "DELEGATION_TOKEN": 6,
        "USER": 7,
    },
    PatternType: {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4},
}


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
def test_enum_members_and_codes_exactly(enum_cls):
    # Iteration order is Kafka's values() order, and there are no extra (non-alias) members.
    assert [(m.name, int(m)) for m in enum_cls] == list(EXPECTED_CODES[enum_cls].items())


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
def test_enums_are_int_enums_on_the_kafka_base(enum_cls):
    assert issubclass(enum_cls, KafkaEnum)
    assert issubclass(enum_cls, enum.IntEnum)
    for member in enum_cls:
        # Usable wherever Kafka's code is: looked up by it, equal to it, a key for it.
        assert enum_cls(member.value) is member
        assert member == member.value and {member.value: member}[member] is member


@pytest.mark.parametrize(
    "enum_cls,code,name",
    [(cls, code, name) for cls, table in EXPECTED_CODES.items() for name, code in table.items()],
    ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
)
def test_each_code_by_call_and_by_attribute(enum_cls, code, name):
    assert enum_cls(code) is getattr(enum_cls, name)
    assert enum_cls.coerce(code) is getattr(enum_cls, name)
    assert int(getattr(enum_cls, name)) == code


def test_broker_is_an_alias_of_cluster():
    assert ResourceType.BROKER is ResourceType.CLUSTER
    assert int(ResourceType.BROKER) == 4
    assert ResourceType.BROKER.name == "CLUSTER"
    assert ResourceType.coerce("BROKER") is ResourceType.CLUSTER
    assert ResourceType.coerce("broker") is ResourceType.CLUSTER
    assert ResourceType.coerce("Broker") is ResourceType.CLUSTER
    # an alias, not a new member: not iterated, only listed in __members__
    assert "BROKER" not in [m.name for m in ResourceType]
    assert ResourceType.__members__["BROKER"] is ResourceType.CLUSTER
    assert len(list(ResourceType)) == 8


def test_resource_pattern_type_is_pattern_type():
    assert ResourcePatternType is PatternType


@pytest.mark.parametrize(
    "enum_cls,text,expected",
    [
        (AclOperation, "DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
        (AclOperation, "AlterConfigs", AclOperation.ALTER_CONFIGS),
        (AclOperation, "IdempotentWrite", AclOperation.IDEMPOTENT_WRITE),
        (AclOperation, "ClusterAction", AclOperation.CLUSTER_ACTION),
        (AclOperation, "CreateTokens", AclOperation.CREATE_TOKENS),
        (AclOperation, "DescribeTokens", AclOperation.DESCRIBE_TOKENS),
        (AclOperation, "Read", AclOperation.READ),
        (AclOperation, "All", AclOperation.ALL),
        (AclOperation, "describe_configs", AclOperation.DESCRIBE_CONFIGS),
        (AclOperation, "DESCRIBE_CONFIGS", AclOperation.DESCRIBE_CONFIGS),
        (AclOperation, "cluster_action", AclOperation.CLUSTER_ACTION),
        (AclOperation, "unknown", AclOperation.UNKNOWN),
        (ResourceType, "TransactionalId", ResourceType.TRANSACTIONAL_ID),
        (ResourceType, "DelegationToken", ResourceType.DELEGATION_TOKEN),
        (ResourceType, "transactional_id", ResourceType.TRANSACTIONAL_ID),
        (ResourceType, "Topic", ResourceType.TOPIC),
        (ResourceType, "topic", ResourceType.TOPIC),
        (ResourceType, "Cluster", ResourceType.CLUSTER),
        (ResourceType, "User", ResourceType.USER),
        (AclPermissionType, "Allow", AclPermissionType.ALLOW),
        (AclPermissionType, "deny", AclPermissionType.DENY),
        (PatternType, "Prefixed", PatternType.PREFIXED),
        (PatternType, "literal", PatternType.LITERAL),
        (PatternType, "MATCH", PatternType.MATCH),
    ],
)
def test_kafka_spellings(enum_cls, text, expected):
    assert enum_cls.coerce(text) is expected
    assert enum_cls(text) is expected


@pytest.mark.parametrize(
    "member,camel",
    [
        (AclOperation.DESCRIBE_CONFIGS, "DescribeConfigs"),
        (AclOperation.IDEMPOTENT_WRITE, "IdempotentWrite"),
        (AclOperation.CLUSTER_ACTION, "ClusterAction"),
        (AclOperation.ALTER_CONFIGS, "AlterConfigs"),
        (AclOperation.READ, "Read"),
        (ResourceType.TRANSACTIONAL_ID, "TransactionalId"),
        (ResourceType.DELEGATION_TOKEN, "DelegationToken"),
        (ResourceType.BROKER, "Cluster"),
        (AclPermissionType.ALLOW, "Allow"),
        (PatternType.PREFIXED, "Prefixed"),
    ],
)
def test_camel_name_is_kafka_acls_spelling(member, camel):
    assert member.camel_name == camel


@given(st.sampled_from([m for cls in ALL_ENUMS for m in cls]))
def test_every_spelling_of_every_member_coerces_back(m):
    cls = type(m)
    assert cls.coerce(m) is m
    assert cls.coerce(m.name) is m
    assert cls.coerce(m.name.lower()) is m
    assert cls.coerce(m.name.upper()) is m
    assert cls.coerce(m.camel_name) is m
    assert cls.coerce(m.camel_name.lower()) is m
    assert cls.coerce(int(m)) is m
    assert cls.coerce(m.value) is m


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
def test_no_two_member_names_collide_when_folded(enum_cls):
    # Every spelling is unambiguous: two names never fold to the same key.
    folded = [m.name.replace("_", "").lower() for m in enum_cls]
    assert len(folded) == len(set(folded))


def _assert_names_accepted_values(message: str, enum_cls):
    assert enum_cls.__name__ in message
    for member in enum_cls:
        assert member.name in message
    for member in enum_cls:
        assert str(int(member)) in message


BAD_VALUES = [
    "",
    "   ",
    "READS",
    "something",
    "Topics",
    "3",
    "READ WRITE",
    b"READ",
    -1,
    15,
    99,
    2**31,
    -(2**31),
    None,
    3.5,
    float("nan"),
    [3],
    (3,),
    {"READ"},
    object(),
]


@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
def test_acl_operation_rejects_anything_else_with_a_message_naming_accepted_values(value):
    with pytest.raises(ValueError) as info:
        AclOperation.coerce(value)
    _assert_names_accepted_values(str(info.value), AclOperation)


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("value", ["nope", None, 1000, -5, 2.5], ids=repr)
def test_every_enum_rejects_unknown_values_with_value_error(enum_cls, value):
    with pytest.raises(ValueError) as info:
        enum_cls.coerce(value)
    _assert_names_accepted_values(str(info.value), enum_cls)
    # also through the plain constructor
    with pytest.raises(ValueError):
        enum_cls(value)


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
def test_out_of_range_codes_are_rejected(enum_cls):
    top = max(int(m) for m in enum_cls)
    for code in (-1, top + 1, top + 100, 127, 128, 255):
        with pytest.raises(ValueError):
            enum_cls.coerce(code)


@pytest.mark.parametrize("enum_cls", ALL_ENUMS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("value", [True, False])
def test_bool_is_not_a_code(enum_cls, value):
    # True == 1 == ANY and False == 0 == UNKNOWN if bool were allowed through.
    with pytest.raises(ValueError):
        enum_cls.coerce(value)


def test_bool_rejection_message_names_the_accepted_values():
    with pytest.raises(ValueError) as info:
        AclOperation.coerce(True)
    _assert_names_accepted_values(str(info.value), AclOperation)


@pytest.mark.parametrize("value", [3.0, Decimal(3)], ids=repr)
def test_integral_float_is_not_a_code(value):
    with pytest.raises(ValueError):
        AclOperation.coerce(value)


@pytest.mark.parametrize(
    "enum_cls,foreign",
    [
        (AclOperation, AclPermissionType.ALLOW),
        (AclOperation, ResourceType.TOPIC),
        (ResourceType, AclOperation.READ),
        (PatternType, ResourceType.TOPIC),
        (AclPermissionType, PatternType.LITERAL),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else f"{type(v).__name__}.{v.name}",
)
def test_a_member_of_another_enum_is_not_accepted(enum_cls, foreign):
    with pytest.raises((ValueError, TypeError)):
        enum_cls.coerce(foreign)


@given(st.text(max_size=20))
def test_arbitrary_text_is_either_a_member_or_a_value_error(text):
    try:
        member = AclOperation.coerce(text)
    except ValueError as exc:
        _assert_names_accepted_values(str(exc), AclOperation)
    else:
        assert isinstance(member, AclOperation)
        folded = text.strip().replace("_", "").replace("-", "").lower()
        assert folded == member.name.replace("_", "").lower()


@given(st.integers())
def test_arbitrary_int_is_a_member_iff_it_is_a_code(code):
    if 0 <= code <= 14:
        assert int(AclOperation.coerce(code)) == code
    else:
        with pytest.raises(ValueError):
            AclOperation.coerce(code)


# --------------------------------------------------------------------------------------------
# KIP-430 supported operations and bitfields
# --------------------------------------------------------------------------------------------

OP = AclOperation

EXPECTED_SUPPORTED = {
    ResourceType.TOPIC: {OP.READ, OP.WRITE, OP.CREATE, OP.DESCRIBE, OP.DELETE, OP.ALTER, OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS},
    ResourceType.GROUP: {OP.READ, OP.DESCRIBE, OP.DELETE, OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS},
    ResourceType.CLUSTER: {
        OP.CREATE,
        OP.CLUSTER_ACTION,
        OP.DESCRIBE_CONFIGS,
        OP.ALTER_CONFIGS,
        OP.IDEMPOTENT_WRITE,
        OP.ALTER,
        OP.DESCRIBE,
    },
    ResourceType.TRANSACTIONAL_ID: {OP.DESCRIBE, OP.WRITE},
    ResourceType.DELEGATION_TOKEN: {OP.DESCRIBE},
    ResourceType.USER: {OP.CREATE_TOKENS, OP.DESCRIBE_TOKENS},
}

# Computed by hand: sum of 1 << code.
EXPECTED_BITFIELDS = {
    ResourceType.TOPIC: 3576,  # 8+16+32+64+128+256+1024+2048 == 0b1101_1111_1000
    ResourceType.GROUP: 3400,  # 8+64+256+1024+2048 == 0b1101_0100_1000
    ResourceType.CLUSTER: 8096,  # 32+128+256+512+1024+2048+4096 == 0b1_1111_1010_0000
    ResourceType.TRANSACTIONAL_ID: 272,  # 16+256
    ResourceType.DELEGATION_TOKEN: 256,
    ResourceType.USER: 24576,  # 8192+16384
}


@pytest.mark.parametrize("resource_type", list(EXPECTED_SUPPORTED), ids=lambda t: t.name)
def test_supported_operations_exactly(resource_type):
    ops = supported_operations(resource_type)
    assert isinstance(ops, frozenset)
    assert ops == EXPECTED_SUPPORTED[resource_type]
    assert SUPPORTED_OPERATIONS[resource_type] == EXPECTED_SUPPORTED[resource_type]
    # by name, CamelCase and code too
    assert supported_operations(resource_type.name) == ops
    assert supported_operations(resource_type.camel_name) == ops
    assert supported_operations(int(resource_type)) == ops


def test_supported_operations_covers_exactly_the_concrete_types():
    assert set(SUPPORTED_OPERATIONS) == set(ResourceType) - {ResourceType.ANY, ResourceType.UNKNOWN}
    assert supported_operations("broker") == EXPECTED_SUPPORTED[ResourceType.CLUSTER]


@pytest.mark.parametrize("resource_type", [ResourceType.ANY, ResourceType.UNKNOWN, "any", 0, 1])
def test_supported_operations_rejects_filter_and_unknown_types(resource_type):
    with pytest.raises(ValueError):
        supported_operations(resource_type)


@pytest.mark.parametrize("value", ["nope", 8, None])
def test_supported_operations_rejects_non_types(value):
    with pytest.raises(ValueError):
        supported_operations(value)


@pytest.mark.parametrize("resource_type", list(EXPECTED_BITFIELDS), ids=lambda t: t.name)
def test_supported_sets_as_bitfields(resource_type):
    bits = operations_to_bitfield(supported_operations(resource_type))
    assert bits == EXPECTED_BITFIELDS[resource_type]
    assert bitfield_to_operations(bits) == EXPECTED_SUPPORTED[resource_type]


def test_operations_to_bitfield_examples():
    assert operations_to_bitfield([]) == 0
    assert operations_to_bitfield({OP.READ, OP.WRITE}) == 0b11000 == 24
    assert operations_to_bitfield([OP.READ]) == 8
    assert operations_to_bitfield([OP.DESCRIBE_TOKENS]) == 1 << 14 == 16384
    # names, CamelCase and codes accepted; duplicates are idempotent
    assert operations_to_bitfield(["read", "Write", 3]) == 24
    assert operations_to_bitfield(["DescribeConfigs", "ALTER_CONFIGS"]) == 1024 + 2048
    # any iterable
    assert operations_to_bitfield(op for op in (OP.READ, OP.WRITE)) == 24


@pytest.mark.parametrize("op", [OP.UNKNOWN, OP.ANY, OP.ALL, "any", "All", 0, 1, 2])
def test_operations_to_bitfield_rejects_filter_values(op):
    with pytest.raises(ValueError):
        operations_to_bitfield([OP.READ, op])


@pytest.mark.parametrize("op", ["nope", 15, None])
def test_operations_to_bitfield_rejects_non_operations(op):
    with pytest.raises(ValueError):
        operations_to_bitfield([op])


CONCRETE_OPS = [op for op in AclOperation if op not in (OP.UNKNOWN, OP.ANY, OP.ALL)]


@given(st.frozensets(st.sampled_from(CONCRETE_OPS)))
def test_bitfield_round_trip(ops):
    bits = operations_to_bitfield(ops)
    assert bits == sum(1 << int(op) for op in ops)
    assert 0 <= bits < 2**31  # fits Kafka's int32
    assert bitfield_to_operations(bits) == ops


@given(st.frozensets(st.sampled_from(CONCRETE_OPS)), st.integers(min_value=0, max_value=2**32 - 1))
def test_unknown_bits_are_ignored(ops, noise):
    # Bits 0, 1, 2 (UNKNOWN, ANY, ALL) and 15..31 are not operations.
    noise_mask = 0b111 | (0xFFFFFFFF & ~0x7FFF)
    bits = operations_to_bitfield(ops) | (noise & noise_mask)
    assert bitfield_to_operations(bits) == ops


def test_bitfield_specific_values():
    assert bitfield_to_operations(0) == frozenset()
    assert bitfield_to_operations(0b111) == frozenset()  # UNKNOWN, ANY, ALL bits
    assert bitfield_to_operations(1 << 15) == frozenset()
    assert bitfield_to_operations(1 << 31) == frozenset()
    assert bitfield_to_operations(0x7FFF8000) == frozenset()  # bits 15..30
    assert bitfield_to_operations(24) == {OP.READ, OP.WRITE}
    assert bitfield_to_operations(3576) == EXPECTED_SUPPORTED[ResourceType.TOPIC]
    assert bitfield_to_operations(0x7FFF) == frozenset(CONCRETE_OPS)
    assert isinstance(bitfield_to_operations(24), frozenset)


def test_int32_min_is_kafkas_omitted_marker_and_reads_as_no_operations():
    assert bitfield_to_operations(-2147483648) == frozenset()


def test_negative_int32_reads_its_low_bits():
    # -1 is all 32 bits set in two's complement: every concrete operation.
    assert bitfield_to_operations(-1) == frozenset(CONCRETE_OPS)


@pytest.mark.parametrize("value", ["24", 24.0, None, True, False, [3], b"\x18"], ids=repr)
def test_bitfield_to_operations_rejects_non_int(value):
    with pytest.raises(TypeError):
        bitfield_to_operations(value)


# --------------------------------------------------------------------------------------------
# ResourcePattern
# --------------------------------------------------------------------------------------------


def test_resource_pattern_defaults_to_literal():
    p = ResourcePattern(ResourceType.TOPIC, "orders")
    assert p.resource_type is ResourceType.TOPIC
    assert p.name == "orders"
    assert p.pattern_type is PatternType.LITERAL


def test_resource_pattern_converts_names_and_codes():
    p = ResourcePattern("topic", "orders", "prefixed")
    assert p.resource_type is ResourceType.TOPIC
    assert p.pattern_type is PatternType.PREFIXED
    q = ResourcePattern(2, "orders", 4)
    assert q == p
    r = ResourcePattern("TransactionalId", "tx", "Literal")
    assert r.resource_type is ResourceType.TRANSACTIONAL_ID
    assert r.pattern_type is PatternType.LITERAL
    assert ResourcePattern("broker", CLUSTER_NAME) == ResourcePattern.cluster()


@pytest.mark.parametrize("resource_type", [ResourceType.ANY, "any", 1])
def test_resource_pattern_rejects_any_type(resource_type):
    with pytest.raises(ValueError):
        ResourcePattern(resource_type, "x")


@pytest.mark.parametrize("pattern_type", [PatternType.MATCH, PatternType.ANY, "match", "Any", 1, 2])
def test_resource_pattern_rejects_filter_pattern_types(pattern_type):
    with pytest.raises(ValueError):
        ResourcePattern(ResourceType.TOPIC, "x", pattern_type)


def test_resource_pattern_allows_unknown():
    # Kafka: shouldNotThrowOnUnknownResourceType / shouldNotThrowOnUnknownPatternType
    assert ResourcePattern(ResourceType.UNKNOWN, "foo").resource_type is ResourceType.UNKNOWN
    assert ResourcePattern(ResourceType.TOPIC, "foo", PatternType.UNKNOWN).pattern_type is PatternType.UNKNOWN


@pytest.mark.parametrize("bad", ["nope", 99, None])
def test_resource_pattern_rejects_bad_enum_values(bad):
    with pytest.raises(ValueError):
        ResourcePattern(bad, "x")
    with pytest.raises(ValueError):
        ResourcePattern(ResourceType.TOPIC, "x", bad)


@pytest.mark.parametrize("name", [None, 1, b"x"])
def test_resource_pattern_name_must_be_str(name):
    with pytest.raises(TypeError):
        ResourcePattern(ResourceType.TOPIC, name)


def test_resource_pattern_is_frozen():
    p = ResourcePattern(ResourceType.TOPIC, "orders")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.name = "other"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.pattern_type = PatternType.PREFIXED


def test_resource_pattern_value_equality_and_hash():
    a = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    b = ResourcePattern("TOPIC", "orders", 3)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != ResourcePattern(ResourceType.TOPIC, "orders", PatternType.PREFIXED)
    assert a != ResourcePattern(ResourceType.GROUP, "orders")
    assert a != ResourcePattern(ResourceType.TOPIC, "Orders")
    assert pickle.loads(pickle.dumps(a)) == a


def test_cluster_pattern():
    c = ResourcePattern.cluster()
    assert CLUSTER_NAME == "kafka-cluster"
    assert c == ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
    assert c.resource_type is ResourceType.CLUSTER
    assert c.name == "kafka-cluster"
    assert c.pattern_type is PatternType.LITERAL


def test_wildcard_constants():
    assert WILDCARD_RESOURCE == "*"
    assert WILDCARD_HOST == "*"
    assert WILDCARD_PRINCIPAL == "User:*"


# --------------------------------------------------------------------------------------------
# AccessControlEntry and AclBinding
# --------------------------------------------------------------------------------------------


def test_entry_principal_as_str_or_kafka_principal():
    e1 = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    e2 = AccessControlEntry(KafkaPrincipal("User", "alice"), "*", "read", "allow")
    assert e2.principal == "User:alice"
    assert isinstance(e2.principal, str)
    assert e1 == e2
    assert hash(e1) == hash(e2)
    e3 = AccessControlEntry(KafkaPrincipal("Group", "eng:ops", token_authenticated=True), "10.0.0.1", 3, 3)
    assert e3.principal == "Group:eng:ops"
    assert e3.operation is AclOperation.READ
    assert e3.permission_type is AclPermissionType.ALLOW


@pytest.mark.parametrize("principal", [None, 1, b"User:alice", ("User", "alice")], ids=repr)
def test_entry_principal_must_be_str_or_kafka_principal(principal):
    with pytest.raises(TypeError):
        AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW)


@pytest.mark.parametrize("host", [None, 1, b"*"], ids=repr)
def test_entry_host_must_be_str(host):
    with pytest.raises(TypeError):
        AccessControlEntry("User:alice", host, AclOperation.READ, AclPermissionType.ALLOW)


@pytest.mark.parametrize("op", [AclOperation.ANY, "any", "Any", 1])
def test_entry_rejects_any_operation(op):
    with pytest.raises(ValueError):
        AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW)


@pytest.mark.parametrize("perm", [AclPermissionType.ANY, "any", 1])
def test_entry_rejects_any_permission(perm):
    with pytest.raises(ValueError):
        AccessControlEntry("User:alice", "*", AclOperation.READ, perm)


def test_entry_allows_all_and_unknown():
    # ALL is a real ACL operation; UNKNOWN operation/permission are representable as in Kafka.
    assert AccessControlEntry("User:a", "", AclOperation.ALL, AclPermissionType.ALLOW).operation is AclOperation.ALL
    e = AccessControlEntry("User:a", "", AclOperation.UNKNOWN, AclPermissionType.UNKNOWN)
    assert e.operation is AclOperation.UNKNOWN
    assert e.permission_type is AclPermissionType.UNKNOWN


def test_entry_is_frozen():
    e = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        e.host = "10.0.0.1"


def test_binding_of_flat_constructor():
    b = AclBinding.of("topic", "orders", "prefixed", KafkaPrincipal.user("alice"), "*", "Read", "Allow")
    assert b == AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders", PatternType.PREFIXED),
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    assert b.pattern.resource_type is ResourceType.TOPIC
    assert b.pattern.name == "orders"
    assert b.pattern.pattern_type is PatternType.PREFIXED
    assert b.entry.principal == "User:alice"
    assert b.entry.host == "*"
    assert b.entry.operation is AclOperation.READ
    assert b.entry.permission_type is AclPermissionType.ALLOW
    assert hash(b) == hash(AclBinding.of(2, "orders", 4, "User:alice", "*", 3, 3))


def test_binding_of_validates_like_the_parts():
    with pytest.raises(ValueError):
        AclBinding.of("any", "orders", "literal", "User:alice", "*", "read", "allow")
    with pytest.raises(ValueError):
        AclBinding.of("topic", "orders", "match", "User:alice", "*", "read", "allow")
    with pytest.raises(ValueError):
        AclBinding.of("topic", "orders", "literal", "User:alice", "*", "any", "allow")
    with pytest.raises(ValueError):
        AclBinding.of("topic", "orders", "literal", "User:alice", "*", "read", "any")


def test_binding_parts_are_type_checked():
    entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    pattern = ResourcePattern(ResourceType.TOPIC, "orders")
    with pytest.raises(TypeError):
        AclBinding(pattern.to_filter(), entry)
    with pytest.raises(TypeError):
        AclBinding(pattern, entry.to_filter())
    with pytest.raises(TypeError):
        AclBinding(None, entry)


def test_binding_is_frozen_and_hashable():
    b = AclBinding.of("topic", "orders", "literal", "User:alice", "*", "read", "allow")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        b.entry = None
    assert {b: 1}[AclBinding.of("TOPIC", "orders", 3, "User:alice", "*", 3, 3)] == 1


# --------------------------------------------------------------------------------------------
# Filters: ported from apache/kafka ResourcePatternFilterTest
# --------------------------------------------------------------------------------------------

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED, MATCH, PANY = PatternType.LITERAL, PatternType.PREFIXED, PatternType.MATCH, PatternType.ANY


def rpf(resource_type, name, pattern_type):
    return ResourcePatternFilter(resource_type, name, pattern_type)


def rp(resource_type, name, pattern_type=LITERAL):
    return ResourcePattern(resource_type, name, pattern_type)


@pytest.mark.parametrize(
    "flt,pattern,expected",
    [
        # shouldNotMatchIfDifferentResourceType
        (rpf(TOPIC, "Name", LITERAL), rp(GROUP, "Name", LITERAL), False),
        # shouldNotMatchIfDifferentName
        (rpf(TOPIC, "Different", PREFIXED), rp(TOPIC, "Name", PREFIXED), False),
        # shouldNotMatchIfDifferentNameCase
        (rpf(TOPIC, "NAME", LITERAL), rp(TOPIC, "Name", LITERAL), False),
        # shouldNotMatchIfDifferentPatternType
        (rpf(TOPIC, "Name", LITERAL), rp(TOPIC, "Name", PREFIXED), False),
        # shouldMatchWhereResourceTypeIsAny
        (rpf(ResourceType.ANY, "Name", PREFIXED), rp(TOPIC, "Name", PREFIXED), True),
        # shouldMatchWhereResourceNameIsAny
        (rpf(TOPIC, None, PREFIXED), rp(TOPIC, "Name", PREFIXED), True),
        # shouldMatchWherePatternTypeIsAny
        (rpf(TOPIC, None, PANY), rp(TOPIC, "Name", PREFIXED), True),
        # shouldMatchWherePatternTypeIsMatch
        (rpf(TOPIC, None, MATCH), rp(TOPIC, "Name", PREFIXED), True),
        # shouldMatchLiteralIfExactMatch
        (rpf(TOPIC, "Name", LITERAL), rp(TOPIC, "Name", LITERAL), True),
        # shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeAny
        (rpf(TOPIC, "Name", PANY), rp(TOPIC, "Name", LITERAL), True),
        # shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeMatch
        (rpf(TOPIC, "Name", MATCH), rp(TOPIC, "Name", LITERAL), True),
        # shouldNotMatchLiteralIfNamePrefixed
        (rpf(TOPIC, "Name-something", MATCH), rp(TOPIC, "Name", LITERAL), False),
        # shouldMatchLiteralWildcardIfExactMatch
        (rpf(TOPIC, "*", LITERAL), rp(TOPIC, "*", LITERAL), True),
        # shouldNotMatchLiteralWildcardAgainstOtherName
        (rpf(TOPIC, "Name", LITERAL), rp(TOPIC, "*", LITERAL), False),
        # shouldNotMatchLiteralWildcardTheWayAround
        (rpf(TOPIC, "*", LITERAL), rp(TOPIC, "Name", LITERAL), False),
        # shouldNotMatchLiteralWildcardIfFilterHasPatternTypeOfAny
        (rpf(TOPIC, "Name", PANY), rp(TOPIC, "*", LITERAL), False),
        # shouldMatchLiteralWildcardIfFilterHasPatternTypeOfMatch
        (rpf(TOPIC, "Name", MATCH), rp(TOPIC, "*", LITERAL), True),
        # shouldMatchPrefixedIfExactMatch
        (rpf(TOPIC, "Name", PREFIXED), rp(TOPIC, "Name", PREFIXED), True),
        # shouldNotMatchIfBothPrefixedAndFilterIsPrefixOfResource
        (rpf(TOPIC, "Name", PREFIXED), rp(TOPIC, "Name-something", PREFIXED), False),
        # shouldNotMatchIfBothPrefixedAndResourceIsPrefixOfFilter
        (rpf(TOPIC, "Name-something", PREFIXED), rp(TOPIC, "Name", PREFIXED), False),
        # shouldNotMatchPrefixedIfNamePrefixedAnyFilterTypeIsAny
        (rpf(TOPIC, "Name-something", PANY), rp(TOPIC, "Name", PREFIXED), False),
        # shouldMatchPrefixedIfNamePrefixedAnyFilterTypeIsMatch
        (rpf(TOPIC, "Name-something", MATCH), rp(TOPIC, "Name", PREFIXED), True),
        # --- the brief's MATCH examples ---
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "fo", PREFIXED), True),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "foo", PREFIXED), True),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "foob", PREFIXED), False),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "", PREFIXED), True),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "*", LITERAL), True),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "*", PREFIXED), False),
        (rpf(TOPIC, "*foo", MATCH), rp(TOPIC, "*", PREFIXED), True),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "fo", LITERAL), False),
        (rpf(TOPIC, "foo", MATCH), rp(TOPIC, "foo", LITERAL), True),
        (rpf(TOPIC, "foo", MATCH), rp(GROUP, "foo", LITERAL), False),
        (rpf(TOPIC, "foo", MATCH), rp(GROUP, "*", LITERAL), False),
        (rpf(ResourceType.ANY, "foo", MATCH), rp(GROUP, "f", PREFIXED), True),
        # MATCH is case-sensitive like every name comparison
        (rpf(TOPIC, "Foo", MATCH), rp(TOPIC, "fo", PREFIXED), False),
        # pattern type ANY: exact name equality whatever the stored pattern type
        (rpf(TOPIC, "*", PANY), rp(TOPIC, "*", LITERAL), True),
        (rpf(TOPIC, "*", PANY), rp(TOPIC, "*", PREFIXED), True),
        (rpf(TOPIC, "foo", PANY), rp(TOPIC, "foo", PREFIXED), True),
        (rpf(TOPIC, "foo", PANY), rp(TOPIC, "fo", PREFIXED), False),
        (rpf(TOPIC, "foo", PANY), rp(TOPIC, "foo", PatternType.UNKNOWN), True),
        # a specific type and a name: type and name equal
        (rpf(TOPIC, "*", PREFIXED), rp(TOPIC, "*", PREFIXED), True),
        (rpf(TOPIC, "*", PREFIXED), rp(TOPIC, "*", LITERAL), False),
        (rpf(TOPIC, "foo", PREFIXED), rp(TOPIC, "fo", PREFIXED), False),
        # UNKNOWN filter values match only UNKNOWN stored values
        (rpf(ResourceType.UNKNOWN, None, PANY), rp(ResourceType.UNKNOWN, "x"), True),
        (rpf(ResourceType.UNKNOWN, None, PANY), rp(TOPIC, "x"), False),
        (rpf(TOPIC, None, PatternType.UNKNOWN), rp(TOPIC, "x", PatternType.UNKNOWN), True),
        (rpf(TOPIC, None, PatternType.UNKNOWN), rp(TOPIC, "x", LITERAL), False),
        # MATCH with no name selects every pattern of that type, even UNKNOWN-typed ones
        (rpf(TOPIC, None, MATCH), rp(TOPIC, "x", PatternType.UNKNOWN), True),
        (rpf(TOPIC, None, MATCH), rp(GROUP, "x"), False),
        # empty names are names
        (rpf(TOPIC, "", LITERAL), rp(TOPIC, "", LITERAL), True),
        (rpf(TOPIC, "", PANY), rp(TOPIC, "x", LITERAL), False),
    ],
)
def test_resource_pattern_filter_matches_like_kafka(flt, pattern, expected):
    assert flt.matches(pattern) is expected


def test_match_filter_against_stored_unknown_pattern_type_raises():
    # Kafka: IllegalArgumentException("Unsupported PatternType: UNKNOWN").
    with pytest.raises(ValueError):
        rpf(TOPIC, "foo", MATCH).matches(rp(TOPIC, "foo", PatternType.UNKNOWN))


def test_resource_pattern_filter_defaults_and_conversion():
    f = ResourcePatternFilter()
    assert f.resource_type is ResourceType.ANY
    assert f.name is None
    assert f.pattern_type is PatternType.ANY
    g = ResourcePatternFilter("topic", "x", "match")
    assert g.resource_type is ResourceType.TOPIC
    assert g.pattern_type is PatternType.MATCH
    with pytest.raises(TypeError):
        ResourcePatternFilter("topic", 1, "match")
    with pytest.raises(ValueError):
        ResourcePatternFilter("topics")


def test_filter_is_unknown():
    # Kafka: shouldBeUnknownIfResourceTypeUnknown / shouldBeUnknownIfPatternTypeUnknown
    assert ResourcePatternFilter(ResourceType.UNKNOWN, None, LITERAL).is_unknown()
    assert ResourcePatternFilter(GROUP, None, PatternType.UNKNOWN).is_unknown()
    assert not ResourcePatternFilter(GROUP, None, LITERAL).is_unknown()
    assert AccessControlEntryFilter(None, None, AclOperation.UNKNOWN).is_unknown()
    assert AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.UNKNOWN).is_unknown()
    assert not AccessControlEntryFilter().is_unknown()
    assert AclBindingFilter.of(operation=AclOperation.UNKNOWN).is_unknown()
    assert AclBindingFilter.of(resource_type=ResourceType.UNKNOWN).is_unknown()
    assert not AclBindingFilter.ANY.is_unknown()


# --------------------------------------------------------------------------------------------
# AccessControlEntryFilter
# --------------------------------------------------------------------------------------------

ENTRY = AccessControlEntry("User:alice", "10.0.0.1", AclOperation.READ, AclPermissionType.ALLOW)
WILD_ENTRY = AccessControlEntry("User:*", "*", AclOperation.ALL, AclPermissionType.DENY)


@pytest.mark.parametrize(
    "flt,entry,expected",
    [
        (AccessControlEntryFilter(), ENTRY, True),
        (AccessControlEntryFilter(), WILD_ENTRY, True),
        (AccessControlEntryFilter("User:alice"), ENTRY, True),
        (AccessControlEntryFilter(KafkaPrincipal.user("alice")), ENTRY, True),
        (AccessControlEntryFilter("User:bob"), ENTRY, False),
        (AccessControlEntryFilter("user:alice"), ENTRY, False),  # exact string
        (AccessControlEntryFilter("User:*"), ENTRY, False),  # no wildcard semantics in filters
        (AccessControlEntryFilter("User:*"), WILD_ENTRY, True),
        (AccessControlEntryFilter("User:alice"), WILD_ENTRY, False),
        (AccessControlEntryFilter(None, "10.0.0.1"), ENTRY, True),
        (AccessControlEntryFilter(None, "10.0.0.2"), ENTRY, False),
        (AccessControlEntryFilter(None, "*"), ENTRY, False),  # "*" matches only stored "*"
        (AccessControlEntryFilter(None, "*"), WILD_ENTRY, True),
        (AccessControlEntryFilter(None, "10.0.0.1"), WILD_ENTRY, False),
        (AccessControlEntryFilter(None, None, "read"), ENTRY, True),
        (AccessControlEntryFilter(None, None, AclOperation.WRITE), ENTRY, False),
        (AccessControlEntryFilter(None, None, AclOperation.ALL), ENTRY, False),  # ALL is not ANY
        (AccessControlEntryFilter(None, None, AclOperation.READ), WILD_ENTRY, False),
        (AccessControlEntryFilter(None, None, AclOperation.ALL), WILD_ENTRY, True),
        (AccessControlEntryFilter(None, None, AclOperation.ANY, "allow"), ENTRY, True),
        (AccessControlEntryFilter(None, None, AclOperation.ANY, "deny"), ENTRY, False),
        (AccessControlEntryFilter("User:alice", "10.0.0.1", "Read", "Allow"), ENTRY, True),
        (AccessControlEntryFilter("User:alice", "10.0.0.1", "Read", "Deny"), ENTRY, False),
    ],
)
def test_entry_filter_matches_like_kafka(flt, entry, expected):
    assert flt.matches(entry) is expected


def test_entry_filter_defaults_and_conversion():
    f = AccessControlEntryFilter()
    assert (f.principal, f.host, f.operation, f.permission_type) == (
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    g = AccessControlEntryFilter(KafkaPrincipal("Group", "eng"), "*", "DescribeConfigs", "deny")
    assert g.principal == "Group:eng"
    assert g.operation is AclOperation.DESCRIBE_CONFIGS
    assert g.permission_type is AclPermissionType.DENY
    with pytest.raises(TypeError):
        AccessControlEntryFilter(1)
    with pytest.raises(TypeError):
        AccessControlEntryFilter(None, 1)


# --------------------------------------------------------------------------------------------
# AclBindingFilter: ported from apache/kafka AclBindingTest.testMatching
# --------------------------------------------------------------------------------------------

ACL1 = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "mytopic", PatternType.LITERAL),
    AccessControlEntry("User:ANONYMOUS", "", AclOperation.ALL, AclPermissionType.ALLOW),
)
ACL2 = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "mytopic", PatternType.LITERAL),
    AccessControlEntry("User:*", "", AclOperation.READ, AclPermissionType.ALLOW),
)
ACL3 = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "mytopic2", PatternType.LITERAL),
    AccessControlEntry("User:ANONYMOUS", "127.0.0.1", AclOperation.READ, AclPermissionType.DENY),
)
UNKNOWN_ACL = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "mytopic2", PatternType.LITERAL),
    AccessControlEntry("User:ANONYMOUS", "127.0.0.1", AclOperation.UNKNOWN, AclPermissionType.DENY),
)
ANY_ANONYMOUS = AclBindingFilter(
    ResourcePatternFilter(),
    AccessControlEntryFilter("User:ANONYMOUS", None, AclOperation.ANY, AclPermissionType.ANY),
)
ANY_DENY = AclBindingFilter(
    ResourcePatternFilter(),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.DENY),
)
ANY_MYTOPIC = AclBindingFilter(
    ResourcePatternFilter(ResourceType.TOPIC, "mytopic", PatternType.LITERAL),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)


def test_kafka_acl_binding_matching():
    acl1_copy = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "mytopic", PatternType.LITERAL),
        AccessControlEntry("User:ANONYMOUS", "", AclOperation.ALL, AclPermissionType.ALLOW),
    )
    assert ACL1 == acl1_copy and acl1_copy == ACL1
    assert ACL1 != ACL2 and ACL2 != ACL1
    for acl in (ACL1, ACL2, ACL3, UNKNOWN_ACL):
        assert AclBindingFilter.ANY.matches(acl)
        assert AclBindingFilter.ANY != acl
    assert AclBindingFilter.ANY == AclBindingFilter()
    assert ANY_ANONYMOUS.matches(ACL1)
    assert not ANY_ANONYMOUS.matches(ACL2)
    assert ANY_ANONYMOUS.matches(ACL3)
    assert not ANY_DENY.matches(ACL1)
    assert not ANY_DENY.matches(ACL2)
    assert ANY_DENY.matches(ACL3)
    assert ANY_MYTOPIC.matches(ACL1)
    assert ANY_MYTOPIC.matches(ACL2)
    assert not ANY_MYTOPIC.matches(ACL3)
    assert ANY_ANONYMOUS.matches(UNKNOWN_ACL)
    assert ANY_DENY.matches(UNKNOWN_ACL)
    assert not ANY_MYTOPIC.matches(UNKNOWN_ACL)
    assert UNKNOWN_ACL == UNKNOWN_ACL


def test_binding_filter_needs_both_parts_to_match():
    b = AclBinding.of("topic", "orders", "literal", "User:alice", "*", "read", "allow")
    assert AclBindingFilter.of("topic", "orders", "literal", "User:alice").matches(b)
    assert not AclBindingFilter.of("topic", "orders", "literal", "User:bob").matches(b)
    assert not AclBindingFilter.of("group", "orders", "literal", "User:alice").matches(b)
    assert AclBindingFilter.of(name="orders").matches(b)
    assert not AclBindingFilter.of(name="order").matches(b)
    assert AclBindingFilter.of(pattern_type="match", name="orders").matches(b)


def test_binding_filter_of_and_defaults():
    f = AclBindingFilter.of()
    assert f == AclBindingFilter.ANY == AclBindingFilter()
    assert f.pattern_filter == ResourcePatternFilter()
    assert f.entry_filter == AccessControlEntryFilter()
    g = AclBindingFilter.of("topic", "orders", "prefixed", KafkaPrincipal.user("alice"), "*", "read", "allow")
    assert g == AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.PREFIXED),
        AccessControlEntryFilter("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    with pytest.raises(TypeError):
        AclBindingFilter(ResourcePattern(ResourceType.TOPIC, "x"))
    with pytest.raises(TypeError):
        AclBindingFilter(ResourcePatternFilter(), ENTRY)


def test_to_filter_of_each_part():
    b = AclBinding.of("group", "g", "prefixed", "User:alice", "10.0.0.1", "describe", "deny")
    pf = b.pattern.to_filter()
    assert pf == ResourcePatternFilter(ResourceType.GROUP, "g", PatternType.PREFIXED)
    ef = b.entry.to_filter()
    assert ef == AccessControlEntryFilter("User:alice", "10.0.0.1", AclOperation.DESCRIBE, AclPermissionType.DENY)
    assert b.to_filter() == AclBindingFilter(pf, ef)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

# Small alphabets so that names, prefixes, hosts and principals collide often.
names = st.text("ab*", max_size=3)
stored_resource_types = st.sampled_from([t for t in ResourceType if t is not ResourceType.ANY])
stored_pattern_types = st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED, PatternType.UNKNOWN])
principals = st.sampled_from(["User:alice", "User:bob", "User:*", "Group:eng", "User:"])
hosts = st.sampled_from(["*", "10.0.0.1", "0:0:0:0:0:0:0:1", ""])
stored_operations = st.sampled_from([op for op in AclOperation if op is not AclOperation.ANY])
stored_permissions = st.sampled_from([p for p in AclPermissionType if p is not AclPermissionType.ANY])

patterns = st.builds(ResourcePattern, stored_resource_types, names, stored_pattern_types)
entries = st.builds(AccessControlEntry, principals, hosts, stored_operations, stored_permissions)
bindings = st.builds(AclBinding, patterns, entries)

pattern_filters = st.builds(
    ResourcePatternFilter,
    st.sampled_from(list(ResourceType)),
    st.none() | names,
    st.sampled_from(list(PatternType)),
)
entry_filters = st.builds(
    AccessControlEntryFilter,
    st.none() | principals,
    st.none() | hosts,
    st.sampled_from(list(AclOperation)),
    st.sampled_from(list(AclPermissionType)),
)


@given(bindings)
def test_to_filter_matches_its_own_binding(binding):
    assert binding.to_filter().matches(binding)
    assert binding.pattern.to_filter().matches(binding.pattern)
    assert binding.entry.to_filter().matches(binding.entry)


@given(bindings, bindings)
def test_to_filter_matches_another_binding_iff_equal(a, b):
    assert a.to_filter().matches(b) == (a == b)
    if a == b:
        assert hash(a) == hash(b)


@given(bindings)
def test_an_all_any_filter_matches_every_binding(binding):
    assert AclBindingFilter.ANY.matches(binding)
    assert AclBindingFilter().matches(binding)
    assert AclBindingFilter.of().matches(binding)
    assert AclBindingFilter.of(
        ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    ).matches(binding)


@given(bindings, st.sampled_from([PatternType.ANY, PatternType.MATCH]))
def test_a_none_name_filter_of_the_bindings_type_matches(binding, pattern_type):
    assert ResourcePatternFilter(binding.pattern.resource_type, None, pattern_type).matches(binding.pattern)


@given(patterns, names)
def test_pattern_type_any_with_a_name_is_exact_name_equality(pattern, name):
    assert ResourcePatternFilter(ResourceType.ANY, name, PatternType.ANY).matches(pattern) == (pattern.name == name)


@given(patterns, names, stored_pattern_types)
def test_specific_pattern_type_with_a_name_needs_type_and_name_equal(pattern, name, pattern_type):
    expected = pattern.pattern_type == pattern_type and pattern.name == name
    assert ResourcePatternFilter(pattern.resource_type, name, pattern_type).matches(pattern) == expected


@given(stored_resource_types, names, names)
def test_match_against_literal_is_equal_or_wildcard(resource_type, stored, name):
    pattern = ResourcePattern(resource_type, stored, PatternType.LITERAL)
    expected = stored == name or stored == "*"
    assert ResourcePatternFilter(resource_type, name, PatternType.MATCH).matches(pattern) == expected
    assert ResourcePatternFilter(ResourceType.ANY, name, PatternType.MATCH).matches(pattern) == expected


@given(stored_resource_types, names, names)
def test_match_against_prefixed_is_startswith(resource_type, stored, name):
    pattern = ResourcePattern(resource_type, stored, PatternType.PREFIXED)
    expected = name.startswith(stored)
    assert ResourcePatternFilter(resource_type, name, PatternType.MATCH).matches(pattern) == expected


@given(patterns, pattern_filters)
def test_resource_type_gate(pattern, flt):
    assume(not (flt.pattern_type is PatternType.MATCH and flt.name is not None
                and pattern.pattern_type is PatternType.UNKNOWN))
    if flt.resource_type not in (ResourceType.ANY, pattern.resource_type):
        assert not flt.matches(pattern)


@given(bindings, pattern_filters, entry_filters)
def test_binding_filter_is_the_conjunction_of_its_parts(binding, pf, ef):
    assume(not (pf.pattern_type is PatternType.MATCH and pf.name is not None
                and binding.pattern.pattern_type is PatternType.UNKNOWN))
    expected = pf.matches(binding.pattern) and ef.matches(binding.entry)
    assert AclBindingFilter(pf, ef).matches(binding) == expected


@given(entries, entry_filters)
def test_entry_filter_fieldwise(entry, flt):
    expected = (
        (flt.principal is None or flt.principal == entry.principal)
        and (flt.host is None or flt.host == entry.host)
        and (flt.operation is AclOperation.ANY or flt.operation == entry.operation)
        and (flt.permission_type is AclPermissionType.ANY or flt.permission_type == entry.permission_type)
    )
    assert flt.matches(entry) == expected
