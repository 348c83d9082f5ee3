"""Metadata, DescribeCluster, FindCoordinator, DescribeGroups and ListGroups, authorized as Kafka's KafkaApis does.

These answer from a :class:`~kafkasec.protocol.catalogue.Catalogue` and from the endpoint's own
node, which leads every partition, coordinates every group and is the ``controller_id`` clients
send admin requests to. What security decides follows Kafka:

- Metadata: a topic the caller may not DESCRIBE is left out of an all-topics answer and answered
  TOPIC_AUTHORIZATION_FAILED (29) when named, before its existence is checked, so that nothing
  leaks. A named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (3), or
  INVALID_TOPIC_EXCEPTION (17) for an illegal name: topics are never created (Kafka with
  ``auto.create.topics.enable=false``), whatever ``allow_auto_topic_creation`` says. From v12
  topics may be named by id: an unknown id is UNKNOWN_TOPIC_ID (100), a refused one is answered
  with its id. A request refused whole carries the error on each topic (getErrorResponse).
- KIP-430 authorized operations are computed only when asked for; otherwise the field keeps the
  schema's "omitted" value (INT32_MIN). Metadata carries the cluster's only in v8–v10 (later
  versions moved it to DescribeCluster); a caller without DESCRIBE on the cluster gets 0 there.
- FindCoordinator: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED, 30) or on the
  transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53); a share-group key needs
  CLUSTER_ACTION on the cluster (31).
- DescribeGroups: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for that group.
- ListGroups: every group for a caller with DESCRIBE on the cluster, else only the groups it may
  DESCRIBE (nothing is refused); v4's states filter and v5's types filter narrow the list.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from typing import Iterator

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType, operations_to_bitfield
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import InvalidRequestError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.catalogue import INTERNAL_TOPICS, NO_NODE, Catalogue, Group, Node, Topic, topic_name_problem
from kafkasec.protocol.errors import ApiError

METADATA, FIND_COORDINATOR = ApiKey.METADATA, ApiKey.FIND_COORDINATOR
DESCRIBE_GROUPS, DESCRIBE_CLUSTER = ApiKey.DESCRIBE_GROUPS, ApiKey.DESCRIBE_CLUSTER
LIST_GROUPS = ApiKey.LIST_GROUPS
CLASSIC_GROUP_TYPE = "Classic"  # KIP-848's name for the groups a Catalogue holds
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
"""The schemas' default for an authorized-operations field nobody asked for (Integer.MIN_VALUE)."""

BROKER_ENDPOINT = 1  # DescribeCluster's endpoint_type for brokers (2 is controllers)
_GROUP_KEY, _TRANSACTION_KEY, _SHARE_KEY = 0, 1, 2
_CLUSTER = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
_ZERO_UUID = uuid.UUID(int=0)


def _topic_error(
    topic_type,
    name: str | None,
    code: KafkaErrorCode,
    operations: int = AUTHORIZED_OPERATIONS_OMITTED,
    *,
    is_internal: bool = False,
    topic_id: uuid.UUID = _ZERO_UUID,
):
    """A Metadata topic answered with ``code`` and no partitions (refused, unknown or illegal)."""
    return wire.build(
        topic_type,
        name=name,
        topic_id=topic_id,
        is_internal=is_internal,
        topic_authorized_operations=operations,
        **ApiError(code).code_field(),
    )


def _topic_id_of(entry) -> uuid.UUID:
    return getattr(entry, "topic_id", None) or _ZERO_UUID  # Metadata requests carry ids from v10


def _topic_questions(name: str) -> tuple[ResourcePattern, Action, Action]:
    """A topic's pattern and its DESCRIBE action for an all-topics listing (a refusal is not
    logged) and for a named topic (it is), as Kafka's Metadata handler asks them."""
    pattern = ResourcePattern(ResourceType.TOPIC, name)
    return pattern, Action(AclOperation.DESCRIBE, pattern, 1, True, False), Action(AclOperation.DESCRIBE, pattern, 1, True, True)


_bitfield = functools.lru_cache(maxsize=1024)(operations_to_bitfield)
"""KIP-430 bitfields of the few distinct operation sets a node answers, each made once."""


def metadata_error_response(body, version: int, error: ApiError):
    """Kafka's ``MetadataRequest.getErrorResponse``: the error on every topic asked about (its
    name, or "" for one named by id, its id, no partitions) and, from v13, at the top."""
    response_type = wire.response_schema(METADATA, version)
    topic_type = wire.item_type(response_type, "topics")
    topics = tuple(
        _topic_error(topic_type, entry.name or "", error.error_code, topic_id=_topic_id_of(entry))
        for entry in body.topics or ()
    )
    return wire.build(response_type, topics=topics, brokers=(), controller_id=-1, **error.code_field())


class ClusterRequests:
    """The five read APIs of one node over ``catalogue``; each handler takes
    ``(security, context, body, version)`` and returns the response body."""

    def __init__(self, catalogue: Catalogue, node: Node, cluster_id: str):
        self.catalogue = catalogue
        self.node = node
        self.cluster_id = cluster_id
        # A catalogue topic's Metadata entry is the same bytes for every caller with the same
        # operations: encoded once, a 5,000-topic answer is a join instead of 35,000 entities.
        # Bounded, and only catalogue topics are kept, so that named strangers cannot fill it.
        self._encoded_topic = functools.lru_cache(maxsize=max(1024, 4 * len(catalogue.topics)))(self._encode_topic)
        # And the questions a Metadata answer asks of each topic, made once rather than per request.
        self._topic_questions = functools.lru_cache(maxsize=max(1024, 4 * len(catalogue.topics)))(_topic_questions)

    def handlers(self) -> dict:
        return {
            METADATA: self.handle_metadata,
            FIND_COORDINATOR: self.handle_find_coordinator,
            DESCRIBE_GROUPS: self.handle_describe_groups,
            DESCRIBE_CLUSTER: self.handle_describe_cluster,
            LIST_GROUPS: self.handle_list_groups,
        }

    @staticmethod
    def _operations(security, context: RequestContext, pattern: ResourcePattern) -> int:
        return operations_to_bitfield(security.authorized_operations(context, pattern))

    def _cluster_operations(self, security, context: RequestContext) -> int:
        if not security.is_allowed(context, AclOperation.DESCRIBE, _CLUSTER):
            return 0
        return self._operations(security, context, _CLUSTER)

    # ------------------------------------------------------------------ Metadata

    def handle_metadata(self, security, context: RequestContext, body, version: int):
        response_type = wire.response_schema(METADATA, version)
        topic_type = wire.item_type(response_type, "topics")
        requested = body.topics
        all_topics = requested is None or (version == 0 and not requested)
        unknown_ids: list[uuid.UUID] = []
        by_id = False
        if all_topics:
            names = sorted(self.catalogue.topics)
        else:
            names, unknown_ids = self._requested_topics(requested, version)
            by_id = bool(unknown_ids) or any(_topic_id_of(entry) != _ZERO_UUID for entry in requested)
        # Refusals of named topics are audited; of an all-topics listing, not (Kafka's logIfDenied).
        questions = [self._topic_questions(name) for name in names]
        describe = [listing if all_topics else named for _, listing, named in questions]
        include_operations = version >= 8 and body_wants(body, "include_topic_authorized_operations")
        allowed: list[str] = []
        refused: list[str] = []
        allowed_patterns: list[ResourcePattern] = []
        for name, (pattern, _, _), result in zip(names, questions, security.authorize(context, describe)):
            if result is AuthorizationResult.ALLOWED:
                allowed.append(name)
                allowed_patterns.append(pattern)
            else:
                refused.append(name)
        operations_of: Iterator[int]
        if include_operations:
            operations_of = map(_bitfield, security.authorized_operations_many(context, allowed_patterns))
        else:
            operations_of = itertools.repeat(AUTHORIZED_OPERATIONS_OMITTED)
        topics: list[bytes] = []
        for name, operations in zip(allowed, operations_of):
            if name in self.catalogue.topics:
                topics.append(self._encoded_topic(version, name, operations))
            else:
                topics.append(wire.encode(self._topic_metadata(topic_type, name, operations)))
        if by_id:
            # Kafka: unknown ids first; an id is not secret, so a refused one is named by its id.
            topics[:0] = [wire.encode(_topic_error(topic_type, None, KafkaErrorCode.UNKNOWN_TOPIC_ID, topic_id=topic_id))
                          for topic_id in unknown_ids]
            topics += [
                wire.encode(_topic_error(topic_type, None, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         topic_id=self.catalogue.topics[name].topic_id))
                for name in refused
            ]
        elif not all_topics:
            # Named but not describable: refused without saying whether the topic exists.
            topics += [wire.encode(_topic_error(topic_type, name, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED)) for name in refused]
        cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
        if 8 <= version <= 10 and body_wants(body, "include_cluster_authorized_operations"):
            cluster_operations = self._cluster_operations(security, context)
        response = wire.build(
            response_type,
            brokers=(self._broker(wire.item_type(response_type, "brokers")),),
            cluster_id=self.cluster_id,
            controller_id=self.node.node_id,
            cluster_authorized_operations=cluster_operations,
            **ApiError.NONE.code_field(),
        )
        return wire.encode_with_items(response, "topics", topics)

    def _requested_topics(self, requested, version: int) -> tuple[list[str], list[uuid.UUID]]:
        """The topic names a Metadata request asks about, in request order, each once, and the
        topic ids it names that the catalogue does not know. As Kafka's KafkaApis: below v12 a
        topic must have a name and no id; from v12, once any topic is named by id, the names of
        the ids the catalogue knows are asked about, and names given beside them are not."""
        names: dict[str, None] = {}
        known_ids: dict[str, None] = {}
        unknown: dict[uuid.UUID, None] = {}
        for entry in requested:
            topic_id = _topic_id_of(entry)
            if version < 12 and entry.name is None:
                raise InvalidRequestError(f"Topic name can not be null for version {version}")
            if version < 12 and topic_id != _ZERO_UUID:
                raise InvalidRequestError(f"Topic IDs are not supported in requests for version {version}")
            if topic_id != _ZERO_UUID:
                topic = self.catalogue.topics_by_id.get(topic_id)
                if topic is None:
                    unknown[topic_id] = None
                else:
                    known_ids[topic.name] = None
            elif entry.name is None:
                raise InvalidRequestError("a Metadata topic needs a name or a topic id")
            else:
                names[entry.name] = None
        if known_ids or unknown:
            return list(known_ids), list(unknown)
        return list(names), []

    def _encode_topic(self, version: int, name: str, operations: int) -> bytes:
        topic_type = wire.item_type(wire.response_schema(METADATA, version), "topics")
        return wire.encode(self._topic_metadata(topic_type, name, operations))

    def _broker(self, broker_type, **extra):
        # Metadata calls the id node_id, DescribeCluster broker_id; build() keeps the one there is.
        node = self.node
        return wire.build(
            broker_type, node_id=node.node_id, broker_id=node.node_id, host=node.host, port=node.port, rack=node.rack, **extra
        )

    def _topic_metadata(self, topic_type, name: str, operations: int):
        topic: Topic | None = self.catalogue.topics.get(name)
        if topic is None:
            problem = topic_name_problem(name)
            code = KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION if problem is None else KafkaErrorCode.INVALID_TOPIC_EXCEPTION
            return _topic_error(topic_type, name, code, operations, is_internal=name in INTERNAL_TOPICS)
        partition_type = wire.item_type(topic_type, "partitions")
        node = self.node.node_id
        partitions = tuple(
            wire.build(
                partition_type,
                partition_index=index,
                leader_id=node,
                leader_epoch=0,
                replica_nodes=(node,),
                isr_nodes=(node,),
                offline_replicas=(),
                **ApiError.NONE.code_field(),
            )
            for index in range(topic.partitions)
        )
        return wire.build(
            topic_type,
            name=name,
            topic_id=topic.topic_id,
            is_internal=topic.is_internal,
            partitions=partitions,
            topic_authorized_operations=operations,
            **ApiError.NONE.code_field(),
        )

    # ------------------------------------------------------------------ DescribeCluster

    def handle_describe_cluster(self, security, context: RequestContext, body, version: int):
        response_type = wire.response_schema(DESCRIBE_CLUSTER, version)
        endpoint_type = getattr(body, "endpoint_type", BROKER_ENDPOINT)
        if endpoint_type not in (1, 2):
            return wire.build(
                response_type,
                error_message=f"Unsupported endpoint type {endpoint_type}",
                **ApiError(KafkaErrorCode.UNSUPPORTED_ENDPOINT_TYPE).code_field(),
            )
        if endpoint_type != BROKER_ENDPOINT:
            return wire.build(
                response_type,
                error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
                **ApiError(KafkaErrorCode.MISMATCHED_ENDPOINT_TYPE).code_field(),
            )
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if body.include_cluster_authorized_operations:
            operations = self._cluster_operations(security, context)
        return wire.build(
            response_type,
            error_message=None,
            endpoint_type=BROKER_ENDPOINT,
            cluster_id=self.cluster_id,
            controller_id=self.node.node_id,
            brokers=(self._broker(wire.item_type(response_type, "brokers"), is_fenced=False),),
            cluster_authorized_operations=operations,
            **ApiError.NONE.code_field(),
        )

    # ------------------------------------------------------------------ FindCoordinator

    def _coordinator(self, security, context: RequestContext, key_type: int, key: str) -> tuple[KafkaErrorCode, Node]:
        if key_type == _GROUP_KEY:
            operation, pattern, refusal = AclOperation.DESCRIBE, ResourcePattern(ResourceType.GROUP, key), KafkaErrorCode.GROUP_AUTHORIZATION_FAILED
        elif key_type == _TRANSACTION_KEY:
            operation, pattern = AclOperation.DESCRIBE, ResourcePattern(ResourceType.TRANSACTIONAL_ID, key)
            refusal = KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif key_type == _SHARE_KEY:
            operation, pattern, refusal = AclOperation.CLUSTER_ACTION, _CLUSTER, KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            raise InvalidRequestError(f"Unknown coordinator type {key_type} in FindCoordinator request")
        if not security.is_allowed(context, operation, pattern):
            return refusal, NO_NODE
        return KafkaErrorCode.NONE, self.node

    def handle_find_coordinator(self, security, context: RequestContext, body, version: int):
        response_type = wire.response_schema(FIND_COORDINATOR, version)
        key_type = getattr(body, "key_type", _GROUP_KEY)
        if version < 4:
            code, node = self._coordinator(security, context, key_type, body.key)
            # Kafka sends the error's message even for NONE, which reads "NONE".
            message = code.name if code is KafkaErrorCode.NONE else code.message
            return wire.build(
                response_type, error_message=message, node_id=node.node_id, host=node.host, port=node.port, **ApiError(code).code_field()
            )
        coordinator_type = wire.item_type(response_type, "coordinators")
        coordinators = []
        for key in body.coordinator_keys:
            code, node = self._coordinator(security, context, key_type, key)
            coordinators.append(
                wire.build(
                    coordinator_type,
                    key=key,
                    node_id=node.node_id,
                    host=node.host,
                    port=node.port,
                    error_message=None if code is KafkaErrorCode.NONE else code.message,
                    **ApiError(code).code_field(),
                )
            )
        return wire.build(response_type, coordinators=tuple(coordinators))

    # ------------------------------------------------------------------ DescribeGroups

    def handle_describe_groups(self, security, context: RequestContext, body, version: int):
        response_type = wire.response_schema(DESCRIBE_GROUPS, version)
        group_type = wire.item_type(response_type, "groups")
        include_operations = body_wants(body, "include_authorized_operations")
        refused, described = [], []
        for group_id in body.groups:
            if not security.is_allowed(context, AclOperation.DESCRIBE, ResourcePattern(ResourceType.GROUP, group_id)):
                refused.append(
                    wire.build(
                        group_type,
                        group_id=group_id,
                        group_state="",
                        protocol_type="",
                        protocol_data="",
                        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                        **ApiError(KafkaErrorCode.GROUP_AUTHORIZATION_FAILED).code_field(),
                    )
                )
                continue
            group = self.catalogue.groups.get(group_id)
            if group is None:
                described.append(self._missing_group(group_type, version, group_id))
                continue
            operations = AUTHORIZED_OPERATIONS_OMITTED
            if include_operations:
                operations = self._operations(security, context, ResourcePattern(ResourceType.GROUP, group_id))
            described.append(self._group(group_type, group, operations))
        # Kafka answers the refused groups first, then what the coordinator described.
        return wire.build(response_type, groups=tuple(refused + described))

    @staticmethod
    def _missing_group(group_type, version: int, group_id: str):
        # A Dead group either way; v6 added the error (and its message) for it.
        code, message = KafkaErrorCode.NONE, None
        if version >= 6:
            code, message = KafkaErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        return wire.build(
            group_type,
            group_id=group_id,
            group_state="Dead",
            error_message=message,
            authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            **ApiError(code).code_field(),
        )

    @staticmethod
    def _group(group_type, group: Group, operations: int):
        member_type = wire.item_type(group_type, "members")
        members = tuple(
            wire.build(
                member_type,
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
            )
            for member in group.members
        )
        return wire.build(
            group_type,
            group_id=group.group_id,
            group_state=group.state,
            protocol_type=group.protocol_type,
            protocol_data=group.protocol,
            members=members,
            authorized_operations=operations,
            **ApiError.NONE.code_field(),
        )


    # ------------------------------------------------------------------ ListGroups

    def handle_list_groups(self, security, context: RequestContext, body, version: int):
        response_type = wire.response_schema(LIST_GROUPS, version)
        listed_type = wire.item_type(response_type, "groups")
        # Kafka's filters compare states and types without regard to case; empty means any.
        states = {state.lower() for state in getattr(body, "states_filter", ()) or ()}
        types = {group_type.lower() for group_type in getattr(body, "types_filter", ()) or ()}
        sees_all = security.is_allowed(context, AclOperation.DESCRIBE, _CLUSTER)
        groups = [
            group
            for group in self.catalogue.groups.values()
            if (not states or group.state.lower() in states)
            and (not types or CLASSIC_GROUP_TYPE.lower() in types)
            and (sees_all or security.is_allowed(context, AclOperation.DESCRIBE, ResourcePattern(ResourceType.GROUP, group.group_id)))
        ]
        listed = tuple(
            wire.build(
                listed_type,
                group_id=group.group_id,
                protocol_type=group.protocol_type,
                group_state=group.state,
                group_type=CLASSIC_GROUP_TYPE,
            )
            for group in groups
        )
        return wire.build(response_type, groups=listed, **ApiError.NONE.code_field())


def body_wants(body, flag: str) -> bool:
    """A request's boolean flag, False in versions that do not have it."""
    return bool(getattr(body, flag, False))

