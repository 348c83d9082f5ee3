"""The audit report's first view: what an auditor checks before anything else, each finding with
its count, the Kafka rule it comes from and a link to the rows behind it (docs/grids.md,
"Findings"). Read from the compact grid and the ACL table; no cell is materialized.
"""

from __future__ import annotations

from typing import Mapping

import attrs
import numpy as np

from kafkasec.acl import BITFIELD_OPERATIONS, WILDCARD_PRINCIPAL, AclOperation, ResourceType, operations_to_bitfield
from spark_udfs.acl_table import AclTable
from spark_udfs.compact import CompactGrid
from spark_udfs.provenance import Provenance

MAX_FINDING_ITEMS = 1_000
"""The items a finding lists at most (all are counted)."""
CLUSTER_POWERS = operations_to_bitfield(["ALTER", "ALTER_CONFIGS", "CREATE", "CLUSTER_ACTION", "IDEMPOTENT_WRITE"])
"""The operations on the CLUSTER resource that change the cluster."""
_READ_ONLY = (AclOperation.READ, AclOperation.DESCRIBE)


@attrs.frozen
class FindingItem:
    """One line of a finding, and the report view (the state of its address) that shows the
    rows behind it."""

    cells: tuple[str, ...]
    rows: Mapping[str, str]


@attrs.frozen
class Finding:
    """What the report's findings view lists: ``count`` things (``noun``, singular) that
    ``rule`` (Kafka's) makes worth an auditor's look, and the view of all their rows. What it
    lists is one of: ``items`` (the first :data:`MAX_FINDING_ITEMS`, under ``columns``), every
    ACL (``acls``: indices into the report's :class:`~spark_udfs.acl_table.AclTable`, in ACL
    text order), or every resource (``resources``: grid indices, ascending)."""

    key: str
    title: str
    count: int
    noun: str
    rule: str
    rows: Mapping[str, str]
    columns: tuple[str, ...] = ()
    items: tuple[FindingItem, ...] = ()
    acls: np.ndarray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64), eq=False)
    resources: np.ndarray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64), eq=False)
    note: str = ""


def findings(compact: CompactGrid, table: AclTable, provenance: Provenance, shadowed_count: int,
             everyone: np.ndarray) -> list[Finding]:
    """The findings of a grid, in the order an auditor reads them; ``everyone`` is per resource
    what every principal of the grid may do. Items list principals and resources in the
    report's order (sorted; by type name, then name); their links name them by their index in
    the grid (``principal``, ``resource``)."""
    names = compact.compiled.principal_names()
    wildcard_like = np.array([name == WILDCARD_PRINCIPAL or "*" in name.partition(":")[2] for name in names] or [False])
    broad = table.is_allow & wildcard_like[table.principal] & ~np.isin(table.operation, _READ_ONLY)
    no_acl = compact.class_ptr[compact.representative + 1] == compact.class_ptr[compact.representative]
    resources_without_acls = np.flatnonzero(no_acl[compact.resource_class])
    allow_everyone = provenance.allow_everyone_if_no_acl_found
    return [
        _acl_finding(table, "wildcard-principals", "Wildcard principals allowed more than DESCRIBE and READ", broad,
                     "Kafka applies an ACL of User:* to every principal that can log in, and matches any other "
                     "principal exactly: a name with '*' in it (User:svc-*) is no pattern, it names one principal "
                     "literally, which is seldom what its author meant."),
        _cluster_powers(compact),
        _acl_finding(table, "all-grants", "ALLOW ACLs of the operation ALL", table.is_allow & (table.operation == AclOperation.ALL),
                     "ALL allows every operation the resource type supports, DELETE, ALTER and ALTER_CONFIGS included; "
                     "Kafka's ALLOW of ALL implies them all."),
        _acl_finding(table, "short-prefixes", "PREFIXED patterns of at most one character",
                     np.isin(table.pattern, compact.compiled.short_prefixes(1)),
                     "A PREFIXED pattern matches every resource of its type whose name starts with it: an empty or "
                     "one-character prefix covers most of an estate, and every name created later."),
        Finding(
            "allow-everyone", "allow.everyone.if.no.acl.found is " + ("on" if allow_everyone else "off"),
            len(resources_without_acls) if allow_everyone else 0, "open resource",
            "Kafka's authorizer allows every principal every operation on a resource that no ACL matches when "
            "allow.everyone.if.no.acl.found=true; when false, only super users may use such a resource.",
            {"view": "finding", "finding": "no-acls"},
            note="" if allow_everyone else "Off: a resource without ACLs is refused to all but super users.",
        ),
        Finding(
            "no-acls", "Resources with no ACL at all", len(resources_without_acls), "resource",
            "No literal, wildcard or prefixed ACL matches these resources, so allow.everyone.if.no.acl.found "
            "decides them: " + ("every principal may do everything." if allow_everyone else "only super users may use them."),
            {"view": "finding", "finding": "no-acls"}, resources=resources_without_acls,
        ),
        _super_users(compact, provenance),
        Finding(
            "shadowed", "ALLOW grants shadowed by a DENY", shadowed_count, "ACL",
            "DENY beats ALLOW in Kafka: an ALLOW ACL whose operation a matching DENY takes away on every resource "
            "of the grid it matches grants nothing, and usually means the estate is not what its owners think.",
            {"view": "shadowed"},
        ),
        _everyone_can(compact, everyone),
    ]


def _acl_finding(table: AclTable, key: str, title: str, chosen: np.ndarray, rule: str) -> Finding:
    """A finding that lists ACLs: every one ``chosen`` selects, in ACL text order (stable
    between reports of the same ACLs)."""
    acls = np.array(sorted(np.flatnonzero(chosen).tolist(), key=table.text), dtype=np.int64)
    return Finding(key, title, len(acls), "ACL", rule, {"view": "finding", "finding": key}, acls=acls)


def _cluster_powers(compact: CompactGrid) -> Finding:
    """The principals (super users apart) allowed an operation that changes the cluster, on
    the grid's CLUSTER resources."""
    rule = ("On the CLUSTER resource Kafka's CREATE creates any topic, ALTER changes ACLs and more, ALTER_CONFIGS "
            "changes broker configs, CLUSTER_ACTION is what brokers do to each other, IDEMPOTENT_WRITE lets a "
            "producer write idempotently anywhere it may write.")
    rows = {"view": "finding", "finding": "cluster-powers"}
    cluster = np.flatnonzero(compact.class_types == ResourceType.CLUSTER)
    if not len(cluster):
        return Finding("cluster-powers", "Cluster powers, by principal", 0, "principal", rule, rows,
                       note="Not judged: the grid has no CLUSTER resource (add CLUSTER kafka-cluster to its resources).")
    # Per principal class, over the grid's CLUSTER resource classes: its cells and the base's.
    base = compact.base[cluster][:, compact.class_host].T  # [pc, cluster class]
    cells = base.copy()
    on_cluster = np.isin(compact.exception_rc, cluster)
    cells[compact.exception_pc[on_cluster], np.searchsorted(cluster, compact.exception_rc[on_cluster])] = \
        compact.exception_bits[on_cluster]
    powers = np.bitwise_or.reduce(cells, axis=1) & CLUSTER_POWERS
    powers[compact.class_is_super] = 0
    anyones = np.bitwise_or.reduce(base, axis=1) & CLUSTER_POWERS
    holders = np.flatnonzero(powers[compact.principal_class])
    items = []
    for i in sorted(holders.tolist(), key=compact.principals.__getitem__)[:MAX_FINDING_ITEMS]:
        pc = compact.principal_class[i]
        principal, host = compact.principals[i]
        how = ("anyone from its host may (User:* ACLs or allow.everyone.if.no.acl.found)" if powers[pc] & ~anyones[pc] == 0
               else "its own ACLs or its groups'")
        items.append(FindingItem((principal, host, " ".join(_names(int(powers[pc]))), how),
                                 {"view": "principal", "principal": str(i), "type": "CLUSTER"}))
    return Finding("cluster-powers", "Cluster powers, by principal", len(holders), "principal", rule, rows,
                   ("principal", "host", "operations on the cluster", "granted by"), tuple(items))


def _super_users(compact: CompactGrid, provenance: Provenance) -> Finding:
    """The super users by name (super.users), with their hosts among the grid's principals."""
    hosts: dict[str, list[str]] = {}
    for i in sorted(np.flatnonzero(compact.class_is_super[compact.principal_class]).tolist(), key=compact.principals.__getitem__):
        principal, host = compact.principals[i]
        hosts.setdefault(principal, []).append(host)
    return Finding(
        "super-users", "Super users", len(provenance.super_users), "super user",
        "Kafka's super.users skip the ACLs: a super user may do every operation on every resource, whatever the "
        "DENYs say. Counted by name, as super.users lists them.",
        {"view": "finding", "finding": "super-users"}, ("super user", "among the grid's principals"),
        tuple(FindingItem((name, ", ".join(hosts[name]) if name in hosts else "not among the grid's principals"),
                          {"view": "grid", "kind": "super", "p": name})
              for name in provenance.super_users[:MAX_FINDING_ITEMS]),
    )


def _everyone_can(compact: CompactGrid, everyone: np.ndarray) -> Finding:
    """Per resource type and operation, how many resources every principal of the grid may use so."""
    types = compact.resource_types
    items = []
    for code in np.unique(types).tolist():
        of_type = everyone[types == code]
        for op in BITFIELD_OPERATIONS:
            count = int(np.count_nonzero(of_type & (1 << op)))
            if count:
                name = ResourceType.coerce(code).name
                items.append(FindingItem((name, op.name, f"{count:,}"), {"view": "everyone", "type": name, "op": str(int(op))}))
    return Finding(
        "everyone", "What every principal of the grid may do", int(np.count_nonzero(everyone)), "resource",
        "What no principal needs an ACL of its own for: ACLs of User:* (from any host, or from every host the grid's "
        "principals use) and, with allow.everyone.if.no.acl.found=true, resources no ACL matches. Every operation "
        "counts, not only READ on topics.",
        {"view": "everyone"}, ("resource type", "operation", "resources"), tuple(items),
    )


def _names(bits: int) -> list[str]:
    return [op.name for op in BITFIELD_OPERATIONS if bits & (1 << op)]
