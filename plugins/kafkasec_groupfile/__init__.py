"""Reference plugin: group membership from a text file, reloaded when the file changes.

Kafka has no groups; with this plugin an ACL for ``Group:eng`` applies to every member of
``eng`` (see the ``kafkasec_expand_principal`` hook). docs/plugins.md describes the settings
and the file format:

    # group: member, member, ...
    eng: alice, User:bob
    ops: carol
    eng: dave

Membership is one immutable mapping, swapped whole on reload, so an authorization never sees
half a file and never waits for a reload. A file that is missing or malformed at start-up
fails the start; one that turns bad later is logged and the previous membership stays.
"""

from __future__ import annotations

import logging
import os
import threading
from time import monotonic
from types import MappingProxyType
from typing import Mapping

from kafkasec import KafkaPrincipal, hookimpl
from kafkasec.principals import acl_principal
from kafkasec.settings import Setting, parse_milliseconds

NAME = "groupfile"
PATH_SETTING = "kafkasec.groupfile.path"
INTERVAL_SETTING = "kafkasec.groupfile.check.interval.ms"
DEFAULT_INTERVAL_MS = 1000
GROUP_TYPE = "Group"

logger = logging.getLogger("kafkasec.groupfile")

Membership = Mapping[str, tuple[KafkaPrincipal, ...]]
"""Member (as ACLs name it, ``acl_principal(principal)``, e.g. "User:alice") -> its groups, in file order."""


def _name(kind: str, text: str) -> str:
    """A group or member name: present, and without whitespace (usually a missing comma)."""
    if not text:
        raise ValueError(f"empty {kind} name")
    if len(text.split()) != 1:
        raise ValueError(f"{kind} {text!r} contains whitespace (a missing comma?)")
    return text


def _member(text: str) -> str:
    """``Type:name`` as written, or a bare name as ``User:<name>``, as ACLs name the principal."""
    _name("member", text)
    if ":" not in text:
        return str(KafkaPrincipal.user(text))
    principal_type, _, name = text.partition(":")
    if not principal_type or not name:
        raise ValueError(f"member {text!r} needs both a type and a name, as in 'User:alice'")
    return text


def parse_groups(text: str) -> Membership:
    """Read ``group: member, member, ...`` lines; a ValueError names the offending line.

    A group may span several lines (its members accumulate); a line with no members names a
    group that has none.
    """
    groups_by_member: dict[str, dict[KafkaPrincipal, None]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, members = line.partition(":")
        try:
            if not colon:
                raise ValueError("expected 'group: member, member, ...'")
            group = KafkaPrincipal(GROUP_TYPE, _name("group", name.strip()))
            for item in members.split(",") if members.strip() else ():
                groups_by_member.setdefault(_member(item.strip()), {})[group] = None
        except ValueError as error:
            raise ValueError(f"line {number}: {error}: {line!r}") from None
    return MappingProxyType({member: tuple(groups) for member, groups in groups_by_member.items()})


def _signature(stat: os.stat_result) -> tuple[int, int, int]:
    """What changes when the file is replaced (inode) or rewritten (mtime, size)."""
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def read_groups(path: str) -> tuple[Membership, tuple[int, int, int]]:
    """Parse the file at ``path``, with the signature of what was read.

    The signature comes from the open file, so a file rewritten while being read is read
    again at the next check. Errors are ValueErrors that name the setting, the file and the line.
    """
    where = f"{PATH_SETTING}={path!r}"
    try:
        with open(path, "rb") as file:
            signature = _signature(os.fstat(file.fileno()))
            data = file.read()
    except OSError as error:
        raise ValueError(f"{where}: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8-sig")  # an editor's byte-order mark is not part of a name
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(f"{where}, line {line}: not UTF-8 text") from None
    try:
        return parse_groups(text), signature
    except ValueError as error:
        raise ValueError(f"{where}, {error}") from None



class GroupFile:
    """The membership read from one file, and when to look at the file again."""

    def __init__(self, path: str, interval_ms: int):
        self.path = path
        self.interval = interval_ms / 1000
        self._signature: tuple[int, int, int] | None  # None: the file was missing at the last check
        self.membership, self._signature = read_groups(path)
        self._next_check = monotonic() + self.interval
        self._lock = threading.Lock()

    def groups_of(self, principal: KafkaPrincipal) -> tuple[KafkaPrincipal, ...]:
        if monotonic() >= self._next_check:
            self._check()
        # The file names members as text, read at the first ':' as Kafka reads an ACL's
        # principal: a principal whose type has a ':' is no member (acl_principal gives None).
        member = acl_principal(principal)
        return () if member is None else self.membership.get(member, ())

    def _check(self) -> None:
        """Reload if the file changed; one thread checks while the others read the old mapping."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._next_check = monotonic() + self.interval
            try:
                signature = _signature(os.stat(self.path))
            except OSError:
                signature = None
            if signature == self._signature:
                return
            try:
                self.membership, self._signature = read_groups(self.path)
            except ValueError as error:
                # Remember the bad version, so it is reported once rather than at every check.
                self._signature = signature
                logger.warning("%s; keeping the previous group membership", error)
                return
            logger.info("reloaded group file %r: %d members", self.path, len(self.membership))
        finally:
            self._lock.release()


class _Expander:
    """The hook implementation, registered only when the plugin is configured: an installed
    but unconfigured plugin then costs nothing per authorization."""

    def __init__(self, security, group_file: GroupFile):
        self.security = security
        self.group_file = group_file

    @hookimpl
    def kafkasec_expand_principal(self, security, principal):
        if security is not self.security:  # a plugin manager shared by several instances
            return None
        return self.group_file.groups_of(principal)


@hookimpl
def kafkasec_startup(security):
    path = security.config.get(PATH_SETTING)
    if path is None:
        return
    interval_ms = parse_milliseconds(security.config, INTERVAL_SETTING, DEFAULT_INTERVAL_MS)
    group_file = security.plugin_state[NAME] = GroupFile(os.fspath(path), interval_ms)
    security.register_plugin(_Expander(security, group_file), NAME)


@hookimpl
def kafkasec_settings():
    return (
        Setting(PATH_SETTING, "string", None, NAME, "the group file (group: members); unset: off"),
        Setting(INTERVAL_SETTING, "milliseconds", DEFAULT_INTERVAL_MS, NAME, "how often the file is checked for changes"),
    )
