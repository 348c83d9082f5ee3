"""The security state: a log of changes and the snapshot they add up to (docs/cluster.md).

Writers append records (:mod:`kafkasec.store.records`) through a :class:`StateWriter`; every
node's :class:`StateFollower` applies them in order. The store behind them keeps the contract
of :class:`kafkasec.store.base.StateStore`: SQLite (one host, the default), PostgreSQL (several
hosts) or memory (tests); a plugin can provide another through the ``kafkasec_state_store`` hook.
"""

from __future__ import annotations

import os
from typing import Mapping

from kafkasec.settings import parse_bool, parse_count, parse_milliseconds
from kafkasec.store.base import (
    DEFAULT_LOG_RETENTION_RECORDS,
    DEFAULT_WRITE_LOCK_TIMEOUT_MS,
    LogTruncatedError,
    StateBusyError,
    StateError,
    StateStore,
)
from kafkasec.store.memory import MemoryStateStore
from kafkasec.store.sqlite import DEFAULT_POLL_INTERVAL_MS, SqliteStateStore

MEMORY = ":memory:"
POLL_INTERVAL_MS = "kafkasec.state.poll.interval.ms"
LOG_RETENTION_RECORDS = "kafkasec.state.log.retention.records"
WRITE_LOCK_TIMEOUT_MS = "kafkasec.state.write.lock.timeout.ms"
READ_ONLY = "kafkasec.state.read.only"
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_SQLITE_SCHEME = "sqlite:///"


def open_state_store(location: str | os.PathLike | None, config: Mapping[str, object] | None = None):
    """The built-in store for ``location``: memory for None or ":memory:", PostgreSQL for a
    ``postgresql://`` URL, else a SQLite file (a path, or a ``sqlite:///path`` URL).

    ``config`` may set ``kafkasec.state.poll.interval.ms`` (how often a SQLite follower looks
    for another process's commit once a write to the file announced one, and always where the
    file cannot be watched; PostgreSQL's followers are woken by NOTIFY),
    ``kafkasec.state.log.retention.records`` and
    ``kafkasec.state.write.lock.timeout.ms`` (how long a write waits for another writer before
    it fails with StateBusyError, answered REQUEST_TIMED_OUT on the wire).
    ``kafkasec.state.read.only`` opens a SQLite file without writing it (see SqliteStateStore).
    """
    config = config or {}
    retention = parse_count(config, LOG_RETENTION_RECORDS, DEFAULT_LOG_RETENTION_RECORDS, unit="records")
    poll_interval_ms = parse_milliseconds(config, POLL_INTERVAL_MS, DEFAULT_POLL_INTERVAL_MS)
    lock_timeout_ms = parse_milliseconds(config, WRITE_LOCK_TIMEOUT_MS, DEFAULT_WRITE_LOCK_TIMEOUT_MS)
    limits = {"log_retention_records": retention, "write_lock_timeout_ms": lock_timeout_ms}
    if location is None or os.fspath(location) == MEMORY:
        return MemoryStateStore(**limits)
    location = os.fspath(location)
    if location.startswith(_POSTGRES_SCHEMES):
        from kafkasec.store.postgres import PostgresStateStore  # psycopg: the 'postgres' extra

        return PostgresStateStore(location, **limits)
    if location.startswith(_SQLITE_SCHEME):
        location = location[len(_SQLITE_SCHEME) - 1:]
    read_only = parse_bool(READ_ONLY, config.get(READ_ONLY, False))
    return SqliteStateStore(location, poll_interval_ms=poll_interval_ms, read_only=read_only, **limits)


__all__ = [
    "MEMORY",
    "LogTruncatedError",
    "MemoryStateStore",
    "SqliteStateStore",
    "StateBusyError",
    "StateError",
    "StateStore",
    "open_state_store",
]
