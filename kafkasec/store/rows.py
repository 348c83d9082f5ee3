"""The snapshot tables' rows, shared by the SQL stores: what a record changes in them, and the
snapshot their rows add up to. Each store keeps its own SQL text for the same statements."""

from __future__ import annotations

import json

from kafkasec.acl import AclBinding
from kafkasec.scram.credentials import ScramCredential
from kafkasec.store.base import StateError
from kafkasec.store.records import (
    AccessControlEntryRecord,
    DelegationTokenRecord,
    Record,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    StateSnapshot,
    UserScramCredentialRecord,
)
from kafkasec.tokens.model import TokenInformation

INSERT_ACL, DELETE_ACL = "insert_acl", "delete_acl"
UPSERT_CREDENTIAL, DELETE_CREDENTIAL = "upsert_credential", "delete_credential"
UPSERT_TOKEN, DELETE_TOKEN = "upsert_token", "delete_token"
REMOVALS = (DELETE_ACL, DELETE_CREDENTIAL, DELETE_TOKEN)
"""Statements that must change exactly one row: a removal of nothing is a RecordApplyError."""


def snapshot_row(record: Record) -> tuple[str, tuple]:
    """Which statement applies ``record`` to the snapshot tables, and its parameters in the
    tables' column order."""
    if isinstance(record, AccessControlEntryRecord):
        b = record.binding
        return INSERT_ACL, (record.acl_id, int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type),
                            b.entry.principal, b.entry.host, int(b.entry.operation), int(b.entry.permission_type))
    if isinstance(record, RemoveAccessControlEntryRecord):
        return DELETE_ACL, (record.acl_id,)
    if isinstance(record, UserScramCredentialRecord):
        c = record.credential
        return UPSERT_CREDENTIAL, (record.user, int(record.mechanism), c.salt, c.stored_key, c.server_key, c.iterations)
    if isinstance(record, RemoveUserScramCredentialRecord):
        return DELETE_CREDENTIAL, (record.user, int(record.mechanism))
    if isinstance(record, DelegationTokenRecord):
        info = record.info
        return UPSERT_TOKEN, (info.token_id, str(info.owner), str(info.token_requester),
                              json.dumps([str(renewer) for renewer in info.renewers]), info.issue_timestamp,
                              info.expiry_timestamp, info.max_timestamp, record.key_id)
    if isinstance(record, RemoveDelegationTokenRecord):
        return DELETE_TOKEN, (record.token_id,)
    raise TypeError(f"not a security log record: {record!r}")


def snapshot_from_rows(location: str, offset: int, acl_rows, credential_rows, token_rows) -> StateSnapshot:
    """A StateSnapshot from the rows of the three snapshot tables (shared by the SQL stores);
    StateError naming the row that does not read."""
    acls, credentials, tokens = {}, {}, {}
    for acl_id, *fields in acl_rows:
        try:
            acls[acl_id] = AclBinding.of(*fields)
        except (ValueError, TypeError) as error:
            raise StateError(f"ACL {acl_id!r} in {location!r} cannot be read: {error}") from error
    for user, mechanism, salt, stored_key, server_key, iterations in credential_rows:
        try:
            credential = ScramCredential(bytes(salt), bytes(stored_key), bytes(server_key), iterations)
            record = UserScramCredentialRecord(user, mechanism, credential)
        except (ValueError, TypeError) as error:
            raise StateError(f"the SCRAM credential of {user!r} in {location!r} cannot be read: {error}") from error
        credentials[(record.user, record.mechanism)] = record.credential
    for token_id, owner, requester, renewers, issued, expiry, maximum, token_key_id in token_rows:
        try:
            info = TokenInformation(token_id, owner, requester, json.loads(renewers), issued, expiry, maximum)
        except (ValueError, TypeError) as error:
            raise StateError(f"delegation token {token_id!r} in {location!r} cannot be read: {error}") from error
        tokens[token_id] = (info, token_key_id)
    return StateSnapshot(offset, acls, credentials, tokens)
