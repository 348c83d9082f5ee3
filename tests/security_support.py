"""The one way tests open a KafkaSecurity: Kafka settings, where the state lives, the plugins
registered and the ACLs to start from."""

from __future__ import annotations

from kafkasec import KafkaSecurity


def open_security(state=None, *, plugins=(), acls=(), **config) -> KafkaSecurity:
    """A KafkaSecurity built as ``from_config`` builds one: ``config`` are Kafka settings (dotted
    names go through ``**{...}``), ``state`` a state file (None: memory), ``plugins`` registered
    before the built-ins, ``acls`` created before it is returned. Use it as a context manager."""
    if state is not None:
        config["kafkasec.state.path"] = str(state)
    security = KafkaSecurity.from_config(config, plugins=plugins)
    if acls:
        security.create_acls(acls)
    return security
