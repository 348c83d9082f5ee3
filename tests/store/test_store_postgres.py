"""The PostgreSQL backend as nodes on several hosts use it: NOTIFY wakes followers, a server
restart loses nothing acknowledged, and the URL's password never shows."""

import threading
import time

import pytest

from kafkasec import AclBinding, KafkaSecurity
from kafkasec.store import StateError
from kafkasec.store.postgres import PostgresStateStore, redacted
from kafkasec.store.records import StateSnapshot


def acl(name):
    return AclBinding.of("TOPIC", name, "LITERAL", "User:alice", "*", "READ", "ALLOW")


def node(url):
    return KafkaSecurity.from_config({"kafkasec.state.url": url})


def test_a_change_reaches_another_node_through_notify(postgres_url):
    with node(postgres_url) as first, node(postgres_url) as second:
        assert isinstance(second.store, PostgresStateStore)
        time.sleep(0.3)  # the second node is listening
        started = time.monotonic()
        first.create_acls([acl("orders")])
        assert second.follower.wait_for(first.applied_offset, 5)
        # Far under the follower's own look every 5 s: it was the notification that woke it.
        assert time.monotonic() - started < 0.09
        assert second.acls() == [acl("orders")]


def test_the_password_never_shows():
    url = "postgresql://kafkasec:s3cret-pw@127.0.0.1:1/nowhere"
    assert redacted(url) == "postgresql://kafkasec:***@127.0.0.1:1/nowhere"
    started = time.monotonic()
    with pytest.raises(StateError) as refused:
        PostgresStateStore(url)
    assert time.monotonic() - started < 10
    assert "s3cret-pw" not in str(refused.value) and "could not be reached" in str(refused.value)
    assert "127.0.0.1:1" in str(refused.value)


@pytest.mark.slow
def test_a_server_restart_mid_stream_loses_nothing_acknowledged(postgres_server, postgres_url):
    acknowledged, stop = [], threading.Event()
    with node(postgres_url) as writer, node(postgres_url) as follower:

        def write():
            number = 0
            while not stop.is_set():
                try:
                    writer.create_acls([acl(f"t{number}")])
                    acknowledged.append(f"t{number}")
                    number += 1
                except StateError:
                    time.sleep(0.05)  # the server is away: try the same ACL again

        thread = threading.Thread(target=write)
        thread.start()
        try:
            time.sleep(0.5)
            postgres_server.stop("fast")
            time.sleep(0.5)
            postgres_server.start()
            time.sleep(1.0)
            postgres_server.stop("immediate")  # as a crash this time
            postgres_server.start()
            time.sleep(1.0)
        finally:
            stop.set()
            thread.join(30)
            if not postgres_server.running:
                postgres_server.start()
        assert len(acknowledged) > 10
        store = PostgresStateStore(postgres_url)
        try:
            names = {binding.pattern.name for binding in store.snapshot().acls.values()}
            assert set(acknowledged) <= names
            assert StateSnapshot().replay(store.read_log(0, 10**6)) == store.snapshot()
            latest = store.latest_offset()
        finally:
            store.close()
        # The follower reconnected and caught up, and agrees with the database.
        assert follower.follower.wait_for(latest, 10) and follower.ready
        assert {b.pattern.name for b in follower.acls()} == names
        assert sorted(map(str, writer.acls())) == sorted(map(str, follower.acls()))
