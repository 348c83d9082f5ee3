"""State kept in memory: the same interface as the SQLite store, for tests and throwaway use."""

from __future__ import annotations

import threading
from typing import Iterable, Sequence

from kafkasec.acl import AclBinding
from kafkasec.scram.credentials import (
    ScramCredential,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialsDescription,
)
from kafkasec.tokens.model import TokenInformation


class MemoryStateStore:
    """Nothing survives the process; everything else behaves as :class:`SqliteStateStore`."""

    path = ":memory:"

    def __init__(self):
        self._lock = threading.Lock()
        self._acls: dict[str, AclBinding] = {}
        self._scram: dict[tuple[str, ScramMechanism], ScramCredential] = {}
        self._tokens: dict[str, tuple[TokenInformation, str]] = {}

    def load_acls(self) -> list[tuple[str, AclBinding]]:
        with self._lock:
            return list(self._acls.items())

    def apply_acl_changes(self, added: Sequence[tuple[str, AclBinding]], removed: Iterable[str]) -> None:
        with self._lock:
            acls = dict(self._acls)
            for acl_id in removed:
                acls.pop(acl_id, None)
            for acl_id, binding in added:
                if acl_id in acls:
                    raise ValueError(f"an ACL with id {acl_id!r} is already stored")
                acls[acl_id] = binding
            self._acls = acls

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        with self._lock:
            return self._scram.get((user, mechanism))

    def describe_scram_credentials(self, users: Iterable[str] | None = None) -> list[UserScramCredentialsDescription]:
        wanted = None if users is None else set(users)
        infos: dict[str, list[ScramCredentialInfo]] = {}
        with self._lock:
            for (user, mechanism), credential in sorted(self._scram.items(), key=lambda item: item[0]):
                if wanted is None or user in wanted:
                    infos.setdefault(user, []).append(ScramCredentialInfo(mechanism, credential.iterations))
        return [UserScramCredentialsDescription(user, user_infos) for user, user_infos in infos.items()]

    def apply_scram_changes(
        self,
        upserts: Sequence[tuple[str, ScramMechanism, ScramCredential]],
        deletions: Iterable[tuple[str, ScramMechanism]],
    ) -> None:
        with self._lock:
            credentials = dict(self._scram)
            for key in deletions:
                credentials.pop(key, None)
            for user, mechanism, credential in upserts:
                credentials[(user, mechanism)] = credential
            self._scram = credentials

    def load_delegation_tokens(self) -> list[tuple[TokenInformation, str]]:
        with self._lock:
            return list(self._tokens.values())

    def apply_delegation_token_changes(
        self, upserts: Sequence[tuple[TokenInformation, str]], removed_ids: Iterable[str]
    ) -> None:
        with self._lock:
            tokens = dict(self._tokens)
            for token_id in removed_ids:
                tokens.pop(token_id, None)
            for info, token_key_id in upserts:
                tokens[info.token_id] = (info, token_key_id)
            self._tokens = tokens

    def close(self) -> None:
        pass
