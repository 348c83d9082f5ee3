"""The records of the security log, and the state they add up to.

Every change to the cluster's security state is one record, as in Kafka's KRaft metadata log:
an ACL created or removed, a SCRAM credential upserted or deleted, a delegation token created
(or renewed, or expired: its new information) or removed. A writer appends records in order; every node
applies them in that order, so every node reaches the same state. The record names are
Kafka's (``AccessControlEntryRecord``, ``UserScramCredentialRecord``, ``DelegationTokenRecord``
and their ``Remove...`` partners).

On disk a record is a type code and a JSON payload, with a CRC-32 of both, so that a record
damaged after it was written is found when read, not applied. :class:`StateSnapshot` is what
the records add up to; :meth:`StateSnapshot.replay` is the reference reading of a log.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Iterable, Mapping, Union

from attrs import field, frozen, validators

from kafkasec.acl import AclBinding
from kafkasec.scram.credentials import ScramCredential, ScramMechanism
from kafkasec.tokens.model import TokenInformation


class CorruptRecordError(Exception):
    """A record of the log cannot be read: a bad checksum, an unknown type or a bad field."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"the security log record at offset {offset} cannot be read: {reason}")
        self.offset = offset
        self.reason = reason


class RecordApplyError(Exception):
    """A record that reads well but cannot be applied to the state it follows (an ACL id that
    already exists, a removal of something absent): the log and the state disagree."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"the security log record at offset {offset} cannot be applied: {reason}")
        self.offset = offset
        self.reason = reason


def _non_empty(instance, attribute, value):
    if not value:
        raise ValueError(f"{attribute.name} must not be empty")


def _mechanism(value) -> ScramMechanism:
    mechanism = ScramMechanism.coerce(value)
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError("a SCRAM credential record needs a known mechanism, not UNKNOWN")
    return mechanism


@frozen
class AccessControlEntryRecord:
    """An ACL created, under its id."""

    acl_id: str = field(validator=[validators.instance_of(str), _non_empty])
    binding: AclBinding = field(validator=validators.instance_of(AclBinding))


@frozen
class RemoveAccessControlEntryRecord:
    """The ACL with this id removed."""

    acl_id: str = field(validator=[validators.instance_of(str), _non_empty])


@frozen
class UserScramCredentialRecord:
    """A user's credential for one mechanism, created or replaced."""

    user: str = field(validator=[validators.instance_of(str), _non_empty])
    mechanism: ScramMechanism = field(converter=_mechanism)
    credential: ScramCredential = field(validator=validators.instance_of(ScramCredential), repr=False)


@frozen
class RemoveUserScramCredentialRecord:
    """A user's credential for one mechanism deleted."""

    user: str = field(validator=[validators.instance_of(str), _non_empty])
    mechanism: ScramMechanism = field(converter=_mechanism)


@frozen
class DelegationTokenRecord:
    """A token created, renewed or given a new expiry: its whole information, and the id of the
    secret that made it (``key_id``: never the secret, never the HMAC)."""

    info: TokenInformation = field(validator=validators.instance_of(TokenInformation))
    key_id: str = field(validator=[validators.instance_of(str), _non_empty])


@frozen
class RemoveDelegationTokenRecord:
    """The token with this id removed (expired, or expired at once by its owner)."""

    token_id: str = field(validator=[validators.instance_of(str), _non_empty])


Record = Union[
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    UserScramCredentialRecord,
    RemoveUserScramCredentialRecord,
    DelegationTokenRecord,
    RemoveDelegationTokenRecord,
]

# The type codes written to disk: never renumber, only add.
RECORD_TYPES: dict[type, int] = {
    AccessControlEntryRecord: 1,
    RemoveAccessControlEntryRecord: 2,
    UserScramCredentialRecord: 3,
    RemoveUserScramCredentialRecord: 4,
    DelegationTokenRecord: 5,
    RemoveDelegationTokenRecord: 6,
}
_TYPES_BY_CODE = {code: cls for cls, code in RECORD_TYPES.items()}


# ---------------------------------------------------------------------- encoding


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _fields(record: Record) -> dict:
    if isinstance(record, AccessControlEntryRecord):
        pattern, entry = record.binding.pattern, record.binding.entry
        return {
            "id": record.acl_id,
            "resource_type": int(pattern.resource_type),
            "name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "principal": entry.principal,
            "host": entry.host,
            "operation": int(entry.operation),
            "permission_type": int(entry.permission_type),
        }
    if isinstance(record, RemoveAccessControlEntryRecord):
        return {"id": record.acl_id}
    if isinstance(record, UserScramCredentialRecord):
        credential = record.credential
        return {
            "user": record.user,
            "mechanism": int(record.mechanism),
            "salt": _b64(credential.salt),
            "stored_key": _b64(credential.stored_key),
            "server_key": _b64(credential.server_key),
            "iterations": credential.iterations,
        }
    if isinstance(record, RemoveUserScramCredentialRecord):
        return {"user": record.user, "mechanism": int(record.mechanism)}
    if isinstance(record, DelegationTokenRecord):
        info = record.info
        return {
            "token_id": info.token_id,
            "owner": str(info.owner),
            "requester": str(info.token_requester),
            "renewers": [str(renewer) for renewer in info.renewers],
            "issue_timestamp": info.issue_timestamp,
            "expiry_timestamp": info.expiry_timestamp,
            "max_timestamp": info.max_timestamp,
            "key_id": record.key_id,
        }
    if isinstance(record, RemoveDelegationTokenRecord):
        return {"token_id": record.token_id}
    raise TypeError(f"not a security log record: {record!r}")


def _record(cls: type, fields: dict) -> Record:
    if cls is AccessControlEntryRecord:
        binding = AclBinding.of(
            fields["resource_type"], fields["name"], fields["pattern_type"], fields["principal"],
            fields["host"], fields["operation"], fields["permission_type"],
        )
        return AccessControlEntryRecord(fields["id"], binding)
    if cls is RemoveAccessControlEntryRecord:
        return RemoveAccessControlEntryRecord(fields["id"])
    if cls is UserScramCredentialRecord:
        credential = ScramCredential(
            base64.b64decode(fields["salt"], validate=True),
            base64.b64decode(fields["stored_key"], validate=True),
            base64.b64decode(fields["server_key"], validate=True),
            fields["iterations"],
        )
        return UserScramCredentialRecord(fields["user"], fields["mechanism"], credential)
    if cls is RemoveUserScramCredentialRecord:
        return RemoveUserScramCredentialRecord(fields["user"], fields["mechanism"])
    if cls is DelegationTokenRecord:
        info = TokenInformation(
            fields["token_id"], fields["owner"], fields["requester"], fields["renewers"],
            fields["issue_timestamp"], fields["expiry_timestamp"], fields["max_timestamp"],
        )
        return DelegationTokenRecord(info, fields["key_id"])
    return RemoveDelegationTokenRecord(fields["token_id"])


def record_checksum(type_code: int, payload: str) -> int:
    """CRC-32 of the type code and the payload, as stored beside them."""
    return zlib.crc32(payload.encode("utf-8"), zlib.crc32(type_code.to_bytes(2, "big")))


def encode_record(record: Record) -> tuple[int, str, int]:
    """``(type_code, payload, checksum)``: the columns of one log row."""
    type_code = RECORD_TYPES.get(type(record))
    if type_code is None:
        raise TypeError(f"not a security log record: {record!r}")
    payload = json.dumps(_fields(record), separators=(",", ":"), sort_keys=True)
    return type_code, payload, record_checksum(type_code, payload)


def decode_record(offset: int, type_code: int, payload: str, checksum: int) -> Record:
    """The record of one log row; CorruptRecordError if anything about it is wrong."""
    if not isinstance(payload, str) or record_checksum(type_code, payload) != checksum:
        raise CorruptRecordError(offset, "its checksum does not match its contents")
    cls = _TYPES_BY_CODE.get(type_code)
    if cls is None:
        raise CorruptRecordError(offset, f"unknown record type {type_code} (written by a newer kafkasec?)")
    try:
        return _record(cls, json.loads(payload))
    except (ValueError, TypeError, KeyError) as error:
        raise CorruptRecordError(offset, f"bad {cls.__name__}: {error!r}") from None


# ---------------------------------------------------------------------- the state records add up to


@frozen
class StateSnapshot:
    """The whole security state as of ``offset`` (the last record it includes; 0: none).

    ``acls`` maps ACL ids to bindings, ``credentials`` maps ``(user, mechanism)`` to a
    ScramCredential, ``tokens`` maps token ids to ``(TokenInformation, key_id)``.
    """

    offset: int = 0
    acls: Mapping[str, AclBinding] = field(factory=dict, repr=lambda acls: f"<{len(acls)} ACLs>")
    credentials: Mapping[tuple[str, ScramMechanism], ScramCredential] = field(
        factory=dict, repr=lambda credentials: f"<{len(credentials)} credentials>"
    )
    tokens: Mapping[str, tuple[TokenInformation, str]] = field(
        factory=dict, repr=lambda tokens: f"<{len(tokens)} tokens>"
    )

    def replay(self, entries: Iterable[tuple[int, Record]]) -> StateSnapshot:
        """This state after ``entries`` (``(offset, record)`` in log order), applied strictly:
        RecordApplyError where the log contradicts the state. The reference reading of a log."""
        acls, credentials, tokens = dict(self.acls), dict(self.credentials), dict(self.tokens)
        offset = self.offset
        for offset, record in entries:
            apply_to_maps(offset, record, acls, credentials, tokens)
        return StateSnapshot(offset, acls, credentials, tokens)


ACLS, CREDENTIALS, TOKENS = 0, 1, 2
"""Which of the three maps of a state (as :func:`apply_to_maps` takes them) a record changes."""


def state_key(record: Record) -> tuple[int, object]:
    """Which map ``record`` changes (ACLS, CREDENTIALS or TOKENS) and under which key."""
    if isinstance(record, (AccessControlEntryRecord, RemoveAccessControlEntryRecord)):
        return ACLS, record.acl_id
    if isinstance(record, (UserScramCredentialRecord, RemoveUserScramCredentialRecord)):
        return CREDENTIALS, (record.user, record.mechanism)
    if isinstance(record, DelegationTokenRecord):
        return TOKENS, record.info.token_id
    if isinstance(record, RemoveDelegationTokenRecord):
        return TOKENS, record.token_id
    raise TypeError(f"not a security log record: {record!r}")


def apply_to_maps(offset: int, record: Record, acls: dict, credentials: dict, tokens: dict) -> None:
    """Apply one record to plain maps, as every store's tables and every follower apply it."""
    if isinstance(record, AccessControlEntryRecord):
        if record.acl_id in acls:
            raise RecordApplyError(offset, f"an ACL with id {record.acl_id!r} already exists")
        acls[record.acl_id] = record.binding
    elif isinstance(record, RemoveAccessControlEntryRecord):
        if acls.pop(record.acl_id, None) is None:
            raise RecordApplyError(offset, f"no ACL with id {record.acl_id!r} to remove")
    elif isinstance(record, UserScramCredentialRecord):
        credentials[(record.user, record.mechanism)] = record.credential
    elif isinstance(record, RemoveUserScramCredentialRecord):
        if credentials.pop((record.user, record.mechanism), None) is None:
            raise RecordApplyError(offset, f"no {record.mechanism.mechanism_name} credential of {record.user!r} to delete")
    elif isinstance(record, DelegationTokenRecord):
        tokens[record.info.token_id] = (record.info, record.key_id)
    elif isinstance(record, RemoveDelegationTokenRecord):
        if tokens.pop(record.token_id, None) is None:
            raise RecordApplyError(offset, f"no delegation token {record.token_id!r} to remove")
    else:
        raise TypeError(f"not a security log record: {record!r}")


__all__ = [
    "ACLS",
    "CREDENTIALS",
    "RECORD_TYPES",
    "TOKENS",
    "AccessControlEntryRecord",
    "CorruptRecordError",
    "DelegationTokenRecord",
    "Record",
    "RecordApplyError",
    "RemoveAccessControlEntryRecord",
    "RemoveDelegationTokenRecord",
    "RemoveUserScramCredentialRecord",
    "StateSnapshot",
    "UserScramCredentialRecord",
    "apply_to_maps",
    "decode_record",
    "encode_record",
    "record_checksum",
    "state_key",
]
