"""Mechanisms served by plugins: the example of docs/hooks.md logs in through the endpoint's
authenticator, which knows no mechanism of its own; the table refuses what it must."""

import re
from pathlib import Path

import pytest

from kafkasec import KafkaSecurity, hookimpl
from kafkasec.protocol import wire
from kafkasec.protocol.api_versions import kio_versions
from kafkasec.sasl import SaslMechanism
from kafkasec.server import Authenticator, AuthenticatorState

HOOKS_MD = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
RANGES = {17: kio_versions(17), 36: kio_versions(36)}


def documented_example(name: str) -> dict:
    """Run the python block of docs/hooks.md's section ``name``; its namespace."""
    section = HOOKS_MD.read_text(encoding="utf-8").split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
    namespace: dict = {}
    exec(compile(re.search(r"```python\n(.*?)```", section, re.S).group(1), f"hooks.md {name}", "exec"), namespace)
    return namespace


def frame(api_key, version, **fields):
    return wire.encode_request(wire.build(wire.request_schema(api_key, version), **fields), correlation_id=3, client_id="t")


def test_the_documented_plugin_mechanism_logs_in_through_the_authenticator():
    example = documented_example("kafkasec_sasl_mechanisms")
    plugin = type("TicketPlugin", (), {"kafkasec_sasl_mechanisms": staticmethod(example["kafkasec_sasl_mechanisms"])})
    with KafkaSecurity(plugins=[plugin]) as security:
        assert "X-TICKET" in security.sasl_mechanisms()
        authenticator = Authenticator(security, "10.0.0.1", ranges=RANGES, mechanisms=("X-TICKET",))
        reply = authenticator.receive(frame(17, 1, mechanism="X-TICKET"))
        assert list(wire.decode_response(reply.frame, 17, 1)[1].mechanisms) == ["X-TICKET"]
        reply = authenticator.receive(frame(36, 2, auth_bytes=b"t-1"))
        assert int(wire.decode_response(reply.frame, 36, 2)[1].error_code) == 0
        assert authenticator.state is AuthenticatorState.COMPLETE
        assert str(authenticator.principal) == "User:alice"

        refused = Authenticator(security, "10.0.0.1", ranges=RANGES, mechanisms=("X-TICKET",))
        refused.receive(frame(17, 1, mechanism="X-TICKET"))
        reply = refused.receive(frame(36, 2, auth_bytes=b"forged"))
        answer = wire.decode_response(reply.frame, 36, 2)[1]
        assert int(answer.error_code) == 58 and reply.close
        assert answer.error_message == "Authentication failed during authentication due to invalid credentials with SASL mechanism X-TICKET"


def test_the_built_ins_serve_scram_plain_and_oauthbearer():
    with KafkaSecurity() as security:
        assert list(security.sasl_mechanisms()) == ["OAUTHBEARER", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert security.sasl_server("SCRAM-SHA-512").mechanism_name == "SCRAM-SHA-512"
        with pytest.raises(ValueError, match="no plugin serves the SASL mechanism 'GSSAPI'"):
            security.sasl_server("GSSAPI")


def test_a_plugin_replaces_a_built_in_mechanism_and_two_plugins_may_not_share_one():
    def offer(tag):
        class Offer:
            @hookimpl
            def kafkasec_sasl_mechanisms(self, security):
                return [SaslMechanism("PLAIN", lambda security, listener: tag)]

        return Offer()

    with KafkaSecurity(plugins=[offer("mine")]) as security:
        with pytest.raises(TypeError, match="not a SaslServer"):  # the plugin's, not the built-in
            security.sasl_server("PLAIN")
    with KafkaSecurity(plugins=[offer("a"), offer("b")]) as security:
        with pytest.raises(ValueError, match="both serve PLAIN"):
            security.sasl_mechanisms()


def test_an_offer_must_be_a_sasl_mechanism_with_a_proper_name():
    class Wrong:
        @hookimpl
        def kafkasec_sasl_mechanisms(self, security):
            return ["PLAIN"]

    with KafkaSecurity(plugins=[Wrong()]) as security:
        with pytest.raises(TypeError, match="not a SaslMechanism"):
            security.sasl_mechanisms()
    with pytest.raises(ValueError, match="upper-case"):
        SaslMechanism("plain", lambda security, listener: None)


def test_the_table_is_kept_until_the_plugins_change():
    with KafkaSecurity() as security:
        table = security.sasl_mechanisms()
        assert security.sasl_mechanisms() is table  # each login asks: one collection serves them
        offer = type("Offer", (), {"kafkasec_sasl_mechanisms": hookimpl(
            lambda self, security: [SaslMechanism("X-NEW", lambda security, listener: None)])})()
        security.plugin_manager.register(offer, name="x-new")
        assert "X-NEW" in security.sasl_mechanisms()
        security.plugin_manager.unregister(offer)
        assert "X-NEW" not in security.sasl_mechanisms()
