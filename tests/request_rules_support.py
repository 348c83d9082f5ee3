"""Kafka's per-request rules as a table the tests walk: for each client API, a request, the ACLs
AuthorizerIntegrationTest grants for it (``requestKeysToAcls``) and the error it expects
without them (``requestKeyToError``), and what a response says.

Shared by the library tests (tests/protocol/test_protocol_request_rules.py) and the gateway's
over real sockets (tests/server/test_server_gateway.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
import uuid

from kafkasec import AclBinding
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import kio_versions

AUTHORIZATION_ERRORS = frozenset({29, 30, 31, 53})
"""TOPIC_, GROUP_, CLUSTER_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
ERROR_FIELDS = ("error_code", "partition_error_code", "topic_config_error_code")

TOPIC, GROUP, TXN = "topic-t", "group-g", "txn-x"
TOPIC_ID = uuid.UUID("6b6b6b6b-0000-4000-8000-000000000001")


def make(entity_type: type, values: dict):
    """A kio entity from nested dicts and lists (each dict becomes its field's item type;
    milliseconds become the timedeltas kio holds)."""
    built = {}
    for field in dataclasses.fields(entity_type):
        if field.name not in values:
            continue
        value = values[field.name]
        if isinstance(value, list) and value and isinstance(value[0], dict):
            item = wire.item_type(entity_type, field.name)
            value = tuple(make(item, v) for v in value)
        elif isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            value = make(wire.item_type(entity_type, field.name), value)
        elif isinstance(value, int) and field.metadata.get("kafka_type", "").startswith("timedelta"):
            value = datetime.timedelta(milliseconds=value)  # kio carries durations as timedeltas
        built[field.name] = value
    return wire.build(entity_type, **built)


def error_codes(entity) -> set[int]:
    """Every error code other than NONE a response carries, at any depth."""
    codes: set[int] = set()
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.name in ERROR_FIELDS and value:
            codes.add(int(value))
        elif dataclasses.is_dataclass(value):
            codes |= error_codes(value)
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    codes |= error_codes(item)
    return codes


def acl(resource_type: str, name: str, operation: str, principal: str = "User:alice") -> AclBinding:
    return AclBinding.of(resource_type, name, "LITERAL", principal, "*", operation, "ALLOW")


@dataclasses.dataclass(frozen=True)
class Case:
    """One row: ``values`` of a request of ``api`` (at ``version``, the highest kio has when
    None), the ACLs that authorize it, and Kafka's error without them."""

    api: ApiKey
    values: dict
    grants: tuple[AclBinding, ...]
    error: int
    version: int | None = None
    name: str = ""

    @property
    def id(self) -> str:
        return f"{self.api.title}{'-' + self.name if self.name else ''}-v{self.at_version}"

    @property
    def at_version(self) -> int:
        return kio_versions(self.api)[1] if self.version is None else self.version

    def request(self, version: int | None = None):
        return make(wire.request_schema(self.api, self.at_version if version is None else version), self.values)


def _topic_partitions(topic_field: str, partitions: str, index: str, **extra) -> list[dict]:
    return [{topic_field: TOPIC, partitions: [{index: 0, **extra}]}]


_T_WRITE, _T_READ, _T_DESCRIBE = acl("TOPIC", TOPIC, "WRITE"), acl("TOPIC", TOPIC, "READ"), acl("TOPIC", TOPIC, "DESCRIBE")
_G_READ, _G_DESCRIBE = acl("GROUP", GROUP, "READ"), acl("GROUP", GROUP, "DESCRIBE")
_X_WRITE = acl("TRANSACTIONAL_ID", TXN, "WRITE")
_CLUSTER = "kafka-cluster"

CASES: tuple[Case, ...] = (
    Case(ApiKey.PRODUCE, {"acks": 1, "topic_data": _topic_partitions("name", "partition_data", "index", records=b"")},
         (_T_WRITE,), 29, version=9),
    Case(ApiKey.FETCH, {"max_wait": 0, "min_bytes": 0, "topics": _topic_partitions("topic", "partitions", "partition", fetch_offset=0, partition_max_bytes=1024)},
         (_T_READ,), 29, version=12),
    Case(ApiKey.LIST_OFFSETS, {"replica_id": -1, "topics": _topic_partitions("name", "partitions", "partition_index", timestamp=-2)},
         (_T_DESCRIBE,), 29),
    Case(ApiKey.METADATA, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}, (_T_DESCRIBE,), 29, version=12),
    Case(ApiKey.OFFSET_COMMIT, {"group_id": GROUP, "member_id": "", "generation_id_or_member_epoch": -1,
                                "topics": _topic_partitions("name", "partitions", "partition_index", committed_offset=0)},
         (_G_READ, _T_READ), 30, version=9),
    Case(ApiKey.OFFSET_FETCH, {"groups": [{"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]},
         (_G_DESCRIBE, _T_DESCRIBE), 30, version=9),
    Case(ApiKey.OFFSET_FETCH, {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}]},
         (_G_DESCRIBE, _T_DESCRIBE), 30, version=7, name="single"),
    Case(ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [GROUP]}, (_G_DESCRIBE,), 30),
    Case(ApiKey.FIND_COORDINATOR, {"key": TXN, "key_type": 1}, (acl("TRANSACTIONAL_ID", TXN, "DESCRIBE"),), 53, version=3,
         name="transaction"),
    Case(ApiKey.JOIN_GROUP, {"group_id": GROUP, "session_timeout": 6000, "member_id": "", "protocol_type": "consumer",
                             "protocols": [{"name": "range", "metadata": b""}]}, (_G_READ,), 30),
    Case(ApiKey.HEARTBEAT, {"group_id": GROUP, "generation_id": 1, "member_id": "m"}, (_G_READ,), 30),
    Case(ApiKey.LEAVE_GROUP, {"group_id": GROUP, "members": [{"member_id": "m"}]}, (_G_READ,), 30),
    Case(ApiKey.SYNC_GROUP, {"group_id": GROUP, "generation_id": 1, "member_id": "m", "protocol_type": "consumer",
                             "protocol_name": "range"}, (_G_READ,), 30),
    Case(ApiKey.DESCRIBE_GROUPS, {"groups": [GROUP]}, (_G_DESCRIBE,), 30),
    Case(ApiKey.DELETE_GROUPS, {"groups_names": [GROUP]}, (acl("GROUP", GROUP, "DELETE"),), 30),
    Case(ApiKey.INIT_PRODUCER_ID, {"transactional_id": TXN, "transaction_timeout": 60000}, (_X_WRITE,), 53, version=5),
    Case(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60000},
         (acl("CLUSTER", _CLUSTER, "IDEMPOTENT_WRITE"),), 31, version=5, name="idempotent"),
    Case(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60000},
         (acl("TOPIC", "any-topic", "WRITE"),), 31, version=5, name="kip679"),
    Case(ApiKey.OFFSET_FOR_LEADER_EPOCH, {"topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
         (_T_DESCRIBE,), 29),
    Case(ApiKey.ADD_PARTITIONS_TO_TXN, {"v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 1,
                                        "v3_and_below_producer_epoch": 0,
                                        "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]},
         (_X_WRITE, _T_WRITE), 53, version=3),
    Case(ApiKey.ADD_OFFSETS_TO_TXN, {"transactional_id": TXN, "producer_id": 1, "producer_epoch": 0, "group_id": GROUP},
         (_X_WRITE, _G_READ), 53),
    Case(ApiKey.END_TXN, {"transactional_id": TXN, "producer_id": 1, "producer_epoch": 0, "committed": True}, (_X_WRITE,), 53),
    Case(ApiKey.WRITE_TXN_MARKERS, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": True,
                                                 "coordinator_epoch": 0, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]},
         (acl("CLUSTER", _CLUSTER, "CLUSTER_ACTION"),), 31),
    Case(ApiKey.TXN_OFFSET_COMMIT, {"transactional_id": TXN, "group_id": GROUP, "producer_id": 1, "producer_epoch": 0,
                                    "topics": _topic_partitions("name", "partitions", "partition_index", committed_offset=0)},
         (_X_WRITE, _G_READ, _T_READ), 53),
    Case(ApiKey.CREATE_TOPICS, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}]},
         (acl("TOPIC", TOPIC, "CREATE"),), 29),
    Case(ApiKey.DELETE_TOPICS, {"topics": [{"name": TOPIC, "topic_id": uuid.UUID(int=0)}], "timeout": 1000},
         (acl("TOPIC", TOPIC, "DELETE"),), 29),
    Case(ApiKey.DELETE_RECORDS, {"topics": _topic_partitions("name", "partitions", "partition_index", offset=0), "timeout": 1000},
         (acl("TOPIC", TOPIC, "DELETE"),), 29),
    Case(ApiKey.CREATE_PARTITIONS, {"topics": [{"name": TOPIC, "count": 2, "assignments": None}], "timeout": 1000,
                                    "validate_only": True}, (acl("TOPIC", TOPIC, "ALTER"),), 29),
    Case(ApiKey.DESCRIBE_CONFIGS, {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None}]},
         (acl("TOPIC", TOPIC, "DESCRIBE_CONFIGS"),), 29),
    Case(ApiKey.DESCRIBE_CONFIGS, {"resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}]},
         (acl("CLUSTER", _CLUSTER, "DESCRIBE_CONFIGS"),), 31, name="broker"),
    Case(ApiKey.ALTER_CONFIGS, {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configs": []}], "validate_only": True},
         (acl("TOPIC", TOPIC, "ALTER_CONFIGS"),), 29),
    Case(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [{"resource_type": 32, "resource_name": GROUP, "configs": []}],
                                            "validate_only": True}, (acl("GROUP", GROUP, "ALTER_CONFIGS"),), 30),
    Case(ApiKey.ALTER_REPLICA_LOG_DIRS, {"dirs": [{"path": "/d", "topics": [{"name": TOPIC, "partitions": [0]}]}]},
         (acl("CLUSTER", _CLUSTER, "ALTER"),), 31),
    Case(ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}, (acl("CLUSTER", _CLUSTER, "DESCRIBE"),), 31),
    Case(ApiKey.ELECT_LEADERS, {"election_type": 0, "topic_partitions": [{"topic": TOPIC, "partitions": [0]}]},
         (acl("CLUSTER", _CLUSTER, "ALTER"),), 31),
    Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": None}]}]},
         (acl("CLUSTER", _CLUSTER, "ALTER"),), 31),
    Case(ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": None}, (acl("CLUSTER", _CLUSTER, "DESCRIBE"),), 31),
    Case(ApiKey.OFFSET_DELETE, {"group_id": GROUP, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]},
         (acl("GROUP", GROUP, "DELETE"), _T_READ), 30),
    Case(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": [], "strict": False}, (acl("CLUSTER", _CLUSTER, "DESCRIBE_CONFIGS"),), 31),
    Case(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [{"entity": [{"entity_type": "user", "entity_name": "u"}], "ops": []}],
                                      "validate_only": True}, (acl("CLUSTER", _CLUSTER, "ALTER_CONFIGS"),), 31),
    Case(ApiKey.UPDATE_FEATURES, {"feature_updates": [], "validate_only": True}, (acl("CLUSTER", _CLUSTER, "ALTER"),), 31),
    Case(ApiKey.DESCRIBE_QUORUM, {"topics": []}, (acl("CLUSTER", _CLUSTER, "DESCRIBE"),), 31),
    Case(ApiKey.DESCRIBE_PRODUCERS, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]}, (_T_READ,), 29),
    Case(ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [TXN]}, (acl("TRANSACTIONAL_ID", TXN, "DESCRIBE"),), 53),
    Case(ApiKey.CONSUMER_GROUP_HEARTBEAT, {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                          "subscribed_topic_names": [TOPIC]}, (_G_READ, _T_DESCRIBE), 30),
    Case(ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": [GROUP]}, (_G_DESCRIBE,), 30),
    Case(ApiKey.LIST_CONFIG_RESOURCES, {}, (acl("CLUSTER", _CLUSTER, "DESCRIBE_CONFIGS"),), 31),
    Case(ApiKey.DESCRIBE_TOPIC_PARTITIONS, {"topics": [{"name": TOPIC}], "response_partition_limit": 10}, (_T_DESCRIBE,), 29),
    Case(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                       "subscribed_topic_names": [TOPIC]}, (_G_READ, _T_DESCRIBE), 30),
    Case(ApiKey.SHARE_GROUP_DESCRIBE, {"group_ids": [GROUP]}, (_G_DESCRIBE,), 30),
    Case(ApiKey.SHARE_FETCH, {"group_id": GROUP, "member_id": "m", "share_session_epoch": 0, "max_wait": 0, "min_bytes": 0,
                              "max_records": 1, "batch_size": 1,
                              "topics": [{"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0}]}]},
         (_G_READ, _T_READ), 30),
    Case(ApiKey.SHARE_ACKNOWLEDGE, {"group_id": GROUP, "member_id": "m", "share_session_epoch": 1,
                                    "topics": [{"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0}]}]},
         (_G_READ, _T_READ), 30),
    Case(ApiKey.STREAMS_GROUP_HEARTBEAT, {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                          "endpoint_information_epoch": 0}, (_G_READ,), 30),
    Case(ApiKey.STREAMS_GROUP_DESCRIBE, {"group_ids": [GROUP]}, (_G_DESCRIBE,), 30),
    Case(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, {"groups": [{"group_id": GROUP, "topics": [{"topic_name": TOPIC, "partitions": [0]}]}]},
         (_G_DESCRIBE, _T_DESCRIBE), 30),
    Case(ApiKey.ALTER_SHARE_GROUP_OFFSETS, {"group_id": GROUP, "topics": [{"topic_name": TOPIC, "partitions": [
        {"partition_index": 0, "start_offset": 0}]}]}, (_G_READ, _T_READ), 30),
    Case(ApiKey.DELETE_SHARE_GROUP_OFFSETS, {"group_id": GROUP, "topics": [{"topic_name": TOPIC}]},
         (acl("GROUP", GROUP, "DELETE"), _T_READ), 30),
    Case(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": True}, (), 0),
    Case(ApiKey.LIST_GROUPS, {}, (), 0),
    Case(ApiKey.LIST_TRANSACTIONS, {}, (), 0),
    Case(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, {"client_instance_id": uuid.UUID(int=0)}, (), 0),
    Case(ApiKey.PUSH_TELEMETRY, {"client_instance_id": uuid.UUID(int=0), "metrics": b""}, (), 0),
)
"""Rows with error 0 need no ACL: Kafka filters or answers them for anyone."""

TOPIC_IDS = typing.cast(dict, {TOPIC_ID: TOPIC})
