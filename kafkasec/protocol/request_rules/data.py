"""The data APIs: producing, fetching and the offsets and records of partitions (KafkaApis'
handleProduceRequest, handleFetchRequest, handleListOffsetRequest,
handleOffsetForLeaderEpochRequest, handleDeleteRecordsRequest, handleDescribeProducersRequest).
"""

from __future__ import annotations

from attrs import evolve

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import (
    PRODUCER_OF_ANOTHER_TRANSACTION,
    Incoming,
    Refusal,
    RequestAuthorization,
    Rule,
    replace,
)
from kafkasec.protocol.request_rules.topics import Check, TopicLayout, TopicPartitionRule
from kafkasec.protocol.request_rules.validation import (
    ADMIN_CLIENT_ID,
    INTERNAL_TOPICS,
    Invalid,
    invalid_produce_partitions,
    transactional_producer,
)

READ, WRITE, DESCRIBE, DELETE = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.DELETE
CLUSTER_ACTION = AclOperation.CLUSTER_ACTION

PRODUCE_LAYOUT = TopicLayout(
    "topic_data", "partition_data", "index", "responses", "partition_responses", "index",
    error_values={"base_offset": -1},
)


class ProduceRule(TopicPartitionRule):
    """WRITE on each topic; a request with transactional batches needs WRITE on its
    transactional id first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition, and on
    every partition as well when it names no transactional id), and may carry the batches of
    one producer only (INVALID_PRODUCER_ID_MAPPING on every partition, as ReplicaManager
    refuses it). Each authorized partition's records are then checked as Kafka checks them."""

    def __init__(self):
        super().__init__(PRODUCE_LAYOUT, WRITE)

    @staticmethod
    def transactional_producers(incoming: Incoming) -> set[tuple[int, int]]:
        """The (producer id, epoch) of every partition whose batch is transactional."""
        # Loops, not comprehensions over generators: this runs for every partition of every Produce.
        producers = set()
        for topic in incoming.body.topic_data:
            for partition in topic.partition_data:
                producer = transactional_producer(partition.records)
                if producer is not None:
                    producers.add(producer)
        return producers

    def invalid_partitions(self, incoming: Incoming, topic, name: str):
        """Kafka's checks of each authorized partition's records (``ProduceRequest.validateRecords``
        and LogValidator's refusal of a client's control batch): exactly one batch, so that the
        batch whose header the transactional check read is all the broker appends. Kafka's
        internal topics take no client's records (ReplicaManager.appendToLocalLog)."""
        version = incoming.version
        if name in INTERNAL_TOPICS and incoming.context.client_id != ADMIN_CLIENT_ID:
            internal = Invalid(KafkaErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
            return [(partition, internal) for partition in topic.partition_data]
        return invalid_produce_partitions(version, name, topic.partition_data)

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        producers = self.transactional_producers(incoming)
        transactional_id = incoming.body.transactional_id
        if producers and transactional_id is None:
            return self._refuse_every_partition(incoming, KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if any(incoming.producer_of_another(transactional_id, producer_id) for producer_id, _ in producers):
            return self._refuse_every_partition(incoming, KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING, PRODUCER_OF_ANOTHER_TRANSACTION)
        # WRITE on the transactional id first, when a batch is transactional (the batches
        # were read once, above).
        checks = [] if not producers else [
            Check(WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id, KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        ]
        decided = self.decide_with(incoming, checks)
        if len(producers) > 1 and decided.forward is not None:
            return self._refuse_every_partition(
                incoming, KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING, "Transactional records contained more than one producer ID"
            )
        return decided

    def _refuse_every_partition(self, incoming: Incoming, error: KafkaErrorCode, message: str | None = None) -> RequestAuthorization:
        layout = self.layout
        schema = incoming.response_schema
        entries = tuple(
            layout.topic_entry(schema, topic, getattr(topic, "name", None), [
                (index, error, message) for index in layout.partition_indexes(topic)
            ])
            for topic in incoming.body.topic_data
        )
        return incoming.decided(None, [Refusal(None, error, message=message)],
                                lambda _answer: wire.build(schema, **{layout.response_topics: entries}))


class FetchRule(TopicPartitionRule):
    """READ on each topic from a consumer, CLUSTER_ACTION from a follower; and never a fetch
    session (KIP-227) upstream. A session lets a broker serve the partitions of earlier
    requests that this one does not name, which Kafka authorizes again on every fetch and a
    broker behind the gateway would not: every Fetch goes on sessionless (session id 0, epoch
    -1, nothing to forget), so the broker answers exactly the partitions authorized here, and
    answers session id 0, which makes clients go on with full fetches."""

    def __init__(self):
        super().__init__(FETCH_LAYOUT, _fetch_operation, checks=_fetch_checks)

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        decided = super().decide(incoming)
        forward = decided.forward
        if forward is None or not hasattr(forward, "session_id"):
            return decided
        if (forward.session_id, forward.session_epoch, forward.forgotten_topics_data) == (0, -1, ()):
            return decided
        return evolve(decided, forward=replace(forward, session_id=0, session_epoch=-1, forgotten_topics_data=()))


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


class DeleteRecordsRule(TopicPartitionRule):
    """DELETE on each topic; Kafka's internal topics never lose records to a client
    (ReplicaManager.deleteRecordsOnLocalLog)."""

    def invalid_partitions(self, incoming: Incoming, topic, name: str):
        if name not in INTERNAL_TOPICS:
            return []
        internal = Invalid(KafkaErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {name}")
        return [(partition, internal) for partition in topic.partitions]


def _offset_for_leader_epoch_operation(incoming: Incoming) -> AclOperation | None:
    """CLUSTER_ACTION on the cluster (a broker's request; not logged when refused) authorizes
    every topic; anyone else needs DESCRIBE on each (KIP-320's consumers)."""
    return None if incoming.cluster_allows(CLUSTER_ACTION, log_if_denied=False) else DESCRIBE


RULES: dict[ApiKey, Rule] = {
    ApiKey.PRODUCE: ProduceRule(),
    ApiKey.FETCH: FetchRule(),
    ApiKey.LIST_OFFSETS: TopicPartitionRule(LIST_OFFSETS_LAYOUT, DESCRIBE),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: TopicPartitionRule(OFFSET_FOR_LEADER_EPOCH_LAYOUT, _offset_for_leader_epoch_operation),
    ApiKey.DELETE_RECORDS: DeleteRecordsRule(DELETE_RECORDS_LAYOUT, DELETE),
    ApiKey.DESCRIBE_PRODUCERS: TopicPartitionRule(DESCRIBE_PRODUCERS_LAYOUT, READ),
}

