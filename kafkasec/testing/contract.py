"""The contract a plugin that changes authorization answers is held to.

Kafka's clients ask one authorizer three ways: ``authorize`` (may I do this?),
``authorized_operations`` (KIP-430: what may I do here?) and ``authorize_by_resource_type``
(may I do this on some resource of this type?). A plugin that makes them disagree lets a client
see an operation it cannot perform, or the reverse. Each ``check_*`` function asks one
question of one or more securities and raises :class:`ContractViolation` naming the principal,
host, action and the differing answers; :class:`AuthorizerContract` runs them all over random
ACL sets and questions (hypothesis). Subclass it in your tests::

    from kafkasec.testing.contract import AuthorizerContract

    class TestMyPluginContract(AuthorizerContract):
        pass  # the kafkasec_plugin and kafkasec_config fixtures say what is tested
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


class _AuditRecorder:
    """Keeps each batch of decisions the audit hook is given."""

    def __init__(self):
        self.batches: list[list] = []

    @hookimpl
    def kafkasec_audit(self, context, decisions):
        self.batches.append(list(decisions))


def check_audit_sees_every_decision(security, principal, host, actions) -> None:
    """Every decision of an audited request reaches ``kafkasec_audit``, with the answer given."""
    recorder = _AuditRecorder()
    security.register_plugin(recorder, "kafkasec-testing-audit")
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


contract_settings = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


class AuthorizerContract:
    """Kafka's authorizer contract, for the plugin of the ``kafkasec_plugin`` fixture with the
    settings of ``kafkasec_config``. Subclass it as ``Test...``; set ``acls_and_questions`` to a
    strategy of ``(acls, questions)`` of your own principals and names
    (:func:`kafkasec.testing.strategies.acls_and_questions` takes your ``bindings`` and
    ``questions``)."""

    acls_and_questions = strategies.acls_and_questions()

    @pytest.fixture
    def open_with_plugin(self, kafkasec_plugin, kafkasec_config):
        """A function of a state file path (None: memory): a KafkaSecurity with the plugin."""
        config = {key: value for key, value in kafkasec_config.items() if key != "kafkasec.state.path"}

        def open_with(path=None):
            return open_security(path, plugins=[kafkasec_plugin], load_entrypoints=False, **config)

        return open_with

    def _each_question(self, open_with_plugin, check, acls_asked):
        acls, asked = acls_asked
        with contextlib.closing(open_with_plugin()) as security:
            security.create_acls(acls)
            for question in asked:
                check(security, question)

    @staticmethod
    def _actions(asked):
        return [Action(operation, ResourcePattern(resource_type, name)) for _, _, operation, resource_type, name in asked]

    def test_authorized_operations_agree_with_authorize(self, open_with_plugin):
        @contract_settings
        @given(self.acls_and_questions)
        def run(acls_asked):
            self._each_question(open_with_plugin, lambda security, q: check_operations_agree(security, q[0], q[1], q[3], q[4]), acls_asked)

        run()

    def test_authorize_by_resource_type_agrees_with_authorize(self, open_with_plugin):
        @contract_settings
        @given(self.acls_and_questions)
        def run(acls_asked):
            self._each_question(open_with_plugin, lambda security, q: check_by_resource_type_agrees(security, *q), acls_asked)

        run()

    def test_a_batch_gets_the_answers_of_single_actions(self, open_with_plugin):
        @contract_settings
        @given(self.acls_and_questions)
        def run(acls_asked):
            acls, asked = acls_asked
            actions = self._actions(asked)
            self._each_question(open_with_plugin, lambda security, q: check_batch_equals_single(security, q[0], q[1], actions), (acls, asked))

        run()

    def test_declining_leaves_the_standard_answers(self, open_with_plugin, kafkasec_plugin):
        @contract_settings
        @given(self.acls_and_questions)
        def run(acls_asked):
            self._each_question(open_with_plugin, lambda security, q: check_declining_keeps_standard_answers(
                security, kafkasec_plugin, q[0], q[1], Action(q[2], ResourcePattern(q[3], q[4]))), acls_asked)

        run()

    def test_audit_sees_every_decision(self, open_with_plugin):
        @contract_settings
        @given(self.acls_and_questions)
        def run(acls_asked):
            acls, asked = acls_asked
            actions = self._actions(asked)
            with contextlib.closing(open_with_plugin()) as security:
                security.create_acls(acls)
                check_audit_sees_every_decision(security, asked[0][0], asked[0][1], actions)

        run()

    def test_answers_are_never_torn_under_concurrent_changes(self, open_with_plugin):
        @settings(contract_settings, max_examples=20)
        @given(self.acls_and_questions)
        def run(acls_asked):
            acls, asked = acls_asked
            # Each ACL twice: created, then deleted again, so that answers come and go.
            check_no_torn_reads(open_with_plugin, [*acls, *reversed(acls)], asked[0][0], asked[0][1], self._actions(asked))

        run()

    def test_answers_survive_close_and_reopen(self, open_with_plugin):
        @settings(contract_settings, max_examples=15)
        @given(self.acls_and_questions)
        def run(acls_asked):
            check_survives_reopen(open_with_plugin, *acls_asked)

        run()


__all__ = [
    "AuthorizerContract", "ContractViolation", "check_audit_sees_every_decision", "check_batch_equals_single",
    "check_by_resource_type_agrees", "check_declining_keeps_standard_answers", "check_operations_agree",
    "check_no_torn_reads", "check_survives_reopen",
]
