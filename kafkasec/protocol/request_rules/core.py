"""The shape every request rule shares: one batched question to security, and what comes of it.

A rule reads a decoded request, asks :class:`~kafkasec.KafkaSecurity` about every resource the
request touches in **one** call (:meth:`Incoming.ask`), and answers a
:class:`RequestAuthorization`: the part of the request that may go on (the request itself when
all of it may, so a gateway can pass its bytes untouched), the items refused with Kafka's error
codes, and how to make the client's response from the answer to the part that went on.

Nothing here does I/O: a Python broker calls :func:`~kafkasec.protocol.request_rules.authorize_request`
and hands ``forward`` to its own request handler; the gateway sends it upstream.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from typing import Any, Callable, Iterable, Mapping, Sequence

from attrs import field, frozen

from kafkasec.acl import CLUSTER_NAME, AclOperation, ResourcePattern, ResourceType, operations_to_bitfield
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

Question = tuple[AclOperation, ResourceType, str]
"""(operation, resource type, resource name): one thing a rule asks security."""

ResponseMaker = Callable[[Any], Any]
"""The answer to the forwarded part (None when nothing was forwarded) -> the client's response."""

ZERO_UUID = uuid.UUID(int=0)
PRODUCER_OF_ANOTHER_TRANSACTION = "The producer id was given to another transactional id"
ALLOWED = AuthorizationResult.ALLOWED


@frozen
class Refusal:
    """One item of a request that does not go on, and the error Kafka answers for it.

    ``item`` names it as the response does (a topic name, ``(topic, partition)``, a group id,
    a transactional id; None for the whole request); ``resource`` is the resource whose ACLs
    refused it (None when the refusal is not about an ACL: an unknown topic id, or an item
    Kafka refuses as malformed, whose ``message`` says why).
    """

    item: Any
    error: KafkaErrorCode
    resource: ResourcePattern | None = None
    message: str | None = None
    """Why, when Kafka says more than the error's name (a malformed item's refusal)."""


@frozen
class RequestAuthorization:
    """What security decided about one request, and how to answer it.

    - ``forward``: the request to pass on: ``request`` itself when every item is authorized
      (:attr:`unchanged`; a gateway sends the client's bytes as they came), a copy holding the
      authorized items, or None when nothing goes on.
    - ``refusals``: the items refused, each with Kafka's error code.
    - :meth:`response`: the client's response, made from the answer to ``forward``: the
      refused items are added in Kafka's shape (and, for the APIs that list what exists, the
      answer is filtered to what the caller may see).
    - ``unknown_topic_ids``: topic ids the caller's topic names did not know. Such items are
      refused UNKNOWN_TOPIC_ID, as Kafka does; a gateway that can learn names (a Metadata
      request upstream) learns them and asks again.
    - ``unknown_topic_names``: topic names whose existence decides the answer and that the
      caller's topic names did not hold, or must hold fresh (DeleteTopics tells a caller who
      may DESCRIBE but not DELETE a topic whether it exists; Metadata v1-v3 would create a
      missing topic): answered as the topic names say; a gateway learns and asks again.
    """

    api_key: ApiKey
    version: int
    request: Any = field(repr=False)
    forward: Any = field(repr=False)
    refusals: tuple[Refusal, ...] = ()
    unknown_topic_ids: frozenset[uuid.UUID] = frozenset()
    respond: ResponseMaker | None = field(default=None, repr=False, eq=False)
    """None: the answer to ``forward`` is the client's response as it is."""
    unknown_topic_names: frozenset[str] = frozenset()

    @property
    def needs_topic_names(self) -> bool:
        """The answer depends on topics the caller's topic names did not hold."""
        return bool(self.unknown_topic_ids or self.unknown_topic_names)

    @property
    def unchanged(self) -> bool:
        """The whole request goes on as the client sent it."""
        return self.forward is self.request

    @property
    def passes_response(self) -> bool:
        """The answer to ``forward`` goes back to the client unchanged (its bytes may pass)."""
        return self.respond is None and self.forward is not None

    def response(self, answer: Any = None):
        """The client's response, from ``answer``: the response to ``forward`` (None, and
        not needed, when nothing was forwarded)."""
        if self.forward is None:
            if answer is not None:
                raise ValueError("nothing was forwarded, so there is no answer to merge")
        elif answer is None:
            raise ValueError(f"the forwarded {self.api_key.title} request needs its answer to make the response")
        if self.respond is None:
            return answer
        return self.respond(answer)


@frozen
class Incoming:
    """A request as a rule reads it: who sent it, its body and version, and the topic names
    the caller knows by id (for the versions that name topics by id)."""

    security: Any = field(repr=False)
    context: RequestContext
    api_key: ApiKey
    version: int
    body: Any = field(repr=False)
    topic_names: Mapping[uuid.UUID, str] = field(factory=dict, repr=False)
    producer_ids: Mapping[int, str] = field(factory=dict, repr=False)
    """Producer id -> the transactional id the broker gave it (InitProducerId's answers)."""

    def producer_of_another(self, transactional_id: str | None, producer_id: int) -> bool:
        """Whether the broker gave ``producer_id`` to a transactional id other than this one."""
        bound = self.producer_ids.get(producer_id)
        return bound is not None and bound != transactional_id

    def check_producer(self, transactional_id: str | None, producer_id: int) -> None:
        """A producer id the broker gave another transactional id may not act in this one's
        transaction: INVALID_PRODUCER_ID_MAPPING for the whole request, as Kafka's transaction
        coordinator answers it (a broker behind may not check, KIP-890)."""
        if self.producer_of_another(transactional_id, producer_id):
            raise KafkaError.for_code(KafkaErrorCode.INVALID_PRODUCER_ID_MAPPING, PRODUCER_OF_ANOTHER_TRANSACTION)

    @property
    def response_schema(self) -> type:
        return wire.response_schema(self.api_key, self.version)

    def ask(self, questions: Iterable[Question], *, log_if_denied: bool = True) -> Verdicts:
        """Security's answers to ``questions`` in one call; a question asked for several items
        is asked once, with their number as its reference count (Kafka's filterByAuthorized)."""
        counts: dict[Question, int] = {}
        for question in questions:  # a dict, not a Counter: this runs for every request
            counts[question] = counts.get(question, 0) + 1
        actions = [action(*question, count, log_if_denied) for question, count in counts.items()]
        results = self.security.authorize(self.context, actions) if actions else []
        return Verdicts({question: result is ALLOWED for question, result in zip(counts, results)})

    def allows(self, question: Question, *, log_if_denied: bool = True) -> bool:
        """One question asked alone (the checks Kafka makes apart, often unlogged when refused)."""
        return self.ask([question], log_if_denied=log_if_denied).allowed(*question)

    def cluster_allows(self, operation: AclOperation, *, log_if_denied: bool = True) -> bool:
        return self.allows((operation, ResourceType.CLUSTER, CLUSTER_NAME), log_if_denied=log_if_denied)

    def described(self, resource_type: ResourceType, names: Iterable[str | None]) -> set[str]:
        """Which of ``names`` the caller may DESCRIBE: what an answer listing things shows,
        asked without logging refusals, as Kafka asks it for listings."""
        named = {name for name in names if name is not None}
        verdicts = self.ask([(AclOperation.DESCRIBE, resource_type, name) for name in named], log_if_denied=False)
        return {name for name in named if verdicts.allowed(AclOperation.DESCRIBE, resource_type, name)}

    def operation_bits(self, resource_type: ResourceType, names: Sequence[str]) -> list[int]:
        """KIP-430's bitfield of each named resource, from our ACLs (the broker behind knows
        nothing of them), asked of the authorizer in one batch."""
        patterns = [ResourcePattern(resource_type, name) for name in names]
        return [operations_to_bitfield(ops) for ops in self.security.authorized_operations_many(self.context, patterns)]

    def cluster_operations(self) -> int:
        """KIP-430's cluster bitfield: ours, and 0 for a caller without DESCRIBE on the cluster."""
        if not self.cluster_allows(AclOperation.DESCRIBE):
            return 0
        return operations_to_bitfield(self.security.authorized_operations(self.context, CLUSTER))

    def decided(self, forward, refusals=(), respond: ResponseMaker | None = None, unknown_topic_ids=frozenset(),
                unknown_topic_names=frozenset()) -> RequestAuthorization:
        return RequestAuthorization(
            self.api_key, self.version, self.body, forward, tuple(refusals), frozenset(unknown_topic_ids), respond,
            frozenset(unknown_topic_names),
        )

    def allowed_whole(self) -> RequestAuthorization:
        return RequestAuthorization(self.api_key, self.version, self.body, self.body)

    def refused_whole(self, error: KafkaErrorCode, resource: ResourcePattern | None, respond: ResponseMaker) -> RequestAuthorization:
        return self.decided(None, [Refusal(None, error, resource)], respond)


@functools.lru_cache(maxsize=65_536)
def action(operation: AclOperation, resource_type: ResourceType, name: str, count: int, log_if_denied: bool) -> Action:
    """The Action of a question, kept: a gateway asks about the same few topics request after
    request, and building (validating) an Action costs more than answering it."""
    return Action(operation, ResourcePattern(resource_type, name), resource_reference_count=count, log_if_denied=log_if_denied)


class Verdicts:
    """The answers of one batched call, looked up by question."""

    __slots__ = ("_allowed",)

    def __init__(self, allowed: dict[Question, bool]):
        self._allowed = allowed

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self._allowed[(operation, resource_type, name)]


class Rule:
    """Kafka's rule for one API: :meth:`decide` answers a request of it."""

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        raise NotImplementedError


# ---------------------------------------------------------------------- building responses


@functools.lru_cache(maxsize=None)
def field_names(entity_type: Any) -> frozenset[str]:
    """The field names of a kio class (cached: rules ask per item)."""
    return frozenset(f.name for f in dataclasses.fields(entity_type))


def replace(entity, **values):
    """``entity`` with ``values`` (kio entities are frozen dataclasses)."""
    return dataclasses.replace(entity, **values)


def without(items, refused) -> tuple:
    """``items`` less those of ``refused`` ((item, why) pairs), by identity: request items are
    frozen values, and two equal copies may be answered apart."""
    gone = {id(item) for item, _ in refused}
    return tuple(item for item in items if id(item) not in gone)


def error_fields(entity_type: type, error: KafkaErrorCode, message: str | None = None) -> dict[str, Any]:
    """``error_code=error`` (and ``error_message=message`` when given) for the fields
    ``entity_type`` has, else nothing."""
    names = field_names(entity_type)
    fields: dict[str, Any] = {"error_code": wire.error_code(error)} if "error_code" in names else {}
    if message is not None and "error_message" in names:
        fields["error_message"] = message
    return fields


def whole_error_response(incoming: Incoming, error: KafkaErrorCode) -> ResponseMaker:
    """A response carrying ``error`` in its top-level error field (the APIs whose error
    response has one, as Kafka's getErrorResponse writes it)."""
    schema = incoming.response_schema

    def respond(_answer) -> Any:
        return wire.build(schema, **error_fields(schema, error))

    return respond


CLUSTER = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
