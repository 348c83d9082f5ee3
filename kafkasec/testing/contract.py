"""The contract a plugin that changes authorization answers is held to.

Kafka's clients ask one authorizer three ways: ``authorize`` (may I do this?),
``authorized_operations`` (KIP-430: what may I do here?) and ``authorize_by_resource_type``
(may I do this on some resource of this type?). A plugin that makes them disagree lets a client
see an operation it cannot perform, or the reverse. Each ``check_*`` function asks one
question of one or more securities and raises :class:`ContractViolation` naming the principal,
host, action and the differing answers; :class:`AuthorizerContract` runs them all, first over
fixed cases built from the plugin's vocabulary (:mod:`kafkasec.testing.vocabulary`), every run,
then over random ACL sets and questions (hypothesis). Subclass it in your tests::

    from kafkasec.testing.contract import AuthorizerContract

    class TestMyPluginContract(AuthorizerContract):
        pass  # the kafkasec_plugin and kafkasec_config fixtures say what is tested

The contract checks that the answers agree, not that they are the plugin's rule: a plugin that
does nothing keeps it. The plugin's own tests say what its rule is.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kafkasec import Action, AuthorizationResult, ResourcePattern, hookimpl
from kafkasec.acl import supported_operations
from kafkasec.context import RequestContext
from kafkasec.testing import open_security, strategies
from kafkasec.testing.vocabulary import ContractCase, Vocabulary, contract_cases

ALLOWED = AuthorizationResult.ALLOWED


class ContractViolation(AssertionError):
    """A plugin broke Kafka's authorizer contract; the message says who asked what, and the
    answers that differ."""


def _asked(principal, host, operation, resource_type, name) -> str:
    operation_name = getattr(operation, "name", operation)
    type_name = getattr(resource_type, "name", resource_type)
    return f"{principal} from {host}, {operation_name} on {type_name} {name!r}"


def _answer(result) -> str:
    return getattr(result, "name", repr(result))


def check_operations_agree(security, principal, host, resource_type, name) -> None:
    """``authorized_operations`` (KIP-430) is exactly the operations ``authorize`` allows, each
    asked on its own."""
    context = RequestContext.for_principal(principal, host)
    pattern = ResourcePattern(resource_type, name)
    listed = security.authorized_operations(context, pattern)
    for operation in sorted(supported_operations(resource_type)):
        [result] = security.authorize(context, [Action(operation, pattern)])
        if (result is ALLOWED) != (operation in listed):
            raise ContractViolation(
                f"{_asked(principal, host, operation, resource_type, name)}: authorize says {_answer(result)}, "
                f"authorized_operations {'lists' if operation in listed else 'does not list'} it"
            )


def check_by_resource_type_agrees(security, principal, host, operation, resource_type, name) -> None:
    """When ``authorize`` allows ``operation`` on a resource, ``authorize_by_resource_type`` does
    not deny it for the type, unless the standard authorizer (same ACLs, same principal
    expansion) disagrees the same way: Kafka's by-type answer reads ACLs of the operation itself,
    not the operations it implies, and that is Kafka's behaviour, not the plugin's fault."""
    context = RequestContext.for_principal(principal, host)
    action = Action(operation, ResourcePattern(resource_type, name))
    [result] = security.authorize(context, [action])
    by_type = security.authorize_by_resource_type(context, operation, resource_type)
    if result is not ALLOWED or by_type is ALLOWED:
        return
    [standard] = security.authorizer.authorize(context, [action])
    if standard is ALLOWED and security.authorizer.authorize_by_resource_type(context, operation, resource_type) is not ALLOWED:
        return
    raise ContractViolation(
        f"{_asked(principal, host, operation, resource_type, name)}: authorize says ALLOWED (the standard "
        f"authorizer says {_answer(standard)}), authorize_by_resource_type says {_answer(by_type)} for "
        f"every {getattr(resource_type, 'name', resource_type)}"
    )


def check_batch_equals_single(security, principal, host, actions) -> None:
    """One batch of actions gets the answers each action gets alone, in order."""
    context = RequestContext.for_principal(principal, host)
    batch = security.authorize(context, list(actions))
    for action, in_batch in zip(actions, batch):
        [alone] = security.authorize(context, [action])
        if in_batch is not alone:
            raise ContractViolation(
                f"{_asked(principal, host, action.operation, action.resource_pattern.resource_type, action.resource_pattern.name)}: "
                f"authorize says {_answer(in_batch)} in a batch of {len(batch)}, {_answer(alone)} alone"
            )


def check_declining_keeps_standard_answers(security, plugin, principal, host, action) -> None:
    """Where the plugin's ``kafkasec_authorize`` declines (None), the answer is the standard
    authorizer's; where it answers, it answers one decision per action. (A wrapper is not asked
    alone: it has no answer of its own.)"""
    impls = [impl for impl in security.plugin_manager.hook.kafkasec_authorize.get_hookimpls()
             if impl.plugin is plugin and not (impl.wrapper or impl.hookwrapper)]
    if not impls:
        return
    context = RequestContext.for_principal(principal, host)
    arguments = {"security": security, "context": context, "actions": [action]}
    answered = impls[0].function(*(arguments[name] for name in impls[0].argnames))
    asked = _asked(principal, host, action.operation, action.resource_pattern.resource_type, action.resource_pattern.name)
    if answered is not None:
        if not isinstance(answered, list) or len(answered) != 1:
            raise ContractViolation(
                f"{asked}: kafkasec_authorize answered {answered!r} for 1 action; decline with None, "
                f"or answer a list of one AuthorizationDecision per action"
            )
        return
    [given] = security.authorize(context, [action])
    [standard] = security.authorizer.authorize(context, [action])
    if given is not standard:
        raise ContractViolation(
            f"{asked}: the plugin declines, yet authorize says {_answer(given)} where the standard authorizer says {_answer(standard)}"
        )


_AUDIT_RECORDER = "kafkasec-testing-audit"


class _AuditRecorder:
    """Keeps each batch of decisions the audit hook is given."""

    def __init__(self):
        self.batches: list[list] = []

    @hookimpl
    def kafkasec_audit(self, context, decisions):
        self.batches.append(list(decisions))


def check_audit_sees_every_decision(security, principal, host, actions) -> None:
    """Every decision of an audited request reaches ``kafkasec_audit``, with the answer given."""
    # One recorder per security, registered on the first call: a plugin is registered for the
    # security's life, and this check may be asked of one security many times.
    recorder = security.plugin_state.get(_AUDIT_RECORDER)
    if recorder is None:
        recorder = security.plugin_state[_AUDIT_RECORDER] = _AuditRecorder()
        security.register_plugin(recorder, _AUDIT_RECORDER)
    recorder.batches.clear()
    context = RequestContext.for_principal(principal, host)
    answers = security.authorize(context, list(actions))
    seen = [decision.result for batch in recorder.batches for decision in batch]
    if seen != answers or len(answers) != len(actions):
        first = actions[0]
        raise ContractViolation(
            f"{_asked(principal, host, first.operation, first.resource_pattern.resource_type, first.resource_pattern.name)} "
            f"and {len(actions) - 1} more actions: authorize says {[_answer(a) for a in answers]}, the audit hook saw "
            f"{[_answer(s) for s in seen]}, for {len(actions)} actions"
        )


def check_survives_reopen(open_with_plugin, acls, asked) -> None:
    """Answers after ``close()`` and reopening on the same state are the answers before.
    ``open_with_plugin(path)`` opens a KafkaSecurity with the plugin on the state file ``path``."""
    with tempfile.TemporaryDirectory(prefix="kafkasec-contract-") as directory:
        path = Path(directory) / "state.db"
        with contextlib.closing(open_with_plugin(path)) as security:
            security.create_acls(acls)
            before = [_single(security, *question) for question in asked]
        with contextlib.closing(open_with_plugin(path)) as reopened:
            after = [_single(reopened, *question) for question in asked]
    for question, then, now in zip(asked, before, after):
        if then is not now:
            raise ContractViolation(
                f"{_asked(*question)}: authorize said {_answer(then)} before close(), {_answer(now)} after reopening"
            )


def _toggle(security, binding) -> None:
    """One change of the security log: create ``binding``, or delete it if it is there."""
    if binding in security.acls(binding.to_filter()):
        security.delete_acls([binding.to_filter()])
    else:
        security.create_acls([binding])


def check_no_torn_reads(open_with_plugin, toggles, principal, host, actions) -> None:
    """While another thread makes ``toggles`` (each ACL created, or deleted if present: one
    change each), every batch answer equals the batch's answer in one of the states between
    changes. ``open_with_plugin()`` opens a KafkaSecurity with the plugin in memory."""
    context = RequestContext.for_principal(principal, host)
    actions = list(actions)
    with contextlib.closing(open_with_plugin()) as security:
        states = [tuple(security.authorize(context, actions))]
        for binding in toggles:
            _toggle(security, binding)
            states.append(tuple(security.authorize(context, actions)))
    with contextlib.closing(open_with_plugin()) as security:
        done = threading.Event()

        def change():
            try:
                for binding in toggles:
                    _toggle(security, binding)
                    time.sleep(0.001)  # hold each state a moment, so that readers meet it mid-batch
            finally:
                done.set()

        writer = threading.Thread(target=change, name="kafkasec-contract-writer")
        writer.start()
        try:
            while True:
                finished = done.is_set()
                answers = tuple(security.authorize(context, actions))
                if answers not in states:
                    first = actions[0]
                    pattern = first.resource_pattern
                    raise ContractViolation(
                        f"{_asked(principal, host, first.operation, pattern.resource_type, pattern.name)} and "
                        f"{len(actions) - 1} more actions, while ACLs changed: authorize says "
                        f"{[_answer(a) for a in answers]}, which no state between changes gives "
                        f"({[[_answer(a) for a in state] for state in dict.fromkeys(states)]})"
                    )
                if finished:
                    break
        finally:
            writer.join()


def _single(security, principal, host, operation, resource_type, name):
    context = RequestContext.for_principal(principal, host)
    return security.authorize(context, [Action(operation, ResourcePattern(resource_type, name))])[0]


def _examples(share: int = 1) -> settings:
    """The active Hypothesis profile's settings (``--hypothesis-profile``, or Hypothesis' ``ci``
    profile, which it loads where the ``CI`` variable is set: derandomized, no example database),
    without a deadline; a test that opens several securities per example runs ``1/share`` of the
    profile's ``max_examples``."""
    profile = settings()
    return settings(profile, deadline=None, max_examples=max(1, profile.max_examples // share),
                    suppress_health_check=[*profile.suppress_health_check, HealthCheck.too_slow])


@contextlib.contextmanager
def _opened(open_with_plugin, acls):
    with contextlib.closing(open_with_plugin()) as security:
        security.create_acls(acls)
        yield security


def _askers(asked):
    """Each ``(principal, host)`` of ``asked``, once, in order."""
    return list(dict.fromkeys((principal, host) for principal, host, *_ in asked))


def _actions(asked):
    return [Action(operation, ResourcePattern(resource_type, name)) for _, _, operation, resource_type, name in asked]


def _failed(case: ContractCase, error: Exception) -> ContractViolation:
    if isinstance(error, ContractViolation):
        return ContractViolation(f"{error}\n(in the contract's fixed case {case})")
    return ContractViolation(
        f"{case}: the plugin raised {type(error).__name__}: {error} (an authorizer answers every principal, "
        f"of any type, and every action: a raise fails the client's request)"
    )


class AuthorizerContract:
    """Kafka's authorizer contract, for the plugin of the ``kafkasec_plugin`` fixture with the
    settings of ``kafkasec_config``. Subclass it as ``Test...``.

    Each test asks the fixed cases of :func:`~kafkasec.testing.vocabulary.contract_cases` first,
    every run, then as many Hypothesis examples as the active profile's ``max_examples`` (a fifth
    of that in the torn-read and reopen tests, which open several securities per example). The
    vocabulary is what :meth:`~kafkasec.testing.vocabulary.Vocabulary.of_plugin` finds in the
    plugin's settings and ACLs, and ``vocabulary``: set it to a
    :class:`~kafkasec.testing.vocabulary.Vocabulary` of the names and principals your rule is
    about that are in neither. ``acls_and_questions``, when set, is the strategy of
    ``(acls, questions)`` the examples are drawn from
    (:func:`kafkasec.testing.strategies.acls_and_questions` takes your ``bindings`` and
    ``questions``); by default, :func:`~kafkasec.testing.strategies.acls_and_questions_of` the
    vocabulary."""

    vocabulary = Vocabulary()
    acls_and_questions = None

    @pytest.fixture
    def open_with_plugin(self, kafkasec_plugin, kafkasec_config):
        """A function of a state file path (None: memory): a KafkaSecurity with the plugin."""
        config = {key: value for key, value in kafkasec_config.items() if key != "kafkasec.state.path"}

        def open_with(path=None):
            return open_security(path, plugins=[kafkasec_plugin], load_entrypoints=False, **config)

        return open_with

    @pytest.fixture
    def contract_vocabulary(self, open_with_plugin, kafkasec_plugin) -> Vocabulary:
        """The plugin's vocabulary (from its settings and ACLs) and the class's ``vocabulary``."""
        with contextlib.closing(open_with_plugin()) as security:
            return Vocabulary.of_plugin(security, kafkasec_plugin) | self.vocabulary

    def _hold(self, vocabulary: Vocabulary, check, share: int = 1) -> None:
        """``check((acls, asked))`` over the fixed cases of ``vocabulary``, then over Hypothesis'
        examples. ``check`` is each test's own function, so that Hypothesis keeps each test's
        failing examples apart."""
        for case in contract_cases(vocabulary):
            try:
                check((case.acls, case.asked))
            except Exception as error:
                raise _failed(case, error) from error
        strategy = self.acls_and_questions
        if strategy is None:
            strategy = strategies.acls_and_questions_of(vocabulary)
        _examples(share)(given(strategy)(check))()

    def test_authorized_operations_agree_with_authorize(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            acls, asked = acls_asked
            with _opened(open_with_plugin, acls) as security:
                for principal, host, resource_type, name in dict.fromkeys((p, h, t, n) for p, h, _, t, n in asked):
                    check_operations_agree(security, principal, host, resource_type, name)

        self._hold(contract_vocabulary, check)

    def test_authorize_by_resource_type_agrees_with_authorize(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            acls, asked = acls_asked
            with _opened(open_with_plugin, acls) as security:
                for question in asked:
                    check_by_resource_type_agrees(security, *question)

        self._hold(contract_vocabulary, check)

    def test_a_batch_gets_the_answers_of_single_actions(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            acls, asked = acls_asked
            with _opened(open_with_plugin, acls) as security:
                for principal, host in _askers(asked):
                    check_batch_equals_single(security, principal, host, _actions(asked))

        self._hold(contract_vocabulary, check)

    def test_declining_leaves_the_standard_answers(self, open_with_plugin, contract_vocabulary, kafkasec_plugin):
        def check(acls_asked):
            acls, asked = acls_asked
            with _opened(open_with_plugin, acls) as security:
                for principal, host, operation, resource_type, name in asked:
                    action = Action(operation, ResourcePattern(resource_type, name))
                    check_declining_keeps_standard_answers(security, kafkasec_plugin, principal, host, action)

        self._hold(contract_vocabulary, check)

    def test_audit_sees_every_decision(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            acls, asked = acls_asked
            with _opened(open_with_plugin, acls) as security:
                for principal, host in _askers(asked):
                    check_audit_sees_every_decision(security, principal, host, _actions(asked))

        self._hold(contract_vocabulary, check)

    def test_answers_are_never_torn_under_concurrent_changes(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            acls, asked = acls_asked
            principal, host = asked[0][:2]
            # Each ACL twice: created, then deleted again, so that answers come and go.
            check_no_torn_reads(open_with_plugin, [*acls, *reversed(acls)], principal, host, _actions(asked))

        self._hold(contract_vocabulary, check, share=5)

    def test_answers_survive_close_and_reopen(self, open_with_plugin, contract_vocabulary):
        def check(acls_asked):
            check_survives_reopen(open_with_plugin, *acls_asked)

        self._hold(contract_vocabulary, check, share=5)


__all__ = [
    "AuthorizerContract", "ContractViolation", "check_audit_sees_every_decision", "check_batch_equals_single",
    "check_by_resource_type_agrees", "check_declining_keeps_standard_answers", "check_operations_agree",
    "check_no_torn_reads", "check_survives_reopen",
]
