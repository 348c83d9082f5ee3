"""The groupfile reference plugin: Group ACLs apply to the members listed in a file."""

import logging
import os
import re
from pathlib import Path

import pytest

import kafkasec_groupfile
from kafkasec import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    PatternType,
    ResourcePattern,
    ResourceType,
    RuleKind,
)
from kafkasec.context import RequestContext

import security_support

ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED
READ_T = Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, "t"))
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def acl(principal, permission=AclPermissionType.ALLOW):
    return AclBinding.of(ResourceType.TOPIC, "t", PatternType.LITERAL, principal, "*", AclOperation.READ, permission)


def replace_file(path, text):
    """Replace ``path`` as a deployment should: write a temporary file, then rename it over."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def open_security(path, interval_ms=0, *acls):
    """Security with the plugin reading the group file ``path``."""
    return security_support.open_security(
        plugins=[kafkasec_groupfile],
        acls=acls or [acl("Group:eng")],
        **{kafkasec_groupfile.PATH_SETTING: str(path), kafkasec_groupfile.INTERVAL_SETTING: interval_ms},
    )


def read(security, principal):
    return security.authorize(RequestContext.for_principal(principal), [READ_T])[0]


@pytest.fixture
def groups(tmp_path):
    path = tmp_path / "groups.txt"
    path.write_text("# who is who\n\neng: alice, carol\nops: bob\n", encoding="utf-8")
    return path


def test_a_group_acl_applies_to_members_only(groups):
    with open_security(groups) as security:
        assert read(security, "User:alice") is ALLOWED
        assert read(security, "User:bob") is DENIED


def test_an_atomic_replace_moves_a_member_out(groups):
    with open_security(groups) as security:
        assert read(security, "User:alice") is ALLOWED
        replace_file(groups, "eng: carol\nops: bob, alice\n")
        assert read(security, "User:alice") is DENIED
        assert read(security, "User:carol") is ALLOWED


def test_an_in_place_rewrite_is_seen(groups):
    with open_security(groups) as security:
        assert read(security, "User:bob") is DENIED
        groups.write_text("eng: alice, bob, carol\n", encoding="utf-8")
        assert read(security, "User:bob") is ALLOWED


def test_an_in_place_rewrite_of_the_same_size_is_seen_by_its_mtime(groups):
    with open_security(groups) as security:
        before = groups.stat()
        groups.write_text(groups.read_text().replace("eng: alice", "eng: xlice"), encoding="utf-8")
        os.utime(groups, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
        assert groups.stat().st_size == before.st_size
        assert read(security, "User:alice") is DENIED


def test_the_file_is_checked_at_most_once_per_interval(groups, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(kafkasec_groupfile, "monotonic", lambda: clock[0])
    with open_security(groups, 5000) as security:
        replace_file(groups, "eng: carol\n")
        clock[0] += 4.999
        assert read(security, "User:alice") is ALLOWED
        clock[0] += 0.001
        assert read(security, "User:alice") is DENIED


def test_a_group_deny_beats_a_user_allow(groups):
    acls = [acl("User:alice"), acl("Group:eng", AclPermissionType.DENY)]
    with open_security(groups, 0, *acls) as security:
        assert read(security, "User:alice") is DENIED
        assert read(security, "User:bob") is DENIED
        decision = security.explain(RequestContext.for_principal("User:alice"), READ_T)
        assert decision.rule.kind is RuleKind.DENY_ACL
        assert decision.rule.acl.binding.entry.principal == "Group:eng"


def test_explain_names_the_group_acl(groups):
    with open_security(groups) as security:
        decision = security.explain(RequestContext.for_principal("User:carol"), READ_T)
    assert decision.rule.kind is RuleKind.ALLOW_ACL
    assert decision.rule.acl.binding == acl("Group:eng")
    assert "Group:eng" in str(decision.rule)


def test_file_format(tmp_path):
    path = tmp_path / "groups.txt"
    path.write_text(
        "# comment\n"
        "  eng : alice ,User:bob\n"
        "\n"
        "   # indented comment\n"
        "ops: ServiceAccount:deployer, alice\n"
        "eng: ServiceAccount:deployer\n"
        "empty:\n"
        "né: ünïcode\n",
        encoding="utf-8",
    )
    with open_security(path) as security:
        def groups_of(principal):
            return list(security.plugin_state["groupfile"].groups_of(KafkaPrincipal.parse(principal)))

        eng, ops = KafkaPrincipal("Group", "eng"), KafkaPrincipal("Group", "ops")
        assert groups_of("User:alice") == [eng, ops]
        assert groups_of("User:bob") == [eng]
        assert groups_of("ServiceAccount:deployer") == [ops, eng]
        assert groups_of("User:ünïcode") == [KafkaPrincipal("Group", "né")]
        assert groups_of("User:deployer") == []
        assert groups_of("User:carol") == []


@pytest.mark.parametrize(
    "bad_line",
    [
        "eng alice",
        ": alice",
        "eng: alice,, bob",
        "eng: alice,",
        "eng: alice bob",
        "my group: alice",
        "eng: User:",
        "eng: :alice",
    ],
)
def test_a_malformed_line_fails_startup_with_its_line_number(tmp_path, bad_line):
    path = tmp_path / "groups.txt"
    path.write_text(f"# header\nops: bob\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(ValueError) as raised:
        open_security(path)
    message = str(raised.value)
    assert str(path) in message
    assert "line 3" in message


def test_windows_line_endings_and_a_byte_order_mark_are_read(tmp_path):
    path = tmp_path / "groups.txt"
    path.write_bytes("\ufeffeng: alice\r\nops: bob\r\n".encode("utf-8"))
    with open_security(path) as security:
        assert read(security, "User:alice") is ALLOWED
        assert read(security, "User:bob") is DENIED


def test_a_file_that_is_not_utf8_fails_startup_with_its_line_number(tmp_path):
    path = tmp_path / "groups.txt"
    path.write_bytes(b"ops: bob\neng: caf\xe9\n")
    with pytest.raises(ValueError, match=r"line 2: not UTF-8"):
        open_security(path)


def test_a_missing_file_fails_startup(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(ValueError, match="absent.txt"):
        open_security(path)


@pytest.mark.parametrize("interval", [-1, "soon", 1.5])
def test_a_bad_interval_fails_startup_naming_the_setting(groups, interval):
    with pytest.raises(ValueError, match=kafkasec_groupfile.INTERVAL_SETTING):
        open_security(groups, interval)


@pytest.mark.parametrize("broken", ["eng: alice\nnonsense\n", None])
def test_a_bad_reload_keeps_the_previous_membership_and_warns(groups, caplog, broken):
    with open_security(groups) as security:
        caplog.set_level(logging.WARNING, logger="kafkasec.groupfile")
        if broken is None:
            groups.unlink()
        else:
            replace_file(groups, broken)
        assert read(security, "User:alice") is ALLOWED
        assert read(security, "User:carol") is ALLOWED
        warnings = [r for r in caplog.records if r.name == "kafkasec.groupfile" and r.levelno == logging.WARNING]
        assert len(warnings) == 1, "a bad version is reported once, not at every check"
        assert str(groups) in warnings[0].getMessage()
        if broken is not None:
            assert "line 2" in warnings[0].getMessage()
        replace_file(groups, "eng: carol\n")
        assert read(security, "User:alice") is DENIED
        assert read(security, "User:carol") is ALLOWED


def test_unconfigured_the_plugin_is_inert():
    with KafkaSecurity(plugins=[kafkasec_groupfile]) as security:
        security.create_acls([acl("Group:eng"), acl("User:alice")])
        assert "groupfile" not in security.plugin_state
        alice = KafkaPrincipal.user("alice")
        expanded = security.plugin_manager.hook.kafkasec_expand_principal(
            security=security, principal=alice, context=RequestContext.for_principal("User:alice")
        )
        assert expanded == []
        # Nothing is registered for expansion, so the authorizer skips the hook entirely.
        assert security.authorizer.principal_expander is None
        assert read(security, "User:alice") is ALLOWED
        assert read(security, "User:bob") is DENIED


def test_the_documented_example_parses_as_documented():
    example = re.search(r"<!-- example: group file -->\s*```text\n(.*?)```", DOCS.read_text(), re.S).group(1)
    eng, ops = KafkaPrincipal("Group", "eng"), KafkaPrincipal("Group", "ops")
    assert dict(kafkasec_groupfile.parse_groups(example)) == {
        "User:alice": (eng,),
        "User:bob": (eng,),
        "User:carol": (ops,),
        "ServiceAccount:deployer": (ops, eng),
    }


def test_the_entry_point_loads_the_plugin_by_name(groups, monkeypatch):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "groupfile")
    with KafkaSecurity.from_config({kafkasec_groupfile.PATH_SETTING: str(groups)}) as security:
        security.create_acls([acl("Group:eng")])
        assert read(security, "User:alice") is ALLOWED
