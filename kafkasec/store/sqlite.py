"""The embedded state: the security log and its snapshot in one SQLite file (stdlib ``sqlite3``).

One host, any number of processes. A write is one ``BEGIN IMMEDIATE`` transaction (so writers
of every process take turns) in WAL mode with ``synchronous=FULL``: a process killed at any
instant leaves either the whole change or none of it, and a committed change survives power
loss. Followers read through their own connection, which a write never blocks, and notice
other processes' commits by ``PRAGMA data_version`` (a read of a shared-memory counter). On
Linux they ask it only when the file or its WAL is written (inotify,
:mod:`kafkasec.store.wakeups`), so an idle follower sleeps; elsewhere they ask every
``poll_interval_ms``. A writer announces each commit once it is visible by touching the WAL's
times, which inotify reports too.

The file holds SCRAM keys and token information: it is created readable by its owner only
(SQLite gives its -wal and -shm files the same permissions).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
import urllib.parse
from typing import Sequence

from kafkasec.store import rows
from kafkasec.store.base import (
    DEFAULT_LOG_RETENTION_RECORDS,
    DEFAULT_WRITE_LOCK_TIMEOUT_MS,
    LogTruncatedError,
    StateBusyError,
    StateError,
    acquire_write_lock,
    check_store_limits,
)
from kafkasec.store.records import Record, RecordApplyError, StateSnapshot, decode_record, encode_record
from kafkasec.store.wakeups import FileChanges, watch_file_changes

DEFAULT_POLL_INTERVAL_MS = 5
"""How often a follower looks for other processes' commits while one is on its way (after a
write to the WAL), or always where the files cannot be watched."""

COMMIT_SETTLE_S = 1.0
"""How long after a write to the state's files a follower keeps looking for the commit it
belongs to. SQLite writes a commit's frames to the WAL, syncs them, and only then publishes the
commit in the shared-memory index (``-shm``, written through a memory map, which inotify does
not report): the write is seen first, the commit a sync later. A kafkasec writer's
announcement (:meth:`SqliteStateStore._announce_commit`) ends the wait at once; the looks are
for writers that make none (an older kafkasec during an upgrade)."""

_SQLITE_BUSY = 5
"""SQLite's result code for a database locked by another connection. Python's sqlite3 names it
(``sqlite3.SQLITE_BUSY``), and gives errors their ``sqlite_errorcode``, only from 3.11 on."""


def _is_busy(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's SQLITE_BUSY: by its code, or on Python 3.10 (no codes on
    errors) by the message SQLite gives that code."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    return code == _SQLITE_BUSY if code is not None else str(error) == "database is locked"

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
    # The security log: the tables above are its snapshot, as of log_offsets.latest. Records
    # older than log_offsets.start have been compacted away.
    """
    CREATE TABLE log (
        offset INTEGER PRIMARY KEY,
        record_type INTEGER NOT NULL,
        payload TEXT NOT NULL,
        checksum INTEGER NOT NULL
    );
    CREATE TABLE log_offsets (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        start INTEGER NOT NULL,
        latest INTEGER NOT NULL
    );
    INSERT INTO log_offsets VALUES (1, 1, 0);
    """,
)
SCHEMA_VERSION = len(_MIGRATIONS)
_OUR_TABLES = frozenset(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", "".join(_MIGRATIONS)))


APPLICATION_ID = 0x6B736563  # "ksec": SQLite's application_id of a kafkasec state file


def _check_is_ours(path: str) -> None:
    """Refuse, before anything writes to it, a SQLite file that another program made: a
    kafkasec state file carries APPLICATION_ID (files of older kafkasec: none, but its tables),
    and an empty database is a new state file."""
    probe = sqlite3.connect(_read_only_uri(path), uri=True)
    try:
        (application_id,) = probe.execute("PRAGMA application_id").fetchone()
        (version,) = probe.execute("PRAGMA user_version").fetchone()
        rows = probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {name for (name,) in rows if not name.startswith("sqlite_")}  # SQLite's own tables aside
    finally:
        probe.close()
    older_kafkasec = application_id == 0 and version >= 1 and tables <= _OUR_TABLES
    if application_id == APPLICATION_ID or not tables or older_kafkasec:
        return
    raise StateError(
        f"{path!r} is a SQLite database of another program (application_id {application_id}, tables "
        f"{', '.join(sorted(tables)[:5])}): not a kafkasec state file, and left untouched"
    )


def _read_only_uri(path: str) -> str:
    """The URI of a connection that cannot write ``path`` and creates no file beside it.

    While a writer is at work its WAL (``-wal``, ``-shm``) exists, and a read-only connection
    reads through it with the usual locks. Without one, SQLite would create a ``-shm`` to read a
    WAL-mode file, so the file is read as immutable instead: there is no writer whose changes
    could be missed.
    """
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    return uri if os.path.exists(path + "-wal") else uri + "&immutable=1"


def _create_private(path: str) -> None:
    """Create ``path`` readable and writable by its owner only, unless it exists."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


class SqliteStateStore:
    """The security log and its snapshot in the SQLite file at ``path``."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
        log_retention_records: int = DEFAULT_LOG_RETENTION_RECORDS,
        write_lock_timeout_ms: int = DEFAULT_WRITE_LOCK_TIMEOUT_MS,
        read_only: bool = False,
    ):
        check_store_limits(log_retention_records=log_retention_records, write_lock_timeout_ms=write_lock_timeout_ms)
        self.write_lock_timeout_ms = write_lock_timeout_ms
        if poll_interval_ms < 1:
            raise ValueError(f"poll_interval_ms must be >= 1, not {poll_interval_ms}")
        self.path = self.location = os.fspath(path)
        # SQLite keeps the -wal beside the file a symbolic link names, not beside the link.
        self._real_path = os.path.realpath(self.path)
        self.poll_interval_ms = poll_interval_ms
        self.log_retention_records = log_retention_records
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._closed = False
        self.read_only = read_only
        try:
            if read_only and not os.path.exists(self.path):
                raise StateError(f"no state file at {self.path}: there is nothing to read")
            if not read_only:
                _create_private(self.path)
            _check_is_ours(self.path)
            self._writer = self._connect()
            self._migrate()
            self._reader = self._connect()
            self._data_version = self._reader.execute("PRAGMA data_version").fetchone()[0]
            # A follower's waits: the inotify watch (opened by the first, since only a follower
            # needs one), until when to keep looking after a write, when a change was last seen.
            self._file_changes: FileChanges | None = None
            self._file_changes_opened = False
            self._settling_until = 0.0
            self._changed_at = float("-inf")
        except (sqlite3.DatabaseError, OSError) as error:
            raise StateError(f"cannot open the state file {self.path!r}: {error}") from error

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return self._connect_read_only()
        connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(f"PRAGMA busy_timeout={int(self.write_lock_timeout_ms)}")
        return connection

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write, and creates no file beside the state file (:func:`_read_only_uri`)."""
        connection = sqlite3.connect(_read_only_uri(self.path), uri=True, check_same_thread=False, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout={int(self.write_lock_timeout_ms)}")
        return connection

    def _migrate(self) -> None:
        (version,) = self._writer.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StateError(
                f"the state file {self.path!r} has schema version {version}; this kafkasec reads "
                f"up to {SCHEMA_VERSION}: upgrade kafkasec"
            )
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            raise StateError(
                f"the state file {self.path!r} has schema version {version}, older than {SCHEMA_VERSION}: "
                "open it once writable to upgrade it"
            )
        with self.write() as transaction:
            cursor = transaction.cursor
            # Read again under the write lock: another process may have migrated meanwhile.
            (version,) = cursor.execute("PRAGMA user_version").fetchone()
            for step in _MIGRATIONS[version:]:
                for statement in step.split(";"):
                    if statement.strip():
                        cursor.execute(statement)
            cursor.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            cursor.execute(f"PRAGMA application_id={APPLICATION_ID}")

    # ------------------------------------------------------------------ writing

    def write(self) -> _SqliteTransaction:
        if self._closed:
            raise StateError(f"the state file {self.path!r} is closed")
        if self.read_only:
            raise StateError(f"the state file {self.path!r} is open read-only: nothing was changed")
        return _SqliteTransaction(self)

    # ------------------------------------------------------------------ reading

    def latest_offset(self) -> int:
        with self._read_lock:
            return self._reader.execute("SELECT latest FROM log_offsets").fetchone()[0]

    def read_log(self, after_offset: int, max_records: int = 1000) -> list[tuple[int, Record]]:
        try:
            with self._read_lock:
                self._reader.execute("BEGIN")
                try:
                    start, latest = self._reader.execute("SELECT start, latest FROM log_offsets").fetchone()
                    rows = self._reader.execute(
                        "SELECT offset, record_type, payload, checksum FROM log WHERE offset > ? "
                        "ORDER BY offset LIMIT ?",
                        (after_offset, max_records),
                    ).fetchall()
                finally:
                    self._reader.execute("COMMIT")
        except sqlite3.Error as error:
            raise StateError(f"the state file {self.path!r} could not be read: {error}") from error
        if after_offset < latest and after_offset + 1 < start:
            raise LogTruncatedError(after_offset, start)
        return [(offset, decode_record(offset, *columns)) for offset, *columns in rows]

    def snapshot(self) -> StateSnapshot:
        try:
            with self._read_lock:
                self._reader.execute("BEGIN")
                try:
                    (latest,) = self._reader.execute("SELECT latest FROM log_offsets").fetchone()
                    acl_rows = self._reader.execute(
                        "SELECT id, resource_type, resource_name, pattern_type, principal, host, operation, "
                        "permission_type FROM acls"
                    ).fetchall()
                    credential_rows = self._reader.execute(
                        "SELECT user, mechanism, salt, stored_key, server_key, iterations FROM scram_credentials"
                    ).fetchall()
                    token_rows = self._reader.execute(
                        "SELECT token_id, owner, token_requester, renewers, issue_timestamp, expiry_timestamp, "
                        "max_timestamp, key_id FROM delegation_tokens"
                    ).fetchall()
                finally:
                    self._reader.execute("COMMIT")
        except sqlite3.Error as error:
            raise StateError(f"the state file {self.path!r} could not be read: {error}") from error
        return rows.snapshot_from_rows(self.path, latest, acl_rows, credential_rows, token_rows)

    def wait_for_change(self, timeout_s: float) -> None:
        """Until another connection commits, ``timeout_s`` passes or the store closes. Between
        looks at ``PRAGMA data_version`` it sleeps on the files' inotify events (for
        COMMIT_SETTLE_S after a write it also looks every ``poll_interval_ms``), or, without
        inotify, ``poll_interval_ms``. It looks no sooner than ``poll_interval_ms`` after the
        last change it saw: a stream of commits is applied in batches, not a wake-up each."""
        deadline = time.monotonic() + timeout_s
        file_changes = self._watched_files()
        poll_s = self.poll_interval_ms / 1000
        time.sleep(max(min(self._changed_at + poll_s, deadline) - time.monotonic(), 0))
        while not self._closed:
            if self._data_version_changed():
                self._changed_at = time.monotonic()
                return
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                return
            if file_changes is None:
                time.sleep(min(poll_s, remaining))
            elif file_changes.wait(min(poll_s, remaining) if now < self._settling_until else remaining):
                self._settling_until = time.monotonic() + COMMIT_SETTLE_S

    def _watched_files(self) -> FileChanges | None:
        """The inotify watch of the state file and its WAL, opened on the first call (before
        the first look at ``data_version`` that it is to follow); None where there is none."""
        with self._read_lock:
            if not self._file_changes_opened and not self._closed:
                self._file_changes_opened = True
                directory, name = os.path.split(self._real_path)
                self._file_changes = watch_file_changes(directory, (name, name + "-wal"))
            return self._file_changes

    def _data_version_changed(self) -> bool:
        """Whether another connection committed since the last look; True as well when the
        file cannot be read, so that the caller's read says why."""
        with self._read_lock:
            try:
                (version,) = self._reader.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error:
                return True
        changed, self._data_version = version != self._data_version, version
        return changed

    def _announce_commit(self) -> None:
        """Tell other processes' followers that a commit is visible: touching the WAL's times is
        reported by inotify (IN_ATTRIB) after the commit, where the WAL's write came before it.
        Best effort: a follower that misses it still finds the commit by looking."""
        try:
            os.utime(self._real_path + "-wal")
        except OSError:
            pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._write_lock, self._read_lock:
            self._writer.close()
            self._reader.close()
            if self._file_changes is not None:
                self._file_changes.close()  # ends a follower's wait


_STATEMENTS = {
    rows.INSERT_ACL: "INSERT INTO acls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    rows.DELETE_ACL: "DELETE FROM acls WHERE id = ?",
    rows.UPSERT_CREDENTIAL: (
        "INSERT INTO scram_credentials VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user, mechanism) DO UPDATE SET "
        "salt = excluded.salt, stored_key = excluded.stored_key, server_key = excluded.server_key, "
        "iterations = excluded.iterations"
    ),
    rows.DELETE_CREDENTIAL: "DELETE FROM scram_credentials WHERE user = ? AND mechanism = ?",
    rows.UPSERT_TOKEN: (
        "INSERT INTO delegation_tokens VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id) DO UPDATE SET "
        "owner = excluded.owner, token_requester = excluded.token_requester, renewers = excluded.renewers, "
        "issue_timestamp = excluded.issue_timestamp, expiry_timestamp = excluded.expiry_timestamp, "
        "max_timestamp = excluded.max_timestamp, key_id = excluded.key_id"
    ),
    rows.DELETE_TOKEN: "DELETE FROM delegation_tokens WHERE token_id = ?",
}
"""The SQL of each snapshot-table statement of :mod:`kafkasec.store.rows`."""




class _SqliteTransaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any error, under the store's lock;
    ``cursor`` is the open transaction's."""

    def __init__(self, store: SqliteStateStore):
        self._store = store
        self._appended = False

    def __enter__(self) -> _SqliteTransaction:
        store = self._store
        acquire_write_lock(store._write_lock, store.write_lock_timeout_ms, store.location)
        try:
            store._writer.execute("BEGIN IMMEDIATE")
        except BaseException as error:
            store._write_lock.release()
            if _is_busy(error):
                raise StateBusyError(
                    f"the state file {store.path!r} could not be written: {error} "
                    f"(another writer held it for {store.write_lock_timeout_ms} ms)"
                ) from error
            if isinstance(error, sqlite3.Error):
                raise StateError(f"the state file {store.path!r} could not be written: {error}") from error
            raise
        self.cursor = store._writer.cursor()
        return self

    def append(self, records: Sequence[Record]) -> int:
        self._appended = True
        cursor = self.cursor
        start, latest = cursor.execute("SELECT start, latest FROM log_offsets").fetchone()
        offset = latest
        try:
            for record in records:
                offset += 1
                statement, parameters = rows.snapshot_row(record)
                cursor.execute(_STATEMENTS[statement], parameters)
                if statement in rows.REMOVALS and cursor.rowcount != 1:
                    raise RecordApplyError(offset, f"{record!r} removes nothing")
                cursor.execute("INSERT INTO log VALUES (?, ?, ?, ?)", (offset, *encode_record(record)))
        except sqlite3.IntegrityError as error:
            raise RecordApplyError(offset, f"{record!r} contradicts the state: {error}") from error
        retention = self._store.log_retention_records
        # Compact in steps of a tenth of the retention, so that not every append deletes.
        if offset - start + 1 > retention + max(retention // 10, 1):
            start = offset - retention + 1
            cursor.execute("DELETE FROM log WHERE offset < ?", (start,))
        cursor.execute("UPDATE log_offsets SET start = ?, latest = ?", (start, offset))
        return offset

    def __exit__(self, exc_type, exc, tb) -> None:
        store = self._store
        try:
            store._writer.execute("ROLLBACK" if exc_type else "COMMIT")
        except sqlite3.Error as error:
            raise StateError(f"the state file {store.path!r} could not be written: {error}") from error
        finally:
            store._write_lock.release()
        if exc_type is None and self._appended:
            store._announce_commit()
        if isinstance(exc, sqlite3.Error):
            # Rolled back above; say so in the store's own terms.
            raise StateError(f"the state file {store.path!r} could not be written: {exc}") from exc


__all__ = ["SqliteStateStore", "StateError"]
