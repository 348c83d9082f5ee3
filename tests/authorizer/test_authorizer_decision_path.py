"""One decision path: the facade answers straight from the index when no plugin can change or
observe an answer, through the hooks otherwise, and both give the reference authorizer's answers.
Provenance is found when a decision's rule is read; per-snapshot answers are never stale."""

import pluggy
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import (
    AclBinding,
    AclOperation,
    Action,
    AuthorizationDecision,
    AuthorizationResult,
    KafkaSecurity,
    ResourcePattern,
    ResourceType,
    Rule,
    RuleKind,
    hookimpl,
    hookspecs,
)
from kafkasec.authorizer import index as index_module
from kafkasec.authorizer.reference import ReferenceAuthorizer
from kafkasec.context import RequestContext
from kafkasec.plugins import DEFAULT_PLUGINS

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
ALICE = RequestContext.for_principal("User:alice", "10.0.0.1")


class PassThrough:
    """A wrapper that changes nothing: its presence alone sends every question through the hooks."""

    @hookimpl(wrapper=True)
    def kafkasec_authorize(self, security, context, actions):
        return (yield)


class Recorder:
    def __init__(self):
        self.batches = []

    @hookimpl
    def kafkasec_audit(self, security, context, decisions):
        self.batches.append(list(decisions))


class DenyEverything:
    @hookimpl
    def kafkasec_authorize(self, security, context, actions):
        return [AuthorizationDecision(a, DENIED, Rule(RuleKind.PLUGIN, description="no")) for a in actions]


def read(name="orders"):
    return Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, name))


acls = st.lists(
    st.builds(
        AclBinding.of,
        st.sampled_from(["TOPIC", "GROUP"]),
        st.sampled_from(["orders", "ord", "o", "*", "billing"]),
        st.sampled_from(["LITERAL", "PREFIXED"]),
        st.sampled_from(["User:alice", "User:bob", "User:*"]),
        st.sampled_from(["*", "10.0.0.1"]),
        st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE", "ALTER_CONFIGS"]),
        st.sampled_from(["ALLOW", "DENY"]),
    ),
    max_size=12,
)
questions = st.lists(
    st.tuples(
        st.sampled_from(["User:alice", "User:bob", "User:carol"]),
        st.sampled_from(["10.0.0.1", "10.0.0.2"]),
        st.sampled_from([op for op in AclOperation if op not in (AclOperation.ANY, AclOperation.UNKNOWN)]),
        st.sampled_from([ResourceType.TOPIC, ResourceType.GROUP]),
        st.sampled_from(["orders", "ordx", "billing", "other"]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls, questions, st.booleans())
def test_the_direct_path_and_the_hooks_give_the_reference_answers(bindings, asked, allow_everyone):
    reference = ReferenceAuthorizer(bindings, allow_everyone_if_no_acl_found=allow_everyone)
    with KafkaSecurity(allow_everyone_if_no_acl_found=allow_everyone) as direct, KafkaSecurity(
        allow_everyone_if_no_acl_found=allow_everyone, plugins=[PassThrough()]
    ) as hooked:
        assert direct.authorization.direct and not hooked.authorization.direct
        for security in (direct, hooked):
            security.create_acls(bindings)
        for principal, host, operation, resource_type, name in asked:
            context = RequestContext.for_principal(principal, host)
            pattern = ResourcePattern(resource_type, name)
            action = Action(operation, pattern)
            expected = reference.authorize(context, [action])
            assert direct.authorize(context, [action]) == hooked.authorize(context, [action]) == expected
            operations = reference.authorized_operations(context, pattern)
            assert direct.authorized_operations_many(context, [pattern, pattern]) == [operations, operations]
            assert hooked.authorized_operations(context, pattern) == operations
            explained = [security.explain(context, action) for security in (direct, hooked)]
            assert explained[0].result is explained[1].result is expected[0]
            rules = [decision.rule for decision in explained]  # the ACL ids differ between the two
            assert rules[0].kind is rules[1].kind
            assert (rules[0].acl and rules[0].acl.binding) == (rules[1].acl and rules[1].acl.binding)
            # Asked again: the remembered answer is the same one.
            assert direct.authorize(context, [action]) == expected


def test_a_plugin_registered_on_a_running_instance_is_asked_at_once():
    with KafkaSecurity(super_users="User:root") as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        assert security.authorize(ALICE, [read()]) == [ALLOWED]
        assert security.authorization.direct
        plugin = DenyEverything()
        security.plugin_manager.register(plugin, name="deny-everything")  # no plugins_changed() call
        assert not security.authorization.direct
        assert security.authorize(ALICE, [read()]) == [DENIED]
        assert security.authorized_operations(ALICE, ORDERS) == frozenset()
        security.plugin_manager.unregister(plugin)
        assert security.authorization.direct
        assert security.authorize(ALICE, [read()]) == [ALLOWED]


def test_with_a_plain_pluggy_manager_every_question_goes_through_the_hooks():
    manager = pluggy.PluginManager("kafkasec")
    manager.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        manager.register(__import__(name, fromlist=["_"]), name)
    with KafkaSecurity(plugin_manager=manager) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        assert not security.authorization.direct  # nobody would tell it when plugins change
        assert security.authorize(ALICE, [read()]) == [ALLOWED]
        manager.register(DenyEverything())
        assert security.authorize(ALICE, [read()]) == [DENIED]


def test_the_audit_hook_sees_batches_that_ask_to_be_logged_and_not_kip_430_checks():
    recorder = Recorder()
    with KafkaSecurity(plugins=[recorder]) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        assert not security.authorization.direct
        assert security.authorize(ALICE, [read(), read("payments")]) == [ALLOWED, DENIED]
        [batch] = recorder.batches
        assert [d.result for d in batch] == [ALLOWED, DENIED]
        assert [d.rule.kind for d in batch] == [RuleKind.ALLOW_ACL, RuleKind.NO_ACL_FOUND]
        assert security.authorized_operations(ALICE, ORDERS) == frozenset({AclOperation.READ, AclOperation.DESCRIBE})
        unlogged = Action(AclOperation.READ, ORDERS, 1, False, False)
        assert security.authorize(ALICE, [unlogged]) == [ALLOWED]
        assert len(recorder.batches) == 1


def test_the_rule_of_a_decision_is_that_of_its_snapshot():
    with KafkaSecurity() as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        [decision] = security.decide(ALICE, [read()])
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "DENY")])
        # Read after the change, the rule is still the one that gave this (allowed) answer.
        assert decision.allowed and decision.rule.kind is RuleKind.ALLOW_ACL
        assert security.explain(ALICE, read()).rule.kind is RuleKind.DENY_ACL


def test_remembered_answers_are_bounded(monkeypatch):
    monkeypatch.setattr(index_module, "MEMO_LIMIT", 4)
    with KafkaSecurity() as security:
        security.create_acls([AclBinding.of("TOPIC", "o", "PREFIXED", "User:alice", "*", "READ", "ALLOW")])
        type_index = security.authorizer.index.types[ResourceType.TOPIC]
        for n in range(20):
            assert security.authorize(ALICE, [read(f"o{n}")]) == [ALLOWED]
            assert security.authorize(ALICE, [read(f"x{n}")]) == [DENIED]
            assert len(type_index._permitted) <= 4


def test_audit_implementations_get_the_arguments_they_name_in_their_order():
    seen = []

    class OnlyDecisions:
        @hookimpl
        def kafkasec_audit(self, decisions):
            seen.append(("decisions only", [d.result for d in decisions]))

    class Reordered:
        @hookimpl
        def kafkasec_audit(self, decisions, security, context):
            seen.append(("reordered", context.acl_principal, security is not None))

    with KafkaSecurity(plugins=[OnlyDecisions(), Reordered()]) as security:
        security.authorize(ALICE, [read()])
    assert sorted(seen, key=str) == [("decisions only", [DENIED]), ("reordered", "User:alice", True)]
