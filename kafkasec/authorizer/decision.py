"""Decisions with provenance: what was decided, by which authorizer, on which rule."""

from __future__ import annotations

import enum

from attrs import field, frozen

from kafkasec.authorizer.index import StoredAcl
from kafkasec.context import Action, AuthorizationResult


class RuleKind(enum.Enum):
    SUPER_USER = "super_user"
    """The principal is listed in super.users: allowed on any host, whatever the ACLs say."""
    DENY_ACL = "deny_acl"
    """A DENY ACL matched; DENY beats ALLOW."""
    ALLOW_ACL = "allow_acl"
    """An ALLOW ACL matched and no DENY did."""
    NO_MATCHING_ACL = "no_matching_acl"
    """The resource has ACLs, but none for this principal, host and operation: denied."""
    NO_ACL_FOUND = "no_acl_found"
    """The resource has no ACL at all: allow.everyone.if.no.acl.found decides."""
    PLUGIN = "plugin"
    """A plugin other than the standard authorizer decided; ``description`` says why."""


@frozen
class Rule:
    """The rule that decided, with the ACL (and its source) when an ACL decided."""

    kind: RuleKind
    acl: StoredAcl | None = None
    description: str = ""

    def __str__(self) -> str:
        if self.acl is None:
            return self.description or self.kind.value
        return f"{acl_text(self.acl.binding)} (acl {self.acl.acl_id}, source {self.acl.source})"


def acl_text(binding) -> str:
    """An ACL as one line a person reads: ``ALLOW User:alice from host * READ on TOPIC LITERAL 'orders'``."""
    pattern, entry = binding.pattern, binding.entry
    return (
        f"{entry.permission_type.name} {entry.principal} from host {entry.host} "
        f"{entry.operation.name} on {pattern.resource_type.name} {pattern.pattern_type.name} '{pattern.name}'"
    )


@frozen
class AuthorizationDecision:
    """One answer, its rule, and the authorizer (plugin) that gave it."""

    action: Action
    result: AuthorizationResult
    rule: Rule
    authorizer: str = field(default="standard")

    @property
    def allowed(self) -> bool:
        return self.result is AuthorizationResult.ALLOWED
