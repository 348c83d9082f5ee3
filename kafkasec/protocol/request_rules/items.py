"""Requests authorized whole, and requests of independent items (groups, transactional ids,
topics without partitions, config resources), each answered on its own.

- :class:`WholeRule`: the request's checks in Kafka's order; the first refused one answers the
  whole request with its error in the response's top-level error field (JoinGroup, Heartbeat,
  EndTxn, ElectLeaders ...).
- :class:`ItemRule`: one question per item; the items refused are answered each with the
  rule's error beside the answers to those that went on (DescribeGroups, DeleteGroups,
  DescribeTransactions, CreatePartitions, DescribeConfigs ...).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from attrs import field, frozen

from kafkasec.acl import AclOperation, ResourcePattern, ResourceType
from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.request_rules.core import (
    Incoming,
    Question,
    Refusal,
    RequestAuthorization,
    ResponseMaker,
    Rule,
    error_fields,
    replace,
    without,
)
from kafkasec.protocol.request_rules.topics import Checks, first_refused, no_checks, refused_by
from kafkasec.protocol.request_rules.validation import Invalid


class WholeRule(Rule):
    """A request that goes on whole or not at all: ``checks`` in Kafka's order, the first
    refused one answered with its error. ``respond`` (optional) makes the client's response
    from the upstream's answer when every check passed (a filter of what the caller may see)."""

    def __init__(self, checks: Checks, respond: Callable[[Incoming], ResponseMaker | None] | None = None):
        self.checks = checks
        self.respond = respond

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        checks = list(self.checks(incoming))
        refused = first_refused(checks, incoming.ask(check.question for check in checks)) if checks else None
        if refused is not None:
            return refused_by(incoming, refused)
        respond = None if self.respond is None else self.respond(incoming)
        return incoming.decided(incoming.body, respond=respond)


@frozen
class ItemLayout:
    """Where an API keeps its items: the request's array, and the response's."""

    items: str
    response_items: str
    key: str | None = None
    """The request item's field that names its resource; None when the items are the names."""
    response_key: str | None = None
    """The response entry's field for that name (``copied`` fields are used when None)."""
    copied: tuple[str, ...] = ()
    """Request item fields copied as they are into a refused item's response entry."""
    error_values: Mapping[str, Any] = field(factory=dict)

    def name(self, item) -> str:
        return item if self.key is None else getattr(item, self.key)


class ItemRule(Rule):
    """Kafka's rule for an API of independent items: ``operation`` on each item's resource of
    ``resource_type``; a refused item gets ``error``. Subclasses say otherwise per item by
    overriding :meth:`question` and :meth:`error_for`."""

    def __init__(
        self,
        layout: ItemLayout,
        resource_type: ResourceType,
        operation: AclOperation,
        error: KafkaErrorCode,
        *,
        checks: Checks = no_checks,
        check_error_at_top: bool = False,
        default_messages: bool = False,
    ):
        self.layout = layout
        self.default_messages = default_messages
        """A refused item carries its error's default message (Kafka's ``error.message``)."""
        self.resource_type = resource_type
        self.operation = operation
        self.error = error
        self.checks = checks
        self.check_error_at_top = check_error_at_top
        """A refused check is answered in the response's top-level error field, not on every item."""

    def question(self, incoming: Incoming, item) -> Question | None:
        """What ``item`` needs (None: nothing, it goes on)."""
        return (self.operation, self.resource_type, self.layout.name(item))

    def error_for(self, question: Question) -> KafkaErrorCode:
        return self.error

    def invalid_items(self, incoming: Incoming, items) -> list[tuple[Any, Invalid]]:
        """The items Kafka refuses as malformed before asking any ACL, each with why (config
        resources of an unknown type, given twice ...); none unless an API says otherwise."""
        return []

    def refused_entry(self, response_schema: type, item, error: KafkaErrorCode, message: str | None = None):
        layout = self.layout
        entry_type = wire.item_type(response_schema, layout.response_items)
        values = {name: getattr(item, name) for name in layout.copied}
        if layout.response_key is not None:
            values[layout.response_key] = layout.name(item)
        if message is None and self.default_messages:
            message = error.message
        return wire.build(entry_type, **values, **layout.error_values, **error_fields(entry_type, error, message))

    def decide(self, incoming: Incoming) -> RequestAuthorization:
        layout = self.layout
        items = getattr(incoming.body, layout.items) or ()
        invalid = self.invalid_items(incoming, items)
        if invalid:
            items = without(items, invalid)
        checks = list(self.checks(incoming))
        questions = [self.question(incoming, item) for item in items]
        verdicts = incoming.ask([check.question for check in checks] + [q for q in questions if q is not None])
        refused_check = first_refused(checks, verdicts)
        if refused_check is not None and self.check_error_at_top:
            return refused_by(incoming, refused_check)
        kept: list[Any] = []
        refused: list[tuple[Any, KafkaErrorCode, ResourcePattern | None, str | None]] = []
        # Kafka answers a malformed item once however often it is given (a duplicate's copies).
        refused_as_malformed: list[tuple[Any, KafkaErrorCode, ResourcePattern | None, str | None]] = list({
            (layout.name(item), why): (item, why.error, None, why.message) for item, why in invalid
        }.values())
        for item, question in zip(items, questions):
            if refused_check is not None:
                refused.append((item, refused_check.error, refused_check.resource, None))
            elif question is None or verdicts.allowed(*question):
                kept.append(item)
            else:
                refused.append((item, self.error_for(question), ResourcePattern(question[1], question[2]), None))
        refused = refused_as_malformed + refused
        if not refused:
            return incoming.allowed_whole()
        schema = incoming.response_schema
        entries = tuple(self.refused_entry(schema, item, error, message) for item, error, _, message in refused)
        refusals = [Refusal(layout.name(item), error, resource, message) for item, error, resource, message in refused]
        forward = replace(incoming.body, **{layout.items: tuple(kept)}) if kept else None

        def respond(answer):
            base = wire.build(schema) if answer is None else answer
            return replace(base, **{layout.response_items: (*(getattr(base, layout.response_items) or ()), *entries)})

        return incoming.decided(forward, refusals, respond)
