"""State kept in memory: the same interface as the SQLite store, for tests and throwaway use."""

from __future__ import annotations

import threading
from typing import Iterable, Sequence

from kafkasec.acl import AclBinding


class MemoryStateStore:
    """Nothing survives the process; everything else behaves as :class:`SqliteStateStore`."""

    path = ":memory:"

    def __init__(self):
        self._lock = threading.Lock()
        self._acls: dict[str, AclBinding] = {}

    def load_acls(self) -> list[tuple[str, AclBinding]]:
        with self._lock:
            return list(self._acls.items())

    def apply_acl_changes(self, added: Sequence[tuple[str, AclBinding]], removed: Iterable[str]) -> None:
        with self._lock:
            acls = dict(self._acls)
            for acl_id in removed:
                acls.pop(acl_id, None)
            for acl_id, binding in added:
                if acl_id in acls:
                    raise ValueError(f"an ACL with id {acl_id!r} is already stored")
                acls[acl_id] = binding
            self._acls = acls

    def close(self) -> None:
        pass
