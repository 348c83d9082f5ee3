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
from kafkasec.errors import InvalidRequestError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.catalogue import topic_name_problem
from kafkasec.protocol.request_rules import validation
from kafkasec.protocol.request_rules.core import (
    ZERO_UUID,
    Incoming,
    Refusal,
    RequestAuthorization,
    Rule,
    error_fields,
    field_names,
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
        if incoming.api_key == ApiKey.METADATA:
            problem = validation.metadata_topics_problem(incoming.version, body.topics)
            if problem is not None:
                raise InvalidRequestError(problem)
        else:
            problem = validation.cursor_problem(body.topics, body.cursor)
            if problem is not None:
                return _refused_every_topic(incoming, KafkaErrorCode.INVALID_REQUEST, problem)
        everything = self.lists_everything(incoming)
        by_id = not everything and _names_topics_by_id(incoming)
        if by_id:
            # Kafka goes by the ids alone when any is given, and ignores the names beside them.
            # The broker behind is asked by the names the ids stand for, which every broker
            # answers, so what it answers is what was authorized.
            requested = tuple(topic for topic in body.topics if topic.topic_id not in (None, ZERO_UUID))
            names = [incoming.topic_names.get(topic.topic_id) for topic in requested]
            body = replace(body, topics=tuple(
                replace(topic, name=name, topic_id=ZERO_UUID) for topic, name in zip(requested, names) if name is not None
            ))
        else:
            requested = () if everything else body.topics
            names = [topic_name(incoming, topic) for topic in requested]
        questions = [(DESCRIBE, TOPIC, name) for name in names if name is not None]
        # Before v4 a Metadata request cannot say "do not create": Kafka creates what it names.
        always_creates = incoming.api_key == ApiKey.METADATA and incoming.version < 4
        creating = (always_creates or getattr(body, "allow_auto_topic_creation", False)) and not everything
        if creating:
            questions += [(CREATE, TOPIC, name) for name in names if name is not None]
        verdicts = incoming.ask(questions)
        kept, refused = [], []
        for topic, name in zip(requested, names):
            if name is not None and verdicts.allowed(DESCRIBE, TOPIC, name):
                kept.append((topic, name))
            else:
                refused.append((topic, name))
        asked = {name for _, name in kept}
        forward = body
        if refused:
            forward = replace(forward, topics=tuple(topic for topic in forward.topics if topic.name in asked))
            cursor = getattr(body, "cursor", None)
            if cursor is not None and cursor.topic_name not in asked:
                # DescribeTopicPartitions pages on from its cursor's topic, in name order: one
                # refused here moves the cursor to the next topic asked, or, with none after
                # it, leaves nothing to ask the broker.
                later = sorted(name for name in asked if name > cursor.topic_name)
                forward = replace(forward, cursor=replace(cursor, topic_name=later[0], partition_index=0)) if later else None
        asked_ids = {name: topic.topic_id for topic, name in kept} if by_id else {}
        # A missing topic the caller may not create, or whose name Kafka cannot hold, is not
        # created: the broker's "unknown" is answered as Kafka answers it.
        not_creatable: dict[str, KafkaErrorCode] = {}
        unknown_names: set[str] = set()
        if creating:
            not_creatable = {name: KafkaErrorCode.INVALID_TOPIC_EXCEPTION for name in asked if topic_name_problem(name)}
            if kept and not incoming.cluster_allows(CREATE):
                not_creatable.update(
                    (name, TOPIC_AUTHORIZATION_FAILED) for name in asked
                    if name not in not_creatable and not verdicts.allowed(CREATE, TOPIC, name)
                )
            if not_creatable and always_creates:
                # No flag to turn creation off: a topic the broker does not have (as its topic
                # names tell, which a gateway refreshes first: they are in unknown_topic_names
                # whether held or not, since a topic deleted since would be created again) is
                # not asked of the broker at all.
                existing = set(incoming.topic_names.values())
                unknown_names = set(not_creatable)
                missing_names = {name for name in not_creatable if name not in existing}
                refused += [(topic, name) for topic, name in kept if name in missing_names]
                kept = [(topic, name) for topic, name in kept if name not in missing_names]
                asked -= missing_names
                forward = replace(forward, topics=tuple(topic for topic in forward.topics if topic.name in asked))
            elif not_creatable:
                forward = replace(forward, allow_auto_topic_creation=False)
        wants_operations = self.always_operations or getattr(body, "include_topic_authorized_operations", False)
        wants_cluster_operations = getattr(body, "include_cluster_authorized_operations", False)
        schema = incoming.response_schema
        topic_type = wire.item_type(schema, "topics")
        # A topic named by id is answered with its id and no name: ids are not secret, names are.
        entries = tuple(
            wire.build(
                topic_type, name=None if by_id else getattr(topic, "name", name),
                topic_id=getattr(topic, "topic_id", None) or ZERO_UUID,
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
            if answer is None:
                answer = wire.build(schema)
            topics = answer.topics
            if everything:
                described = incoming.described(TOPIC, (t.name for t in topics))
                topics = tuple(t for t in topics if t.name in described)
            else:
                # Only what was asked, whatever the broker adds: a broker that answers an empty
                # list with every topic (Tansu does; Kafka answers none) must not list them here.
                topics = tuple(t for t in topics if t.name in asked)
            if asked_ids:
                # An id asked for whose name now stands for another topic (deleted and made
                # again), or for none, is unknown, as Kafka answers it.
                answered = {t.name: t for t in topics}
                topics = tuple(
                    answered[name] if name in answered and answered[name].topic_id == topic_id
                    else _unknown_id(topic_type, topic_id)
                    for name, topic_id in asked_ids.items()
                )
            if not_creatable:
                missing = KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics = tuple(
                    replace(t, partitions=(), **_zero_id(type(t)), **error_fields(type(t), not_creatable[t.name]))
                    if t.name in not_creatable and t.error_code == missing else t
                    for t in topics
                )
            if wants_operations:
                described_names = [t.name for t in topics if t.error_code == 0]
                bits = dict(zip(described_names, incoming.operation_bits(TOPIC, described_names)))
                topics = tuple(replace(t, topic_authorized_operations=bits[t.name]) if t.name in bits else t for t in topics)
            response = replace(answer, topics=(*topics, *entries))
            cursor = getattr(answer, "next_cursor", None)
            if cursor is not None and not incoming.described(TOPIC, [cursor.topic_name]):
                # DescribeTopicPartitions pages on from the topic its cursor names: one the caller
                # may not describe ends the listing here rather than show its name.
                response = replace(response, next_cursor=None)
            if cluster_bits is not None:
                response = replace(response, cluster_authorized_operations=cluster_bits)
            return response

        return incoming.decided(forward, refusals, respond, unknown_ids, unknown_names)


def _refused_every_topic(incoming: Incoming, error: KafkaErrorCode, message: str) -> RequestAuthorization:
    """DescribeTopicPartitionsRequest.getErrorResponse: ``error`` on every topic asked about."""
    schema = incoming.response_schema
    topic_type = wire.item_type(schema, "topics")
    entries = tuple(wire.build(topic_type, name=topic.name, **error_fields(topic_type, error)) for topic in incoming.body.topics)
    return incoming.decided(None, [Refusal(None, error, message=message)], lambda _answer: wire.build(schema, topics=entries))


def _names_topics_by_id(incoming: Incoming) -> bool:
    """Metadata v12+ naming some topic by id (DescribeTopicPartitions has no ids)."""
    return incoming.version >= 12 and any(
        getattr(topic, "topic_id", None) not in (None, ZERO_UUID) for topic in incoming.body.topics
    )


def _zero_id(topic_type: type) -> dict:
    """The zero topic id, for the answer versions that carry one (v10+)."""
    return {"topic_id": ZERO_UUID} if "topic_id" in field_names(topic_type) else {}


def _unknown_id(topic_type: type, topic_id):
    return wire.build(topic_type, name=None, topic_id=topic_id, **error_fields(topic_type, KafkaErrorCode.UNKNOWN_TOPIC_ID))


RULES: dict[ApiKey, Rule] = {
    ApiKey.METADATA: TopicListingRule(always_operations=False),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: TopicListingRule(always_operations=True),
}
