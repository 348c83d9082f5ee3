"""What a state store is: the contract the SQLite, PostgreSQL and memory stores keep, and that
a ``kafkasec_state_store`` plugin keeps too; and the contracts of the SCRAM credential and
delegation token stores a plugin may provide instead of the log.

A store holds the security log (ordered records, each with an offset) and the state those
records add up to (a snapshot, kept beside the log so that a follower need not replay it all).
Writers append through :meth:`StateStore.write`, which is exclusive across every process and
host that shares the store; followers read :meth:`StateStore.snapshot` once, then
:meth:`StateStore.read_log` from their offset on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, ContextManager, Iterable, Protocol, Sequence, runtime_checkable

from kafkasec.errors import KafkaErrorCode
from kafkasec.store.records import Record, StateSnapshot

if TYPE_CHECKING:
    from kafkasec.scram.credentials import ScramCredential, ScramMechanism, UserScramCredentialsDescription
    from kafkasec.tokens.model import TokenInformation

DEFAULT_LOG_RETENTION_RECORDS = 100_000
"""Records a store keeps in its log; older ones are compacted away (the snapshot keeps their
effect), and a follower that was further behind reloads the snapshot."""


DEFAULT_WRITE_LOCK_TIMEOUT_MS = 10_000
"""How long a write waits for another writer (another process or host) to finish before it
gives up with StateBusyError."""


class StateError(Exception):
    """The state cannot be used: unreadable, unreachable, from a newer kafkasec, or a bad row.

    A request whose write fails so is answered with ``error_code``; both codes are retriable
    for Kafka's clients, which try again."""

    error_code: ClassVar[KafkaErrorCode] = KafkaErrorCode.KAFKA_STORAGE_ERROR


class StateBusyError(StateError):
    """Another writer held the state's write lock for longer than the write may wait; nothing
    was written."""

    error_code: ClassVar[KafkaErrorCode] = KafkaErrorCode.REQUEST_TIMED_OUT


def check_store_limits(*, log_retention_records: int, write_lock_timeout_ms: int) -> None:
    """A store constructor's limits, refused with a clear ValueError when out of range."""
    if log_retention_records < 1:
        raise ValueError(f"log_retention_records must be >= 1, not {log_retention_records}")
    if write_lock_timeout_ms < 0:
        raise ValueError(f"write_lock_timeout_ms must be >= 0, not {write_lock_timeout_ms}")


def acquire_write_lock(lock, timeout_ms: int, location: str) -> None:
    """Take a store's in-process write lock (held by this process's other writing threads) or
    raise StateBusyError after ``timeout_ms``."""
    if not lock.acquire(timeout=timeout_ms / 1000):
        raise StateBusyError(f"the state {location} is being written by another thread of this process for over {timeout_ms} ms")


class LogTruncatedError(StateError):
    """The records a follower asked for have been compacted away: it must reload the snapshot."""

    def __init__(self, after_offset: int, log_start_offset: int):
        super().__init__(
            f"the security log starts at offset {log_start_offset}; records after {after_offset} "
            "have been compacted away: reload the snapshot"
        )
        self.after_offset = after_offset
        self.log_start_offset = log_start_offset


@runtime_checkable
class LogTransaction(Protocol):
    def append(self, records: Sequence[Record]) -> int:
        """Append ``records`` in order and apply them to the snapshot tables, in this
        transaction; the offset of the last one. A record that cannot be applied raises
        RecordApplyError and nothing of the transaction is kept."""


@runtime_checkable
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
        """Return when a commit may have happened since the last call, after ``timeout_s``, or
        at once once closed (from another thread too). The follower waits seconds at a time
        (``kafkasec.store.follower.DEFAULT_WAIT_TIMEOUT_S``): a store that is not told of
        commits looks for them within the wait, as often as changes must propagate."""

    def close(self) -> None:
        """Release connections; idempotent."""


@runtime_checkable
class ScramCredentialStore(Protocol):
    """What ``kafkasec_scram_credential_store`` returns: where SCRAM credentials live."""

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        """The credential of ``user`` for ``mechanism``, or None when there is none."""

    def describe_scram_credentials(self, users: Iterable[str] | None = None) -> list[UserScramCredentialsDescription]:
        """One description for each of ``users`` that has a credential (None: every such user)."""

    def apply_scram_changes(
        self,
        upserts: Sequence[tuple[str, ScramMechanism, ScramCredential]],
        deletions: Iterable[tuple[str, ScramMechanism]],
    ) -> None:
        """Write ``upserts`` and remove ``deletions`` in one transaction: all or nothing."""


@runtime_checkable
class DelegationTokenStore(Protocol):
    """What ``kafkasec_delegation_token_store`` returns: where tokens live outside the log."""

    def load_delegation_tokens(self) -> Iterable[tuple[TokenInformation, str]]:
        """Every token's information with the id of the key its HMAC was made with."""

    def apply_delegation_token_changes(
        self, upserts: Sequence[tuple[TokenInformation, str]], removed_ids: Iterable[str]
    ) -> None:
        """Insert or replace ``upserts`` and remove the tokens ``removed_ids``, in one transaction."""


def require_contract(store: object, contract: type, hook_name: str) -> None:
    """Refuse, with a TypeError naming the hook and the missing members, a plugin's store that
    does not keep ``contract`` (a runtime-checkable Protocol above)."""
    if not isinstance(store, contract):
        members = sorted(name for name in vars(contract) if not name.startswith("_") and callable(vars(contract)[name]))
        missing = [name for name in members if not callable(getattr(store, name, None))]
        raise TypeError(
            f"{hook_name} returned an object of type {type(store).__name__}, which does not keep the {contract.__name__} "
            f"contract (kafkasec.store.base): it lacks {', '.join(missing) or 'a member'}"
        )
