"""A serving process's memory: what it loaded at start kept out of the garbage collector's
scans, and its large buffers kept out of fresh pages.

**Garbage collection.** CPython's cyclic collector looks at every tracked object of the
generations it collects, and a collection of the oldest one looks at them all, holding the
GIL: the event loop, and every connection on it, waits. Most of a gateway's heap is what it
loaded when it started and keeps: the ACLs and their index, the principals, kio's schemas.
Such a collection is rare (it waits until the objects promoted since the last one are a
quarter of the old ones: connections coming and going, the state changing), so it costs
little CPU on average, and a stall when it comes. The authorizer's index freezes the heap after
a build that leaves more than 100,000 new objects (a state of ~100,000 ACLs;
:mod:`kafkasec.authorizer.index`); below that nothing did, and a full collection of a gateway
that loaded 10,000 ACLs stalled it 53-100 ms (``benchmarks/bench_gateway_request.py --acls
10000 --compare-gc-freeze``, on this project's 2-core box), 14 ms with none.
:func:`freeze_startup_heap` moves every object alive at that moment to the permanent
generation (``gc.freeze``), which collections skip: the same full collection then takes
0.1 ms. Objects made later are collected as before, and a frozen object whose references all
go is freed as any other; only a reference cycle among frozen objects that becomes garbage
later is never collected. That is why it is done once, when the listeners have started
(little but the state is alive then), and not again at each change of the state.

**Young collections.** The collector also runs whenever 700 more container objects were made
than freed (Python's first threshold), and every hundredth such run takes the older
generations too. A request that names 40,000 groups or topics makes hundreds of thousands of
objects while it is read, authorized and answered (on a thread, its principal's turn:
:mod:`kafkasec.server.gateway`), and with the frozen heap out of the count a full collection
came every few hundred thousand of them, each scanning what those requests held alive: up to
~120 ms with the loop waiting. :func:`tune_collector` raises the first threshold to
``kafkasec.server.gc.threshold`` (50,000): other clients' p99 during four such requests went
from 21-66 ms to 8-14 ms in three runs (``benchmarks/bench_hostile.py --only heavy-gateway``). A small
request leaves no garbage, so at ordinary loads nothing changes.

**Large buffers.** A gateway moves frames of up to megabytes (a Produce of batches, a Fetch
answer), and every read, copy and frame of one is a buffer of that size, made and freed many
times a second. glibc's malloc gives a block above its mmap threshold (128 KiB at first,
raised as such blocks are freed) pages of its own, and gives the free memory at its heap's top
back to the system beyond a trim threshold; either way a large buffer is, again and again,
fresh pages that the kernel zeroes and maps one at a time. On the 2-core box, copying 1 MB
into a new ``bytes`` while another such buffer lived took 1,070 µs, and 45 µs once glibc kept
these blocks in its heap; a gateway's CPU per 1 MiB Fetch answer went to 0.44-0.50x
(``benchmarks/bench_gateway_request.py --compare-malloc``). :func:`tune_allocator` sets glibc's ``M_MMAP_THRESHOLD`` to
``kafkasec.server.malloc.mmap.threshold`` (32 MiB, the largest glibc takes) and
``M_TRIM_THRESHOLD`` to twice that (what glibc sets when it raises the threshold itself): up to
that much freed memory stays with the process for its next buffers. Elsewhere than glibc
(musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import platform
from typing import Mapping

from kafkasec.settings import parse_bool, parse_count

GC_FREEZE = "kafkasec.server.gc.freeze"
GC_THRESHOLD = "kafkasec.server.gc.threshold"
DEFAULT_GC_THRESHOLD = 50_000
MMAP_THRESHOLD = "kafkasec.server.malloc.mmap.threshold"
DEFAULT_MMAP_THRESHOLD = 32 << 20
"""glibc's largest mmap threshold on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``)."""

# mallopt's parameters, from glibc's malloc.h.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

log = logging.getLogger("kafkasec.server")


def freeze_startup_heap(config: Mapping[str, object]) -> int:
    """Freeze the objects alive now (unless ``kafkasec.server.gc.freeze`` is false): how many
    the garbage collector no longer scans."""
    if not parse_bool(GC_FREEZE, config.get(GC_FREEZE, True)):
        return 0
    gc.collect()  # what is garbage already goes first, not into the permanent generation
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("%d objects loaded at start are left out of garbage collection (%s)", frozen, GC_FREEZE)
    return frozen


def tune_collector(config: Mapping[str, object]) -> int:
    """Let ``kafkasec.server.gc.threshold`` more objects be made than freed before the garbage
    collector runs (0: Python's own threshold): the threshold set, or 0 when none was."""
    threshold = parse_count(config, GC_THRESHOLD, DEFAULT_GC_THRESHOLD, unit="objects")
    if threshold == 0:
        return 0
    gc.set_threshold(threshold, *gc.get_threshold()[1:])
    log.info("the garbage collector runs after %d more objects are made than freed (%s)", threshold, GC_THRESHOLD)
    return threshold


def tune_allocator(config: Mapping[str, object]) -> int:
    """Keep blocks below ``kafkasec.server.malloc.mmap.threshold`` bytes (0: glibc's own rules)
    in glibc's heap, and twice that of freed memory with the process: the threshold set, or 0
    when nothing was (the setting is 0, or the C library is not glibc)."""
    threshold = parse_count(config, MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD, unit="bytes")
    if threshold > DEFAULT_MMAP_THRESHOLD:
        raise ValueError(f"{MMAP_THRESHOLD} is at most {DEFAULT_MMAP_THRESHOLD} (glibc's largest), not {threshold}")
    if threshold == 0 or platform.libc_ver()[0] != "glibc":
        return 0
    libc = ctypes.CDLL(None)  # the process's own symbols: glibc's mallopt
    if not (libc.mallopt(_M_MMAP_THRESHOLD, threshold) and libc.mallopt(_M_TRIM_THRESHOLD, 2 * threshold)):
        log.warning("glibc refused %s=%d (mallopt); its own thresholds stay", MMAP_THRESHOLD, threshold)
        return 0
    log.info("buffers below %d bytes are kept in the heap, and up to %d freed bytes with the process (%s)",
             threshold, 2 * threshold, MMAP_THRESHOLD)
    return threshold
