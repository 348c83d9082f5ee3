"""The requests a broker forwards to the controller (KIP-590), and how each is screened first.

Kafka marks fourteen APIs forwardable (``ApiKeys.forwardable``); an envelope carrying any
other is refused. Before forwarding, the broker authorizes the request as the controller would
and keeps what the client may not touch out of the envelope: a refused item (a topic, a config
resource) is answered locally with its authorization error and merged back into the
controller's answer in request order; a request refused as a whole (CreateAcls without ALTER on
the cluster) is not forwarded at all. The checks and error codes are those of Kafka's
ControllerApis, AclApis and KafkaApis (delegation tokens).

Each API also knows its error response (Kafka's ``AbstractRequest.getErrorResponse``): every
item of the request answered with one error, as a broker answers when forwarding fails.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Callable, Hashable, Mapping

from attrs import frozen

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.token_apis import requested_owner
from kafkasec.tokens.admin import allow_token_requests, may_create_tokens_for

CLUSTER = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)

# ConfigResource.Type codes and who may alter each (Kafka's ControllerApis.alterConfigs).
_CONFIG_RESOURCE_RULES = {
    2: (ResourceType.TOPIC, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED),  # TOPIC
    4: (ResourceType.CLUSTER, KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # BROKER
    8: (ResourceType.CLUSTER, KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # BROKER_LOGGER
    16: (ResourceType.CLUSTER, KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # CLIENT_METRICS
    32: (ResourceType.GROUP, KafkaErrorCode.GROUP_AUTHORIZATION_FAILED),  # GROUP
}


@frozen
class Screening:
    """What local authorization left of a request.

    ``forward`` is the request body to put in the envelope (None: nothing left to forward, and
    ``local_response`` is the whole answer). ``merge`` turns the controller's response into
    the client's, putting the locally refused items back.
    """

    forward: object | None
    local_response: object | None
    merge: Callable[[object], object]


def _unchanged(response):
    return response


# ---------------------------------------------------------------------------------------------
# APIs authorized as a whole: one action on the cluster.


@frozen
class ClusterApi:
    """An API the controller authorizes with one operation on the cluster resource."""

    api_key: ApiKey
    operation: AclOperation
    error_response: Callable[[object, int, ApiError], object]

    @property
    def name(self) -> str:
        return self.api_key.title

    def screen(self, security, context: RequestContext, body, version: int) -> Screening:
        if security.is_allowed(context, self.operation, CLUSTER):
            return Screening(body, None, _unchanged)
        refused = ApiError.of(KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return Screening(None, self.error_response(body, version, refused), _unchanged)


def _response_type(api_key: int, version: int) -> type:
    return wire.response_schema(api_key, version)


def _each(api_key: int, request_field: str, response_field: str, make: Callable):
    """An error response with one entry per request item, each made by ``make(type, item, error)``."""

    def error_response(body, version, error: ApiError):
        response_type = _response_type(api_key, version)
        entry_type = wire.item_type(response_type, response_field)
        entries = tuple(make(entry_type, item, error.fields()) for item in getattr(body, request_field))
        return wire.build(response_type, **{response_field: entries})

    return error_response


def _alter_partition_reassignments_error(body, version, error: ApiError):
    response_type = _response_type(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version)
    topic_type = wire.item_type(response_type, "responses")
    partition_type = wire.item_type(topic_type, "partitions")
    error_fields = error.fields()
    topics = tuple(
        wire.build(
            topic_type,
            name=topic.name,
            partitions=tuple(wire.build(partition_type, partition_index=p.partition_index, **error_fields) for p in topic.partitions),
        )
        for topic in body.topics
    )
    return wire.build(response_type, responses=topics, **error_fields)


def _update_features_error(body, version, error: ApiError):
    response_type = _response_type(ApiKey.UPDATE_FEATURES, version)
    error_fields = error.fields()
    results = ()
    if wire.has_field(response_type, "results"):
        result_type = wire.item_type(response_type, "results")
        results = tuple(wire.build(result_type, feature=update.feature, **error_fields) for update in body.feature_updates)
    return wire.build(response_type, results=results, **error_fields)


def _alter_user_scram_credentials_error(body, version, error: ApiError):
    # Kafka answers once per user, in user-name order, however often a user is named.
    response_type = _response_type(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, version)
    result_type = wire.item_type(response_type, "results")
    users = sorted({item.name for item in (*body.deletions, *body.upsertions)})
    results = tuple(wire.build(result_type, user=user, **error.fields()) for user in users)
    return wire.build(response_type, results=results)


# ---------------------------------------------------------------------------------------------
# APIs authorized item by item.


@frozen
class ItemApi:
    """An API the controller authorizes per item (a topic, a config resource).

    ``request_fields`` names the request's array of items; where versions differ (DeleteTopics:
    ``topic_names`` up to v5, ``topics`` with ids from v6), the first one the body has is used.
    ``check`` gives the action for an item and the error when it is denied (None: the
    controller decides, e.g. a topic named only by id); ``cluster_operation``, when the
    principal has it on the cluster, allows every item (CREATE for CreateTopics).
    """

    api_key: ApiKey
    request_fields: tuple[str, ...]
    response_field: str
    # Items and entries are kio entities, of a class per API and version: Any.
    request_key: Callable[[Any], Hashable]
    response_key: Callable[[Any], Hashable]
    make_error: Callable[[type, Any, dict], object]
    check: Callable[[Any], tuple[Action, KafkaErrorCode] | None]
    cluster_operation: AclOperation | None = None

    @property
    def name(self) -> str:
        return self.api_key.title

    def request_field(self, body) -> str:
        return next(name for name in self.request_fields if wire.has_field(body, name))

    def error_response(self, body, version, error: ApiError):
        make = _each(self.api_key, self.request_field(body), self.response_field, self.make_error)
        return make(body, version, error)

    def screen(self, security, context: RequestContext, body, version: int) -> Screening:
        request_field = self.request_field(body)
        items = getattr(body, request_field)
        if self.cluster_operation is not None and security.is_allowed(context, self.cluster_operation, CLUSTER):
            return Screening(body, None, _unchanged)
        checks = [self.check(item) for item in items]
        asked = [check for check in checks if check is not None]
        results = iter(security.authorize(context, [action for action, _ in asked]))
        refused: dict[int, KafkaErrorCode] = {}
        for index, check in enumerate(checks):
            if check is not None and next(results) is not AuthorizationResult.ALLOWED:
                refused[index] = check[1]
        if not refused:
            return Screening(body, None, _unchanged)

        response_type = _response_type(self.api_key, version)
        entry_type = wire.item_type(response_type, self.response_field)
        errors = {
            index: self.make_error(
                entry_type, items[index], ApiError.of(code).fields()
            )
            for index, code in refused.items()
        }
        kept = tuple(item for index, item in enumerate(items) if index not in refused)
        if not kept:
            local = wire.build(response_type, **{self.response_field: tuple(errors[i] for i in range(len(items)))})
            return Screening(None, local, _unchanged)

        def merge(response):
            answered = defaultdict(list)
            for entry in getattr(response, self.response_field):
                answered[self.response_key(entry)].append(entry)
            merged = []
            for index, item in enumerate(items):
                if index in errors:
                    merged.append(errors[index])
                elif answered[self.request_key(item)]:
                    merged.append(answered[self.request_key(item)].pop(0))
            merged.extend(entry for entries in answered.values() for entry in entries)
            return dataclasses.replace(response, **{self.response_field: tuple(merged)})

        return Screening(dataclasses.replace(body, **{request_field: kept}), None, merge)


def _topic_check(operation: AclOperation):
    def check(item):
        return Action(operation, ResourcePattern(ResourceType.TOPIC, item.name)), KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED

    return check


def _delete_topic_check(item):
    name = item if isinstance(item, str) else item.name
    if not name:
        return None  # named by topic id only: the controller resolves and authorizes it
    return Action(AclOperation.DELETE, ResourcePattern(ResourceType.TOPIC, name)), KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED


def _config_check(item):
    rule = _CONFIG_RESOURCE_RULES.get(int(item.resource_type))
    if rule is None:
        return None  # an unknown resource type: the controller answers it
    resource_type, code = rule
    name = CLUSTER_NAME if resource_type is ResourceType.CLUSTER else item.resource_name
    return Action(AclOperation.ALTER_CONFIGS, ResourcePattern(resource_type, name)), code


def _named(entry_type, item, error):
    return wire.build(entry_type, name=item.name, **error)


def _config_error(entry_type, item, error):
    return wire.build(entry_type, resource_type=item.resource_type, resource_name=item.resource_name, **error)


def _config_key(entry):
    return (int(entry.resource_type), entry.resource_name)


def _delete_topic_error(entry_type, item, error):
    if isinstance(item, str):
        return wire.build(entry_type, name=item, **error)
    return wire.build(entry_type, name=item.name or None, topic_id=item.topic_id, **error)


def _delete_topic_key(item):
    return item if isinstance(item, str) else (item.name or item.topic_id)


def _delete_topic_response_key(entry):
    return entry.name or getattr(entry, "topic_id", None)


# ---------------------------------------------------------------------------------------------
# Delegation tokens: no ACL for one's own tokens, but never over an unsuitable connection.


@frozen
class TokenApi:
    """Create/Renew/ExpireDelegationToken, screened as Kafka's KafkaApis does before forwarding."""

    api_key: ApiKey

    @property
    def name(self) -> str:
        return self.api_key.title

    def error_response(self, body, version, error: ApiError, owner: KafkaPrincipal | None = None,
                       requester: KafkaPrincipal | None = None):
        values = error.code_field()
        if owner is not None:
            values.update(principal_type=owner.principal_type, principal_name=owner.name)
        if requester is not None:
            values.update(
                token_requester_principal_type=requester.principal_type,
                token_requester_principal_name=requester.name,
            )
        return wire.build(_response_type(self.api_key, version), **values)

    def screen(self, security, context: RequestContext, body, version: int) -> Screening:
        requester = owner = context.principal
        creating = self.api_key is ApiKey.CREATE_DELEGATION_TOKEN
        if creating:
            try:
                owner = requested_owner(body, requester)
            except KafkaError as malformed:  # answered here as the controller would answer it
                return Screening(None, self.error_response(body, version, ApiError.from_exception(malformed),
                                                           owner=requester, requester=requester), _unchanged)
        people = {"owner": owner, "requester": requester} if creating else {}
        if not allow_token_requests(context):
            refused = ApiError.of(KafkaErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
            return Screening(None, self.error_response(body, version, refused, **people), _unchanged)
        if not may_create_tokens_for(security, context, owner):
            refused = ApiError.of(KafkaErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
            return Screening(None, self.error_response(body, version, refused, **people), _unchanged)
        return Screening(body, None, _unchanged)


_APIS = (
    ItemApi(ApiKey.CREATE_TOPICS, ("topics",), "topics", lambda t: t.name, lambda r: r.name, _named,
            _topic_check(AclOperation.CREATE), cluster_operation=AclOperation.CREATE),
    ItemApi(ApiKey.DELETE_TOPICS, ("topics", "topic_names"), "responses", _delete_topic_key, _delete_topic_response_key,
            _delete_topic_error, _delete_topic_check),
    ClusterApi(ApiKey.CREATE_ACLS, AclOperation.ALTER,
               _each(ApiKey.CREATE_ACLS, "creations", "results", lambda entry_type, item, error: wire.build(entry_type, **error))),
    ClusterApi(ApiKey.DELETE_ACLS, AclOperation.ALTER,
               _each(ApiKey.DELETE_ACLS, "filters", "filter_results", lambda entry_type, item, error: wire.build(entry_type, **error))),
    ItemApi(ApiKey.ALTER_CONFIGS, ("resources",), "responses", _config_key, _config_key, _config_error, _config_check),
    ItemApi(ApiKey.CREATE_PARTITIONS, ("topics",), "results", lambda t: t.name, lambda r: r.name, _named,
            _topic_check(AclOperation.ALTER)),
    TokenApi(ApiKey.CREATE_DELEGATION_TOKEN),
    TokenApi(ApiKey.RENEW_DELEGATION_TOKEN),
    TokenApi(ApiKey.EXPIRE_DELEGATION_TOKEN),
    ItemApi(ApiKey.INCREMENTAL_ALTER_CONFIGS, ("resources",), "responses", _config_key, _config_key, _config_error,
            _config_check),
    ClusterApi(ApiKey.ALTER_PARTITION_REASSIGNMENTS, AclOperation.ALTER, _alter_partition_reassignments_error),
    ClusterApi(ApiKey.ALTER_CLIENT_QUOTAS, AclOperation.ALTER_CONFIGS,
               _each(ApiKey.ALTER_CLIENT_QUOTAS, "entries", "entries", lambda entry_type, item, error: wire.build(entry_type, entity=item.entity, **error))),
    ClusterApi(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, AclOperation.ALTER, _alter_user_scram_credentials_error),
    ClusterApi(ApiKey.UPDATE_FEATURES, AclOperation.ALTER, _update_features_error),
)

# Keyed by int, as a request names its API: the keys are ApiKey members, which are ints.
FORWARDABLE_APIS: Mapping[int, ItemApi | ClusterApi | TokenApi] = {api.api_key: api for api in _APIS}
"""API key -> how to screen and answer it: exactly the APIs Kafka lets a broker forward."""
