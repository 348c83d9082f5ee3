"""Producer ids and transactions (KafkaApis' handleInitProducerIdRequest,
handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest, handleEndTxnRequest,
handleTxnOffsetCommitRequest, handleWriteTxnMarkersRequest, handleDescribeTransactionsRequest,
handleListTransactionsRequest).
"""

from __future__ import annotations

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType
from kafkasec.context import AuthorizationResult
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import (
    CLUSTER,
    Incoming,
    Refusal,
    RequestAuthorization,
    ResponseMaker,
    Rule,
    error_fields,
    replace,
    whole_error_response,
)
from kafkasec.protocol.request_rules.groups import GROUP_AUTHORIZATION_FAILED
from kafkasec.protocol.request_rules.items import ItemLayout, ItemRule, WholeRule
from kafkasec.protocol.request_rules.topics import Check, TopicLayout, TopicPartitionRule, no_checks
from kafkasec.protocol.request_rules.validation import INTERNAL_TOPICS

READ, WRITE, DESCRIBE = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
CLUSTER_AUTHORIZATION_FAILED = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


def transactional_id_check(incoming: Incoming):
    body = incoming.body
    incoming.check_producer(body.transactional_id, body.producer_id)
    yield Check(WRITE, TRANSACTIONAL_ID, body.transactional_id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def transaction_and_group_checks(incoming: Incoming):
    """WRITE on the transactional id, then READ on the group (AddOffsetsToTxn, TxnOffsetCommit)."""
    yield from transactional_id_check(incoming)
    yield Check(READ, ResourceType.GROUP, incoming.body.group_id, GROUP_AUTHORIZATION_FAILED)


class InitProducerIdRule(Rule):
    """With a transactional id: WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Without
    (an idempotent producer): IDEMPOTENT_WRITE on the cluster, or, since KIP-679, WRITE on
    any topic (CLUSTER_AUTHORIZATION_FAILED)."""

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        transactional_id = incoming.body.transactional_id
        if transactional_id is not None:
            incoming.check_producer(transactional_id, getattr(incoming.body, "producer_id", -1))
            # KIP-939's two-phase commit needs TWO_PHASE_COMMIT on the id as well, an operation
            # kafkasec's ACLs cannot grant yet: refused, as Kafka refuses it to whom has no such ACL.
            two_phase = getattr(incoming.body, "enable2_pc", False)
            if not two_phase and incoming.allows((WRITE, TRANSACTIONAL_ID, transactional_id)):
                return incoming.allowed_whole()
            error, resource = TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ResourcePattern(TRANSACTIONAL_ID, transactional_id)
        else:
            if incoming.cluster_allows(AclOperation.IDEMPOTENT_WRITE, log_if_denied=False):
                return incoming.allowed_whole()
            by_type = incoming.security.authorize_by_resource_type(incoming.context, WRITE, ResourceType.TOPIC)
            if by_type is AuthorizationResult.ALLOWED:
                return incoming.allowed_whole()
            error, resource = CLUSTER_AUTHORIZATION_FAILED, CLUSTER
        return incoming.refused_whole(error, resource, whole_error_response(incoming, error))


class AddPartitionsToTxnRule(Rule):
    """v0-3 (a producer): WRITE on the transactional id (every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic: if any is refused, nothing
    is added: the refused partitions get TOPIC_AUTHORIZATION_FAILED and the others
    OPERATION_NOT_ATTEMPTED. v4+ is sent by brokers only and needs CLUSTER_ACTION."""

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        if hasattr(body, "transactions"):
            if incoming.cluster_allows(AclOperation.CLUSTER_ACTION):
                return incoming.allowed_whole()
            return incoming.refused_whole(
                CLUSTER_AUTHORIZATION_FAILED, CLUSTER, whole_error_response(incoming, CLUSTER_AUTHORIZATION_FAILED)
            )
        transactional_id = body.v3_and_below_transactional_id
        incoming.check_producer(transactional_id, body.v3_and_below_producer_id)
        topics = body.v3_and_below_topics
        verdicts = incoming.ask(
            [(WRITE, TRANSACTIONAL_ID, transactional_id)] + [(WRITE, ResourceType.TOPIC, topic.name) for topic in topics]
        )
        if not verdicts.allowed(WRITE, TRANSACTIONAL_ID, transactional_id):
            errors = {topic.name: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for topic in topics}
            refusals = [Refusal(None, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ResourcePattern(TRANSACTIONAL_ID, transactional_id))]
        else:
            # Kafka never authorizes its internal topics here, whatever the ACLs.
            refused = {
                topic.name for topic in topics
                if topic.name in INTERNAL_TOPICS or not verdicts.allowed(WRITE, ResourceType.TOPIC, topic.name)
            }
            if not refused:
                return incoming.allowed_whole()
            errors = {
                topic.name: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED if topic.name in refused else KafkaErrorCode.OPERATION_NOT_ATTEMPTED
                for topic in topics
            }
            refusals = [
                Refusal(name, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, ResourcePattern(ResourceType.TOPIC, name)) for name in sorted(refused)
            ]
        schema = incoming.response_schema
        topic_type = wire.item_type(schema, "results_by_topic_v3_and_below")
        partition_type = wire.item_type(topic_type, "results_by_partition")
        entries = tuple(
            wire.build(topic_type, name=topic.name, results_by_partition=tuple(
                wire.build(partition_type, partition_index=index, partition_error_code=wire.error_code(errors[topic.name]))
                for index in topic.partitions
            ))
            for topic in topics
        )

        def respond(_answer):
            return wire.build(schema, results_by_topic_v3_and_below=entries)

        return incoming.decided(None, refusals, respond)


TXN_OFFSET_COMMIT_LAYOUT = TopicLayout("topics", "partitions", "partition_index", "topics", "partitions", "partition_index")


class WriteTxnMarkersRule(Rule):
    """ALTER on the cluster, else CLUSTER_ACTION (a transaction coordinator's request);
    refused, every partition of every marker gets CLUSTER_AUTHORIZATION_FAILED."""

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        alter = (AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
        action = (AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        if incoming.allows(alter, log_if_denied=False) or incoming.allows(action):
            return incoming.allowed_whole()
        schema = incoming.response_schema
        marker_type = wire.item_type(schema, "markers")
        topic_type = wire.item_type(marker_type, "topics")
        partition_type = wire.item_type(topic_type, "partitions")
        markers = tuple(
            wire.build(marker_type, producer_id=marker.producer_id, topics=tuple(
                wire.build(topic_type, name=topic.name, partitions=tuple(
                    wire.build(partition_type, partition_index=index, **error_fields(partition_type, CLUSTER_AUTHORIZATION_FAILED))
                    for index in topic.partition_indexes
                ))
                for topic in marker.topics
            ))
            for marker in incoming.body.markers
        )
        return incoming.refused_whole(CLUSTER_AUTHORIZATION_FAILED, CLUSTER, lambda _answer: wire.build(schema, markers=markers))


class DescribeTransactionsRule(ItemRule):
    """DESCRIBE on each transactional id; a described transaction shows only the topics the
    caller may DESCRIBE."""

    def __init__(self):
        layout = ItemLayout("transactional_ids", "transaction_states", response_key="transactional_id")
        super().__init__(layout, TRANSACTIONAL_ID, DESCRIBE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        decided = super().decide(incoming)
        merge = decided.respond

        def visible(state):
            described = incoming.described(ResourceType.TOPIC, (topic.topic for topic in state.topics))
            return replace(state, topics=tuple(topic for topic in state.topics if topic.topic in described))

        def respond(answer):
            response = answer if merge is None else merge(answer)
            return replace(response, transaction_states=tuple(visible(state) for state in response.transaction_states))

        return incoming.decided(decided.forward, decided.refusals, respond)


def _list_transactions_filter(incoming: Incoming) -> ResponseMaker:
    """Only the transactions whose id the caller may DESCRIBE."""

    def respond(answer):
        described = incoming.described(TRANSACTIONAL_ID, (state.transactional_id for state in answer.transaction_states))
        return replace(answer, transaction_states=tuple(
            state for state in answer.transaction_states if state.transactional_id in described
        ))

    return respond


RULES: dict[ApiKey, Rule] = {
    ApiKey.INIT_PRODUCER_ID: InitProducerIdRule(),
    ApiKey.ADD_PARTITIONS_TO_TXN: AddPartitionsToTxnRule(),
    ApiKey.ADD_OFFSETS_TO_TXN: WholeRule(transaction_and_group_checks),
    ApiKey.END_TXN: WholeRule(transactional_id_check),
    ApiKey.TXN_OFFSET_COMMIT: TopicPartitionRule(TXN_OFFSET_COMMIT_LAYOUT, READ, checks=transaction_and_group_checks),
    ApiKey.WRITE_TXN_MARKERS: WriteTxnMarkersRule(),
    ApiKey.DESCRIBE_TRANSACTIONS: DescribeTransactionsRule(),
    ApiKey.LIST_TRANSACTIONS: WholeRule(no_checks, respond=_list_transactions_filter),
}
