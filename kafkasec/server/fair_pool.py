"""Threads shared by clients in turns, so that one client's heavy work cannot hold all of them.

The endpoint runs work that may take long (a Metadata answer about 40,000 topics, the private-key
operation of a TLS handshake) on threads, and many clients share those threads. With one FIFO
queue, four heavy requests of one user hold a two-thread pool for seconds while every other
client's small request waits behind them. A :class:`FairPool` keeps one queue per *key* (the
principal who asked, or the client's address) and hands free threads to the keys in turn
(round robin), each key having at most ``per_key`` jobs running at once. A client with many
jobs waits for its own; a client with one gets the next free thread.

Scheduling runs on the event loop (no locks): :meth:`FairPool.run` is a coroutine, the jobs run
on a :class:`concurrent.futures.ThreadPoolExecutor`, and their completion comes back to the loop
with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
from typing import Any, Callable, Hashable

_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future]


class FairPool:
    """``threads`` threads named ``name``, shared in turns between keys; see the module docstring.

    ``per_key`` defaults to one less than ``threads`` (one when there is a single thread), so
    that whatever one key sends, another key finds a free thread."""

    def __init__(self, threads: int, name: str, *, per_key: int | None = None):
        if threads < 1:
            raise ValueError(f"a FairPool needs at least one thread, not {threads}")
        per_key = max(1, threads - 1) if per_key is None else per_key
        if not 1 <= per_key <= threads:
            raise ValueError(f"per_key must be between 1 and threads ({threads}), not {per_key}")
        self.threads = threads
        self.per_key = per_key
        self._executor = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=name)
        self._waiting: dict[Hashable, collections.deque[_Job]] = {}
        self._running: collections.Counter[Hashable] = collections.Counter()
        self._turns: collections.deque[Hashable] = collections.deque()
        """Keys with a job waiting and a running count below per_key, in the order they get a thread."""
        self._idle = threads

    def waiting(self, key: Hashable | None = None) -> int:
        """Jobs queued and not yet started, of ``key`` or of every key (for tests and monitoring)."""
        if key is not None:
            return len(self._waiting.get(key, ()))
        return sum(len(jobs) for jobs in self._waiting.values())

    async def run(self, key: Hashable, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` on one of the threads, when ``key``'s turn comes; its result.
        Cancelling the caller before the job started drops the job."""
        future = asyncio.get_running_loop().create_future()
        jobs = self._waiting.setdefault(key, collections.deque())
        jobs.append((function, args, future))
        if len(jobs) == 1 and self._running[key] < self.per_key:
            self._turns.append(key)
        self._dispatch()
        return await future

    def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while self._idle and self._turns:
            key = self._turns.popleft()
            jobs = self._waiting[key]
            function, args, future = jobs.popleft()
            if not future.cancelled():
                self._idle -= 1
                self._running[key] += 1
                done = self._executor.submit(function, *args)
                done.add_done_callback(functools.partial(self._hand_back, loop, key, future))
            if not jobs:
                del self._waiting[key]
            elif self._running[key] < self.per_key:
                self._turns.append(key)  # still below its share: its next turn comes after the others'

    def _hand_back(self, loop: asyncio.AbstractEventLoop, key: Hashable, future: asyncio.Future,
                   done: concurrent.futures.Future) -> None:
        """On the job's thread: tell the loop the job is over."""
        loop.call_soon_threadsafe(self._finished, key, done, future)

    def _finished(self, key: Hashable, done: concurrent.futures.Future, future: asyncio.Future) -> None:
        self._idle += 1
        self._running[key] -= 1
        if not self._running[key]:
            del self._running[key]
        if key in self._waiting and key not in self._turns and self._running[key] < self.per_key:
            self._turns.append(key)
        if not future.cancelled():
            error = done.exception()
            if error is None:
                future.set_result(done.result())
            else:
                future.set_exception(error)
        self._dispatch()

    def shutdown(self) -> None:
        """Wait for the running jobs and stop the threads; jobs still waiting are cancelled."""
        for jobs in self._waiting.values():
            for _, _, future in jobs:
                future.cancel()
        self._waiting.clear()
        self._turns.clear()
        self._executor.shutdown(wait=True)
