"""The apply side of the security state: a node follows the log into its in-memory state.

As a Kafka broker applies the metadata log (``StandardAuthorizer.loadSnapshot``, ``addAcl``,
``removeAcl``, then ``completeInitialLoad``; the SCRAM and token caches alike), a
:class:`StateFollower` loads the store's snapshot with its offset, then applies each new
record in order: ACL changes to the authorizer, SCRAM credentials to the credential cache,
delegation tokens to the token manager. The follower never writes. A background thread waits
for commits (``store.wait_for_change``, which the store ends when told of one: NOTIFY, a file
event) and catches up; a writer catches up synchronously. The thread also looks, told or not,
every ``wait_timeout_s`` (DEFAULT_WAIT_TIMEOUT_S): the bound on a lost wake-up's delay, and the
only timer of an idle node.

A record that cannot be read or applied stops the follower: the error is kept, readiness is
lost (the authorizer answers non-super users with AUTHORIZER_NOT_READY) and nothing after it is
applied, since skipping a record would leave this node disagreeing with the others. A store
that cannot be reached is retried; a follower further behind than the log's retention reloads
the snapshot.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable, Sequence

from kafkasec.store.base import LogTruncatedError, StateError
from kafkasec.store.records import (
    ACLS,
    CREDENTIALS,
    TOKENS,
    AccessControlEntryRecord,
    CorruptRecordError,
    DelegationTokenRecord,
    Record,
    RecordApplyError,
    StateSnapshot,
    UserScramCredentialRecord,
    state_key,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_RECORDS_PER_READ = 5000
DEFAULT_WAIT_TIMEOUT_S = 5.0
UNREACHABLE_BACKOFF_S = 0.2


class FollowerStoppedError(Exception):
    """The follower met a record it could not read or apply, and stopped there."""


def net_changes(
    entries: Iterable[tuple[int, Record]], exists: Callable[[object], bool], *, inserts_only: bool
) -> tuple[dict, list]:
    """What a run of records of one kind amounts to: ``(upserts, removed_keys)``, where upserts
    maps a key to its record. Checked as strictly as one-by-one application: a removal of a key
    that is absent, or (``inserts_only``, for ACL ids) an insert of a present key, raises
    RecordApplyError. Removals are applied before upserts."""
    upserts: dict = {}
    removed: dict = {}
    for offset, record in entries:
        _, key = state_key(record)
        present = key in upserts or (key not in removed and exists(key))
        if isinstance(record, (AccessControlEntryRecord, UserScramCredentialRecord, DelegationTokenRecord)):
            if inserts_only and present:
                raise RecordApplyError(offset, f"{key!r} already exists")
            if key not in upserts and exists(key):
                removed[key] = None  # replaced: the old value goes, the new one comes
            upserts[key] = record
        else:
            if not present:
                raise RecordApplyError(offset, f"{key!r} does not exist")
            if upserts.pop(key, None) is None or exists(key):
                removed[key] = None
    return upserts, list(removed)


class StateFollower:
    """Follows ``store``'s log into ``authorizer`` (a StandardAuthorizer), ``credentials`` (a
    ScramCredentialCache, or None) and ``tokens`` (a DelegationTokenManager, or None)."""

    def __init__(
        self,
        store,
        authorizer,
        credentials=None,
        tokens=None,
        *,
        max_records_per_read: int = DEFAULT_MAX_RECORDS_PER_READ,
        wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    ):
        self._store = store
        self._authorizer = authorizer
        self._credentials = credentials
        self._tokens = tokens
        self._max_records = max_records_per_read
        self._wait_timeout_s = wait_timeout_s
        self._lock = threading.RLock()
        self._applied = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.applied_offset = -1
        """The offset of the last record applied here (-1: not loaded yet)."""
        self.latest_seen_offset = 0
        self.snapshot_loads = 0
        self.error: Exception | None = None
        """Why the follower stopped, or None while it follows."""

    # ------------------------------------------------------------------ state

    @property
    def ready(self) -> bool:
        """Loaded and not stopped by an error."""
        return self.applied_offset >= 0 and self.error is None

    @property
    def lag(self) -> int:
        """Records committed (as last seen) but not applied here."""
        return max(self.latest_seen_offset - max(self.applied_offset, 0), 0)

    # ------------------------------------------------------------------ following

    def catch_up(self) -> int:
        """Apply every committed record not applied yet; the offset reached.

        FollowerStoppedError if the follower has stopped on a bad record (now or before);
        StateError if the store cannot be read.
        """
        with self._lock:
            self._check_running()
            try:
                if self.applied_offset < 0:
                    self._load_snapshot()
                while True:
                    try:
                        entries = self._store.read_log(self.applied_offset, self._max_records)
                    except LogTruncatedError:
                        log.warning("the security log was compacted past offset %d: reloading the snapshot", self.applied_offset)
                        self._load_snapshot()
                        continue
                    if not entries:
                        break
                    self._apply(entries)
                    if len(entries) < self._max_records:
                        break
            except (CorruptRecordError, RecordApplyError) as error:
                self._stop_on(error)
                raise FollowerStoppedError(str(error)) from error
            self.latest_seen_offset = max(self.latest_seen_offset, self.applied_offset)
            return self.applied_offset

    def wait_for(self, offset: int, timeout_s: float) -> bool:
        """Whether the records up to ``offset`` are applied here within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._applied:
            while self.applied_offset < offset and self.error is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._applied.wait(remaining)
            return self.applied_offset >= offset

    def _check_running(self) -> None:
        if self.error is not None:
            raise FollowerStoppedError(f"this node stopped following the security log: {self.error}")

    def _load_snapshot(self) -> None:
        snapshot: StateSnapshot = self._store.snapshot()
        self._authorizer.load_snapshot(snapshot.acls)
        if self._credentials is not None:
            self._credentials.load_snapshot(snapshot.credentials)
        if self._tokens is not None:
            self._tokens.load_token_snapshot(snapshot.tokens)
        self._advance(snapshot.offset)
        self.snapshot_loads += 1
        self._authorizer.complete_initial_load()

    def _apply(self, entries: Sequence[tuple[int, Record]]) -> None:
        expected = self.applied_offset + 1
        if entries[0][0] != expected:
            raise RecordApplyError(entries[0][0], f"the log skips from offset {self.applied_offset} to {entries[0][0]}")
        by_kind: dict[int, list] = {ACLS: [], CREDENTIALS: [], TOKENS: []}
        for offset, record in entries:
            by_kind[state_key(record)[0]].append((offset, record))
        # Each kind is checked whole before any of it is applied, so a bad record leaves the
        # state as it was before this read.
        authorizer = self._authorizer
        acl_upserts, acl_removed = net_changes(by_kind[ACLS], authorizer.has_acl, inserts_only=True)
        changes = []
        if self._credentials is not None:
            changes.append((self._credentials, net_changes(by_kind[CREDENTIALS], self._credentials.has_credential, inserts_only=False)))
        if self._tokens is not None:
            changes.append((self._tokens, net_changes(by_kind[TOKENS], self._tokens.has_token, inserts_only=False)))
        if acl_upserts or acl_removed:
            authorizer.apply_acl_changes([(key, r.binding) for key, r in acl_upserts.items()], acl_removed)
        for target, (upserts, removed) in changes:
            if upserts or removed:
                target.apply_records(list(upserts.values()), removed)
        self._advance(entries[-1][0])

    def _advance(self, offset: int) -> None:
        with self._applied:
            self.applied_offset = offset
            self._applied.notify_all()

    def _stop_on(self, error: Exception) -> None:
        log.error("kafkasec stopped following the security log: %s", error)
        with self._applied:
            self.error = error
            self._applied.notify_all()
        self._authorizer.lose_readiness()

    # ------------------------------------------------------------------ the background thread

    def start(self) -> StateFollower:
        """Follow in a daemon thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kafkasec-state-follower", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        store = self._store
        while not self._stopping.is_set():
            try:
                self.latest_seen_offset = max(self.latest_seen_offset, store.latest_offset())
                self.catch_up()
            except FollowerStoppedError:
                return
            except Exception as error:
                if self._stopping.is_set():
                    return  # the store was closed under a read: the node is shutting down
                if isinstance(error, StateError):
                    log.warning("the security state cannot be read (%s); retrying", error)
                    self._stopping.wait(UNREACHABLE_BACKOFF_S)
                    continue
                self._stop_on(error)  # a bug must not leave the node silently stale
                return
            store.wait_for_change(self._wait_timeout_s)

    def stop(self) -> None:
        """Ask the thread to end; it does once its wait returns (closing the store ends it)."""
        self._stopping.set()

    def join(self, timeout_s: float = 5) -> None:
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)


__all__ = ["FollowerStoppedError", "StateFollower", "net_changes"]
