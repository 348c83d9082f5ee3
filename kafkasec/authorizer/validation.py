"""Which ACLs may be stored and which filters may delete: Kafka's controller and broker checks.

The messages are Kafka's (AclControlManager.validateNewAcl / validateFilter and the broker's
CreateAcls handling), so a client sees the same INVALID_REQUEST text from us as from Kafka.
"""

from __future__ import annotations

from kafkasec.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkasec.errors import InvalidRequestError


def validate_new_acl(binding: AclBinding) -> None:
    """Raise InvalidRequestError (42) unless ``binding`` is an ACL Kafka would store."""
    pattern, entry = binding.pattern, binding.entry
    # The broker's own checks come first, then the controller's, as a request meets them.
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        raise InvalidRequestError("Invalid empty resource name")
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidRequestError(f"Invalid resourceType {pattern.resource_type.name}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidRequestError(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidRequestError(f"Invalid operation {entry.operation.name}")
    if entry.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidRequestError(f"Invalid permissionType {entry.permission_type.name}")
    if ":" not in entry.principal:
        raise InvalidRequestError(
            f"Could not parse principal from `{entry.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )


def validate_filter(acl_filter: AclBindingFilter) -> None:
    """Raise InvalidRequestError (42) if ``acl_filter`` has an UNKNOWN field."""
    if acl_filter.pattern_filter.is_unknown():
        raise InvalidRequestError("Unknown patternFilter.")
    if acl_filter.entry_filter.is_unknown():
        raise InvalidRequestError("Unknown entryFilter.")
