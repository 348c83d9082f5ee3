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
from kafkasec.authentication import (
    PlaintextAuthenticationContext,
    SaslAuthenticationContext,
    SslAuthenticationContext,
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
    DuplicateResourceError,
    InvalidRequestError,
    KafkaError,
    KafkaErrorCode,
    PrincipalDeserializationError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from kafkasec.hookspecs import hookimpl
from kafkasec.kerberos_names import KerberosName, KerberosRule, KerberosShortNamer
from kafkasec.principal import KafkaPrincipal
from kafkasec.principal_builder import DefaultPrincipalBuilder
from kafkasec.principal_serde import DefaultPrincipalSerde
from kafkasec.security import KafkaSecurity
from kafkasec.ssl_principal_mapper import (
    NoMatchingRule,
    SslPrincipalMapper,
    SslPrincipalMappingRule,
    x500_principal_name,
)

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
    "DefaultPrincipalBuilder",
    "DefaultPrincipalSerde",
    "DuplicateResourceError",
    "Grantee",
    "InvalidRequestError",
    "KafkaError",
    "KafkaErrorCode",
    "KafkaPrincipal",
    "KafkaSecurity",
    "KerberosName",
    "KerberosRule",
    "KerberosShortNamer",
    "NoMatchingRule",
    "PatternType",
    "PlaintextAuthenticationContext",
    "PrincipalDeserializationError",
    "RequestContext",
    "ResourceNotFoundError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourcePatternType",
    "ResourceType",
    "Rule",
    "RuleKind",
    "SaslAuthenticationContext",
    "SslAuthenticationContext",
    "SslPrincipalMapper",
    "SslPrincipalMappingRule",
    "StandardAuthorizer",
    "StoredAcl",
    "UnacceptableCredentialError",
    "UnsupportedSaslMechanismError",
    "bitfield_to_operations",
    "hookimpl",
    "operations_to_bitfield",
    "supported_operations",
    "x500_principal_name",
]
