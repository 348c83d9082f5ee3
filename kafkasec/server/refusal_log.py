"""One log line per refused request, on the logger ``kafkasec.authorizer.logger`` (Kafka's
``kafka.authorizer.logger``), at INFO: who, from where, which request, and each refused item
with its resource and error, as Kafka's authorizer words it ("Principal = User:bob is Denied
... on resource = Topic:LITERAL:orders"). The same facts ride on the record as attributes
(``principal``, ``client_address``, ``request``, ``refusals``) for a JSON log format.

Nothing secret is in it: principals, addresses, API names, resource names and error names.
"""

from __future__ import annotations

import logging

from kafkasec.context import RequestContext
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules import RequestAuthorization

REFUSAL_LOGGER = "kafkasec.authorizer.logger"
MAX_ITEMS_NAMED = 10
"""Refused items named in one line; the rest are counted (a 10,000-partition refusal is one line)."""

log = logging.getLogger(REFUSAL_LOGGER)


def log_refused(context: RequestContext, authorization: RequestAuthorization) -> None:
    """Log ``authorization``'s refusals of the request ``context`` describes (at INFO)."""
    if not log.isEnabledFor(logging.INFO):
        return
    refusals = authorization.refusals
    described = [_describe(refusal) for refusal in refusals[:MAX_ITEMS_NAMED]]
    more = len(refusals) - len(described)
    request = f"{ApiKey(authorization.api_key).title} v{authorization.version}"
    log.info(
        "Principal = %s is Denied from host = %s for request = %s (client id %r, correlation id %d): %s%s",
        context.principal_text, context.client_address, request, context.client_id, context.correlation_id,
        "; ".join(described), f"; and {more} more" if more else "",
        extra={"principal": context.principal_text, "client_address": context.client_address, "request": request,
               "refusals": described + ([f"{more} more"] if more else [])},
    )


def _describe(refusal) -> str:
    resource = refusal.resource
    where = "the request" if refusal.item is None else f"{refusal.item}"
    if resource is not None:
        where = f"resource = {resource.resource_type.camel_name}:{resource.pattern_type.name}:{resource.name}"
        if refusal.item is not None and refusal.item != resource.name:
            where += f" (item {refusal.item})"
    why = refusal.error.name
    if refusal.message:
        why += f": {refusal.message}"
    return f"{where} {why}"
