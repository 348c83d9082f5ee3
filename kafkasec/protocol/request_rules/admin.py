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
from kafkasec.protocol.catalogue import topic_name_problem
from kafkasec.protocol.request_rules import validation
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
        # ControllerApis.createTopics first: a name given twice (every copy) and Kafka's own
        # metadata topic are refused INVALID_REQUEST before any ACL is asked.
        repeated = validation.duplicates(topic.name for topic in incoming.body.topics)
        invalid = [(name, KafkaErrorCode.INVALID_REQUEST, validation.DUPLICATE_NAME) for name in repeated]
        topics = [topic for topic in incoming.body.topics if topic.name not in repeated]
        if any(topic.name == validation.CLUSTER_METADATA_TOPIC for topic in topics):
            invalid.append((validation.CLUSTER_METADATA_TOPIC, KafkaErrorCode.INVALID_REQUEST,
                            f"Creation of internal topic {validation.CLUSTER_METADATA_TOPIC} is prohibited."))
            topics = [topic for topic in topics if topic.name != validation.CLUSTER_METADATA_TOPIC]
        names = [topic.name for topic in topics]
        verdicts = incoming.ask(
            [(CREATE, TOPIC, name) for name in names] + [(DESCRIBE_CONFIGS, TOPIC, name) for name in names]
        )
        cluster_allows = incoming.cluster_allows(CREATE, log_if_denied=False)
        kept = [t for t in topics if cluster_allows or verdicts.allowed(CREATE, TOPIC, t.name)]
        refused = [t for t in topics if t not in kept]
        # The controller then refuses a name Kafka cannot hold (ReplicationControlManager.
        # validateNewTopicNames: 17), once CREATE was granted, as Kafka orders it.
        problems = {t.name: topic_name_problem(t.name) for t in kept}
        invalid += [(name, KafkaErrorCode.INVALID_TOPIC_EXCEPTION, problem) for name, problem in problems.items() if problem]
        kept = [t for t in kept if not problems[t.name]]
        hidden_configs = {name for name in names if not verdicts.allowed(DESCRIBE_CONFIGS, TOPIC, name)}
        if not refused and not hidden_configs and not invalid:
            return incoming.allowed_whole()
        schema = incoming.response_schema
        entry_type = wire.item_type(schema, "topics")
        answered = list(invalid)
        answered += [(t.name, TOPIC_AUTHORIZATION_FAILED, "Authorization failed.") for t in refused]
        entries = tuple(
            wire.build(entry_type, name=name, num_partitions=-1, replication_factor=-1, **error_fields(entry_type, error, message))
            for name, error, message in answered
        )

        def without_configs(entry):
            if entry.name not in hidden_configs or entry.error_code != 0 or not hasattr(entry, "topic_config_error_code"):
                return entry
            return replace(entry, num_partitions=-1, replication_factor=-1, configs=(),
                           topic_config_error_code=int(TOPIC_AUTHORIZATION_FAILED))

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, topics=(*(without_configs(e) for e in base.topics), *entries))

        forward = (incoming.body if not (refused or invalid) else replace(incoming.body, topics=tuple(kept))) if kept else None
        refusals = [Refusal(name, error, message=message) for name, error, message in invalid]
        refusals += [Refusal(t.name, TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, t.name)) for t in refused]
        return incoming.decided(forward, refusals, respond)


# ---------------------------------------------------------------------- DeleteTopics


class DeleteTopicsRule(Rule):
    """DELETE on the cluster (which answers for every topic), else DESCRIBE and DELETE on each,
    after ControllerApis' validation (a name and an id together, neither, or either twice:
    INVALID_REQUEST per entry, with Kafka's messages).

    By name: without DESCRIBE, TOPIC_AUTHORIZATION_FAILED whether the topic exists or not; with
    DESCRIBE but not DELETE, UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist and
    TOPIC_AUTHORIZATION_FAILED for one that does (existence as the caller's topic names know
    it: a name they do not hold is in ``unknown_topic_names``). By id (v6+): an unknown id is
    UNKNOWN_TOPIC_ID before any ACL; a refused one is answered with its name only to a caller
    that may DESCRIBE it. A deletable topic given both by name and by id is deleted by neither.
    """

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        by_state = hasattr(body, "topics")
        states = validation.delete_topic_states((), body.topics) if by_state else validation.delete_topic_states(body.topic_names, ())
        by_id = [(topic_id, incoming.topic_names.get(topic_id)) for topic_id in states.ids]
        named = [*states.names, *(name for _, name in by_id if name is not None)]
        verdicts = incoming.ask([(DESCRIBE, TOPIC, n) for n in named] + [(DELETE, TOPIC, n) for n in named])
        cluster_allows = incoming.cluster_allows(DELETE, log_if_denied=False)

        def describable(name: str) -> bool:
            return cluster_allows or verdicts.allowed(DESCRIBE, TOPIC, name)

        def deletable(name: str) -> bool:
            return cluster_allows or verdicts.allowed(DELETE, TOPIC, name)

        existing = set(incoming.topic_names.values())
        # (name shown, id, error, message, resource) of each entry answered here
        refused: list[tuple[str | None, uuid.UUID, KafkaErrorCode, str | None, ResourcePattern | None]] = [
            (name, topic_id, KafkaErrorCode.INVALID_REQUEST, message, None) for name, topic_id, message in states.invalid
        ]
        deleting_ids = {}
        for topic_id, name in by_id:
            if name is None:
                refused.append((None, topic_id, KafkaErrorCode.UNKNOWN_TOPIC_ID, None, None))
            elif deletable(name):
                deleting_ids[name] = topic_id
            else:
                refused.append((name if describable(name) else None, topic_id, TOPIC_AUTHORIZATION_FAILED, None, ResourcePattern(TOPIC, name)))
        deleting_names, unknown_names = [], set()
        for name in states.names:
            if not describable(name):
                refused.append((name, ZERO_UUID, TOPIC_AUTHORIZATION_FAILED, None, ResourcePattern(TOPIC, name)))
            elif name in deleting_ids:
                message = validation.NAME_OF_A_GIVEN_ID
                refused.append((name, deleting_ids.pop(name), KafkaErrorCode.INVALID_REQUEST, message, None))
            elif deletable(name):
                deleting_names.append(name)  # whether it exists is the broker's to say
            elif name not in existing:
                unknown_names.add(name)
                refused.append((name, ZERO_UUID, KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, None))
            else:
                refused.append((name, ZERO_UUID, TOPIC_AUTHORIZATION_FAILED, None, ResourcePattern(TOPIC, name)))
        if not refused:
            return incoming.allowed_whole()
        if by_state:
            state_type = wire.item_type(type(body), "topics")
            kept = (*(wire.build(state_type, name=name, topic_id=ZERO_UUID) for name in deleting_names),
                    *(wire.build(state_type, name=None, topic_id=topic_id) for topic_id in deleting_ids.values()))
            forward = replace(body, topics=kept) if kept else None
        else:
            forward = replace(body, topic_names=tuple(deleting_names)) if deleting_names else None
        schema = incoming.response_schema
        entry_type = wire.item_type(schema, "responses")
        entries = tuple(
            wire.build(entry_type, name=name, topic_id=topic_id, **error_fields(entry_type, error, message))
            for name, topic_id, error, message, _ in refused
        )

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, responses=(*base.responses, *entries))

        refusals = [
            Refusal(name if name is not None else topic_id, error, resource, message)
            for name, topic_id, error, message, resource in refused
        ]
        return incoming.decided(forward, refusals, respond, unknown_topic_names=unknown_names)


class CreatePartitionsRule(ItemRule):
    """ALTER on each topic, after ControllerApis.createPartitions refuses a topic given twice
    (INVALID_REQUEST, answered once)."""

    def invalid_items(self, incoming: Incoming, items):
        repeated = set(validation.duplicates(topic.name for topic in items))
        duplicate = validation.Invalid(KafkaErrorCode.INVALID_REQUEST, validation.DUPLICATE_NAME)
        return [(topic, duplicate) for topic in items if topic.name in repeated]


# ---------------------------------------------------------------------- configs

_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_CLIENT_METRICS, _CONFIG_GROUP = 2, 4, 8, 16, 32
_CONFIG_TYPES = frozenset({_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_CLIENT_METRICS, _CONFIG_GROUP})
_CONFIG_ERRORS = {
    TOPIC: TOPIC_AUTHORIZATION_FAILED,
    CLUSTER_TYPE: CLUSTER_AUTHORIZATION_FAILED,
    GROUP: KafkaErrorCode.GROUP_AUTHORIZATION_FAILED,
}


class ConfigsRule(ItemRule):
    """DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: ``operation`` on the topic or
    the group a config resource names, or on the cluster for broker, broker-logger and
    client-metrics resources; refused with Kafka's message for that kind of resource.

    Kafka's validation comes first: a resource of a type Kafka does not know for the API
    (AlterConfigs has no broker-logger resources) is never asked about nor forwarded
    (DescribeConfigs: the whole request INVALID_REQUEST; the alters: that resource), and an
    alter refuses a resource given twice, a config key given twice and a missing value
    (ConfigAdminManager.preprocess)."""

    def __init__(self, operation: AclOperation, response_items: str, known_types: frozenset[int]):
        layout = ItemLayout("resources", response_items, key="resource_name", copied=("resource_type", "resource_name"))
        super().__init__(layout, TOPIC, operation, TOPIC_AUTHORIZATION_FAILED, default_messages=True)
        self.known_types = known_types

    def invalid_items(self, incoming: Incoming, items):
        if incoming.api_key == ApiKey.DESCRIBE_CONFIGS:
            if all(item.resource_type in self.known_types for item in items):
                return []
            invalid = validation.Invalid(KafkaErrorCode.INVALID_REQUEST, KafkaErrorCode.INVALID_REQUEST.message)
            return [(item, invalid) for item in items]
        return validation.alter_configs_problems(items, self.known_types, deleting=incoming.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS)

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
    ApiKey.CREATE_PARTITIONS: CreatePartitionsRule(
        ItemLayout("topics", "results", key="name", response_key="name"), TOPIC, ALTER, TOPIC_AUTHORIZATION_FAILED
    ),
    ApiKey.DESCRIBE_CONFIGS: ConfigsRule(DESCRIBE_CONFIGS, "results", _CONFIG_TYPES),
    ApiKey.ALTER_CONFIGS: ConfigsRule(ALTER_CONFIGS, "responses", _CONFIG_TYPES - {_CONFIG_BROKER_LOGGER}),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ConfigsRule(ALTER_CONFIGS, "responses", _CONFIG_TYPES),
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
