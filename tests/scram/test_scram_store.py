"""Where SCRAM credentials live: the state file (durable, migrated, never a password), the
memory store, and the kafkasec_scram_credential_store hook."""

import sqlite3

import pytest

from kafkasec import AclBinding, KafkaSecurity, hookimpl
from kafkasec.plugins import make_plugin_manager
from kafkasec.scram import (
    ScramCredentialInfo,
    ScramFormatter,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafkasec.scram.cache import ScramCredentialCache
from kafkasec.store import MemoryStateStore, SqliteStateStore, StateError, sqlite as sqlite_store
from kafkasec.store.records import RecordApplyError

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
PASSWORD = "correct horse battery staple"


def credential(iterations=4096, salt=b"salt", mechanism=SHA256):
    formatter = ScramFormatter(mechanism)
    return formatter.credential(salt, formatter.salted_password(PASSWORD, salt, iterations), iterations)


def upsertion(user, mechanism=SHA256, iterations=4096, salt=b"salt"):
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), PASSWORD, salt)


ACL = AclBinding.of("TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW")


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    """The built-in credential store: the cache the security log feeds, written through it."""
    location = None if request.param == "memory" else str(tmp_path / "s.db")
    with KafkaSecurity(state_path=location) as security:
        yield security.scram_credential_store


def test_store_get_describe_apply(store):
    assert store.scram_credential("alice", SHA256) is None
    assert store.describe_scram_credentials(None) == []
    store.apply_scram_changes(
        [("bob", SHA512, credential(8192, mechanism=SHA512)), ("alice", SHA512, credential()), ("alice", SHA256, credential())],
        [],
    )
    assert store.scram_credential("alice", SHA256) == credential()
    assert [(d.user, [(i.mechanism, i.iterations) for i in d.infos]) for d in store.describe_scram_credentials(None)] == [
        ("alice", [(SHA256, 4096), (SHA512, 4096)]),
        ("bob", [(SHA512, 8192)]),
    ]
    assert store.describe_scram_credentials(["bob", "carol"]) == [
        UserScramCredentialsDescription("bob", [ScramCredentialInfo(SHA512, 8192)])
    ]
    # Deletions first, then upserts, in one change; deleting what is not there is no error.
    store.apply_scram_changes([("alice", SHA256, credential(16384))], [("alice", SHA256), ("alice", SHA512), ("zed", SHA256)])
    assert store.scram_credential("alice", SHA256).iterations == 16384
    assert store.scram_credential("alice", SHA512) is None


def test_credentials_survive_a_restart(tmp_path):
    path = str(tmp_path / "state.db")
    with KafkaSecurity(state_path=path) as security:
        security.alter_user_scram_credentials([upsertion("alice"), upsertion("bob", SHA512, 8192)])
        security.alter_user_scram_credentials([upsertion("alice", SHA512)])
        security.alter_user_scram_credentials([UserScramCredentialDeletion("bob", SHA512)])
        stored = security.scram_credential("alice", SHA256)
    with KafkaSecurity(state_path=path) as security:
        assert security.scram_credential("alice", SHA256) == stored == credential()
        assert security.describe_user_scram_credentials().users() == ["alice"]
        assert [i.mechanism for i in security.describe_user_scram_credentials().description("alice").infos] == [SHA256, SHA512]


def test_the_file_holds_no_password_or_salted_password(tmp_path):
    path = tmp_path / "state.db"
    salted = ScramFormatter(SHA512).salted_password(PASSWORD, b"pepper", 4096)
    with KafkaSecurity(state_path=str(path)) as security:
        security.alter_user_scram_credentials([upsertion("alice", SHA512, salt=b"pepper")])
        kept = security.scram_credential("alice", SHA512)
        on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the database and its WAL
        assert kept.stored_key in on_disk  # the credential did reach the disk
        for secret in (PASSWORD.encode(), salted):
            assert secret not in on_disk
    connection = sqlite3.connect(path)
    columns = [row[1] for row in connection.execute("PRAGMA table_info(scram_credentials)")]
    assert columns == ["user", "mechanism", "salt", "stored_key", "server_key", "iterations"]
    rows = connection.execute("SELECT * FROM scram_credentials").fetchall()
    connection.close()
    assert rows == [("alice", 2, b"pepper", kept.stored_key, kept.server_key, 4096)]
    assert all(PASSWORD.encode() not in bytes(v) and salted not in bytes(v) for v in rows[0][2:5])


def make_version_1_file(path):
    """A state file as the kafkasec before SCRAM wrote it: the acls table, schema version 1."""
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE acls (
            id TEXT PRIMARY KEY, resource_type INTEGER NOT NULL, resource_name TEXT NOT NULL,
            pattern_type INTEGER NOT NULL, principal TEXT NOT NULL, host TEXT NOT NULL,
            operation INTEGER NOT NULL, permission_type INTEGER NOT NULL
        );
        INSERT INTO acls VALUES ('acl-1', 2, 't', 3, 'User:alice', '*', 3, 3);
        PRAGMA user_version=1;
        """
    )
    connection.commit()
    connection.close()


def test_a_state_file_without_the_table_still_opens(tmp_path):
    path = tmp_path / "old.db"
    make_version_1_file(path)
    with KafkaSecurity(state_path=str(path)) as security:
        assert security.acls() == [ACL]
        assert security.describe_user_scram_credentials().users() == []
        security.alter_user_scram_credentials([upsertion("alice")])
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (sqlite_store.SCHEMA_VERSION,)
    connection.close()
    with KafkaSecurity(state_path=str(path)) as security:
        assert security.acls() == [ACL]
        assert security.scram_credential("alice", SHA256) == credential()


def test_changes_are_all_or_nothing(tmp_path):
    security = KafkaSecurity(state_path=str(tmp_path / "s.db"))
    store = security.scram_credential_store
    store.apply_scram_changes([("alice", SHA256, credential())], [])
    # A failure in the middle of the transaction (here a trigger) must leave no trace.
    security.store._writer.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON scram_credentials WHEN NEW.user = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    with pytest.raises(RecordApplyError, match="boom"):
        store.apply_scram_changes([("bob", SHA256, credential()), ("boom", SHA256, credential())], [("alice", SHA256)])
    assert store.scram_credential("alice", SHA256) == credential()
    assert store.scram_credential("bob", SHA256) is None
    assert SqliteStateStore(tmp_path / "s.db").snapshot().credentials == {("alice", SHA256): credential()}
    security.close()


@pytest.mark.parametrize(
    "column, value",
    [("mechanism", 7), ("mechanism", 0), ("salt", b""), ("iterations", 0)],
)
def test_a_bad_row_is_a_state_error(tmp_path, column, value):
    path = tmp_path / "s.db"
    with KafkaSecurity(state_path=str(path)) as security:
        security.scram_credential_store.apply_scram_changes([("alice", SHA256, credential())], [])
    connection = sqlite3.connect(path)
    connection.execute(f"UPDATE scram_credentials SET {column} = ?", (value,))
    connection.commit()
    connection.close()
    with pytest.raises(StateError, match="alice"):
        SqliteStateStore(path).snapshot()


# ------------------------------------------------------------------ the kafkasec_scram_credential_store hook


class DictCredentials:
    """A credential store of its own, e.g. in a vault."""

    def __init__(self):
        self.credentials = {}
        self.applied = []

    def scram_credential(self, user, mechanism):
        return self.credentials.get((user, mechanism))

    def describe_scram_credentials(self, users):
        by_user = {}
        for (user, mechanism), kept in sorted(self.credentials.items()):
            if users is None or user in users:
                by_user.setdefault(user, []).append(ScramCredentialInfo(mechanism, kept.iterations))
        return [UserScramCredentialsDescription(user, infos) for user, infos in by_user.items()]

    def apply_scram_changes(self, upserts, deletions):
        self.applied.append((list(upserts), list(deletions)))
        for key in deletions:
            del self.credentials[key]
        for user, mechanism, kept in upserts:
            self.credentials[(user, mechanism)] = kept


class VaultPlugin:
    def __init__(self, answer=True):
        self.store = DictCredentials()
        self.answer = answer

    @hookimpl
    def kafkasec_scram_credential_store(self, security):
        return self.store if self.answer else None


def test_a_plugin_can_keep_the_credentials():
    plugin = VaultPlugin()
    with KafkaSecurity(plugins=[plugin]) as security:
        assert security.scram_credential_store is plugin.store
        results = security.alter_user_scram_credentials([upsertion("alice"), upsertion("bob"), upsertion("bob", SHA512)])
        assert [(r.user, r.error and r.error.code) for r in results] == [("alice", None), ("bob", 92)]
        assert plugin.store.applied == [([("alice", SHA256, credential())], [])]  # one change, only the credential
        assert security.describe_user_scram_credentials(["alice"]).users() == ["alice"]
        assert security.scram_credential("alice", "SCRAM-SHA-256") == credential()
        result = security.alter_user_scram_credentials([UserScramCredentialDeletion("alice", SHA512)])
        assert result[0].error.code == 91  # the rules do not change with the store
        assert security.store.snapshot().credentials == {}  # the security log was not used


def test_declining_falls_through_to_the_state_store():
    with KafkaSecurity(plugins=[VaultPlugin(answer=False)]) as security:
        assert isinstance(security.scram_credential_store, ScramCredentialCache)
        security.alter_user_scram_credentials([upsertion("alice")])
        assert security.store.snapshot().credentials[("alice", SHA256)] == credential()


def test_without_a_credential_store_the_scram_operations_refuse():
    class Plugin:
        @hookimpl
        def kafkasec_state_store(self, security, path):
            return MemoryStateStore()

    # Without the built-in store plugin, nobody answers kafkasec_scram_credential_store.
    manager = make_plugin_manager(load_entrypoints=False, plugins=[Plugin()])
    manager.unregister(name="kafkasec.store.plugin")
    with KafkaSecurity(plugin_manager=manager) as security:
        assert security.scram_credential_store is None
        assert security.create_acls([ACL])[0].error is None  # everything else works
        for call in (
            lambda: security.describe_user_scram_credentials(),
            lambda: security.alter_user_scram_credentials([upsertion("alice")]),
            lambda: security.scram_credential("alice", SHA256),
        ):
            with pytest.raises(ValueError, match="no SCRAM credential store"):
                call()
