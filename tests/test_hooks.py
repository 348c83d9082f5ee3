"""Every hook, exercised through KafkaSecurity with small plugins defined here."""

import pytest

from kafkasec import (
    AclBinding,
    Action,
    AuthorizationDecision,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    ResourcePattern,
    Rule,
    RuleKind,
    hookimpl,
)
from kafkasec.context import RequestContext
from kafkasec.plugins import DEFAULT_PLUGINS, make_plugin_manager
from kafkasec.store import MemoryStateStore

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
TOPIC_T = ResourcePattern("TOPIC", "t")


def read_t():
    return Action("READ", TOPIC_T)


def grant(principal="User:alice", name="t"):
    return AclBinding.of("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW")


class Lifecycle:
    def __init__(self):
        self.events = []

    @hookimpl
    def kafkasec_startup(self, security):
        self.events.append(("startup", security.config.get("x")))

    @hookimpl
    def kafkasec_shutdown(self, security):
        self.events.append(("shutdown",))


def test_startup_and_shutdown_run_once():
    plugin = Lifecycle()
    security = KafkaSecurity(config={"x": "1"}, plugins=[plugin])
    security.close()
    security.close()
    assert plugin.events == [("startup", "1"), ("shutdown",)]


def test_startup_may_refuse_bad_settings():
    class Strict:
        @hookimpl
        def kafkasec_startup(self, security):
            raise ValueError("strict.setting must be set")

    with pytest.raises(ValueError, match="strict.setting"):
        KafkaSecurity(plugins=[Strict()])


def test_a_failed_start_closes_what_started():
    closed = []

    class ClosingStore(MemoryStateStore):
        def close(self):
            closed.append("store")

    class Starter:
        @hookimpl
        def kafkasec_state_store(self, security, path):
            return ClosingStore()

        @hookimpl
        def kafkasec_shutdown(self, security):
            closed.append("shutdown")

    class Failing:
        @hookimpl
        def kafkasec_startup(self, security):
            raise ValueError("bad setting")

    with pytest.raises(ValueError, match="bad setting"):
        KafkaSecurity(plugins=[Starter(), Failing()])
    assert closed == ["shutdown", "store"]


def test_a_closed_instance_refuses_work():
    security = KafkaSecurity()
    security.close()
    with pytest.raises(ValueError, match="closed"):
        security.authorize(RequestContext.for_principal("User:alice"), [read_t()])
    with pytest.raises(ValueError, match="closed"):
        security.create_acls([grant()])


def test_state_store_hook_replaces_the_builtin():
    opened = []

    class CustomStore:
        @hookimpl
        def kafkasec_state_store(self, security, path):
            opened.append(path)
            return MemoryStateStore() if path == "custom://x" else None

    security = KafkaSecurity(state_path="custom://x", plugins=[CustomStore()])
    assert isinstance(security.store, MemoryStateStore) and opened == ["custom://x"]
    # Declining ("not mine") falls through to the built-in store.
    security = KafkaSecurity(state_path=None, plugins=[CustomStore()])
    assert isinstance(security.store, MemoryStateStore) and opened[-1] is None


class DenyEverythingOn:
    """A custom authorizer for one topic; None (not mine) for the rest."""

    def __init__(self, topic):
        self.topic = topic

    @hookimpl
    def kafkasec_authorize(self, security, context, actions):
        if not any(a.resource_pattern.name == self.topic for a in actions):
            return None
        rule = Rule(RuleKind.PLUGIN, description=f"policy engine forbids {self.topic}")
        return [AuthorizationDecision(a, DENIED, rule, authorizer="policy") for a in actions]


def test_authorize_hook_can_answer_or_decline():
    security = KafkaSecurity(plugins=[DenyEverythingOn("t")], super_users="User:admin")
    security.create_acls([grant(name="t"), grant(name="u")])
    alice = RequestContext.for_principal("User:alice")
    decision = security.explain(alice, read_t())
    assert decision.result is DENIED and decision.authorizer == "policy"
    assert decision.rule.kind is RuleKind.PLUGIN
    assert security.authorize(alice, [Action("READ", ResourcePattern("TOPIC", "u"))]) == [ALLOWED]
    assert security.authorized_operations(alice, TOPIC_T) == frozenset()


def test_authorize_hook_can_wrap_the_standard_authorizer():
    seen = []

    class Wrapper:
        @hookimpl(wrapper=True)
        def kafkasec_authorize(self, security, context, actions):
            decisions = yield
            seen.append([d.rule.kind for d in decisions])
            return decisions

    security = KafkaSecurity(plugins=[Wrapper()])
    security.create_acls([grant()])
    assert security.authorize(RequestContext.for_principal("User:alice"), [read_t()]) == [ALLOWED]
    assert seen == [[RuleKind.ALLOW_ACL]]


def test_a_wrong_number_of_decisions_is_an_error():
    class Broken:
        @hookimpl
        def kafkasec_authorize(self, security, context, actions):
            return []

    security = KafkaSecurity(plugins=[Broken()])
    with pytest.raises(RuntimeError, match="0 decisions for 1 actions"):
        security.authorize(RequestContext.for_principal("User:alice"), [read_t()])


class PolicyFile:
    def __init__(self, bindings):
        self.bindings = bindings

    @hookimpl
    def kafkasec_contribute_acls(self, security):
        return self.bindings


def test_contributed_acls_carry_the_plugin_name():
    plugin = PolicyFile([grant()])
    security = KafkaSecurity(plugins=[plugin])
    manager = security.plugin_manager
    decision = security.explain(RequestContext.for_principal("User:alice"), read_t())
    assert decision.result is ALLOWED
    assert decision.rule.acl.source == manager.get_name(plugin)
    plugin.bindings = []
    security.reload_contributed_acls()
    assert security.authorize(RequestContext.for_principal("User:alice"), [read_t()]) == [DENIED]


def test_contributed_acls_are_validated():
    with pytest.raises(Exception, match="Invalid empty resource name"):
        KafkaSecurity(plugins=[PolicyFile([grant(name="")])])


class Teams:
    @hookimpl
    def kafkasec_expand_principal(self, security, principal, context):
        return [KafkaPrincipal("Group", "eng")] if principal.name == "alice" else None


def test_expand_principal_applies_group_acls():
    security = KafkaSecurity(plugins=[Teams()])
    security.create_acls([grant("Group:eng")])
    assert security.authorize(RequestContext.for_principal("User:alice"), [read_t()]) == [ALLOWED]
    assert security.authorize(RequestContext.for_principal("User:bob"), [read_t()]) == [DENIED]
    assert security.explain(RequestContext.for_principal("User:alice"), read_t()).rule.acl.binding.entry.principal == "Group:eng"


def test_audit_sees_every_decision_with_its_rule():
    records = []

    class Recorder:
        @hookimpl
        def kafkasec_audit(self, security, context, decisions):
            records.extend((str(context.principal), d.action.resource_pattern.name, d.result, d.rule.kind) for d in decisions)

    security = KafkaSecurity(plugins=[Recorder()], super_users="User:admin")
    security.create_acls([grant()])
    security.authorize(RequestContext.for_principal("User:alice"), [read_t(), Action("WRITE", TOPIC_T), Action("READ", ResourcePattern("TOPIC", "z"))])
    security.authorize(RequestContext.for_principal("User:admin"), [read_t()])
    assert records == [
        ("User:alice", "t", ALLOWED, RuleKind.ALLOW_ACL),
        ("User:alice", "t", DENIED, RuleKind.NO_MATCHING_ACL),
        ("User:alice", "z", DENIED, RuleKind.NO_ACL_FOUND),
        ("User:admin", "t", ALLOWED, RuleKind.SUPER_USER),
    ]


def test_builtins_are_registered_last_and_listed():
    manager = make_plugin_manager(plugins=[Teams()])
    names = [name for name, _ in manager.list_name_plugin()]
    assert set(DEFAULT_PLUGINS) <= set(names)
    impls = manager.hook.kafkasec_authorize.get_hookimpls()
    # pluggy calls the last-registered first; trylast keeps the built-in at the end of the line.
    assert impls[0].plugin_name == "kafkasec.authorizer.plugin" and impls[0].trylast


def test_load_plugins_allow_list(monkeypatch):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "no-such-plugin")
    with pytest.raises(ValueError, match="no-such-plugin"):
        make_plugin_manager()
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "groupfile")
    names = [name for name, _ in make_plugin_manager().list_name_plugin()]
    assert "groupfile" in names and "audit_jsonl" not in names
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", "")
    names = [name for name, _ in make_plugin_manager().list_name_plugin()]
    assert "groupfile" not in names


def test_unknown_hook_names_fail_check_pending():
    class Typo:
        @hookimpl
        def kafkasec_authorise(self, context):
            return None

    with pytest.raises(Exception, match="kafkasec_authorise"):
        make_plugin_manager(plugins=[Typo()])


def test_tracing_switch(monkeypatch, capsys):
    monkeypatch.setenv("KAFKASEC_TRACE_PLUGINS", "1")
    KafkaSecurity().authorize(RequestContext.for_principal("User:alice"), [read_t()])
    assert "kafkasec_authorize" in capsys.readouterr().err


def test_from_config_reads_kafka_settings(tmp_path):
    security = KafkaSecurity.from_config(
        {
            "super.users": "User:admin;User:ops",
            "allow.everyone.if.no.acl.found": "TRUE",
            "kafkasec.state.path": str(tmp_path / "s.db"),
            "my.plugin.setting": "kept",
        }
    )
    assert security.authorizer.super_users == {"User:admin", "User:ops"}
    assert security.authorize(RequestContext.for_principal("User:bob"), [read_t()]) == [ALLOWED]
    assert security.config["my.plugin.setting"] == "kept"
    assert (tmp_path / "s.db").exists()
    with pytest.raises(ValueError, match="allow.everyone.if.no.acl.found must be true or false"):
        KafkaSecurity.from_config({"allow.everyone.if.no.acl.found": "yes"})


def test_hook_coverage_records_the_hooks_a_plugin_answers_and_not_the_built_ins(monkeypatch):
    import hook_coverage

    monkeypatch.setattr(hook_coverage, "exercised", set())

    class Audit:
        @hookimpl(wrapper=True)
        def kafkasec_authorize(self, context, actions):
            return (yield)

    KafkaSecurity().authorize(RequestContext.for_principal("User:alice"), [read_t()])
    assert hook_coverage.exercised == set()  # only built-ins answered
    with KafkaSecurity(plugins=[Audit()]) as security:
        assert security.authorize(RequestContext.for_principal("User:alice"), [read_t()]) == [DENIED]
    assert hook_coverage.exercised == {"kafkasec_authorize"}


@pytest.mark.parametrize(
    "hook, missing",
    [
        ("kafkasec_state_store", "close, latest_offset, read_log, snapshot, wait_for_change, write"),
        ("kafkasec_scram_credential_store", "apply_scram_changes, describe_scram_credentials"),
        ("kafkasec_delegation_token_store", "apply_delegation_token_changes"),
    ],
)
def test_a_store_that_breaks_its_contract_is_refused_naming_what_it_lacks(hook, missing):
    class HalfAStore:
        location = "half"

        def scram_credential(self, user, mechanism):
            return None

        def load_delegation_tokens(self):
            return []

    plugin = type("Plugin", (), {hook: hookimpl(lambda self, **_: HalfAStore())})()
    with pytest.raises(TypeError, match=rf"{hook} returned an object of type HalfAStore.*it lacks {missing}$"):
        KafkaSecurity(plugins=[plugin])
