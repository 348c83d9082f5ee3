"""Planted broken plugins: each check of the authorizer contract fails on the plugin that
breaks it, with a message that names the principal, host, action and the differing answers."""

import time

import pytest

from kafkasec import AclBinding, AclOperation, Action, AuthorizationResult, ResourcePattern, ResourceType, hookimpl
from kafkasec.authorizer.decision import AuthorizationDecision, Rule, RuleKind
from kafkasec.testing import open_security
from kafkasec.testing.contract import (
    AuthorizerContract,
    ContractViolation,
    check_audit_sees_every_decision,
    check_batch_equals_single,
    check_by_resource_type_agrees,
    check_declining_keeps_standard_answers,
    check_no_torn_reads,
    check_operations_agree,
    check_survives_reopen,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
READ_ORDERS = Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, "orders"))
ALICE_READS = AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")


def decisions(actions, result, why):
    return [AuthorizationDecision(action, result, Rule(RuleKind.PLUGIN, description=why), authorizer="planted")
            for action in actions]


class AllowsWhatItIsNotAudited:
    """Allows every action that asks for no audit (KIP-430's questions), declines the rest:
    authorized_operations lists what authorize refuses."""

    @hookimpl
    def kafkasec_authorize(self, actions):
        if all(not action.log_if_allowed and not action.log_if_denied for action in actions):
            return decisions(actions, ALLOWED, "unaudited")
        return None


class DeniesBatches:
    """Denies every batch of more than one action, declines single ones."""

    @hookimpl
    def kafkasec_authorize(self, actions):
        return decisions(actions, DENIED, "batch") if len(actions) > 1 else None


class DeclinesWithAnEmptyList:
    """Means to decline, but returns [] (an answer to pluggy) instead of None."""

    @hookimpl
    def kafkasec_authorize(self, context, actions):
        return None if str(context.principal) == "User:alice" else []


class AllowsCarolToRead:
    """Allows User:carol everything, whatever the ACLs say."""

    @hookimpl
    def kafkasec_authorize(self, context, actions):
        return decisions(actions, ALLOWED, "carol") if str(context.principal) == "User:carol" else None


class AlwaysDeclines:
    """Declines every decision: the standard authorizer's answers, which keep the contract."""

    @hookimpl
    def kafkasec_authorize(self):
        return None


class HidesDecisionsFromAudit:
    """Wraps the audit hook and empties the list of decisions before the auditors read it (the
    very list authorize answers from, so the request loses its answers too)."""

    @hookimpl(wrapper=True)
    def kafkasec_audit(self, security, context, decisions):
        del decisions[:]  # the list every later auditor reads
        return (yield)


class ForgetsItsGrantsOnClose:
    """Contributes a grant to everyone on every topic, from a cache that close() drops: the
    KafkaSecurity opened next gets no grant (and the one after refills the cache)."""

    def __init__(self):
        self.cached = True

    @hookimpl
    def kafkasec_contribute_acls(self):
        return [AclBinding.of("TOPIC", "*", "LITERAL", "User:*", "*", "ALL", "ALLOW")] if self.cached else []

    @hookimpl
    def kafkasec_shutdown(self):
        self.cached = not self.cached


class DecidesEachActionApart:
    """Asks the standard authorizer about each action on its own, a moment apart: a change of
    ACLs between two of them tears the batch's answer."""

    @hookimpl
    def kafkasec_authorize(self, security, context, actions):
        answers = []
        for action in actions:
            answers.extend(security.authorizer.decide(context, [action]))
            time.sleep(0.002)
        return answers


def opened(plugin, **config):
    return open_security(plugins=[plugin], load_entrypoints=False, **{"super.users": "User:admin", **config})


def test_authorized_operations_disagreeing_with_authorize():
    with opened(AllowsWhatItIsNotAudited()) as security:
        with pytest.raises(ContractViolation) as raised:
            check_operations_agree(security, "User:bob", "10.0.0.1", ResourceType.TOPIC, "orders")
    message = str(raised.value)
    assert "User:bob from 10.0.0.1" in message and "on TOPIC 'orders'" in message
    assert "authorize says DENIED, authorized_operations lists it" in message


def test_a_batch_answered_unlike_its_single_actions():
    with opened(DeniesBatches(), acls=[ALICE_READS]) as security:
        with pytest.raises(ContractViolation, match=(
            r"User:alice from 10\.0\.0\.1, READ on TOPIC 'orders': authorize says DENIED in a batch of 2, ALLOWED alone"
        )):
            check_batch_equals_single(security, "User:alice", "10.0.0.1", [READ_ORDERS, READ_ORDERS])


def test_answering_instead_of_declining():
    plugin = DeclinesWithAnEmptyList()
    with opened(plugin, acls=[ALICE_READS]) as security:
        check_declining_keeps_standard_answers(security, plugin, "User:alice", "10.0.0.1", READ_ORDERS)
        with pytest.raises(ContractViolation, match=(
            r"User:bob from 10\.0\.0\.2, READ on TOPIC 'orders': kafkasec_authorize answered \[\] for 1 action; "
            r"decline with None"
        )):
            check_declining_keeps_standard_answers(security, plugin, "User:bob", "10.0.0.2", READ_ORDERS)


def test_an_authorize_answer_that_authorize_by_resource_type_does_not_know():
    with opened(AllowsCarolToRead()) as security:
        with pytest.raises(ContractViolation, match=(
            r"User:carol from 10\.0\.0\.1, READ on TOPIC 'orders': authorize says ALLOWED \(the standard authorizer "
            r"says DENIED\), authorize_by_resource_type says DENIED for every TOPIC"
        )):
            check_by_resource_type_agrees(security, "User:carol", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "orders")


def test_kafkas_own_implied_operations_are_no_violation():
    # READ implies DESCRIBE for authorize; Kafka's by-type answer reads DESCRIBE ACLs only.
    with opened(AlwaysDeclines(), acls=[ALICE_READS]) as security:
        check_by_resource_type_agrees(security, "User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")


def test_decisions_the_audit_hook_never_sees():
    with opened(HidesDecisionsFromAudit(), acls=[ALICE_READS]) as security:
        with pytest.raises(ContractViolation, match=(
            r"User:alice from 10\.0\.0\.1, READ on TOPIC 'orders' and 0 more actions: authorize says \[\], "
            r"the audit hook saw \[\], for 1 actions"
        )):
            check_audit_sees_every_decision(security, "User:alice", "10.0.0.1", [READ_ORDERS])


def test_answers_lost_on_close_and_reopen():
    plugin = ForgetsItsGrantsOnClose()
    question = ("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "orders")
    with pytest.raises(ContractViolation, match=(
        r"User:alice from 10\.0\.0\.1, READ on TOPIC 'orders': authorize said ALLOWED before close\(\), DENIED after reopening"
    )):
        check_survives_reopen(lambda path: opened(plugin, **{"kafkasec.state.path": str(path)}), [], [question])


def test_a_batch_answered_from_two_states_of_the_acls():
    toggles = [ALICE_READS] * 200  # granted, revoked, granted, ...
    with pytest.raises(ContractViolation, match=(
        r"User:alice from 10\.0\.0\.1, READ on TOPIC 'orders' and 2 more actions, while ACLs changed: authorize says "
        r"\[.*\], which no state between changes gives \(\[\['DENIED', 'DENIED', 'DENIED'\], \['ALLOWED', 'ALLOWED', 'ALLOWED'\]\]\)"
    )):
        check_no_torn_reads(lambda: opened(DecidesEachActionApart()), toggles, "User:alice", "10.0.0.1", [READ_ORDERS] * 3)


@pytest.mark.parametrize(("plugin", "test_name"), [
    (AllowsWhatItIsNotAudited(), "test_authorized_operations_agree_with_authorize"),
    (DeniesBatches(), "test_a_batch_gets_the_answers_of_single_actions"),
    (DeclinesWithAnEmptyList(), "test_declining_leaves_the_standard_answers"),
    (AllowsCarolToRead(), "test_authorize_by_resource_type_agrees_with_authorize"),
    (HidesDecisionsFromAudit(), "test_audit_sees_every_decision"),
    (ForgetsItsGrantsOnClose(), "test_answers_survive_close_and_reopen"),
])
def test_the_contract_class_finds_each_planted_plugin(plugin, test_name):
    # As pytest would run a subclass of it: the open_with_plugin fixture's function, then the test.
    contract = AuthorizerContract()
    open_with_plugin = AuthorizerContract.open_with_plugin.__wrapped__(contract, plugin, {"super.users": "User:admin"})
    test = getattr(contract, test_name)
    arguments = {"open_with_plugin": open_with_plugin, "kafkasec_plugin": plugin}
    with pytest.raises(ContractViolation):
        test(**{name: arguments[name] for name in test.__code__.co_varnames[1:test.__code__.co_argcount]})


class TestTheStandardAuthorizerAloneKeepsTheContract(AuthorizerContract):
    @pytest.fixture
    def kafkasec_plugin(self):
        return AlwaysDeclines()
