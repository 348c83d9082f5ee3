"""What a plugin's own rule is about, and the cases the contract asks about it in every run.

Random questions over the strategies' small alphabet never name ``prod-`` nor ask as
``ServiceAccount:ci``, so a rule on a name prefix, or on a principal type, would be asked about
by luck at best. The contract therefore asks, in every run and before its random examples, the
fixed cases :func:`contract_cases` builds from a :class:`Vocabulary`: the names, prefixes and
principals of the plugin's settings and ACLs, and those its contract class declares.

A question is ``(principal, host, operation, resource type, resource name)``, as in
:mod:`kafkasec.testing.strategies`. This module imports neither pytest nor hypothesis.
"""

from __future__ import annotations

import re

from attrs import field, frozen, validators

from kafkasec import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kafkasec.acl import CLUSTER_NAME, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, supported_operations

OTHER_TYPE_PRINCIPAL = "ServiceAccount:ci"
"""A principal of a type kafkasec itself never builds: a plugin must answer for it too."""
PRINCIPALS = ("User:alice", "User:admin", "Group:eng", OTHER_TYPE_PRINCIPAL)
"""Who every fixed case asks as, besides the vocabulary's principals: a user, the kit's super
user, a group and a principal of another type."""
HOST = "10.0.0.1"
NAME_NO_RULE_IS_ABOUT = "orders"
UNDER_A_PREFIX = "x"
"""Appended to each vocabulary name, for a longer name under it taken as a prefix."""
NAMED_RESOURCE_TYPES = (
    ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN,
    ResourceType.USER,
)

_PRINCIPAL = re.compile(r"[A-Za-z]\w*:\S+")
# Kafka's legal topic name: a setting's path or network (which has '/') is not a name a rule is about.
_RESOURCE_NAME = re.compile(r"[A-Za-z0-9._-]+")


def _principal(instance, attribute, value) -> None:
    for principal in value:
        if not isinstance(principal, str) or not _PRINCIPAL.fullmatch(principal):
            raise ValueError(f"{attribute.name}: {principal!r} is not a principal such as 'User:alice' (Type:name)")


def _distinct(items) -> tuple[str, ...]:
    if isinstance(items, str):  # ("prod-") is a string, not a tuple of one
        raise TypeError(f"a tuple of strings, not the string {items!r}: write ({items!r},)")
    return tuple(dict.fromkeys(items))


@frozen
class Vocabulary:
    """The resource names (each also taken as a prefix) and principals (``Type:name``) a
    plugin's own rule is about, so that the contract asks about them. Declare what the contract
    cannot find in your settings or ACLs (a rule on a name written in your code, a group file's
    members) as ``vocabulary = Vocabulary(resource_names=("prod-",), principals=("ServiceAccount:ci",))``
    on your contract class."""

    resource_names: tuple[str, ...] = field(
        default=(), converter=_distinct,
        validator=validators.deep_iterable(validators.and_(validators.instance_of(str), validators.min_len(1))),
    )
    principals: tuple[str, ...] = field(default=(), converter=_distinct, validator=_principal)

    def __or__(self, other: Vocabulary) -> Vocabulary:
        return Vocabulary(self.resource_names + other.resource_names, self.principals + other.principals)

    def __bool__(self) -> bool:
        return bool(self.resource_names or self.principals)

    @classmethod
    def of_plugin(cls, security, plugin) -> Vocabulary:
        """The names and principals in ``plugin``'s own settings (``string`` and ``list``
        kinds, as ``security.config`` sets them or by default) and in the ACLs of ``security``
        (a security with the plugin and no ACLs of its own holds those the plugin contributes)."""
        items: list[str] = []
        for impl in security.plugin_manager.hook.kafkasec_settings.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            for setting in impl.function() or ():
                if setting.kind in ("string", "list"):  # a password is a secret, and the other kinds are no names
                    value = setting.value(security.config)
                    items.extend([value] if isinstance(value, str) else value or ())
        names = [item for item in items if _RESOURCE_NAME.fullmatch(item)]
        principals = [item for item in items if _PRINCIPAL.fullmatch(item)]
        for binding in security.acls():
            pattern, principal = binding.pattern, binding.entry.principal
            if pattern.resource_type is not ResourceType.CLUSTER and pattern.name != WILDCARD_RESOURCE:
                names.append(pattern.name)
            if not principal.endswith(":*"):
                principals.append(principal)
        return cls(names, principals)


Question = tuple[str, str, AclOperation, ResourceType, str]


@frozen
class ContractCase:
    """One fixed case: ``acls`` (described by ``acls_described``) and the ``asked`` questions of
    one principal, from :data:`HOST`: every supported operation on every resource."""

    acls_described: str
    acls: tuple[AclBinding, ...]
    asked: tuple[Question, ...]

    def __str__(self) -> str:
        principal, host = self.asked[0][:2]
        return f"{principal} from {host}, {self.acls_described}"


def _acls(resource_types, principals, patterns) -> tuple[AclBinding, ...]:
    """ALL allowed to each of ``principals`` on each ``(name, pattern type)`` of each type, and
    on the cluster."""
    bindings = [
        AclBinding.of(resource_type, name, pattern_type, principal, "*", AclOperation.ALL, AclPermissionType.ALLOW)
        for principal in principals for resource_type in resource_types for name, pattern_type in patterns
    ]
    bindings += [
        AclBinding.of(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, principal, "*", AclOperation.ALL,
                      AclPermissionType.ALLOW)
        for principal in principals
    ]
    return tuple(bindings)


def contract_cases(vocabulary: Vocabulary) -> list[ContractCase]:
    """The fixed cases: each principal (:data:`PRINCIPALS` and the vocabulary's) asks about
    every supported operation on the cluster and on each named resource type's
    :data:`NAME_NO_RULE_IS_ABOUT`, vocabulary names and names under them, with no ACLs, with
    ALL allowed to ``User:*`` (any principal) everywhere, and with ALL allowed to the
    vocabulary's principals on its names (as prefixes). So a plugin's rule fires in some actions
    of one batch and not in others, for a principal of each type, every run."""
    names = _distinct([NAME_NO_RULE_IS_ABOUT, *(
        name + suffix for name in vocabulary.resource_names for suffix in ("", UNDER_A_PREFIX)
    )])
    resources = [(resource_type, name) for name in names for resource_type in NAMED_RESOURCE_TYPES]
    resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    every = [(WILDCARD_RESOURCE, PatternType.LITERAL)]
    acl_sets = [
        ("with no ACLs", ()),
        (f"with ALL allowed to {WILDCARD_PRINCIPAL} on every resource",
         _acls(NAMED_RESOURCE_TYPES, [WILDCARD_PRINCIPAL], every)),
    ]
    if vocabulary:
        acl_sets.append((
            "with ALL allowed to the vocabulary's principals on its names (as prefixes)",
            _acls(NAMED_RESOURCE_TYPES, vocabulary.principals or [WILDCARD_PRINCIPAL],
                  [(name, PatternType.PREFIXED) for name in vocabulary.resource_names] or every),
        ))
    return [
        ContractCase(described, acls, tuple(
            (principal, HOST, operation, resource_type, name)
            for resource_type, name in resources for operation in sorted(supported_operations(resource_type))
        ))
        for described, acls in acl_sets for principal in _distinct([*PRINCIPALS, *vocabulary.principals])
    ]


__all__ = [
    "HOST", "NAMED_RESOURCE_TYPES", "NAME_NO_RULE_IS_ABOUT", "OTHER_TYPE_PRINCIPAL", "PRINCIPALS", "UNDER_A_PREFIX",
    "ContractCase", "Question", "Vocabulary", "contract_cases",
]
