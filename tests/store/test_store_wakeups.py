"""Followers sleep until the store says it changed: inotify on SQLite's files, PostgreSQL's
NOTIFY; and where inotify cannot be had, the SQLite follower polls as before."""

import subprocess
import sys
import threading
import time

import pytest

from kafkasec.store import SqliteStateStore, open_state_store
from kafkasec.store.wakeups import watch_file_changes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify and /proc are Linux's")

# Another OS process commits one ACL to the state at argv[1], and prints when its commit returned.
COMMIT = r"""
import sys, time
from kafkasec import AclBinding
from kafkasec.store import open_state_store
from kafkasec.store.records import AccessControlEntryRecord
store = open_state_store(sys.argv[1])
with store.write() as transaction:
    transaction.append([AccessControlEntryRecord("a1", AclBinding.of("TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW"))])
print(time.time(), flush=True)
store.close()
"""

# A SQLite follower that runs out of file descriptors just before its first wait, so that it
# gets no inotify descriptor and must poll; it prints when its wait ended.
FOLLOWER_WITHOUT_INOTIFY = r"""
import os, resource, sys, time
from kafkasec.store import SqliteStateStore
store = SqliteStateStore(sys.argv[1])
lowest_free = os.dup(0)
os.close(lowest_free)
resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print("waiting", flush=True)
store.wait_for_change(30)
print(time.time(), store.latest_offset(), flush=True)
"""


def context_switches() -> int:
    """This thread's context switches so far: a thread that polls switches at every poll."""
    with open("/proc/thread-self/status") as status:
        return sum(int(line.split()[1]) for line in status if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))


def commit_from_another_process(location) -> float:
    """When the commit of another process returned (its clock, which is this machine's)."""
    done = subprocess.run([sys.executable, "-c", COMMIT, str(location)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    return tmp_path / "state.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def test_an_idle_follower_sleeps_through_its_wait(location):
    store = open_state_store(location)
    try:
        store.wait_for_change(0.05)  # listening, watching
        switches, started = context_switches(), time.monotonic()
        store.wait_for_change(1.0)
        assert time.monotonic() - started >= 0.9
        # A poll every 5 ms (SQLite's before) is about 200 switches a second; psycopg's own
        # wait wakes every 100 ms.
        assert context_switches() - switches <= 5
    finally:
        store.close()


def test_a_commit_by_another_process_ends_the_wait_at_once(location):
    store = open_state_store(location)
    try:
        store.wait_for_change(0.05)
        woken = []
        waiter = _in_thread(lambda: (store.wait_for_change(30), woken.append(time.time())))
        committed = commit_from_another_process(location)
        waiter.join(30)
        assert woken and woken[0] - committed < 0.5  # not the 30 s timeout: the store said it changed
        assert store.latest_offset() == 1
    finally:
        store.close()


def test_a_writers_announcement_wakes_a_follower_whose_looks_are_far_apart(tmp_path):
    """The WAL's write comes before the commit is visible; the writer's touch of the WAL after
    it is what ends the wait, not a look every poll interval (here a minute apart)."""
    store = SqliteStateStore(tmp_path / "state.db", poll_interval_ms=60_000)
    try:
        store.wait_for_change(0.05)
        woken = []
        waiter = _in_thread(lambda: (store.wait_for_change(30), woken.append(time.time())))
        committed = commit_from_another_process(tmp_path / "state.db")
        waiter.join(30)
        assert woken and woken[0] - committed < 0.5
    finally:
        store.close()


def test_a_state_file_behind_a_symbolic_link_is_watched_where_it_is(tmp_path):
    """SQLite writes the -wal beside the link's target: that directory is the one watched."""
    (tmp_path / "data").mkdir()
    (tmp_path / "etc").mkdir()
    SqliteStateStore(tmp_path / "data" / "state.db").close()
    (tmp_path / "etc" / "state.db").symlink_to(tmp_path / "data" / "state.db")
    store = SqliteStateStore(tmp_path / "etc" / "state.db")
    try:
        store.wait_for_change(0.05)
        woken = []
        waiter = _in_thread(lambda: (store.wait_for_change(30), woken.append(time.time())))
        committed = commit_from_another_process(tmp_path / "data" / "state.db")
        waiter.join(30)
        assert woken and woken[0] - committed < 0.5
    finally:
        store.close()


def test_without_inotify_a_sqlite_follower_polls(tmp_path):
    """Out of descriptors, the follower gets no inotify instance: it says so and polls every
    kafkasec.state.poll.interval.ms, as on a platform without inotify."""
    path = tmp_path / "state.db"
    SqliteStateStore(path).close()
    follower = subprocess.Popen([sys.executable, "-c", FOLLOWER_WITHOUT_INOTIFY, str(path)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert follower.stdout.readline() == "waiting\n", follower.stderr.read()
        time.sleep(0.2)  # in its wait
        committed = commit_from_another_process(path)
        woken, offset = follower.stdout.readline().split()
        assert float(woken) - committed < 0.5 and offset == "1"
    finally:
        follower.kill()
        _, stderr = follower.communicate(timeout=30)
    assert "no inotify" in stderr and "the state is polled instead" in stderr


def test_a_watch_reports_writes_to_its_files_only(tmp_path):
    (tmp_path / "state.db").write_bytes(b"")
    changes = watch_file_changes(str(tmp_path), ("state.db", "state.db-wal"))
    assert changes is not None
    try:
        assert not changes.wait(0.05)
        (tmp_path / "state.db.log").write_text("a line")
        assert not changes.wait(0.05)  # another file of the directory
        (tmp_path / "state.db-wal").write_bytes(b"frames")
        assert changes.wait(1)
        assert not changes.wait(0.05)  # every event was consumed
        waiter = _in_thread(lambda: changes.wait(30))
        time.sleep(0.1)
        started = time.monotonic()
        changes.close()
        waiter.join(5)
        assert not waiter.is_alive() and time.monotonic() - started < 1
    finally:
        changes.close()


def _in_thread(work):
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread
