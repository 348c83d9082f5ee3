"""Requests that carry topics and their partitions, authorized per topic (Kafka's
``filterByAuthorized`` over a request's topics).

Produce, Fetch, ListOffsets, OffsetCommit, TxnOffsetCommit, OffsetForLeaderEpoch,
DeleteRecords, OffsetDelete and DescribeProducers all have this shape: an array of topics, each
with an array of partitions, answered by an array of topics, each with its partitions and a
per-partition error code. A :class:`TopicLayout` names the fields; a :class:`TopicPartitionRule`
asks the request's checks (the transactional id, the group) and the operation on each topic in
one call, keeps the topics it may act on, and answers the rest per partition:

- a check refused: every partition gets that check's error (Kafka answers the whole request so);
- a topic named by an id the caller does not know: UNKNOWN_TOPIC_ID (100);
- a topic refused: the rule's error, TOPIC_AUTHORIZATION_FAILED (29) unless said otherwise,
  whether or not the topic exists, so that its existence does not leak.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, Callable, Iterable, Mapping

from attrs import field, frozen

from kafkasec.acl import AclOperation, ResourcePattern, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.request_rules.core import (
    Incoming,
    Question,
    Refusal,
    RequestAuthorization,
    Rule,
    error_fields,
    field_names,
    replace,
    whole_error_response,
    without,
)
from kafkasec.protocol.request_rules.validation import Invalid

TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
UNKNOWN_TOPIC_ID = KafkaErrorCode.UNKNOWN_TOPIC_ID

_NAME_FIELDS = ("name", "topic", "topic_name")


@functools.lru_cache(maxsize=None)
def name_field(entity_type: Any) -> str | None:
    """The field that names a topic in ``entity_type`` (schemas spell it three ways), if any."""
    names = field_names(entity_type)
    return next((name for name in _NAME_FIELDS if name in names), None)


def topic_key_values(item, name: str | None) -> dict[str, Any]:
    """The fields that identify ``item``'s topic, to copy into a response entry for it: its
    name under every spelling and its id (``wire.build`` keeps those the entry has)."""
    values: dict[str, Any] = dict.fromkeys(_NAME_FIELDS, name)
    topic_id = getattr(item, "topic_id", None)
    if topic_id is not None:
        values["topic_id"] = topic_id
    return values


@frozen
class Check:
    """A question the whole request depends on, and the error every item gets if refused."""

    operation: AclOperation
    resource_type: ResourceType
    name: str
    error: KafkaErrorCode

    @property
    def question(self) -> Question:
        return (self.operation, self.resource_type, self.name)

    @property
    def resource(self) -> ResourcePattern:
        return ResourcePattern(self.resource_type, self.name)


Checks = Callable[[Incoming], Iterable[Check]]


def no_checks(incoming: Incoming) -> Iterable[Check]:
    return ()


def refused_by(incoming: Incoming, check: Check) -> RequestAuthorization:
    """The whole request refused by ``check``, its error in the response's top-level field."""
    return incoming.refused_whole(check.error, check.resource, whole_error_response(incoming, check.error))


def first_refused(checks: Iterable[Check], verdicts) -> Check | None:
    """The first check, in Kafka's order, that security refused."""
    return next((check for check in checks if not verdicts.allowed(*check.question)), None)


@frozen
class TopicLayout:
    """Where an API keeps its topics and their partitions, in its request and its response."""

    topics: str
    partitions: str
    partition_index: str
    response_topics: str
    response_partitions: str
    response_partition_index: str
    error_values: Mapping[str, Any] = field(factory=dict)
    """Other fields of a refused partition, as Kafka writes them (Fetch's high watermark -1 ...)."""
    partitions_are_indexes: bool = False
    """The request's partitions are bare int32s, not entries (DescribeProducers' ``partition_indexes``)."""

    def partition_indexes(self, topic) -> list[int]:
        partitions = getattr(topic, self.partitions)
        if self.partitions_are_indexes:
            return list(partitions)
        return [getattr(partition, self.partition_index) for partition in partitions]

    def refused_topic(self, response_schema: type, topic, name: str | None, error: KafkaErrorCode):
        """The response entry of a refused request topic: each of its partitions with ``error``."""
        return self.topic_entry(response_schema, topic, name, [(index, error, None) for index in self.partition_indexes(topic)])

    def topic_entry(self, response_schema: type, topic, name: str | None,
                    partition_errors: Iterable[tuple[int, KafkaErrorCode, str | None]]):
        """The response entry of ``topic`` with these partitions, each (index, error, message)."""
        topic_type = wire.item_type(response_schema, self.response_topics)
        partition_type = wire.item_type(topic_type, self.response_partitions)
        partitions = tuple(
            wire.build(
                partition_type,
                **{self.response_partition_index: index},
                **self.error_values,
                **error_fields(partition_type, error, message),
            )
            for index, error, message in partition_errors
        )
        return wire.build(topic_type, **topic_key_values(topic, name), **{self.response_partitions: partitions})


def topic_name(incoming: Incoming, topic) -> str | None:
    """A request topic's name: the name it carries, or the caller's name for its id (None:
    an id nobody named)."""
    spelled = name_field(topic.__class__)
    if spelled is not None:
        return getattr(topic, spelled)
    return incoming.topic_names.get(topic.topic_id)


class TopicPartitionRule(Rule):
    """Kafka's rule for an API of topics and partitions (see the module's docstring).

    ``operation`` is the operation each topic needs, or a function of the request that says
    (Fetch: READ from a consumer, CLUSTER_ACTION on the cluster from a follower). ``checks``
    lists the request's own questions in Kafka's order.
    """

    def __init__(
        self,
        layout: TopicLayout,
        operation: AclOperation | Callable[[Incoming], AclOperation | None],
        *,
        checks: Checks = no_checks,
        error: KafkaErrorCode = TOPIC_AUTHORIZATION_FAILED,
        check_error_at_top: bool = False,
    ):
        self.layout = layout
        self.operation = operation
        self.checks = checks
        self.error = error
        self.check_error_at_top = check_error_at_top
        """A refused check is answered in the response's top-level error field (OffsetDelete,
        ShareFetch), not on every partition."""

    def invalid_partitions(self, incoming: Incoming, topic, name: str) -> list[tuple[Any, Invalid]]:
        """The partitions of an authorized ``topic`` that Kafka refuses as malformed, each with
        why (a Produce's records); none unless an API says otherwise."""
        return []

    def topic_operation(self, incoming: Incoming) -> AclOperation | None:
        """What each topic needs; None: nothing beyond the checks (a follower's Fetch)."""
        return self.operation(incoming) if callable(self.operation) else self.operation

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        return self.decide_with(incoming, list(self.checks(incoming)))

    def decide_with(self, incoming: Incoming, checks: list[Check]) -> RequestAuthorization:
        """:meth:`decide`, with the request's checks given (a rule that read what they depend
        on already, a Produce's batches, need not read it twice)."""
        layout = self.layout
        topics = getattr(incoming.body, layout.topics)
        names = [topic_name(incoming, topic) for topic in topics]
        operation = self.topic_operation(incoming)
        verdicts = incoming.ask(
            [check.question for check in checks]
            + [(operation, ResourceType.TOPIC, name) for name in names if name is not None and operation is not None]
        )
        refused_check = first_refused(checks, verdicts)
        if refused_check is not None and (self.check_error_at_top or not topics):
            # With no topic to carry the error, the request is still refused whole (an
            # OffsetCommit of no topics to a group the caller may not READ goes nowhere).
            return refused_by(incoming, refused_check)
        kept: list[Any] = []
        refused: list[tuple[Any, str | None, KafkaErrorCode]] = []
        unknown_ids: set[uuid.UUID] = set()
        invalid: list[tuple[Any, str, list[tuple[Any, Invalid]]]] = []  # (topic, name, its malformed partitions)
        for topic, name in zip(topics, names):
            if refused_check is not None:
                refused.append((topic, name, refused_check.error))
            elif name is None:
                unknown_ids.add(topic.topic_id)
                refused.append((topic, name, UNKNOWN_TOPIC_ID))
            elif operation is None or verdicts.allowed(operation, ResourceType.TOPIC, name):
                malformed = self.invalid_partitions(incoming, topic, name)
                if malformed:
                    invalid.append((topic, name, malformed))
                    topic = replace(topic, **{layout.partitions: without(getattr(topic, layout.partitions), malformed)})
                if getattr(topic, layout.partitions):
                    kept.append(topic)
            else:
                refused.append((topic, name, self.error))
        if not refused and not invalid:
            return incoming.allowed_whole()
        refusals = [
            Refusal(
                name,
                error,
                refused_check.resource if refused_check is not None
                else None if name is None else ResourcePattern(ResourceType.TOPIC, name),
            )
            for _, name, error in refused
        ]
        refusals += [
            Refusal((name, getattr(partition, layout.partition_index)), why.error, message=why.message)
            for _, name, malformed in invalid for partition, why in malformed
        ]
        forward = replace(incoming.body, **{layout.topics: tuple(kept)}) if kept and refused_check is None else None
        schema = incoming.response_schema
        entries = tuple(layout.refused_topic(schema, topic, name, error) for topic, name, error in refused)
        entries += tuple(
            layout.topic_entry(schema, topic, name, [
                # Kafka's partition answers carry the error alone (a PartitionResponse of Errors).
                (getattr(partition, layout.partition_index), why.error, None) for partition, why in malformed
            ])
            for topic, name, malformed in invalid
        )

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, **{layout.response_topics: (*getattr(base, layout.response_topics), *entries)})

        return incoming.decided(forward, refusals, respond, unknown_ids)

