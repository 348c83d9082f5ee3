"""What wakes a follower's thread without a timer: a file descriptor that becomes readable.

A PostgreSQL follower waits on its LISTEN connection's socket; a SQLite follower, on Linux, on
an inotify descriptor that reports writes to the state file and its WAL. Either wait also ends,
at once, when the store is closed from another thread (a byte on a socket pair of its own), so
a follower can block for seconds between looks and still shut down promptly. An idle node then
spends no CPU on its state at all (a timer every few milliseconds cost a serve process about 1 %
of a core).

inotify is reached through ctypes (three libc calls: ``inotify_init1``, ``inotify_add_watch``
and a ``read`` of the descriptor) rather than a package: that is the whole of what is needed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import selectors
import socket
import struct
import sys
import threading
from typing import Iterable

log = logging.getLogger(__name__)


class InterruptibleWait:
    """Waits until a file descriptor is readable; :meth:`close`, from any thread, ends the wait in
    progress and makes every later one return at once."""

    def __init__(self) -> None:
        # A socket pair, not a pipe: Windows selects sockets only (and a PostgreSQL socket there).
        self._interrupted, self._interrupt = socket.socketpair()
        # Held by the waiting thread: close() frees the pair only once no wait is using it.
        self._waiting = threading.Lock()
        self.closed = False

    def wait(self, fd: int, timeout_s: float) -> bool:
        """Whether ``fd`` became readable (or hung up) within ``timeout_s``; False after the
        timeout, or when closed."""
        with self._waiting:
            if self.closed:
                return False
            with selectors.DefaultSelector() as selector:  # epoll on Linux: no limit on descriptor numbers
                selector.register(fd, selectors.EVENT_READ)
                selector.register(self._interrupted, selectors.EVENT_READ)
                ready = selector.select(max(timeout_s, 0))
        return not self.closed and any(key.fd == fd for key, _ in ready)

    def close(self) -> None:
        """End the wait in progress, if any; idempotent."""
        if self.closed:
            return
        self.closed = True
        self._interrupt.send(b"\0")
        with self._waiting:
            self._interrupted.close()
            self._interrupt.close()


_IN_MODIFY, _IN_ATTRIB = 0x2, 0x4  # <sys/inotify.h>: a write; a change of times or permissions
_EVENT_HEADER = struct.Struct("iIII")
"""struct inotify_event up to its name: wd, mask, cookie, len (of the NUL-padded name after it)."""


class FileChanges:
    """Writes to some files of one directory, and changes of their times (``os.utime``: how a
    writer announces something that is no write), reported by Linux inotify
    (:func:`watch_file_changes`)."""

    def __init__(self, inotify_fd: int, names: frozenset[str]):
        self._fd = inotify_fd
        self._names = names
        self._wait = InterruptibleWait()
        self._reading = threading.Lock()  # held while the descriptor is used: close() releases it after

    def wait(self, timeout_s: float) -> bool:
        """Whether one of the files was written or touched (or the kernel's event queue
        overflowed, which may hide that) within ``timeout_s``. Every event queued so far is consumed, so
        the next wait blocks until a new write."""
        with self._reading:
            if not self._wait.wait(self._fd, timeout_s):
                return False
            written = False
            while True:
                try:
                    events = os.read(self._fd, 64 * 1024)
                except BlockingIOError:
                    return written
                written = written or any(name is None or name in self._names for name in _event_names(events))

    def close(self) -> None:
        """End a wait in progress and release the descriptor; idempotent."""
        if self._wait.closed:
            return
        self._wait.close()
        with self._reading:
            os.close(self._fd)


def _event_names(events: bytes) -> Iterable[str | None]:
    """The file name of each event read from an inotify descriptor; None for an event about no
    file of the directory (IN_Q_OVERFLOW: events were lost; IN_IGNORED: the watch is gone)."""
    position = 0
    while position < len(events):
        _wd, _mask, _cookie, length = _EVENT_HEADER.unpack_from(events, position)
        start = position + _EVENT_HEADER.size
        name = events[start:start + length].rstrip(b"\0")
        yield os.fsdecode(name) if name else None
        position = start + length


def watch_file_changes(directory: str, names: Iterable[str]) -> FileChanges | None:
    """A watch for writes to and touches of the files ``names`` of ``directory``, or None where
    inotify cannot be had: not Linux, a libc without it, or the per-user limit of inotify
    instances (``fs.inotify.max_user_instances``) or watches reached; the caller then polls."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        return None
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)  # IN_NONBLOCK and IN_CLOEXEC are these
    if fd < 0:
        log.warning("no inotify for %s (%s): the state is polled instead", directory, os.strerror(ctypes.get_errno()))
        return None
    # The directory, not the files: SQLite creates and deletes its -wal file as connections come
    # and go, and a watch on a file ends with it.
    if libc.inotify_add_watch(fd, os.fsencode(directory), _IN_MODIFY | _IN_ATTRIB) < 0:
        log.warning("no inotify watch on %s (%s): the state is polled instead", directory, os.strerror(ctypes.get_errno()))
        os.close(fd)
        return None
    return FileChanges(fd, frozenset(names))


__all__ = ["FileChanges", "InterruptibleWait", "watch_file_changes"]
