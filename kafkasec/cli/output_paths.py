"""Where a command writes its output: never over something it was not asked to replace.

A file is written over only with ``--force`` and never when it is a SQLite database (a state
file: its ACLs, SCRAM credentials and tokens would be gone). A directory that is not empty is
replaced only with ``--overwrite``, and never when it holds the state file or the command's own
input files (``--output .`` would otherwise delete them with the rest).
"""

from __future__ import annotations

import os
from typing import Iterable

from kafkasec.cli.options import UsageError

_SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_database(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def check_output_file(path: str, *, force: bool, option: str = "--file") -> None:
    """Refuse to write ``path`` over a file unless ``force``; never over a directory or a SQLite
    database, whatever ``force`` says."""
    if os.path.isdir(path):
        raise UsageError(f"{option} {path} is a directory, not a file")
    if not os.path.exists(path):
        return
    if is_sqlite_database(path):
        raise UsageError(f"{option} {path} is a SQLite database (a state file?): it is never written over")
    if not force:
        raise UsageError(f"{option} {path} exists: pass --force to write over it")


def check_output_directory(path: str, *, overwrite: bool, keep: Iterable[str], option: str = "--output") -> None:
    """Refuse an existing file or non-empty directory at ``path`` unless ``overwrite``; never one
    that is, or holds, one of the ``keep`` paths (the state file, the inputs)."""
    if not os.path.exists(path):
        return
    target = os.path.realpath(path)
    for kept in keep:
        kept_path = os.path.realpath(kept)
        if kept_path == target or kept_path.startswith(target.rstrip(os.sep) + os.sep):
            raise UsageError(f"{option} {path} holds {kept}, which replacing it would delete: choose another {option}")
    if os.path.isdir(path) and not os.listdir(path):
        return
    if not overwrite:
        raise UsageError(f"{option} {path} exists and is not empty: pass --overwrite to replace it")
