"""Kafka's listeners and listener.security.protocol.map, read as a broker reads them."""

import pytest

from kafkasec.server.listeners import Listener, parse_listeners, parse_protocol_map


def test_listeners_take_their_protocol_from_the_map_or_their_own_name():
    config = {
        "listeners": "SASL_SSL://:9093, internal://127.0.0.1:9094,EXTERNAL://[::1]:9095",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:ssl,SASL_SSL:SASL_SSL",
    }
    assert parse_listeners(config) == [
        Listener("SASL_SSL", "0.0.0.0", 9093, "SASL_SSL"),
        Listener("INTERNAL", "127.0.0.1", 9094, "SASL_PLAINTEXT"),
        Listener("EXTERNAL", "::1", 9095, "SSL"),
    ]
    assert parse_listeners({"listeners": "PLAINTEXT://localhost:9092"}) == [Listener("PLAINTEXT", "localhost", 9092, "PLAINTEXT")]
    assert parse_listeners({}) == [] and parse_listeners({"listeners": " "}) == []


@pytest.mark.parametrize(
    "config, error",
    [
        ({"listeners": "CLIENT://:9092"}, "No security protocol defined for listener CLIENT"),
        ({"listeners": "PLAINTEXT:9092"}, "Unable to parse PLAINTEXT:9092 to a broker endpoint"),
        ({"listeners": "PLAINTEXT://:9092,plaintext://:9093"}, "different name, unlike PLAINTEXT"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "different port"),
        ({"listeners": "PLAINTEXT://:70000"}, "port 70000 is not 0-65535"),
        ({"listeners": "A://:1", "listener.security.protocol.map": "A:TLS"}, "'TLS' is not a security protocol"),
        ({"listeners": "A://:1", "listener.security.protocol.map": "A"}, "'A' is not NAME:PROTOCOL"),
    ],
)
def test_what_kafka_refuses_is_refused_naming_the_listener(config, error):
    with pytest.raises(ValueError, match=error):
        parse_listeners(config)


def test_the_default_map_names_each_protocol_itself():
    assert parse_protocol_map(None) == {p: p for p in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")}
