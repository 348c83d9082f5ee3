"""Kafka's ACL model: enums with Kafka's codes, patterns, entries, bindings and their filters.

The filter rules (``matches``) are Kafka's ``ResourcePatternFilter``, ``AccessControlEntryFilter``
and ``AclBindingFilter`` to the letter, because delete and describe requests depend on them.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from attrs import field, frozen, validators

from kafkasec._enums import KafkaEnum
from kafkasec.principals.principal import KafkaPrincipal, acl_principal

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class AclOperation(KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourceType(KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    BROKER = 4  # confluent-kafka's name for the cluster resource; an alias, not a new member
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


ResourcePatternType = PatternType

# KIP-430: what each concrete resource type can be authorized for (Kafka's
# AclEntry.supportedOperations). Authorized-operations answers never leave this set.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}

_NOT_IN_BITFIELDS = frozenset({AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL})
BITFIELD_OPERATIONS = tuple(op for op in AclOperation if op not in _NOT_IN_BITFIELDS)
"""The operations a KIP-430 bitfield can hold (every concrete one), in code order."""


def supported_operations(resource_type: ResourceType | str | int) -> frozenset[AclOperation]:
    """The operations KIP-430 reports for ``resource_type`` (a concrete type, not ANY/UNKNOWN)."""
    coerced = _resource_type(resource_type)
    try:
        return SUPPORTED_OPERATIONS[coerced]
    except KeyError:
        raise ValueError(f"{coerced.name} is not a concrete resource type") from None


def operations_to_bitfield(operations: Iterable[AclOperation | str | int]) -> int:
    """KIP-430's int32 bitfield: bit ``1 << code`` for each operation."""
    bits = 0
    for op in operations:
        op = AclOperation.coerce(op)
        if op in _NOT_IN_BITFIELDS:
            raise ValueError(f"{op.name} is a filter value, not an operation that can be authorized")
        bits |= 1 << op
    return bits


def bitfield_to_operations(bits: int) -> frozenset[AclOperation]:
    """The operations in a KIP-430 bitfield; unknown bits and UNKNOWN/ANY/ALL are ignored.

    Like Kafka's admin client, so the "omitted" marker (INT32_MIN) reads as no operations.
    """
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise TypeError(f"bitfield must be an int, not {type(bits).__name__}")
    return frozenset(op for op in BITFIELD_OPERATIONS if bits & (1 << op))


def _principal_string(value: object) -> str:
    if isinstance(value, KafkaPrincipal):
        text = acl_principal(value)
        if text is None:
            raise ValueError(
                f"no ACL can name the principal of type {value.principal_type!r} and name {value.name!r}: "
                "Kafka reads an ACL's principal up to its first ':', so its type cannot contain one"
            )
        return text
    if not isinstance(value, str):
        raise TypeError(f"principal must be a str such as 'User:alice' or a KafkaPrincipal, not {value!r}")
    return value


def _optional_principal_string(value: object) -> str | None:
    return None if value is None else _principal_string(value)


# The enums' converters, as named functions: attrs' mypy plugin takes a converter's argument
# type as the init argument's type, and cannot read one from a classmethod such as ResourceType.coerce.
def _resource_type(value: ResourceType | str | int) -> ResourceType:
    return ResourceType.coerce(value)


def _pattern_type(value: PatternType | str | int) -> PatternType:
    return PatternType.coerce(value)


def _operation(value: AclOperation | str | int) -> AclOperation:
    return AclOperation.coerce(value)


def _permission_type(value: AclPermissionType | str | int) -> AclPermissionType:
    return AclPermissionType.coerce(value)


def _not(*forbidden):
    def check(instance, attribute, value):
        if value in forbidden:
            raise ValueError(f"{attribute.name} must not be {value.name}")

    return check


_is_str = validators.instance_of(str)
_optional_str = validators.optional(_is_str)


@frozen(cache_hash=True)
class ResourcePattern:
    """A resource an ACL applies to: a type, a name and how the name matches (LITERAL or PREFIXED)."""

    resource_type: ResourceType = field(
        converter=_resource_type, validator=_not(ResourceType.ANY)
    )
    name: str = field(validator=_is_str)
    pattern_type: PatternType = field(
        default=PatternType.LITERAL,
        converter=_pattern_type,
        validator=_not(PatternType.MATCH, PatternType.ANY),
    )

    @classmethod
    def cluster(cls) -> ResourcePattern:
        """The cluster resource, which Kafka always names ``kafka-cluster``."""
        return cls(ResourceType.CLUSTER, CLUSTER_NAME)

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)


@frozen(cache_hash=True)
class AccessControlEntry:
    """Who (principal, host) may or may not (permission type) do what (operation)."""

    principal: str = field(converter=_principal_string)
    host: str = field(validator=_is_str)
    operation: AclOperation = field(converter=_operation, validator=_not(AclOperation.ANY))
    permission_type: AclPermissionType = field(
        converter=_permission_type, validator=_not(AclPermissionType.ANY)
    )

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)


@frozen(cache_hash=True)
class AclBinding:
    """An ACL: a resource pattern bound to an access control entry."""

    pattern: ResourcePattern = field(validator=validators.instance_of(ResourcePattern))
    entry: AccessControlEntry = field(validator=validators.instance_of(AccessControlEntry))

    @classmethod
    def of(
        cls,
        resource_type,
        name: str,
        pattern_type,
        principal,
        host: str,
        operation,
        permission_type,
    ) -> AclBinding:
        """Build from the seven flat fields, in confluent-kafka's ``AclBinding`` order."""
        return cls(
            ResourcePattern(resource_type, name, pattern_type),
            AccessControlEntry(principal, host, operation, permission_type),
        )

    def to_filter(self) -> AclBindingFilter:
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())


@frozen
class ResourcePatternFilter:
    """Selects resource patterns: ANY type, a None name and ANY pattern type match everything."""

    resource_type: ResourceType = field(default=ResourceType.ANY, converter=_resource_type)
    name: str | None = field(default=None, validator=_optional_str)
    pattern_type: PatternType = field(default=PatternType.ANY, converter=_pattern_type)

    def is_unknown(self) -> bool:
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if (
            self.pattern_type is not PatternType.ANY
            and self.pattern_type is not PatternType.MATCH
            and self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type is PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        # MATCH: which stored patterns would apply to a resource named self.name.
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        raise ValueError(f"cannot match a stored pattern of type {pattern.pattern_type.name}")


@frozen
class AccessControlEntryFilter:
    """Selects entries: None principal/host and ANY operation/permission match everything.

    Every other value must be equal: the host ``*`` matches only entries stored with host ``*``.
    """

    principal: str | None = field(default=None, converter=_optional_principal_string)
    host: str | None = field(default=None, validator=_optional_str)
    operation: AclOperation = field(default=AclOperation.ANY, converter=_operation)
    permission_type: AclPermissionType = field(
        default=AclPermissionType.ANY, converter=_permission_type
    )

    def is_unknown(self) -> bool:
        return (
            self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != entry.operation:
            return False
        return (
            self.permission_type is AclPermissionType.ANY
            or self.permission_type == entry.permission_type
        )


@frozen
class AclBindingFilter:
    """Selects ACLs: a binding matches when both its pattern and its entry match."""

    ANY: ClassVar[AclBindingFilter]
    """The filter that matches every ACL (assigned once the class exists)."""

    pattern_filter: ResourcePatternFilter = field(
        factory=ResourcePatternFilter, validator=validators.instance_of(ResourcePatternFilter)
    )
    entry_filter: AccessControlEntryFilter = field(
        factory=AccessControlEntryFilter, validator=validators.instance_of(AccessControlEntryFilter)
    )

    @classmethod
    def of(
        cls,
        resource_type=ResourceType.ANY,
        name: str | None = None,
        pattern_type=PatternType.ANY,
        principal=None,
        host: str | None = None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    ) -> AclBindingFilter:
        """Build from the seven flat fields, in confluent-kafka's ``AclBindingFilter`` order."""
        return cls(
            ResourcePatternFilter(resource_type, name, pattern_type),
            AccessControlEntryFilter(principal, host, operation, permission_type),
        )

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)


AclBindingFilter.ANY = AclBindingFilter()
