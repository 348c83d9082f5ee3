"""The vectorized evaluator: KIP-430 authorized-operations bitfields for many rows at once.

:class:`CompiledAcls` is a picklable copy of an authorizer's ACL index, laid out for numpy: the
resource patterns numbered, and every (principal, host, pattern) that has ACLs as one sorted
int64 key with its allow and deny masks. :meth:`CompiledAcls.authorized_operations` then
answers rows of (principal, host, resource type, resource name) with the int32 bitfield that
``StandardAuthorizer.authorized_operations`` gives for each, without a Python loop per row:

1. each distinct resource is classified once: the patterns that match it (its literal name,
   ``*``, its prefixes), as the index's ``matching_entries`` finds them, by Arrow hash lookups
   of the distinct names (and of their first N bytes for each prefix length);
2. each row is expanded to its resource's patterns, and for the four principal/host keys that
   can hold ACLs for it (its own principal and ``User:*``, each on host ``*`` and on its own
   host) the masks are found by binary search in the key array;
3. the masks are OR-ed back per row, and Kafka's rules finish the answer: DENY beats ALLOW, a
   resource with no ACLs follows ``allow.everyone.if.no.acl.found``, super users get every
   supported operation.

The cost grows with rows x patterns per resource (usually one to three), not with the number of
ACLs (that only deepens the binary search), and the principal-specific part stays sparse at
pattern level.

Principals are expanded as the authorizer expands them (plugins such as ``kafkasec_groupfile``
add ``Group:eng`` to its members): :class:`PrincipalExpansion` asks the authorizer, on the
driver, which other ACL principals apply to each principal of a grid, and the compiled ACLs
carry the answer, so that executors need neither the plugins nor their files. A row's ACLs are
then its own, its groups' and ``User:*``'s, each on host ``*`` and on its host.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafkasec.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    PatternType,
    ResourceType,
    operations_to_bitfield,
    supported_operations,
)
from kafkasec.authorizer.index import AclIndex, permitted
from kafkasec.authorizer.standard import StandardAuthorizer
from kafkasec.context import RequestContext, canonical_principal, java_host_address
from kafkasec.principals.principal import KafkaPrincipal

_NO_HOST = -1


_SUPPORTED = {
    rt: operations_to_bitfield(supported_operations(rt)) for rt in ResourceType if rt not in (ResourceType.UNKNOWN, ResourceType.ANY)
}


def ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[starts[i], starts[i] + counts[i])`` laid end to end, as two arrays: for each
    element, the ``i`` of its range and its value (CSR rows expanded without a Python loop)."""
    which = np.repeat(np.arange(len(counts)), counts)
    offsets = np.arange(len(which)) - np.repeat(np.cumsum(counts) - counts, counts)
    return which, np.repeat(starts, counts) + offsets


EXPANSION_HOST = "0.0.0.0"
"""The client address of the request context a principal is expanded with: expansion is a
function of the principal (docs/grids.md), asked once per principal, not per host."""


@attrs.frozen
class PrincipalExpansion:
    """Which other ACL principals apply to each principal of a grid, as the authorizer's
    principal expander (the ``kafkasec_expand_principal`` plugins) answers: ``groups[p]`` for
    every principal ``p`` asked (``Type:name``, as :func:`canonical_principal` writes it), its
    own ACL name and ``User:*`` left out (an empty tuple: none)."""

    groups: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, authorizer: StandardAuthorizer, principals: Iterable[str]) -> PrincipalExpansion:
        """Ask ``authorizer`` (whose ``principal_expander`` is set) about each distinct principal
        once, through :meth:`StandardAuthorizer.principal_keys`, the function ``authorize``
        reads, with a context of the principal from :data:`EXPANSION_HOST`."""
        groups: dict[str, tuple[str, ...]] = {}
        for text in dict.fromkeys(principals):
            principal = KafkaPrincipal.parse(text)
            own = canonical_principal(principal)
            if own in groups:
                continue
            keys = authorizer.principal_keys(RequestContext(principal, EXPANSION_HOST))
            groups[own] = tuple(key for key in keys if key != own and key != WILDCARD_PRINCIPAL)
        return cls(groups)


class CompiledAcls:
    """An ACL index, super users, ``allow.everyone.if.no.acl.found`` and the expansion of the
    principals it will be asked about, compiled for numpy.

    Build it with :meth:`from_authorizer` (on the driver); it pickles small (arrays and dicts of
    names), so Spark can broadcast it once and each Python worker can keep it.
    """

    def __init__(self, index: AclIndex, super_users: Sequence[str] = (), allow_everyone_if_no_acl_found: bool = False,
                 expansion: PrincipalExpansion | None = None):
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = bool(allow_everyone_if_no_acl_found)
        self.expansion = expansion
        """None when the authorizer expands no principal; else each asked principal's groups."""
        self.acl_count = len(index)
        # Per resource type: literal name -> pattern id, the '*' pattern id, prefix -> id.
        self._literal: dict[int, dict[str, int]] = {}
        self._wildcard: dict[int, int] = {}
        self._prefixed: dict[int, dict[str, int]] = {}
        principals: dict[str, int] = {}
        hosts: dict[str, int] = {WILDCARD_HOST: 0}
        names_by_kind: dict[tuple, dict[str, int]] = {}  # (resource type, pattern type) -> its table's names
        grants: tuple[list[int], ...] = ([], [], [], [], [])  # principal, host, pattern, allow, deny
        principal_of, host_of, pattern_of, allow_of, deny_of = grants
        pattern_count = 0
        # One pass, a dict lookup per field: the report compiles 10,000 ACLs per page it writes.
        for resource_type, pattern_type, name, principal, host, allow, deny in index.export_grants():
            ids = names_by_kind.get((resource_type, pattern_type))
            if ids is None:
                table = self._literal if pattern_type is PatternType.LITERAL else self._prefixed
                ids = names_by_kind[(resource_type, pattern_type)] = table.setdefault(int(resource_type), {})
            pattern = ids.get(name)
            if pattern is None:
                ids[name] = pattern = pattern_count
                pattern_count += 1
            p = principals.get(principal)
            if p is None:
                p = principals[principal] = len(principals)
            h = hosts.get(host)
            if h is None:
                h = hosts[host] = len(hosts)
            principal_of.append(p)
            host_of.append(h)
            pattern_of.append(pattern)
            allow_of.append(allow)
            deny_of.append(deny)
        for code in set(self._literal) | set(self._prefixed):
            literal = self._literal.setdefault(code, {})
            self._prefixed.setdefault(code, {})
            if WILDCARD_RESOURCE in literal:
                self._wildcard[code] = literal[WILDCARD_RESOURCE]
        self._principals = principals
        self._hosts = hosts
        # Per expanded principal, the ids of its groups that some ACL names (the others add nothing).
        self._group_ids = {} if expansion is None else {
            principal: tuple(principals[group] for group in groups if group in principals)
            for principal, groups in expansion.groups.items()
        }
        self.pattern_count = pattern_count
        grant_array = np.array(grants, dtype=np.int64).reshape(5, -1).T
        keys = self._key(grant_array[:, 0], grant_array[:, 1], grant_array[:, 2])
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._allow = grant_array[order, 3]
        self._deny = grant_array[order, 4]
        self._wildcard_principal = principals.get(WILDCARD_PRINCIPAL, -1)

    @classmethod
    def from_authorizer(cls, authorizer: StandardAuthorizer, principals: Iterable[str] = ()) -> CompiledAcls:
        """The authorizer's current snapshot, super users and default, compiled; when it expands
        principals, with the expansion of ``principals`` (``Type:name``), the only principals the
        result may then be asked about (:meth:`encode_principals`)."""
        expansion = None if authorizer.principal_expander is None else PrincipalExpansion.of(authorizer, principals)
        return cls(authorizer.index, sorted(authorizer.super_users), authorizer.allow_everyone_if_no_acl_found, expansion)

    def __repr__(self) -> str:
        return (
            f"CompiledAcls({self.acl_count} ACLs, {self.pattern_count} patterns, "
            f"{len(self._principals)} principals, {len(self._keys)} grant keys)"
        )

    def _key(self, principal, host, pattern):
        return (principal * len(self._hosts) + host) * max(self.pattern_count, 1) + pattern

    # ------------------------------------------------------------------ evaluation

    def authorized_operations(self, principals, hosts, resource_types, resource_names) -> np.ndarray:
        """The KIP-430 bitfield (int32) of each row; the four inputs are equal-length sequences
        or Arrow arrays: principals as ``Type:name``, client hosts as Java prints them, resource
        type codes (or names), resource names."""
        principals, hosts, names = (string_column(values, label) for values, label in (
            (principals, "principals"), (hosts, "hosts"), (resource_names, "resource names")))
        types = type_codes(resource_types)
        rows = len(principals)
        if not (len(hosts) == len(names) == len(types) == rows):
            raise ValueError("principals, hosts, resource types and resource names must have the same length")
        principal_ids, is_super = self.encode_principals(principals)
        host_ids = self.encode_hosts(hosts)
        resource_ids, class_ptr, class_patterns = self.classify(types, names)
        return self.evaluate_ids(principal_ids, host_ids, is_super, types, resource_ids, class_ptr, class_patterns)

    def evaluate_ids(self, principal_ids, host_ids, is_super, types, resource_ids, class_ptr, class_patterns) -> np.ndarray:
        """The bitfields of rows given as ids: principal ids (-1: named in no ACL; one per row, or
        a row of ids per row as :meth:`encode_principals` gives them), host ids (-1: named in no
        ACL), super-user flags, type codes, and resource ids into the CSR
        ``class_ptr``/``class_patterns`` of pattern ids (as :meth:`classify` makes them)."""
        allow, deny = self.masks_ids(principal_ids, host_ids, resource_ids, class_ptr, class_patterns)
        has_acls = class_ptr[resource_ids + 1] > class_ptr[resource_ids]
        return self.decide(allow, deny, has_acls, is_super, types)

    def masks_ids(self, principal_ids, host_ids, resource_ids, class_ptr, class_patterns) -> tuple[np.ndarray, np.ndarray]:
        """Per row (as :meth:`evaluate_ids` takes them) the allow and deny operation masks (int64)
        of every ACL that applies: the principal's (its groups' too) and ``User:*``'s, on host
        ``*`` and the row's host, on each pattern of the row's resource."""
        rows = len(principal_ids)
        counts = class_ptr[resource_ids + 1] - class_ptr[resource_ids]
        row_of, positions = ranges(class_ptr[resource_ids], counts)
        total = len(row_of)
        patterns = class_patterns[positions]
        allow = np.zeros(total, dtype=np.int64)
        deny = np.zeros(total, dtype=np.int64)
        members, row_host = np.asarray(principal_ids).reshape(rows, -1)[row_of], host_ids[row_of]
        wildcard = np.full(total, self._wildcard_principal, dtype=np.int64)
        for principal in (*members.T, wildcard):
            for host in (np.zeros(total, dtype=np.int64), row_host):
                self._or_masks(principal, host, patterns, allow, deny)
        row_allow = np.zeros(rows, dtype=np.int64)
        row_deny = np.zeros(rows, dtype=np.int64)
        if total:
            has_acls = counts > 0
            first = (np.cumsum(counts) - counts)[has_acls]
            row_allow[has_acls] = np.bitwise_or.reduceat(allow, first)
            row_deny[has_acls] = np.bitwise_or.reduceat(deny, first)
        return row_allow, row_deny

    def decide(self, allow, deny, has_acls, is_super, types) -> np.ndarray:
        """The bitfields (int32) of rows from their OR-ed allow and deny masks, as Kafka decides:
        DENY beats ALLOW, a resource with no ACLs (``has_acls`` false) follows
        ``allow.everyone.if.no.acl.found``, super users get every operation the type supports."""
        supported = _SUPPORTED_ARRAY[types]
        result = permitted(allow, deny) & supported
        result[~has_acls] = supported[~has_acls] if self.allow_everyone_if_no_acl_found else 0
        result[is_super] = supported[is_super]
        return result.astype(np.int32)

    def _or_masks(self, principal, host, patterns, allow, deny) -> None:
        present = (principal >= 0) & (host >= 0)
        if not present.any() or not len(self._keys):
            return
        keys = self._key(principal[present], host[present], patterns[present])
        found = np.searchsorted(self._keys, keys)
        found[found == len(self._keys)] = 0
        hit = self._keys[found] == keys
        where = np.flatnonzero(present)[hit]
        allow[where] |= self._allow[found[hit]]
        deny[where] |= self._deny[found[hit]]

    def encode_principals(self, principals: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the ids of the ACL principals whose ACLs apply to it, as one row of a 2-D
        array (its own id first, then its groups' in the expansion's order; -1 where no ACL
        names one), and whether it is a super user.

        Each distinct principal is read as the authorizer reads a request's (``Type:name``,
        :func:`~kafkasec.context.canonical_principal`), so that the two cannot disagree on it.
        A principal the expansion did not ask about is a ValueError: its groups are unknown.
        """
        encoded = pc.dictionary_encode(principals)
        distinct = [canonical_principal(principal) for principal in encoded.dictionary.to_pylist()]
        own = np.array([self._principals.get(p, -1) for p in distinct] or [0], dtype=np.int64)
        groups = [] if self.expansion is None else [self._groups_of(p) for p in distinct]
        ids = np.full((len(own), 1 + max(map(len, groups), default=0)), -1, dtype=np.int64)
        ids[:, 0] = own
        for row, group_ids in enumerate(groups):
            if group_ids:
                ids[row, 1:1 + len(group_ids)] = group_ids
        supers = np.array([p in self.super_users for p in distinct] or [False])
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        return ids[indices], supers[indices]

    def _groups_of(self, principal: str) -> tuple[int, ...]:
        found = self._group_ids.get(principal)
        if found is None:
            raise ValueError(
                f"{principal} was not expanded: these ACLs apply to principals through the plugins that expand "
                "them, and were compiled with the groups of other principals (compile them with this one, as "
                "CompiledAcls.from_authorizer(authorizer, principals) or the grid's principals= do)"
            )
        return found

    def principal_names(self) -> list[str]:
        """The ACL principals (``Type:name``) that ACLs name, by id."""
        return list(self._principals)

    def host_names(self) -> list[str]:
        """The hosts that ACLs name, by id (``*`` is 0)."""
        return list(self._hosts)

    def patterns(self) -> tuple[list[int], list[bool], list[str]]:
        """The patterns that have ACLs, by id: their resource type codes, whether each is
        PREFIXED (else LITERAL), their names."""
        codes, prefixed, names = [0] * self.pattern_count, [False] * self.pattern_count, [""] * self.pattern_count
        for is_prefix, tables in ((False, self._literal), (True, self._prefixed)):
            for code, ids in tables.items():
                for name, pattern in ids.items():
                    codes[pattern], prefixed[pattern], names[pattern] = code, is_prefix, name
        return codes, prefixed, names

    def encode_hosts(self, hosts: pa.Array) -> np.ndarray:
        """Per row: the host's id (-1 if no ACL names it).

        Each distinct host is the client address as the authorizer takes it, in the text of
        Java's ``InetAddress.getHostAddress`` (:func:`~kafkasec.context.java_host_address`):
        ``fd00::d77`` meets the ACLs of ``fd00:0:0:0:0:0:0:d77``, ``::ffff:10.0.0.1`` those of
        ``10.0.0.1``. A host that is not an IP address is a ValueError, as for the authorizer.
        """
        encoded = pc.dictionary_encode(hosts)
        distinct = [java_host_address(host) for host in encoded.dictionary.to_pylist()]
        ids = np.array([self._hosts.get(v, _NO_HOST) for v in distinct] or [0], dtype=np.int64)
        return ids[encoded.indices.to_numpy(zero_copy_only=False)]

    def pattern_id(self, resource_type, name: str, prefixed: bool) -> int | None:
        """The id of the pattern (type, name, LITERAL or PREFIXED), or None if it has no ACLs."""
        table = self._prefixed if prefixed else self._literal
        return table.get(int(resource_type), {}).get(name)

    def short_prefixes(self, max_length: int) -> np.ndarray:
        """The ids of the PREFIXED patterns of at most ``max_length`` characters."""
        return np.array([pattern for prefixes in self._prefixed.values() for prefix, pattern in prefixes.items()
                         if len(prefix) <= max_length], dtype=np.int64)

    def principal_id(self, principal: str) -> int:
        """The id of a principal (``Type:name``) that ACLs name, else -1."""
        return self._principals.get(principal, -1)

    def host_id(self, host: str) -> int:
        """The id of a host that ACLs name (``*`` is 0), else -1."""
        return self._hosts.get(host, _NO_HOST)

    def wildcard_hosts(self) -> np.ndarray:
        """The ids of the specific hosts that ``User:*`` ACLs name (host ``*`` is id 0)."""
        w = self._wildcard_principal
        if w < 0 or not len(self._keys):
            return np.zeros(0, dtype=np.int64)
        first, last = np.searchsorted(self._keys, [self._key(w, 0, 0), self._key(w + 1, 0, 0)])
        hosts = (self._keys[first:last] // max(self.pattern_count, 1)) % len(self._hosts)
        return np.unique(hosts[hosts > 0])

    def principal_grants(self, principal_ids: np.ndarray, host_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        """The ACLs of each (principal id, host id), on host ``*`` and on that host, as rows
        ``(which, pattern, allow, deny)``: ``which`` indexes the inputs (ascending), ``pattern``
        is a pattern id where they have ACLs, ``allow`` and ``deny`` its operation masks. A
        principal id or host id of -1 has none; a pattern may appear twice for one input (once
        per host)."""
        principal_ids = np.asarray(principal_ids, dtype=np.int64)
        host_ids = np.asarray(host_ids, dtype=np.int64)
        count = len(principal_ids)
        if not len(self._keys):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty
        # Two key ranges per input: its principal on host '*', then on its own host.
        which = np.repeat(np.arange(count), 2)
        hosts = np.stack([np.zeros(count, dtype=np.int64), host_ids], axis=1).ravel()
        principals = principal_ids[which]
        present = (principals >= 0) & (hosts >= 0)
        low = self._key(np.where(present, principals, 0), np.where(present, hosts, 0), 0)
        first = np.searchsorted(self._keys, low)
        last = np.searchsorted(self._keys, low + max(self.pattern_count, 1))
        span, at = ranges(first, np.where(present, last - first, 0))
        return which[span], self._keys[at] - low[span], self._allow[at], self._deny[at]

    def classify(self, types: np.ndarray, names: pa.Array):
        """Per row its distinct resource's id, and per distinct resource its pattern ids as CSR
        (``class_ptr``, ``class_patterns``).

        Vectorized in Arrow: literal names by a hash lookup of the distinct names, prefixes by a
        lookup of their first N bytes for each byte length that some prefix has (a name starts
        with a prefix exactly when its UTF-8 bytes start with the prefix's)."""
        encoded = pc.dictionary_encode(names)
        name_ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        width = max(len(encoded.dictionary), 1)
        distinct, resource_ids = np.unique(types * width + name_ids, return_inverse=True)
        distinct_types, distinct_names = distinct // width, encoded.dictionary.take(pa.array(distinct % width))
        columns = []  # one column of pattern ids (-1: none) per kind of match
        for code in np.unique(distinct_types).tolist():
            lookup = self._lookups().get(code)
            if lookup is None:
                continue
            rows = np.flatnonzero(distinct_types == code)
            of_type = distinct_names.take(pa.array(rows))
            literal_names, literal_ids, wildcard, prefixes = lookup
            matches = [_ids_where(pc.index_in(of_type, value_set=literal_names), literal_ids)]
            if wildcard is not None:
                not_star = pc.not_equal(of_type, WILDCARD_RESOURCE).to_numpy(zero_copy_only=False)
                matches.append(np.where(not_star, wildcard, -1))
            as_bytes = of_type.cast(pa.binary())
            for byte_length, (prefix_set, prefix_ids) in prefixes.items():
                heads = pc.binary_slice(as_bytes, 0, byte_length)
                long_enough = pc.greater_equal(pc.binary_length(as_bytes), byte_length).to_numpy(zero_copy_only=False)
                matches.append(np.where(long_enough, _ids_where(pc.index_in(heads, value_set=prefix_set), prefix_ids), -1))
            for match in matches:
                column = np.full(len(distinct), -1, dtype=np.int64)
                column[rows] = match
                columns.append(column)
        table = np.stack(columns, axis=1) if columns else np.full((len(distinct), 0), -1, dtype=np.int64)
        present = table >= 0
        class_ptr = np.zeros(len(distinct) + 1, dtype=np.int64)
        class_ptr[1:] = np.cumsum(present.sum(axis=1))
        return resource_ids.reshape(-1), class_ptr, table[present]

    def _lookups(self) -> dict:
        """Per resource type: (literal names, their ids, the '*' id or None, {prefix byte
        length: (prefixes as bytes, their ids)}), built once per process (not pickled)."""
        lookups = self.__dict__.get("_lookup_cache")
        if lookups is None:
            lookups = {}
            for code, literal in self._literal.items():
                by_length: dict[int, list[tuple[bytes, int]]] = {}
                for prefix, pattern in self._prefixed[code].items():
                    encoded = prefix.encode("utf-8")
                    by_length.setdefault(len(encoded), []).append((encoded, pattern))
                lookups[code] = (
                    pa.array(list(literal), type=pa.string()),
                    np.array(list(literal.values()), dtype=np.int64),
                    self._wildcard.get(code),
                    {
                        length: (pa.array([p for p, _ in group], type=pa.binary()), np.array([i for _, i in group], dtype=np.int64))
                        for length, group in sorted(by_length.items())
                    },
                )
            self.__dict__["_lookup_cache"] = lookups
        return lookups

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lookup_cache", None)
        return state


def _ids_where(positions: pa.Array, ids: np.ndarray) -> np.ndarray:
    """The ids at ``positions`` (an index_in result), -1 where it is null."""
    found = positions.to_numpy(zero_copy_only=False)
    if positions.null_count == len(positions):
        return np.full(len(positions), -1, dtype=np.int64)
    filled = np.nan_to_num(found.astype(np.float64), nan=-1).astype(np.int64)
    return np.where(filled >= 0, ids[np.maximum(filled, 0)] if len(ids) else -1, -1)


_SUPPORTED_ARRAY = np.zeros(max(int(rt) for rt in ResourceType) + 1, dtype=np.int64)
for _rt, _mask in _SUPPORTED.items():
    _SUPPORTED_ARRAY[int(_rt)] = _mask


def supported_masks(types: np.ndarray) -> np.ndarray:
    """The bitfield of every operation each resource type supports (what a super user gets)."""
    return _SUPPORTED_ARRAY[types].astype(np.int32)


def string_column(values, label: str) -> pa.Array:
    array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=pa.string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pa.types.is_string(array.type) and not pa.types.is_large_string(array.type):
        raise TypeError(f"{label} must be strings, not {array.type}")
    if array.null_count:
        raise ValueError(f"{label} must not contain nulls")
    return array


def type_codes(resource_types) -> np.ndarray:
    """Resource type codes from codes or names (names are converted once per distinct value)."""
    if isinstance(resource_types, np.ndarray) and resource_types.dtype.kind in "iu":
        codes = resource_types.astype(np.int64)
    else:
        array = resource_types if isinstance(resource_types, (pa.Array, pa.ChunkedArray)) else pa.array(resource_types)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.null_count:
            raise ValueError("resource types must not contain nulls")
        if pa.types.is_integer(array.type):
            codes = array.to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            encoded = pc.dictionary_encode(array)
            distinct = np.array(
                [int(ResourceType.coerce(value)) for value in encoded.dictionary.to_pylist()] or [0], dtype=np.int64
            )
            codes = distinct[encoded.indices.to_numpy(zero_copy_only=False)]
    valid = np.isin(codes, [int(rt) for rt in _SUPPORTED])
    if not valid.all():
        raise ValueError(f"resource type code {codes[~valid][0]} is not a concrete resource type (UNKNOWN and ANY are filters)")
    return codes
