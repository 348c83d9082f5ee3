"""Durable state behind one small interface: SQLite by default, in memory for tests.

A store has ``load_acls()``, ``apply_acl_changes(added, removed_ids)`` (atomic) and ``close()``;
a plugin can provide another through the ``kafkasec_state_store`` hook. The built-in stores also
keep SCRAM credentials (``scram_credential``, ``describe_scram_credentials``,
``apply_scram_changes``), which the ``kafkasec_scram_credential_store`` hook hands out.
"""

from __future__ import annotations

import os

from kafkasec.store.memory import MemoryStateStore
from kafkasec.store.sqlite import SqliteStateStore, StateError

MEMORY = ":memory:"


def open_state_store(path: str | os.PathLike | None):
    """The built-in store for ``path``: in memory for None or ":memory:", else a SQLite file."""
    if path is None or os.fspath(path) == MEMORY:
        return MemoryStateStore()
    return SqliteStateStore(path)


__all__ = ["MEMORY", "MemoryStateStore", "SqliteStateStore", "StateError", "open_state_store"]
