"""Compact grids: principals x resources as class tables plus exceptions, never every cell.

A grid's answer factorizes. A resource's answer depends only on its class: its type and the set
of patterns that match it. A principal's answer depends only on its class: super user or not,
the principal if some ACL names it, the groups (by principal expansion) that ACLs name (without
either it is like anyone unnamed), and its host if some ACL names that host. So a grid is

- ``base[resource class, host class]``: the bitfield for principals no ACL names (only
  ``User:*`` ACLs apply to them), evaluated once per block;
- exceptions ``(principal class, resource class) -> bitfield``: only where a named principal
  has ACLs on a pattern of that resource class and the answer differs from the base;
- super users: every supported operation.

The exceptions stay sparse at pattern level: a principal's candidates are the resource classes
that contain one of its own patterns. :class:`CompactGrid` answers any cell, whole rows, a
dense matrix for small grids, and counts of allowed pairs without materializing them.
"""

from __future__ import annotations

from typing import Sequence

import attrs
import numpy as np

from spark_udfs.evaluator import CompiledAcls, ranges, string_column, supported_masks, type_codes

_SUPER = -2


@attrs.frozen
class AllowedBlocks:
    """Where one operation is allowed, by class (see :meth:`CompactGrid.allowed_blocks`).

    A cell allows it when its principal's class is super and ``super_allowed[rc]``; else when
    the base block ``(rc, hc)`` is listed (with its bitfield) and ``(pc, rc)`` is not revoked;
    else when ``(pc, rc)`` is granted (with the exception's bitfield)."""

    base_rc: np.ndarray
    base_hc: np.ndarray
    base_bits: np.ndarray
    revoked_pc: np.ndarray
    revoked_rc: np.ndarray
    granted_pc: np.ndarray
    granted_rc: np.ndarray
    granted_bits: np.ndarray
    super_allowed: np.ndarray  # per resource class


@attrs.frozen
class ChangedBlocks:
    """Where two grids of the same cells differ, by joint class (see
    :meth:`CompactGrid.changed_blocks`): cell (i, j) changes from ``before[k]`` to ``after[k]``
    when ``(joint_pc[i], joint_rc[j]) == (jp[k], jr[k])``, and not at all otherwise."""

    joint_pc: np.ndarray  # per principal
    joint_rc: np.ndarray  # per resource
    jp: np.ndarray
    jr: np.ndarray
    before: np.ndarray
    after: np.ndarray


@attrs.frozen(eq=False, repr=False)
class CompactGrid:
    """The grid of ``principals`` (``(principal, host)`` pairs) x ``resources`` (``(resource
    type, name)`` pairs), built with :meth:`build`. Arrays are indexed by principal (``pc`` =
    principal class), by resource (``rc`` = resource class) or by class, as named."""

    principals: list
    resources: list
    resource_types: np.ndarray  # per resource: its type code
    class_types: np.ndarray  # per resource class: its type code
    representative: np.ndarray  # per resource class: one distinct resource of it (classify's ids)
    class_ptr: np.ndarray  # CSR of the distinct resources' pattern ids, as CompiledAcls.classify
    class_patterns: np.ndarray
    resource_class: np.ndarray  # per resource
    principal_class: np.ndarray  # per principal
    host_class: np.ndarray  # per principal: its column of ``base``
    class_is_super: np.ndarray  # per principal class
    class_host: np.ndarray  # per principal class: its column of ``base``
    # Per principal class, the compiled ACLs' ids of the ACL principals whose ACLs apply to it:
    # its own (SUPER for super users) then its groups', ascending, padded with -1; and its host's.
    class_members: np.ndarray
    class_host_id: np.ndarray
    base: np.ndarray  # [resource class, host class]: the answer for principals no ACL names
    supported: np.ndarray  # per resource class: every operation its type supports
    # The exceptions: principal class, resource class, bitfield; sorted by (pc, rc), each pair
    # once, so principal class pc's are [exception_ptr[pc], exception_ptr[pc + 1]).
    exception_pc: np.ndarray
    exception_rc: np.ndarray
    exception_bits: np.ndarray
    exception_ptr: np.ndarray  # per principal class and one more: CSR offsets into the exceptions
    compiled: CompiledAcls = attrs.field(kw_only=True)
    """The compiled ACLs the grid was built from: its pattern, principal and host ids are theirs
    (the report names the ACL behind each answer by them)."""

    @classmethod
    def build(
        cls,
        compiled: CompiledAcls,
        principals: Sequence[tuple[str, str]],
        resources: Sequence[tuple[object, str]],
    ) -> CompactGrid:
        principal_names = string_column([p for p, _ in principals], "principals")
        hosts = string_column([h for _, h in principals], "hosts")
        types = type_codes([t for t, _ in resources])
        names = string_column([n for _, n in resources], "resource names")

        # Resource classes: (type, matching patterns), from the distinct resources.
        resource_ids, class_ptr, class_patterns = compiled.classify(types, names)
        distinct_types = np.zeros(len(class_ptr) - 1, dtype=np.int64)
        distinct_types[resource_ids] = types
        class_of_distinct, representative = _row_classes(_padded_rows(distinct_types, class_ptr, class_patterns))
        resource_class = class_of_distinct[resource_ids]
        class_types = distinct_types[representative]
        n_rc = len(representative)

        # Principal classes: (its own id or SUPER, its groups' ids, host id); host classes: the host ids seen.
        member_ids, is_super = compiled.encode_principals(principal_names)
        host_ids = compiled.encode_hosts(hosts)
        member_ids[:, 1:].sort(axis=1)  # a principal's groups as a set
        member_ids[is_super] = -1
        member_ids[is_super, 0] = _SUPER
        # For the base only hosts that User:* ACLs name matter; a principal's own host ACLs
        # are found with its exceptions.
        wildcard_hosts = compiled.wildcard_hosts()
        base_hosts = np.where(np.isin(host_ids, wildcard_hosts), host_ids, -1)
        host_values, host_class = np.unique(base_hosts, return_inverse=True)
        principal_class, class_first = _row_classes(np.column_stack([host_ids, member_ids]))
        class_members, class_hid = member_ids[class_first], host_ids[class_first]
        class_host = np.searchsorted(host_values, np.where(np.isin(class_hid, wildcard_hosts), class_hid, -1))

        # The base: anyone unnamed, per (resource class, host class); its masks are User:*'s,
        # which every named principal's cells add their own to.
        n_hc = len(host_values)
        rc_grid = np.repeat(np.arange(n_rc), n_hc)
        base_allow, base_deny = compiled.masks_ids(
            np.full(n_rc * n_hc, -1, dtype=np.int64), host_values[np.tile(np.arange(n_hc), n_rc)],
            representative[rc_grid], class_ptr, class_patterns)
        base_has_acls = (class_ptr[representative + 1] > class_ptr[representative])[rc_grid]
        base = compiled.decide(base_allow, base_deny, base_has_acls, np.zeros(n_rc * n_hc, dtype=bool),
                               class_types[rc_grid]).reshape(n_rc, n_hc)

        # Exceptions: named principals (or their groups), on the resource classes that hold one
        # of their patterns; a class's own and its groups' ACLs OR-ed per cell below.
        named, column = np.nonzero(class_members >= 0)
        which, pattern, allow, deny = compiled.principal_grants(class_members[named, column], class_hid[named])
        pattern_ptr, pattern_rc = classes_by_pattern(compiled.pattern_count, representative, class_ptr, class_patterns)
        row, at = ranges(pattern_ptr[pattern], pattern_ptr[pattern + 1] - pattern_ptr[pattern])
        cell_keys = named[which[row]] * n_rc + pattern_rc[at]
        order = np.argsort(cell_keys, kind="stable")
        cell_keys = cell_keys[order]
        first = np.flatnonzero(np.diff(cell_keys, prepend=-1))  # each (pc, rc) once, with its own masks OR-ed
        exception_pc, exception_rc = cell_keys[first] // n_rc, cell_keys[first] % n_rc
        at_base = exception_rc * n_hc + class_host[exception_pc]
        own_allow = np.bitwise_or.reduceat(allow[row[order]], first)
        own_deny = np.bitwise_or.reduceat(deny[row[order]], first)
        exception_bits = compiled.decide(own_allow | base_allow[at_base], own_deny | base_deny[at_base],
                                         np.ones(len(first), dtype=bool), np.zeros(len(first), dtype=bool),
                                         class_types[exception_rc])
        differs = exception_bits != base.ravel()[at_base]
        exception_pc, exception_rc, exception_bits = exception_pc[differs], exception_rc[differs], exception_bits[differs]
        return cls(
            principals=list(principals),
            resources=list(resources),
            resource_types=types,
            class_types=class_types,
            representative=representative,
            class_ptr=class_ptr,
            class_patterns=class_patterns,
            resource_class=resource_class,
            principal_class=principal_class.reshape(-1),
            host_class=host_class.reshape(-1),
            class_is_super=class_members[:, 0] == _SUPER,
            class_host=class_host,
            class_members=class_members,
            class_host_id=class_hid,
            base=base,
            supported=supported_masks(class_types),
            exception_pc=exception_pc,
            exception_rc=exception_rc,
            exception_bits=exception_bits,
            exception_ptr=np.searchsorted(exception_pc, np.arange(len(class_first) + 1)),
            compiled=compiled,
        )

    def __repr__(self) -> str:
        return (
            f"CompactGrid({len(self.principals)} principals x {len(self.resources)} resources: "
            f"{len(self.class_is_super)} principal classes, {len(self.base)} resource classes, "
            f"{len(self.exception_bits)} exceptions)"
        )

    @property
    def cells(self) -> int:
        return len(self.principals) * len(self.resources)

    def bits(self, principal_index: int, resource_index: int) -> int:
        """The bitfield of one cell."""
        pc = int(self.principal_class[principal_index])
        rc = int(self.resource_class[resource_index])
        if self.class_is_super[pc]:
            return int(self.supported[rc])
        low, high = self.exception_ptr[pc], self.exception_ptr[pc + 1]
        at = low + int(np.searchsorted(self.exception_rc[low:high], rc))
        if at < high and self.exception_rc[at] == rc:
            return int(self.exception_bits[at])
        return int(self.base[rc, self.class_host[pc]])

    def row(self, principal_index: int) -> np.ndarray:
        """One principal's cells across every resource (int32): ``dense()[principal_index]``
        without the rest of the grid."""
        return self.class_row(int(self.principal_class[principal_index]))[self.resource_class]

    def class_row(self, pc: int) -> np.ndarray:
        """The cells of principal class ``pc`` per resource class (int32)."""
        if self.class_is_super[pc]:
            return self.supported.astype(np.int32)
        per_class = self.base[:, self.class_host[pc]].astype(np.int32)
        own = slice(self.exception_ptr[pc], self.exception_ptr[pc + 1])
        per_class[self.exception_rc[own]] = self.exception_bits[own]
        return per_class

    def changed_blocks(self, other: CompactGrid) -> ChangedBlocks:
        """Where ``other``, a grid of the same principals and resources under other ACLs,
        differs, by joint class: a principal's joint class is the pair of its classes in both
        grids (likewise a resource's), so every cell of a joint block changes alike. One row per
        joint principal class, over joint resource classes: no cell, no dense grid."""
        if self.principals != other.principals or self.resources != other.resources:
            raise ValueError("the grids to compare must have the same principals and resources")
        principal_pairs, joint_pc = np.unique(
            np.stack([self.principal_class, other.principal_class], axis=1), axis=0, return_inverse=True)
        resource_pairs, joint_rc = np.unique(
            np.stack([self.resource_class, other.resource_class], axis=1), axis=0, return_inverse=True)
        blocks: list[tuple[np.ndarray, ...]] = []
        for jp, (mine, theirs) in enumerate(principal_pairs.tolist()):
            before = self.class_row(mine)[resource_pairs[:, 0]]
            after = other.class_row(theirs)[resource_pairs[:, 1]]
            changed = np.flatnonzero(before != after)
            if len(changed):
                blocks.append((np.full(len(changed), jp), changed, before[changed], after[changed]))
        columns = [np.concatenate(parts) for parts in zip(*blocks)] if blocks else [np.zeros(0, np.int64)] * 4
        return ChangedBlocks(joint_pc.ravel(), joint_rc.ravel(), *columns)

    def count_changed(self, other: CompactGrid) -> int:
        """How many cells ``other`` (a grid of the same principals and resources) changes,
        counted by joint class (:meth:`changed_blocks`)."""
        changes = self.changed_blocks(other)
        per_jp, per_jr = np.bincount(changes.joint_pc), np.bincount(changes.joint_rc)
        return int((per_jp[changes.jp] * per_jr[changes.jr]).sum())

    def differences(self, other: CompactGrid, limit: int) -> list[tuple[int, int, int, int]]:
        """The first ``limit`` cells (principal index, resource index, bitfield here, bitfield
        in ``other``) where ``other``, a grid of the same principals and resources under other
        ACLs, differs, principal by principal: :meth:`changed_blocks` expanded until ``limit``
        (a what-if over 10^9 cells needs a row's memory, not two dense grids)."""
        changes = self.changed_blocks(other)
        joint_classes = int(changes.joint_pc.max(initial=-1)) + 1
        bounds = np.searchsorted(changes.jp, np.arange(joint_classes + 1))  # jp is ascending
        lookup = np.full(int(changes.joint_rc.max(initial=-1)) + 1, -1, dtype=np.int64)
        found: list[tuple[int, int, int, int]] = []
        rows: dict[int, tuple[list, list, list]] = {}
        for i, jp in enumerate(changes.joint_pc.tolist()):
            low, high = bounds[jp], bounds[jp + 1]
            if low == high:
                continue
            cells = rows.get(jp)
            if cells is None:
                lookup[:] = -1
                lookup[changes.jr[low:high]] = np.arange(low, high)
                at = lookup[changes.joint_rc]
                columns = np.flatnonzero(at >= 0)
                cells = rows[jp] = (columns.tolist(), changes.before[at[columns]].tolist(), changes.after[at[columns]].tolist())
            for j, before, after in zip(*cells):
                if len(found) == limit:
                    return found
                found.append((i, j, before, after))
        return found

    def dense(self) -> np.ndarray:
        """Every cell, principals x resources (int32): only for grids that fit in memory."""
        by_class = self.base[:, self.class_host].T.astype(np.int32)  # [pc, rc]: no larger than the grid
        by_class[self.exception_pc, self.exception_rc] = self.exception_bits
        by_class[self.class_is_super] = self.supported
        return by_class[self.principal_class[:, None], self.resource_class[None, :]]

    def allowed_blocks(self, operation_bit: int) -> AllowedBlocks:
        """Where the operation whose bit is ``operation_bit`` (``1 << code``) is allowed, by
        class: what :meth:`count_allowed`, :meth:`principals_allowed` and the Spark grid's
        allowed pairs expand, never a cell."""
        base_rc, base_hc = np.nonzero(self.base & operation_bit)
        ordinary = ~self.class_is_super[self.exception_pc]
        with_bit = (self.exception_bits & operation_bit) != 0
        base_bit = (self.base[self.exception_rc, self.class_host[self.exception_pc]] & operation_bit) != 0
        revoked = ordinary & base_bit & ~with_bit
        granted = ordinary & with_bit & ~base_bit
        return AllowedBlocks(
            base_rc, base_hc, self.base[base_rc, base_hc],
            self.exception_pc[revoked], self.exception_rc[revoked],
            self.exception_pc[granted], self.exception_rc[granted], self.exception_bits[granted],
            (self.supported & operation_bit) != 0,
        )

    def principals_of(self, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every principal of each principal class in ``classes``, as ``(which, principal)``:
        principal index ``principal[k]`` belongs to class ``classes[which[k]]``."""
        order = np.argsort(self.principal_class, kind="stable")
        bounds = np.searchsorted(self.principal_class[order], np.arange(len(self.class_is_super) + 1))
        which, at = ranges(bounds[classes], bounds[classes + 1] - bounds[classes])
        return which, order[at]

    def principals_per_class(self) -> np.ndarray:
        """How many of the grid's principals each principal class holds (int64)."""
        return np.bincount(self.principal_class, minlength=len(self.class_is_super)).astype(np.int64)

    def resources_per_class(self) -> np.ndarray:
        """How many of the grid's resources each resource class holds (int64)."""
        return np.bincount(self.resource_class, minlength=len(self.base)).astype(np.int64)

    def count_allowed(self, operation_bit: int) -> int:
        """How many cells allow the operation whose bit is ``operation_bit`` (``1 << code``),
        from the class tables: no cell is materialized."""
        return int(self.principals_allowed(operation_bit) @ self.resources_per_class())

    def principals_allowed(self, operation_bit: int) -> np.ndarray:
        """Per resource class, how many of the grid's principals the operation is allowed to."""
        blocks = self.allowed_blocks(operation_bit)
        per_class = self.principals_per_class()
        ordinary = ~self.class_is_super
        per_host = np.bincount(self.class_host[ordinary], weights=per_class[ordinary], minlength=self.base.shape[1])
        counts = np.zeros(len(self.base), dtype=np.int64)
        np.add.at(counts, blocks.base_rc, per_host[blocks.base_hc].astype(np.int64))
        np.add.at(counts, blocks.granted_rc, per_class[blocks.granted_pc])
        np.subtract.at(counts, blocks.revoked_rc, per_class[blocks.revoked_pc])
        counts += int(per_class[self.class_is_super].sum()) * blocks.super_allowed
        return counts

    def everyone_class_bits(self) -> np.ndarray:
        """Per resource class, the operations every principal of the grid may do (int64): the
        AND of every principal class's cells, read from the base (where some class of a host
        class has no exception) and the exceptions, within what the type supports (a super
        user's cells). Nothing for a grid without principals."""
        n_rc, n_hc = self.base.shape
        everyone = self.supported.astype(np.int64) * bool(len(self.principals))
        ordinary = ~self.class_is_super
        classes_per_host = np.bincount(self.class_host[ordinary], minlength=n_hc)
        kept = ordinary[self.exception_pc]
        exception_rc, exception_hc = self.exception_rc[kept], self.class_host[self.exception_pc[kept]]
        exceptions = np.zeros((n_rc, n_hc), dtype=np.int64)
        np.add.at(exceptions, (exception_rc, exception_hc), 1)
        base_applies = (exceptions < classes_per_host) & (classes_per_host > 0)
        everyone &= np.bitwise_and.reduce(np.where(base_applies, self.base, -1), axis=1)
        np.bitwise_and.at(everyone, exception_rc, self.exception_bits[kept].astype(np.int64))
        return everyone

    def grants_per_principal_class(self) -> np.ndarray:
        """Per principal class, its (resource, operation) grants summed over the grid's resources."""
        per_resource_class = self.resources_per_class()
        per_host = per_resource_class @ np.bitwise_count(self.base).astype(np.int64)
        grants = per_host[self.class_host].astype(np.int64)
        grants[self.class_is_super] = int(per_resource_class @ np.bitwise_count(self.supported).astype(np.int64))
        base = self.base[self.exception_rc, self.class_host[self.exception_pc]]
        change = np.bitwise_count(self.exception_bits).astype(np.int64) - np.bitwise_count(base)
        np.add.at(grants, self.exception_pc, change * per_resource_class[self.exception_rc])
        return grants


def _padded_rows(types: np.ndarray, class_ptr: np.ndarray, class_patterns: np.ndarray) -> np.ndarray:
    """Per distinct resource one row: its type, then its pattern ids, padded with -1. Two
    resources are alike exactly when their rows are: classify lists a type's patterns in one
    order of kinds (literal, ``*``, prefixes by length) and a name matches one of each at most."""
    counts = np.diff(class_ptr)
    rows = np.full((len(types), int(counts.max(initial=0)) + 1), -1, dtype=np.int64)
    rows[:, 0] = types
    row, at = ranges(class_ptr[:-1], counts)
    rows[row, at - class_ptr[row] + 1] = class_patterns[at]
    return rows


def _row_classes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes of equal rows, numbered in order of first appearance: each row's class, and per
    class its first row."""
    as_bytes = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(as_bytes, return_index=True, return_inverse=True)
    order = np.argsort(first)
    number = np.empty(len(first), dtype=np.int64)
    number[order] = np.arange(len(first))
    return number[inverse.reshape(-1)], first[order]


def classes_by_pattern(pattern_count: int, representative, class_ptr, class_patterns) -> tuple[np.ndarray, np.ndarray]:
    """The resource classes holding each pattern id, as CSR: pattern p's are
    ``classes[ptr[p]:ptr[p + 1]]``, ascending."""
    rc, at = ranges(class_ptr[representative], class_ptr[representative + 1] - class_ptr[representative])
    patterns = class_patterns[at]
    order = np.lexsort((rc, patterns))
    ptr = np.zeros(pattern_count + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(patterns, minlength=pattern_count))
    return ptr, rc[order]
