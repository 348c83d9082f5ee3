"""Readers never block on writers and never see half an update."""

import threading
import time

import pytest

from kafkasec import AclBinding, AclBindingFilter, Action, ResourcePattern, StandardAuthorizer
from kafkasec.context import AuthorizationResult, RequestContext

ALLOWED = AuthorizationResult.ALLOWED


@pytest.mark.slow
def test_authorize_from_threads_while_acls_change():
    authorizer = StandardAuthorizer()
    topics = [f"t{i}" for i in range(10)]
    # Background ACLs so that each change copies a realistic index.
    authorizer.create_acls(
        [AclBinding.of("TOPIC", f"bg{i}", "LITERAL", "User:x", "*", "READ", "ALLOW") for i in range(2000)]
    )
    grant = [AclBinding.of("TOPIC", t, "LITERAL", "User:alice", "*", "READ", "ALLOW") for t in topics]
    revoke = [AclBindingFilter.of("TOPIC", None, "LITERAL", "User:alice")]
    actions = [Action("READ", ResourcePattern("TOPIC", t)) for t in topics]
    context = RequestContext.for_principal("User:alice")
    stop = threading.Event()
    torn, answers, errors = [], [0, 0], []

    def reader():
        try:
            while not stop.is_set():
                results = authorizer.authorize(context, actions)
                # One create_acls or delete_acls call is one snapshot: all ten or none.
                if len(set(results)) != 1:
                    torn.append(results)
                answers[results[0] is ALLOWED] += 1
        except Exception as error:  # surfaced below: a reader must never fail
            errors.append(error)

    readers = [threading.Thread(target=reader) for _ in range(6)]
    for thread in readers:
        thread.start()
    changes = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        # Hold each state a moment so that readers see both, not only the one that lasts longer.
        authorizer.create_acls(grant)
        time.sleep(0.002)
        authorizer.delete_acls(revoke)
        time.sleep(0.002)
        changes += 2
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors
    assert not torn
    assert changes > 20
    assert answers[0] > 0 and answers[1] > 0, answers


def test_concurrent_writers_lose_nothing():
    authorizer = StandardAuthorizer()

    def writer(n):
        for i in range(100):
            authorizer.create_acls([AclBinding.of("TOPIC", f"w{n}-{i}", "LITERAL", "User:a", "*", "READ", "ALLOW")])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(authorizer.acls()) == 400
    assert len(authorizer.index) == 400
