"""The compiled ACL index: one immutable snapshot that every authorization question reads.

Per resource type the index keeps three maps of resource patterns, the literal names, the
literal ``*`` and the prefixes, and each pattern keeps, per principal, the operation bitmasks
its ACLs allow and deny (for any host, and per specific host). Answering "may P do OP on R"
is then a handful of dict lookups, whatever the number of ACLs.

A change never edits a snapshot: :meth:`AclIndex.apply` copies the maps of the resource types
it touches, rebuilds the patterns it touches, and returns a new snapshot. Readers keep the one
they started with, so they never lock and never see half an update.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from attrs import field, frozen

from kafkasec.acl import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

ALL_OPERATIONS_MASK = sum(1 << op for op in AclOperation)

# Kafka's StandardAuthorizerData: an ALLOW for any of these also allows DESCRIBE (or
# DESCRIBE_CONFIGS). A DENY implies nothing beyond its own operation, except DENY ALL.
_IMPLIES_DESCRIBE = (AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER)
_IMPLIES_DESCRIBE_CONFIGS = (AclOperation.ALTER_CONFIGS,)


def _allow_mask(op: AclOperation) -> int:
    if op is AclOperation.ALL:
        return ALL_OPERATIONS_MASK
    mask = 1 << op
    if op in _IMPLIES_DESCRIBE:
        mask |= 1 << AclOperation.DESCRIBE
    if op in _IMPLIES_DESCRIBE_CONFIGS:
        mask |= 1 << AclOperation.DESCRIBE_CONFIGS
    return mask


def _deny_mask(op: AclOperation) -> int:
    return ALL_OPERATIONS_MASK if op is AclOperation.ALL else 1 << op


_ALLOW_MASKS = {op: _allow_mask(op) for op in AclOperation}
_DENY_MASKS = {op: _deny_mask(op) for op in AclOperation}


def acl_masks(binding: AclBinding) -> tuple[int, int]:
    """(allowed, denied) operation bitmasks of one ACL, implications included."""
    entry = binding.entry
    if entry.permission_type is AclPermissionType.ALLOW:
        return _ALLOW_MASKS[entry.operation], 0
    if entry.permission_type is AclPermissionType.DENY:
        return 0, _DENY_MASKS[entry.operation]
    return 0, 0


@frozen
class StoredAcl:
    """An ACL as the index holds it: with its id and where it came from (its provenance)."""

    acl_id: str
    binding: AclBinding
    source: str = field(default="store")


class PatternEntry:
    """The ACLs of one resource pattern, and per principal the operations they allow and deny.

    ``grants[principal] = (allow, deny, per_host)`` where allow/deny are the masks of the ACLs
    with host ``*`` and ``per_host`` (or None) maps a specific host to its own (allow, deny).
    """

    __slots__ = ("pattern", "acls", "grants", "by_principal_host")

    def __init__(self, pattern: ResourcePattern, acls: tuple[StoredAcl, ...]):
        self.pattern = pattern
        self.acls = acls
        grants: dict[str, list] = {}
        by_principal_host: dict[tuple[str, str], list[StoredAcl]] = {}
        for stored in acls:
            entry = stored.binding.entry
            by_principal_host.setdefault((entry.principal, entry.host), []).append(stored)
            allow, deny = acl_masks(stored.binding)
            grant = grants.get(entry.principal)
            if grant is None:
                grant = grants[entry.principal] = [0, 0, None]
            if entry.host == WILDCARD_HOST:
                grant[0] |= allow
                grant[1] |= deny
            else:
                per_host = grant[2]
                if per_host is None:
                    per_host = grant[2] = {}
                old_allow, old_deny = per_host.get(entry.host, (0, 0))
                per_host[entry.host] = (old_allow | allow, old_deny | deny)
        self.grants = {principal: tuple(grant) for principal, grant in grants.items()}
        # For naming the ACL that decided, without scanning every ACL of a busy pattern.
        self.by_principal_host = {key: tuple(group) for key, group in by_principal_host.items()}

    def masks(self, principals: Sequence[str], host: str | None) -> tuple[int, int]:
        """(allow, deny) over the ACLs whose principal is one of ``principals`` and host matches."""
        allow = deny = 0
        grants = self.grants
        for principal in principals:
            grant = grants.get(principal)
            if grant is not None:
                allow |= grant[0]
                deny |= grant[1]
                per_host = grant[2]
                if per_host is not None:
                    host_masks = per_host.get(host)
                    if host_masks is not None:
                        allow |= host_masks[0]
                        deny |= host_masks[1]
        return allow, deny


class TypeIndex:
    """All patterns of one resource type: literal names, the literal ``*``, and prefixes."""

    __slots__ = ("literal", "wildcard", "prefixed", "prefix_lengths", "_by_principal_host", "_summaries")

    def __init__(self, literal: dict[str, PatternEntry], prefixed: dict[str, PatternEntry]):
        self.literal = literal
        self.prefixed = prefixed
        self.wildcard = literal.get(WILDCARD_RESOURCE)
        # Only the lengths that some prefix has are worth slicing the resource name at.
        self.prefix_lengths = tuple(sorted({len(name) for name in prefixed}))
        self._by_principal_host = None
        self._summaries = {}

    def matching_entries(self, name: str) -> list[PatternEntry]:
        """The patterns that apply to the resource ``name``: its literal, ``*``, its prefixes.

        A PREFIXED ``*`` is a prefix like any other (it matches names starting with ``*``),
        and a LITERAL name is never a prefix.
        """
        found = []
        entry = self.literal.get(name)
        if entry is not None:
            found.append(entry)
        if self.wildcard is not None and name != WILDCARD_RESOURCE:
            found.append(self.wildcard)
        prefixed = self.prefixed
        if prefixed:
            size = len(name)
            for length in self.prefix_lengths:
                if length > size:
                    break
                entry = prefixed.get(name[:length])
                if entry is not None:
                    found.append(entry)
        return found

    def entries(self) -> Iterator[PatternEntry]:
        yield from self.literal.values()
        yield from self.prefixed.values()

    def by_principal_host(self) -> dict[tuple[str, str], list[tuple[PatternType, str, AclOperation, AclPermissionType]]]:
        """This type's ACLs grouped by (principal, host), built on first use per snapshot."""
        groups = self._by_principal_host
        if groups is None:
            groups = {}
            for pattern_entry in self.entries():
                pattern = pattern_entry.pattern
                for stored in pattern_entry.acls:
                    entry = stored.binding.entry
                    groups.setdefault((entry.principal, entry.host), []).append(
                        (pattern.pattern_type, pattern.name, entry.operation, entry.permission_type)
                    )
            self._by_principal_host = groups
        return groups

    def type_summary(self, principal: str, host: str, operation: AclOperation) -> TypeSummary | None:
        """What the ACLs of one (principal, host) say about ``operation`` on this whole type."""
        key = (principal, host, operation)
        try:
            return self._summaries[key]
        except KeyError:
            pass
        acls = self.by_principal_host().get((principal, host))
        summary = None if acls is None else TypeSummary.build(acls, operation)
        # Racing readers may both compute this; they store equal values, so no lock is needed.
        self._summaries[key] = summary
        return summary


class TypeSummary:
    """Input to Kafka's authorizeByResourceType for one (principal, host, operation) group.

    ``undominated`` keeps the ALLOWed patterns that no DENY of this same group dominates; the
    caller checks them against the DENYs of the other groups that apply to the request.
    """

    __slots__ = ("wildcard_allow", "wildcard_deny", "deny_literal", "deny_prefixed", "undominated")

    def __init__(self, wildcard_allow, wildcard_deny, deny_literal, deny_prefixed, undominated):
        self.wildcard_allow = wildcard_allow
        self.wildcard_deny = wildcard_deny
        self.deny_literal = deny_literal
        self.deny_prefixed = deny_prefixed
        self.undominated = undominated

    @classmethod
    def build(cls, acls, operation: AclOperation) -> TypeSummary:
        wildcard_allow = wildcard_deny = False
        allow_literal, allow_prefixed, deny_literal, deny_prefixed = set(), set(), set(), set()
        for pattern_type, name, acl_operation, permission in acls:
            if acl_operation is not operation and acl_operation is not AclOperation.ALL:
                continue
            literal = pattern_type is PatternType.LITERAL
            if permission is AclPermissionType.DENY:
                if literal and name == WILDCARD_RESOURCE:
                    wildcard_deny = True
                (deny_literal if literal else deny_prefixed).add(name)
            elif permission is AclPermissionType.ALLOW:
                if literal and name == WILDCARD_RESOURCE:
                    wildcard_allow = True
                else:
                    (allow_literal if literal else allow_prefixed).add(name)
        deny_literal, deny_prefixed = frozenset(deny_literal), frozenset(deny_prefixed)
        undominated = tuple(
            (PatternType.LITERAL, name)
            for name in allow_literal
            if not is_dominated(PatternType.LITERAL, name, deny_literal, deny_prefixed)
        ) + tuple(
            (PatternType.PREFIXED, name)
            for name in allow_prefixed
            if not is_dominated(PatternType.PREFIXED, name, deny_literal, deny_prefixed)
        )
        return cls(wildcard_allow, wildcard_deny, deny_literal, deny_prefixed, undominated)


def is_dominated(pattern_type: PatternType, name: str, deny_literal, deny_prefixed) -> bool:
    """Kafka's rule: an allowed literal loses to the same literal denied or to a denied prefix
    of it; an allowed prefix loses to a denied prefix of it (itself included)."""
    if pattern_type is PatternType.LITERAL and name in deny_literal:
        return True
    if deny_prefixed:
        for length in range(1, len(name) + 1):
            if name[:length] in deny_prefixed:
                return True
    return False


class AclIndex:
    """An immutable snapshot of every ACL, compiled for lookups."""

    __slots__ = ("types", "acl_count")

    def __init__(self, types: dict[ResourceType, TypeIndex], acl_count: int):
        self.types = types
        self.acl_count = acl_count

    @classmethod
    def build(cls, acls: Iterable[StoredAcl]) -> AclIndex:
        by_pattern: dict[ResourcePattern, list[StoredAcl]] = {}
        for stored in acls:
            by_pattern.setdefault(stored.binding.pattern, []).append(stored)
        return cls({}, 0)._with_patterns({p: tuple(a) for p, a in by_pattern.items()})

    def apply(self, added: Sequence[StoredAcl] = (), removed: Sequence[StoredAcl] = ()) -> AclIndex:
        """A new snapshot with ``added`` ACLs in and ``removed`` ones (matched by id) out."""
        removed_ids: dict[ResourcePattern, set[str]] = {}
        for stored in removed:
            removed_ids.setdefault(stored.binding.pattern, set()).add(stored.acl_id)
        added_by_pattern: dict[ResourcePattern, list[StoredAcl]] = {}
        for stored in added:
            added_by_pattern.setdefault(stored.binding.pattern, []).append(stored)
        changed = {}
        for pattern in removed_ids.keys() | added_by_pattern.keys():
            old = self.entry(pattern)
            kept = () if old is None else tuple(
                a for a in old.acls if a.acl_id not in removed_ids.get(pattern, ())
            )
            changed[pattern] = kept + tuple(added_by_pattern.get(pattern, ()))
        return self._with_patterns(changed)

    def _with_patterns(self, changed: dict[ResourcePattern, tuple[StoredAcl, ...]]) -> AclIndex:
        types = dict(self.types)
        count = self.acl_count
        by_type: dict[ResourceType, list[ResourcePattern]] = {}
        for pattern in changed:
            by_type.setdefault(pattern.resource_type, []).append(pattern)
        for resource_type, patterns in by_type.items():
            old = types.get(resource_type)
            literal = {} if old is None else dict(old.literal)
            prefixed = {} if old is None else dict(old.prefixed)
            for pattern in patterns:
                table = literal if pattern.pattern_type is PatternType.LITERAL else prefixed
                previous = table.pop(pattern.name, None)
                if previous is not None:
                    count -= len(previous.acls)
                acls = changed[pattern]
                if acls:
                    table[pattern.name] = PatternEntry(pattern, acls)
                    count += len(acls)
            if literal or prefixed:
                types[resource_type] = TypeIndex(literal, prefixed)
            else:
                types.pop(resource_type, None)
        return AclIndex(types, count)

    def entry(self, pattern: ResourcePattern) -> PatternEntry | None:
        type_index = self.types.get(pattern.resource_type)
        if type_index is None:
            return None
        table = type_index.literal if pattern.pattern_type is PatternType.LITERAL else type_index.prefixed
        return table.get(pattern.name)

    def __iter__(self) -> Iterator[StoredAcl]:
        for type_index in self.types.values():
            for pattern_entry in type_index.entries():
                yield from pattern_entry.acls

    def __len__(self) -> int:
        return self.acl_count


EMPTY_INDEX = AclIndex({}, 0)
