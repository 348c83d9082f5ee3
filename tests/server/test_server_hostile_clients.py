"""Regressions of attacks on the endpoint and its SASL server (issue "hostile clients"): each
finding as its own test."""

import datetime
import logging
import time

import pytest

from kafkasec.errors import SaslAuthenticationError
from kafkasec.protocol import wire
from kafkasec.scram import server as scram_server
from kafkasec.scram.client import ScramClient

from scram_support import server_for
from server_support import PASSWORDS, logged_in, run


def test_a_malformed_client_final_never_shows_its_proof():
    server = server_for()
    server.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    proof = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    with pytest.raises(SaslAuthenticationError) as refused:
        server.evaluate_response(f"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p={proof},extra".encode())
    for text in (refused.value.reason, refused.value.message, str(refused.value), repr(refused.value)):
        assert proof not in text and "dHzbZapWIk4j" not in text


def test_the_endpoint_logs_no_proof(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    client = ScramClient("SCRAM-SHA-256", "alice", PASSWORDS["alice"])
    proof_marker = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="

    async def bad_final():
        from kafkasec.server import KafkaConnection

        connection = await KafkaConnection.open(endpoint.host, endpoint.port)
        try:
            await connection.request(wire.build(wire.request_schema(17, 1), mechanism="SCRAM-SHA-256"))
            first = await connection._authenticate(client.first_message())
            nonce = first.decode().split(",")[0][2:]
            await connection._authenticate(f"c=biws,r={nonce},p={proof_marker},junk".encode())
        except Exception:
            pass
        finally:
            await connection.close()

    run(bad_final())
    # The endpoint logs on its own thread, possibly just after the client saw the answer.
    deadline = time.monotonic() + 5
    while "login failed" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "login failed" in caplog.text
    assert proof_marker not in caplog.text and "QUJDREVGR0hJ" not in caplog.text


def test_an_unknown_users_extensions_are_not_ordered(monkeypatch):
    """Ordering thousands of extensions as Java's HashMap would is the costly part of a first
    message: it waits until the user is known to exist."""

    def never(*args):
        raise AssertionError("extensions ordered before the user was found")

    monkeypatch.setattr(scram_server, "_java_hash_map_order", never)
    extensions = ",".join(f"e{number}=v" for number in range(20_000))
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server_for().evaluate_response(f"n,,n=nobody,r=abc,{extensions}".encode())


def test_metadata_for_many_repeated_names_is_linear(endpoint):
    """15,000 names (each twice) once stalled every connection for seconds (a list scan per name)."""
    topic_type = wire.item_type(wire.request_schema(3, 12), "topics")
    names = [f"t{number % 15_000}" for number in range(30_000)] + ["orders"]
    request = wire.build(wire.request_schema(3, 12), topics=tuple(wire.build(topic_type, name=n) for n in names))

    async def ask():
        async with await logged_in(endpoint) as connection:
            return await connection.request(request)

    answered = run(ask())
    assert [topic.name for topic in answered.topics][:3] == ["t0", "t1", "t2"]
    assert len(answered.topics) == 15_001  # each name once, in request order


def test_a_null_owner_type_is_invalid_principal_type_on_controller_and_broker(broker_and_controller):
    """Once UNKNOWN_SERVER_ERROR with a traceback on the controller, and no answer at all from a
    forwarding broker (its connection task died)."""
    _, broker, controller = broker_and_controller
    request_type = wire.request_schema(38, 3)
    malformed = wire.build(request_type, owner_principal_type=None, owner_principal_name="bob", renewers=(),
                           max_lifetime=datetime.timedelta(milliseconds=-1))
    null_renewer = wire.build(request_type, renewers=(wire.build(wire.item_type(request_type, "renewers"),
                                                                  principal_type="", principal_name="x"),),
                              max_lifetime=datetime.timedelta(milliseconds=-1))

    async def ask(node, body):
        async with await logged_in(node, "admin", "SCRAM-SHA-512") as connection:
            return await connection.request(body)

    for node in (controller, broker):
        answer = run(ask(node, malformed))
        assert int(answer.error_code) == 67 and (answer.principal_type, answer.principal_name) == ("User", "admin")
        assert int(run(ask(node, null_renewer)).error_code) == 67


def test_a_refused_controller_login_is_logged_not_silent(tmp_path, caplog):
    """A broker user without a credential for the link's mechanism once made every forwarded
    write wait and time out with nothing in the log."""
    from kafkasec.server import ControllerLink

    from server_support import add_users, create_acl_request, open_security, serving

    caplog.set_level(logging.WARNING, logger="kafkasec.server.controller_link")
    with open_security(tmp_path / "c.db", **{"controller.listener.names": "CONTROLLER"}) as security:
        add_users(security, {"admin": PASSWORDS["admin"]})  # no broker user at all
        with serving(security, listener_name="CONTROLLER", node_id=3000) as controller:
            link = ControllerLink(controller.host, controller.port, mechanism="SCRAM-SHA-256", username="broker",
                                  password="broker-secret", retry_backoff_ms=20, request_timeout_ms=300)
            with serving(security, controller=link, node_id=1) as broker:

                async def forwarded():
                    async with await logged_in(broker, "admin") as connection:
                        return await connection.request(create_acl_request())

                assert int(run(forwarded()).results[0].error_code) == 7  # REQUEST_TIMED_OUT
    assert "cannot reach or log in to the controller" in caplog.text and "'broker' with SCRAM-SHA-256" in caplog.text
    assert "broker-secret" not in caplog.text
