"""The security log and its snapshot in PostgreSQL (psycopg 3): one state for several hosts.

The tables are those of the SQLite store, in the database's current schema. Writers of every
host take turns through a transaction-scoped advisory lock, so offsets are handed out in commit
order with no gaps; each commit sends ``NOTIFY kafkasec_state_log``, which wakes every follower
that ``LISTEN``s: between notifications a follower sleeps on its listener's socket. A listener
that lost its connection listens again and has its follower read the log at once, since what
was committed meanwhile was notified to no one (the follower's own look every few seconds
bounds any other loss). Reads and the listener have connections of their own, so a write in
progress never blocks a follower. A connection the server dropped (a restart) is opened again
on the next call; a write it broke is rolled back by the server and raises StateError here.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
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
from kafkasec.store.wakeups import InterruptibleWait

CHANNEL = "kafkasec_state_log"
# Any constant shared by every kafkasec writer: pg_advisory_xact_lock(key) serializes them.
WRITE_LOCK_KEY = 0x6B61666B61736563  # "kafkasec"
CONNECT_TIMEOUT_S = 5
UNREACHABLE_BACKOFF_S = 0.2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kafkasec_acls (
    id TEXT PRIMARY KEY, resource_type INTEGER NOT NULL, resource_name TEXT NOT NULL,
    pattern_type INTEGER NOT NULL, principal TEXT NOT NULL, host TEXT NOT NULL,
    operation INTEGER NOT NULL, permission_type INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS kafkasec_scram_credentials (
    username TEXT NOT NULL, mechanism INTEGER NOT NULL, salt BYTEA NOT NULL, stored_key BYTEA NOT NULL,
    server_key BYTEA NOT NULL, iterations INTEGER NOT NULL, PRIMARY KEY (username, mechanism)
);
CREATE TABLE IF NOT EXISTS kafkasec_delegation_tokens (
    token_id TEXT PRIMARY KEY, owner TEXT NOT NULL, token_requester TEXT NOT NULL, renewers TEXT NOT NULL,
    issue_timestamp BIGINT NOT NULL, expiry_timestamp BIGINT NOT NULL, max_timestamp BIGINT NOT NULL,
    key_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kafkasec_log (
    log_offset BIGINT PRIMARY KEY, record_type INTEGER NOT NULL, payload TEXT NOT NULL, checksum BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS kafkasec_log_offsets (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1), start BIGINT NOT NULL, latest BIGINT NOT NULL
);
INSERT INTO kafkasec_log_offsets VALUES (1, 1, 0) ON CONFLICT DO NOTHING;
"""


def redacted(url: str) -> str:
    """``url`` without its password, for messages and ``location``."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


_STATEMENTS = {
    rows.INSERT_ACL: "INSERT INTO kafkasec_acls VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
    rows.DELETE_ACL: "DELETE FROM kafkasec_acls WHERE id = %s",
    rows.UPSERT_CREDENTIAL: (
        "INSERT INTO kafkasec_scram_credentials VALUES (%s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (username, mechanism) DO UPDATE SET salt = EXCLUDED.salt, "
        "stored_key = EXCLUDED.stored_key, server_key = EXCLUDED.server_key, iterations = EXCLUDED.iterations"
    ),
    rows.DELETE_CREDENTIAL: "DELETE FROM kafkasec_scram_credentials WHERE username = %s AND mechanism = %s",
    rows.UPSERT_TOKEN: (
        "INSERT INTO kafkasec_delegation_tokens VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (token_id) DO UPDATE SET owner = EXCLUDED.owner, token_requester = EXCLUDED.token_requester, "
        "renewers = EXCLUDED.renewers, issue_timestamp = EXCLUDED.issue_timestamp, "
        "expiry_timestamp = EXCLUDED.expiry_timestamp, max_timestamp = EXCLUDED.max_timestamp, key_id = EXCLUDED.key_id"
    ),
    rows.DELETE_TOKEN: "DELETE FROM kafkasec_delegation_tokens WHERE token_id = %s",
}
"""The SQL of each snapshot-table statement of :mod:`kafkasec.store.rows`."""


class PostgresStateStore:
    """The security log and its snapshot in the PostgreSQL database at ``url``."""

    def __init__(
        self,
        url: str,
        *,
        log_retention_records: int = DEFAULT_LOG_RETENTION_RECORDS,
        write_lock_timeout_ms: int = DEFAULT_WRITE_LOCK_TIMEOUT_MS,
    ):
        import psycopg  # the 'postgres' extra

        check_store_limits(log_retention_records=log_retention_records, write_lock_timeout_ms=write_lock_timeout_ms)
        self.write_lock_timeout_ms = write_lock_timeout_ms
        self._psycopg = psycopg
        self._url = url
        self.location = redacted(url)
        self.log_retention_records = log_retention_records
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._listen_lock = threading.Lock()
        self._writer = self._reader = self._listener = None
        self._closed = False
        with self._write_lock:
            connection = self._connection("_writer")
            try:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            connection.execute(statement)
            except psycopg.Error as error:
                raise self._error("prepared", error) from error
        self._notified = InterruptibleWait()  # once opened: a store that failed holds no sockets

    def _error(self, doing: str, error: Exception) -> StateError:
        text = str(error).replace(self._url, self.location).strip()
        return StateError(f"the PostgreSQL state {self.location} could not be {doing}: {text}")

    def _connection(self, name: str):
        """The connection ``name``, opened again if the server dropped it (caller holds its lock)."""
        connection = getattr(self, name)
        if connection is not None and not connection.closed and not connection.broken:
            return connection
        if self._closed:
            raise StateError(f"the PostgreSQL state {self.location} is closed")
        try:
            connection = self._psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except self._psycopg.Error as error:
            raise self._error("reached", error) from None
        setattr(self, name, connection)
        return connection

    # ------------------------------------------------------------------ writing

    def write(self) -> _PostgresTransaction:
        return _PostgresTransaction(self)

    # ------------------------------------------------------------------ reading

    def _read(self, work):
        with self._read_lock:
            connection = self._connection("_reader")
            try:
                # One REPEATABLE READ transaction: everything read is as of one commit.
                with connection.transaction():
                    connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    return work(connection)
            except self._psycopg.Error as error:
                raise self._error("read", error) from None

    def latest_offset(self) -> int:
        return self._read(lambda c: c.execute("SELECT latest FROM kafkasec_log_offsets").fetchone()[0])

    def read_log(self, after_offset: int, max_records: int = 1000) -> list[tuple[int, Record]]:
        def work(connection):
            start, latest = connection.execute("SELECT start, latest FROM kafkasec_log_offsets").fetchone()
            rows = connection.execute(
                "SELECT log_offset, record_type, payload, checksum FROM kafkasec_log WHERE log_offset > %s "
                "ORDER BY log_offset LIMIT %s",
                (after_offset, max_records),
            ).fetchall()
            return start, latest, rows

        start, latest, rows = self._read(work)
        if after_offset < latest and after_offset + 1 < start:
            raise LogTruncatedError(after_offset, start)
        return [(offset, decode_record(offset, *columns)) for offset, *columns in rows]

    def snapshot(self) -> StateSnapshot:
        def work(connection):
            (latest,) = connection.execute("SELECT latest FROM kafkasec_log_offsets").fetchone()
            return (
                latest,
                connection.execute(
                    "SELECT id, resource_type, resource_name, pattern_type, principal, host, operation, "
                    "permission_type FROM kafkasec_acls"
                ).fetchall(),
                connection.execute(
                    "SELECT username, mechanism, salt, stored_key, server_key, iterations FROM kafkasec_scram_credentials"
                ).fetchall(),
                connection.execute(
                    "SELECT token_id, owner, token_requester, renewers, issue_timestamp, expiry_timestamp, "
                    "max_timestamp, key_id FROM kafkasec_delegation_tokens"
                ).fetchall(),
            )

        latest, acls, credentials, tokens = self._read(work)
        return rows.snapshot_from_rows(self.location, latest, acls, credentials, tokens)

    def wait_for_change(self, timeout_s: float) -> None:
        """Until a NOTIFY, ``timeout_s`` or :meth:`close`. A listener (re)connected here returns
        at once: the caller reads what was committed before it listened. While the server is
        down, sleeps a short backoff."""
        deadline = time.monotonic() + timeout_s
        with self._listen_lock:
            try:
                listener = self._listener
                if listener is None or listener.closed or listener.broken:
                    listener = self._connection("_listener")
                    listener.execute(f"LISTEN {CHANNEL}")
                    return
                while not self._closed:
                    for _ in listener.notifies(timeout=0, stop_after=1):  # what the socket holds, without waiting
                        return
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._notified.wait(listener.fileno(), remaining):
                        return
            except (StateError, self._psycopg.Error):
                if not self._closed:
                    time.sleep(max(min(deadline - time.monotonic(), UNREACHABLE_BACKOFF_S), 0))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._notified.close()  # ends a follower's wait
        for name in ("_writer", "_reader", "_listener"):
            connection = getattr(self, name)
            if connection is not None:
                connection.close()


class _PostgresTransaction:
    """A transaction under the cluster-wide advisory lock; committed on a clean exit."""

    def __init__(self, store: PostgresStateStore):
        self._store = store

    def __enter__(self) -> _PostgresTransaction:
        store = self._store
        acquire_write_lock(store._write_lock, store.write_lock_timeout_ms, store.location)
        transaction = None
        try:
            self.connection = store._connection("_writer")
            transaction = self.connection.transaction()
            transaction.__enter__()
            # Bounds the wait for another host's write; 0 would mean no bound to PostgreSQL.
            self.connection.execute(f"SET LOCAL lock_timeout = {max(int(store.write_lock_timeout_ms), 1)}")
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        except BaseException as error:
            if transaction is not None:  # not left open on the connection
                with contextlib.suppress(store._psycopg.Error):
                    transaction.__exit__(type(error), error, None)
            store._write_lock.release()
            if isinstance(error, store._psycopg.errors.LockNotAvailable):
                raise StateBusyError(
                    f"the PostgreSQL state {store.location} could not be written: another writer "
                    f"held it for {store.write_lock_timeout_ms} ms"
                ) from None
            if isinstance(error, store._psycopg.Error):
                raise store._error("written", error) from None
            raise
        self._transaction = transaction
        return self

    def append(self, records: Sequence[Record]) -> int:
        connection, psycopg = self.connection, self._store._psycopg
        start, latest = connection.execute("SELECT start, latest FROM kafkasec_log_offsets").fetchone()
        offset = latest
        for record in records:
            offset += 1
            statement, parameters = rows.snapshot_row(record)
            try:
                with connection.transaction():  # a savepoint: a refused record names itself
                    cursor = connection.execute(_STATEMENTS[statement], parameters)
            except psycopg.errors.IntegrityError as error:
                raise RecordApplyError(offset, f"{record!r} contradicts the state: {error}") from None
            if statement in rows.REMOVALS and cursor.rowcount != 1:
                raise RecordApplyError(offset, f"{record!r} removes nothing")
            connection.execute("INSERT INTO kafkasec_log VALUES (%s, %s, %s, %s)", (offset, *encode_record(record)))
        retention = self._store.log_retention_records
        if offset - start + 1 > retention + max(retention // 10, 1):
            start = offset - retention + 1
            connection.execute("DELETE FROM kafkasec_log WHERE log_offset < %s", (start,))
        connection.execute("UPDATE kafkasec_log_offsets SET start = %s, latest = %s", (start, offset))
        connection.execute(f"NOTIFY {CHANNEL}, '{int(offset)}'")
        return offset

    def __exit__(self, exc_type, exc, tb) -> None:
        store = self._store
        try:
            self._transaction.__exit__(exc_type, exc, tb)
        except store._psycopg.Error as error:
            raise store._error("written", error) from None
        finally:
            store._write_lock.release()
        if isinstance(exc, store._psycopg.Error):
            raise store._error("written", exc) from exc


__all__ = ["PostgresStateStore", "redacted"]
