"""The one way tests open a KafkaSecurity: Kafka settings, where the state lives, the plugins
registered and the ACLs to start from (the plugin author's kit, kafkasec.testing, has it)."""

from __future__ import annotations

from kafkasec.testing import open_security

__all__ = ["open_security"]
