"""The one shape of the sans-I/O state machines: a Transitions table, its wrong-state error,
every change of state through it."""

import enum

import pytest

from kafkasec.errors import IllegalSaslStateError
from kafkasec.protocol.forwarding import ForwardingStateError
from kafkasec.state_machine import OUT_OF_TURN, Transitions


class Door(enum.Enum):
    SHUT = "SHUT"
    OPEN = "OPEN"
    BROKEN = "BROKEN"


TABLE = Transitions.failing({(Door.SHUT, "open"): {Door.OPEN}, (Door.OPEN, "shut"): {Door.SHUT}}, Door.BROKEN, KeyError)


def test_moves_the_table_allows_and_refuses_the_rest():
    assert TABLE.move(Door.SHUT, "open", Door.OPEN) is Door.OPEN
    assert TABLE.move(Door.SHUT, "open", Door.BROKEN) is Door.BROKEN  # any event may fail
    assert TABLE.success(Door.SHUT, "open", Door.BROKEN) is Door.OPEN
    with pytest.raises(KeyError, match="shut is not allowed in state SHUT"):
        TABLE.move(Door.SHUT, "shut", Door.SHUT)
    with pytest.raises(AssertionError, match="may not lead from SHUT to SHUT"):
        TABLE.move(Door.SHUT, "open", Door.SHUT)
    assert all(TABLE.move(state, OUT_OF_TURN, Door.BROKEN) is Door.BROKEN for state in Door)
    assert TABLE.events(Door.OPEN) == ["shut"] and TABLE.events(Door.BROKEN) == []


@pytest.mark.parametrize(
    "module, error",
    [
        ("kafkasec.scram.client", IllegalSaslStateError),
        ("kafkasec.server.authenticator", IllegalSaslStateError),
        ("kafkasec.protocol.forwarding", ForwardingStateError),
    ],
)
def test_each_machine_keeps_one_table_with_its_own_wrong_state_error(module, error):
    import importlib

    table = importlib.import_module(module)._TRANSITIONS
    assert isinstance(table, Transitions)
    state = next(iter(table._table))[0]
    with pytest.raises(error):
        table.check(state, "an event nobody sends")


def test_the_sasl_servers_keep_the_same_shape():
    from kafkasec.sasl import PlainServer
    from kafkasec.sasl.oauthbearer import OAuthBearerServer
    from kafkasec.scram.server import ScramServer

    for server in (PlainServer, OAuthBearerServer, ScramServer):
        assert isinstance(server.TRANSITIONS, Transitions)
        assert server.TRANSITIONS.events(server.COMPLETE) == [] and server.TRANSITIONS.events(server.FAILED) == []
        with pytest.raises(IllegalSaslStateError):
            server.TRANSITIONS.check(server.COMPLETE, "_receive_anything")
