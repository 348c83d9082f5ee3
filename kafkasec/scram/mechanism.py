"""Built-in plugin: SCRAM-SHA-256 and SCRAM-SHA-512 (delegation-token logins included) as SASL
mechanisms, served from the node's SCRAM credentials (``security.scram_server``)."""

from __future__ import annotations

import functools

from kafkasec.hookspecs import hookimpl
from kafkasec.sasl.mechanisms import SaslMechanism
from kafkasec.scram.credentials import ScramMechanism


def _scram_server(mechanism: str, security, listener_name: str):
    return security.scram_server(mechanism)


@hookimpl(trylast=True)
def kafkasec_sasl_mechanisms(security):
    names = [m.mechanism_name for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
    return [SaslMechanism(name, functools.partial(_scram_server, name)) for name in names]
