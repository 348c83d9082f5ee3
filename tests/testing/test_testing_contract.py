"""Planted broken plugins: each check of the authorizer contract fails on the plugin that
breaks it, with a message that names the principal, host, action and the differing answers;
bugs on a plugin's own names and principal types are found by the contract's fixed cases, so
in every run."""

import time

import pytest
from attrs import evolve

from kafkasec import AclBinding, AclOperation, Action, AuthorizationResult, ResourcePattern, ResourceType, hookimpl
from kafkasec.authorizer.decision import AuthorizationDecision, Rule, RuleKind
from kafkasec.settings import Setting
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
from kafkasec.testing.vocabulary import OTHER_TYPE_PRINCIPAL, Vocabulary

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


class GrantsTheBuildTeamItsTopics:
    """Contributes ALL on the topics under ``build-`` to Group:build, and READ on every topic to
    everyone (wildcards: no name or principal of the plugin's own)."""

    @hookimpl
    def kafkasec_contribute_acls(self):
        return [AclBinding.of("TOPIC", "build-", "PREFIXED", "Group:build", "*", "ALL", "ALLOW"),
                AclBinding.of("TOPIC", "*", "LITERAL", "User:*", "*", "READ", "ALLOW")]


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


PROTECTED_PRINCIPALS = Setting("kafkasec.protect.principals", "list", "", "planted", "principals refused changes")
PROTECTED_PREFIXES = Setting("kafkasec.protect.prefixes", "list", "prod-", "planted", "topic prefixes protected")
PROTECTS_CAROL = {"super.users": "User:admin", PROTECTED_PRINCIPALS.name: "User:carol"}


class DecidesABatchByItsFirstAction:
    """Denies WRITE and ALTER on topics under ``prod-`` (written in its code) to the principals
    of its setting, but asks whether a batch's topic is protected of its first action only."""

    @hookimpl
    def kafkasec_settings(self):
        return [PROTECTED_PRINCIPALS]

    def prefixes(self, security):
        return ("prod-",)

    @hookimpl(wrapper=True)
    def kafkasec_authorize(self, security, context, actions):
        decisions = yield
        first = actions[0].resource_pattern if actions else None
        protected = (
            str(context.principal) in PROTECTED_PRINCIPALS.value(security.config)
            and first is not None and first.resource_type is ResourceType.TOPIC
            and first.name.startswith(tuple(self.prefixes(security)))
        )
        refused = Rule(RuleKind.PLUGIN, description="protected topic")
        return [
            evolve(decision, result=DENIED, rule=refused, authorizer="planted")
            if protected and decision.action.operation in (AclOperation.WRITE, AclOperation.ALTER) else decision
            for decision in decisions
        ]


class DecidesABatchByItsFirstActionOnPrefixesOfASetting(DecidesABatchByItsFirstAction):
    """The same, with the prefixes in a setting of its own (``prod-`` by default)."""

    @hookimpl
    def kafkasec_settings(self):
        return [PROTECTED_PRINCIPALS, PROTECTED_PREFIXES]

    def prefixes(self, security):
        return PROTECTED_PREFIXES.value(security.config)


class HasAPolicyForUsersAndGroupsOnly:
    """Looks each principal's type up in a table of User and Group: a KeyError for any other."""

    POLICIES = {"User": None, "Group": None}  # None: decline, the ACLs decide

    @hookimpl
    def kafkasec_authorize(self, context):
        return self.POLICIES[context.principal.principal_type]


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


CONTRACT_TESTS = [name for name in dir(AuthorizerContract) if name.startswith("test_")]


def run_contract_test(contract, test_name, plugin, config=None):
    """As pytest runs a subclass of the contract: its fixtures' functions, then the test."""
    config = config or {"super.users": "User:admin"}
    open_with_plugin = AuthorizerContract.open_with_plugin.__wrapped__(contract, plugin, config)
    arguments = {
        "open_with_plugin": open_with_plugin,
        "kafkasec_plugin": plugin,
        "contract_vocabulary": AuthorizerContract.contract_vocabulary.__wrapped__(contract, open_with_plugin, plugin),
    }
    test = getattr(contract, test_name)
    test(**{name: arguments[name] for name in test.__code__.co_varnames[1:test.__code__.co_argcount]})


@pytest.mark.parametrize(("plugin", "test_name"), [
    (AllowsWhatItIsNotAudited(), "test_authorized_operations_agree_with_authorize"),
    (DeniesBatches(), "test_a_batch_gets_the_answers_of_single_actions"),
    (DeclinesWithAnEmptyList(), "test_declining_leaves_the_standard_answers"),
    (AllowsCarolToRead(), "test_authorize_by_resource_type_agrees_with_authorize"),
    (HidesDecisionsFromAudit(), "test_audit_sees_every_decision"),
    (ForgetsItsGrantsOnClose(), "test_answers_survive_close_and_reopen"),
])
def test_the_contract_class_finds_each_planted_plugin(plugin, test_name):
    with pytest.raises(ContractViolation):
        run_contract_test(AuthorizerContract(), test_name, plugin)


# The fixed cases run before any random example: a violation they find names its case, and
# is found in every run, whatever Hypothesis draws or its example database remembers.
FIXED_CASE = r"\(in the contract's fixed case User:carol from 10\.0\.0\.1, with ALL allowed to User:\* on every resource\)"


def test_a_batch_bug_on_a_prefix_in_the_plugins_settings_is_found_every_run():
    with pytest.raises(ContractViolation, match=(
        r"User:carol from 10\.0\.0\.1, (WRITE|ALTER) on TOPIC 'prod-x?': authorize says (ALLOWED|DENIED) in a batch "
        r"of \d+, (ALLOWED|DENIED) alone\n" + FIXED_CASE
    )):
        run_contract_test(AuthorizerContract(), "test_a_batch_gets_the_answers_of_single_actions",
                          DecidesABatchByItsFirstActionOnPrefixesOfASetting(), PROTECTS_CAROL)


def test_a_batch_bug_on_a_prefix_in_the_plugins_code_is_found_every_run_once_declared():
    class Contract(AuthorizerContract):
        vocabulary = Vocabulary(resource_names=("prod-",))

    with pytest.raises(ContractViolation, match=FIXED_CASE):
        run_contract_test(Contract(), "test_a_batch_gets_the_answers_of_single_actions",
                          DecidesABatchByItsFirstAction(), PROTECTS_CAROL)


@pytest.mark.parametrize("test_name", CONTRACT_TESTS)
def test_a_crash_on_a_principal_type_the_plugin_does_not_know_is_found_every_run(test_name):
    with pytest.raises(ContractViolation, match=(
        rf"^{OTHER_TYPE_PRINCIPAL} from 10\.0\.0\.1, with no ACLs: the plugin raised KeyError: 'ServiceAccount' "
        r"\(an authorizer answers every principal"
    )):
        run_contract_test(AuthorizerContract(), test_name, HasAPolicyForUsersAndGroupsOnly())


def test_a_vocabulary_refuses_one_string_for_a_tuple_and_a_principal_without_a_type():
    with pytest.raises(TypeError, match=r"a tuple of strings, not the string 'prod-': write \('prod-',\)"):
        Vocabulary(resource_names="prod-")
    with pytest.raises(ValueError, match="principals: 'alice' is not a principal such as 'User:alice'"):
        Vocabulary(principals=("alice",))


def test_the_vocabulary_is_the_plugins_settings_its_acls_and_the_declared_one():
    class Contract(AuthorizerContract):
        vocabulary = Vocabulary(resource_names=("stage-",), principals=("Group:ops",))

    plugin = DecidesABatchByItsFirstActionOnPrefixesOfASetting()
    config = {**PROTECTS_CAROL, PROTECTED_PREFIXES.name: "prod-, /not/a/name", "kafkasec.state.path": "ignored"}
    contract = Contract()
    open_with_plugin = AuthorizerContract.open_with_plugin.__wrapped__(contract, plugin, config)
    assert AuthorizerContract.contract_vocabulary.__wrapped__(contract, open_with_plugin, plugin) == Vocabulary(
        resource_names=("prod-", "stage-"), principals=("User:carol", "Group:ops")
    )
    plugin = GrantsTheBuildTeamItsTopics()
    with opened(plugin) as security:
        assert Vocabulary.of_plugin(security, plugin) == Vocabulary(resource_names=("build-",), principals=("Group:build",))


class TestTheStandardAuthorizerAloneKeepsTheContract(AuthorizerContract):
    @pytest.fixture
    def kafkasec_plugin(self):
        return AlwaysDeclines()
