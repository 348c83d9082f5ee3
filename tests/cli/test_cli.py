"""The kafkasec command: kafka-acls.sh's semantics and text, our subcommands, and its errors.

Each test runs ``main`` in-process on a state file in tmp_path and reads the state back through
KafkaSecurity, so it checks what was stored, not only what was printed. One test runs the
installed console script in a subprocess.
"""

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys

import pytest

from kafkasec import (
    AclBinding,
    AclOperation,
    Action,
    AuthorizationResult,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    StandardAuthorizer,
    operations_to_bitfield,
)
from kafkasec.cli import main
from kafkasec.cli.config import read_properties
from kafkasec.store import SqliteStateStore

from cli_runner import Cli as CliRunner

TOPIC_FOO = "ResourcePattern(resourceType=TOPIC, name=foo, patternType=LITERAL)"


def acl(resource_type, name, principal, operation, permission="ALLOW", host="*", pattern_type="LITERAL"):
    return AclBinding.of(resource_type, name, pattern_type, principal, host, operation, permission)


class Cli(CliRunner):
    """The runner for the ACL commands, which also reads the state file back."""

    def stored(self) -> set:
        """The ACLs in the state file, read by a fresh KafkaSecurity."""
        with KafkaSecurity(state_path=self.state) as security:
            return set(security.acls())

    def allowed(self, principal, operation, resource_type, name, host="127.0.0.1") -> bool:
        """What a fresh StandardAuthorizer fed the state file's snapshot answers."""
        store = SqliteStateStore(self.state)
        try:
            authorizer = StandardAuthorizer()
            authorizer.load_snapshot(store.snapshot().acls)
            context = RequestContext.for_principal(principal, host)
            action = Action(operation, ResourcePattern(resource_type, name))
            return authorizer.authorize(context, [action])[0] is AuthorizationResult.ALLOWED
        finally:
            store.close()


@pytest.fixture
def cli(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    return Cli(str(tmp_path / "state.db"), capsys, monkeypatch)


def assert_one_error_line(err, expected):
    assert err.count("\n") == 1 and err.startswith("kafkasec: error: "), err
    assert expected in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- --add


def test_add_stores_the_acls_and_prints_kafkas_text(cli):
    status, out, err = cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "describe", "--topic", "foo")
    assert (status, err) == (0, "")
    assert out == (
        f"Adding ACLs for resource `{TOPIC_FOO}`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
    )
    assert cli.stored() == {acl("TOPIC", "foo", "User:alice", "READ"), acl("TOPIC", "foo", "User:alice", "DESCRIBE")}
    assert cli.allowed("User:alice", "READ", "TOPIC", "foo")
    assert not cli.allowed("User:alice", "WRITE", "TOPIC", "foo")


def test_add_reports_acls_that_already_exist_and_adds_the_rest(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "foo")
    status, out, _ = cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "foo")
    assert status == 0
    assert out == (
        f"Acl (pattern={TOPIC_FOO}, entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)) "
        "already exists.\n"
        f"Adding ACLs for resource `{TOPIC_FOO}`: \n"
        " \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
    )
    assert cli.stored() == {acl("TOPIC", "foo", "User:alice", "READ"), acl("TOPIC", "foo", "User:alice", "WRITE")}


def test_add_defaults_to_operation_all(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--group", "g")
    assert cli.stored() == {acl("GROUP", "g", "User:alice", "ALL")}
    assert cli.allowed("User:alice", "DELETE", "GROUP", "g")


def test_add_every_resource_option(cli):
    status, _, err = cli(
        "acls", "--add", "--allow-principal", "User:alice",
        "--topic", "t1", "--topic", " t2 ", "--group", "g", "--cluster", "--transactional-id", "tx",
        "--delegation-token", "token", "--user-principal", "User:bob",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert cli.stored() == {
        acl("TOPIC", "t1", "User:alice", "ALL"),
        acl("TOPIC", "t2", "User:alice", "ALL"),  # kafka-acls.sh trims names
        acl("GROUP", "g", "User:alice", "ALL"),
        acl("CLUSTER", "kafka-cluster", "User:alice", "ALL"),
        acl("TRANSACTIONAL_ID", "tx", "User:alice", "ALL"),
        acl("DELEGATION_TOKEN", "token", "User:alice", "ALL"),
        acl("USER", "User:bob", "User:alice", "ALL"),
    }


def test_add_prefixed(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "app-", "--resource-pattern-type", "PREFIXED")
    assert cli.stored() == {acl("TOPIC", "app-", "User:alice", "WRITE", pattern_type="PREFIXED")}
    assert cli.allowed("User:alice", "WRITE", "TOPIC", "app-orders")
    assert not cli.allowed("User:alice", "WRITE", "TOPIC", "other")


def test_add_hosts_and_deny_principals(cli):
    status, _, _ = cli(
        "acls", "--add", "--operation", "Read", "--topic", "t",
        "--allow-principal", "User:alice", "--allow-principal", "User:bob",
        "--allow-host", "10.0.0.1", "--allow-host", "10.0.0.2",
        "--deny-principal", "User:mallory",
    )  # fmt: skip
    assert status == 0
    assert cli.stored() == {
        acl("TOPIC", "t", "User:alice", "READ", host="10.0.0.1"),
        acl("TOPIC", "t", "User:alice", "READ", host="10.0.0.2"),
        acl("TOPIC", "t", "User:bob", "READ", host="10.0.0.1"),
        acl("TOPIC", "t", "User:bob", "READ", host="10.0.0.2"),
        acl("TOPIC", "t", "User:mallory", "READ", "DENY", host="*"),  # no --deny-host: every host
    }
    assert cli.allowed("User:alice", "READ", "TOPIC", "t", host="10.0.0.2")
    assert not cli.allowed("User:alice", "READ", "TOPIC", "t", host="10.0.0.3")


def test_deny_host(cli):
    cli("acls", "--add", "--operation", "Read", "--topic", "t", "--allow-principal", "User:*", "--deny-principal", "User:*", "--deny-host", "10.0.0.9")
    assert cli.stored() == {acl("TOPIC", "t", "User:*", "READ"), acl("TOPIC", "t", "User:*", "READ", "DENY", host="10.0.0.9")}
    assert cli.allowed("User:carol", "READ", "TOPIC", "t", host="10.0.0.1")
    assert not cli.allowed("User:carol", "READ", "TOPIC", "t", host="10.0.0.9")


def test_producer_with_transactional_id_and_idempotent(cli):
    status, _, _ = cli("acls", "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t", "--transactional-id", "tx")
    assert status == 0
    assert cli.stored() == {
        acl("TOPIC", "t", "User:p", "WRITE"),
        acl("TOPIC", "t", "User:p", "DESCRIBE"),
        acl("TOPIC", "t", "User:p", "CREATE"),
        acl("TRANSACTIONAL_ID", "tx", "User:p", "WRITE"),
        acl("TRANSACTIONAL_ID", "tx", "User:p", "DESCRIBE"),
        acl("CLUSTER", "kafka-cluster", "User:p", "IDEMPOTENT_WRITE"),
    }


def test_producer_idempotent_grants_the_literal_cluster_even_for_prefixed_topics(cli):
    cli("acls", "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "app-", "--resource-pattern-type", "prefixed")
    assert acl("CLUSTER", "kafka-cluster", "User:p", "IDEMPOTENT_WRITE") in cli.stored()
    assert acl("TOPIC", "app-", "User:p", "WRITE", pattern_type="PREFIXED") in cli.stored()


def test_consumer(cli):
    cli("acls", "--add", "--consumer", "--allow-principal", "User:c", "--allow-host", "10.0.0.1", "--topic", "t", "--group", "g")
    assert cli.stored() == {
        acl("TOPIC", "t", "User:c", "READ", host="10.0.0.1"),
        acl("TOPIC", "t", "User:c", "DESCRIBE", host="10.0.0.1"),
        acl("GROUP", "g", "User:c", "READ", host="10.0.0.1"),
    }


def test_producer_and_consumer_together_merge_on_the_topic(cli):
    cli("acls", "--add", "--producer", "--consumer", "--allow-principal", "User:pc", "--topic", "t", "--group", "g")
    topic_operations = {b.entry.operation for b in cli.stored() if b.pattern.name == "t"}
    assert topic_operations == {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE, AclOperation.READ}
    assert acl("GROUP", "g", "User:pc", "READ") in cli.stored()


def test_add_dry_run_changes_nothing(cli):
    status, out, _ = cli("acls", "--add", "--dry-run", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "foo")
    assert status == 0
    assert out.startswith(f"Would add ACLs for resource `{TOPIC_FOO}`: \n")
    assert cli.stored() == set()


def test_add_json_and_csv_output_list_what_was_added(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "foo")
    _, out, _ = cli("acls", "--add", "-o", "json", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "foo")
    assert json.loads(out) == [
        {
            "resource_type": "TOPIC",
            "resource_name": "foo",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "WRITE",
            "permission_type": "ALLOW",
        }
    ]
    _, out, _ = cli("acls", "--add", "--output", "csv", "--allow-principal", "User:bob", "--operation", "Read", "--group", "g")
    assert out == (
        "resource_type,resource_name,pattern_type,principal,host,operation,permission_type\n"
        "GROUP,g,LITERAL,User:bob,*,READ,ALLOW\n"
    )


# ---------------------------------------------------------------- --list


@pytest.fixture
def populated(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "foo")
    cli("acls", "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "foo")
    cli("acls", "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "f", "--resource-pattern-type", "prefixed")
    cli("acls", "--add", "--allow-principal", "User:alice", "--group", "g")
    return cli


def test_list_persists_across_invocations_in_kafkas_text(populated):
    status, out, _ = populated("acls", "--list", "--topic", "foo")
    assert status == 0
    assert out == (
        f"Current ACLs for resource `{TOPIC_FOO}`:\n"
        "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
    )


def test_list_without_a_resource_lists_everything(populated):
    _, out, _ = populated("acls", "--list")
    assert out.count("Current ACLs for resource") == 3
    assert "resourceType=GROUP, name=g" in out and "name=f, patternType=PREFIXED" in out


def test_list_pattern_types(populated):
    _, literal, _ = populated("acls", "--list", "--topic", "f")
    assert literal == ""
    _, prefixed, _ = populated("acls", "--list", "--topic", "f", "--resource-pattern-type", "prefixed")
    assert prefixed.count("Current ACLs") == 1 and "patternType=PREFIXED" in prefixed
    _, matching, _ = populated("acls", "--list", "--topic", "foo", "--resource-pattern-type", "match")
    assert matching.count("Current ACLs") == 2  # the literal foo and the prefix f
    _, any_type, _ = populated("acls", "--list", "--topic", "foo", "--resource-pattern-type", "any")
    assert any_type.count("Current ACLs") == 1


def test_list_by_principal(populated):
    _, out, _ = populated("acls", "--list", "--topic", "foo", "--principal", "User:bob")
    assert out == (
        "ACLs for principal `User:bob`\n"
        f"Current ACLs for resource `{TOPIC_FOO}`:\n"
        "\t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
    )


def test_list_json_and_csv_carry_the_source(populated):
    _, out, _ = populated("acls", "--list", "-o", "json", "--group", "g")
    assert json.loads(out) == [
        {
            "resource_type": "GROUP",
            "resource_name": "g",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "ALL",
            "permission_type": "ALLOW",
            "source": "store",
        }
    ]
    _, out, _ = populated("acls", "--list", "-o", "csv", "--principal", "User:bob")
    lines = out.splitlines()
    assert lines[0] == "resource_type,resource_name,pattern_type,principal,host,operation,permission_type,source"
    assert sorted(lines[1:]) == ["TOPIC,f,PREFIXED,User:bob,*,READ,ALLOW,store", "TOPIC,foo,LITERAL,User:bob,*,WRITE,ALLOW,store"]


# ---------------------------------------------------------------- --remove


def test_remove_asks_and_yes_removes_every_acl_of_the_resource(populated):
    status, out, err = populated("acls", "--remove", "--topic", "foo", stdin="y\n")
    assert status == 0
    assert err == f"Are you sure you want to delete all ACLs for resource filter `{TOPIC_FOO}`? (y/n)\n"
    assert out.startswith(f"Removed ACLs for resource `{TOPIC_FOO}`:\n")
    assert {b.pattern.name for b in populated.stored()} == {"f", "g"}


@pytest.mark.parametrize("answer", ["n\n", "yes\n", "", "\n"], ids=["no", "yes-spelled-out", "end-of-input", "empty"])
def test_remove_anything_but_y_aborts(populated, answer):
    before = populated.stored()
    status, out, err = populated("acls", "--remove", "--topic", "foo", stdin=answer)
    assert status == 1 and out == ""
    assert err.endswith("kafkasec: error: aborted: no ACLs were removed\n")
    assert populated.stored() == before


def test_remove_with_acls_asks_about_them_and_removes_only_them(populated):
    status, _, err = populated("acls", "--remove", "--topic", "foo", "--allow-principal", "User:bob", "--operation", "Write", stdin="Y\n")
    assert status == 0
    assert err == (
        "Are you sure you want to remove ACLs: \n"
        " \t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)\n"
        f" from resource filter `{TOPIC_FOO}`? (y/n)\n"
    )
    assert acl("TOPIC", "foo", "User:bob", "WRITE") not in populated.stored()
    assert acl("TOPIC", "foo", "User:alice", "READ") in populated.stored()


def test_remove_with_a_principal_and_no_operation_removes_only_operation_all(populated):
    # As in kafka-acls.sh: --operation defaults to All, which matches only ACLs for All.
    populated("acls", "--remove", "--force", "--topic", "foo", "--allow-principal", "User:alice")
    assert acl("TOPIC", "foo", "User:alice", "READ") in populated.stored()
    populated("acls", "--remove", "--force", "--group", "g", "--allow-principal", "User:alice")
    assert not any(b.pattern.name == "g" for b in populated.stored())


def test_remove_producer_removes_the_producer_acls_only(cli):
    cli("acls", "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t")
    cli("acls", "--add", "--allow-principal", "User:p", "--operation", "Read", "--topic", "t")
    status, _, _ = cli("acls", "--remove", "--force", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t")
    assert status == 0
    assert cli.stored() == {acl("TOPIC", "t", "User:p", "READ")}


def test_remove_force_does_not_ask(populated):
    status, _, err = populated("acls", "--remove", "--force", "--topic", "f", "--resource-pattern-type", "prefixed", stdin="")
    assert (status, err) == (0, "")
    assert not any(b.pattern.name == "f" for b in populated.stored())


def test_remove_match_removes_every_pattern_that_applies(populated):
    populated("acls", "--remove", "--force", "--topic", "foo", "--resource-pattern-type", "match")
    assert {b.pattern.name for b in populated.stored()} == {"g"}


def test_remove_dry_run_changes_nothing_and_does_not_ask(populated):
    before = populated.stored()
    status, out, err = populated("acls", "--remove", "--dry-run", "--topic", "foo", stdin="")
    assert (status, err) == (0, "")
    assert out == (
        f"Would remove ACLs for resource `{TOPIC_FOO}`:\n"
        "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
    )
    assert populated.stored() == before


def test_remove_json_lists_what_was_removed(populated):
    _, out, _ = populated("acls", "--remove", "--force", "-o", "json", "--group", "g")
    assert [record["resource_name"] for record in json.loads(out)] == ["g"]


# ---------------------------------------------------------------- check, who-can, authorized-ops


def test_check_allowed_and_denied_exit_codes(populated):
    status, out, _ = populated("acls", "check", "--principal", "User:alice", "--operation", "Read", "--topic", "foo")
    assert (status, out) == (0, "ALLOWED\n")
    status, out, _ = populated("acls", "check", "--principal", "User:alice", "--operation", "Write", "--topic", "foo")
    assert (status, out) == (1, "DENIED\n")


def test_check_explain_names_the_rule_and_the_authorizer(populated):
    status, out, _ = populated("acls", "check", "--principal", "User:bob", "--operation", "Read", "--topic", "fab", "--explain")
    assert status == 0
    result, rule, authorizer = out.splitlines()
    assert result == "ALLOWED"
    assert rule.startswith("rule: ALLOW User:bob from host * READ on TOPIC PREFIXED 'f' (acl ")
    assert rule.endswith(", source store)")
    assert authorizer == "authorizer: standard"


def test_check_host_and_json(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1", "--operation", "Read", "--topic", "foo")
    status, _, _ = cli("acls", "check", "--principal", "User:alice", "--operation", "Read", "--topic", "foo")
    assert status == 1  # the default host 127.0.0.1 is not 10.0.0.1
    status, out, _ = cli("acls", "check", "--principal", "User:alice", "--host", "10.0.0.1", "--operation", "Read", "--topic", "foo", "-o", "json")
    assert status == 0
    (record,) = json.loads(out)
    assert record["result"] == "ALLOWED" and record["host"] == "10.0.0.1" and record["authorizer"] == "standard"


def test_options_before_the_subcommand_name_are_kept(populated):
    status, out, _ = populated("acls", "--topic", "foo", "-o", "json", "check", "--principal", "User:alice", "--operation", "Read")
    assert status == 0 and json.loads(out)[0]["result"] == "ALLOWED"


def test_who_can(cli):
    cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "foo")
    cli("acls", "--add", "--allow-principal", "User:*", "--operation", "Read", "--topic", "foo")
    cli("acls", "--add", "--deny-principal", "User:mallory", "--operation", "Read", "--topic", "foo")
    status, out, _ = cli("acls", "who-can", "--operation", "Read", "--topic", "foo", "-o", "json")
    assert status == 0
    assert json.loads(out) == [
        {"principal": "User:alice", "host": "*", "except_hosts": [], "except_principals": [], "rule": "allow_acl"},
        {"principal": "User:*", "host": "*", "except_hosts": [], "except_principals": ["User:mallory"], "rule": "allow_acl"},
    ]
    _, table, _ = cli("acls", "who-can", "--operation", "Read", "--topic", "foo")
    assert table.splitlines()[0].split() == ["PRINCIPAL", "HOST", "EXCEPT_HOSTS", "EXCEPT_PRINCIPALS", "RULE"]
    assert table.splitlines()[2].split() == ["User:*", "*", "User:mallory", "allow_acl"]


def test_authorized_ops(populated):
    status, out, _ = populated("acls", "authorized-ops", "--principal", "User:alice", "--topic", "foo", "-o", "json")
    assert status == 0
    expected = [AclOperation.READ, AclOperation.DESCRIBE]  # READ implies DESCRIBE
    assert json.loads(out) == [{"operations": ["READ", "DESCRIBE"], "bitfield": operations_to_bitfield(expected)}]
    _, table, _ = populated("acls", "authorized-ops", "--principal", "User:alice", "--topic", "foo")
    assert table.splitlines()[1].split() == ["READ;DESCRIBE", str(operations_to_bitfield(expected))]
    _, csv_text, _ = populated("acls", "authorized-ops", "--principal", "User:nobody", "--topic", "foo", "-o", "csv")
    assert csv_text == "operations,bitfield\n,0\n"


# ---------------------------------------------------------------- export, import


@pytest.mark.parametrize("file_format", ["csv", "json"])
def test_export_import_round_trip_into_a_fresh_state(populated, tmp_path, file_format):
    populated("acls", "--add", "--deny-principal", "User:x", "--deny-host", "10.0.0.1", "--operation", "IdempotentWrite", "--cluster")
    exported = tmp_path / f"acls.{file_format}"
    status, out, _ = populated("acls", "export", "--file", str(exported))
    assert status == 0 and out == f"Exported 5 ACLs to {exported}.\n"

    fresh = Cli(str(tmp_path / "fresh.db"), populated._capsys, populated._monkeypatch)
    status, out, _ = fresh("acls", "import", str(exported))
    assert (status, out) == (0, "Imported 5 ACLs (0 already existed).\n")
    assert fresh.stored() == populated.stored()
    status, out, _ = fresh("acls", "import", str(exported))
    assert (status, out) == (0, "Imported 0 ACLs (5 already existed).\n")


def test_export_to_stdout_is_json_by_default_and_csv_on_request(populated):
    _, out, _ = populated("acls", "export")
    assert {AclBinding.of(*record.values()) for record in json.loads(out)} == populated.stored()
    _, out, _ = populated("acls", "export", "--format", "csv")
    assert out.splitlines()[0] == "resource_type,resource_name,pattern_type,principal,host,operation,permission_type"
    assert len(out.splitlines()) == 5


def test_import_format_flag_overrides_the_extension(populated, tmp_path):
    exported = tmp_path / "acls.txt"
    populated("acls", "export", "--file", str(exported), "--format", "csv")
    fresh = Cli(str(tmp_path / "fresh.db"), populated._capsys, populated._monkeypatch)
    status, _, err = fresh("acls", "import", str(exported))
    assert status == 1
    assert_one_error_line(err, "pass --format csv or json")
    status, _, _ = fresh("acls", "import", str(exported), "--format", "csv")
    assert status == 0 and fresh.stored() == populated.stored()


def test_import_dry_run_changes_nothing(populated, tmp_path):
    exported = tmp_path / "acls.json"
    populated("acls", "export", "--file", str(exported))
    fresh = Cli(str(tmp_path / "fresh.db"), populated._capsys, populated._monkeypatch)
    status, out, _ = fresh("acls", "import", str(exported), "--dry-run")
    assert status == 0
    assert out.endswith("Would import 4 ACLs (0 already exist); nothing was changed.\n")
    assert "Would import ACLs for resource `" in out
    assert fresh.stored() == set()


HEADER = "resource_type,resource_name,pattern_type,principal,host,operation,permission_type\n"
GOOD_ROW = "TOPIC,a,LITERAL,User:x,*,READ,ALLOW\n"


@pytest.mark.parametrize(
    "rows, expected",
    [
        ("TOPIC,b,LITERAL,User:x,*,REED,ALLOW\n", "row 2: unknown operation 'REED'"),
        ("TOPIC,b,LITERAL,alice,*,READ,ALLOW\n", "row 2: could not parse principal 'alice'"),
        ("CLUSTER,b,LITERAL,User:x,*,ALTER,ALLOW\n", "row 2: The only valid name for the CLUSTER resource is kafka-cluster"),
        ("TOPIC,b,MATCH,User:x,*,READ,ALLOW\n", "row 2: unknown pattern_type 'MATCH'"),
        ("TOPIC,b,LITERAL,User:x,*,READ\n", "row 2: missing permission_type"),
        ("TOPIC,b,LITERAL,User:x,*,READ,ALLOW,extra\n", "row 2: the row has more values than the header has columns"),
        ("TOPIC,,LITERAL,User:x,*,READ,ALLOW\n", "row 2: Invalid empty resource name"),
    ],
)
def test_import_bad_row_names_it_and_imports_nothing(cli, tmp_path, rows, expected):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + GOOD_ROW + rows)
    status, out, err = cli("acls", "import", str(path))
    assert status == 1 and out == ""
    assert_one_error_line(err, f"{path}: {expected}")
    assert cli.stored() == set()


@pytest.mark.parametrize(
    "content, expected",
    [
        ("not json", "not valid JSON"),
        ('{"a": 1}', "expected a JSON list of ACL objects"),
        ('[["TOPIC"]]', "row 1: expected an object with the fields"),
        ('[{"resource_type": "TOPIC"}]', "row 1: missing resource_name"),
        ('[{"resource_type": "TOPIC", "colour": "red"}]', "row 1: unknown field 'colour'"),
        (
            '[{"resource_type": "TOPIC", "resource_name": 7, "pattern_type": "LITERAL", "principal": "User:a", '
            '"host": "*", "operation": "READ", "permission_type": "ALLOW"}]',
            "row 1: resource_name must be a string",
        ),
    ],
)
def test_import_bad_json(cli, tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    status, _, err = cli("acls", "import", str(path))
    assert status == 1
    assert_one_error_line(err, expected)
    assert cli.stored() == set()


@pytest.mark.parametrize(
    "content, expected",
    [
        ("type,name\nTOPIC,a\n", "the CSV header must name the columns"),
        ("", "the CSV header must name the columns"),
        ("x" * 200_000 + "\n", "not valid CSV: field larger than field limit"),
        (HEADER + GOOD_ROW + "TOPIC," + "x" * 200_000 + "\n", "row 2: not valid CSV: field larger than field limit"),
    ],
    ids=["wrong-header", "empty", "huge-header", "huge-field"],
)
def test_import_bad_csv(cli, tmp_path, content, expected):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    status, _, err = cli("acls", "import", str(path))
    assert status == 1
    assert_one_error_line(err, expected)
    assert cli.stored() == set()


# ---------------------------------------------------------------- bad input: one line, non-zero exit


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], "the following arguments are required: COMMAND"),
        (["acls"], "Command must include exactly one action: --list, --add, --remove."),
        (["acls", "--add", "--list", "--topic", "t"], "Command must include exactly one action"),
        (["acls", "--add", "--topic", "t", "--allow-principal", "User:a", "--operation", "Reed"], "argument --operation: unknown operation 'Reed'"),
        (["acls", "--add", "--group", "g", "--allow-principal", "User:a", "--operation", "Write"], "ResourceType GROUP only supports operations [ALL, READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]"),
        (["acls", "--add", "--user-principal", "User:u", "--allow-principal", "User:a", "--operation", "Read"], "ResourceType USER only supports operations [ALL, CREATE_TOKENS, DESCRIBE_TOKENS]"),
        (["acls", "--add", "--cluster", "--allow-principal", "User:a", "--resource-pattern-type", "PREFIXED"], "--cluster cannot be added with --resource-pattern-type PREFIXED"),
        (["acls", "--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"], "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
        (["acls", "--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "any"], "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."),
        (["acls", "--list", "--resource-pattern-type", "fuzzy"], "unknown resource pattern type 'fuzzy'"),
        (["acls", "--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
        (["acls", "--add", "--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>"),
        (["acls", "--remove", "--force"], "You must provide at least one resource"),
        (["acls", "--add", "--topic", "t", "--allow-principal", "alice"], "argument --allow-principal: could not parse principal 'alice'"),
        (["acls", "--add", "--topic", "", "--allow-principal", "User:a"], "Invalid empty resource name"),
        (["acls", "--list", "--producer"], 'Option "--list" can\'t be used with option "--producer"'),
        (["acls", "--list", "--allow-principal", "User:a"], 'Option "--list" can\'t be used with option "--allow-principal"'),
        (["acls", "--add", "--producer", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read"], 'Option "--producer" can\'t be used with option "--operation"'),
        (["acls", "--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:a"], 'Option "--consumer" can\'t be used with option "--deny-principal"'),
        (["acls", "--add", "--producer", "--topic", "t", "--allow-principal", "User:a", "--deny-host", "h"], 'Option "--producer" can\'t be used with option "--deny-host"'),
        (["acls", "--add", "--producer", "--group", "g", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
        (["acls", "--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"], "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."),
        (["acls", "--add", "--consumer", "--topic", "t", "--group", "g", "--cluster", "--allow-principal", "User:a"], "With --consumer you must specify"),
        (["acls", "--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"], "The --idempotent option is only available if --producer is set"),
        (["acls", "--add", "--topic", "t", "--principal", "User:a"], "The --principal option is only available if --list or --remove is set"),
        (["acls", "--list", "-o", "xml"], "argument -o/--output: invalid choice: 'xml'"),
        (["acls", "--add", "check"], "--add cannot be used with `acls check`"),
        (["acls", "check", "--principal", "User:a", "--operation", "Read"], "check needs exactly one resource"),
        (["acls", "check", "--principal", "User:a", "--topic", "t"], "check needs exactly one --operation"),
        (["acls", "check", "--operation", "Read", "--topic", "t"], "check needs exactly one --principal"),
        (["acls", "check", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "prefixed"], "--resource-pattern-type must be literal"),
        (["acls", "check", "--principal", "User:a", "--operation", "All", "--topic", "t"], "ResourceType TOPIC only supports operations"),
        (["acls", "check", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--host", "nowhere"], "argument --host: client_address must be an IP address"),
        (["acls", "who-can", "--operation", "Read", "--topic", "a", "--group", "b"], "who-can needs exactly one resource"),
        (["acls", "authorized-ops", "--topic", "t"], "authorized-ops needs exactly one --principal"),
        (["acls", "nonsense"], "invalid choice: 'nonsense'"),
        (["acls", "--list", "--no-such-flag"], "unknown option --no-such-flag"),
        (["acls", "--list", "--opertion", "Read"], "unknown option --opertion; did you mean --operation?"),
        (["--bootstrap-controller", "localhost:9093", "acls", "--list"], "unknown option --bootstrap-controller: kafkasec reaches a cluster through a broker"),
        (["--bootstrap-server", "localhost:9092", "acls", "--list"], "--state and --bootstrap-server exclude each other"),
    ],
)
def test_usage_errors_are_one_line_and_exit_1(cli, argv, expected):
    status, out, err = cli(*argv)
    assert status == 1 and out == ""
    assert_one_error_line(err, expected)
    assert not os.path.exists(cli.state)  # refused before the state was opened


def test_failures_are_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_text("not a database")
    assert main(["--state", str(corrupt), "acls", "--list"]) == 1
    assert_one_error_line(capsys.readouterr().err, "cannot open the state file")

    assert main(["--state", str(tmp_path / "s.db"), "--config", str(tmp_path / "missing.properties"), "acls", "--list"]) == 1
    assert_one_error_line(capsys.readouterr().err, "No such file or directory")

    bad_config = tmp_path / "bad.properties"
    bad_config.write_text("allow.everyone.if.no.acl.found=maybe\n")
    assert main(["--state", str(tmp_path / "s.db"), "--config", str(bad_config), "acls", "--list"]) == 1
    assert_one_error_line(capsys.readouterr().err, "allow.everyone.if.no.acl.found must be true or false")

    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "no-such-plugin")
    assert main(["--state", str(tmp_path / "s.db"), "acls", "--list"]) == 1
    assert_one_error_line(capsys.readouterr().err, "KAFKASEC_LOAD_PLUGINS names 'no-such-plugin'")


def test_a_store_write_error_is_one_line(cli, tmp_path):
    state = tmp_path / "locked.db"
    SqliteStateStore(state).close()
    config = tmp_path / "impatient.properties"
    config.write_text("kafkasec.state.write.lock.timeout.ms=0\n")
    blocker = sqlite3.connect(state, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        status, _, err = cli(
            "--state", str(state), "--config", str(config), "acls", "--add", "--allow-principal", "User:a", "--topic", "t"
        )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert status == 1
    assert_one_error_line(err, "database is locked")


def test_help_exits_0(capsys):
    assert main(["acls", "--help"]) == 0
    assert "--allow-principal" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("kafkasec ")


# ---------------------------------------------------------------- state and configuration


def test_config_file_settings_and_state_path(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    state = tmp_path / "from-config.db"
    config = tmp_path / "admin.properties"
    config.write_text(
        "# as kafka-acls.sh's --command-config\n"
        "super.users = User:admin;User:ops\n"
        f"kafkasec.state.path={state}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" password="secret";\n'
    )
    assert main(["--command-config", str(config), "acls", "--add", "--allow-principal", "User:a", "--topic", "t"]) == 0
    assert os.path.exists(state)
    assert main(["acls", "check", "--config", str(config), "--principal", "User:ops", "--operation", "Write", "--topic", "t", "--explain"]) == 0
    assert "User:ops is a super user" in capsys.readouterr().out
    with KafkaSecurity(state_path=str(state)) as security:
        assert set(security.acls()) == {acl("TOPIC", "t", "User:a", "ALL")}


def test_allow_everyone_if_no_acl_found(tmp_path, capsys):
    config = tmp_path / "open.properties"
    config.write_text("allow.everyone.if.no.acl.found: true\n")
    argv = ["--state", str(tmp_path / "s.db"), "--config", str(config), "acls", "check", "--principal", "User:x", "--operation", "Read", "--topic", "t"]
    SqliteStateStore(tmp_path / "s.db").close()  # a state without ACLs (a read command creates none)
    assert main(argv) == 0
    assert main(argv[:2] + argv[4:]) == 1  # without the config file: denied


def test_read_properties(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("! comment\n#comment\n\na=1\nb : 2\nc 3\nd\ne=x\\\n  y\\\\\nf=z\\\n")
    assert read_properties(str(path)) == {"a": "1", "b": "2", "c": "3", "d": "", "e": "xy\\\\", "f": "z"}


def test_state_from_environment_then_default(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KAFKASEC_STATE", str(tmp_path / "env.db"))
    assert main(["acls", "--add", "--allow-principal", "User:a", "--topic", "t"]) == 0
    assert os.path.exists(tmp_path / "env.db")
    monkeypatch.delenv("KAFKASEC_STATE")
    monkeypatch.chdir(tmp_path)
    assert main(["acls", "--add", "--allow-principal", "User:b", "--topic", "t"]) == 0
    with KafkaSecurity(state_path=str(tmp_path / "kafkasec.db")) as security:
        assert set(security.acls()) == {acl("TOPIC", "t", "User:b", "ALL")}


def test_state_option_after_the_command_name(tmp_path, capsys):
    state = str(tmp_path / "after.db")
    assert main(["acls", "--add", "--allow-principal", "User:a", "--topic", "t", "--state", state]) == 0
    assert main(["acls", "check", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--state", state]) == 0


# ---------------------------------------------------------------- docs/cli.md


def test_the_example_atop_docs_cli_md_runs_as_shown(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs", "cli.md")
    with open(docs, encoding="utf-8") as file:
        example = file.read().split("```console\n", 1)[1].split("```", 1)[0]
    for session in example.split("$ ")[1:]:
        command, expected = session.split("\n", 1)
        argv = shlex.split(command)
        assert argv[0] == "kafkasec"
        assert main(argv[1:]) == 0
        # "…" in the docs stands for what changes from run to run (an ACL's id).
        pattern = ".*".join(re.escape(part) for part in expected.rstrip("\n").split("…"))
        assert re.fullmatch(pattern, capsys.readouterr().out.rstrip("\n"), re.DOTALL)


# ---------------------------------------------------------------- the installed console script


def test_console_script_in_a_subprocess(tmp_path):
    env = {**os.environ, "KAFKASEC_LOAD_PLUGINS": ""}
    env.pop("KAFKASEC_STATE", None)
    state = str(tmp_path / "state.db")

    def kafkasec(*argv):
        return subprocess.run(["kafkasec", "--state", state, *argv], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)

    added = kafkasec("acls", "--add", "--consumer", "--allow-principal", "User:c", "--topic", "t", "--group", "g")
    assert added.returncode == 0, added.stderr
    listed = kafkasec("acls", "--list", "--group", "g")
    assert listed.returncode == 0
    assert listed.stdout == (
        "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)`:\n"
        "\t(principal=User:c, host=*, operation=READ, permissionType=ALLOW)\n\n"
    )
    assert kafkasec("acls", "check", "--principal", "User:c", "--operation", "Read", "--topic", "t").returncode == 0
    assert kafkasec("acls", "check", "--principal", "User:c", "--operation", "Write", "--topic", "t").returncode == 1
    refused = kafkasec("acls", "--remove", "--group", "g")  # stdin is not a terminal: no
    assert refused.returncode == 1 and "aborted" in refused.stderr
    bad = kafkasec("acls", "--add", "--topic", "t", "--allow-principal", "User:c", "--operation", "Reed")
    assert bad.returncode == 1
    assert_one_error_line(bad.stderr, "unknown operation 'Reed'")


def test_a_closed_pipe_and_a_prompt_without_a_terminal_end_with_one_line(tmp_path):
    state = tmp_path / "s.db"
    with KafkaSecurity(state_path=str(state)) as security:  # a listing far larger than a pipe's buffer
        security.create_acls([AclBinding.of("TOPIC", f"t{n}", "LITERAL", f"User:u{n}", "*", "READ", "ALLOW") for n in range(3000)])
    # A reader that goes away after one line (| head -1): one error line, no traceback.
    listing = subprocess.Popen([sys.executable, "-m", "kafkasec.cli", "--state", str(state), "acls", "--list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    listing.stdout.readline()
    listing.stdout.close()
    err = listing.stderr.read().decode()
    assert listing.wait(20) == 1 and "Traceback" not in err
    assert err == "kafkasec: error: the output was closed before the command finished\n"
    # A question without a terminal to answer it.
    removal = subprocess.run([sys.executable, "-m", "kafkasec.cli", "--state", str(state), "acls", "--remove", "--topic", "t1"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    assert removal.returncode == 1 and "Traceback" not in removal.stderr
    assert removal.stderr.splitlines()[-1] == "kafkasec: error: aborted: no ACLs were removed"  # after the question


@pytest.mark.parametrize(
    "options, reason",
    [
        (["--allow-principal", "user:alice"], "principal types are case-sensitive and logins are User:"),
        (["--allow-principal", "User:"], "has an empty name: it matches nobody"),
        (["--allow-principal", "User:a", "--allow-host", "db.example.com"], "is a hostname: Kafka compares hosts as exact IP"),
        (["--allow-principal", "User:a", "--allow-host", "10.0.0.0/8"], "is a CIDR block"),
        (["--allow-principal", "User:a", "--topic", "orders*"], "'*' is a wildcard only as the whole name"),
    ],
)
def test_an_acl_that_can_never_match_is_flagged_and_refused_with_strict(cli, options, reason):
    argv = ["--add", "--operation", "Read", *options]
    if "--topic" not in options:
        argv += ["--topic", "orders"]
    status, _, err = cli("acls", *argv, "--strict")
    assert status == 1 and reason in err and not os.path.exists(cli.state)  # refused before anything is written
    status, _, err = cli("acls", *argv)
    assert status == 0 and "kafkasec: warning: " in err and reason in err


def test_acls_that_can_match_raise_no_warning(cli):
    status, _, err = cli("acls", "--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1", "--operation",
                         "Read", "--topic", "*", "--strict")
    assert status == 0 and err == ""


def test_list_narrowed_by_operation_and_permission_type(cli):
    assert cli("acls", "--add", "--allow-principal", "User:a", "--operation", "Read", "--operation", "Write", "--topic", "t")[0] == 0
    assert cli("acls", "--add", "--deny-principal", "User:b", "--operation", "Read", "--topic", "t")[0] == 0
    _, out, _ = cli("acls", "--list", "--operation", "Read", "--permission-type", "deny", "-o", "json")
    assert [(r["principal"], r["operation"], r["permission_type"]) for r in json.loads(out)] == [("User:b", "READ", "DENY")]
    _, out, _ = cli("acls", "--list", "--operation", "Write")
    assert "operation=WRITE" in out and "operation=READ" not in out
    status, _, err = cli("acls", "--add", "--allow-principal", "User:c", "--operation", "Read", "--topic", "t", "--permission-type", "allow")
    assert status == 1 and "only available if --list is set" in err


def test_remove_every_acl_of_a_principal_after_asking(cli, monkeypatch):
    for topic in ("a", "b"):
        assert cli("acls", "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
                   "--operation", "Read", "--topic", topic)[0] == 0
    status, _, err = cli("acls", "--remove", "--principal", "User:alice", stdin="n\n")
    assert status == 1 and "remove all ACLs of User:alice on every resource? (y/n)" in err
    status, out, _ = cli("acls", "--remove", "--principal", "User:alice", stdin="y\n")
    assert status == 0 and out.count("principal=User:alice") == 2
    _, listing, _ = cli("acls", "--list", "-o", "json")
    assert {record["principal"] for record in json.loads(listing)} == {"User:bob"}
    status, _, err = cli("acls", "--remove", "--principal", "User:bob", "--operation", "Read", "--force")
    assert status == 1 and "takes no --allow-principal, --deny-principal or --operation" in err
