"""kafkasec: Kafka's security model in Python: ACLs and their authorizer, principals, SASL/SCRAM, delegation
tokens, KIP-590 forwarding, a Kafka-protocol endpoint, and ACL grids in Spark."""

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
    DuplicateResourceError,
    IllegalSaslStateError,
    InvalidRequestError,
    KafkaError,
    KafkaErrorCode,
    PrincipalDeserializationError,
    ResourceNotFoundError,
    SaslAuthenticationError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from kafkasec.hookspecs import hookimpl
from kafkasec.principals.authentication import (
    PlaintextAuthenticationContext,
    SaslAuthenticationContext,
    SslAuthenticationContext,
)
from kafkasec.principals.builder import DefaultPrincipalBuilder
from kafkasec.principals.kerberos import KerberosName, KerberosRule, KerberosShortNamer
from kafkasec.principals.mapping_rules import NoMatchingRule
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.principals.serde import DefaultPrincipalSerde
from kafkasec.principals.ssl_rules import SslPrincipalMapper, SslPrincipalMappingRule
from kafkasec.principals.x500 import x500_principal_name
from kafkasec.scram import (
    ScramCredential,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafkasec.scram.server import ScramServer, ScramServerState
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
    "DefaultPrincipalBuilder",
    "DefaultPrincipalSerde",
    "DuplicateResourceError",
    "Grantee",
    "IllegalSaslStateError",
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
    "SaslAuthenticationError",
    "ScramCredential",
    "ScramCredentialInfo",
    "ScramMechanism",
    "ScramServer",
    "ScramServerState",
    "SslAuthenticationContext",
    "SslPrincipalMapper",
    "SslPrincipalMappingRule",
    "StandardAuthorizer",
    "StoredAcl",
    "UnacceptableCredentialError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "bitfield_to_operations",
    "hookimpl",
    "operations_to_bitfield",
    "supported_operations",
    "x500_principal_name",
]
