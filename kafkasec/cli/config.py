"""Where the command works and with which settings: a state file (--state, the properties file,
the environment) or a running cluster (--bootstrap-server, logged in as the properties file says).

Commands that read (list, export, check, grid) see a cluster through :func:`open_security` as
an in-memory copy of its ACLs, so one code path serves both; commands that write reach the
cluster through :func:`open_cluster`, the Kafka protocol's admin requests.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Iterator

from kafkasec.cli.options import UsageError, raise_first_error
from kafkasec.client.settings import ClientSettings, is_client_only_setting, is_client_setting
from kafkasec.plugins import make_plugin_manager
from kafkasec.security import STATE_PATH, STATE_URL, KafkaSecurity
from kafkasec.settings import SettingsRegistry
from kafkasec.store import READ_ONLY
from kafkasec.store.base import StateError

if TYPE_CHECKING:
    from kafkasec.client.admin import ClusterAdmin

STATE_ENVIRONMENT_VARIABLE = "KAFKASEC_STATE"
DEFAULT_STATE_PATH = "kafkasec.db"


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file, as kafka-acls.sh's --command-config reads it.

    ``key=value``, ``key: value`` or ``key value`` lines; lines starting with ``#`` or ``!`` are
    comments; a line ending in a backslash continues on the next one (as the sasl.jaas.config
    lines of such files often do). Other escapes are kept as written.
    """
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    return dict(_key_and_value(text) for text in _logical_lines(lines))


# Java's rule: the key ends at the first '=', ':' or whitespace; one separator may follow.
_PROPERTY = re.compile(r"([^=:\s]*)\s*[=:]?\s*(.*)", re.DOTALL)


def _key_and_value(text: str) -> tuple[str, str]:
    match = _PROPERTY.fullmatch(text)
    assert match is not None  # the key may be empty and the value takes the rest: any text matches
    return match[1], match[2]


def _logical_lines(lines):
    """The text of each property: continuation lines joined, comments and blank lines skipped."""
    pending = None
    for line in lines:
        text = line.strip()
        if pending is None:
            if not text or text[0] in "#!":
                continue
            pending = ""
        if _continues(text):
            pending += text[:-1]
        else:
            yield pending + text
            pending = None
    if pending is not None:  # the file ends in a continuation
        yield pending


def _continues(text: str) -> bool:
    # An odd number of trailing backslashes: the last one escapes the line break.
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def state_path(args, properties: dict[str, str]) -> str:
    """--state, else the config file's kafkasec.state.path, else $KAFKASEC_STATE, else ./kafkasec.db.

    Both the flag and the file are named on this command line, so they win over the environment.
    """
    return (
        args.state
        or properties.get(STATE_PATH)
        or os.environ.get(STATE_ENVIRONMENT_VARIABLE)
        or DEFAULT_STATE_PATH
    )


def command_properties(args) -> dict[str, str]:
    """The --command-config file's properties (none without the option)."""
    return read_properties(args.config) if args.config else {}


def on_cluster(args) -> bool:
    """Whether the command line names a running cluster (--bootstrap-server) rather than a state file."""
    if getattr(args, "bootstrap_server", None) is None:
        return False
    if getattr(args, "state", None) is not None:
        raise UsageError("--state and --bootstrap-server exclude each other: one names a state file, the other a cluster")
    return True


@contextlib.contextmanager
def open_cluster(args) -> Iterator[ClusterAdmin]:
    """The admin client of the cluster --bootstrap-server names, logged in as --command-config
    says, for a ``with`` block; closed at its end."""
    settings = ClientSettings.from_properties(command_properties(args), args.bootstrap_server)
    try:
        from kafkasec.client.admin import ClusterAdmin
    except ImportError as error:
        if error.name != "kio":  # kafkasec.protocol.wire names kio when the extra is missing
            raise
        raise StateError("--bootstrap-server needs the 'wire' extra: pip install 'kafkasec[wire]'") from None
    try:
        with ClusterAdmin.connect(settings) as admin:
            yield admin
    except ConnectionError as error:
        # A SASL or TLS listener hangs up on a client that speaks plain Kafka to it, at the
        # first request it does not take: the usual cause is client properties left out.
        if settings.security_protocol == "PLAINTEXT" and CLOSED_BY_SERVER in str(error):
            raise ConnectionError(f"{error}; is security.protocol / sasl.mechanism set in --command-config?") from None
        raise


CLOSED_BY_SERVER = "closed the connection"


def cluster_security(args, admin: ClusterAdmin) -> KafkaSecurity:
    """An in-memory KafkaSecurity holding the cluster's ACLs, with the authorizer settings
    (super.users, allow.everyone.if.no.acl.found, plugins) of --command-config."""
    config = {key: value for key, value in command_properties(args).items() if not is_client_setting(key)}
    security = KafkaSecurity.from_config({**config, STATE_PATH: ":memory:"})
    try:
        raise_first_error(security.create_acls(admin.acls()))
    except BaseException:
        security.close()
        raise
    return security


def open_security(
    args, *, stateless: bool = False, writes: bool = False, overrides: dict[str, str] | None = None
) -> KafkaSecurity:
    """The KafkaSecurity the command works on; close it (it is a context manager) when done.

    ``stateless`` commands (principal conversions) keep state in memory: they create no file.
    Only a command that ``writes`` creates a missing state file; any other says it is missing.
    With --bootstrap-server, a reading command gets the cluster's ACLs in memory
    (:func:`cluster_security`); a writing one must use :func:`open_cluster`.
    ``overrides`` are settings the command itself fixes, over the config file's.
    """
    if not stateless and on_cluster(args):
        if writes:
            raise ValueError("a command that writes reaches a cluster through open_cluster, not open_security")
        with open_cluster(args) as admin:
            return cluster_security(args, admin)
    # A client.properties file (Kafka's --command-config) may hold a client's settings too.
    properties = {key: value for key, value in command_properties(args).items() if not is_client_only_setting(key)}
    path = ":memory:" if stateless else state_path(args, properties)
    config = {**properties, **(overrides or {}), STATE_PATH: path}
    reads = not stateless and not writes
    if reads:
        # A command that only reads opens the file read-only: it works on a file it may not
        # write, and leaves nothing behind (no -wal or -shm beside the file).
        config[READ_ONLY] = "true"
    # kafkasec.state.url (PostgreSQL) wins over the path, as in KafkaSecurity.from_config: then
    # there is no file to look for, and a reading command must not ask for one.
    in_file = not stateless and not properties.get(STATE_URL)
    if reads and in_file and "://" not in path and path != ":memory:" and not os.path.exists(path):
        # The settings are still checked first: a misspelt one is the more useful error.
        SettingsRegistry.from_plugins(make_plugin_manager()).check(config)
        raise StateError(f"no state file at {path}: nothing to read (a command that writes, such as acls --add, creates it)")
    return KafkaSecurity.from_config(config)
