"""What a grid or an audit report was made of, so that it can be filed as evidence: two reports
compared, one traced back to the state it read (docs/grids.md, "Provenance").

:meth:`Provenance.of` reads it from what the grid evaluates (a KafkaSecurity, a StandardAuthorizer):
the configuration Kafka's authorizer decides by (``super.users``, ``allow.everyone.if.no.acl.found``,
the plugins that expand principals), where the ACLs came from and how far into the security log,
and a digest of the ACL set that does not depend on ACL ids or order (:func:`acl_digest`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import Iterable

import attrs

import kafkasec
from kafkasec.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kafkasec.authorizer.index import gc_paused
from spark_udfs.rules import standard_authorizer


@attrs.frozen
class Provenance:
    """What was audited and how; ``attrs.asdict`` gives the machine-readable form the report
    and ``kafkasec grid --output`` carry."""

    source: str
    """Where the ACLs were read: ``state file PATH``, ``PostgreSQL URL`` (without its
    password), ``cluster HOST:PORT`` or ``memory``."""
    log_position: int | None
    """The offset of the last security-log record applied when the ACLs were read (None: not
    read from a security log)."""
    super_users: tuple[str, ...]
    allow_everyone_if_no_acl_found: bool
    principal_expansion: tuple[str, ...]
    """The plugins whose principal expansion the grid applied (empty: none)."""
    acl_count: int
    acl_digest: str
    """``sha256:`` and the hex digest of the ACL set (:func:`acl_digest`)."""
    principals: int
    resources: int
    written_at: str
    """When it was read, in UTC (ISO 8601, seconds)."""
    kafkasec_version: str

    @classmethod
    def of(cls, acls, principals: int, resources: int) -> Provenance:
        """The provenance of a grid of ``principals`` x ``resources`` over ``acls`` (a
        KafkaSecurity or StandardAuthorizer): a KafkaSecurity's state store and log position; a
        bare StandardAuthorizer's ACLs are in ``memory``, outside any log. A caller that read
        the ACLs elsewhere (a cluster) says so with ``attrs.evolve``."""
        authorizer = standard_authorizer(acls)
        store = getattr(acls, "store", None)
        expansion = acls.authorization.plugins_expanding_principals() if hasattr(acls, "authorization") else []
        return cls(
            source="memory" if store is None else describe_location(store.location),
            log_position=None if store is None else acls.applied_offset,
            super_users=tuple(sorted(authorizer.super_users)),
            allow_everyone_if_no_acl_found=authorizer.allow_everyone_if_no_acl_found,
            principal_expansion=tuple(expansion),
            acl_count=len(authorizer.index),
            acl_digest=acl_digest([stored.binding for stored in authorizer.index]),
            principals=principals,
            resources=resources,
            written_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            kafkasec_version=kafkasec.__version__,
        )


def describe_location(location: str) -> str:
    """A state store's location (its ``location``: a path, ``:memory:`` or a URL already
    without its password) as a provenance's source."""
    if location == ":memory:":
        return "memory"
    if location.startswith(("postgresql://", "postgres://")):
        return f"PostgreSQL {location}"
    return f"state file {location}"


@gc_paused()  # a row per ACL, acyclic: no collection walking the whole heap while they are made
def acl_digest(bindings: Iterable[AclBinding]) -> str:
    """``sha256:`` and the hex SHA-256 of an ACL set in a canonical form: each ACL as the JSON
    array ``[resource type, pattern type, name, principal, host, operation, permission]``, the
    enums as Kafka's codes (TOPIC is 2, LITERAL 3, READ 3, ALLOW 3...), the arrays sorted and
    written as one JSON array, without spaces, in UTF-8. Equal sets give equal digests, whatever
    their ACL ids and order."""
    rows = []
    for binding in bindings:
        pattern, entry = binding.pattern, binding.entry
        rows.append((_CODES[pattern.resource_type], _CODES[pattern.pattern_type], pattern.name, entry.principal,
                     entry.host, _CODES[entry.operation], _CODES[entry.permission_type]))
    rows.sort()
    return "sha256:" + hashlib.sha256(_CANONICAL_JSON.encode(rows).encode("utf-8")).hexdigest()


# Enum member -> its code as a plain int (a dict lookup; int() of an IntEnum is several times
# slower), for the digest of 10,000 ACLs to cost a few milliseconds.
_CODES = {member: int(member) for enum in (ResourceType, PatternType, AclOperation, AclPermissionType) for member in enum}
_CANONICAL_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
