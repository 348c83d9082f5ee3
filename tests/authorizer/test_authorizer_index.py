"""The ACL index changed one ACL at a time is the index built at once, and old snapshots stay
exactly as they were (readers never see a change under them)."""

from hypothesis import given, settings, strategies as st

from kafkasec import AclBinding, Action, RequestContext, ResourcePattern
from kafkasec.authorizer.index import AclIndex, StoredAcl
from kafkasec.authorizer.standard import StandardAuthorizer

NAMES = ["a", "ab", "abc", "b", "*"]
acls = st.builds(
    AclBinding.of,
    st.sampled_from(["TOPIC", "GROUP"]),
    st.sampled_from(NAMES),
    st.sampled_from(["LITERAL", "PREFIXED"]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "10.0.0.1"]),
    st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE"]),
    st.sampled_from(["ALLOW", "DENY"]),
)


def answers(index: AclIndex):
    """Everything a reader can ask of an index, as plain values."""
    authorizer = StandardAuthorizer()
    authorizer._index = index
    result = [sorted(s.acl_id for s in index), len(index)]
    for resource_type, type_index in sorted(index.types.items()):
        result.append((resource_type, type_index.prefix_lengths, dict(type_index.group_counts)))
    for principal in ("User:alice", "User:bob", "User:carol"):
        for host in ("10.0.0.1", "10.0.0.2"):
            context = RequestContext.for_principal(principal, host)
            for resource_type in ("TOPIC", "GROUP"):
                for name in ("a", "abc", "abd", "b", "zzz", "*"):
                    pattern = ResourcePattern(resource_type, name)
                    result.append(sorted(authorizer.authorized_operations(context, pattern)))
                for operation in ("READ", "WRITE"):
                    result.append(authorizer.authorize_by_resource_type(context, operation, resource_type))
    return result


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), acls), min_size=1, max_size=30))
def test_one_change_at_a_time_equals_a_build(steps):
    index, live, snapshots = AclIndex.build(()), {}, []
    for number, (add, binding) in enumerate(steps):
        snapshots.append((index, answers(index)))
        if add or not live:
            stored = StoredAcl(f"id-{number}", binding)
            live[stored.acl_id] = stored
            index = index.apply([stored], ())
        else:
            removed = live.pop(sorted(live)[number % len(live)])
            index = index.apply((), [removed])
        # Asked in between, so that memos carried from snapshot to snapshot are exercised.
        assert answers(index) == answers(AclIndex.build(live.values()))
    for old, seen in snapshots:
        assert answers(old) == seen  # untouched by every later change


def test_a_reader_keeps_its_snapshot_through_a_thousand_changes():
    stored = [StoredAcl(f"id-{n}", AclBinding.of("TOPIC", f"t{n % 50}", "LITERAL", f"User:u{n}", "*", "READ", "ALLOW"))
              for n in range(500)]
    index = AclIndex.build(stored)
    kept = index
    for acl in stored:
        index = index.apply((), [acl])
    assert len(index) == 0 and len(kept) == 500
    authorizer = StandardAuthorizer()
    authorizer._index = kept
    context = RequestContext.for_principal("User:u7", "10.0.0.1")
    assert authorizer.authorize(context, [Action("READ", ResourcePattern("TOPIC", "t7"))])[0].name == "ALLOWED"


def test_the_index_exports_one_row_per_pattern_principal_and_host():
    from kafkasec.acl import AclBinding, AclOperation, PatternType, ResourceType
    from kafkasec.authorizer.index import AclIndex, GrantRow, StoredAcl

    def acl(acl_id, name, pattern_type, principal, host, operation, permission):
        return StoredAcl(acl_id, AclBinding.of("TOPIC", name, pattern_type, principal, host, operation, permission), "store")

    index = AclIndex.build([
        acl("1", "orders", "LITERAL", "User:a", "*", "READ", "ALLOW"),
        acl("2", "orders", "LITERAL", "User:a", "*", "WRITE", "ALLOW"),
        acl("3", "orders", "LITERAL", "User:a", "10.0.0.1", "ALL", "DENY"),
        acl("4", "ord", "PREFIXED", "User:*", "*", "DESCRIBE", "DENY"),
    ])
    bit = lambda *ops: sum(1 << int(AclOperation[o]) for o in ops)  # noqa: E731
    rows = sorted(index.export_grants())
    assert rows == sorted([
        GrantRow(ResourceType.TOPIC, PatternType.LITERAL, "orders", "User:a", "*", bit("READ", "WRITE", "DESCRIBE"), 0),
        GrantRow(ResourceType.TOPIC, PatternType.LITERAL, "orders", "User:a", "10.0.0.1", 0, rows[1].deny),
        GrantRow(ResourceType.TOPIC, PatternType.PREFIXED, "ord", "User:*", "*", 0, bit("DESCRIBE")),
    ])
    assert rows[1].deny & bit("READ", "WRITE", "ALTER", "DELETE") == bit("READ", "WRITE", "ALTER", "DELETE")
