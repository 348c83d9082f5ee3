"""kafkasec as a Kafka client: connections, logins (SCRAM, PLAIN, OAUTHBEARER, over TLS or not) and
an admin client for a running cluster's ACLs, SCRAM credentials, delegation tokens, topics and
groups. The connection and the admin client need the ``wire`` extra; the settings and logins do
not. docs/cli.md shows the ``kafkasec`` command using it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kafkasec.client.login import ClientLogin
from kafkasec.client.settings import ClientSettings

if TYPE_CHECKING:
    from kafkasec.client.admin import AclDeletion, ClusterAdmin
    from kafkasec.client.connection import KafkaConnection

__all__ = ["AclDeletion", "ClientLogin", "ClientSettings", "ClusterAdmin", "KafkaConnection"]

_NEEDS_WIRE = {
    "AclDeletion": "kafkasec.client.admin",
    "ClusterAdmin": "kafkasec.client.admin",
    "KafkaConnection": "kafkasec.client.connection",
}
"""Names imported on first use: their modules import the wire codec, and the ``kafkasec`` command
reads ClientSettings from here on a plain install that has no codec (a state file needs none)."""


def __getattr__(name: str):
    if name in _NEEDS_WIRE:
        return getattr(importlib.import_module(_NEEDS_WIRE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
