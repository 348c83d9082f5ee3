"""The embedded durable state: one SQLite file (stdlib ``sqlite3``).

Every change is one transaction in WAL mode with ``synchronous=FULL``: a process killed at any
instant leaves either the whole change or none of it, and a committed change survives power
loss. One connection, guarded by a lock, serves every thread of the process.
"""

from __future__ import annotations

import json
import os
import sqlite3
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

BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another process's write lock before it fails with a StateError."""

# What each schema version adds, in order; a file at version N gets the steps after N, so a
# state file written by an older kafkasec opens and keeps everything it had.
_MIGRATIONS = (
    """
    CREATE TABLE IF NOT EXISTS acls (
        id TEXT PRIMARY KEY,
        resource_type INTEGER NOT NULL,
        resource_name TEXT NOT NULL,
        pattern_type INTEGER NOT NULL,
        principal TEXT NOT NULL,
        host TEXT NOT NULL,
        operation INTEGER NOT NULL,
        permission_type INTEGER NOT NULL
    );
    """,
    # SCRAM credentials as Kafka keeps them: never a password or a salted password.
    """
    CREATE TABLE scram_credentials (
        user TEXT NOT NULL,
        mechanism INTEGER NOT NULL,
        salt BLOB NOT NULL,
        stored_key BLOB NOT NULL,
        server_key BLOB NOT NULL,
        iterations INTEGER NOT NULL,
        PRIMARY KEY (user, mechanism)
    );
    """,
    # Delegation tokens without their HMACs: those are recomputed from the secret that key_id
    # names. renewers is a JSON list of "Type:name" texts.
    """
    CREATE TABLE delegation_tokens (
        token_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token_requester TEXT NOT NULL,
        renewers TEXT NOT NULL,
        issue_timestamp INTEGER NOT NULL,
        expiry_timestamp INTEGER NOT NULL,
        max_timestamp INTEGER NOT NULL,
        key_id TEXT NOT NULL
    );
    """,
)
SCHEMA_VERSION = len(_MIGRATIONS)


class StateError(Exception):
    """The state file cannot be used: unreadable, from a newer kafkasec, or with a bad row."""


class SqliteStateStore:
    """ACLs, SCRAM credentials and delegation tokens in one SQLite file at ``path``."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        try:
            self._connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=FULL")
            self._connection.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_MS)}")
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise StateError(f"cannot open the state file {self.path!r}: {error}") from error

    def _migrate(self) -> None:
        (version,) = self._connection.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StateError(
                f"the state file {self.path!r} has schema version {version}; this kafkasec reads "
                f"up to {SCHEMA_VERSION}: upgrade kafkasec"
            )
        with self._transaction() as cursor:
            # Read again under the write lock: another process may have migrated meanwhile.
            (version,) = cursor.execute("PRAGMA user_version").fetchone()
            for step in _MIGRATIONS[version:]:
                cursor.execute(step)
            cursor.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _transaction(self):
        return _Transaction(self._connection, self._lock)

    def load_acls(self) -> list[tuple[str, AclBinding]]:
        with self._lock:
            rows = self._connection.execute(
                "SELECT id, resource_type, resource_name, pattern_type, principal, host, operation, "
                "permission_type FROM acls"
            ).fetchall()
        acls = []
        for acl_id, *fields in rows:
            try:
                acls.append((acl_id, AclBinding.of(*fields)))
            except (ValueError, TypeError) as error:
                raise StateError(f"ACL {acl_id!r} in {self.path!r} cannot be read: {error}") from error
        return acls

    def apply_acl_changes(self, added: Sequence[tuple[str, AclBinding]], removed: Iterable[str]) -> None:
        """Remove then add, in one transaction: all of it or none of it reaches the file."""
        rows = [
            (
                acl_id,
                int(b.pattern.resource_type),
                b.pattern.name,
                int(b.pattern.pattern_type),
                b.entry.principal,
                b.entry.host,
                int(b.entry.operation),
                int(b.entry.permission_type),
            )
            for acl_id, b in added
        ]
        with self._transaction() as cursor:
            cursor.executemany("DELETE FROM acls WHERE id = ?", [(acl_id,) for acl_id in removed])
            cursor.executemany("INSERT INTO acls VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    # ---------------------------------------------------------------- SCRAM credentials

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        with self._lock:
            row = self._connection.execute(
                "SELECT salt, stored_key, server_key, iterations FROM scram_credentials "
                "WHERE user = ? AND mechanism = ?",
                (user, int(mechanism)),
            ).fetchone()
        return None if row is None else self._credential(user, mechanism, row)

    def describe_scram_credentials(self, users: Iterable[str] | None = None) -> list[UserScramCredentialsDescription]:
        with self._lock:
            rows = self._connection.execute(
                "SELECT user, mechanism, iterations FROM scram_credentials ORDER BY user, mechanism"
            ).fetchall()
        wanted = None if users is None else set(users)
        infos: dict[str, list[tuple[int, int]]] = {}
        for user, mechanism, iterations in rows:
            if wanted is None or user in wanted:
                infos.setdefault(user, []).append((mechanism, iterations))
        descriptions = []
        for user, pairs in infos.items():
            try:
                descriptions.append(UserScramCredentialsDescription(user, [_info(m, i) for m, i in pairs]))
            except (ValueError, TypeError) as error:
                raise StateError(f"the SCRAM credentials of {user!r} in {self.path!r} cannot be read: {error}") from error
        return descriptions

    def apply_scram_changes(
        self,
        upserts: Sequence[tuple[str, ScramMechanism, ScramCredential]],
        deletions: Iterable[tuple[str, ScramMechanism]],
    ) -> None:
        """Delete then upsert, in one transaction: all of it or none of it reaches the file."""
        rows = [
            (user, int(mechanism), c.salt, c.stored_key, c.server_key, c.iterations)
            for user, mechanism, c in upserts
        ]
        with self._transaction() as cursor:
            cursor.executemany(
                "DELETE FROM scram_credentials WHERE user = ? AND mechanism = ?",
                [(user, int(mechanism)) for user, mechanism in deletions],
            )
            cursor.executemany("INSERT OR REPLACE INTO scram_credentials VALUES (?, ?, ?, ?, ?, ?)", rows)

    def _credential(self, user: str, mechanism: ScramMechanism, row) -> ScramCredential:
        try:
            return ScramCredential(*row)
        except (ValueError, TypeError) as error:
            raise StateError(
                f"the {mechanism.mechanism_name} credential of {user!r} in {self.path!r} cannot be read: {error}"
            ) from error

    # ---------------------------------------------------------------- delegation tokens

    def load_delegation_tokens(self) -> list[tuple[TokenInformation, str]]:
        with self._lock:
            rows = self._connection.execute(
                "SELECT token_id, owner, token_requester, renewers, issue_timestamp, expiry_timestamp, "
                "max_timestamp, key_id FROM delegation_tokens"
            ).fetchall()
        tokens = []
        for token_id, owner, requester, renewers, issued, expiry, maximum, token_key_id in rows:
            try:
                info = TokenInformation(token_id, owner, requester, json.loads(renewers), issued, expiry, maximum)
            except (ValueError, TypeError) as error:
                raise StateError(f"delegation token {token_id!r} in {self.path!r} cannot be read: {error}") from error
            tokens.append((info, token_key_id))
        return tokens

    def apply_delegation_token_changes(
        self, upserts: Sequence[tuple[TokenInformation, str]], removed_ids: Iterable[str]
    ) -> None:
        """Remove then upsert, in one transaction: all of it or none of it reaches the file."""
        rows = [
            (
                info.token_id,
                str(info.owner),
                str(info.token_requester),
                json.dumps([str(renewer) for renewer in info.renewers]),
                info.issue_timestamp,
                info.expiry_timestamp,
                info.max_timestamp,
                token_key_id,
            )
            for info, token_key_id in upserts
        ]
        with self._transaction() as cursor:
            cursor.executemany("DELETE FROM delegation_tokens WHERE token_id = ?", [(i,) for i in removed_ids])
            cursor.executemany("INSERT OR REPLACE INTO delegation_tokens VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _info(mechanism: int, iterations: int) -> ScramCredentialInfo:
    if mechanism == ScramMechanism.UNKNOWN:
        raise ValueError("the mechanism is UNKNOWN (0)")
    return ScramCredentialInfo(mechanism, iterations)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any error, under the store's lock."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.Lock):
        self._connection = connection
        self._lock = lock

    def __enter__(self) -> sqlite3.Cursor:
        self._lock.acquire()
        try:
            self._connection.execute("BEGIN IMMEDIATE")
        except BaseException as error:
            self._lock.release()
            if isinstance(error, sqlite3.Error):
                raise StateError(f"the state file could not be written: {error}") from error
            raise
        return self._connection.cursor()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._connection.execute("ROLLBACK" if exc_type else "COMMIT")
        except sqlite3.Error as error:
            raise StateError(f"the state file could not be written: {error}") from error
        finally:
            self._lock.release()
        if isinstance(exc, sqlite3.Error):
            # Rolled back above; say so in the store's own terms.
            raise StateError(f"the state file could not be written: {exc}") from exc
