"""Authorization: the compiled ACL index and the standard authorizer that reads it."""

from kafkasec.authorizer.decision import AuthorizationDecision, Rule, RuleKind
from kafkasec.authorizer.index import AclIndex, StoredAcl
from kafkasec.authorizer.standard import (
    AclCreateResult,
    AclDeleteResult,
    Grantee,
    StandardAuthorizer,
    parse_super_users,
)

__all__ = [
    "AclCreateResult",
    "AclDeleteResult",
    "AclIndex",
    "AuthorizationDecision",
    "Grantee",
    "Rule",
    "RuleKind",
    "StandardAuthorizer",
    "StoredAcl",
    "parse_super_users",
]
