"""kafkasec.server.heap: what a serving process loaded at start is left out of garbage collection."""

from __future__ import annotations

import gc
import logging

import pytest

from kafkasec import AclBinding, KafkaPrincipal, KafkaSecurity, RequestContext, ResourcePattern
from kafkasec.server.heap import GC_FREEZE, freeze_startup_heap


@pytest.fixture
def unfrozen():
    """The test process's heap as it was: whatever a test froze is given back to the collector."""
    assert gc.get_freeze_count() == 0, "something froze the test process's heap before this test"
    yield
    gc.unfreeze()


def _tracked_ids() -> set[int]:
    return {id(value) for value in gc.get_objects()}


def test_the_state_loaded_before_the_freeze_is_no_longer_scanned_and_later_objects_are(tmp_path, unfrozen, caplog):
    security = KafkaSecurity.from_config({"kafkasec.state.path": str(tmp_path / "state.db")})
    try:
        security.create_acls([AclBinding.of("TOPIC", f"orders-{n}", "LITERAL", "User:alice", "*", "READ", "ALLOW")
                              for n in range(2000)])
        kept = [[n] for n in range(10)]  # lists: always tracked, alive at the freeze
        assert all(id(value) in _tracked_ids() for value in kept)
        scanned_before = len(gc.get_objects())
        with caplog.at_level(logging.INFO, logger="kafkasec.server"):
            frozen = freeze_startup_heap({})
        assert frozen > 2000
        assert f"{frozen} objects loaded at start are left out of garbage collection ({GC_FREEZE})" in caplog.text
        # The ACLs (their bindings, index and cache: several objects each) are no longer scanned.
        assert len(gc.get_objects()) < scanned_before - 2000
        tracked = _tracked_ids()
        assert not any(id(value) in tracked for value in kept)
        later = [True]
        assert id(later) in _tracked_ids()  # made after the freeze: collected as before
        assert security.is_allowed(_alice(), "READ", ResourcePattern("TOPIC", "orders-1999"))
    finally:
        security.close()


def _alice():
    return RequestContext(KafkaPrincipal("User", "alice"), "127.0.0.1")


@pytest.mark.parametrize("value", [False, "false", " FALSE "])
def test_the_setting_turns_it_off(unfrozen, caplog, value):
    with caplog.at_level(logging.INFO, logger="kafkasec.server"):
        assert freeze_startup_heap({GC_FREEZE: value}) == 0
    assert gc.get_freeze_count() == 0 and "garbage collection" not in caplog.text


def test_a_bad_value_is_refused_by_name(unfrozen):
    with pytest.raises(ValueError, match=GC_FREEZE.replace(".", r"\.")):
        freeze_startup_heap({GC_FREEZE: "sometimes"})
    assert gc.get_freeze_count() == 0
