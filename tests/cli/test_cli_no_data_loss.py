"""Nothing is destroyed without being asked: the two ways the command lost data (grid --output
over an existing directory, acls export over any file, the state file included), a read command
on a missing state file, another program's SQLite file, and a property test that no sequence of
commands loses a state file's ACLs, credentials or tokens."""

import os
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding, KafkaSecurity, RequestContext, ScramCredentialInfo, UserScramCredentialUpsertion
from kafkasec.cli import main

SECRET = "tokens-secret"


def seeded_state(directory):
    """A state file with an ACL, a SCRAM credential and a delegation token."""
    state = directory / "state.db"
    with KafkaSecurity.from_config({"kafkasec.state.path": str(state), "delegation.token.secret.key": SECRET}) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        security.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-256", 4096), "alice-secret")]
        )
        security.create_delegation_token(RequestContext.for_principal("User:alice", security_protocol="SASL_PLAINTEXT"))
    return state


def contents(state):
    with KafkaSecurity.from_config({"kafkasec.state.path": str(state), "delegation.token.secret.key": SECRET}) as security:
        return (
            sorted(str(binding) for binding in security.acls()),
            sorted(security.describe_user_scram_credentials().all()),
            len(security.store.snapshot().tokens),
        )


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    return seeded_state(tmp_path)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_acls_export_never_writes_over_the_state_file(state, capsys):
    before = contents(state)
    for force in ([], ["--force"]):
        status, _, err = run(capsys, "--state", str(state), "acls", "export", "--file", str(state), *force)
        assert status == 1 and "is a SQLite database (a state file?): it is never written over" in err
    assert contents(state) == before


def test_acls_export_writes_over_a_file_only_with_force(state, tmp_path, capsys):
    target = tmp_path / "acls.json"
    target.write_text("precious", encoding="utf-8")
    status, _, err = run(capsys, "--state", str(state), "acls", "export", "--file", str(target))
    assert status == 1 and "exists: pass --force" in err and target.read_text() == "precious"
    assert run(capsys, "--state", str(state), "acls", "export", "--file", str(target), "--force")[0] == 0
    assert '"orders"' in target.read_text()


def test_grid_never_deletes_a_directory_it_was_not_asked_to_replace(state, tmp_path, capsys):
    principals, resources = tmp_path / "principals.csv", tmp_path / "resources.csv"
    principals.write_text("principal\nUser:alice\n")
    resources.write_text("resource_type,resource_name\nTOPIC,orders\n")
    grid = ["--state", str(state), "grid", "--principals", str(principals), "--resources", str(resources)]
    for output, overwrite in ((".", []), (".", ["--overwrite"]), (str(tmp_path), ["--overwrite"])):
        status, _, err = run(capsys, *grid, "--output", output, *overwrite)
        assert status == 1 and "which replacing it would delete" in err
    busy = tmp_path / "results"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    status, _, err = run(capsys, *grid, "--output", str(busy))
    assert status == 1 and "exists and is not empty: pass --overwrite" in err
    assert (busy / "notes.txt").read_text() == "mine" and principals.exists() and state.exists()


def test_a_read_command_on_a_missing_state_file_says_so_and_creates_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    missing = tmp_path / "missing.db"
    for command in (["acls", "--list"], ["scram", "--describe"], ["tokens", "--describe"]):
        status, _, err = run(capsys, "--state", str(missing), *command)
        assert status == 1 and f"no state file at {missing}" in err
    assert os.listdir(tmp_path) == []
    # A command that writes creates it.
    assert run(capsys, "--state", str(missing), "acls", "--add", "--allow-principal", "User:a", "--operation", "Read",
               "--topic", "t")[0] == 0
    assert missing.exists()


def test_another_programs_sqlite_file_is_refused_and_left_as_it_was(tmp_path, capsys):
    foreign = tmp_path / "app.db"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    connection.execute("INSERT INTO customers VALUES (1, 'ada')")
    connection.commit()
    connection.close()
    before = foreign.read_bytes()
    for command in (["acls", "--list"], ["acls", "--add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t"]):
        status, _, err = run(capsys, "--state", str(foreign), *command)
        assert status == 1 and "a SQLite database of another program" in err
    assert foreign.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["app.db"]


commands = st.lists(
    st.sampled_from([
        ("acls", "export", "--file", "{state}"),
        ("acls", "export", "--file", "{state}", "--force"),
        ("acls", "export", "--file", "out.json", "--force"),
        ("acls", "export", "--file", "out.json"),
        ("acls", "--list"),
        ("scram", "--describe"),
        ("tokens", "--describe"),
        ("acls", "import", "--file", "out.json"),
        ("grid", "--principals", "{state}", "--resources", "{state}", "--output", ".", "--overwrite"),
        ("grid", "--principals", "{state}", "--resources", "{state}", "--output", "{state}", "--overwrite"),
    ]),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands)
def test_no_command_sequence_loses_the_state_files_acls_credentials_or_tokens(state, capsys, sequence):
    before = contents(state)
    for command in sequence:
        argv = [part.format(state=state) for part in command]
        run(capsys, "--state", str(state), *argv)
        assert contents(state) == before, command


READ_COMMANDS = [
    ["acls", "--list"],
    ["acls", "--list", "-o", "json"],
    ["acls", "export"],
    ["acls", "check", "--principal", "User:alice", "--operation", "Read", "--topic", "orders"],
    ["acls", "who-can", "--operation", "Read", "--topic", "orders"],
    ["acls", "authorized-ops", "--principal", "User:alice", "--topic", "orders"],
    ["scram", "--describe"],
    ["scram", "--export"],
]


def test_read_commands_work_on_a_read_only_state_file_and_leave_nothing_behind(state, tmp_path, capsys):
    before = state.read_bytes()
    state.chmod(0o444)
    tmp_path.chmod(0o555)  # not even a -wal or -shm could be made here (unless root: then it is checked below)
    try:
        for command in READ_COMMANDS:
            status, out, err = run(capsys, "--state", str(state), *command)
            assert status == 0 and out and err == "", (command, err)
        assert state.read_bytes() == before
        assert sorted(os.listdir(tmp_path)) == ["state.db"]  # no -wal, -shm or journal left
    finally:
        tmp_path.chmod(0o755)
        state.chmod(0o600)


def test_a_read_only_store_refuses_to_write_and_creates_nothing(state, tmp_path):
    from kafkasec.store import SqliteStateStore, StateError

    store = SqliteStateStore(state, read_only=True)
    try:
        assert len(store.snapshot().acls) == 1
        with pytest.raises(StateError, match="open read-only: nothing was changed"):
            store.write()
    finally:
        store.close()
    with pytest.raises(StateError, match="no state file at"):
        SqliteStateStore(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()


def test_a_read_only_open_sees_a_running_writers_commits(state):
    """While another process holds the file (its WAL exists), the read-only reader reads through it."""
    with KafkaSecurity.from_config({"kafkasec.state.path": str(state), "delegation.token.secret.key": SECRET}) as writer:
        writer.create_acls([AclBinding.of("GROUP", "billing", "LITERAL", "User:bob", "*", "READ", "ALLOW")])
        assert os.path.exists(str(state) + "-wal")
        with KafkaSecurity.from_config({"kafkasec.state.path": str(state), "kafkasec.state.read.only": "true"}) as reader:
            assert len(reader.acls()) == 2
