"""The endpoint's list settings are read as Kafka's ConfigDef reads a LIST: the whole value
trimmed as Java's String.trim() trims (characters up to U+0020), then split at commas with the
ASCII whitespace around them; Unicode spaces that Python's strip() removes are kept."""

import pytest

from kafkasec.server import Endpoint
from kafkasec.server.limits import parse_overrides
from kafkasec.server.listeners import parse_listeners, parse_protocol_map

from security_support import open_security


def test_sasl_enabled_mechanisms_trims_controls_and_keeps_unicode_spaces():
    with open_security(**{"sasl.enabled.mechanisms": "\x01SCRAM-SHA-256 ,\tPLAIN\x00"}) as security:
        assert Endpoint(security).mechanisms == ("SCRAM-SHA-256", "PLAIN")
    with open_security(**{"sasl.enabled.mechanisms": "SCRAM-SHA-256,\u00a0PLAIN"}) as security:
        with pytest.raises(ValueError, match="\u00a0PLAIN"):
            Endpoint(security)  # Kafka: no mechanism is named "\u00a0PLAIN"


def test_listeners_and_the_protocol_map_are_read_as_kafka_reads_them():
    config = {"listeners": "\x02INTERNAL://127.0.0.1:9093 , EXTERNAL://127.0.0.1:9094\x1f",
              "listener.security.protocol.map": "INTERNAL:PLAINTEXT,\x0bEXTERNAL : SASL_PLAINTEXT"}
    assert [(listener.name, listener.port) for listener in parse_listeners(config)] == [("INTERNAL", 9093), ("EXTERNAL", 9094)]
    with pytest.raises(ValueError, match="is not a security protocol"):
        parse_protocol_map("EXTERNAL:SASL_PLAINTEXT\u2003")


def test_connection_overrides_keep_a_unicode_space_that_python_would_strip():
    assert parse_overrides("\x01127.0.0.1:5\x00") == {"127.0.0.1": 5}
    with pytest.raises(ValueError):
        parse_overrides("\u3000127.0.0.1:5")
