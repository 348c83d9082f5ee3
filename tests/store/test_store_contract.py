"""The StateStore contract, once for every backend: memory, SQLite and a real PostgreSQL."""

import sqlite3
import threading
import time

import pytest

from kafkasec import AclBinding
from kafkasec.scram import ScramFormatter, ScramMechanism
from kafkasec.store import LogTruncatedError, MemoryStateStore, SqliteStateStore, StateError
from kafkasec.store.postgres import PostgresStateStore
from kafkasec.store.records import (
    AccessControlEntryRecord,
    CorruptRecordError,
    DelegationTokenRecord,
    RecordApplyError,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    StateSnapshot,
    UserScramCredentialRecord,
)
from kafkasec.tokens import TokenInformation

SHA512 = ScramMechanism.SCRAM_SHA_512


def acl(name):
    return AclBinding.of("TOPIC", name, "LITERAL", "User:alice", "*", "READ", "ALLOW")


def credential():
    formatter = ScramFormatter(SHA512)
    return formatter.credential(b"salt", formatter.salted_password("pw", b"salt", 4096), 4096)


TOKEN = TokenInformation("tok-1", "User:alice", "User:alice", ["User:bob"], 1000, 2000, 3000)


class Backend:
    """Opens stores on one location: another object on it is another node's connection."""

    def __init__(self, kind, tmp_path, request):
        self.kind = kind
        if kind == "sqlite":
            self.location = tmp_path / "state.db"
        elif kind == "postgresql":
            self.location = request.getfixturevalue("postgres_url")
        self.opened = []

    def open(self, retention=100_000):
        if self.kind == "memory":
            return MemoryStateStore(log_retention_records=retention)
        store = (SqliteStateStore(self.location, log_retention_records=retention) if self.kind == "sqlite"
                 else PostgresStateStore(self.location, log_retention_records=retention))
        self.opened.append(store)
        return store

    def corrupt(self, store, offset):
        if self.kind == "sqlite":
            connection = sqlite3.connect(self.location)
            connection.execute("UPDATE log SET payload = payload || ' ' WHERE offset = ?", (offset,))
            connection.commit()
            connection.close()
        else:
            import psycopg

            with psycopg.connect(self.location, autocommit=True) as connection:
                connection.execute("UPDATE kafkasec_log SET checksum = checksum + 1 WHERE log_offset = %s", (offset,))


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def backend(request, tmp_path):
    backend = Backend(request.param, tmp_path, request)
    yield backend
    for store in backend.opened:
        store.close()


def append(store, *records):
    with store.write() as transaction:
        return transaction.append(list(records))


def test_append_read_and_snapshot_agree(backend):
    store = backend.open()
    assert (store.latest_offset(), store.read_log(0), store.snapshot()) == (0, [], StateSnapshot())
    assert append(store, AccessControlEntryRecord("a1", acl("t")), UserScramCredentialRecord("alice", SHA512, credential())) == 2
    assert append(store, DelegationTokenRecord(TOKEN, "key-1")) == 3
    assert append(store, RemoveAccessControlEntryRecord("a1"), RemoveUserScramCredentialRecord("alice", SHA512)) == 5
    log = store.read_log(0)
    assert [offset for offset, _ in log] == [1, 2, 3, 4, 5]
    assert store.read_log(3) == log[3:] and store.read_log(0, max_records=2) == log[:2]
    snapshot = store.snapshot()
    assert snapshot == StateSnapshot().replay(log)
    assert (snapshot.offset, snapshot.acls, snapshot.credentials, snapshot.tokens) == (5, {}, {}, {"tok-1": (TOKEN, "key-1")})
    assert store.latest_offset() == 5


@pytest.mark.parametrize("bad", [
    RemoveAccessControlEntryRecord("missing"),
    AccessControlEntryRecord("a1", acl("again")),
    RemoveDelegationTokenRecord("missing"),
    RemoveUserScramCredentialRecord("nobody", SHA512),
])
def test_a_record_that_cannot_apply_rolls_back_the_whole_write(backend, bad):
    store = backend.open()
    append(store, AccessControlEntryRecord("a1", acl("t")))
    before = store.snapshot()
    with pytest.raises(RecordApplyError):
        append(store, AccessControlEntryRecord("a2", acl("u")), bad)
    assert store.snapshot() == before and store.latest_offset() == 1 and len(store.read_log(0)) == 1
    assert append(store, AccessControlEntryRecord("a3", acl("v"))) == 2  # and the store goes on


def test_an_exception_in_the_write_rolls_back(backend):
    store = backend.open()
    with pytest.raises(KeyError):
        with store.write() as transaction:
            transaction.append([AccessControlEntryRecord("a1", acl("t"))])
            raise KeyError("the plan failed")
    assert store.latest_offset() == 0 and store.snapshot().acls == {}


def test_compaction_truncates_the_log_not_the_snapshot(backend):
    store = backend.open(retention=5)
    for number in range(20):
        append(store, AccessControlEntryRecord(f"a{number}", acl(f"t{number}")))
    with pytest.raises(LogTruncatedError) as truncated:
        store.read_log(0)
    assert truncated.value.log_start_offset > 1
    assert len(store.snapshot().acls) == 20 and store.snapshot().offset == 20
    assert [offset for offset, _ in store.read_log(19)] == [20]
    assert store.read_log(20) == []


def test_wait_for_change_wakes_on_another_connections_commit(backend):
    if backend.kind == "memory":
        pytest.skip("memory stores are not shared between objects")
    follower, writer = backend.open(), backend.open()
    follower.wait_for_change(0.05)  # settle what it has seen so far
    started = time.monotonic()
    follower.wait_for_change(0.3)
    assert time.monotonic() - started >= 0.25  # nothing happened: it waits the timeout
    timer = threading.Timer(0.2, lambda: append(writer, AccessControlEntryRecord("a1", acl("t"))))
    timer.start()
    started = time.monotonic()
    follower.wait_for_change(5)
    assert 0.15 <= time.monotonic() - started < 2
    timer.join()
    assert follower.latest_offset() == 1


def test_a_commit_or_a_close_just_before_the_wait_is_not_missed(backend):
    """The follower reads, then waits: what happened in between must end the wait at once, not
    after its timeout (a memory store's close was such a lost wake-up, 0.5 s now and then)."""
    store = backend.open()
    store.wait_for_change(0.05)  # settle what it has seen so far
    append(store, AccessControlEntryRecord("a1", acl("t")))
    started = time.monotonic()
    store.wait_for_change(5)
    assert time.monotonic() - started < 2
    store.close()
    started = time.monotonic()
    store.wait_for_change(5)
    assert time.monotonic() - started < 1


def test_a_close_ends_a_wait_in_progress(backend):
    """A follower waits seconds at a time for a change; closing its store must not wait them out."""
    store = backend.open()
    store.wait_for_change(0.05)  # settle what it has seen so far
    waiter = threading.Thread(target=store.wait_for_change, args=(30,))
    waiter.start()
    time.sleep(0.2)  # in its wait
    started = time.monotonic()
    store.close()
    waiter.join(5)
    assert not waiter.is_alive() and time.monotonic() - started < 1


@pytest.mark.slow
def test_concurrent_writers_get_gap_free_offsets(backend):
    # Two connections to one location; in memory, two threads on one store.
    stores = [backend.open(), backend.open()] if backend.kind != "memory" else [backend.open()] * 2
    offsets = [[], []]

    def write(which):
        for number in range(150):
            offsets[which].append(append(stores[which], AccessControlEntryRecord(f"w{which}-{number}", acl(f"t{number}"))))

    threads = [threading.Thread(target=write, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(offsets[0] + offsets[1]) == list(range(1, 301))
    log = stores[0].read_log(0, 10**6)
    assert [offset for offset, _ in log] == list(range(1, 301))
    assert StateSnapshot().replay(log) == stores[1].snapshot()


def test_a_corrupt_record_names_its_offset(backend):
    if backend.kind == "memory":
        pytest.skip("memory records are never encoded")
    store = backend.open()
    append(store, AccessControlEntryRecord("a1", acl("t")), AccessControlEntryRecord("a2", acl("u")))
    backend.corrupt(store, 2)
    with pytest.raises(CorruptRecordError, match="offset 2 cannot be read: its checksum"):
        store.read_log(0)
    assert [offset for offset, _ in store.read_log(0, max_records=1)] == [1]


def test_a_closed_store_refuses_writes(backend):
    store = backend.open()
    store.close()
    with pytest.raises(StateError, match="closed"):
        with store.write():
            pass
