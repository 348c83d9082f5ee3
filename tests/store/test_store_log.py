"""The security log: every KafkaSecurity on one state follows every change, in order, and the
apply side never writes. Nodes here are KafkaSecurity instances on one SQLite file or one
memory store; tests/server/test_server_cluster.py runs them as separate processes."""

import os
import sqlite3
import stat

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import (
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Action,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    hookimpl,
)
from kafkasec.authorizer import index as index_module
from kafkasec.authorizer.standard import StandardAuthorizer
from kafkasec.context import AuthorizationResult
from kafkasec.errors import AuthorizerNotReadyError, KafkaError
from kafkasec.scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkasec.store import MemoryStateStore, SqliteStateStore
from kafkasec.store.follower import FollowerStoppedError, StateFollower
from kafkasec.store.records import AccessControlEntryRecord, StateSnapshot

SECRET = "a-secret-for-tokens"
CONFIG = {"super.users": "User:admin", "delegation.token.secret.key": SECRET}
ADMIN = RequestContext.for_principal("User:admin", security_protocol="SASL_PLAINTEXT")
ALICE = RequestContext.for_principal("User:alice")
SHA256 = ScramMechanism.SCRAM_SHA_256
WAIT_S = 5


def acl(name, principal="User:alice", permission="ALLOW"):
    return AclBinding.of("TOPIC", name, "LITERAL", principal, "*", "READ", permission)


def read(name):
    return Action("READ", ResourcePattern("TOPIC", name))


def node(location, **config):
    return KafkaSecurity.from_config({**CONFIG, **config, "kafkasec.state.path": location})


def caught_up(*nodes):
    """Wait until every node has applied everything committed so far."""
    latest = nodes[0].store.latest_offset()
    for each in nodes:
        assert each.follower.wait_for(latest, WAIT_S), f"a node stayed at {each.applied_offset} < {latest}"


@pytest.fixture
def two_nodes(tmp_path):
    path = str(tmp_path / "state.db")
    first, second = node(path), node(path)
    yield first, second
    first.close()
    second.close()


def test_acl_changes_reach_the_other_node(two_nodes):
    first, second = two_nodes
    [created] = first.create_acls([acl("orders")])
    caught_up(first, second)
    assert second.authorize(ALICE, [read("orders")]) == [AuthorizationResult.ALLOWED]
    assert [s.acl_id for s in second.stored_acls()] == [created.acl_id]  # the same id everywhere
    second.delete_acls([acl("orders").to_filter()])
    caught_up(second, first)
    assert first.authorize(ALICE, [read("orders")]) == [AuthorizationResult.DENIED]
    assert first.acls() == []


def test_a_deletion_raced_by_two_nodes_is_written_once(two_nodes):
    first, second = two_nodes
    first.create_acls([acl("orders")])
    caught_up(first, second)
    second.follower.stop()  # the second node has not seen anything new when it writes...
    assert len(first.delete_acls([AclBindingFilter.ANY])[0].deleted) == 1
    # ...but a write catches up under the store's lock first, so it finds nothing left to delete.
    assert second.delete_acls([AclBindingFilter.ANY])[0].deleted == ()
    assert second.ready and second.store.latest_offset() == 2


def test_scram_credentials_reach_the_other_node(two_nodes):
    first, second = two_nodes
    upsertion = UserScramCredentialUpsertion("bob", ScramCredentialInfo(SHA256, 4096), "bob-secret", b"salt")
    first.alter_user_scram_credentials([upsertion])
    caught_up(first, second)
    assert second.scram_credential("bob", SHA256) == first.scram_credential("bob", SHA256) is not None
    second.alter_user_scram_credentials([UserScramCredentialDeletion("bob", SHA256)])
    caught_up(second, first)
    assert first.scram_credential("bob", SHA256) is None
    assert first.describe_user_scram_credentials().users() == []


def test_an_expired_token_stops_logging_in_everywhere(two_nodes):
    first, second = two_nodes
    token = first.create_delegation_token(ADMIN, owner="User:alice", renewers=["User:admin"])
    caught_up(first, second)
    assert second.delegation_tokens.token_login(token.token_id, SHA256) is not None
    second.renew_delegation_token(ADMIN, token.hmac)
    caught_up(second, first)
    assert first.delegation_tokens.token_for(token.hmac).info == second.delegation_tokens.token_for(token.hmac).info
    first.expire_delegation_token(ADMIN, token.hmac, -1)
    caught_up(first, second)
    assert second.delegation_tokens.token_login(token.token_id, SHA256) is None
    with pytest.raises(KafkaError) as refused:
        second.renew_delegation_token(ADMIN, token.hmac)
    assert refused.value.code == 62  # DELEGATION_TOKEN_NOT_FOUND


def test_the_feed_api_never_writes(two_nodes):
    """A broker that replays a metadata feed must not rewrite the controller's state."""
    first, second = two_nodes
    first.authorizer.add_acl("from-a-feed", acl("fed"))
    first.authorizer.remove_acl("from-a-feed")
    first.authorizer.load_snapshot({"fed-2": acl("fed")})
    assert first.store.latest_offset() == 0
    assert SqliteStateStore(first.store.path).snapshot().acls == {}
    assert second.acls() == []


def test_a_corrupt_record_stops_the_follower_clearly(tmp_path, caplog):
    path = tmp_path / "state.db"
    writer, follower = node(str(path)), node(str(path))
    try:
        writer.create_acls([acl("one")])
        caught_up(writer, follower)
        follower.follower.stop()
        writer.create_acls([acl("two")])
        connection = sqlite3.connect(path)
        connection.execute("UPDATE log SET payload = replace(payload, 'two', 'owt') WHERE offset = 2")
        connection.commit()
        connection.close()
        with pytest.raises(FollowerStoppedError, match="offset 2 cannot be read: its checksum"):
            follower.follower.catch_up()
        assert not follower.ready and "offset 2" in str(follower.follower.error)
        assert "stopped following the security log" in caplog.text
        # Not ready: non-super users get AUTHORIZER_NOT_READY, nothing is skipped or guessed.
        with pytest.raises(AuthorizerNotReadyError):
            follower.authorize(ALICE, [read("one")])
        assert follower.authorize(ADMIN, [read("one")]) == [AuthorizationResult.ALLOWED]
        with pytest.raises(FollowerStoppedError):
            follower.create_acls([acl("three")])
        assert follower.applied_offset == 1
    finally:
        writer.close()
        follower.close()


def test_a_record_that_contradicts_the_state_stops_the_follower():
    store = MemoryStateStore()
    authorizer = StandardAuthorizer(initial_load_complete=False)
    follower = StateFollower(store, authorizer)
    follower.catch_up()
    assert authorizer.loading_complete
    authorizer.add_acl("x", acl("t"))  # this node now disagrees with the log
    with store.write() as transaction:
        transaction.append([AccessControlEntryRecord("x", acl("u"))])
    with pytest.raises(FollowerStoppedError, match="'x' already exists"):
        follower.catch_up()
    assert not authorizer.loading_complete and not follower.ready


def test_a_follower_behind_a_compacted_log_reloads_the_snapshot(tmp_path):
    path = str(tmp_path / "state.db")
    with node(path, **{"kafkasec.state.log.retention.records": "5"}) as writer:
        store = SqliteStateStore(path)
        authorizer = StandardAuthorizer(initial_load_complete=False)
        follower = StateFollower(store, authorizer)
        follower.catch_up()
        for number in range(40):
            writer.create_acls([acl(f"t{number}")])
        assert follower.catch_up() == 40
        assert follower.snapshot_loads == 2
        assert {s.acl_id: s.binding for s in authorizer.stored_acls()} == store.snapshot().acls
        assert len(authorizer.acls()) == 40
        store.close()


def test_one_change_is_applied_without_rebuilding_the_index(two_nodes, monkeypatch):
    first, second = two_nodes
    first.create_acls([acl(f"t{number}") for number in range(100)])
    caught_up(first, second)

    def no_rebuild(*args, **kwargs):
        raise AssertionError("a whole index was rebuilt for one change")

    monkeypatch.setattr(index_module.AclIndex, "build", no_rebuild)
    first.create_acls([acl("one-more")])
    first.delete_acls([acl("t7").to_filter()])
    caught_up(first, second)
    assert len(second.acls()) == 100 and second.ready


def test_the_state_file_is_private(tmp_path):
    path = tmp_path / "state.db"
    with node(str(path)) as security:
        security.create_acls([acl("t")])
        for file in tmp_path.iterdir():
            assert stat.S_IMODE(os.stat(file).st_mode) == 0o600, file


def test_lag_and_offset_are_reported(two_nodes):
    first, second = two_nodes
    assert (first.applied_offset, first.lag) == (0, 0)
    first.create_acls([acl("a"), acl("b")])
    assert first.applied_offset == 2  # a writer reads its own writes at once
    caught_up(first, second)
    assert (second.applied_offset, second.lag, second.ready) == (2, 0, True)


# ---------------------------------------------------------------------- the property


def node_state(security):
    acls = {stored.acl_id: stored.binding for stored in security.stored_acls()}
    credentials = {}
    for description in security.describe_user_scram_credentials().all().values():
        for info in description.infos:
            credentials[(description.user, info.mechanism)] = security.scram_credential(description.user, info.mechanism)
    tokens = {token.token_id: token.info for token in security.delegation_tokens.describe_tokens()}
    return acls, credentials, tokens


def snapshot_state(snapshot):
    return dict(snapshot.acls), dict(snapshot.credentials), {i: info for i, (info, _) in snapshot.tokens.items()}


NAMES = ["a", "b", "c"]
operations = st.one_of(
    st.tuples(st.just("create_acl"), st.sampled_from(NAMES), st.sampled_from(["ALLOW", "DENY"])),
    st.tuples(st.just("delete_acl"), st.sampled_from(NAMES), st.just(None)),
    st.tuples(st.just("upsert_user"), st.sampled_from(NAMES), st.integers(4096, 4100)),
    st.tuples(st.just("delete_user"), st.sampled_from(NAMES), st.just(None)),
    st.tuples(st.just("create_token"), st.sampled_from(NAMES), st.just(None)),
    st.tuples(st.just("expire_token"), st.sampled_from(NAMES), st.just(None)),
    st.tuples(st.just("catch_up"), st.just(None), st.just(None)),
)


def perform(security, operation, name, argument):
    if operation == "create_acl":
        security.create_acls([acl(name, permission=argument)])
    elif operation == "delete_acl":
        security.delete_acls([AclBindingFilter(ResourcePattern("TOPIC", name).to_filter(), AccessControlEntryFilter())])
    elif operation == "upsert_user":
        security.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(name, ScramCredentialInfo(SHA256, argument), "pw", b"salt")]
        )
    elif operation == "delete_user":
        security.alter_user_scram_credentials([UserScramCredentialDeletion(name, SHA256)])
    elif operation == "create_token":
        security.create_delegation_token(ADMIN, owner=f"User:{name}", renewers=["User:admin"])
    elif operation == "expire_token":
        for token in security.describe_delegation_tokens(ADMIN, [f"User:{name}"])[:1]:
            security.expire_delegation_token(ADMIN, token.hmac, -1)
    else:
        security.follower.catch_up()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 2), operations), min_size=1, max_size=25))
def test_every_follower_equals_a_replay_of_the_log(steps):
    """Writes from three writers in any interleaving, followers catching up at any point (and in
    their own threads): every node ends equal to a replay of the log, and to the snapshot."""
    store = MemoryStateStore()

    class SharedStore:
        @hookimpl
        def kafkasec_state_store(self, security, path):
            return store

    nodes = [KafkaSecurity.from_config(CONFIG, plugins=[SharedStore()]) for _ in range(3)]
    try:
        for which, (operation, name, argument) in steps:
            try:
                perform(nodes[which], operation, name, argument)
            except KafkaError:
                pass  # refused by Kafka's rules (e.g. deleting a missing credential): nothing logged
        replayed = StateSnapshot().replay(store.read_log(0, 10**6))
        assert replayed == store.snapshot()
        for each in nodes:
            each.follower.catch_up()
            assert each.ready
            assert node_state(each) == snapshot_state(replayed)
    finally:
        for each in nodes:
            each.close()
