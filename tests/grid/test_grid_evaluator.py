"""The vectorized evaluator agrees with StandardAuthorizer.authorized_operations on every row:
random ACL sets (DENY, User:*, hosts, prefixes, '*'), super users and allow-everyone, with client
hosts written as the authorizer would canonicalize them."""

import grid_support
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from spark_udfs.compact import CompactGrid
from spark_udfs.evaluator import CompiledAcls

PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:eng", "User:carol"]
HOSTS = ["*", "10.0.0.1", "10.0.0.2", "fd00:0:0:0:0:0:0:d77"]
NAMES = ["orders", "orders-eu", "ord", "*", "payments", "o", "orders-eu-1", "ordé", "ordé-😀"]
TYPES = ["TOPIC", "GROUP", "CLUSTER"]
ROW_TYPES = TYPES + ["TRANSACTIONAL_ID", "USER"]
OPERATIONS = ["ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
              "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"]

acls = st.lists(
    st.builds(
        lambda rt, name, pt, principal, host, op, perm: AclBinding.of(
            rt, "kafka-cluster" if rt == "CLUSTER" else name, "LITERAL" if rt == "CLUSTER" else pt, principal, host, op, perm
        ),
        st.sampled_from(TYPES + ["TRANSACTIONAL_ID"]), st.sampled_from(NAMES), st.sampled_from(["LITERAL", "PREFIXED"]),
        st.sampled_from(PRINCIPALS), st.sampled_from(HOSTS), st.sampled_from(OPERATIONS),
        st.sampled_from(["ALLOW", "DENY"]),
    ),
    max_size=25,
)
# Every (principal, host, type, name) combination: the whole grid, so DENYs, hosts and
# prefixes are always asked about.
GRID = [
    (principal, host, resource_type, name)
    for principal in PRINCIPALS + ["User:dave", "User:admin"]
    # IPv6 written other ways than the ACLs', and an IPv4-mapped address: the grid reads each
    # as the authorizer does (Java's getHostAddress text).
    for host in ("10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::d77", "FD00:0::D77", "::ffff:10.0.0.1")
    for resource_type in ROW_TYPES
    for name in NAMES + ["kafka-cluster", "zzz"]
]


def expected(authorizer, rows):
    return [
        operations_to_bitfield(
            authorizer.authorized_operations(
                RequestContext(KafkaPrincipal.parse(p), host), ResourcePattern(rt, name)
            )
        )
        for p, host, rt, name in rows
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=acls, allow_everyone=st.booleans(), super_users=st.sampled_from(["", "User:admin", "User:alice;User:admin"]))
def test_evaluator_matches_authorized_operations(acls, allow_everyone, super_users):
    rows = GRID
    authorizer = StandardAuthorizer(super_users, allow_everyone)
    authorizer.create_acls(acls)
    compiled = CompiledAcls.from_authorizer(authorizer)
    principals, hosts, types, names = zip(*rows)
    got = compiled.authorized_operations(list(principals), list(hosts), list(types), list(names))
    assert got.dtype == np.int32
    assert got.tolist() == expected(authorizer, rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=acls, allow_everyone=st.booleans(), super_users=st.sampled_from(["", "User:admin"]))
def test_the_grid_of_a_kafkasecurity_is_what_it_answers(acls, allow_everyone, super_users):
    """What users run: KafkaSecurity.authorized_operations, for every row of the grid (hosts
    written every way included), equals the compact grid compiled from that KafkaSecurity."""
    from kafkasec import KafkaSecurity
    from spark_udfs.spark import compile_acls

    with KafkaSecurity(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone) as security:
        results = security.create_acls(acls)
        stored = [result.binding for result in results if result.error is None]
        assert len(stored) == len(acls)
        principals = sorted({(p, h) for p, h, _, _ in GRID})
        resources = sorted({(t, n) for _, _, t, n in GRID})
        dense = CompactGrid.build(compile_acls(security), principals, resources).dense()
        for i, (p, h) in enumerate(principals):
            context = RequestContext(KafkaPrincipal.parse(p), h)
            for j, (t, n) in enumerate(resources):
                assert dense[i, j] == operations_to_bitfield(security.authorized_operations(context, ResourcePattern(t, n)))


def test_no_acls_at_all_follows_allow_everyone():
    for allow_everyone in (False, True):
        compiled = CompiledAcls.from_authorizer(StandardAuthorizer("", allow_everyone))
        [bits] = compiled.authorized_operations(["User:a"], ["10.0.0.1"], ["TOPIC"], ["t"]).tolist()
        assert bits == (operations_to_bitfield(["READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                                                "DESCRIBE_CONFIGS", "ALTER_CONFIGS"]) if allow_everyone else 0)


def test_it_pickles_and_answers_the_same():
    import pickle

    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls([AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "10.0.0.1", "READ", "ALLOW")])
    compiled = CompiledAcls.from_authorizer(authorizer)
    copy = pickle.loads(pickle.dumps(compiled))
    args = (["User:alice", "User:alice"], ["10.0.0.1", "10.0.0.2"], [2, 2], ["orders-eu", "orders-eu"])
    assert copy.authorized_operations(*args).tolist() == compiled.authorized_operations(*args).tolist()
    assert compiled.authorized_operations(*args).tolist()[1] == 0


@pytest.mark.parametrize(
    "args, error",
    [
        ((["User:a"], ["10.0.0.1"], ["ANY"], ["t"]), ValueError),
        ((["User:a"], ["10.0.0.1"], [0], ["t"]), ValueError),
        ((["User:a", "User:b"], ["10.0.0.1"], ["TOPIC"], ["t"]), ValueError),
        ((["User:a"], ["10.0.0.1"], ["TOPIC"], [None]), ValueError),
        (([1], ["10.0.0.1"], ["TOPIC"], ["t"]), TypeError),
        # As the authorizer: a client host is an IP address, a principal has a type.
        ((["User:a"], ["broker-1.example"], ["TOPIC"], ["t"]), ValueError),
        ((["User:a"], ["*"], ["TOPIC"], ["t"]), ValueError),
        ((["alice"], ["10.0.0.1"], ["TOPIC"], ["t"]), ValueError),
    ],
)
def test_bad_input_is_a_clear_error(args, error):
    compiled = CompiledAcls.from_authorizer(StandardAuthorizer())
    with pytest.raises(error):
        compiled.authorized_operations(*args)


def test_an_ipv6_host_written_another_way_meets_its_acls():
    """The issue's case: the ACL names fd00:0:0:0:0:0:0:d77, the principal row fd00::d77."""
    authorizer = StandardAuthorizer()
    authorizer.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "fd00:0:0:0:0:0:0:d77", "READ", "ALLOW")])
    compiled = CompiledAcls.from_authorizer(authorizer)
    rows = (["User:alice"] * 3, ["fd00::d77", "FD00:0:0::d77", "fd00::d78"], ["TOPIC"] * 3, ["orders"] * 3)
    got = compiled.authorized_operations(*rows).tolist()
    assert got == expected(authorizer, list(zip(*rows))) and got[0] == got[1] != 0 and got[2] == 0
    grid = CompactGrid.build(compiled, list(zip(rows[0], rows[1])), [("TOPIC", "orders")])
    assert grid.dense().tolist() == [[got[0]], [got[1]], [0]]


def test_a_principal_row_is_read_at_its_first_colon_as_the_authorizer_reads_it():
    """A grid's principals are text, read as Kafka's parseKafkaPrincipal reads it: "Us:er:alice" is
    type "Us", name "er:alice", the principal the ACL "Us:er:alice" names; super.users is text."""
    authorizer = StandardAuthorizer(super_users="Us:er:bob")
    authorizer.create_acls([AclBinding.of("GROUP", "FOO", "LITERAL", "Us:er:alice", "*", "READ", "ALLOW")])
    compiled = CompiledAcls.from_authorizer(authorizer)
    rows = (["Us:er:alice", "Us:er:bob", "Us:alice"], ["10.0.0.1"] * 3, ["GROUP"] * 3, ["FOO"] * 3)
    got = compiled.authorized_operations(*rows).tolist()
    assert got == expected(authorizer, list(zip(*rows)))
    assert got[0] == operations_to_bitfield(["READ", "DESCRIBE"]) and got[2] == 0
    assert got[1] == operations_to_bitfield(["READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"])


# --- compact grids ------------------------------------------------------------------------------

GRID_PRINCIPALS = [(p, h) for p in PRINCIPALS + ["User:dave", "User:admin"]
                   for h in ("10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::d77", "::ffff:10.0.0.2")]
GRID_RESOURCES = [(rt, n) for rt in ROW_TYPES for n in NAMES + ["kafka-cluster", "zzz"]]


def allowed_cells(compact: CompactGrid, bit: int) -> np.ndarray:
    """The cells allowing ``bit``, read from allowed_blocks by its documented rule, cell by cell."""
    blocks = compact.allowed_blocks(bit)
    base = set(zip(blocks.base_rc.tolist(), blocks.base_hc.tolist()))
    revoked = set(zip(blocks.revoked_pc.tolist(), blocks.revoked_rc.tolist()))
    granted = set(zip(blocks.granted_pc.tolist(), blocks.granted_rc.tolist()))
    out = np.zeros((len(compact.principals), len(compact.resources)), dtype=bool)
    for i, pc in enumerate(compact.principal_class.tolist()):
        for j, rc in enumerate(compact.resource_class.tolist()):
            if compact.class_is_super[pc]:
                out[i, j] = blocks.super_allowed[rc]
            else:
                in_base = (rc, int(compact.class_host[pc])) in base and (pc, rc) not in revoked
                out[i, j] = in_base or (pc, rc) in granted
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=acls, allow_everyone=st.booleans(), super_users=st.sampled_from(["", "User:admin", "User:alice;User:admin"]))
def test_compact_grid_is_the_dense_grid(acls, allow_everyone, super_users):
    authorizer = StandardAuthorizer(super_users, allow_everyone)
    authorizer.create_acls(acls)
    compiled = CompiledAcls.from_authorizer(authorizer)
    compact = CompactGrid.build(compiled, GRID_PRINCIPALS, GRID_RESOURCES)
    rows = [(p, h, rt, n) for p, h in GRID_PRINCIPALS for rt, n in GRID_RESOURCES]
    want = np.array(expected(authorizer, rows), dtype=np.int32).reshape(len(GRID_PRINCIPALS), len(GRID_RESOURCES))
    dense = compact.dense()
    assert (dense == want).all()
    assert compact.bits(4, 7) == want[4, 7]
    assert all((compact.row(i) == want[i]).all() for i in range(len(want)))
    for bit in (1 << 3, 1 << 4, 1 << 8):
        assert compact.count_allowed(bit) == int(((want & bit) != 0).sum())
        assert (allowed_cells(compact, bit) == ((want & bit) != 0)).all()
    # Per-class summaries agree with the dense grid.
    per_resource = compact.principals_allowed(1 << 3)[compact.resource_class]
    assert per_resource.tolist() == ((want & (1 << 3)) != 0).sum(axis=0).tolist()
    grants = compact.grants_per_principal_class()[compact.principal_class]
    assert grants.tolist() == np.bitwise_count(want).sum(axis=1).tolist()
    # Far fewer stored values than cells: the base blocks and the exceptions.
    assert compact.base.size + len(compact.exception_bits) <= compact.cells
    # principals_of lists each asked class's principals, in the order the classes were asked.
    classes = np.array([pc for pc in range(len(compact.class_is_super)) for _ in range(pc % 3)], dtype=np.int64)[::-1]
    which, principal = compact.principals_of(classes)
    assert [(int(classes[w]), p) for w, p in zip(which.tolist(), principal.tolist())] == [
        (int(pc), i) for pc in classes for i in np.flatnonzero(compact.principal_class == pc).tolist()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=acls, added=acls, limit=st.integers(0, 400))
def test_differences_are_the_dense_grids_compared_without_dense_grids(before, added, limit):
    grids = []
    for bindings in (before, before + added):
        authorizer = StandardAuthorizer("User:admin")
        authorizer.create_acls(bindings)
        grids.append(CompactGrid.build(CompiledAcls.from_authorizer(authorizer), GRID_PRINCIPALS, GRID_RESOURCES))
    first, second = (grid.dense() for grid in grids)
    every = [(int(i), int(j), int(first[i, j]), int(second[i, j])) for i, j in np.argwhere(first != second)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CompactGrid, "dense", lambda self: pytest.fail("a what-if must not make dense grids"))
        assert grids[0].differences(grids[1], limit) == every[:limit]
        changes = grids[0].changed_blocks(grids[1])
    # The joint blocks, expanded by their documented rule, are exactly the changed cells.
    expanded = {
        (i, j, before, after)
        for jp, jr, before, after in zip(*(a.tolist() for a in (changes.jp, changes.jr, changes.before, changes.after)))
        for i in np.flatnonzero(changes.joint_pc == jp).tolist() for j in np.flatnonzero(changes.joint_rc == jr).tolist()
    }
    assert expanded == set(every)


def test_differences_refuse_grids_of_other_principals():
    authorizer = StandardAuthorizer()
    compiled = CompiledAcls.from_authorizer(authorizer)
    one = CompactGrid.build(compiled, GRID_PRINCIPALS, GRID_RESOURCES)
    other = CompactGrid.build(compiled, GRID_PRINCIPALS[:3], GRID_RESOURCES)
    with pytest.raises(ValueError, match="same principals and resources"):
        one.differences(other, 10)


# --- effective access: principals expanded by plugins (the groupfile plugin) ---------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=grid_support.acls, membership=grid_support.memberships, allow_everyone=st.booleans())
def test_grids_with_group_membership_are_what_kafkasecurity_authorizes(acls, membership, allow_everyone):
    """With the groupfile plugin loaded, every cell of the compact grid, every row of the
    evaluator and every class summary equals KafkaSecurity.authorize on that cell."""
    from spark_udfs.rules import compile_acls

    principals, resources = grid_support.PRINCIPALS, grid_support.RESOURCES
    with grid_support.group_security(acls, membership, allow_everyone) as security:
        want = np.array([[grid_support.authorized_bits(security, p, h, t, n) for t, n in resources] for p, h in principals])
        compiled = compile_acls(security, principals=[p for p, _ in principals])
    assert compiled.expansion is not None
    compact = CompactGrid.build(compiled, principals, resources)
    assert (compact.dense() == want).all()
    rows = [(p, h, t, n) for p, h in principals for t, n in resources]
    assert compiled.authorized_operations(*map(list, zip(*rows))).reshape(want.shape).tolist() == want.tolist()
    for bit in (1 << 3, 1 << 4, 1 << 7):
        assert compact.count_allowed(bit) == int(((want & bit) != 0).sum())
        assert (allowed_cells(compact, bit) == ((want & bit) != 0)).all()
    assert compact.everyone_class_bits()[compact.resource_class].tolist() == np.bitwise_and.reduce(want, axis=0).tolist()


def test_a_principal_the_expansion_did_not_ask_about_is_refused():
    """Its groups are unknown: answering for it as if it had none would be the very mistake."""
    from spark_udfs.rules import compile_acls

    with grid_support.group_security([AclBinding.of("TOPIC", "t", "LITERAL", "Group:eng", "*", "READ", "ALLOW")],
                                     {"eng": ["alice"]}) as security:
        compiled = compile_acls(security, principals=["User:alice"])
    assert compiled.expansion.groups == {"User:alice": ("Group:eng",)}
    assert compiled.authorized_operations(["User:alice"], ["10.0.0.1"], ["TOPIC"], ["t"]).tolist() == [
        operations_to_bitfield(["READ", "DESCRIBE"])]
    with pytest.raises(ValueError, match="User:bob was not expanded"):
        compiled.authorized_operations(["User:bob"], ["10.0.0.1"], ["TOPIC"], ["t"])
