"""The SCRAM credentials a node checks logins against, as its security log says.

Kafka's brokers keep every credential in memory (the ScramImage of the metadata log) and a
login never reads the disk. :class:`ScramCredentialCache` is that image: the node's follower
feeds it (:meth:`~ScramCredentialCache.load_snapshot`, :meth:`~ScramCredentialCache.apply_records`)
and logins, describes and the controller's checks read it. Its
:meth:`~ScramCredentialCache.apply_scram_changes` does not change it: it appends records to the
log through the node's writer, and the follower applies them back, here and on every node.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from kafkasec.scram.credentials import (
    ScramCredential,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialsDescription,
)
from kafkasec.store.records import Record, RemoveUserScramCredentialRecord, UserScramCredentialRecord
from kafkasec.store.writer import StateWriter


class ScramCredentialCache:
    """The built-in SCRAM credential store: reads from memory, writes through ``writer``
    (a :class:`~kafkasec.store.writer.StateWriter`)."""

    def __init__(self, writer: StateWriter):
        self._writer = writer
        # Replaced whole on every change: a login's lookup never sees a half-applied batch.
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}

    # ------------------------------------------------------------------ reading

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def has_credential(self, key: tuple[str, ScramMechanism]) -> bool:
        return key in self._credentials

    def describe_scram_credentials(self, users: Iterable[str] | None = None) -> list[UserScramCredentialsDescription]:
        wanted = None if users is None else set(users)
        infos: dict[str, list[ScramCredentialInfo]] = {}
        for (user, mechanism), credential in sorted(self._credentials.items(), key=lambda item: item[0]):
            if wanted is None or user in wanted:
                infos.setdefault(user, []).append(ScramCredentialInfo(mechanism, credential.iterations))
        return [UserScramCredentialsDescription(user, user_infos) for user, user_infos in infos.items()]

    # ------------------------------------------------------------------ writing (through the log)

    def apply_scram_changes(
        self,
        upserts: Sequence[tuple[str, ScramMechanism, ScramCredential]],
        deletions: Iterable[tuple[str, ScramMechanism]],
    ) -> None:
        """Delete then upsert, as records of one write: all of it or none of it. Deleting a
        credential that is not there is no error (the write sees the caught-up state)."""
        with self._writer.writing() as transaction:
            records: list[Record] = [
                RemoveUserScramCredentialRecord(user, mechanism)
                for user, mechanism in dict.fromkeys(deletions)
                if (user, mechanism) in self._credentials
            ]
            records += [UserScramCredentialRecord(user, mechanism, credential) for user, mechanism, credential in upserts]
            transaction.append(records)

    # ------------------------------------------------------------------ the feed (apply side)

    def load_snapshot(self, credentials: Mapping[tuple[str, ScramMechanism], ScramCredential]) -> None:
        self._credentials = dict(credentials)

    def apply_records(
        self, upserts: Sequence[UserScramCredentialRecord], removed: Iterable[tuple[str, ScramMechanism]]
    ) -> None:
        credentials = dict(self._credentials)
        for key in removed:
            del credentials[key]
        for record in upserts:
            credentials[(record.user, record.mechanism)] = record.credential
        self._credentials = credentials


__all__ = ["ScramCredentialCache"]
