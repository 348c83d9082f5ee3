"""kafkasec.server.heap: what a serving process loaded at start is left out of garbage collection,
the collector runs after more objects, and its large buffers come from glibc's heap."""

from __future__ import annotations

import gc
import json
import logging
import platform
import subprocess
import sys

import pytest

from kafkasec import AclBinding, KafkaPrincipal, KafkaSecurity, RequestContext, ResourcePattern
from kafkasec.server.heap import (
    DEFAULT_GC_THRESHOLD,
    DEFAULT_MMAP_THRESHOLD,
    GC_FREEZE,
    GC_THRESHOLD,
    MMAP_THRESHOLD,
    freeze_startup_heap,
    tune_allocator,
    tune_collector,
)


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


@pytest.fixture
def thresholds():
    """The test process's collector thresholds as they were, after the test."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


@pytest.mark.parametrize("config, first", [({}, DEFAULT_GC_THRESHOLD), ({GC_THRESHOLD: " 20000 "}, 20_000), ({GC_THRESHOLD: 0}, None)])
def test_the_collector_runs_after_the_setting_s_count_of_objects(thresholds, caplog, config, first):
    with caplog.at_level(logging.INFO, logger="kafkasec.server"):
        assert tune_collector(config) == (first or 0)
    if first is None:  # 0: Python's own, untouched
        assert gc.get_threshold() == thresholds and "garbage collector" not in caplog.text
        return
    assert gc.get_threshold() == (first, *thresholds[1:])  # the older generations' as they were
    assert f"the garbage collector runs after {first} more objects are made than freed ({GC_THRESHOLD})" in caplog.text
    # It counts: fewer than that many new tracked objects run no collection of the young generation.
    collected = gc.get_stats()[0]["collections"]
    kept = [[] for _ in range(first // 2)]
    assert gc.get_stats()[0]["collections"] == collected and len(kept) == first // 2


@pytest.mark.parametrize("value", ["-1", "many", "1e5"])
def test_a_bad_collector_threshold_is_refused_by_name(thresholds, value):
    with pytest.raises(ValueError, match=GC_THRESHOLD.replace(".", r"\.")):
        tune_collector({GC_THRESHOLD: value})
    assert gc.get_threshold() == thresholds


# --- glibc's malloc: tune_allocator changes the process it runs in, so each test is a process of its own.

MAPPED_BLOCKS = r"""
import ctypes, json, sys
from kafkasec.server.heap import tune_allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
tuned = tune_allocator(json.loads(sys.argv[1]))
before = libc.mallinfo2().hblks
buffer = bytearray(1 << 20)  # a Fetch answer's size
print(json.dumps({"tuned": tuned, "mapped": libc.mallinfo2().hblks - before}))
"""


def _mapped_blocks(config: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", MAPPED_BLOCKS, json.dumps(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")


@glibc_only
def test_a_megabyte_buffer_is_a_mapping_of_its_own_by_default_and_comes_from_the_heap_once_tuned():
    assert _mapped_blocks({MMAP_THRESHOLD: 0}) == {"tuned": 0, "mapped": 1}
    assert _mapped_blocks({}) == {"tuned": DEFAULT_MMAP_THRESHOLD, "mapped": 0}
    assert _mapped_blocks({MMAP_THRESHOLD: "2097152"}) == {"tuned": 2 << 20, "mapped": 0}
    assert _mapped_blocks({MMAP_THRESHOLD: 512 * 1024}) == {"tuned": 512 * 1024, "mapped": 1}


@pytest.mark.parametrize("value, message", [
    ("-1", "must be a whole number of bytes >= 0"),
    ("32MB", "must be a whole number of bytes >= 0"),
    (str(DEFAULT_MMAP_THRESHOLD + 1), "at most 33554432"),
])
def test_a_bad_threshold_is_refused_by_name(value, message):
    with pytest.raises(ValueError, match=message) as refused:
        tune_allocator({MMAP_THRESHOLD: value})
    assert MMAP_THRESHOLD in str(refused.value)
