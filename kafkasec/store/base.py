"""What a state store is: the contract the SQLite, PostgreSQL and memory stores keep, and that
a ``kafkasec_state_store`` plugin keeps too.

A store holds the security log (ordered records, each with an offset) and the state those
records add up to (a snapshot, kept beside the log so that a follower need not replay it all).
Writers append through :meth:`StateStore.write`, which is exclusive across every process and
host that shares the store; followers read :meth:`StateStore.snapshot` once, then
:meth:`StateStore.read_log` from their offset on.
"""

from __future__ import annotations

from typing import ContextManager, Protocol, Sequence

from kafkasec.store.records import Record, StateSnapshot

DEFAULT_LOG_RETENTION_RECORDS = 100_000
"""Records a store keeps in its log; older ones are compacted away (the snapshot keeps their
effect), and a follower that was further behind reloads the snapshot."""


class StateError(Exception):
    """The state cannot be used: unreadable, unreachable, from a newer kafkasec, or a bad row."""


class LogTruncatedError(StateError):
    """The records a follower asked for have been compacted away: it must reload the snapshot."""

    def __init__(self, after_offset: int, log_start_offset: int):
        super().__init__(
            f"the security log starts at offset {log_start_offset}; records after {after_offset} "
            "have been compacted away: reload the snapshot"
        )
        self.after_offset = after_offset
        self.log_start_offset = log_start_offset


class LogTransaction(Protocol):
    def append(self, records: Sequence[Record]) -> int:
        """Append ``records`` in order and apply them to the snapshot tables, in this
        transaction; the offset of the last one. A record that cannot be applied raises
        RecordApplyError and nothing of the transaction is kept."""


class StateStore(Protocol):
    location: str
    """Where the state is, for messages (a path or a URL without its password)."""

    def write(self) -> ContextManager[LogTransaction]:
        """A write transaction, exclusive across everyone sharing the store: committed on a
        clean exit, rolled back on an exception. StateError if it cannot be had."""

    def snapshot(self) -> StateSnapshot:
        """The whole state as of the latest committed record, read consistently."""

    def read_log(self, after_offset: int, max_records: int = 1000) -> list[tuple[int, Record]]:
        """Committed records with offsets above ``after_offset``, in order, at most
        ``max_records``; LogTruncatedError if some of them have been compacted away;
        CorruptRecordError for a record that does not read back."""

    def latest_offset(self) -> int:
        """The offset of the last committed record (0: none yet)."""

    def wait_for_change(self, timeout_s: float) -> None:
        """Return when a commit may have happened since the last call, or after ``timeout_s``."""

    def close(self) -> None:
        """Release connections; idempotent."""
