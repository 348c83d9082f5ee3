"""The report's findings equal what the authorizer answers, cell by cell, on random estates whose
access comes through groups: cluster powers by principal, what every principal may do, the
resources no ACL matches, the ACLs each finding lists, the super users by name."""

import grid_support
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec.acl import AclOperation, PatternType, ResourceType
from spark_udfs.findings import CLUSTER_POWERS
from spark_udfs.report import audit_summaries

PRINCIPALS, RESOURCES = grid_support.PRINCIPALS, grid_support.RESOURCES


def matches(binding, resource_type, name) -> bool:
    """Kafka's pattern matching, written out: the literal name, the literal '*', a prefix."""
    pattern = binding.pattern
    if pattern.resource_type != ResourceType.coerce(resource_type):
        return False
    if pattern.pattern_type is PatternType.PREFIXED:
        return name.startswith(pattern.name)
    return pattern.name in (name, "*")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=grid_support.acls, membership=grid_support.memberships, allow_everyone=st.booleans())
def test_findings_are_what_the_authorizer_answers(acls, membership, allow_everyone):
    with grid_support.group_security(acls, membership, allow_everyone) as security:
        cells = np.array([[grid_support.authorized_bits(security, p, h, t, n) for t, n in RESOURCES] for p, h in PRINCIPALS])
        bindings = [stored.binding for stored in security.authorizer.stored_acls()]
        found = {finding.key: finding for finding in audit_summaries(security, PRINCIPALS, RESOURCES)["findings"]}
    ordinary = [i for i, (p, _) in enumerate(PRINCIPALS) if p != "User:admin"]
    cluster = RESOURCES.index(("CLUSTER", "kafka-cluster"))
    powers = {PRINCIPALS[i]: cells[i, cluster] & CLUSTER_POWERS for i in ordinary if cells[i, cluster] & CLUSTER_POWERS}
    assert found["cluster-powers"].count == len(powers)
    assert {(item.cells[0], item.cells[1]): item.cells[2] for item in found["cluster-powers"].items} == {
        key: " ".join(op.name for op in AclOperation if op > AclOperation.ALL and bits & (1 << op)) for key, bits in powers.items()}
    everyone = np.bitwise_and.reduce(cells, axis=0)
    assert found["everyone"].count == int(np.count_nonzero(everyone))
    assert {(item.cells[0], item.cells[1]): int(item.cells[2]) for item in found["everyone"].items} == {
        (t, op.name): sum(1 for j, (tj, _) in enumerate(RESOURCES) if tj == t and everyone[j] & (1 << op))
        for t in {t for t, _ in RESOURCES} for op in AclOperation if op > AclOperation.ALL
        if any(tj == t and everyone[j] & (1 << op) for j, (tj, _) in enumerate(RESOURCES))}
    without = [(t, n) for t, n in RESOURCES if not any(matches(b, t, n) for b in bindings)]
    assert [RESOURCES[j] for j in found["no-acls"].resources] == without
    assert found["allow-everyone"].count == (len(without) if allow_everyone else 0)
    allows = [b for b in bindings if b.entry.permission_type.name == "ALLOW"]
    wildcard = [b for b in allows if "*" in b.entry.principal.partition(":")[2] and b.entry.operation.name not in ("READ", "DESCRIBE")]
    assert found["wildcard-principals"].count == len(wildcard) == len(found["wildcard-principals"].acls)
    assert found["all-grants"].count == sum(b.entry.operation is AclOperation.ALL for b in allows)
    assert found["short-prefixes"].count == sum(b.pattern.pattern_type is PatternType.PREFIXED and len(b.pattern.name) <= 1
                                                for b in bindings)
    assert found["super-users"].count == 1 and found["super-users"].items[0].cells == ("User:admin", "10.0.0.1, 10.0.0.2")
