"""What a serving process holds for its whole life, kept out of the garbage collector's scans.

CPython's cyclic collector looks at every tracked object of the generations it collects, and a
collection of the oldest one looks at them all, holding the GIL: the event loop, and every
connection on it, waits. Most of a gateway's heap is what it loaded when it started and keeps:
the ACLs and their index, the principals, kio's schemas. Such a collection is rare (it waits
until the objects promoted since the last one are a quarter of the old ones: connections
coming and going, the state changing), so it costs little CPU on average, and a stall when it
comes. The authorizer's index freezes the heap after a build that leaves more than
100,000 new objects (a state of ~100,000 ACLs; :mod:`kafkasec.authorizer.index`); below that
nothing did, and a full collection of a gateway that loaded 10,000 ACLs stalled it 53-100 ms
(``benchmarks/bench_gateway_request.py --acls 10000 --compare-gc-freeze``, on this project's
2-core box), 14 ms with none.

:func:`freeze_startup_heap` moves every object alive at that moment to the permanent
generation (``gc.freeze``), which collections skip: the same full collection then takes
0.1 ms. Objects made later are collected as before, and a frozen object whose references all
go is freed as any other; only a reference cycle among frozen objects that becomes garbage
later is never collected. That is why it is done once, when the listeners have started
(little but the state is alive then), and not again at each change of the state.
"""

from __future__ import annotations

import gc
import logging
from typing import Mapping

from kafkasec.settings import parse_bool

GC_FREEZE = "kafkasec.server.gc.freeze"

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
