"""The reference authorizer: one plain list of AclBindings, every question answered by scanning it.

The oracle the compiled index is checked against (the property tests) and measured against
(the benchmarks), and one you can check a port or a plugin against. It is written straight
from Kafka's StandardAuthorizerData and the default Authorizer.authorizeByResourceType, with
no index, no bitmasks and no caching:

* an ACL applies to a request if its principal, read up to its first ``:`` as Kafka reads it,
  has the request principal's (type, name), or is ``User:*``, and its host is ``*`` or the
  client address;
* ``super.users`` holds text, compared with the request principal's ``Type:name`` text;
* an ACL applies to a resource of the same type if its pattern is LITERAL with the same name,
  LITERAL ``*``, or PREFIXED with a prefix of the name;
* no ACL on the resource at all: ``allow.everyone.if.no.acl.found`` decides (default deny);
* DENY beats ALLOW; an ACL for ALL matches every operation; an ALLOW of READ, WRITE, DELETE or
  ALTER also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (a DENY
  implies nothing beyond its own operation);
* ``authorize_by_resource_type`` is Kafka's default ``Authorizer.authorizeByResourceType``.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from kafkasec.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    supported_operations,
)
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.principals.principal import KafkaPrincipal

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALL = AclOperation.ALL
IMPLIES_DESCRIBE = {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
IMPLIES_DESCRIBE_CONFIGS = {AclOperation.ALTER_CONFIGS}
_WILDCARD = KafkaPrincipal.parse(WILDCARD_PRINCIPAL)


def _principal(value: KafkaPrincipal | str) -> KafkaPrincipal:
    return value if isinstance(value, KafkaPrincipal) else KafkaPrincipal.parse(value)


def pattern_matches(pattern: ResourcePattern, resource_type: ResourceType, name: str) -> bool:
    """Whether an ACL on ``pattern`` is on the resource ``name`` of ``resource_type``."""
    if pattern.resource_type != resource_type:
        return False
    if pattern.pattern_type == PatternType.LITERAL:
        return pattern.name == name or pattern.name == WILDCARD_RESOURCE
    if pattern.pattern_type == PatternType.PREFIXED:
        return name.startswith(pattern.name)
    return False


def operation_matches(binding: AclBinding, operation: AclOperation) -> bool:
    """Whether the ACL speaks of ``operation``: the same, ALL, or (for an ALLOW) one implying it."""
    acl_operation = binding.entry.operation
    if acl_operation == ALL or acl_operation == operation:
        return True
    if binding.entry.permission_type == ALLOW:
        if operation == AclOperation.DESCRIBE and acl_operation in IMPLIES_DESCRIBE:
            return True
        if operation == AclOperation.DESCRIBE_CONFIGS and acl_operation in IMPLIES_DESCRIBE_CONFIGS:
            return True
    return False


def acl_verdict(
    binding: AclBinding, principals: set[KafkaPrincipal], host: str, operation: AclOperation
) -> AclPermissionType | None:
    """Kafka's findResult for one ACL already known to be on the resource: ALLOW or DENY when
    it applies to the request (its principal, host and operation), None when it does not.
    ``principals`` are the request's, compared with the ACL's by (type, name)."""
    entry = binding.entry
    if KafkaPrincipal.parse(entry.principal) not in principals:
        return None
    if entry.host != WILDCARD_HOST and entry.host != host:
        return None
    if not operation_matches(binding, operation):
        return None
    return entry.permission_type


class ReferenceAuthorizer:
    """Kafka's rules by a scan of every ACL. ``groups`` maps a principal (a KafkaPrincipal, or
    text read by :meth:`KafkaPrincipal.parse`) to the principals whose ACLs also apply to it,
    as the kafkasec_expand_principal hook does."""

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        groups: Mapping[str, Iterable[str]] | None = None,
    ):
        self.bindings: list[AclBinding] = list(bindings)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.groups = {
            _principal(principal): tuple(_principal(group) for group in of) for principal, of in (groups or {}).items()
        }

    def add(self, binding: AclBinding) -> None:
        if binding not in self.bindings:
            self.bindings.append(binding)

    def remove(self, binding: AclBinding) -> None:
        self.bindings.remove(binding)

    def acls(self) -> list[AclBinding]:
        return list(self.bindings)

    def _principals(self, context: RequestContext) -> set[KafkaPrincipal]:
        # As Kafka's matchingPrincipals: (type, name) of the request's own and of User:*.
        own = KafkaPrincipal(context.principal.principal_type, context.principal.name)
        return {own, _WILDCARD, *self.groups.get(own, ())}

    def _applicable(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The ACLs on the resource, whoever they are for (one scan of every ACL)."""
        return [b for b in self.bindings if pattern_matches(b.pattern, resource_type, name)]

    def _decide(self, on_resource: list[AclBinding], principals, host, operation) -> AuthorizationResult:
        if not on_resource:
            return ALLOWED if self.allow_everyone_if_no_acl_found else DENIED
        verdicts = {acl_verdict(binding, principals, host, operation) for binding in on_resource}
        if DENY in verdicts:
            return DENIED
        return ALLOWED if ALLOW in verdicts else DENIED

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        if str(context.principal) in self.super_users:
            return [ALLOWED] * len(actions)
        principals = self._principals(context)
        results = []
        for action in actions:
            pattern = action.resource_pattern
            on_resource = self._applicable(pattern.resource_type, pattern.name)
            results.append(self._decide(on_resource, principals, context.client_address, action.operation))
        return results

    def authorized_operations(self, context: RequestContext, resource_pattern: ResourcePattern) -> frozenset[AclOperation]:
        supported = supported_operations(resource_pattern.resource_type)
        if str(context.principal) in self.super_users:
            return supported
        principals = self._principals(context)
        on_resource = self._applicable(resource_pattern.resource_type, resource_pattern.name)
        return frozenset(
            op
            for op in supported
            if self._decide(on_resource, principals, context.client_address, op) is ALLOWED
        )

    def authorized_operations_many(
        self, context: RequestContext, resource_patterns: Sequence[ResourcePattern]
    ) -> list[frozenset[AclOperation]]:
        return [self.authorized_operations(context, pattern) for pattern in resource_patterns]

    def authorize_by_resource_type(
        self, context: RequestContext, operation: AclOperation, resource_type: ResourceType
    ) -> AuthorizationResult:
        """Kafka's default ``Authorizer.authorizeByResourceType``, line by line."""
        probe = Action(operation, ResourcePattern(resource_type, "hardcode"), 0, True, False)
        if self.authorize(context, [probe])[0] is ALLOWED:
            return ALLOWED
        principals, host = self._principals(context), context.client_address
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefixed: set[str] = set()
        has_wildcard_allow = False
        for binding in self.bindings:
            pattern, entry = binding.pattern, binding.entry
            if pattern.resource_type != resource_type:
                continue
            if entry.host != host and entry.host != WILDCARD_HOST:
                continue
            if KafkaPrincipal.parse(entry.principal) not in principals:
                continue
            if entry.operation != operation and entry.operation != ALL:
                continue
            literal = pattern.pattern_type == PatternType.LITERAL
            if entry.permission_type == DENY:
                if literal and pattern.name == WILDCARD_RESOURCE:
                    return DENIED
                (deny_literal if literal else deny_prefixed).add(pattern.name)
                continue
            if entry.permission_type != ALLOW:
                continue
            if literal and pattern.name == WILDCARD_RESOURCE:
                has_wildcard_allow = True
                continue
            (allow_literal if literal else allow_prefixed).add(pattern.name)
        if has_wildcard_allow:
            return ALLOWED
        for literal, names in ((True, allow_literal), (False, allow_prefixed)):
            for name in names:
                if literal and name in deny_literal:
                    continue
                if any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                    continue
                return ALLOWED
        return DENIED
