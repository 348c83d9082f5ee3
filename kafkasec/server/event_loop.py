"""Which event loop serves the listeners: uvloop where it is installed, else asyncio's.

uvloop (libuv under asyncio's interface) takes a fifth to a third off the gateway's CPU per
small request (benchmarks/README.md, "The gateway's cost per request"): its sockets, timers
and callbacks are C. It comes with the ``wire`` extra on Linux and macOS; the setting
``kafkasec.server.event.loop`` chooses (``auto``: uvloop if importable; ``uvloop``: it, or an
error; ``asyncio``: the standard loop).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Callable, Coroutine, Mapping

EVENT_LOOP = "kafkasec.server.event.loop"
EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def loop_factory(config: Mapping[str, object]) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the event loop ``config`` asks for (``kafkasec.server.event.loop``)."""
    choice = str(config.get(EVENT_LOOP) or "auto").strip().lower()
    if choice not in EVENT_LOOPS:
        raise ValueError(f"{EVENT_LOOP} is one of {', '.join(EVENT_LOOPS)}, not {choice!r}")
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ValueError(f"{EVENT_LOOP}=uvloop, but uvloop is not installed (pip install uvloop)") from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``, for the log."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, Any], new_loop: Callable[[], asyncio.AbstractEventLoop]) -> Any:
    """``asyncio.run(main)`` on a loop from ``new_loop`` (what :func:`loop_factory` gives)."""
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=new_loop) as runner:
            return runner.run(main)
    loop = new_loop()  # Python 3.10 has no asyncio.Runner
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        asyncio.set_event_loop(None)
        loop.close()
