"""The evaluator on a real local SparkSession: the Arrow UDF and grids agree with
StandardAuthorizer.authorized_operations pair by pair."""

import json
import os

import grid_support
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import (
    AclBinding,
    KafkaPrincipal,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    StandardAuthorizer,
    hookimpl,
)
from kafkasec.acl import AclOperation, ResourceType, bitfield_to_operations, operations_to_bitfield
from spark_udfs.provenance import acl_digest
from spark_udfs.spark import (
    authorized_operations_udf,
    compile_acls,
    diff,
    grid,
    local_session,
    operation_names,
    who_can,
)

ACLS = [
    AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
    AclBinding.of("TOPIC", "*", "LITERAL", "User:bob", "10.0.0.2", "WRITE", "ALLOW"),
    AclBinding.of("GROUP", "billing", "LITERAL", "User:*", "*", "READ", "ALLOW"),
    AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:carol", "*", "ALTER_CONFIGS", "ALLOW"),
]
PRINCIPALS = [("User:alice", "10.0.0.1"), ("User:bob", "10.0.0.2"), ("User:bob", "10.0.0.3"),
              ("User:carol", "10.0.0.1"), ("User:admin", "10.0.0.9"), ("User:dave", "10.0.0.1")]
RESOURCES = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "payments"),
             ("GROUP", "billing"), ("GROUP", "other"), ("CLUSTER", "kafka-cluster")]


random_acls = st.lists(
    st.builds(
        lambda rt, name, pt, principal, host, op, perm: AclBinding.of(rt, name, pt, principal, host, op, perm),
        st.sampled_from(["TOPIC", "GROUP"]), st.sampled_from(["orders-", "orders-eu", "*", "billing", "o"]),
        st.sampled_from(["LITERAL", "PREFIXED"]), st.sampled_from(["User:alice", "User:bob", "User:*"]),
        st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]), st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE"]),
        st.sampled_from(["ALLOW", "DENY"]),
    ),
    max_size=12,
)

pytestmark = pytest.mark.slow  # every test here takes several seconds


@pytest.fixture(scope="session")
def spark():
    session = local_session("local[2]", "kafkasec-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def authorizer():
    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls(ACLS)
    return authorizer


def expected(authorizer, principal, host, resource_type, name):
    context = RequestContext(KafkaPrincipal.parse(principal), host)
    return operations_to_bitfield(authorizer.authorized_operations(context, ResourcePattern(resource_type, name)))


def test_the_arrow_udf_matches_authorized_operations(spark, authorizer):
    rows = [(p, h, rt, n) for p, h in PRINCIPALS for rt, n in RESOURCES]
    frame = spark.createDataFrame(rows, "principal string, host string, resource_type string, resource_name string")
    udf = authorized_operations_udf(spark, authorizer)
    got = frame.withColumn("ops", udf("principal", "host", "resource_type", "resource_name")).collect()
    assert len(got) == len(rows)
    for row in got:
        assert row.ops == expected(authorizer, row.principal, row.host, row.resource_type, row.resource_name), row


def test_dense_grid_has_every_pair_and_names_the_operations(spark, authorizer):
    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    result = grid(spark, authorizer, principals, resources).withColumn("names", operation_names("operations")).collect()
    assert len(result) == len(PRINCIPALS) * len(RESOURCES)
    for row in result:
        bits = expected(authorizer, row.principal, row.host, row.resource_type, row.resource_name)
        assert row.operations == bits
        assert sorted(row.names) == sorted(op.name for op in bitfield_to_operations(bits))


def test_allowed_grid_keeps_the_pairs_with_the_operation(spark, authorizer):
    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    readers = grid(spark, authorizer, principals, resources, output="allowed", operation="READ")
    got = {(r.principal, r.host, r.resource_type, r.resource_name, r.operations) for r in readers.collect()}
    want = {
        (p, h, int(ResourceType.coerce(rt)), n, expected(authorizer, p, h, rt, n)) for p, h in PRINCIPALS for rt, n in RESOURCES
        if expected(authorizer, p, h, rt, n) & (1 << 3)
    }
    assert got == want
    pairs = {cell[:4] for cell in got}
    assert ("User:alice", "10.0.0.1", 2, "orders-eu") in pairs
    assert ("User:alice", "10.0.0.1", 2, "orders-secret") not in pairs   # DENY beats ALLOW
    assert ("User:admin", "10.0.0.9", 2, "orders-secret") in pairs      # a super user


def test_factorized_and_pair_by_pair_grids_agree(spark, authorizer, monkeypatch):
    import spark_udfs.spark as module

    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    cells = {tuple(r) for r in grid(spark, authorizer, principals, resources).collect()}
    compact = grid(spark, authorizer, principals, resources, output="compact")
    assert {tuple(r) for r in compact.dense().collect()} == cells
    assert compact.base.count() < len(cells)
    for in_plan in (module.GRANTS_IN_PLAN_BYTES, 0):  # granting exceptions as a constant, then joined
        monkeypatch.setattr(module, "GRANTS_IN_PLAN_BYTES", in_plan)
        for operation in ("READ", "WRITE", "DESCRIBE", "ALTER_CONFIGS"):
            bit = 1 << int(AclOperation.coerce(operation))
            allowed = {tuple(r) for r in compact.allowed(operation).collect()}
            assert allowed == {cell for cell in cells if cell[4] & bit}, (operation, in_plan)
    monkeypatch.setattr(module, "MAX_CLASS_VALUES", 0)  # too large: the Arrow UDF path
    assert {tuple(r) for r in grid(spark, authorizer, principals, resources).collect()} == cells
    by_udf = {tuple(r) for r in grid(spark, authorizer, principals, resources, output="allowed", operation="READ").collect()}
    assert by_udf == {cell for cell in cells if cell[4] & (1 << 3)}


def test_allowed_pairs_keep_names_that_need_escaping(spark, monkeypatch):
    """Granting exceptions can travel inside the query plan as JSON: quotes, backslashes,
    control characters and characters outside the BMP come out as they went in, and the plan
    answers as the joins do."""
    import spark_udfs.spark as module

    names = ['User:quo"te', "User:back\\slash", "User:new\nline", "User:tab\t", "User:ünï", "User:😀", "User:{}[],:"]
    reference = StandardAuthorizer()
    reference.create_acls([AclBinding.of("TOPIC", f"t{i}", "LITERAL", name, "*", "READ", "ALLOW") for i, name in enumerate(names)])
    rows = [(name, "fd00::1") for name in names] + [("User:nobody", "10.0.0.1")]
    principals = spark.createDataFrame(rows, "principal string, host string")
    resources = spark.createDataFrame([("TOPIC", f"t{i}") for i in range(len(names))], "resource_type string, resource_name string")
    compact = grid(spark, reference, principals, resources, output="compact")
    want = {(name, "fd00::1", 2, f"t{i}") for i, name in enumerate(names)}
    # In the plan; joined; and joined when the pairs are few enough but their names are not.
    just_the_count = len(names) * module._SMALLEST_GRANT_JSON + len(compact.grid.base) * len("[],")
    for in_plan, joined in ((module.GRANTS_IN_PLAN_BYTES, False), (0, True), (just_the_count, True)):
        monkeypatch.setattr(module, "GRANTS_IN_PLAN_BYTES", in_plan)
        readers = compact.allowed("READ")
        assert {tuple(r)[:4] for r in readers.collect()} == want, in_plan
        plan = readers._jdf.queryExecution().executedPlan().toString()
        assert ("Join" in plan) == joined, plan


def test_grid_from_a_kafkasec_state_and_without_hosts(spark, tmp_path):
    with KafkaSecurity.from_config({"kafkasec.state.path": str(tmp_path / "state.db")}) as security:
        security.create_acls(ACLS)
        principals = spark.createDataFrame([("User:alice",), ("User:zed",)], "principal string")
        resources = spark.createDataFrame([(2, "orders-eu")], "resource_type int, resource_name string")
        rows = {r.principal: r.operations for r in grid(spark, security, principals, resources).collect()}
    assert rows == {"User:alice": operations_to_bitfield(["READ", "DESCRIBE"]), "User:zed": 0}
    # With a compact output too: the class tables, expanded by joins.
    with KafkaSecurity.from_config({"kafkasec.state.path": str(tmp_path / "state.db")}) as security:
        compact = grid(spark, security, principals, resources, output="compact")
        assert {r.principal: r.operations for r in compact.dense().collect()} == rows


class DecidingPlugin:
    """An authorizer of its own beside the standard one: it decides by code no table can hold."""

    @hookimpl
    def kafkasec_authorize(self, security, context, actions):
        return None


def test_plugins_that_expand_principals_are_applied_and_plugins_that_decide_are_refused(tmp_path):
    """Group expansion (the groupfile plugin) is a function of the principal: the grid applies it
    on the driver, principal by principal. A plugin answering kafkasec_authorize decides by its
    own code, which no grid can show: refused by name, as before."""
    import kafkasec_groupfile

    from security_support import open_security

    (tmp_path / "groups.txt").write_text("eng: alice\n", encoding="utf-8")
    with open_security(plugins=[kafkasec_groupfile], **{kafkasec_groupfile.PATH_SETTING: str(tmp_path / "groups.txt")}) as security:
        assert security.authorization.plugins_expanding_principals() == ["kafkasec_groupfile"]
        assert security.authorization.plugins_deciding() == []
        assert compile_acls(security, principals=["User:alice"]).expansion.groups == {"User:alice": ("Group:eng",)}
    with open_security(plugins=[DecidingPlugin()]) as deciding:
        assert deciding.authorization.plugins_deciding() == ["test_grid_spark"]
        with pytest.raises(ValueError, match="the plugins test_grid_spark decide what this KafkaSecurity answers"):
            compile_acls(deciding)
    with open_security() as plain:
        assert plain.authorization.plugins_expanding_principals() == plain.authorization.plugins_deciding() == []
        assert compile_acls(plain).expansion is None


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(acls=grid_support.acls, membership=grid_support.memberships, allow_everyone=st.booleans(), grants_in_plan=st.booleans())
def test_grids_udf_who_can_and_diff_give_the_access_users_have(spark, acls, membership, allow_everyone, grants_in_plan):
    """With the groupfile plugin loaded, every cell of a dense grid, of the Arrow UDF and of the
    allowed pairs equals KafkaSecurity.authorize on that cell; who_can and a diff (a grant to a
    group, given as bindings judged by the security's expansion) too."""
    import spark_udfs.spark as module

    principal_rows, resource_rows = grid_support.PRINCIPALS, grid_support.RESOURCES
    principals = spark.createDataFrame(principal_rows, "principal string, host string")
    resources = spark.createDataFrame(resource_rows, "resource_type string, resource_name string")
    grant = AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "WRITE", "ALLOW")
    with grid_support.group_security(acls + [grant], membership, allow_everyone) as after_security:
        after = {(p, h, int(ResourceType.coerce(t)), n): grid_support.authorized_bits(after_security, p, h, t, n)
                 for p, h in principal_rows for t, n in resource_rows}
    with grid_support.group_security(acls, membership, allow_everyone) as security:
        want = {(p, h, int(ResourceType.coerce(t)), n): grid_support.authorized_bits(security, p, h, t, n)
                for p, h in principal_rows for t, n in resource_rows}
        assert {tuple(r)[:4]: r.operations for r in grid(spark, security, principals, resources).collect()} == want
        udf = authorized_operations_udf(spark, security, principals=principals)
        by_udf = principals.crossJoin(resources).select(
            "principal", "host", "resource_type", "resource_name", udf("principal", "host", "resource_type", "resource_name").alias("ops"))
        assert {(r.principal, r.host, int(ResourceType.coerce(r.resource_type)), r.resource_name): r.ops
                for r in by_udf.collect()} == want
        in_plan = module.GRANTS_IN_PLAN_BYTES
        module.GRANTS_IN_PLAN_BYTES = in_plan if grants_in_plan else 0
        try:
            readers = {tuple(r)[:4] for r in grid(spark, security, principals, resources, output="allowed", operation="READ").collect()}
        finally:
            module.GRANTS_IN_PLAN_BYTES = in_plan
        assert readers == {key for key, bits in want.items() if bits & (1 << 3)}
        who = {tuple(r) for r in who_can(spark, security, "READ", "TOPIC", "orders-eu", principals).collect()}
        assert who == {(p, h) for p, h in principal_rows if want[(p, h, 2, "orders-eu")] & (1 << 3)}
        today = [stored.binding for stored in security.authorizer.stored_acls()]
        changed = {(r.principal, r.host, r.resource_type, r.resource_name): (r.before, r.after)
                   for r in diff(spark, security, today + [grant], principals, resources).collect()}
    assert changed == {key: (want[key], after[key]) for key in want if want[key] != after[key]}


def test_the_udf_of_a_security_that_expands_principals_needs_them(spark, tmp_path):
    """Expansion happens on the driver: the UDF is told which principals its rows hold, and a row
    of another principal fails its task, naming it."""
    rows = [("User:alice", "10.0.0.1", "TOPIC", "orders-eu"), ("User:bob", "10.0.0.1", "TOPIC", "orders-eu")]
    frame = spark.createDataFrame(rows, "principal string, host string, resource_type string, resource_name string")
    granted = [AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "READ", "ALLOW")]
    with grid_support.group_security(granted, {"eng": ["alice", "bob"]}) as security:
        with pytest.raises(ValueError, match="pass principals="):
            authorized_operations_udf(spark, security)
        udf = authorized_operations_udf(spark, security, principals=["User:alice"])
        with pytest.raises(Exception, match="User:bob was not expanded"):
            frame.select(udf("principal", "host", "resource_type", "resource_name")).collect()
        udf = authorized_operations_udf(spark, security, principals=frame)
        assert [r[0] for r in frame.select(udf("principal", "host", "resource_type", "resource_name")).collect()] == [
            operations_to_bitfield(["READ", "DESCRIBE"])] * 2


def test_bad_grid_requests_are_clear_errors(spark, authorizer):
    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    with pytest.raises(ValueError, match="output"):
        grid(spark, authorizer, principals, resources, output="sparse")
    with pytest.raises(ValueError, match="needs the operation"):
        grid(spark, authorizer, principals, resources, output="allowed")
    with pytest.raises(ValueError, match="filter value"):
        grid(spark, authorizer, principals, resources, output="allowed", operation="ANY")
    with pytest.raises(ValueError, match="missing column"):
        grid(spark, authorizer, principals.withColumnRenamed("principal", "who"), resources)
    with pytest.raises(TypeError):
        compile_acls(["not an ACL"])
    with pytest.raises(ValueError, match="cannot be stored"):
        compile_acls([AclBinding.of("CLUSTER", "not-the-cluster", "LITERAL", "User:x", "*", "ALTER", "ALLOW")])
    frame = spark.createDataFrame([("User:a", "10.0.0.1", "ANY", "t")], "principal string, host string, resource_type string, resource_name string")
    udf = authorized_operations_udf(spark, authorizer)
    with pytest.raises(Exception, match="not a concrete resource type"):
        frame.select(udf("principal", "host", "resource_type", "resource_name")).collect()


def test_who_can_and_diff(spark, authorizer, monkeypatch):
    import spark_udfs.spark as module

    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    readers = {(r.principal, r.host) for r in who_can(spark, authorizer, "READ", "TOPIC", "orders-eu", principals).collect()}
    assert readers == {(p, h) for p, h in PRINCIPALS if expected(authorizer, p, h, "TOPIC", "orders-eu") & (1 << 3)}
    assert ("User:alice", "10.0.0.1") in readers
    after = StandardAuthorizer("User:admin")
    after.create_acls(ACLS + [AclBinding.of("TOPIC", "payments", "LITERAL", "User:dave", "*", "WRITE", "ALLOW")])
    after.delete_acls([ACLS[0].to_filter()])  # alice's READ on the orders- prefix
    def changed_cells(before, after_acls):
        return {tuple(tuple(v) if isinstance(v, list) else v for v in r)
                for r in diff(spark, before, after_acls, principals, resources).collect()}

    by_blocks = changed_cells(authorizer, after)
    changes = {(r[0], r[1], r[3]): (list(r[6]), list(r[7])) for r in by_blocks}
    assert changes == {
        ("User:dave", "10.0.0.1", "payments"): (["WRITE", "DESCRIBE"], []),
        ("User:alice", "10.0.0.1", "orders-eu"): ([], ["READ", "DESCRIBE"]),
    }
    # Every changed cell, as the two dense grids joined (the fallback for huge class tables) say.
    monkeypatch.setattr(module, "MAX_CLASS_VALUES", 0)
    assert changed_cells(authorizer, after) == by_blocks
    monkeypatch.undo()
    broad = StandardAuthorizer("User:admin")
    broad.create_acls(ACLS + [AclBinding.of("TOPIC", "*", "LITERAL", "User:*", "*", "DESCRIBE", "ALLOW")])
    cells = {tuple(r) for r in grid(spark, authorizer, principals, resources).collect()}
    broad_cells = {tuple(r)[:4]: r[4] for r in grid(spark, broad, principals, resources).collect()}
    want = {cell[:4] + (cell[4], broad_cells[cell[:4]]) for cell in cells if cell[4] != broad_cells[cell[:4]]}
    got = {cell[:6] for cell in changed_cells(authorizer, broad)}
    assert got == want and len(want) > 5


def test_a_diff_judges_bindings_by_the_other_sides_settings(spark):
    """A what-if given as AclBindings is evaluated with the super users and the
    allow.everyone.if.no.acl.found of the side it is compared with: the diff of a security
    (super user User:admin, allow-everyone on) against its own ACLs plus one grant is exactly
    that grant, on either side, not the super user and the topic without ACLs losing everything."""
    with KafkaSecurity.from_config({"kafkasec.state.path": ":memory:", "super.users": "User:admin",
                                    "allow.everyone.if.no.acl.found": "true"}) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW")])
        principals = spark.createDataFrame([("User:admin",), ("User:bob",), ("User:carol",)], "principal string")
        resources = spark.createDataFrame([("TOPIC", "orders"), ("TOPIC", "no-acls")], "resource_type string, resource_name string")
        today = [stored.binding for stored in security.authorizer.stored_acls()]
        grant = AclBinding.of("TOPIC", "orders", "LITERAL", "User:bob", "*", "WRITE", "ALLOW")
        bob_gains_write = [("User:bob", "orders", ["WRITE"], [])]
        gained = diff(spark, security, today + [grant], principals, resources)
        assert [(r.principal, r.resource_name, r.gained, r.lost) for r in gained.collect()] == bob_gains_write
        lost = diff(spark, today + [grant], security, principals, resources)
        assert [(r.principal, r.resource_name, r.lost, r.gained) for r in lost.collect()] == bob_gains_write


def test_kafkasec_grid_command_reads_csv_and_writes_parquet_and_csv(spark, tmp_path, capsys):
    from kafkasec.cli import main

    state = str(tmp_path / "state.db")
    with KafkaSecurity(state_path=state) as security:
        security.create_acls(ACLS)
    (tmp_path / "principals.csv").write_text("principal,host\n" + "".join(f"{p},{h}\n" for p, h in PRINCIPALS))
    (tmp_path / "resources.csv").write_text("resource_type,resource_name\n" + "".join(f"{t},{n}\n" for t, n in RESOURCES))
    common = ["--state", state, "grid", "--principals", str(tmp_path / "principals.csv"),
              "--resources", str(tmp_path / "resources.csv")]
    assert main(common + ["--output", str(tmp_path / "dense")]) == 0
    cells = spark.read.parquet(str(tmp_path / "dense")).collect()
    assert len(cells) == len(PRINCIPALS) * len(RESOURCES)
    reference = StandardAuthorizer()
    reference.create_acls(ACLS)
    for row in cells:  # names, not codes: the resource type and the operations
        assert row.bitfield == expected(reference, row.principal, row.host, row.resource_type, row.resource_name)
        assert row.operations == [op.name for op in sorted(bitfield_to_operations(row.bitfield))]
    assert main(common + ["--output", str(tmp_path / "readers"), "--format", "csv", "--output-type", "allowed",
                          "--operation", "Read"]) == 0
    # One CSV file with one header; the resource type and the operations by name; its provenance beside it.
    assert sorted(os.listdir(tmp_path / "readers")) == ["_provenance.json", "grid.csv"]
    provenance = json.loads((tmp_path / "readers" / "_provenance.json").read_text())
    with KafkaSecurity(state_path=state) as security:
        offset = security.applied_offset
    assert provenance["source"] == f"state file {state}" and provenance["log_position"] == offset
    assert (provenance["acl_count"], provenance["principals"], provenance["resources"]) == (5, len(PRINCIPALS), len(RESOURCES))
    assert (provenance["output_type"], provenance["format"], provenance["operation"]) == ("allowed", "csv", "READ")
    assert provenance["acl_digest"] == acl_digest(ACLS) and provenance["super_users"] == []
    lines = (tmp_path / "readers" / "grid.csv").read_text().splitlines()
    assert lines[0] == "principal,host,resource_type,resource_name,operations,bitfield"
    assert sum(line.startswith("principal,") for line in lines) == 1
    assert any(line.startswith("User:alice,10.0.0.1,TOPIC,orders-eu,READ DESCRIBE,") for line in lines), lines
    assert main(common + ["--output", str(tmp_path / "compact"), "--output-type", "compact",
                          "--report", str(tmp_path / "report.html")]) == 0
    assert "Principals by privilege" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '"whatif":null' in (tmp_path / "report.html").read_text(encoding="utf-8")
    (tmp_path / "change.json").write_text(
        '[{"resource_type": "TOPIC", "resource_name": "payments", "pattern_type": "LITERAL", "principal": "User:dave",'
        ' "host": "*", "operation": "WRITE", "permission_type": "ALLOW"}]')
    assert main(common + ["--output", str(tmp_path / "what-if"), "--report", str(tmp_path / "what-if.html"),
                          "--what-if", str(tmp_path / "change.json")]) == 0
    page = (tmp_path / "what-if.html").read_text(encoding="utf-8")
    data = json.loads(page.split('<script id="data" type="application/json">')[1].split("</script>")[0])
    assert data["whatif"]["added"] == ["ALLOW User:dave from host * WRITE on TOPIC LITERAL 'payments'"]
    assert data["whatif"]["removed"] == []
    # dave (from each of his hosts) gains WRITE on payments, and nothing else changes.
    assert data["whatif"]["pairs"] == sum(p == "User:dave" for p, _ in PRINCIPALS) * RESOURCES.count(("TOPIC", "payments"))
    assert sorted(os.listdir(tmp_path / "compact")) == ["_provenance.json", "base", "exceptions", "principals", "resources"]
    captured = capsys.readouterr()
    assert "wrote the compact grid" in captured.out
    assert "kafkasec grid:" not in captured.err  # no terminal here: no progress unless asked
    assert main(common + ["--output", str(tmp_path / "empty"), "--format", "csv", "--output-type", "allowed",
                          "--operation", "ClusterAction", "--progress"]) == 0
    assert (tmp_path / "empty" / "grid.csv").read_text() == "principal,host,resource_type,resource_name,operations,bitfield\n"
    stages = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kafkasec grid:")]
    assert [line.split(" (")[0] for line in stages] == [
        "kafkasec grid: [1/4] starting Spark",
        "kafkasec grid: [2/4] reading the ACLs, principals and resources",
        "kafkasec grid: [3/4] evaluating 5 ACLs over the principals and resources",
        "kafkasec grid: the first result is ready",
        "kafkasec grid: [4/4] writing the allowed grid",
        "kafkasec grid: done",
    ]


def test_kafkasec_grid_gives_the_access_users_have_and_its_provenance(spark, tmp_path, monkeypatch):
    """kafkasec grid with the groupfile plugin configured (--command-config, as an installation
    loads it): alice reads orders-eu through Group:eng in the grid, as the authorizer answers,
    and the grid's provenance and its report name the plugin."""
    from kafkasec.cli import main

    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "groupfile")
    (tmp_path / "groups.txt").write_text("eng: alice\n", encoding="utf-8")
    (tmp_path / "client.properties").write_text(
        f"kafkasec.state.path={tmp_path / 'state.db'}\nkafkasec.groupfile.path={tmp_path / 'groups.txt'}\n", encoding="utf-8")
    with KafkaSecurity(state_path=str(tmp_path / "state.db")) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "READ", "ALLOW")])
    (tmp_path / "principals.csv").write_text("principal,host\nUser:alice,10.0.0.1\nUser:carol,10.0.0.1\n")
    (tmp_path / "resources.csv").write_text("resource_type,resource_name\nTOPIC,orders-eu\n")
    assert main(["--command-config", str(tmp_path / "client.properties"), "grid", "--principals", str(tmp_path / "principals.csv"),
                 "--resources", str(tmp_path / "resources.csv"), "--output", str(tmp_path / "out"), "--format", "csv",
                 "--report", str(tmp_path / "report.html")]) == 0
    lines = (tmp_path / "out" / "grid.csv").read_text().splitlines()
    assert sorted(lines[1:]) == ["User:alice,10.0.0.1,TOPIC,orders-eu,READ DESCRIBE,264", 'User:carol,10.0.0.1,TOPIC,orders-eu,"",0']  # Spark quotes an empty value
    provenance = json.loads((tmp_path / "out" / "_provenance.json").read_text())
    assert provenance["principal_expansion"] == ["kafkasec_groupfile"]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    block = json.loads(page.split('<script id="provenance" type="application/json">')[1].split("</script>")[0])
    assert {key: provenance[key] for key in block} == block  # the report's is the output's, less what the output adds


@pytest.fixture
def counted_builds(monkeypatch):
    """How many times CompactGrid.build and distinct_pairs (the driver's collect of the distinct
    principals and resources) run, by name."""
    import spark_udfs.spark as module
    from spark_udfs.compact import CompactGrid

    calls = {"build": 0, "distinct_pairs": 0}
    build, distinct_pairs = CompactGrid.build.__func__, module.distinct_pairs

    def counting_build(cls, *args, **kwargs):
        calls["build"] += 1
        return build(cls, *args, **kwargs)

    def counting_distinct_pairs(*args, **kwargs):
        calls["distinct_pairs"] += 1
        return distinct_pairs(*args, **kwargs)

    monkeypatch.setattr(CompactGrid, "build", classmethod(counting_build))
    monkeypatch.setattr(module, "distinct_pairs", counting_distinct_pairs)
    return calls


def test_grid_takes_a_prebuilt_compact_grid(spark, authorizer, counted_builds):
    from spark_udfs.spark import build_compact

    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    compact = build_compact(authorizer, principals, resources)
    assert counted_builds == {"build": 1, "distinct_pairs": 1}
    cells = {tuple(r) for r in grid(spark, authorizer, principals, resources, compact=compact).collect()}
    readers = grid(spark, authorizer, principals, resources, output="allowed", operation="READ", compact=compact)
    assert counted_builds == {"build": 1, "distinct_pairs": 1}
    assert cells == {tuple(r) for r in grid(spark, authorizer, principals, resources).collect()}
    assert {tuple(r) for r in readers.collect()} == {cell for cell in cells if cell[4] & (1 << 3)}


def test_kafkasec_grid_builds_one_compact_grid_per_side(spark, tmp_path, capsys, counted_builds):
    """The grid and its report read one CompactGrid: one build without --what-if, two of the
    whole grid with (today's and the change's) and two of the pairs its one ACL bears on (its
    mark), and the distinct principals and resources collected once."""
    from kafkasec.cli import main

    state = str(tmp_path / "state.db")
    with KafkaSecurity(state_path=state) as security:
        security.create_acls(ACLS)
    (tmp_path / "principals.csv").write_text("principal,host\n" + "".join(f"{p},{h}\n" for p, h in PRINCIPALS))
    (tmp_path / "resources.csv").write_text("resource_type,resource_name\n" + "".join(f"{t},{n}\n" for t, n in RESOURCES))
    (tmp_path / "change.json").write_text(
        '[{"resource_type": "TOPIC", "resource_name": "payments", "pattern_type": "LITERAL", "principal": "User:dave",'
        ' "host": "*", "operation": "WRITE", "permission_type": "ALLOW"}]')
    common = ["--state", state, "grid", "--principals", str(tmp_path / "principals.csv"),
              "--resources", str(tmp_path / "resources.csv")]
    for options, builds in (([], 1), (["--report", str(tmp_path / "r.html")], 1),
                            # today's and the change's, and the added ACL's mark: two grids of its own pairs
                            (["--report", str(tmp_path / "w.html"), "--what-if", str(tmp_path / "change.json")], 4)):
        counted_builds.update(build=0, distinct_pairs=0)
        output = tmp_path / f"out-{len(options)}"
        assert main(common + ["--output", str(output), *options]) == 0, capsys.readouterr().err
        assert counted_builds == {"build": builds, "distinct_pairs": 1}, options


def test_check_written_finds_part_files_missing_from_the_driver(spark, tmp_path):
    """The check behind ``grid --output``: the rows Spark wrote against those in the part files
    the driver sees, on a real Parquet write from which part files are then removed (as on a
    disk only the driver has, where the executors' parts never arrive)."""
    from kafkasec.cli.grid import _parquet_rows, check_written
    from kafkasec.cli.options import CommandError

    directory = tmp_path / "grid"
    spark.range(0, 1000, numPartitions=4).write.parquet(str(directory))
    parts = sorted(entry for entry in os.listdir(directory) if entry.startswith("part-"))
    assert len(parts) == 4 and sorted(_parquet_rows(str(directory))) == [250] * 4
    check_written(str(directory), 1000, sum(_parquet_rows(str(directory))))
    for part in parts[1:]:
        os.remove(directory / part)
    with pytest.raises(CommandError) as missing:
        check_written(str(directory), 1000, sum(_parquet_rows(str(directory))))
    assert str(missing.value) == (
        f"--output {directory}: 750 of 1,000 rows are not in {directory}: the executors wrote them to their own "
        "disks; give a directory that the driver and every executor share (a shared mount such as NFS, or for "
        "Parquet an hdfs:// or s3a:// URI)")


def test_kafkasec_grid_refuses_bad_command_lines(tmp_path, capsys):
    from kafkasec.cli import main

    (tmp_path / "p.csv").write_text("principal\nUser:a\n")
    base = ["--state", str(tmp_path / "s.db"), "grid", "--principals", str(tmp_path / "p.csv"), "--output", str(tmp_path / "o")]
    assert main(base + ["--resources", str(tmp_path / "missing.csv")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(base + ["--resources", str(tmp_path / "p.csv"), "--output-type", "allowed"]) == 1
    assert "needs --operation" in capsys.readouterr().err
    assert main(base + ["--resources", str(tmp_path / "p.csv"), "--operation", "Read"]) == 1
    assert not (tmp_path / "o").exists()


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(acls=random_acls, allow_everyone=st.booleans(), grants_in_plan=st.booleans())
def test_udf_and_grids_match_authorized_operations_on_random_acls(spark, acls, allow_everyone, grants_in_plan):
    import spark_udfs.spark as module

    reference = StandardAuthorizer("User:admin", allow_everyone)
    reference.create_acls(acls)
    principals = spark.createDataFrame(PRINCIPALS, "principal string, host string")
    resources = spark.createDataFrame(RESOURCES, "resource_type string, resource_name string")
    want = {(p, h, int(ResourceType.coerce(t)), n): expected(reference, p, h, t, n) for p, h in PRINCIPALS for t, n in RESOURCES}
    dense = {tuple(r)[:4]: r.operations for r in grid(spark, reference, principals, resources).collect()}
    assert dense == want
    udf = authorized_operations_udf(spark, reference)
    by_udf = principals.crossJoin(resources).select(
        "principal", "host", "resource_type", "resource_name", udf("principal", "host", "resource_type", "resource_name").alias("ops"))
    assert {(r.principal, r.host, int(ResourceType.coerce(r.resource_type)), r.resource_name): r.ops for r in by_udf.collect()} == want
    in_plan = module.GRANTS_IN_PLAN_BYTES
    module.GRANTS_IN_PLAN_BYTES = in_plan if grants_in_plan else 0  # granting exceptions as a constant, or joined
    try:
        readers = {tuple(r)[:4] for r in grid(spark, reference, principals, resources, output="allowed", operation="READ").collect()}
    finally:
        module.GRANTS_IN_PLAN_BYTES = in_plan
    assert readers == {key for key, bits in want.items() if bits & (1 << 3)}


def test_a_missing_java_is_a_clear_error(monkeypatch):
    import spark_udfs.spark as module

    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(RuntimeError, match="Java 17"):
        local_session()
