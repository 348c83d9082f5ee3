"""kafkasec: Kafka's security model (ACLs, principals, and more as it lands) in Python."""

from kafkasec.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourcePatternType,
    ResourceType,
    bitfield_to_operations,
    operations_to_bitfield,
    supported_operations,
)
from kafkasec.authorizer import (
    AclCreateResult,
    AclDeleteResult,
    AuthorizationDecision,
    Grantee,
    Rule,
    RuleKind,
    StandardAuthorizer,
    StoredAcl,
)
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import (
    AuthorizerNotReadyError,
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    KafkaErrorCode,
    PrincipalDeserializationError,
)
from kafkasec.hookspecs import hookimpl
from kafkasec.principal import KafkaPrincipal
from kafkasec.principal_serde import DefaultPrincipalSerde
from kafkasec.security import KafkaSecurity

__version__ = "0.1.0"

__all__ = [
    "CLUSTER_NAME",
    "SUPPORTED_OPERATIONS",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclCreateResult",
    "AclDeleteResult",
    "AclOperation",
    "AclPermissionType",
    "Action",
    "AuthorizationDecision",
    "AuthorizationResult",
    "AuthorizerNotReadyError",
    "ClusterAuthorizationFailedError",
    "DefaultPrincipalSerde",
    "Grantee",
    "InvalidRequestError",
    "KafkaError",
    "KafkaErrorCode",
    "KafkaPrincipal",
    "KafkaSecurity",
    "PatternType",
    "PrincipalDeserializationError",
    "RequestContext",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourcePatternType",
    "ResourceType",
    "Rule",
    "RuleKind",
    "StandardAuthorizer",
    "StoredAcl",
    "bitfield_to_operations",
    "hookimpl",
    "operations_to_bitfield",
    "supported_operations",
]
