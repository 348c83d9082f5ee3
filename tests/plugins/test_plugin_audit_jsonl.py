"""The audit_jsonl reference plugin: JSON lines, identical consecutive records folded."""

import json
import re
import threading
from datetime import datetime
from pathlib import Path

import pytest

import kafkasec_audit_jsonl
from kafkasec import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    PatternType,
    RequestContext,
    ResourcePattern,
    ResourceType,
)

import security_support

TOPIC_T = ResourcePattern(ResourceType.TOPIC, "t")
READ_T = Action(AclOperation.READ, TOPIC_T)
ALICE_READS_T = AclBinding.of(
    ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
FIELDS = [
    "first_time",
    "last_time",
    "count",
    "principal",
    "client_address",
    "listener_name",
    "request_type",
    "client_id",
    "forwarding_principal",
    "operation",
    "resource_type",
    "resource_name",
    "pattern_type",
    "result",
    "rule",
    "acl_id",
    "acl_source",
    "authorizer",
]


@pytest.fixture
def log_path(tmp_path):
    return tmp_path / "audit.jsonl"


def open_security(path, fold_ms=1000):
    """Security with the plugin writing its log to ``path``."""
    return security_support.open_security(
        plugins=[kafkasec_audit_jsonl],
        acls=[ALICE_READS_T],
        **{kafkasec_audit_jsonl.PATH_SETTING: str(path), kafkasec_audit_jsonl.FOLD_SETTING: fold_ms},
    )


def records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read(security, principal, action=READ_T):
    return security.authorize(RequestContext.for_principal(principal), [action])


def test_identical_decisions_fold_into_one_line_with_a_count(log_path):
    with open_security(log_path) as security:
        for _ in range(3):
            read(security, "User:bob")
        read(security, "User:alice")
    denied, allowed = records(log_path)
    assert (denied["principal"], denied["result"], denied["count"]) == ("User:bob", "DENIED", 3)
    assert (allowed["principal"], allowed["result"], allowed["count"]) == ("User:alice", "ALLOWED", 1)
    assert denied["first_time"] <= denied["last_time"] <= allowed["first_time"]


def test_a_line_has_every_field_and_names_the_acl_that_decided(log_path):
    with open_security(log_path) as security:
        acl_id = security.authorizer.stored_acls()[0].acl_id
        context = RequestContext(
            KafkaPrincipal.user("alice"),
            "::1",
            listener_name="SASL_SSL",
            request_type=1,
            client_id="consumer-1",
            forwarding_principal=KafkaPrincipal.user("broker"),
        )
        security.authorize(context, [READ_T])
    (line,) = log_path.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert list(record) == FIELDS
    assert record == {
        "first_time": record["first_time"],
        "last_time": record["last_time"],
        "count": 1,
        "principal": "User:alice",
        "client_address": "0:0:0:0:0:0:0:1",
        "listener_name": "SASL_SSL",
        "request_type": 1,
        "client_id": "consumer-1",
        "forwarding_principal": "User:broker",
        "operation": "READ",
        "resource_type": "TOPIC",
        "resource_name": "t",
        "pattern_type": "LITERAL",
        "result": "ALLOWED",
        "rule": "allow_acl",
        "acl_id": acl_id,
        "acl_source": "store",
        "authorizer": "standard",
    }
    first_time = record["first_time"]
    assert first_time.endswith("Z") and len(first_time) == len("2024-05-01T12:00:00.123Z")
    assert datetime.fromisoformat(first_time[:-1]) == datetime.fromisoformat(record["last_time"][:-1])


def test_a_decision_without_an_acl_has_null_acl_fields(log_path):
    with open_security(log_path) as security:
        security.authorize(RequestContext.for_principal("User:bob"), [Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, "u"))])
    (record,) = records(log_path)
    assert (record["rule"], record["acl_id"], record["acl_source"]) == ("no_acl_found", None, None)
    assert record["forwarding_principal"] is None


def test_the_action_logging_flags_are_respected(log_path):
    quiet_allowed = Action(AclOperation.READ, TOPIC_T, log_if_allowed=False)
    quiet_denied = Action(AclOperation.READ, TOPIC_T, log_if_denied=False)
    with open_security(log_path, 0) as security:
        read(security, "User:alice", quiet_allowed)
        read(security, "User:bob", quiet_denied)
        security.authorized_operations(RequestContext.for_principal("User:alice"), TOPIC_T)
        assert log_path.read_text() == ""
        read(security, "User:alice", quiet_denied)  # allowed, and it asks to be logged if allowed
        read(security, "User:bob", quiet_allowed)  # denied, and it asks to be logged if denied
    assert [(r["principal"], r["result"]) for r in records(log_path)] == [
        ("User:alice", "ALLOWED"),
        ("User:bob", "DENIED"),
    ]


def test_fold_zero_writes_every_record_at_once_on_its_own_line(log_path):
    with open_security(log_path, 0) as security:
        for written in range(1, 4):
            read(security, "User:bob")
            assert [r["count"] for r in records(log_path)] == [1] * written


def test_a_run_ends_when_the_fold_window_expires(log_path, monkeypatch):
    clock = [500.0]
    monkeypatch.setattr(kafkasec_audit_jsonl, "monotonic", lambda: clock[0])
    with open_security(log_path, 1000) as security:
        read(security, "User:bob")
        clock[0] += 0.999
        read(security, "User:bob")
        assert log_path.read_text() == ""
        clock[0] += 0.001
        read(security, "User:bob")
        assert [r["count"] for r in records(log_path)] == [2]
    assert [r["count"] for r in records(log_path)] == [2, 1]


def test_close_writes_the_pending_run_and_later_decisions_fail(log_path):
    security = open_security(log_path)
    read(security, "User:bob")
    read(security, "User:bob")
    assert log_path.read_text() == ""
    security.close()
    assert [r["count"] for r in records(log_path)] == [2]
    with pytest.raises(ValueError, match="closed"):
        read(security, "User:bob")


def test_the_log_is_appended_to(log_path):
    log_path.write_text('{"earlier": true}\n', encoding="utf-8")
    with open_security(log_path) as security:
        read(security, "User:bob")
    earlier, new = records(log_path)
    assert earlier == {"earlier": True}
    assert new["principal"] == "User:bob"


def test_concurrent_decisions_give_whole_lines_and_exact_counts(log_path):
    threads, rounds = 8, 300
    quiet = Action(AclOperation.READ, TOPIC_T, log_if_allowed=False)
    recordable = []

    def work(number):
        # alternating runs fold into few lines; the quiet allowed action must not be recorded
        principals = ["User:alice", "User:bob"]
        count = 0
        for i in range(rounds):
            principal = principals[(i // 7 + number) % 2]
            security.authorize(RequestContext.for_principal(principal), [READ_T, quiet])
            count += 1 if principal == "User:alice" else 2
        recordable.append(count)

    with open_security(log_path) as security:
        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    lines = log_path.read_text(encoding="utf-8").splitlines()
    written = [json.loads(line) for line in lines]
    assert all(list(record) == FIELDS for record in written)
    assert sum(record["count"] for record in written) == sum(recordable)
    assert len(written) < sum(recordable), "identical consecutive records were folded"


def test_a_missing_directory_fails_startup_naming_the_path(tmp_path):
    path = tmp_path / "missing" / "audit.jsonl"
    with pytest.raises(ValueError, match=re.escape(str(path))):
        open_security(path)


@pytest.mark.parametrize("fold", [-5, "later"])
def test_a_bad_fold_window_fails_startup_naming_the_setting(log_path, fold):
    with pytest.raises(ValueError, match=kafkasec_audit_jsonl.FOLD_SETTING):
        open_security(log_path, fold)


def test_unconfigured_the_plugin_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with KafkaSecurity(plugins=[kafkasec_audit_jsonl]) as security:
        security.create_acls([ALICE_READS_T])
        assert read(security, "User:alice") == [AuthorizationResult.ALLOWED]
        assert read(security, "User:bob") == [AuthorizationResult.DENIED]
        assert "audit_jsonl" not in security.plugin_state
    assert list(tmp_path.iterdir()) == []


def test_the_documented_example_line_has_the_fields_in_order():
    example = re.search(r"<!-- example: audit line -->\s*```json\n(.*?)```", DOCS.read_text(), re.S).group(1)
    (line,) = example.splitlines()
    assert list(json.loads(line)) == FIELDS


def test_the_entry_point_loads_the_plugin_by_name(log_path, monkeypatch):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "audit_jsonl")
    with KafkaSecurity.from_config({kafkasec_audit_jsonl.PATH_SETTING: str(log_path)}) as security:
        read(security, "User:bob")
    assert [r["principal"] for r in records(log_path)] == ["User:bob"]
