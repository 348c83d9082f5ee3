"""Consumer, share and streams groups and their offsets (KafkaApis' group handlers:
handleOffsetCommitRequest, handleOffsetFetchRequest, handleFindCoordinatorRequest,
handleJoinGroupRequest and friends, the KIP-848 ConsumerGroup*, KIP-932 ShareGroup* and KIP-1071
StreamsGroup* handlers).
"""

from __future__ import annotations

from typing import Any

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType
from kafkasec.errors import InvalidRequestError, KafkaError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import (
    Incoming,
    Refusal,
    RequestAuthorization,
    ResponseMaker,
    Rule,
    error_fields,
    field_names,
    replace,
)
from kafkasec.protocol.request_rules.items import ItemLayout, ItemRule, WholeRule
from kafkasec.protocol.request_rules.topics import Check, TopicLayout, TopicPartitionRule, no_checks, topic_name
from kafkasec.protocol.request_rules.validation import Invalid

READ, DESCRIBE, DELETE = AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE
GROUP, TOPIC = ResourceType.GROUP, ResourceType.TOPIC
GROUP_AUTHORIZATION_FAILED = KafkaErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED


def group_check(operation: AclOperation, field: str = "group_id"):
    """The checks of a request about one group: ``operation`` on the group it names."""

    def checks(incoming: Incoming):
        yield Check(operation, GROUP, getattr(incoming.body, field), GROUP_AUTHORIZATION_FAILED)

    return checks


def with_authorized_operations(incoming: Incoming, entries, resource_type: ResourceType, key: str):
    """``entries`` with KIP-430's ``authorized_operations`` filled for each named resource, when
    the request asked for them (the upstream knows nothing of our ACLs)."""
    if not getattr(incoming.body, "include_authorized_operations", False):
        return entries
    bits = incoming.operation_bits(resource_type, [getattr(entry, key) for entry in entries])
    return tuple(
        replace(entry, authorized_operations=operation_bits) if entry.error_code == 0 else entry
        for entry, operation_bits in zip(entries, bits)
    )


def _assigned_topics(group) -> set[str]:
    """The topics a KIP-848 or KIP-932 group's members are assigned, now and as a target."""
    names = set()
    for member in group.members:
        for assignment in (getattr(member, "assignment", None), getattr(member, "target_assignment", None)):
            for topic in getattr(assignment, "topic_partitions", None) or ():
                names.add(topic.topic_name)
    return names


def _topology_topics(group) -> set[str]:
    """The topics a KIP-1071 streams group's topology reads and writes."""
    names: set[str] = set()
    topology = getattr(group, "topology", None)
    for subtopology in getattr(topology, "subtopologies", None) or ():
        names.update(subtopology.source_topics)
        names.update(subtopology.repartition_sink_topics)
        names.update(info.name for info in subtopology.state_changelog_topics)
        names.update(info.name for info in subtopology.repartition_source_topics)
    return names


HIDDEN_TOPICS_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."


class DescribeGroupsRule(ItemRule):
    """DESCRIBE on each group; the groups described get our KIP-430 operations when asked.

    For the KIP-848, KIP-932 and KIP-1071 groups (``group_topics`` given), a described group
    that uses a topic the caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with
    no members, as Kafka replaces it."""

    def __init__(self, items: str, group_topics=None):
        super().__init__(ItemLayout(items, "groups", response_key="group_id"), GROUP, DESCRIBE, GROUP_AUTHORIZATION_FAILED)
        self.group_topics = group_topics

    def hide_groups_with_hidden_topics(self, incoming: Incoming, groups):
        if self.group_topics is None:
            return groups
        used = {group.group_id: self.group_topics(group) for group in groups if group.error_code == 0}
        described = incoming.described(TOPIC, set().union(*used.values()) if used else ())
        return tuple(
            replace(group, members=(), error_message=HIDDEN_TOPICS_MESSAGE, **error_fields(type(group), TOPIC_AUTHORIZATION_FAILED))
            if group.group_id in used and not used[group.group_id] <= described else group
            for group in groups
        )

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        decided = super().decide(incoming)
        if self.group_topics is None and not getattr(incoming.body, "include_authorized_operations", False):
            return decided
        merge = decided.respond

        def respond(answer):
            response = answer if merge is None else merge(answer)
            groups = with_authorized_operations(incoming, response.groups, GROUP, "group_id")
            return replace(response, groups=self.hide_groups_with_hidden_topics(incoming, groups))

        return incoming.decided(decided.forward, decided.refusals, respond)


# ---------------------------------------------------------------------- OffsetFetch

OFFSET_FETCH_PARTITION_ERROR = {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""}


def _offset_fetch_layout(response_topics: str = "topics") -> TopicLayout:
    return TopicLayout(
        "topics", "partition_indexes", "", response_topics, "partitions", "partition_index",
        error_values=OFFSET_FETCH_PARTITION_ERROR, partitions_are_indexes=True,
    )


class OffsetFetchRule(Rule):
    """DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for the group); then DESCRIBE on each
    topic named (TOPIC_AUTHORIZATION_FAILED on its partitions); a request for all of a group's
    offsets is answered with the topics the caller may DESCRIBE only. v8+ asks about several
    groups at once, each answered on its own; earlier versions about one."""

    layout = _offset_fetch_layout()

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        batched = "groups" in field_names(body.__class__)
        groups = body.groups if batched else (body,)
        topic_names = [[topic_name(incoming, t) for t in (group.topics or ())] for group in groups]
        verdicts = incoming.ask(
            [(DESCRIBE, GROUP, group.group_id) for group in groups]
            + [(DESCRIBE, TOPIC, name) for names in topic_names for name in names if name is not None]
        )
        schema = incoming.response_schema
        response_group_type = wire.item_type(schema, "groups") if batched else schema
        kept_groups: list[Any] = []
        refused_groups: list[Any] = []  # response entries of whole groups refused
        refused_topics: dict[str, tuple] = {}  # group id -> response entries of its refused topics
        all_topics: set[str] = set()  # groups whose answer lists every topic, to be filtered
        refusals: list[Refusal] = []
        for group, names in zip(groups, topic_names):
            if not verdicts.allowed(DESCRIBE, GROUP, group.group_id):
                refusals.append(Refusal(group.group_id, GROUP_AUTHORIZATION_FAILED, ResourcePattern(GROUP, group.group_id)))
                if not batched:
                    return incoming.refused_whole(GROUP_AUTHORIZATION_FAILED, refusals[0].resource, self._refused_single(incoming))
                refused_groups.append(wire.build(response_group_type, group_id=group.group_id, **error_fields(response_group_type, GROUP_AUTHORIZATION_FAILED)))
                continue
            if group.topics is None:
                all_topics.add(group.group_id)
                kept_groups.append(group)
                continue
            kept, entries = [], []
            for topic, name in zip(group.topics, names):
                if name is not None and verdicts.allowed(DESCRIBE, TOPIC, name):
                    kept.append(topic)
                    continue
                error = TOPIC_AUTHORIZATION_FAILED if name is not None else KafkaErrorCode.UNKNOWN_TOPIC_ID
                refusals.append(Refusal((group.group_id, name), error, None if name is None else ResourcePattern(TOPIC, name)))
                entries.append(self.layout.refused_topic(response_group_type, topic, name, error))
            refused_topics[group.group_id] = tuple(entries)
            kept_groups.append(replace(group, topics=tuple(kept)) if entries else group)
        if not refusals and not all_topics:
            return incoming.allowed_whole()
        if batched:
            forward = replace(body, groups=tuple(kept_groups)) if kept_groups else None
        else:
            forward = kept_groups[0]

        def complete(group_entry):
            group_id = group_entry.group_id if batched else body.group_id
            topics = group_entry.topics
            if group_id in all_topics:
                described = incoming.described(TOPIC, (topic_name(incoming, t) for t in topics))
                topics = tuple(t for t in topics if topic_name(incoming, t) in described)
            return replace(group_entry, topics=(*topics, *refused_topics.get(group_id, ())))

        def respond(answer):
            if not batched:
                return complete(answer)
            base = wire.build(schema) if answer is None else answer
            return replace(base, groups=(*(complete(g) for g in base.groups), *refused_groups))

        return incoming.decided(forward, refusals, respond)

    def _refused_single(self, incoming: Incoming) -> ResponseMaker:
        """v0-7 refused on the group: the top-level error (v2+), and on each named partition."""
        body = incoming.body
        schema = incoming.response_schema
        entries = tuple(
            self.layout.refused_topic(schema, topic, topic_name(incoming, topic), GROUP_AUTHORIZATION_FAILED)
            for topic in (body.topics or ())
        )

        def respond(_answer):
            return wire.build(schema, topics=entries, **error_fields(schema, GROUP_AUTHORIZATION_FAILED))

        return respond


# ---------------------------------------------------------------------- FindCoordinator

_GROUP_KEY, _TRANSACTION_KEY, _SHARE_KEY = 0, 1, 2
COORDINATOR_NOT_FOUND = {"node_id": -1, "host": "", "port": -1}


def coordinator_question(key_type: int, key: str) -> tuple[tuple[AclOperation, ResourceType, str], KafkaErrorCode]:
    """What finding the coordinator of ``key`` needs: DESCRIBE on the group or the
    transactional id; a share-group state key (KIP-932's internal use) CLUSTER_ACTION."""
    if key_type == _TRANSACTION_KEY:
        return (DESCRIBE, ResourceType.TRANSACTIONAL_ID, key), KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if key_type == _SHARE_KEY:
        return (AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME), KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return (DESCRIBE, GROUP, key), GROUP_AUTHORIZATION_FAILED


def _knows_key_type(incoming: Incoming) -> bool:
    """Kafka's ``CoordinatorType.forId`` refuses a key type it does not know (INVALID_REQUEST),
    before any ACL, and KafkaApis.getCoordinator a share key before v6."""
    key_type = getattr(incoming.body, "key_type", _GROUP_KEY)
    return key_type in (_GROUP_KEY, _TRANSACTION_KEY) or (key_type == _SHARE_KEY and incoming.version >= 6)


class FindCoordinatorRule(ItemRule):
    """v4+ asks for several keys (each answered on its own); earlier versions for one key,
    refused whole with no node."""

    def __init__(self):
        layout = ItemLayout("coordinator_keys", "coordinators", response_key="key", error_values=COORDINATOR_NOT_FOUND)
        # Kafka's coordinator entries carry the error's default message, as v0-v3's answer does.
        super().__init__(layout, GROUP, DESCRIBE, GROUP_AUTHORIZATION_FAILED, default_messages=True)

    def question(self, incoming: Incoming, item):
        return coordinator_question(getattr(incoming.body, "key_type", _GROUP_KEY), item)[0]

    def error_for(self, question) -> KafkaErrorCode:
        return {GROUP: GROUP_AUTHORIZATION_FAILED, ResourceType.TRANSACTIONAL_ID: KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}.get(
            question[1], KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
        )

    def invalid_items(self, incoming: Incoming, items):
        if _knows_key_type(incoming):
            return []
        # Kafka's getErrorResponse writes the error's default message, not the exception's.
        invalid = Invalid(KafkaErrorCode.INVALID_REQUEST, KafkaErrorCode.INVALID_REQUEST.message)
        return [(item, invalid) for item in items]

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        body = incoming.body
        if "coordinator_keys" in field_names(body.__class__):
            return super().decide(incoming)
        if not _knows_key_type(incoming):
            return self._refused_whole(incoming, KafkaErrorCode.INVALID_REQUEST, None)
        question, error = coordinator_question(getattr(body, "key_type", _GROUP_KEY), body.key)
        if incoming.ask([question]).allowed(*question):
            return incoming.allowed_whole()
        return self._refused_whole(incoming, error, ResourcePattern(question[1], question[2]))

    @staticmethod
    def _refused_whole(incoming: Incoming, error: KafkaErrorCode, resource: ResourcePattern | None) -> RequestAuthorization:
        """v0-v3's one key refused: no node, and the error's default message."""
        schema = incoming.response_schema

        def respond(_answer):
            return wire.build(schema, **COORDINATOR_NOT_FOUND, **error_fields(schema, error, error.message))

        return incoming.refused_whole(error, resource, respond)



# ---------------------------------------------------------------------- ListGroups


def _list_groups_filter(incoming: Incoming) -> ResponseMaker | None:
    """Every group for a caller with DESCRIBE on the cluster, else those it may DESCRIBE."""
    if incoming.cluster_allows(DESCRIBE):
        return None

    def respond(answer):
        described = incoming.described(GROUP, (group.group_id for group in answer.groups))
        return replace(answer, groups=tuple(g for g in answer.groups if g.group_id in described))

    return respond


# ---------------------------------------------------------------------- heartbeats with subscriptions


REGEX_REFUSED = (
    "kafkasec cannot hold a broker's matches of a regular expression to the topics the member may DESCRIBE, "
    "as Kafka does: subscribe to topics by name"
)


def _refuse_regexes(regexes) -> None:
    """Kafka resolves a subscription's regular expression itself and keeps the matches the
    member may DESCRIBE; a broker behind kafkasec would assign every match, topics the member
    may not see included. So a regex is refused, for the whole request."""
    if any(regexes):
        raise KafkaError.for_code(TOPIC_AUTHORIZATION_FAILED, REGEX_REFUSED)


def subscription_checks(operation: AclOperation):
    """KIP-848 and KIP-932 heartbeats: ``operation`` on the group, then DESCRIBE on each topic
    the member subscribes to by name (TOPIC_AUTHORIZATION_FAILED for the whole request); a
    subscription by regular expression is refused (:func:`_refuse_regexes`)."""

    def checks(incoming: Incoming):
        body = incoming.body
        _refuse_regexes([getattr(body, "subscribed_topic_regex", None)])
        yield Check(operation, GROUP, body.group_id, GROUP_AUTHORIZATION_FAILED)
        for name in getattr(body, "subscribed_topic_names", None) or ():
            yield Check(DESCRIBE, TOPIC, name, TOPIC_AUTHORIZATION_FAILED)

    return checks


def streams_checks(incoming: Incoming):
    """KIP-1071's heartbeat: READ on the group; with a topology, DESCRIBE on every topic it
    reads, writes or keeps state in, and CREATE (on the cluster, else on each) for the
    repartition and changelog topics the broker creates for it (TOPIC_AUTHORIZATION_FAILED
    for the whole request); a source regex is refused (:func:`_refuse_regexes`)."""
    body = incoming.body
    subtopologies = body.topology.subtopologies if body.topology is not None else ()
    _refuse_regexes([regex for sub in subtopologies for regex in sub.source_topic_regex])
    yield Check(READ, GROUP, body.group_id, GROUP_AUTHORIZATION_FAILED)
    created = [info.name for sub in subtopologies for info in (*sub.repartition_source_topics, *sub.state_changelog_topics)]
    used = dict.fromkeys([*(name for sub in subtopologies for name in (*sub.source_topics, *sub.repartition_sink_topics)), *created])
    for name in used:
        yield Check(DESCRIBE, TOPIC, name, TOPIC_AUTHORIZATION_FAILED)
    if created and not incoming.cluster_allows(AclOperation.CREATE, log_if_denied=False):
        for name in dict.fromkeys(created):
            yield Check(AclOperation.CREATE, TOPIC, name, TOPIC_AUTHORIZATION_FAILED)


OFFSET_COMMIT_LAYOUT = TopicLayout("topics", "partitions", "partition_index", "topics", "partitions", "partition_index")
OFFSET_DELETE_LAYOUT = OFFSET_COMMIT_LAYOUT
SHARE_FETCH_LAYOUT = TopicLayout(
    "topics", "partitions", "partition_index", "responses", "partitions", "partition_index", error_values={"records": b""},
)
SHARE_ACKNOWLEDGE_LAYOUT = TopicLayout("topics", "partitions", "partition_index", "responses", "partitions", "partition_index")
ALTER_SHARE_GROUP_OFFSETS_LAYOUT = TopicLayout(
    "topics", "partitions", "partition_index", "responses", "partitions", "partition_index",
)


def _share_group_checks(incoming: Incoming):
    group_id = incoming.body.group_id
    if group_id is None:
        # Nothing to ask an ACL about, and a broker behind would serve the share session of
        # whatever group it takes: refused, as a request Kafka cannot carry out.
        raise InvalidRequestError("A share group request needs a group id")
    yield Check(READ, GROUP, group_id, GROUP_AUTHORIZATION_FAILED)


SHARE_OFFSETS_PARTITION_ERROR = {"start_offset": -1, "lag": -1, "leader_epoch": -1}


class DescribeShareGroupOffsetsRule(Rule):
    """DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for the group); then DESCRIBE on each
    topic named (TOPIC_AUTHORIZATION_FAILED on its partitions, after the group's answer); a
    request for all of a group's topics is answered with those the caller may DESCRIBE."""

    layout = TopicLayout(
        "topics", "partitions", "", "topics", "partitions", "partition_index",
        error_values=SHARE_OFFSETS_PARTITION_ERROR, partitions_are_indexes=True,
    )

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        groups = incoming.body.groups
        named = [t.topic_name for g in groups for t in (g.topics or ())]
        verdicts = incoming.ask([(DESCRIBE, GROUP, g.group_id) for g in groups] + [(DESCRIBE, TOPIC, n) for n in named])
        schema = incoming.response_schema
        group_type = wire.item_type(schema, "groups")
        refused_groups, kept, refusals = [], [], []
        refused_topics: dict[str, tuple] = {}
        for group in groups:
            if not verdicts.allowed(DESCRIBE, GROUP, group.group_id):
                refused_groups.append(wire.build(group_type, group_id=group.group_id, **error_fields(group_type, GROUP_AUTHORIZATION_FAILED)))
                refusals.append(Refusal(group.group_id, GROUP_AUTHORIZATION_FAILED, ResourcePattern(GROUP, group.group_id)))
                continue
            if group.topics is None:
                kept.append(group)
                continue
            allowed = tuple(t for t in group.topics if verdicts.allowed(DESCRIBE, TOPIC, t.topic_name))
            denied = [t for t in group.topics if t not in allowed]
            refused_topics[group.group_id] = tuple(
                self.layout.refused_topic(group_type, t, t.topic_name, TOPIC_AUTHORIZATION_FAILED) for t in denied
            )
            refusals += [Refusal((group.group_id, t.topic_name), TOPIC_AUTHORIZATION_FAILED, ResourcePattern(TOPIC, t.topic_name)) for t in denied]
            kept.append(replace(group, topics=allowed) if denied else group)
        listing = {g.group_id for g in groups if g.topics is None}
        if not refusals and not listing:
            return incoming.allowed_whole()

        def complete(entry):
            topics = entry.topics
            if entry.group_id in listing:
                described = incoming.described(TOPIC, (t.topic_name for t in topics))
                topics = tuple(t for t in topics if t.topic_name in described)
            elif entry.error_code != 0:
                return entry
            return replace(entry, topics=(*topics, *refused_topics.get(entry.group_id, ())))

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, groups=(*(complete(g) for g in base.groups), *refused_groups))

        forward = replace(incoming.body, groups=tuple(kept)) if kept else None
        return incoming.decided(forward, refusals, respond)


RULES: dict[ApiKey, Rule] = {
    ApiKey.OFFSET_COMMIT: TopicPartitionRule(OFFSET_COMMIT_LAYOUT, READ, checks=group_check(READ)),
    ApiKey.OFFSET_FETCH: OffsetFetchRule(),
    ApiKey.FIND_COORDINATOR: FindCoordinatorRule(),
    ApiKey.JOIN_GROUP: WholeRule(group_check(READ)),
    ApiKey.HEARTBEAT: WholeRule(group_check(READ)),
    ApiKey.LEAVE_GROUP: WholeRule(group_check(READ)),
    ApiKey.SYNC_GROUP: WholeRule(group_check(READ)),
    ApiKey.DESCRIBE_GROUPS: DescribeGroupsRule("groups"),
    ApiKey.LIST_GROUPS: WholeRule(no_checks, respond=_list_groups_filter),
    ApiKey.DELETE_GROUPS: ItemRule(
        ItemLayout("groups_names", "results", response_key="group_id"), GROUP, DELETE, GROUP_AUTHORIZATION_FAILED
    ),
    ApiKey.OFFSET_DELETE: TopicPartitionRule(OFFSET_DELETE_LAYOUT, READ, checks=group_check(DELETE), check_error_at_top=True),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: WholeRule(subscription_checks(READ)),
    ApiKey.CONSUMER_GROUP_DESCRIBE: DescribeGroupsRule("group_ids", _assigned_topics),
    ApiKey.SHARE_GROUP_HEARTBEAT: WholeRule(subscription_checks(READ)),
    ApiKey.SHARE_GROUP_DESCRIBE: DescribeGroupsRule("group_ids", _assigned_topics),
    ApiKey.SHARE_FETCH: TopicPartitionRule(SHARE_FETCH_LAYOUT, READ, checks=_share_group_checks, check_error_at_top=True),
    ApiKey.SHARE_ACKNOWLEDGE: TopicPartitionRule(
        SHARE_ACKNOWLEDGE_LAYOUT, READ, checks=_share_group_checks, check_error_at_top=True
    ),
    ApiKey.STREAMS_GROUP_HEARTBEAT: WholeRule(streams_checks),
    ApiKey.STREAMS_GROUP_DESCRIBE: DescribeGroupsRule("group_ids", _topology_topics),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: DescribeShareGroupOffsetsRule(),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: TopicPartitionRule(
        ALTER_SHARE_GROUP_OFFSETS_LAYOUT, READ, checks=group_check(READ), check_error_at_top=True
    ),
    # DELETE on the group (refused whole), then READ on each topic, refused per topic.
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: ItemRule(
        ItemLayout("topics", "responses", key="topic_name", response_key="topic_name"), TOPIC, READ,
        TOPIC_AUTHORIZATION_FAILED, checks=group_check(DELETE), check_error_at_top=True,
    ),
}
