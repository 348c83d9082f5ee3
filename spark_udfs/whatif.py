"""The audit report's what-if: a change to other ACLs, every pair it changes (by joint class), and
for each ACL it adds or removes what that ACL changes, or why it changes nothing.

An ACL is marked in the state where it is present: an added one in the state after the change,
a removed one in today's. Its mark counts the pairs that state and the same state without the
ACL answer differently, over the pairs the ACL bears on (the grid's principals it applies to,
its own or through a group, from its host, on the resources its pattern matches; every
principal where it is a resource's only ACL, since allow.everyone.if.no.acl.found then decides
that resource). When it changes nothing the mark says why, from the ACLs on those pairs: the
DENY that shadows an ALLOW (or already denies what a DENY denies), the ALLOW that already
allows it, or that nothing allows what a DENY denies.
"""

from __future__ import annotations

import itertools

import attrs
import numpy as np

from kafkasec.acl import WILDCARD_PRINCIPAL
from kafkasec.authorizer.decision import acl_text
from kafkasec.authorizer.index import StoredAcl
from spark_udfs.acl_table import AclTable, acl_table
from spark_udfs.compact import CompactGrid, classes_by_pattern
from spark_udfs.evaluator import CompiledAcls, ranges
from spark_udfs.rules import standard_authorizer

MAX_MARKED = 100
"""The added and removed ACLs marked one by one at most (each costs two grids of its pairs)."""
MAX_NAMED = 3
"""The ACLs a mark names per reason at most (the rest are counted)."""
MAX_REASON_BLOCKS = 1_000
"""The class blocks an unchanging ACL's reasons are read from at most."""


@attrs.frozen
class ChangeMark:
    """What one added or removed ACL changes (see the module docstring)."""

    change: str
    """``added`` or ``removed``."""
    acl: str
    pairs: int
    """The pairs it changes."""
    scope: int
    """The pairs it bears on."""
    reason: str
    """Why it changes nothing, in words ("" when it changes some pairs)."""
    denies: tuple[str, ...] = ()
    """DENY ACLs behind the reason: that shadow an ALLOW, or already deny what a DENY denies."""
    allows: tuple[str, ...] = ()
    """ALLOW ACLs behind the reason: that already allow what an ALLOW allows."""


@attrs.frozen(eq=False)
class WhatIf:
    """A change to other ACLs, over a grid: the grid after it, the ACLs it adds and removes (in
    ACL text order) and the marks of the first :data:`MAX_MARKED` of them (added first)."""

    after: CompactGrid
    added: tuple[str, ...]
    removed: tuple[str, ...]
    marks: tuple[ChangeMark, ...]


def what_if(authorizer, compact: CompactGrid, table: AclTable, after) -> WhatIf:
    """The change from ``authorizer`` (whose grid is ``compact`` and ACL table ``table``) to
    ``after``: ACLs judged under ``authorizer``'s settings and principal expansion (see
    :func:`spark_udfs.rules.standard_authorizer`), or an authorizer of its own."""
    authorizer = standard_authorizer(authorizer)
    after_authorizer = standard_authorizer(after, like=authorizer)
    if after_authorizer.principal_expander == authorizer.principal_expander:
        # The same expander as today's grid: its expansion of these principals holds.
        expansion = compact.compiled.expansion
        after_compiled = CompiledAcls(after_authorizer.index, sorted(after_authorizer.super_users),
                                      after_authorizer.allow_everyone_if_no_acl_found, expansion)
    else:
        after_compiled = CompiledAcls.from_authorizer(after_authorizer, [p for p, _ in compact.principals])
    after_grid = CompactGrid.build(after_compiled, compact.principals, compact.resources)
    before_acls = {stored.binding: stored for stored in authorizer.stored_acls()}
    after_acls = {stored.binding: stored for stored in after_authorizer.stored_acls()}
    added = sorted((after_acls[b] for b in after_acls.keys() - before_acls.keys()), key=lambda s: acl_text(s.binding))
    removed = sorted((before_acls[b] for b in before_acls.keys() - after_acls.keys()), key=lambda s: acl_text(s.binding))
    marks: list[ChangeMark] = []
    sides = (("added", added, after_authorizer, after_grid, None), ("removed", removed, authorizer, compact, table))
    for change, acls, side_authorizer, grid, side_table in sides:
        chosen = acls[:MAX_MARKED - len(marks)]
        if chosen:
            state = _State(side_authorizer, grid, side_table or acl_table(side_authorizer, grid.compiled))
            marks += [state.mark(change, stored) for stored in chosen]
    return WhatIf(after_grid, tuple(acl_text(s.binding) for s in added), tuple(acl_text(s.binding) for s in removed),
                  tuple(marks))


class _State:
    """One side of the change (the authorizer, its grid and ACL table), where ACLs are marked."""

    def __init__(self, authorizer, grid: CompactGrid, table: AclTable):
        self.authorizer, self.grid, self.table = authorizer, grid, table
        compiled = grid.compiled
        self.wildcard = compiled.principal_id(WILDCARD_PRINCIPAL)
        self.pattern_ptr, self.pattern_rc = classes_by_pattern(compiled.pattern_count, grid.representative, grid.class_ptr,
                                                               grid.class_patterns)
        self.row = {stored.acl_id: k for k, stored in enumerate(table.stored)}
        # Per resource class, how many ACLs are on its patterns.
        first = grid.class_ptr[grid.representative]
        which, at = ranges(first, grid.class_ptr[grid.representative + 1] - first)
        per_pattern = np.diff(table.pattern_ptr)
        self.acls_per_class = np.bincount(which, weights=per_pattern[grid.class_patterns[at]], minlength=len(grid.base))

    def mark(self, change: str, stored: StoredAcl) -> ChangeMark:
        grid, table, k = self.grid, self.table, self.row[stored.acl_id]
        text = table.text(k)
        rcs = self.pattern_rc[self.pattern_ptr[table.pattern[k]]:self.pattern_ptr[table.pattern[k] + 1]]
        # Where it is a resource's only ACL, every principal's answer there changes with it.
        only = rcs[self.acls_per_class[rcs] == 1]
        pcs = ~grid.class_is_super & ((self.wildcard == table.principal[k]) | (grid.class_members == table.principal[k]).any(axis=1))
        pcs &= (table.host[k] == 0) | (grid.class_host_id == table.host[k])
        principals = np.flatnonzero(pcs[grid.principal_class])
        resources = np.flatnonzero(np.isin(grid.resource_class, np.setdiff1d(rcs, only)))
        alone = np.flatnonzero(np.isin(grid.resource_class, only))
        scope = len(principals) * len(resources) + len(grid.principals) * len(alone)
        if not len(resources) + len(alone):
            return ChangeMark(change, text, 0, 0, "it matches no resource of the grid")
        if not scope:
            return ChangeMark(change, text, 0, 0, "it applies to no principal of the grid (super users aside: they may do everything anyway)")
        compiled = grid.compiled
        without = CompiledAcls(self.authorizer.index.apply(removed=[stored]), sorted(compiled.super_users),
                               compiled.allow_everyone_if_no_acl_found, compiled.expansion)
        pairs = sum(self._changed(compiled, without, rows, columns)
                    for rows, columns in ((principals, resources), (np.arange(len(grid.principals)), alone)))
        if pairs:
            return ChangeMark(change, text, pairs, scope, "")
        return self._unchanged(change, k, np.flatnonzero(pcs), rcs, scope)

    def _changed(self, compiled: CompiledAcls, without: CompiledAcls, rows: np.ndarray, columns: np.ndarray) -> int:
        """How many of the cells rows x columns (grid indices) differ between the two ACL sets."""
        if not len(rows) or not len(columns):
            return 0
        principals = [self.grid.principals[i] for i in rows.tolist()]
        resources = [self.grid.resources[j] for j in columns.tolist()]
        return CompactGrid.build(compiled, principals, resources).count_changed(CompactGrid.build(without, principals, resources))

    def _unchanged(self, change: str, k: int, pcs: np.ndarray, rcs: np.ndarray, scope: int) -> ChangeMark:
        """The mark of ACL ``k`` that changes nothing on its ``scope`` pairs: the ACLs on its
        first MAX_REASON_BLOCKS class blocks that take away or already give what it does."""
        grid, table = self.grid, self.table
        is_allow = bool(table.is_allow[k])
        denies: set[int] = set()
        allows: set[int] = set()
        for pc, rc in itertools.islice(itertools.product(pcs.tolist(), rcs.tolist()), MAX_REASON_BLOCKS):
            representative = grid.representative[rc]
            patterns = grid.class_patterns[grid.class_ptr[representative]:grid.class_ptr[representative + 1]]
            operations = (table.allow[k] if is_allow else table.deny[k]) & grid.supported[rc]
            on_cell = table.applying(patterns, grid.class_members[pc], grid.class_host_id[pc], self.wildcard)
            on_cell = on_cell[on_cell != k]
            denying = on_cell[(table.deny[on_cell] & operations) != 0]
            denies.update(denying.tolist())
            # What no other DENY takes away here is what another ALLOW may already give.
            rest = operations & ~np.bitwise_or.reduce(table.deny[denying], initial=0)
            allows.update(on_cell[table.is_allow[on_cell] & ((table.allow[on_cell] & rest) != 0)].tolist())
        deny_texts, allow_texts = (sorted(table.text(a) for a in found) for found in (denies, allows))
        if is_allow:
            parts = [f"shadowed by {_named(deny_texts)}" if deny_texts else "",
                     f"already allowed by {_named(allow_texts)}" if allow_texts else ""]
            reason = " and ".join(part for part in parts if part) or "allow.everyone.if.no.acl.found allows it there anyway"
            return ChangeMark(change, table.text(k), 0, scope, f"it is {reason}", tuple(deny_texts[:MAX_NAMED]),
                              tuple(allow_texts[:MAX_NAMED]))
        reason = (f"it is already denied by {_named(deny_texts)}" if deny_texts
                  else "nothing it denies is allowed there: no ALLOW ACL grants it")
        return ChangeMark(change, table.text(k), 0, scope, reason, tuple(deny_texts[:MAX_NAMED]), ())


def _named(texts: list[str]) -> str:
    """The first MAX_NAMED ACLs, and how many more."""
    more = len(texts) - MAX_NAMED
    return "; ".join(texts[:MAX_NAMED]) + (f" (and {more:,} more)" if more > 0 else "")
