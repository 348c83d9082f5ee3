"""Shared fixtures. No entry-point plugin is loaded in tests: each test registers what it uses."""

import os

import pytest

os.environ["KAFKASEC_LOAD_PLUGINS"] = ""

from kafkasec import KafkaPrincipal, RequestContext, StandardAuthorizer  # noqa: E402
from postgres_support import postgres_server, postgres_url  # noqa: E402,F401  (fixtures for every test file)


@pytest.fixture
def authorizer():
    return StandardAuthorizer(super_users="User:admin")


def context_for(principal: str, host: str = "127.0.0.1") -> RequestContext:
    return RequestContext(KafkaPrincipal.parse(principal), host)


# The Kafka-protocol endpoint tests (server_support.py has the users and the catalogue).


@pytest.fixture
def server_state(tmp_path):
    """A state file with SCRAM users (server_support.PASSWORDS) and nothing else."""
    from server_support import add_users, open_security

    path = tmp_path / "state.db"
    with open_security(path) as security:
        add_users(security)
    return path


@pytest.fixture
def server_security(server_state):
    from server_support import open_security

    with open_security(server_state) as security:
        yield security


@pytest.fixture
def endpoint(server_security):
    """An endpoint over server_security and server_support.CATALOGUE, in a background thread."""
    from server_support import serving

    with serving(server_security) as endpoint:
        yield endpoint
