"""The forwarding_network plugin, on, held to Kafka's authorizer contract by the plugin author's
kit. The contract's requests are not forwarded: the plugin's wrapper must pass them through."""

import pytest

import kafkasec_forwarding_network as forwarding_network
from kafkasec.testing.contract import AuthorizerContract


@pytest.fixture
def kafkasec_plugin():
    return forwarding_network


@pytest.fixture
def kafkasec_config():
    return {
        "super.users": "User:admin",
        forwarding_network.NETWORKS_SETTING: "10.0.0.0/8",
        forwarding_network.OPERATIONS_SETTING: "ALTER,CREATE",
        forwarding_network.RESOURCE_TYPES_SETTING: "TOPIC,GROUP",
    }


class TestForwardingNetworkContract(AuthorizerContract):
    pass
