"""Durable state: ACLs survive restarts, a kill at any instant, and refuse to load garbage."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from kafkasec import AclBinding, AclBindingFilter, Action, KafkaSecurity, ResourcePattern, hookimpl
from kafkasec.context import AuthorizationResult, RequestContext
from kafkasec.store import MemoryStateStore, SqliteStateStore, StateError, open_state_store
from kafkasec.store.records import AccessControlEntryRecord, RecordApplyError, StateSnapshot


def binding(name, principal="User:alice"):
    return AclBinding.of("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW")


def test_acls_survive_a_restart(tmp_path):
    path = tmp_path / "state.db"
    with KafkaSecurity(state_path=str(path)) as security:
        security.create_acls([binding("t1"), binding("t2")])
        security.delete_acls([binding("t2").to_filter()])
    with KafkaSecurity(state_path=str(path)) as security:
        assert security.acls() == [binding("t1")]
        context = RequestContext.for_principal("User:alice")
        assert security.authorize(context, [Action("READ", ResourcePattern("TOPIC", "t1"))]) == [AuthorizationResult.ALLOWED]


def test_ids_are_kept(tmp_path):
    with KafkaSecurity(state_path=str(tmp_path / "s.db")) as security:
        created = security.create_acls([binding("t")])
    with KafkaSecurity(state_path=str(tmp_path / "s.db")) as reopened:
        assert [s.acl_id for s in reopened.stored_acls()] == [created[0].acl_id]


def test_open_state_store_picks_memory_or_sqlite(tmp_path):
    assert isinstance(open_state_store(None), MemoryStateStore)
    assert isinstance(open_state_store(":memory:"), MemoryStateStore)
    assert isinstance(open_state_store(tmp_path / "x.db"), SqliteStateStore)


def test_failed_write_changes_nothing(tmp_path):
    """If the store refuses a change, nothing is logged and the authorizer stays as it was."""

    class FailingStore(MemoryStateStore):
        def write(self):
            transaction = super().write()
            transaction.append = lambda records: (_ for _ in ()).throw(OSError("disk full"))
            return transaction

    class Plugin:
        @hookimpl
        def kafkasec_state_store(self, security, path):
            return FailingStore()

    with KafkaSecurity(plugins=[Plugin()]) as security:
        with pytest.raises(OSError, match="disk full"):
            security.create_acls([binding("t")])
        assert security.acls() == [] and security.store.latest_offset() == 0
        assert security.authorize(RequestContext.for_principal("User:alice"), [Action("READ", ResourcePattern("TOPIC", "t"))]) == [
            AuthorizationResult.DENIED
        ]


def test_garbage_file_is_a_clear_error(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StateError, match="cannot open the state file"):
        SqliteStateStore(path)


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    SqliteStateStore(path).close()
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version=99")
    connection.commit()
    connection.close()
    with pytest.raises(StateError, match="schema version 99"):
        SqliteStateStore(path)


def test_bad_row_names_the_acl(tmp_path):
    path = tmp_path / "bad.db"
    SqliteStateStore(path).close()
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO acls VALUES ('acl-x', 2, 't', 3, 'User:a', '*', 77, 3)")
    connection.commit()
    connection.close()
    with pytest.raises(StateError, match="acl-x"):
        SqliteStateStore(path).snapshot()


WRITER = textwrap.dedent(
    """
    import sys
    from kafkasec import AclBinding, KafkaSecurity

    authorizer = KafkaSecurity(state_path=sys.argv[1])
    batch = 0
    while True:
        # Each batch is 20 ACLs for one topic; a batch is either all there or none of it.
        bindings = [
            AclBinding.of("TOPIC", f"batch-{batch}", "LITERAL", f"User:u{i}", "*", "READ", "ALLOW")
            for i in range(20)
        ]
        authorizer.create_acls(bindings)
        print(batch, flush=True)
        batch += 1
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5, 1.0])
def test_kill_mid_write_leaves_whole_batches(tmp_path, delay):
    path = tmp_path / "killed.db"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        # Wait until the child has committed at least one batch, then kill it at an arbitrary instant.
        first = child.stdout.readline()
        assert first.strip() == "0"
        time.sleep(delay)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    acknowledged = int(first)
    for line in child.stdout:
        acknowledged = int(line)
    store = SqliteStateStore(path)
    acls = list(store.snapshot().acls.values())
    # The log says the same as the snapshot, record for record.
    assert StateSnapshot().replay(store.read_log(0, 10**6)) == store.snapshot()
    by_batch = {}
    for acl in acls:
        by_batch.setdefault(acl.pattern.name, set()).add(acl.entry.principal)
    batches = sorted(int(name.split("-")[1]) for name in by_batch)
    assert all(len(principals) == 20 for principals in by_batch.values())
    # Every acknowledged batch is there; at most the one in flight may also be there.
    assert batches == list(range(len(batches)))
    assert acknowledged + 1 <= len(batches) <= acknowledged + 2
    # The file still takes writes.
    with KafkaSecurity(state_path=str(path)) as security:
        security.create_acls([binding("after-kill")])
        assert binding("after-kill") in security.acls()


def test_memory_store_refuses_duplicate_ids():
    store = MemoryStateStore()
    with store.write() as transaction:
        transaction.append([AccessControlEntryRecord("a", binding("t"))])
    with pytest.raises(RecordApplyError, match="already exists"):
        with store.write() as transaction:
            transaction.append([AccessControlEntryRecord("b", binding("u")), AccessControlEntryRecord("a", binding("v"))])
    assert store.snapshot().acls == {"a": binding("t")} and store.latest_offset() == 1


def test_delete_everything_persists(tmp_path):
    path = str(tmp_path / "d.db")
    with KafkaSecurity(state_path=path) as security:
        security.create_acls([binding(f"t{i}") for i in range(50)])
        assert len(security.delete_acls([AclBindingFilter.ANY])[0].deleted) == 50
    with KafkaSecurity(state_path=path) as security:
        assert security.acls() == []


def test_write_errors_are_state_errors(tmp_path):
    path = tmp_path / "locked.db"
    security = KafkaSecurity(state_path=str(path))
    security.store._writer.execute("PRAGMA busy_timeout=0")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(StateError, match="could not be written"):
            security.create_acls([binding("t")])
        assert security.acls() == []
    finally:
        blocker.execute("ROLLBACK")
    security.create_acls([binding("t")])
    assert list(SqliteStateStore(path).snapshot().acls.values()) == [binding("t")]
    security.close()
