"""Shared fixtures. No entry-point plugin is loaded in tests: each test registers what it uses."""

import os

import pytest

os.environ["KAFKASEC_LOAD_PLUGINS"] = ""

# Fails a whole-suite run in which some hook is never called on a plugin (see hook_coverage.py).
pytest_plugins = ["hook_coverage"]

from kafkasec import StandardAuthorizer  # noqa: E402

from postgres_support import postgres_server, postgres_url  # noqa: E402,F401  (fixtures for every test file)


@pytest.fixture
def authorizer():
    return StandardAuthorizer(super_users="User:admin")


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


@pytest.fixture
def broker_and_controller(tmp_path):
    """A broker forwarding to a controller (KIP-590), both endpoints over one KafkaSecurity, as a
    broker and controller share Kafka's metadata: (security, broker, controller)."""
    from kafkasec.server import ControllerLink

    from server_support import PASSWORDS, add_users, open_security, serving

    with open_security(tmp_path / "cluster.db", **{"controller.listener.names": "CONTROLLER"}) as security:
        add_users(security)
        with serving(security, listener_name="CONTROLLER", node_id=3000) as controller:
            link = ControllerLink(
                controller.host, controller.port, mechanism="SCRAM-SHA-512", username="broker", password=PASSWORDS["broker"],
                retry_backoff_ms=20, request_timeout_ms=2000,
            )
            with serving(security, controller=link, node_id=1) as broker:
                yield security, broker, controller


# The gateway in front of a real broker (gateway_support.py, tansu_support.py).


@pytest.fixture(scope="module")
def tansu():
    """Tansu, a Kafka-compatible broker without ACLs, as its own process on a free port."""
    from tansu_support import TansuBroker

    with TansuBroker() as broker:
        yield broker


@pytest.fixture
def gateway(server_state, tansu):
    """A SASL_PLAINTEXT gateway (SCRAM users of server_support.PASSWORDS, User:admin a super
    user) in front of ``tansu``; its KafkaSecurity is ``gateway.security``."""
    from gateway_support import gateway_running, gateway_security

    with gateway_security(server_state, tansu.bootstrap) as security, gateway_running(security) as endpoint:
        yield endpoint
