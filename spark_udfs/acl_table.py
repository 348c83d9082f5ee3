"""Every ACL an authorizer holds, laid out as columns for a grid's compiled ids: what the report
matches a cell's answer against to name the ACL behind it, and what its findings and what-if
read (the DENY that shadows a grant, the ALLOW that already allows it)."""

from __future__ import annotations

import attrs
import numpy as np

from kafkasec.acl import AclPermissionType, PatternType
from kafkasec.authorizer.decision import acl_text
from kafkasec.authorizer.index import acl_masks
from spark_udfs.evaluator import CompiledAcls, ranges
from spark_udfs.rules import standard_authorizer


@attrs.frozen
class AclTable:
    """Every stored ACL of an authorizer, as columns indexed alike, with the ids a CompiledAcls
    gives its pattern, principal and host (-1 where it has none), sorted by pattern: what the
    page matches a cell's answer against to name the ACL behind it."""

    stored: list
    pattern: np.ndarray
    principal: np.ndarray
    host: np.ndarray
    operation: np.ndarray
    is_allow: np.ndarray  # ALLOW (else DENY)
    allow: np.ndarray  # the operations it allows (implied ones included), as a bitfield
    deny: np.ndarray  # the operations it denies
    pattern_ptr: np.ndarray  # CSR: the ACLs of pattern p are [pattern_ptr[p], pattern_ptr[p + 1])

    def text(self, k: int) -> str:
        """ACL ``k`` as :func:`~kafkasec.authorizer.decision.acl_text` writes it (made when asked:
        the page writes its ACLs' texts itself, from the columns)."""
        return acl_text(self.stored[k].binding)

    def on_patterns(self, patterns: np.ndarray) -> np.ndarray:
        """The indices of the ACLs on any of ``patterns``."""
        _, at = ranges(self.pattern_ptr[patterns], self.pattern_ptr[patterns + 1] - self.pattern_ptr[patterns])
        return at

    def applying(self, patterns: np.ndarray, principals, host: int, wildcard: int) -> np.ndarray:
        """The indices of the ACLs on any of ``patterns`` that apply to a request of any of
        ``principals`` (ids: its own, its groups') from the host whose id is ``host``: those
        of these principals or of ``User:*`` (id ``wildcard``), on host ``*`` or that host."""
        at = self.on_patterns(patterns)
        members = np.asarray(principals)
        who = np.isin(self.principal[at], np.append(members[members >= 0], wildcard))
        return at[who & ((self.host[at] == 0) | (self.host[at] == host))]


def acl_table(authorizer, compiled: CompiledAcls) -> AclTable:
    """The authorizer's ACLs laid out for ``compiled``'s ids (see :class:`AclTable`): each
    pattern's id is looked up once for all its ACLs."""
    stored = list(standard_authorizer(authorizer).stored_acls())
    pattern_ids: dict[tuple, int] = {}
    principal_id, host_id = compiled.principal_id, compiled.host_id
    columns: list[list[int]] = [[], [], [], [], [], [], []]  # pattern, principal, host, operation, is ALLOW, allow, deny
    pattern_of, principal_of, host_of, operation_of, is_allow_of, allow_of, deny_of = columns
    for item in stored:
        binding = item.binding
        resource, entry = binding.pattern, binding.entry
        key = (resource.resource_type, resource.name, resource.pattern_type)
        found = pattern_ids.get(key)
        if found is None:
            found = compiled.pattern_id(resource.resource_type, resource.name, resource.pattern_type is PatternType.PREFIXED)
            found = pattern_ids[key] = -1 if found is None else found
        pattern_of.append(found)
        principal_of.append(principal_id(entry.principal))
        host_of.append(host_id(entry.host))
        operation_of.append(entry.operation)
        is_allow_of.append(entry.permission_type is AclPermissionType.ALLOW)
        allows, denies = acl_masks(binding)
        allow_of.append(allows)
        deny_of.append(denies)
    order = np.argsort(np.array(pattern_of, dtype=np.int64), kind="stable")
    stored = [stored[k] for k in order.tolist()]
    pattern, principal, host, operation, is_allow, allow, deny = (np.array(column, dtype=np.int64)[order] for column in columns)
    mask = (1 << 16) - 1  # ALL's mask sets bits of UNKNOWN and ANY too: only operations' bits count
    return AclTable(
        stored=stored, pattern=pattern, principal=principal, host=host, operation=operation,
        is_allow=is_allow.astype(bool), allow=allow & mask, deny=deny & mask,
        pattern_ptr=np.searchsorted(pattern, np.arange(compiled.pattern_count + 1)),
    )
