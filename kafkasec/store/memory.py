"""The state kept in memory: the same contract as the SQLite store, for tests and throwaway use.

Several KafkaSecurity instances of one process may share one MemoryStateStore: each follows
its log, as nodes follow a shared file or database.
"""

from __future__ import annotations

import threading
from typing import Sequence

from kafkasec.store.base import (
    DEFAULT_LOG_RETENTION_RECORDS,
    DEFAULT_WRITE_LOCK_TIMEOUT_MS,
    LogTruncatedError,
    StateError,
    acquire_write_lock,
    check_store_limits,
)
from kafkasec.store.records import Record, StateSnapshot, apply_to_maps, state_key


class MemoryStateStore:
    """Nothing survives the process; everything else behaves as :class:`SqliteStateStore`."""

    location = path = ":memory:"

    def __init__(
        self,
        *,
        log_retention_records: int = DEFAULT_LOG_RETENTION_RECORDS,
        write_lock_timeout_ms: int = DEFAULT_WRITE_LOCK_TIMEOUT_MS,
    ):
        check_store_limits(log_retention_records=log_retention_records, write_lock_timeout_ms=write_lock_timeout_ms)
        self.write_lock_timeout_ms = write_lock_timeout_ms
        self.log_retention_records = log_retention_records
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self._log: list[tuple[int, Record]] = []
        self._offset = 0
        # The snapshot's maps, changed only under the write lock.
        self._maps: tuple[dict, dict, dict] = ({}, {}, {})
        self._closed = False
        self._offset_at_wait = 0  # the offset the last wait_for_change returned at

    def write(self) -> _MemoryTransaction:
        if self._closed:
            raise StateError("the memory state store is closed")
        return _MemoryTransaction(self)

    def latest_offset(self) -> int:
        return self._offset

    def read_log(self, after_offset: int, max_records: int = 1000) -> list[tuple[int, Record]]:
        latest, log = self._offset, self._log
        start = log[0][0] if log else latest + 1
        if after_offset < latest and after_offset + 1 < start:
            raise LogTruncatedError(after_offset, start)
        first = max(after_offset + 1 - start, 0)
        return log[first:min(first + max_records, latest - start + 1)]

    def snapshot(self) -> StateSnapshot:
        with self._write_lock:
            acls, credentials, tokens = self._maps
            return StateSnapshot(self._offset, dict(acls), dict(credentials), dict(tokens))

    def wait_for_change(self, timeout_s: float) -> None:
        """Return once the log has grown since the last wait returned (at once if it already
        has), the store is closed, or ``timeout_s`` passes. Both are checked under the
        condition's lock: a commit or a close just before the wait would otherwise notify no
        one, and the follower would wait the whole timeout (closing took 0.5 s now and then)."""
        with self._changed:
            if not self._closed and self._offset == self._offset_at_wait:
                self._changed.wait(timeout_s)
            self._offset_at_wait = self._offset

    def close(self) -> None:
        self._closed = True
        with self._changed:
            self._changed.notify_all()


class _MemoryTransaction:
    """Applies records to the store's maps as they are appended, keeping what each replaced,
    so that an exception puts everything back."""

    def __init__(self, store: MemoryStateStore):
        self._store = store
        self._entries: list[tuple[int, Record]] = []
        self._undo: list[tuple[dict, object, object]] = []

    def __enter__(self) -> _MemoryTransaction:
        store = self._store
        acquire_write_lock(store._write_lock, store.write_lock_timeout_ms, store.location)
        return self

    def append(self, records: Sequence[Record]) -> int:
        store = self._store
        offset = store._offset + len(self._entries)
        for record in records:
            offset += 1
            self._apply(offset, record)
            self._entries.append((offset, record))
        return offset

    def _apply(self, offset: int, record: Record) -> None:
        maps = self._store._maps
        which, key = state_key(record)
        previous = maps[which].get(key, _MISSING)
        apply_to_maps(offset, record, *maps)
        self._undo.append((maps[which], key, previous))

    def __exit__(self, exc_type, exc, tb) -> None:
        store = self._store
        try:
            if exc_type is not None:
                for mapping, key, value in reversed(self._undo):
                    if value is _MISSING:
                        mapping.pop(key, None)
                    else:
                        mapping[key] = value
            elif self._entries:
                # Appended in place (a reader slices by offset, so it never sees past what it
                # asked for); trimmed into a new list only once it is a tenth over retention.
                store._log.extend(self._entries)
                retention = store.log_retention_records
                if len(store._log) > retention + max(retention // 10, 1):
                    store._log = store._log[-retention:]
                store._offset = self._entries[-1][0]
                with store._changed:
                    store._changed.notify_all()
        finally:
            store._write_lock.release()


_MISSING = object()
