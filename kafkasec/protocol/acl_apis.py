"""CreateAcls, DeleteAcls and DescribeAcls as a broker or controller answers them (Kafka's AclApis).

Each handler takes the request body (a kio dataclass, see :mod:`kafkasec.protocol.wire`), its version
and the RequestContext, authorizes through the facade, and returns the response body. The
caller needs ALTER on the cluster to create or delete ACLs and DESCRIBE to list them, else the
whole request is answered CLUSTER_AUTHORIZATION_FAILED (31). An ACL the wire carries with a
code we do not know is answered INVALID_REQUEST for that ACL alone.
"""

from __future__ import annotations

from collections import defaultdict

from kafkasec.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafkasec.context import RequestContext
from kafkasec.errors import InvalidRequestError, KafkaError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.forwardable import CLUSTER, FORWARDABLE_APIS

CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS = ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_ACLS
_CLUSTER_REFUSED = ApiError.of(KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def _invalid(error: Exception) -> InvalidRequestError:
    return InvalidRequestError(f"Invalid ACL: {error}")


def binding_fields(binding: AclBinding, *, pattern_type_field: str = "pattern_type") -> dict[str, object]:
    """An ACL as the wire's fields name it (a CreateAcls creation calls its pattern type
    ``resource_pattern_type``; DeleteAcls' matching ACLs ``pattern_type``)."""
    return {
        "resource_type": int(binding.pattern.resource_type),
        "resource_name": binding.pattern.name,
        pattern_type_field: int(binding.pattern.pattern_type),
        "principal": binding.entry.principal,
        "host": binding.entry.host,
        "operation": int(binding.entry.operation),
        "permission_type": int(binding.entry.permission_type),
    }


def filter_fields(acl_filter: AclBindingFilter) -> dict[str, object]:
    """A filter as DescribeAcls and DeleteAcls' filters name its fields."""
    pattern, entry = acl_filter.pattern_filter, acl_filter.entry_filter
    return {
        "resource_type_filter": int(pattern.resource_type),
        "resource_name_filter": pattern.name,
        "pattern_type_filter": int(pattern.pattern_type),
        "principal_filter": entry.principal,
        "host_filter": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission_type),
    }


def _binding(creation) -> AclBinding:
    return AclBinding(
        ResourcePattern(creation.resource_type, creation.resource_name, getattr(creation, "resource_pattern_type", 3)),
        AccessControlEntry(creation.principal, creation.host, creation.operation, creation.permission_type),
    )


def _filter(wire_filter) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(
            wire_filter.resource_type_filter,
            wire_filter.resource_name_filter,
            getattr(wire_filter, "pattern_type_filter", 3),
        ),
        AccessControlEntryFilter(
            wire_filter.principal_filter, wire_filter.host_filter, wire_filter.operation, wire_filter.permission_type
        ),
    )


def _read_each(items, read) -> tuple[list[tuple[int, object]], dict[int, KafkaError]]:
    """Each wire item read with ``read``: (index, value) for those that read, and for the others
    INVALID_REQUEST by index (that item alone is refused, as Kafka's AclApis does)."""
    valid: list[tuple[int, object]] = []
    errors: dict[int, KafkaError] = {}
    for index, item in enumerate(items):
        try:
            valid.append((index, read(item)))
        except (TypeError, ValueError) as error:
            errors[index] = _invalid(error)
    return valid, errors


def handle_create_acls(security, context: RequestContext, body, version: int):
    """The CreateAclsResponse for ``body``: one result per creation, in order."""
    api = FORWARDABLE_APIS[CREATE_ACLS]
    if not security.is_allowed(context, AclOperation.ALTER, CLUSTER):
        return api.error_response(body, version, _CLUSTER_REFUSED)
    valid, errors = _read_each(body.creations, _binding)
    for (index, _), result in zip(valid, security.create_acls([binding for _, binding in valid])):
        if result.error is not None:
            errors[index] = result.error
    response_type = wire.response_schema(CREATE_ACLS, version)
    result_type = wire.item_type(response_type, "results")
    results = tuple(
        wire.build(result_type, **ApiError.from_exception(errors.get(index)).fields()) for index in range(len(body.creations))
    )
    return wire.build(response_type, results=results)


def handle_delete_acls(security, context: RequestContext, body, version: int):
    """The DeleteAclsResponse for ``body``: per filter, the ACLs it deleted."""
    api = FORWARDABLE_APIS[DELETE_ACLS]
    if not security.is_allowed(context, AclOperation.ALTER, CLUSTER):
        return api.error_response(body, version, _CLUSTER_REFUSED)
    response_type = wire.response_schema(DELETE_ACLS, version)
    result_type = wire.item_type(response_type, "filter_results")
    matching_type = wire.item_type(result_type, "matching_acls")
    valid, errors = _read_each(body.filters, _filter)
    deleted = {}
    for (index, _), result in zip(valid, security.delete_acls([acl_filter for _, acl_filter in valid])):
        if result.error is not None:
            errors[index] = result.error
        else:
            deleted[index] = result.bindings
    results = []
    for index in range(len(body.filters)):
        matching = tuple(
            wire.build(matching_type, **ApiError.NONE.fields(), **binding_fields(binding))
            for binding in deleted.get(index, ())
        )
        results.append(wire.build(result_type, matching_acls=matching, **ApiError.from_exception(errors.get(index)).fields()))
    return wire.build(response_type, filter_results=tuple(results))


def handle_describe_acls(security, context: RequestContext, body, version: int):
    """The DescribeAclsResponse for ``body``: matching ACLs grouped by resource pattern."""
    response_type = wire.response_schema(DESCRIBE_ACLS, version)
    if not security.is_allowed(context, AclOperation.DESCRIBE, CLUSTER):
        return wire.build(response_type, **_CLUSTER_REFUSED.fields())
    try:
        acl_filter = AclBindingFilter(
            ResourcePatternFilter(body.resource_type_filter, body.resource_name_filter, getattr(body, "pattern_type_filter", 3)),
            AccessControlEntryFilter(body.principal_filter, body.host_filter, body.operation, body.permission_type),
        )
    except (TypeError, ValueError) as error:
        return wire.build(response_type, **ApiError.from_exception(_invalid(error)).fields())
    resource_type = wire.item_type(response_type, "resources")
    acl_type = wire.item_type(resource_type, "acls")
    grouped: dict[ResourcePattern, list[AclBinding]] = defaultdict(list)
    for binding in security.acls(acl_filter):
        grouped[binding.pattern].append(binding)
    resources = tuple(
        wire.build(
            resource_type,
            resource_type=int(pattern.resource_type),
            resource_name=pattern.name,
            pattern_type=int(pattern.pattern_type),
            acls=tuple(
                wire.build(
                    acl_type,
                    principal=binding.entry.principal,
                    host=binding.entry.host,
                    operation=int(binding.entry.operation),
                    permission_type=int(binding.entry.permission_type),
                )
                for binding in bindings
            ),
        )
        for pattern, bindings in grouped.items()
    )
    return wire.build(response_type, resources=resources, **ApiError.NONE.fields())


HANDLERS = {
    CREATE_ACLS: handle_create_acls,
    DELETE_ACLS: handle_delete_acls,
    DESCRIBE_ACLS: handle_describe_acls,
}
"""API key -> handler(security, context, body, version) -> response body."""
