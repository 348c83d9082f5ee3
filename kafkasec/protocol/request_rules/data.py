"""The data APIs: producing, fetching and the offsets and records of partitions (KafkaApis'
handleProduceRequest, handleFetchRequest, handleListOffsetRequest,
handleOffsetForLeaderEpochRequest, handleDeleteRecordsRequest, handleDescribeProducersRequest).
"""

from __future__ import annotations

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import Incoming, RequestAuthorization, Rule
from kafkasec.protocol.request_rules.topics import Check, TopicLayout, TopicPartitionRule
from kafkasec.protocol.request_rules.validation import is_transactional, produce_records_problem

READ, WRITE, DESCRIBE, DELETE = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.DELETE
CLUSTER_ACTION = AclOperation.CLUSTER_ACTION

PRODUCE_LAYOUT = TopicLayout(
    "topic_data", "partition_data", "index", "responses", "partition_responses", "index",
    error_values={"base_offset": -1},
)


class ProduceRule(TopicPartitionRule):
    """WRITE on each topic; a request with transactional batches needs WRITE on its
    transactional id first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition, and on
    every partition as well when it names no transactional id)."""

    def __init__(self):
        super().__init__(PRODUCE_LAYOUT, WRITE, checks=self._transactional_id)

    @staticmethod
    def has_transactional_records(incoming: Incoming) -> bool:
        # A loop, not any() over a generator: this runs for every partition of every Produce.
        for topic in incoming.body.topic_data:
            for partition in topic.partition_data:
                if is_transactional(partition.records):
                    return True
        return False

    def invalid_partitions(self, incoming: Incoming, topic, name: str):
        """Kafka's checks of each authorized partition's records (``ProduceRequest.validateRecords``
        and LogValidator's refusal of a client's control batch): exactly one batch, so that the
        batch whose header the transactional check read is all the broker appends."""
        version = incoming.version
        malformed = []
        for partition in topic.partition_data:
            problem = produce_records_problem(version, partition.records, f"{name}-{partition.index}")
            if problem is not None:
                malformed.append((partition, problem))
        return malformed

    @classmethod
    def _transactional_id(cls, incoming: Incoming):
        transactional_id = incoming.body.transactional_id
        if transactional_id is not None and cls.has_transactional_records(incoming):
            yield Check(WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id, KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        if incoming.body.transactional_id is None and self.has_transactional_records(incoming):
            error = KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            layout = self.layout
            schema = incoming.response_schema
            refused = tuple(layout.refused_topic(schema, topic, getattr(topic, "name", None), error) for topic in incoming.body.topic_data)
            return incoming.refused_whole(error, None, lambda _answer: _with_topics(schema, layout, refused))
        return super().decide(incoming)


def _with_topics(schema, layout: TopicLayout, entries):
    return wire.build(schema, **{layout.response_topics: entries})


def _is_follower(incoming: Incoming) -> bool:
    """A Fetch from a replica (a broker), not a consumer: its replica id is a broker id."""
    body = incoming.body
    state = getattr(body, "replica_state", None)
    replica_id = state.replica_id if state is not None else getattr(body, "replica_id", -1)
    return replica_id >= 0


def _fetch_operation(incoming: Incoming) -> AclOperation | None:
    return None if _is_follower(incoming) else READ


def _fetch_checks(incoming: Incoming):
    if _is_follower(incoming):
        yield Check(CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED)


FETCH_LAYOUT = TopicLayout(
    "topics", "partitions", "partition", "responses", "partitions", "partition_index",
    error_values={"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1, "records": b""},
)

LIST_OFFSETS_LAYOUT = TopicLayout("topics", "partitions", "partition_index", "topics", "partitions", "partition_index")

OFFSET_FOR_LEADER_EPOCH_LAYOUT = TopicLayout("topics", "partitions", "partition", "topics", "partitions", "partition")

DELETE_RECORDS_LAYOUT = TopicLayout(
    "topics", "partitions", "partition_index", "topics", "partitions", "partition_index",
    error_values={"low_watermark": -1},
)

DESCRIBE_PRODUCERS_LAYOUT = TopicLayout(
    "topics", "partition_indexes", "", "topics", "partitions", "partition_index", partitions_are_indexes=True,
)


def _offset_for_leader_epoch_operation(incoming: Incoming) -> AclOperation | None:
    """CLUSTER_ACTION on the cluster (a broker's request; not logged when refused) authorizes
    every topic; anyone else needs DESCRIBE on each (KIP-320's consumers)."""
    return None if incoming.cluster_allows(CLUSTER_ACTION, log_if_denied=False) else DESCRIBE


RULES: dict[ApiKey, Rule] = {
    ApiKey.PRODUCE: ProduceRule(),
    ApiKey.FETCH: TopicPartitionRule(FETCH_LAYOUT, _fetch_operation, checks=_fetch_checks),
    ApiKey.LIST_OFFSETS: TopicPartitionRule(LIST_OFFSETS_LAYOUT, DESCRIBE),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: TopicPartitionRule(OFFSET_FOR_LEADER_EPOCH_LAYOUT, _offset_for_leader_epoch_operation),
    ApiKey.DELETE_RECORDS: TopicPartitionRule(DELETE_RECORDS_LAYOUT, DELETE),
    ApiKey.DESCRIBE_PRODUCERS: TopicPartitionRule(DESCRIBE_PRODUCERS_LAYOUT, READ),
}

