"""Authorization as a node answers it: every question through the ``kafkasec_authorize`` hook
(the standard authorizer is its built-in answer), every batch to the audit hook, principals
expanded by the plugins that do so.

:class:`Authorizer` is the narrow protocol the other services are handed: they ask whether a
context may do something, and never see the rest of the facade.
"""

from __future__ import annotations

import functools
from typing import Protocol, Sequence, runtime_checkable

from kafkasec.acl import AclOperation, ResourcePattern, supported_operations
from kafkasec.authorizer.decision import AuthorizationDecision
from kafkasec.authorizer.standard import Grantee, StandardAuthorizer
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.principals.principal import KafkaPrincipal


@runtime_checkable
class Authorizer(Protocol):
    """What a service may ask of authorization (Kafka's ``Authorizer.authorize``, audited)."""

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]: ...

    def is_allowed(self, context: RequestContext, operation, resource_pattern: ResourcePattern) -> bool: ...


@functools.lru_cache(maxsize=16_384)
def _operation_actions(resource_pattern: ResourcePattern) -> tuple[list[AclOperation], tuple[Action, ...]]:
    """The supported operations of a resource and one unaudited Action each (KIP-430). Actions
    are immutable, and a Metadata answer asks this for every topic, every time: the cache
    holds a large catalogue's topics (about 1 KB each) so that they are not rebuilt per answer."""
    operations = sorted(supported_operations(resource_pattern.resource_type))
    return operations, tuple(Action(op, resource_pattern, 1, False, False) for op in operations)


class AuthorizationService:
    """The decisions of one node. ``security`` is only what the hooks are called with."""

    def __init__(self, security, hook, authorizer: StandardAuthorizer):
        self._security = security
        self._hook = hook
        self.authorizer = authorizer
        self._audits = False

    def plugins_changed(self) -> None:
        """Look again at which hooks have implementations. Hooks nobody implements cost nothing
        per request: principal expansion and audit are skipped when no plugin has them."""
        hook = self._hook
        expands = bool(hook.kafkasec_expand_principal.get_hookimpls())
        self.authorizer.principal_expander = self._expand_principal if expands else None
        self._audits = bool(hook.kafkasec_audit.get_hookimpls())

    def _expand_principal(self, principal: KafkaPrincipal, context: RequestContext) -> list[KafkaPrincipal]:
        groups: list[KafkaPrincipal] = []
        for contributed in self._hook.kafkasec_expand_principal(security=self._security, principal=principal, context=context):
            groups.extend(contributed or ())
        return groups

    def decide(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationDecision]:
        """Decisions with provenance for ``actions``; each batch reaches the audit hook."""
        actions = list(actions)
        decisions = self._hook.kafkasec_authorize(security=self._security, context=context, actions=actions)
        if decisions is None or len(decisions) != len(actions):
            raise RuntimeError(
                f"the authorizer plugins answered {None if decisions is None else len(decisions)} "
                f"decisions for {len(actions)} actions"
            )
        if self._audits:
            self._hook.kafkasec_audit(security=self._security, context=context, decisions=decisions)
        return decisions

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        """One ALLOWED/DENIED per action, as Kafka's ``Authorizer.authorize``."""
        return [decision.result for decision in self.decide(context, actions)]

    def is_allowed(self, context: RequestContext, operation, resource_pattern: ResourcePattern) -> bool:
        """Whether ``operation`` on ``resource_pattern`` is allowed (one action, audited)."""
        return self.authorize(context, [Action(operation, resource_pattern)])[0] is AuthorizationResult.ALLOWED

    def authorized_operations_many(
        self, context: RequestContext, resource_patterns: Sequence[ResourcePattern]
    ) -> list[frozenset[AclOperation]]:
        """KIP-430 for each pattern, as a Kafka broker computes it: every supported operation
        authorized without audit logging, all patterns asked of the plugins in one batch."""
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
