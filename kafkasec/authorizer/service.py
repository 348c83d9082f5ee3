"""Authorization as a node answers it: every question through the ``kafkasec_authorize`` hook
(the standard authorizer is its built-in answer), every batch to the audit hook, principals
expanded by the plugins that do so.

:class:`Authorizer` is the narrow protocol the other services are handed: they ask whether a
context may do something, and never see the rest of the facade.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Protocol, Sequence, runtime_checkable

from kafkasec.acl import AclOperation, ResourcePattern, supported_operations
from kafkasec.authorizer.decision import AuthorizationDecision
from kafkasec.authorizer.plugin import BUILTIN_AUTHORIZER_PLUGIN
from kafkasec.authorizer.standard import Grantee, StandardAuthorizer
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.plugins import PluginManager
from kafkasec.principals.principal import KafkaPrincipal


@runtime_checkable
class Authorizer(Protocol):
    """What a service may ask of authorization (Kafka's ``Authorizer.authorize``, audited)."""

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]: ...

    def is_allowed(self, context: RequestContext, operation, resource_pattern: ResourcePattern) -> bool: ...


def _audit_call(impl, security) -> Callable[[RequestContext, list[AuthorizationDecision]], object]:
    """One audit implementation as a call of (context, decisions): its arguments (any subset of
    the hook's, in its own order) picked once, not per request."""
    function, names = impl.function, tuple(impl.argnames)
    if names == ("security", "context", "decisions"):
        if inspect.ismethod(function):  # one call layer fewer per request than through the bound method
            return functools.partial(function.__func__, function.__self__, security)
        return functools.partial(function, security)  # called in C, without a Python frame of its own
    if names == ("context", "decisions"):
        return function
    return lambda context, decisions: function(
        *[{"security": security, "context": context, "decisions": decisions}[name] for name in names]
    )


def _plugin_names(impls) -> list[str]:
    """The plugins of ``impls``, named by their module (a plugin registered per instance has a
    generated name), each once."""
    return list(dict.fromkeys(getattr(impl.plugin, "__name__", type(impl.plugin).__module__) for impl in impls))


def _call_each(calls, context: RequestContext, decisions: list[AuthorizationDecision]) -> None:
    for call in calls:
        call(context, decisions)


ResultsObserver = Callable[[RequestContext, Sequence[Action], list[AuthorizationResult]], None]
"""Called with every authorize call's context, actions and results (see observe_results)."""


def _observed(authorize, observer: ResultsObserver, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
    results = authorize(context, actions)
    observer(context, actions, results)
    return results


def _asks_to_be_logged(actions: Sequence[Action]) -> bool:
    for action in actions:
        if action.log_if_allowed or action.log_if_denied:
            return True
    return False


@functools.lru_cache(maxsize=16_384)
def _operation_actions(resource_pattern: ResourcePattern) -> tuple[list[AclOperation], tuple[Action, ...]]:
    """The supported operations of a resource and one unaudited Action each (KIP-430). Actions
    are immutable, and a Metadata answer asks this for every topic, every time: the cache
    holds a large catalogue's topics (about 1 KB each) so that they are not rebuilt per answer."""
    operations = sorted(supported_operations(resource_pattern.resource_type))
    return operations, tuple(Action(op, resource_pattern, 1, False, False) for op in operations)


class AuthorizationService:
    """The decisions of one node. ``security`` is only what the hooks are called with.

    When the standard authorizer is the only answer to ``kafkasec_authorize`` (no plugin
    decides or wraps) and nobody audits, the plugins cannot change or observe an answer:
    authorize and authorized operations then go straight to the ACL index, with the same
    results and no decision records. Otherwise every batch goes through the hooks.
    """

    def __init__(self, security, plugin_manager, authorizer: StandardAuthorizer):
        self._security = security
        self._plugin_manager = plugin_manager
        self._hook = plugin_manager.hook
        self.authorizer = authorizer
        self._audits = False
        self.direct = False
        """Whether questions go straight to the index (see the class docstring)."""
        self._standard_decides = False
        self._audit: Callable[[RequestContext, list[AuthorizationDecision]], object] = self._audit_through_hook
        """Hands a batch of decisions to the audit plugins: bound by plugins_changed."""
        self._results_observer: ResultsObserver | None = None
        self.authorize: Callable[[RequestContext, Sequence[Action]], list[AuthorizationResult]]
        self.authorize = self._authorize_through_plugins
        """One ALLOWED/DENIED per action, as Kafka's ``Authorizer.authorize``: the index's own
        method or the hooks, chosen by plugins_changed rather than tested per call."""
        # A plain pluggy manager of the embedder's says nothing when plugins change: then every
        # question goes through the hooks, as it must if a plugin may appear unannounced.
        self._told_of_changes = isinstance(plugin_manager, PluginManager)
        if self._told_of_changes:
            plugin_manager.add_change_listener(self.plugins_changed)

    def plugins_expanding_principals(self) -> list[str]:
        """The plugins that expand principals (``kafkasec_expand_principal``): their ACLs apply to
        more principals than they name. A grid applies their expansion principal by principal
        (``spark_udfs.rules``) and names them in its provenance."""
        return _plugin_names(self._hook.kafkasec_expand_principal.get_hookimpls())

    def plugins_deciding(self) -> list[str]:
        """The plugins that answer ``kafkasec_authorize`` beside the built-in authorizer: they
        decide by code no table of the ACLs can hold, so a grid refuses to stand in for the
        facade while there are any."""
        impls = self._hook.kafkasec_authorize.get_hookimpls()
        return _plugin_names([impl for impl in impls if impl.plugin_name != BUILTIN_AUTHORIZER_PLUGIN])

    def plugins_changed(self) -> None:
        """Look again at which hooks have implementations. Hooks nobody implements cost nothing
        per request: principal expansion and audit are skipped when no plugin has them, and
        the authorize hook when only the standard authorizer answers it."""
        hook = self._hook
        expands = bool(hook.kafkasec_expand_principal.get_hookimpls())
        self.authorizer.principal_expander = self._expand_principal if expands else None
        auditors = hook.kafkasec_audit.get_hookimpls()
        self._audits = bool(auditors)
        deciders = hook.kafkasec_authorize.get_hookimpls()
        only_standard = [impl.plugin_name for impl in deciders] == [BUILTIN_AUTHORIZER_PLUGIN]
        tracing = getattr(self._plugin_manager, "tracing", False)
        # Plain audit implementations are called as pluggy would (last registered first), without
        # pluggy's machinery per request; a wrapper, or tracing, needs the hook itself.
        plain = self._told_of_changes and not tracing and not any(impl.wrapper or impl.hookwrapper for impl in auditors)
        if plain and auditors:
            calls = [_audit_call(impl, self._security) for impl in reversed(auditors)]
            self._audit = calls[0] if len(calls) == 1 else functools.partial(_call_each, calls)
        else:
            self._audit = self._audit_through_hook
        # Only the standard authorizer decides: ask it, not the hook (whose call is most of the cost).
        self._standard_decides = self._told_of_changes and only_standard and not tracing
        self.direct = self._standard_decides and not self._audits
        # Bound here, not tested per call: the answer for every request until plugins change.
        if self.direct:
            authorize = self.authorizer.authorize
        elif self._standard_decides:
            authorize = self._authorize_and_audit
        else:
            authorize = self._authorize_through_plugins
        observer = self._results_observer
        self.authorize = authorize if observer is None else functools.partial(_observed, authorize, observer)

    def observe_results(self, observer: ResultsObserver | None) -> None:
        """Have ``observer(context, actions, results)`` called after every :meth:`authorize`
        (the server's metrics count decisions so; None: no more). One observer: it is called
        on the request's path, so it must be quick and must not raise."""
        if observer is not None and not callable(observer):
            raise TypeError(f"observer must be callable(context, actions, results) or None, not {observer!r}")
        self._results_observer = observer
        self.plugins_changed()

    def _expand_principal(self, principal: KafkaPrincipal, context: RequestContext) -> list[KafkaPrincipal]:
        groups: list[KafkaPrincipal] = []
        for contributed in self._hook.kafkasec_expand_principal(security=self._security, principal=principal, context=context):
            groups.extend(contributed or ())
        return groups

    def decide(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationDecision]:
        """Decisions with provenance for ``actions``; a batch reaches the audit hook when one
        of its actions asks to be logged (Kafka's KIP-430 checks ask for neither, and Kafka's
        authorizer logs nothing of them)."""
        actions = list(actions)
        if self._standard_decides:
            decisions = self.authorizer.decide(context, actions)
        else:
            decisions = self._hook.kafkasec_authorize(security=self._security, context=context, actions=actions)
        if decisions is None or len(decisions) != len(actions):
            raise RuntimeError(
                f"the authorizer plugins answered {None if decisions is None else len(decisions)} "
                f"decisions for {len(actions)} actions"
            )
        if self._audits and _asks_to_be_logged(actions):
            self._audit(context, decisions)
        return decisions

    def _audit_through_hook(self, context: RequestContext, decisions: list[AuthorizationDecision]) -> None:
        self._hook.kafkasec_audit(security=self._security, context=context, decisions=decisions)

    def _authorize_and_audit(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        """decide() for the common audited case (the standard authorizer decides, audit plugins
        observe), without its generality: what most audited brokers run per request."""
        decisions = self.authorizer.decide(context, actions)
        for action in actions:  # _asks_to_be_logged, inlined: a broker runs this per request
            if action.log_if_allowed or action.log_if_denied:
                self._audit(context, decisions)
                break
        if len(decisions) == 1:  # most requests ask one thing; a comprehension costs twice as much
            return [decisions[0].result]
        return [decision.result for decision in decisions]

    def _authorize_through_plugins(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        return [decision.result for decision in self.decide(context, actions)]

    def is_allowed(self, context: RequestContext, operation, resource_pattern: ResourcePattern) -> bool:
        """Whether ``operation`` on ``resource_pattern`` is allowed (one action, audited)."""
        return self.authorize(context, [Action(operation, resource_pattern)])[0] is AuthorizationResult.ALLOWED

    def authorized_operations(self, context: RequestContext, resource_pattern: ResourcePattern) -> frozenset[AclOperation]:
        """KIP-430 for one pattern (see :meth:`authorized_operations_many`)."""
        if self._standard_decides:
            return self.authorizer.authorized_operations(context, resource_pattern)
        return self.authorized_operations_many(context, [resource_pattern])[0]

    def authorized_operations_many(
        self, context: RequestContext, resource_patterns: Sequence[ResourcePattern]
    ) -> list[frozenset[AclOperation]]:
        """KIP-430 for each pattern, as a Kafka broker computes it: every supported operation
        authorized without audit logging, all patterns asked of the plugins in one batch (or
        of the index, each resource's ACLs read once, when no plugin can change the answer)."""
        if self._standard_decides:  # and these questions ask for no audit: see decide()
            return self.authorizer.authorized_operations_many(context, resource_patterns)
        asked = [_operation_actions(pattern) for pattern in resource_patterns]
        results = iter(self.authorize(context, [action for _, actions in asked for action in actions]))
        allowed = AuthorizationResult.ALLOWED
        return [frozenset(op for op in operations if next(results) is allowed) for operations, _ in asked]

    def authorize_by_resource_type(self, context: RequestContext, operation, resource_type) -> AuthorizationResult:
        """Kafka's ``authorizeByResourceType``, answered from the ACL index."""
        return self.authorizer.authorize_by_resource_type(context, operation, resource_type)

    def who_can(self, operation, resource_pattern: ResourcePattern) -> tuple[Grantee, ...]:
        return self.authorizer.who_can(operation, resource_pattern)


__all__ = ["AuthorizationService", "Authorizer"]
