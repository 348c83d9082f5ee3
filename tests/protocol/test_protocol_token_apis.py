"""The four delegation-token APIs through the endpoint, with kafkasec's kio-based client (no Kafka
client library has them), every version, and token logins over the wire."""

import base64
import datetime

import pytest

from kafkasec import AccessControlEntry, AclBinding, ResourcePattern
from kafkasec.errors import KafkaErrorCode, SaslAuthenticationError
from kafkasec.protocol import wire
from kafkasec.server import KafkaConnection

from server_support import add_users, logged_in, open_security, run, serving

CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
HOUR = datetime.timedelta(hours=1)
NOW = datetime.timedelta(milliseconds=-1)


@pytest.fixture
def state(server_state):
    with open_security(server_state) as security:
        security.create_acls(
            [AclBinding(ResourcePattern("USER", "User:bob"), AccessControlEntry("User:alice", "*", "CREATE_TOKENS", "ALLOW"))]
        )
    return server_state


@pytest.fixture
def endpoint(state):
    with open_security(state) as security, serving(security) as endpoint:
        yield endpoint


def create(version=3, lifetime=NOW, renewers=(), owner=None):
    request_type = wire.request_schema(CREATE, version)
    renewer_type = wire.item_type(request_type, "renewers")
    fields = {"owner_principal_type": "User", "owner_principal_name": owner} if owner else {}
    return wire.build(
        request_type,
        max_lifetime=lifetime,
        renewers=tuple(wire.build(renewer_type, principal_type=t, principal_name=n) for t, n in renewers),
        **fields,
    )


def describe(version=3, owners=None):
    request_type = wire.request_schema(DESCRIBE, version)
    if owners is None:
        return wire.build(request_type, owners=None)
    owner_type = wire.item_type(request_type, "owners")
    return wire.build(request_type, owners=tuple(wire.build(owner_type, principal_type=t, principal_name=n) for t, n in owners))


def renew(hmac, period=HOUR, version=2):
    return wire.build(wire.request_schema(RENEW, version), hmac=hmac, renew_period=period)


def expire(hmac, period=NOW, version=2):
    return wire.build(wire.request_schema(EXPIRE, version), hmac=hmac, expiry_time_period=period)


def millis(instant: datetime.datetime) -> int:
    return round(instant.timestamp() * 1000)


async def as_user(endpoint, user, *bodies):
    async with await logged_in(endpoint, user) as connection:
        return [await connection.request(body) for body in bodies]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_and_describe_at_every_version(endpoint, version):
    [created] = run(as_user(endpoint, "alice", create(version, renewers=[("User", "bob")])))
    assert int(created.error_code) == 0
    assert (created.principal_type, created.principal_name) == ("User", "alice")
    assert len(created.hmac) == 64 and created.token_id
    assert millis(created.issue_timestamp) <= millis(created.expiry_timestamp) <= millis(created.max_timestamp)
    if version >= 3:
        assert created.token_requester_principal_name == "alice"
    [described] = run(as_user(endpoint, "bob", describe(min(version, 3))))
    [token] = described.tokens
    assert (token.token_id, bytes(token.hmac), token.principal_name) == (created.token_id, bytes(created.hmac), "alice")
    assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "bob")]
    assert int(token.expiry_timestamp) == millis(created.expiry_timestamp)


def test_describe_owners_null_empty_and_named(endpoint):
    run(as_user(endpoint, "alice", create()))
    run(as_user(endpoint, "bob", create()))
    everything, nobody, bobs = run(as_user(endpoint, "admin", describe(), describe(owners=[]), describe(owners=[("User", "bob")])))
    assert sorted(t.principal_name for t in everything.tokens) == ["alice", "bob"]
    assert nobody.tokens == ()
    assert [t.principal_name for t in bobs.tokens] == ["bob"]
    # Alice sees her own token only: bob's is neither hers nor described to her by an ACL.
    [alices_view] = run(as_user(endpoint, "alice", describe()))
    assert [t.principal_name for t in alices_view.tokens] == ["alice"]


def test_tokens_for_someone_else_need_create_tokens(endpoint):
    for_bob, for_carol, group_renewer = run(as_user(
        endpoint, "alice", create(owner="bob"), create(owner="carol"), create(renewers=[("Group", "ops")])
    ))
    assert int(for_bob.error_code) == 0 and for_bob.principal_name == "bob" and for_bob.token_requester_principal_name == "alice"
    assert int(for_carol.error_code) == KafkaErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED == 65
    assert (for_carol.principal_name, for_carol.token_id, bytes(for_carol.hmac)) == ("carol", "", b"")
    assert millis(for_carol.expiry_timestamp) == -1
    assert int(group_renewer.error_code) == KafkaErrorCode.INVALID_PRINCIPAL_TYPE == 67


@pytest.mark.parametrize("version", [1, 2])
def test_renew_and_expire(endpoint, version):
    [created] = run(as_user(endpoint, "alice", create(renewers=[("User", "bob")])))
    hmac = bytes(created.hmac)
    [renewed] = run(as_user(endpoint, "bob", renew(hmac, version=version)))
    assert int(renewed.error_code) == 0 and millis(renewed.expiry_timestamp) <= millis(created.max_timestamp)
    [stranger] = run(as_user(endpoint, "admin", renew(hmac, version=version)))
    assert int(stranger.error_code) == KafkaErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH == 63
    assert millis(stranger.expiry_timestamp) == -1
    [unknown] = run(as_user(endpoint, "alice", renew(b"\x00" * 64, version=version)))
    assert int(unknown.error_code) == KafkaErrorCode.DELEGATION_TOKEN_NOT_FOUND == 62
    [expired] = run(as_user(endpoint, "alice", expire(hmac, version=version)))
    assert int(expired.error_code) == 0
    [gone] = run(as_user(endpoint, "alice", describe()))
    assert gone.tokens == ()


def token_login(endpoint, token_id, hmac, mechanism="SCRAM-SHA-512"):
    async def scenario():
        async with await KafkaConnection.open(endpoint.host, endpoint.port) as connection:
            await connection.login(mechanism, token_id, base64.b64encode(hmac).decode(), token_auth=True)
            return [await connection.request(body) for body in (create(), describe())]

    return run(scenario())


def test_a_token_logs_in_as_its_owner_and_may_not_ask_for_tokens(endpoint):
    [created] = run(as_user(endpoint, "alice", create()))
    refused, described = token_login(endpoint, created.token_id, bytes(created.hmac))
    assert int(refused.error_code) == KafkaErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED == 64
    assert int(described.error_code) == 64
    run(as_user(endpoint, "alice", expire(bytes(created.hmac))))
    with pytest.raises(SaslAuthenticationError):
        token_login(endpoint, created.token_id, bytes(created.hmac))


def test_tokens_and_token_logins_survive_a_restart(state):
    with open_security(state) as security, serving(security) as endpoint:
        [created] = run(as_user(endpoint, "alice", create()))
    with open_security(state) as security, serving(security) as endpoint:
        _, described = token_login(endpoint, created.token_id, bytes(created.hmac), "SCRAM-SHA-256")
        [token] = run(as_user(endpoint, "alice", describe()))[0].tokens
        assert token.token_id == created.token_id


def test_no_token_requests_over_plaintext(state):
    with open_security(state) as security, serving(security, security_protocol="PLAINTEXT") as endpoint:

        async def scenario():
            async with await KafkaConnection.open(endpoint.host, endpoint.port) as connection:
                return [await connection.request(body) for body in (create(), describe(), renew(b"x"), expire(b"x"))]

        answers = run(scenario())
        assert {int(answer.error_code) for answer in answers} == {KafkaErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED}


def test_token_writes_are_forwarded_to_the_controller(tmp_path):
    from kafkasec.server import ControllerLink

    from server_support import PASSWORDS

    with open_security(tmp_path / "c.db", **{"controller.listener.names": "CONTROLLER"}) as security:
        add_users(security)
        with serving(security, listener_name="CONTROLLER") as controller:
            link = ControllerLink(controller.host, controller.port, username="broker", password=PASSWORDS["broker"])
            with serving(security, controller=link) as broker:
                [created] = run(as_user(broker, "alice", create()))
                assert int(created.error_code) == 0
                [described] = run(as_user(broker, "alice", describe()))
                assert [t.token_id for t in described.tokens] == [created.token_id]
        assert sum(security.forwarded_requests().values()) == 1
