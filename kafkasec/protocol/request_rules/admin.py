"""Topics, configs, quotas, log dirs, leaders, features and the cluster's own description, as a
KRaft cluster authorizes them (the controller's ``ControllerApis`` for what brokers forward
to it, ``KafkaApis`` and ``ConfigHelper`` for the rest).
"""

from __future__ import annotations

import uuid

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import (
    CLUSTER,
    ZERO_UUID,
    Incoming,
    Refusal,
    RequestAuthorization,
    ResponseMaker,
    Rule,
    error_fields,
    replace,
)
from kafkasec.protocol.request_rules.items import ItemLayout, ItemRule, WholeRule
from kafkasec.protocol.request_rules.topics import Check, no_checks

TOPIC, GROUP, CLUSTER_TYPE = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
CREATE, DELETE, ALTER, DESCRIBE = AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE
DESCRIBE_CONFIGS, ALTER_CONFIGS = AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS
TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_AUTHORIZATION_FAILED = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def cluster_check(operation: AclOperation):
    def checks(incoming: Incoming):
        yield Check(operation, CLUSTER_TYPE, CLUSTER_NAME, CLUSTER_AUTHORIZATION_FAILED)

    return checks


# ---------------------------------------------------------------------- CreateTopics


class CreateTopicsRule(Rule):
    """CREATE on the cluster, else CREATE on each topic (TOPIC_AUTHORIZATION_FAILED, "Authorization
    failed.", whether or not the topic exists); a topic created for a caller without
    DESCRIBE_CONFIGS on it is answered without its configs (topic_config_error_code 29)."""

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        topics = incoming.body.topics
        names = [topic.name for topic in topics]
        verdicts = incoming.ask(
            [(CREATE, TOPIC, name) for name in names] + [(DESCRIBE_CONFIGS, TOPIC, name) for name in names]
        )
        cluster_allows = incoming.cluster_allows(CREATE, log_if_denied=False)
        kept = [t for t in topics if cluster_allows or verdicts.allowed(CREATE, TOPIC, t.name)]
        refused = [t for t in topics if t not in kept]
        hidden_configs = {name for name in names if not verdicts.allowed(DESCRIBE_CONFIGS, TOPIC, name)}
        if not refused and not hidden_configs:
            return incoming.allowed_whole()
        schema = incoming.response_schema
        entry_type = wire.item_type(schema, "topics")
        entries = tuple(
            wire.build(entry_type, name=t.name, error_message="Authorization failed.", num_partitions=-1, replication_factor=-1,
                       **error_fields(entry_type, TOPIC_AUTHORIZATION_FAILED))
            for t in refused
        )

        def without_configs(entry):
            if entry.name not in hidden_configs or entry.error_code != 0 or not hasattr(entry, "topic_config_error_code"):
                return entry
            return replace(entry, num_partitions=-1, replication_factor=-1, configs=(),
                           topic_config_error_code=int(TOPIC_AUTHORIZATION_FAILED))

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, topics=(*(without_configs(e) for e in base.topics), *entries))

        forward = (incoming.body if not refused else replace(incoming.body, topics=tuple(kept))) if kept else None
        refusals = [Refusal(t.name, TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, t.name)) for t in refused]
        return incoming.decided(forward, refusals, respond)


# ---------------------------------------------------------------------- DeleteTopics


class DeleteTopicsRule(Rule):
    """DELETE on the cluster (which answers for every topic), else DESCRIBE and DELETE on each.

    By name: without DESCRIBE, TOPIC_AUTHORIZATION_FAILED whether the topic exists or not; with
    DESCRIBE but not DELETE, UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist and
    TOPIC_AUTHORIZATION_FAILED for one that does (existence as the caller's topic names know
    it). By id (v6+): an unknown id is UNKNOWN_TOPIC_ID before any ACL; a refused one is
    answered with its name only to a caller that may DESCRIBE it.
    """

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        by_state = hasattr(body, "topics")
        states = body.topics if by_state else tuple(body.topic_names)
        resolved = []  # (request item, name or None, given by id)
        for state in states:
            if not by_state:
                resolved.append((state, state, False))
            elif state.name is None and state.topic_id not in (None, ZERO_UUID):
                resolved.append((state, incoming.topic_names.get(state.topic_id), True))
            else:
                resolved.append((state, state.name, False))
        named = [name for _, name, _ in resolved if name is not None]
        verdicts = incoming.ask([(DESCRIBE, TOPIC, n) for n in named] + [(DELETE, TOPIC, n) for n in named])
        cluster_allows = incoming.cluster_allows(DELETE, log_if_denied=False)
        existing = set(incoming.topic_names.values())
        kept: list = []
        refused: list[tuple[str | None, uuid.UUID | None, KafkaErrorCode, ResourcePattern | None]] = []  # (name shown, id, error, resource)
        for state, name, by_id in resolved:
            topic_id = getattr(state, "topic_id", None)
            if name is None:
                refused.append((None, topic_id, KafkaErrorCode.UNKNOWN_TOPIC_ID, None))
                continue
            describable = cluster_allows or verdicts.allowed(DESCRIBE, TOPIC, name)
            deletable = cluster_allows or verdicts.allowed(DELETE, TOPIC, name)
            if deletable:
                kept.append(state)
            elif by_id:
                refused.append((name if describable else None, topic_id, TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, name)))
            elif describable and name not in existing:
                refused.append((name, None, KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
            else:
                refused.append((name, None, TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, name)))
        if not refused:
            return incoming.allowed_whole()
        schema = incoming.response_schema
        entry_type = wire.item_type(schema, "responses")
        entries = tuple(
            wire.build(entry_type, name=name, topic_id=topic_id or ZERO_UUID, **error_fields(entry_type, error))
            for name, topic_id, error, _ in refused
        )

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, responses=(*base.responses, *entries))

        field = "topics" if by_state else "topic_names"
        forward = replace(body, **{field: tuple(kept)}) if kept else None
        refusals = [Refusal(name, error, resource) for name, _, error, resource in refused]
        return incoming.decided(forward, refusals, respond)


# ---------------------------------------------------------------------- configs

_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_CLIENT_METRICS, _CONFIG_GROUP = 2, 4, 8, 16, 32
_CONFIG_ERRORS = {
    TOPIC: TOPIC_AUTHORIZATION_FAILED,
    CLUSTER_TYPE: CLUSTER_AUTHORIZATION_FAILED,
    GROUP: KafkaErrorCode.GROUP_AUTHORIZATION_FAILED,
}


class ConfigsRule(ItemRule):
    """DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: ``operation`` on the topic or
    the group a config resource names, or on the cluster for broker, broker-logger and
    client-metrics resources; refused with Kafka's message for that kind of resource. A
    resource type with no rule goes on: the broker answers it (INVALID_REQUEST)."""

    def __init__(self, operation: AclOperation, response_items: str):
        layout = ItemLayout("resources", response_items, key="resource_name", copied=("resource_type", "resource_name"))
        super().__init__(layout, TOPIC, operation, TOPIC_AUTHORIZATION_FAILED)

    def question(self, incoming: Incoming, item):
        kind = item.resource_type
        if kind == _CONFIG_TOPIC:
            return (self.operation, TOPIC, item.resource_name)
        if kind == _CONFIG_GROUP:
            return (self.operation, GROUP, item.resource_name)
        if kind in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_CLIENT_METRICS):
            return (self.operation, CLUSTER_TYPE, CLUSTER_NAME)
        return None

    def error_for(self, question) -> KafkaErrorCode:
        return _CONFIG_ERRORS[question[1]]

    def refused_entry(self, response_schema: type, item, error: KafkaErrorCode):
        return replace(super().refused_entry(response_schema, item, error), error_message=error.message)


# ---------------------------------------------------------------------- cluster-wide requests refused per item


class ClusterRefusedPerPartition(Rule):
    """One question on the cluster; refused, every partition the request names carries the
    error, and so does the top level where the response has one (AlterReplicaLogDirs,
    ElectLeaders, AlterPartitionReassignments)."""

    def __init__(self, operation: AclOperation, partitions, response_topics: str, topic_key: str,
                 partitions_field: str, index_field: str):
        self.operation = operation
        self.partitions = partitions
        """body -> [(topic name, [partition index, ...]), ...]: what the request names."""
        self.response_topics, self.topic_key = response_topics, topic_key
        self.partitions_field, self.index_field = partitions_field, index_field

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        if incoming.cluster_allows(self.operation):
            return incoming.allowed_whole()
        error = CLUSTER_AUTHORIZATION_FAILED
        schema = incoming.response_schema
        topic_type = wire.item_type(schema, self.response_topics)
        partition_type = wire.item_type(topic_type, self.partitions_field)
        entries = tuple(
            wire.build(topic_type, **{self.topic_key: name, self.partitions_field: tuple(
                wire.build(partition_type, **{self.index_field: index}, **error_fields(partition_type, error))
                for index in indexes
            )})
            for name, indexes in self.partitions(incoming.body)
        )

        def respond(_answer):
            return wire.build(schema, **{self.response_topics: entries}, **error_fields(schema, error))

        return incoming.refused_whole(error, CLUSTER, respond)


def _log_dir_partitions(body):
    return [(topic.name, list(topic.partitions)) for directory in body.dirs for topic in directory.topics]


def _elect_partitions(body):
    return [(topic.topic, list(topic.partitions)) for topic in body.topic_partitions or ()]


def _reassignment_partitions(body):
    return [(topic.name, [p.partition_index for p in topic.partitions]) for topic in body.topics]


# ---------------------------------------------------------------------- DescribeCluster


def _cluster_operations(incoming: Incoming) -> ResponseMaker | None:
    """KIP-430's cluster operations when asked for: ours, 0 without DESCRIBE on the cluster."""
    if not getattr(incoming.body, "include_cluster_authorized_operations", False):
        return None
    bits = incoming.cluster_operations()

    def respond(answer):
        return replace(answer, cluster_authorized_operations=bits)

    return respond


class ClusterPerItemRule(ItemRule):
    """Every item needs ``operation`` on the cluster, and each is refused with
    CLUSTER_AUTHORIZATION_FAILED (AlterClientQuotas' entries)."""

    def question(self, incoming: Incoming, item):
        return (self.operation, CLUSTER_TYPE, CLUSTER_NAME)


RULES: dict[ApiKey, Rule] = {
    ApiKey.CREATE_TOPICS: CreateTopicsRule(),
    ApiKey.DELETE_TOPICS: DeleteTopicsRule(),
    ApiKey.CREATE_PARTITIONS: ItemRule(
        ItemLayout("topics", "results", key="name", response_key="name"), TOPIC, ALTER, TOPIC_AUTHORIZATION_FAILED
    ),
    ApiKey.DESCRIBE_CONFIGS: ConfigsRule(DESCRIBE_CONFIGS, "results"),
    ApiKey.ALTER_CONFIGS: ConfigsRule(ALTER_CONFIGS, "responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ConfigsRule(ALTER_CONFIGS, "responses"),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ClusterRefusedPerPartition(
        ALTER, _log_dir_partitions, "results", "topic_name", "partitions", "partition_index"
    ),
    ApiKey.DESCRIBE_LOG_DIRS: WholeRule(cluster_check(DESCRIBE)),
    ApiKey.ELECT_LEADERS: ClusterRefusedPerPartition(
        ALTER, _elect_partitions, "replica_election_results", "topic", "partition_result", "partition_id"
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ClusterRefusedPerPartition(
        ALTER, _reassignment_partitions, "responses", "name", "partitions", "partition_index"
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: WholeRule(cluster_check(DESCRIBE)),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: WholeRule(cluster_check(DESCRIBE_CONFIGS)),
    ApiKey.ALTER_CLIENT_QUOTAS: ClusterPerItemRule(
        ItemLayout("entries", "entries", copied=("entity",)), CLUSTER_TYPE, ALTER_CONFIGS, CLUSTER_AUTHORIZATION_FAILED
    ),
    ApiKey.UPDATE_FEATURES: WholeRule(cluster_check(ALTER)),
    ApiKey.DESCRIBE_QUORUM: WholeRule(cluster_check(DESCRIBE)),
    ApiKey.DESCRIBE_CLUSTER: WholeRule(no_checks, respond=_cluster_operations),
    ApiKey.LIST_CONFIG_RESOURCES: WholeRule(cluster_check(DESCRIBE_CONFIGS)),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: WholeRule(no_checks),
    ApiKey.PUSH_TELEMETRY: WholeRule(no_checks),
}
