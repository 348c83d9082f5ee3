"""Decisions with provenance: what was decided, by which authorizer, on which rule."""

from __future__ import annotations

import enum
from typing import Callable

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
        binding = self.acl.binding
        pattern, entry = binding.pattern, binding.entry
        return (
            f"{entry.permission_type.name} {entry.principal} from host {entry.host} "
            f"{entry.operation.name} on {pattern.resource_type.name} {pattern.pattern_type.name} "
            f"'{pattern.name}' (acl {self.acl.acl_id}, source {self.acl.source})"
        )


@frozen(eq=False, repr=False)
class AuthorizationDecision:
    """One answer, its rule, and the authorizer (plugin) that gave it.

    The rule may be given (``rule=``) or found on first use (``find_rule=``, a function of no
    arguments; a given rule wins, as after ``evolve(decision, rule=...)``): the standard authorizer answers from bit masks and looks up which ACL decided
    only when someone reads ``rule`` (explain, an audit record, a test). Equality, hashing and
    repr read the rule, so a found rule and a given one compare alike.
    """

    action: Action
    result: AuthorizationResult
    _rule: Rule | None = field(default=None, alias="rule")
    authorizer: str = field(default="standard")
    _find_rule: Callable[[], Rule] | None = field(default=None, alias="find_rule", kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self._rule is None and self._find_rule is None:
            raise ValueError("an AuthorizationDecision needs its rule= or a find_rule= that finds it")

    @property
    def rule(self) -> Rule:
        rule = self._rule
        if rule is None:
            assert self._find_rule is not None  # __attrs_post_init__ saw to it
            rule = self._find_rule()
            object.__setattr__(self, "_rule", rule)  # found once; the decision stays the same value
        return rule

    @property
    def allowed(self) -> bool:
        return self.result is AuthorizationResult.ALLOWED

    def _key(self) -> tuple:
        return (self.action, self.result, self.rule, self.authorizer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AuthorizationDecision):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"AuthorizationDecision(action={self.action!r}, result={self.result!r}, rule={self.rule!r}, "
            f"authorizer={self.authorizer!r})"
        )
