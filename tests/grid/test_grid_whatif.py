"""The what-if's marks: each added or removed ACL's count of changed pairs is the authorizer's own
(its state with and without that ACL, cell by cell, principals expanded by the groupfile plugin),
and an ACL that changes nothing says why, naming the ACLs behind it."""

import grid_support
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding
from kafkasec.authorizer.decision import acl_text
from spark_udfs.acl_table import acl_table
from spark_udfs.compact import CompactGrid
from spark_udfs.rules import compile_acls
from spark_udfs.whatif import what_if

PRINCIPALS, RESOURCES = grid_support.PRINCIPALS, grid_support.RESOURCES


def cells(bindings, membership, allow_everyone) -> np.ndarray:
    """Every cell of the grid under ``bindings``, by KafkaSecurity.authorize."""
    with grid_support.group_security(bindings, membership, allow_everyone) as security:
        return np.array([[grid_support.authorized_bits(security, p, h, t, n) for t, n in RESOURCES] for p, h in PRINCIPALS])


def change_of(before, added, removed, membership, allow_everyone):
    """What the report's what-if computes for ``before`` + ``added`` - ``removed``."""
    after = [binding for binding in dict.fromkeys(before + added) if binding not in removed]
    with grid_support.group_security(before, membership, allow_everyone) as security:
        compact = CompactGrid.build(compile_acls(security, principals=[p for p, _ in PRINCIPALS]), PRINCIPALS, RESOURCES)
        return what_if(security, compact, acl_table(security, compact.compiled), after), after


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=grid_support.acls, added=grid_support.acls, data=st.data(), membership=grid_support.memberships,
       allow_everyone=st.booleans())
def test_each_mark_counts_the_pairs_its_acl_changes_or_says_why_none(before, added, data, membership, allow_everyone):
    removed = data.draw(st.lists(st.sampled_from(before), unique=True, max_size=3)) if before else []
    change, after = change_of(before, added, removed, membership, allow_everyone)
    assert {mark.acl for mark in change.marks} == set(change.added) | set(change.removed)
    texts = {mark.acl: mark for mark in change.marks}
    for bindings, acls in ((after, [b for b in dict.fromkeys(added) if b not in before and b not in removed]),
                           (before, [b for b in dict.fromkeys(removed) if b not in after])):
        with_acl = cells(bindings, membership, allow_everyone)
        for binding in acls:
            mark = texts[acl_text(binding)]
            without = cells([b for b in bindings if b != binding], membership, allow_everyone)
            assert mark.pairs == int((with_acl != without).sum()), mark
            assert mark.scope >= mark.pairs
            assert bool(mark.reason) == (mark.pairs == 0), mark


def test_an_acl_that_changes_nothing_names_the_deny_that_shadows_it_or_the_allow_already_there():
    before = [AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "READ", "ALLOW"),
              AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
              AclBinding.of("GROUP", "billing", "LITERAL", "User:*", "*", "READ", "ALLOW")]
    added = [AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:alice", "*", "READ", "ALLOW"),      # already, by her group
             AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:carol", "*", "READ", "ALLOW"),  # shadowed
             AclBinding.of("TOPIC", "payments", "LITERAL", "Group:eng", "*", "WRITE", "ALLOW"),       # alice, bob x 2 hosts, Group:eng
             AclBinding.of("TOPIC", "payments", "LITERAL", "User:erin", "10.0.0.2", "WRITE", "ALLOW"),  # 1 pair
             AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:dave", "*", "WRITE", "DENY"),       # nothing to deny
             AclBinding.of("TOPIC", "nowhere", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
             AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:zed", "*", "READ", "ALLOW")]
    change, _ = change_of(before, added, [before[2]], {"eng": ["alice", "bob"]}, False)
    marks = {mark.acl: mark for mark in change.marks}
    alice = marks["ALLOW User:alice from host * READ on TOPIC LITERAL 'orders-eu'"]
    assert (alice.pairs, alice.allows, alice.denies) == (0, ("ALLOW Group:eng from host * READ on TOPIC PREFIXED 'orders-'",), ())
    assert alice.reason == "it is already allowed by ALLOW Group:eng from host * READ on TOPIC PREFIXED 'orders-'"
    carol = marks["ALLOW User:carol from host * READ on TOPIC LITERAL 'orders-secret'"]
    assert (carol.pairs, carol.denies) == (0, ("DENY User:* from host * ALL on TOPIC LITERAL 'orders-secret'",))
    assert carol.reason == "it is shadowed by DENY User:* from host * ALL on TOPIC LITERAL 'orders-secret'"
    assert marks["ALLOW Group:eng from host * WRITE on TOPIC LITERAL 'payments'"].pairs == 5
    assert marks["ALLOW User:erin from host 10.0.0.2 WRITE on TOPIC LITERAL 'payments'"].pairs == 1
    assert marks["DENY User:dave from host * WRITE on TOPIC LITERAL 'orders-eu'"].reason == (
        "nothing it denies is allowed there: no ALLOW ACL grants it")
    assert marks["ALLOW User:alice from host * READ on TOPIC LITERAL 'nowhere'"].reason == "it matches no resource of the grid"
    assert marks["ALLOW User:zed from host * READ on TOPIC LITERAL 'orders-eu'"].reason.startswith("it applies to no principal")
    # Removed: User:* READ on billing, billing's only ACL; without it no ACL matches billing.
    billing = marks["ALLOW User:* from host * READ on GROUP LITERAL 'billing'"]
    assert (billing.change, billing.pairs) == ("removed", len(PRINCIPALS) - 2)  # every principal's, super users apart
