"""The topics and consumer groups an endpoint describes: a small, fixed, in-memory catalogue.

kafkasec serves security, not data. Metadata, DescribeGroups and FindCoordinator still need
something to describe, so the endpoint is handed a :class:`Catalogue`, in code or as JSON::

    {"topics": [{"name": "orders", "partitions": 3}],
     "groups": [{"group_id": "billing", "members": [{"member_id": "m-1", "client_id": "app"}]}]}

Every partition is led by the endpoint's own node. A topic's id is derived from its name unless
given, so that it stays the same across restarts, as a real topic's does.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Iterable, Mapping

from attrs import field, frozen, validators

MAX_TOPIC_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_ID_NAMESPACE = uuid.UUID("6f1d6a52-3c38-4cf1-9d4e-6b6c61666b61")


def topic_name_problem(name: str) -> str | None:
    """Why Kafka's ``Topic.validate`` refuses ``name``, or None when it is a legal topic name."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def _legal_topic_name(instance, attribute, value):
    problem = topic_name_problem(value)
    if problem is not None:
        raise ValueError(problem)


def _topic_id(topic: Topic) -> uuid.UUID:
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, topic.name)


@frozen
class Topic:
    name: str = field(validator=[validators.instance_of(str), _legal_topic_name])
    partitions: int = field(default=1, validator=[validators.instance_of(int), validators.ge(1)])
    topic_id: uuid.UUID = field(converter=lambda value: value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))

    @topic_id.default
    def _default_topic_id(self) -> uuid.UUID:
        return _topic_id(self)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@frozen
class GroupMember:
    member_id: str = field(validator=validators.instance_of(str))
    client_id: str = field(default="", validator=validators.instance_of(str))
    client_host: str = field(default="/127.0.0.1", validator=validators.instance_of(str))
    group_instance_id: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))


def _entry(value, entry_type: type):
    """A catalogue entry given as an instance or as its keyword arguments."""
    return value if isinstance(value, entry_type) else entry_type(**value)


def _members(values: Iterable) -> tuple[GroupMember, ...]:
    return tuple(_entry(value, GroupMember) for value in values)


@frozen
class Group:
    """A classic consumer group as DescribeGroups shows it."""

    group_id: str = field(validator=validators.and_(validators.instance_of(str), validators.min_len(1)))
    state: str = field(default="Stable", validator=validators.instance_of(str))
    protocol_type: str = field(default="consumer", validator=validators.instance_of(str))
    protocol: str = field(default="range", validator=validators.instance_of(str))
    members: tuple[GroupMember, ...] = field(default=(), converter=_members)


def _index(values: Iterable, entry_type: type, key: str) -> dict:
    """Catalogue entries (instances or keyword mappings) by ``key``; each key once."""
    entries = [_entry(value, entry_type) for value in values]
    by_key = {getattr(entry, key): entry for entry in entries}
    if len(by_key) != len(entries):
        raise ValueError(f"a catalogue names each {entry_type.__name__.lower()} once")
    return by_key


@frozen
class Catalogue:
    """Topics by name and groups by id; build it from lists with :meth:`of` or from JSON."""

    topics: Mapping[str, Topic] = field(factory=dict)
    groups: Mapping[str, Group] = field(factory=dict)
    topics_by_id: Mapping[uuid.UUID, Topic] = field(init=False, repr=False, eq=False)
    """The same topics by topic id (Metadata v12+ may name topics by id)."""

    @topics_by_id.default
    def _index_topic_ids(self) -> Mapping[uuid.UUID, Topic]:
        by_id = {topic.topic_id: topic for topic in self.topics.values()}
        if len(by_id) != len(self.topics):
            raise ValueError("a catalogue gives each topic its own topic_id")
        return by_id

    @classmethod
    def of(cls, topics: Iterable[Topic | Mapping] = (), groups: Iterable[Group | Mapping] = ()) -> Catalogue:
        return cls(_index(topics, Topic, "name"), _index(groups, Group, "group_id"))

    @classmethod
    def from_json(cls, text: str) -> Catalogue:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"a catalogue is JSON: {error}") from None
        if not isinstance(document, dict) or set(document) - {"topics", "groups"}:
            raise ValueError('a catalogue is a JSON object with "topics" and "groups" lists')
        try:
            return cls.of(document.get("topics", ()), document.get("groups", ()))
        except TypeError as error:
            raise ValueError(f"a catalogue entry has a wrong field: {error}") from None

    @classmethod
    def from_file(cls, path: str) -> Catalogue:
        with open(path, encoding="utf-8") as file:
            return cls.from_json(file.read())


@frozen
class Node:
    """A node as clients see it: its id and the address of the listener they came in by."""

    node_id: int = field(validator=[validators.instance_of(int), validators.ge(-1)])
    host: str = field(validator=validators.instance_of(str))
    port: int = field(validator=[validators.instance_of(int), validators.ge(-1)])
    rack: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))


NO_NODE = Node(-1, "", -1)
"""Kafka's ``Node.noNode()``: where a refused FindCoordinator points."""
