"""Where answers tell clients to connect, and how the gateway puts its own addresses there.

Metadata and DescribeCluster list the brokers, FindCoordinator names a coordinator, and from
KIP-951 on Produce, Fetch, ShareFetch and ShareAcknowledge may name a partition's new leader
(``node_endpoints``). A client connects to what they say, so a gateway that passed them on
unchanged would send its clients around it, to the unprotected broker. :func:`brokers_in`
reads the upstream's (node id -> host, port); :func:`with_addresses` writes the gateway's.
Sans I/O.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules.core import field_names, replace

Address = tuple[str, int]

# API -> where it names brokers: (the array holding them, or None for the response itself,
# and the field with the node id). Each entry also has ``host`` and ``port``.
_BROKER_FIELDS: dict[int, tuple[tuple[str | None, str], ...]] = {
    ApiKey.METADATA: (("brokers", "node_id"),),
    ApiKey.DESCRIBE_CLUSTER: (("brokers", "broker_id"),),
    ApiKey.FIND_COORDINATOR: ((None, "node_id"), ("coordinators", "node_id")),
    ApiKey.PRODUCE: (("node_endpoints", "node_id"),),
    ApiKey.FETCH: (("node_endpoints", "node_id"),),
    ApiKey.SHARE_FETCH: (("node_endpoints", "node_id"),),
    ApiKey.SHARE_ACKNOWLEDGE: (("node_endpoints", "node_id"),),
}

_TAGGED: dict[int, int] = {ApiKey.PRODUCE: 0, ApiKey.FETCH: 0}
"""The APIs that name brokers only in a top-level tagged field (KIP-951's node_endpoints, tag 0):
an answer without it names none, and passes unread."""


def names_brokers(api_key: int, version: int, frame: bytes | bytearray) -> bool:
    """Whether the answer ``frame`` to a request of ``api_key`` v``version`` may name brokers.
    InvalidRequestError if it is not a well-formed answer where that had to be read."""
    if not _may_name_brokers(api_key, version):
        return False
    tag = _TAGGED.get(api_key)
    return tag is None or tag in wire.response_tags(frame, api_key, version)


@functools.lru_cache(maxsize=None)
def _may_name_brokers(api_key: int, version: int) -> bool:
    """Whether the answer's schema at ``version`` has a field that names brokers (a Produce
    before v10 has no node_endpoints: its answer is not walked to look for them)."""
    schema = wire.response_schema(api_key, version)
    return any(field is None or field in field_names(schema) for field, _ in _BROKER_FIELDS.get(api_key, ()))


def _entries(response, field: str | None, id_field: str):
    if field is None:
        return (response,) if id_field in field_names(response.__class__) and "host" in field_names(response.__class__) else ()
    if field not in field_names(response.__class__):
        return ()
    return getattr(response, field) or ()


def brokers_in(api_key: int, response) -> dict[int, Address]:
    """The brokers ``response`` names: node id -> (host, port). A coordinator that was not
    found (node id -1) is not a broker."""
    found: dict[int, Address] = {}
    for field, id_field in _BROKER_FIELDS.get(api_key, ()):
        for entry in _entries(response, field, id_field):
            node_id = int(getattr(entry, id_field))
            if node_id >= 0:
                found[node_id] = (entry.host, int(entry.port))
    return found


def with_addresses(api_key: int, response, addresses: Mapping[int, Address]) -> Any:
    """``response`` with every broker it names at ``addresses[node id]`` instead."""
    for field, id_field in _BROKER_FIELDS.get(api_key, ()):
        if field is None:
            if _entries(response, None, id_field):
                node_id = int(getattr(response, id_field))
                if node_id in addresses:
                    host, port = addresses[node_id]
                    response = replace(response, host=host, port=port)
            continue
        entries = _entries(response, field, id_field)
        if not entries:
            continue
        moved = []
        for entry in entries:
            node_id = int(getattr(entry, id_field))
            if node_id in addresses:
                host, port = addresses[node_id]
                entry = replace(entry, host=host, port=port)
            moved.append(entry)
        response = replace(response, **{field: tuple(moved)})
    return response
