"""The compiled ACL index: one immutable snapshot that every authorization question reads.

Per resource type the index keeps three maps of resource patterns, the literal names, the
literal ``*`` and the prefixes, and each pattern keeps, per principal, the operation bitmasks
its ACLs allow and deny (for any host, and per specific host). Answering "may P do OP on R"
is then a handful of dict lookups, whatever the number of ACLs.

A change never edits a snapshot: :meth:`AclIndex.apply` rebuilds the patterns it touches and
returns a new snapshot that shares everything else with the old one. The maps of a type are
persistent hash tries (``immutables.Map``: a change copies a few small nodes, not the map), so
one ACL change costs the same with ten ACLs or a million. Readers keep the snapshot they
started with, so they never lock and never see half an update.
"""

from __future__ import annotations

import contextlib
import gc
from bisect import bisect_left, insort
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple, Sequence

import immutables
from attrs import field, frozen

from kafkasec.acl import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkasec.context import AuthorizationResult

if TYPE_CHECKING:
    from kafkasec.authorizer.decision import AuthorizationDecision

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


# Indexed by operation code: a tuple lookup is the cheapest thing Python does per ACL.
_ALLOW_MASKS = tuple(_allow_mask(op) for op in AclOperation)
_DENY_MASKS = tuple(_deny_mask(op) for op in AclOperation)
_ALLOW, _DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl_masks(binding: AclBinding) -> tuple[int, int]:
    """(allowed, denied) operation bitmasks of one ACL, implications included."""
    entry = binding.entry
    if entry.permission_type is _ALLOW:
        return _ALLOW_MASKS[entry.operation], 0
    if entry.permission_type is _DENY:
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
            principal, host = entry.principal, entry.host
            by_principal_host.setdefault((principal, host), []).append(stored)
            if entry.permission_type is _ALLOW:
                allow, deny = _ALLOW_MASKS[entry.operation], 0
            elif entry.permission_type is _DENY:
                allow, deny = 0, _DENY_MASKS[entry.operation]
            else:
                continue
            grant = grants.get(principal)
            if grant is None:
                grant = grants[principal] = [0, 0, None]
            if host == WILDCARD_HOST:
                grant[0] |= allow
                grant[1] |= deny
            else:
                per_host = grant[2]
                if per_host is None:
                    per_host = grant[2] = {}
                old_allow, old_deny = per_host.get(host, (0, 0))
                per_host[host] = (old_allow | allow, old_deny | deny)
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


def permitted(allow, deny):
    """Kafka's rule that a DENY beats any ALLOW: of the operations some matching ALLOW grants,
    those no matching DENY refuses. The one place the rule is written: authorize, authorized
    operations, explain, who-can and the grid compiler (on numpy arrays of masks) all read it."""
    return allow & ~deny


def combined_masks(entries: Sequence[PatternEntry], principals: Sequence[str], host: str | None) -> tuple[int, int]:
    """(allow, deny) over every applicable pattern: what one request may and may not do there."""
    allow = deny = 0
    for entry in entries:
        entry_allow, entry_deny = entry.masks(principals, host)
        allow |= entry_allow
        deny |= entry_deny
    return allow, deny


class TypeIndex:
    """All patterns of one resource type: literal names, the literal ``*``, and prefixes."""

    __slots__ = (
        "literal",
        "wildcard",
        "prefixed",
        "prefix_lengths",
        "prefix_length_counts",
        "_literal_get",
        "_prefixed_get",
        "group_counts",
        "_summaries",
        "by_resource_type_answers",
        "_permitted",
        "decisions",
    )

    def __init__(
        self,
        literal: immutables.Map,
        prefixed: immutables.Map,
        group_counts: immutables.Map,
        prefix_length_counts: dict[int, int],
    ):
        self.literal = literal  # name -> PatternEntry
        self.prefixed = prefixed  # prefix -> PatternEntry
        # Bound once: the lookups below are the hottest lines of every authorization.
        self._literal_get, self._prefixed_get = literal.get, prefixed.get
        self.wildcard = literal.get(WILDCARD_RESOURCE)
        # Only the lengths that some prefix has are worth slicing the resource name at; counted
        # per length so that a change need not look at every prefix.
        self.prefix_length_counts = prefix_length_counts
        self.prefix_lengths = tuple(sorted(prefix_length_counts))
        # How many patterns have ACLs of each (principal, host): a group absent here has none.
        self.group_counts = group_counts
        self._summaries: dict[tuple[tuple[str, str], AclOperation], TypeSummary] = {}
        # authorize_by_resource_type answers per (groups with ACLs, operation), for this snapshot.
        self.by_resource_type_answers: dict[tuple[tuple[tuple[str, str], ...], AclOperation], AuthorizationResult] = {}
        # permitted_operations answers, for this snapshot of this type: a type's TypeIndex is
        # replaced whenever one of its ACLs changes, so an answer here is never stale.
        self._permitted: dict[tuple[tuple[str, ...], str | None, str], int | None] = {}
        # The decisions (with their rules) given in this snapshot, for a client that asks again.
        self.decisions: dict[tuple, AuthorizationDecision] = {}

    def carry_over(self, previous: TypeIndex, touched: set[tuple[str, str]], changes) -> None:
        """Bring the previous snapshot's summaries and answers along, so that a change does not
        make the next questions cold: untouched groups keep theirs, touched groups get theirs
        patched with ``changes`` (pattern, new entry or None); answers that read a touched group
        are dropped (they are recomputed from the summaries, without a walk)."""
        summaries = {}
        for key, summary in previous._summaries.items():
            group, operation = key
            if group not in touched:
                summaries[key] = summary
            elif group in self.group_counts:
                summaries[key] = summary.patched(group, operation, changes)
        self._summaries = summaries
        self.by_resource_type_answers = {
            key: answer
            for key, answer in previous.by_resource_type_answers.items()
            if not any(group in touched for group in key[0])
        }

    def permitted_operations(self, name: str, principals: tuple[str, ...], host: str | None) -> int | None:
        """The operations (a mask, bit ``1 << code``) that the ACLs on the resource ``name`` let a
        request of ``principals`` from ``host`` perform; None when no ACL is on the resource at
        all (then allow.everyone.if.no.acl.found decides). Remembered per snapshot: a broker's
        clients ask the same questions again and again."""
        key = (principals, host, name)
        try:
            return self._permitted[key]
        except KeyError:
            pass
        entries = self.matching_entries(name)
        mask = permitted(*combined_masks(entries, principals, host)) if entries else None
        remember(self._permitted, key, mask)
        return mask

    def matching_entries(self, name: str) -> list[PatternEntry]:
        """The patterns that apply to the resource ``name``: its literal, ``*``, its prefixes.

        A PREFIXED ``*`` is a prefix like any other (it matches names starting with ``*``),
        and a LITERAL name is never a prefix.
        """
        found = []
        entry = self._literal_get(name)
        if entry is not None:
            found.append(entry)
        if self.wildcard is not None and name != WILDCARD_RESOURCE:
            found.append(self.wildcard)
        lengths = self.prefix_lengths
        if lengths:
            size = len(name)
            prefixed_get = self._prefixed_get
            for length in lengths:
                if length > size:
                    break
                entry = prefixed_get(name[:length])
                if entry is not None:
                    found.append(entry)
        return found

    def entries(self) -> Iterator[PatternEntry]:
        yield from self.literal.values()
        yield from self.prefixed.values()

    def type_summaries(self, groups: Sequence[tuple[str, str]], operation: AclOperation) -> list[TypeSummary]:
        """What the ACLs of each (principal, host) group say about ``operation`` on this type.

        ``groups`` are groups that have ACLs of this type (see ``group_counts``).

        Groups not yet summarized in this snapshot are built together in one pass over the
        patterns, then cached: racing readers may both build one, but they store equal values.
        """
        summaries = self._summaries
        missing = [group for group in groups if (group, operation) not in summaries]
        if missing:
            found: dict[tuple[str, str], list] = {group: [] for group in missing}
            for entry in self.entries():
                by_group = entry.by_principal_host
                for group, acls in found.items():
                    for stored in by_group.get(group, ()):
                        acls.append((entry.pattern, stored.binding.entry))
            for group, acls in found.items():
                remember(summaries, (group, operation), TypeSummary.of(acls, operation))
        return [s for group in groups if (s := summaries.get((group, operation))) is not None]


class TypeSummary:
    """Input to Kafka's authorizeByResourceType: what one (principal, host) group of ACLs
    allows and denies for one operation (or ALL) across a resource type."""

    __slots__ = (
        "wildcard_allow",
        "wildcard_deny",
        "allow_literal",
        "allow_prefixed",
        "deny_literal",
        "deny_prefixed",
        "_deny_prefix_lengths",
        "_undominated",
    )

    def __init__(self, wildcard_allow, wildcard_deny, allow_literal, allow_prefixed, deny_literal, deny_prefixed):
        self.wildcard_allow, self.wildcard_deny = wildcard_allow, wildcard_deny
        self.allow_literal, self.allow_prefixed = frozenset(allow_literal), frozenset(allow_prefixed)
        self.deny_literal, self.deny_prefixed = frozenset(deny_literal), frozenset(deny_prefixed)
        self._deny_prefix_lengths = tuple(sorted({len(name) for name in self.deny_prefixed}))
        self._undominated = None

    def dominated(self, name: str, literal: bool) -> bool:
        """Kafka's rule against this group's DENYs: a literal loses to the same literal or a
        denied prefix of it; a prefix loses to a denied prefix of it (itself included)."""
        if literal and name in self.deny_literal:
            return True
        deny_prefixed = self.deny_prefixed
        for length in self._deny_prefix_lengths:
            if length > len(name):
                return False
            if name[:length] in deny_prefixed:
                return True
        return False

    def undominated(self) -> tuple[list[str], list[str]]:
        """The sorted literal and prefixed ALLOWs that no DENY of this group dominates: the only
        candidates this group can offer (built on first use; patched, not rebuilt, on changes)."""
        if self._undominated is None:
            self._undominated = (
                sorted(name for name in self.allow_literal if not self.dominated(name, True)),
                sorted(name for name in self.allow_prefixed if not self.dominated(name, False)),
            )
        return self._undominated

    @classmethod
    def of(cls, acls, operation: AclOperation) -> TypeSummary:
        """The summary of ``acls``, (pattern, entry) pairs of one group."""
        return cls._collect(acls, operation, False, False, set(), set(), set(), set())

    def patched(self, group: tuple[str, str], operation: AclOperation, changes) -> TypeSummary:
        """This summary after a change: ``changes`` pairs each changed pattern with its new
        entry (or None). A name's place in the sets depends on its own pattern's ACLs only, so
        the changed names are taken out and their new ACLs put back: no walk over the type."""
        wildcard_allow, wildcard_deny = self.wildcard_allow, self.wildcard_deny
        allow_literal, allow_prefixed = set(self.allow_literal), set(self.allow_prefixed)
        deny_literal, deny_prefixed = set(self.deny_literal), set(self.deny_prefixed)
        acls: list[tuple[ResourcePattern, AccessControlEntry]] = []
        changed_literal, changed_prefixed = set(), set()
        for pattern, entry in changes:
            name = pattern.name
            if pattern.pattern_type is PatternType.LITERAL:
                changed_literal.add(name)
                allow_literal.discard(name)
                deny_literal.discard(name)
                if name == WILDCARD_RESOURCE:
                    wildcard_allow = wildcard_deny = False
            else:
                changed_prefixed.add(name)
                allow_prefixed.discard(name)
                deny_prefixed.discard(name)
            if entry is not None:
                acls.extend((pattern, stored.binding.entry) for stored in entry.by_principal_host.get(group, ()))
        patched = self._collect(
            acls, operation, wildcard_allow, wildcard_deny, allow_literal, allow_prefixed, deny_literal, deny_prefixed
        )
        if self._undominated is not None:
            patched._undominated = patched._patch_undominated(self, changed_literal, changed_prefixed)
        return patched

    def _patch_undominated(self, before: TypeSummary, changed_literal, changed_prefixed):
        """``before``'s candidates, brought up to date with the changed names (a name's own
        ACLs changed) and with the DENY prefixes added or removed (they rule whole ranges)."""
        added_prefixes = self.deny_prefixed - before.deny_prefixed
        removed_prefixes = before.deny_prefixed - self.deny_prefixed
        result = []
        for candidates, allowed, changed, literal in (
            (before._undominated[0], self.allow_literal, changed_literal, True),
            (before._undominated[1], self.allow_prefixed, changed_prefixed, False),
        ):
            candidates = list(candidates)
            for name in changed:
                _remove_sorted(candidates, name)
            for prefix in added_prefixes:
                del candidates[bisect_left(candidates, prefix):_prefix_end(candidates, prefix)]
            recheck = set(changed)
            for prefix in removed_prefixes:
                recheck.update(name for name in allowed if name.startswith(prefix))
            for name in recheck:
                if name in allowed and not self.dominated(name, literal):
                    _remove_sorted(candidates, name)
                    insort(candidates, name)
            result.append(candidates)
        return tuple(result)

    @classmethod
    def _collect(
        cls, acls, operation, wildcard_allow, wildcard_deny, allow_literal, allow_prefixed, deny_literal, deny_prefixed
    ) -> TypeSummary:
        for pattern, entry in acls:
            if entry.operation is not operation and entry.operation is not AclOperation.ALL:
                continue
            name = pattern.name
            literal = pattern.pattern_type is PatternType.LITERAL
            if entry.permission_type is _DENY:
                if literal and name == WILDCARD_RESOURCE:
                    wildcard_deny = True
                (deny_literal if literal else deny_prefixed).add(name)
            elif entry.permission_type is _ALLOW:
                if literal and name == WILDCARD_RESOURCE:
                    wildcard_allow = True
                else:
                    (allow_literal if literal else allow_prefixed).add(name)
        return cls(wildcard_allow, wildcard_deny, allow_literal, allow_prefixed, deny_literal, deny_prefixed)


def has_undominated_allow(summaries: Sequence[TypeSummary]) -> bool:
    """Kafka's rule over the union of the groups: is some allowed pattern not dominated?

    A candidate must survive its own group's DENYs (precomputed per summary) and every other
    group's. Against other groups' DENY prefixes, whole ranges of the sorted candidates are cut
    out at once when there are fewer prefixes than candidates. Stops at the first winner.
    """
    for summary in summaries:
        others = [o for o in summaries if o is not summary and (o.deny_literal or o.deny_prefixed)]
        for candidates, literal in zip(summary.undominated(), (True, False)):
            if candidates and _survivor(candidates, literal, others):
                return True
    return False


def _survivor(candidates: list[str], literal: bool, others: Sequence[TypeSummary]) -> bool:
    prefixes = [prefix for other in others for prefix in other.deny_prefixed]
    if len(prefixes) < len(candidates):
        # Few prefixes, many candidates: cut each prefix's range out, then look at what is left.
        ranges = sorted((bisect_left(candidates, p), _prefix_end(candidates, p)) for p in prefixes)
        remaining = _gaps(ranges, len(candidates))
        remaining = (candidates[i] for start, stop in remaining for i in range(start, stop))
        for name in remaining:
            if not (literal and any(name in other.deny_literal for other in others)):
                return True
        return False
    return any(not any(other.dominated(name, literal) for other in others) for name in candidates)


def _gaps(ranges: list[tuple[int, int]], size: int):
    """The index ranges of [0, size) not covered by the sorted ``ranges``."""
    position = 0
    for start, stop in ranges:
        if start > position:
            yield position, start
        position = max(position, stop)
    if position < size:
        yield position, size


def _prefix_end(names: list[str], prefix: str) -> int:
    """The index just past the names in sorted ``names`` that start with ``prefix`` (they are
    contiguous from ``bisect_left(names, prefix)``, so their end is found by bisection too)."""
    low, high = bisect_left(names, prefix), len(names)
    while low < high:
        middle = (low + high) // 2
        if names[middle].startswith(prefix):
            low = middle + 1
        else:
            high = middle
    return low


def _remove_sorted(names: list[str], name: str) -> None:
    index = bisect_left(names, name)
    if index < len(names) and names[index] == name:
        del names[index]


# The start of all three maps of a type, whose keys and values differ: hence Any.
_EMPTY_MAP: immutables.Map[Any, Any] = immutables.Map()

FREEZE_AFTER = 100_000
"""A build that leaves more new objects than this behind is frozen out of the cyclic GC."""

MEMO_LIMIT = 65536
"""Per-snapshot memos hold at most this many answers: a broker with more distinct
(principal, host) pairs than that starts the memo afresh rather than grow without bound."""


def remember(memo: dict, key, value) -> None:
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a snapshot is built.

    Building allocates millions of small acyclic objects; each full collection would walk every
    ACL already in memory, which made a bulk load quadratic-ish. Nothing built here is cyclic.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] > FREEZE_AFTER:
            # Move what was just built out of the collector's sight before collections resume:
            # otherwise they rescan millions of immutable ACL objects (seconds, charged to a
            # reader's request). Frozen objects are still freed by reference counting.
            gc.freeze()
        if was_enabled:
            gc.enable()


class GrantRow(NamedTuple):
    """What the ACLs of one (pattern, principal, host) allow and deny, as bit masks: bit
    ``1 << code`` of each operation, with Kafka's implications applied (an ALLOW of READ sets
    DESCRIBE's bit too; a DENY of ALL sets every bit). ``host`` is ``*`` for ACLs on any host."""

    resource_type: ResourceType
    pattern_type: PatternType
    name: str
    principal: str
    host: str
    allow: int
    deny: int


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
            literal = (_EMPTY_MAP if old is None else old.literal).mutate()
            prefixed = (_EMPTY_MAP if old is None else old.prefixed).mutate()
            group_counts = (_EMPTY_MAP if old is None else old.group_counts).mutate()
            length_counts = {} if old is None else dict(old.prefix_length_counts)
            touched: set[tuple[str, str]] = set()
            changes = []
            for pattern in patterns:
                is_prefix = pattern.pattern_type is not PatternType.LITERAL
                table = prefixed if is_prefix else literal
                previous = table.pop(pattern.name, None)
                if previous is not None and is_prefix:
                    length = len(pattern.name)
                    length_counts[length] -= 1
                    if not length_counts[length]:
                        del length_counts[length]
                if previous is not None:
                    count -= len(previous.acls)
                    for group in previous.by_principal_host:
                        touched.add(group)
                        group_counts[group] -= 1
                        if not group_counts[group]:
                            del group_counts[group]
                acls = changed[pattern]
                entry = None
                if acls:
                    entry = table[pattern.name] = PatternEntry(pattern, acls)
                    count += len(acls)
                    if is_prefix:
                        length_counts[len(pattern.name)] = length_counts.get(len(pattern.name), 0) + 1
                    for group in entry.by_principal_host:
                        touched.add(group)
                        group_counts[group] = group_counts.get(group, 0) + 1
                changes.append((pattern, entry))
            literal_map, prefixed_map = literal.finish(), prefixed.finish()
            group_count_map = group_counts.finish()
            if literal_map or prefixed_map:
                types[resource_type] = new = TypeIndex(literal_map, prefixed_map, group_count_map, length_counts)
                if old is not None:
                    new.carry_over(old, touched, changes)
            else:
                types.pop(resource_type, None)
        return AclIndex(types, count)

    def entry(self, pattern: ResourcePattern) -> PatternEntry | None:
        type_index = self.types.get(pattern.resource_type)
        if type_index is None:
            return None
        table = type_index.literal if pattern.pattern_type is PatternType.LITERAL else type_index.prefixed
        return table.get(pattern.name)

    def export_grants(self) -> Iterator[GrantRow]:
        """The index as a flat table, the public way to read it (the grid compiler does): one
        row per pattern, principal and host with ACLs, literal patterns (``*`` included) before
        prefixes within each resource type."""
        for resource_type, type_index in self.types.items():
            for pattern_type, entries in ((PatternType.LITERAL, type_index.literal), (PatternType.PREFIXED, type_index.prefixed)):
                for name, entry in entries.items():
                    for principal, (allow, deny, per_host) in entry.grants.items():
                        if allow or deny:
                            yield GrantRow(resource_type, pattern_type, name, principal, WILDCARD_HOST, allow, deny)
                        for host, (host_allow, host_deny) in (per_host or {}).items():
                            yield GrantRow(resource_type, pattern_type, name, principal, host, host_allow, host_deny)

    def __iter__(self) -> Iterator[StoredAcl]:
        for type_index in self.types.values():
            for pattern_entry in type_index.entries():
                yield from pattern_entry.acls

    def __len__(self) -> int:
        return self.acl_count


EMPTY_INDEX = AclIndex({}, 0)
