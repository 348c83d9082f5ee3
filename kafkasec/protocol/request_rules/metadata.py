"""Metadata and DescribeTopicPartitions: what a caller may know of topics (KafkaApis'
handleTopicMetadataRequest and DescribeTopicPartitionsRequestHandler).

The request always goes on (its answer carries the brokers and the cluster a client needs);
what comes back is cut to what the caller may DESCRIBE:

- a topic named and refused is answered TOPIC_AUTHORIZATION_FAILED (29) before its existence is
  looked at, so that nothing leaks; a topic named by an id nobody knows, UNKNOWN_TOPIC_ID (100);
- a request for every topic is answered with the topics the caller may DESCRIBE, refusals not
  logged (a listing is not an attempt); a request naming topics (none included) is answered
  with those only, whatever the broker behind adds;
- a topic that does not exist is created only for a caller with CREATE on the cluster or on the
  topic: without it for some topic named, the request goes on with ``allow_auto_topic_creation``
  false (the broker then answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does for that caller);
- KIP-430 operations, when asked for, are ours (the broker behind knows nothing of our ACLs).
"""

from __future__ import annotations

from kafkasec.acl import AclOperation, ResourcePattern, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import (
    ZERO_UUID,
    Incoming,
    Refusal,
    RequestAuthorization,
    Rule,
    error_fields,
    replace,
)
from kafkasec.protocol.request_rules.topics import topic_name

DESCRIBE, CREATE = AclOperation.DESCRIBE, AclOperation.CREATE
TOPIC = ResourceType.TOPIC
TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED


class TopicListingRule(Rule):
    """Metadata (``topics`` None, or empty at v0: every topic) and DescribeTopicPartitions
    (``topics`` empty: every topic)."""

    def __init__(self, *, always_operations: bool):
        self.always_operations = always_operations

    def lists_everything(self, incoming: Incoming) -> bool:
        topics = incoming.body.topics
        return topics is None or (not topics and (incoming.version == 0 or incoming.api_key == ApiKey.DESCRIBE_TOPIC_PARTITIONS))

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        everything = self.lists_everything(incoming)
        requested = () if everything else body.topics
        names = [topic_name(incoming, topic) for topic in requested]
        questions = [(DESCRIBE, TOPIC, name) for name in names if name is not None]
        creating = getattr(body, "allow_auto_topic_creation", False) and not everything
        if creating:
            questions += [(CREATE, TOPIC, name) for name in names if name is not None]
        verdicts = incoming.ask(questions)
        kept, refused = [], []
        for topic, name in zip(requested, names):
            if name is not None and verdicts.allowed(DESCRIBE, TOPIC, name):
                kept.append(topic)
            else:
                refused.append((topic, name))
        forward = body
        if refused:
            forward = replace(forward, topics=tuple(kept))
        not_creatable: set[str] = set()
        if creating and kept and not incoming.cluster_allows(CREATE):
            kept_names = [name for name in (topic_name(incoming, t) for t in kept) if name is not None]
            not_creatable = {name for name in kept_names if not verdicts.allowed(CREATE, TOPIC, name)}
            if not_creatable:
                forward = replace(forward, allow_auto_topic_creation=False)
        wants_operations = self.always_operations or getattr(body, "include_topic_authorized_operations", False)
        wants_cluster_operations = getattr(body, "include_cluster_authorized_operations", False)
        schema = incoming.response_schema
        topic_type = wire.item_type(schema, "topics")
        # A topic named by id is answered with its id and no name: ids are not secret, names are.
        entries = tuple(
            wire.build(
                topic_type, name=getattr(topic, "name", name), topic_id=getattr(topic, "topic_id", None) or ZERO_UUID,
                **error_fields(topic_type, TOPIC_AUTHORIZATION_FAILED if name is not None else KafkaErrorCode.UNKNOWN_TOPIC_ID),
            )
            for topic, name in refused
        )
        refusals = [
            Refusal(name, TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, name)) if name is not None
            else Refusal(topic.topic_id, KafkaErrorCode.UNKNOWN_TOPIC_ID)
            for topic, name in refused
        ]
        unknown_ids = {topic.topic_id for topic, name in refused if name is None}
        cluster_bits = incoming.cluster_operations() if wants_cluster_operations else None

        def respond(answer):
            topics = answer.topics
            if everything:
                described = incoming.described(TOPIC, (t.name for t in topics))
                topics = tuple(t for t in topics if t.name in described)
            else:
                # Only what was asked, whatever the broker adds: a broker that answers an empty
                # list with every topic (Tansu does; Kafka answers none) must not list them here.
                asked = {topic_name(incoming, t) for t in kept}
                topics = tuple(t for t in topics if t.name in asked)
            if not_creatable:
                # Kafka creates a missing topic only for a caller with CREATE, and refuses it
                # to anyone else: the broker's "unknown" is that refusal.
                missing = KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics = tuple(
                    replace(t, topic_id=ZERO_UUID, partitions=(), **error_fields(type(t), TOPIC_AUTHORIZATION_FAILED))
                    if t.name in not_creatable and t.error_code == missing else t
                    for t in topics
                )
            if wants_operations:
                names = [t.name for t in topics if t.error_code == 0]
                bits = dict(zip(names, incoming.operation_bits(TOPIC, names)))
                topics = tuple(replace(t, topic_authorized_operations=bits[t.name]) if t.name in bits else t for t in topics)
            response = replace(answer, topics=(*topics, *entries))
            if cluster_bits is not None:
                response = replace(response, cluster_authorized_operations=cluster_bits)
            return response

        return incoming.decided(forward, refusals, respond, unknown_ids)


RULES: dict[ApiKey, Rule] = {
    ApiKey.METADATA: TopicListingRule(always_operations=False),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: TopicListingRule(always_operations=True),
}
