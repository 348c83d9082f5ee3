"""What the gateway tests share: a gateway over a state file with users, in front of Tansu."""

from __future__ import annotations

import contextlib

from kafkasec.server.gateway import GatewayEndpoint

import server_support

UPSTREAM = "kafkasec.upstream.bootstrap.servers"
TANSU_SETTINGS = {
    # Tansu lists DeleteRecords but closes the connection of whoever sends it.
    "kafkasec.upstream.unadvertised.apis": "DeleteRecords",
}
FAST_GROUPS = {"session.timeout.ms": 6000}
"""Tansu holds a JoinGroup for half the session timeout: 3 s, not librdkafka's 22.5."""


def gateway_security(state, upstream: str, **config):
    """A KafkaSecurity on ``state`` (a file with server_support's users) whose gateway fronts ``upstream``."""
    return server_support.open_security(state, **{UPSTREAM: upstream, **TANSU_SETTINGS, **config})


@contextlib.contextmanager
def gateway_running(security, **endpoint):
    """The gateway's bootstrap listener (and one per upstream broker) in a background thread."""
    from kafkasec.server.gateway import Gateway

    with GatewayEndpoint(security, Gateway(security), **endpoint).running_in_thread() as bootstrap:
        yield bootstrap
