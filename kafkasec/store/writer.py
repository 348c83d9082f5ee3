"""The write side of the security state: one writer at a time, planning against a caught-up
state, appending records in one transaction.

Kafka's controller decides every change against the state it has applied, then appends the
records. Here any process may write, so each write takes the store's exclusive transaction
first, brings its own follower up to the log's end under it, and only then plans: what a
request checks (an ACL to delete exists, a token to renew is live) still holds when its
records are written, whichever process wrote last. After the commit the writer's own follower
applies the records before the call returns, so a caller reads its own writes.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, Sequence

from kafkasec.store.records import Record


class WriteTransaction:
    """The records one write appends: ``append`` them while the write is open."""

    def __init__(self, append: Callable[[Sequence[Record]], int]):
        self._append = append
        self.last_offset = 0

    def append(self, records: Sequence[Record]) -> int:
        """Append ``records`` (checked and applied to the store's snapshot at once); the offset
        of the last, or of the last appended so far when ``records`` is empty."""
        records = list(records)
        if records:
            self.last_offset = self._append(records)
        return self.last_offset


class StateWriter:
    """Writes to ``store`` for a node whose follower applies what the store's log holds;
    ``catch_up()`` brings that follower to the log's end."""

    def __init__(self, store, catch_up: Callable[[], int]):
        self._store = store
        self._catch_up = catch_up
        self._local = threading.local()

    @contextlib.contextmanager
    def writing(self) -> Iterator[WriteTransaction]:
        """An exclusive write: on entry the follower is caught up, inside plan and ``append``,
        on a clean exit the records are committed and applied here; on an exception nothing is.

        Re-entrant within a thread: a nested ``writing()`` joins the open write.
        """
        current = getattr(self._local, "transaction", None)
        if current is not None:
            yield current
            return
        with self._store.write() as store_transaction:
            self._catch_up()
            transaction = self._local.transaction = WriteTransaction(store_transaction.append)
            try:
                yield transaction
            finally:
                self._local.transaction = None
        if transaction.last_offset:
            self._catch_up()


class LocalWriter:
    """The writer of a component that keeps its state in this process only: records are
    applied by ``apply`` when the write ends cleanly, under one lock."""

    def __init__(self, apply: Callable[[list[Record]], None]):
        self._apply = apply
        self._lock = threading.RLock()
        self._local = threading.local()

    @contextlib.contextmanager
    def writing(self) -> Iterator[WriteTransaction]:
        current = getattr(self._local, "transaction", None)
        if current is not None:
            yield current
            return
        with self._lock:
            pending: list[Record] = []

            def append(records: Sequence[Record]) -> int:
                pending.extend(records)
                return len(pending)

            transaction = self._local.transaction = WriteTransaction(append)
            try:
                yield transaction
            finally:
                self._local.transaction = None
            if pending:
                self._apply(pending)


__all__ = ["LocalWriter", "StateWriter", "WriteTransaction"]
