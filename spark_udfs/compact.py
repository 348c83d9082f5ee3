"""Compact grids: principals x resources as class tables plus exceptions, never every cell.

A grid's answer factorizes. A resource's answer depends only on its class: its type and the set
of patterns that match it. A principal's answer depends only on its class: super user or not,
the principal if some ACL names it (else it is like anyone unnamed), and its host if some ACL
names that host. So a grid is

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
    base: np.ndarray  # [resource class, host class]: the answer for principals no ACL names
    supported: np.ndarray  # per resource class: every operation its type supports
    exception_pc: np.ndarray  # the exceptions: principal class, resource class, bitfield
    exception_rc: np.ndarray
    exception_bits: np.ndarray
    _exceptions: dict = attrs.field(alias="exceptions")  # (pc, rc) -> bitfield, for bits()
    compiled: CompiledAcls | None = attrs.field(default=None, kw_only=True)
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
        keys: dict[tuple[int, tuple[np.int64, ...]], int] = {}  # (type, pattern ids) -> class id
        class_of_distinct = np.array(
            [
                keys.setdefault((int(distinct_types[d]), tuple(class_patterns[class_ptr[d]:class_ptr[d + 1]])), len(keys))
                for d in range(len(class_ptr) - 1)
            ],
            dtype=np.int64,
        )
        resource_class = class_of_distinct[resource_ids]
        representative = np.zeros(len(keys), dtype=np.int64)
        representative[class_of_distinct] = np.arange(len(class_of_distinct))
        class_types = distinct_types[representative]

        # Principal classes: (principal id or SUPER, host id); host classes: the host ids seen.
        principal_ids, is_super = compiled.encode_principals(principal_names)
        host_ids = compiled.encode_hosts(hosts)
        effective = np.where(is_super, _SUPER, principal_ids)
        # For the base only hosts that User:* ACLs name matter; a principal's own host ACLs
        # are found with its exceptions.
        wildcard_hosts = compiled.wildcard_hosts()
        base_hosts = np.where(np.isin(host_ids, wildcard_hosts), host_ids, -1)
        host_values, host_class = np.unique(base_hosts, return_inverse=True)
        pairs = np.stack([effective, host_ids], axis=1)
        class_keys, principal_class = np.unique(pairs, axis=0, return_inverse=True)
        principal_class = principal_class.reshape(-1)
        host_class_of = {int(h): i for i, h in enumerate(host_values)}
        class_host = np.array(
            [host_class_of[int(h) if np.isin(h, wildcard_hosts) else -1] for h in class_keys[:, 1]], dtype=np.int64
        )

        # The base: anyone unnamed, per (resource class, host class).
        n_rc, n_hc = len(keys), len(host_values)
        rc_grid = np.repeat(np.arange(n_rc), n_hc)
        hc_grid = np.tile(np.arange(n_hc), n_rc)
        base = compiled.evaluate_ids(
            np.full(n_rc * n_hc, -1, dtype=np.int64), host_values[hc_grid], np.zeros(n_rc * n_hc, dtype=bool),
            class_types[rc_grid], representative[rc_grid], class_ptr, class_patterns,
        ).reshape(n_rc, n_hc)

        # Exceptions: named principals, on the resource classes that hold one of their patterns.
        rc_of_pattern = classes_by_pattern(representative, class_ptr, class_patterns)
        exc_pc, exc_rc, exc_hc, exc_pid, exc_hid = [], [], [], [], []
        for pc, (pid, hid) in enumerate(class_keys.tolist()):
            if pid < 0:
                continue
            candidates = rc_of_pattern(compiled.principal_patterns(pid, hid))
            exc_pc.append(np.full(len(candidates), pc))
            exc_rc.append(candidates)
            exc_hc.append(np.full(len(candidates), class_host[pc]))
            exc_pid.append(np.full(len(candidates), pid))
            exc_hid.append(np.full(len(candidates), hid))
        exception_pc, exception_rc, exception_bits = _concat_exceptions(
            compiled, base, class_types, representative, class_ptr, class_patterns,
            exc_pc, exc_rc, exc_hc, exc_pid, exc_hid,
        )
        return cls(
            principals=list(principals),
            resources=list(resources),
            resource_types=types,
            class_types=class_types,
            representative=representative,
            class_ptr=class_ptr,
            class_patterns=class_patterns,
            resource_class=resource_class,
            principal_class=principal_class,
            host_class=host_class.reshape(-1),
            class_is_super=class_keys[:, 0] == _SUPER,
            class_host=class_host,
            base=base,
            supported=supported_masks(class_types),
            exception_pc=exception_pc,
            exception_rc=exception_rc,
            exception_bits=exception_bits,
            exceptions={(int(p), int(r)): int(b) for p, r, b in zip(exception_pc, exception_rc, exception_bits)},
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
        found = self._exceptions.get((pc, rc))
        return int(self.base[rc, self.class_host[pc]]) if found is None else found

    def row(self, principal_index: int) -> np.ndarray:
        """One principal's cells across every resource (int32): ``dense()[principal_index]``
        without the rest of the grid."""
        return self.class_row(int(self.principal_class[principal_index]))[self.resource_class]

    def class_row(self, pc: int) -> np.ndarray:
        """The cells of principal class ``pc`` per resource class (int32)."""
        if self.class_is_super[pc]:
            return self.supported.astype(np.int32)
        per_class = self.base[:, self.class_host[pc]].astype(np.int32)
        own = self.exception_pc == pc
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
        out = self.base[self.resource_class[None, :], self.host_class[:, None]].astype(np.int32)
        for pc, rc, bits in zip(self.exception_pc, self.exception_rc, self.exception_bits):
            rows = np.flatnonzero(self.principal_class == pc)
            cols = np.flatnonzero(self.resource_class == rc)
            out[np.ix_(rows, cols)] = bits
        super_rows = np.flatnonzero(self.class_is_super[self.principal_class])
        out[super_rows] = self.supported[self.resource_class][None, :]
        return out

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


def classes_by_pattern(representative, class_ptr, class_patterns):
    """A function from pattern ids to the (distinct, sorted) resource classes containing them."""
    rc, at = ranges(class_ptr[representative], class_ptr[representative + 1] - class_ptr[representative])
    patterns = class_patterns[at] if len(rc) else np.zeros(0, dtype=np.int64)
    order = np.argsort(patterns, kind="stable")
    patterns, rc = patterns[order], rc[order]

    def classes(wanted: np.ndarray) -> np.ndarray:
        low = np.searchsorted(patterns, wanted, side="left")
        high = np.searchsorted(patterns, wanted, side="right")
        if not len(wanted):
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([rc[a:b] for a, b in zip(low, high)] or [np.zeros(0, dtype=np.int64)]))

    return classes


def _concat_exceptions(compiled, base, class_types, representative, class_ptr, class_patterns,
                       exc_pc, exc_rc, exc_hc, exc_pid, exc_hid):
    if not exc_pc:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty.astype(np.int32)
    pc, rc, hc, pid, hid = (np.concatenate(part).astype(np.int64) for part in (exc_pc, exc_rc, exc_hc, exc_pid, exc_hid))
    bits = compiled.evaluate_ids(pid, hid, np.zeros(len(pc), dtype=bool), class_types[rc], representative[rc],
                                 class_ptr, class_patterns)
    differs = bits != base[rc, hc]
    return pc[differs], rc[differs], bits[differs]
