"""The login state machine of the endpoint, frame by frame, without sockets."""

import pytest

from kafkasec.errors import KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_versions import api_versions_response, kio_versions
from kafkasec.scram.client import ScramClient
from kafkasec.server import Authenticator, AuthenticatorState

from server_support import PASSWORDS

RANGES = {18: kio_versions(18), 17: kio_versions(17), 36: kio_versions(36), 3: kio_versions(3)}


@pytest.fixture
def security(server_security):
    return server_security


@pytest.fixture
def authenticator(security):
    return Authenticator(security, "10.1.2.3", ranges=RANGES)


def frame(api_key, version, correlation_id=7, **fields):
    body = wire.build(wire.request_schema(api_key, version), **fields)
    return wire.encode_request(body, correlation_id=correlation_id, client_id="test")


def read(reply_frame, api_key, version):
    return wire.decode_response(reply_frame, api_key, version)


def handshake(mechanism="SCRAM-SHA-256", version=1):
    return frame(17, version, mechanism=mechanism)


def authenticate(token, version=2):
    return frame(36, version, auth_bytes=token)


def login(authenticator, user="alice", password=None, mechanism="SCRAM-SHA-256", *, version=2):
    """Run a full login; the reply to the final message."""
    assert not authenticator.receive(handshake(mechanism)).close
    client = ScramClient(mechanism, user, PASSWORDS[user] if password is None else password)
    reply = authenticator.receive(authenticate(client.first_message(), version))
    _, first = read(reply.frame, 36, version)
    assert int(first.error_code) == 0
    return authenticator.receive(authenticate(client.final_message(bytes(first.auth_bytes)), version))


def test_api_versions_then_scram_login_gives_the_principal(authenticator):
    reply = authenticator.receive(frame(18, 3, client_software_name="librdkafka", client_software_version="2.6.0"))
    correlation_id, body = read(reply.frame, 18, 3)
    assert correlation_id == 7 and int(body.error_code) == 0
    assert {int(key.api_key): (int(key.min_version), int(key.max_version)) for key in body.api_keys} == RANGES
    assert authenticator.state is AuthenticatorState.HANDSHAKE_REQUEST
    reply = login(authenticator)
    assert not reply.close and reply.delay_ms == 0
    _, final = read(reply.frame, 36, 2)
    assert int(final.error_code) == 0 and bytes(final.auth_bytes).startswith(b"v=")
    assert authenticator.is_complete
    assert str(authenticator.principal) == "User:alice"


@pytest.mark.parametrize("version", [5, 99])
def test_an_unknown_api_versions_version_gets_a_v0_answer_with_error_35_and_its_range(authenticator, version):
    # Flexible versions carry header v2 (with tagged fields): the endpoint must still read it.
    request = wire.encode_request(wire.build(wire.request_schema(18, 4)), correlation_id=41, client_id="new-client")
    request = request[:2] + version.to_bytes(2, "big") + request[4:]
    reply = authenticator.receive(request)
    correlation_id, body = read(reply.frame, 18, 0)
    assert correlation_id == 41
    assert int(body.error_code) == KafkaErrorCode.UNSUPPORTED_VERSION == 35
    # KIP-511 (ApiVersionsRequest.getErrorResponse): the range of ApiVersions, for the retry.
    assert [(int(k.api_key), int(k.min_version), int(k.max_version)) for k in body.api_keys] == [(18, *RANGES[18])]
    # The client may try again at a version listed.
    assert authenticator.state is AuthenticatorState.HANDSHAKE_OR_VERSIONS_REQUEST and not reply.close
    assert read(authenticator.receive(frame(18, 4, client_software_name="a", client_software_version="1")).frame, 18, 4)


def test_an_invalid_client_software_name_is_invalid_request(authenticator):
    reply = authenticator.receive(frame(18, 3, client_software_name="-bad-", client_software_version="1.0"))
    _, body = read(reply.frame, 18, 3)
    assert int(body.error_code) == KafkaErrorCode.INVALID_REQUEST and body.api_keys == ()
    assert authenticator.state is AuthenticatorState.HANDSHAKE_OR_VERSIONS_REQUEST


def test_an_unsupported_mechanism_is_answered_33_with_the_list_then_closed(authenticator, security):
    reply = authenticator.receive(handshake("PLAIN"))
    _, body = read(reply.frame, 17, 1)
    assert int(body.error_code) == KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM == 33
    assert tuple(body.mechanisms) == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert reply.close and reply.delay_ms == security.failed_authentication_delay_ms == 50
    assert authenticator.state is AuthenticatorState.FAILED


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_answered_58_after_the_delay_then_closed(authenticator, mechanism):
    reply = login(authenticator, password="wrong", mechanism=mechanism)
    _, body = read(reply.frame, 36, 2)
    assert int(body.error_code) == KafkaErrorCode.SASL_AUTHENTICATION_FAILED == 58
    assert body.error_message == (
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )
    assert reply.close and reply.delay_ms == 50
    assert "alice" not in body.error_message  # which user failed is for the log only
    with pytest.raises(ValueError, match="login is over"):
        authenticator.receive(handshake())


def test_an_unknown_user_gets_the_same_answer_as_a_wrong_password(security):
    wrong_password = login(Authenticator(security, "10.1.2.3", ranges=RANGES), user="alice", password="x")
    stranger = Authenticator(security, "10.1.2.3", ranges=RANGES)
    stranger.receive(handshake())
    client = ScramClient("SCRAM-SHA-256", "mallory", "x")
    reply = stranger.receive(authenticate(client.first_message()))
    _, first = read(reply.frame, 36, 2)
    assert int(first.error_code) == 58 and reply.close
    assert first.error_message == read(wrong_password.frame, 36, 2)[1].error_message


@pytest.mark.parametrize("api_key, version", [(3, 12), (29, 3), (36, 2)])
def test_other_requests_before_the_handshake_close_without_an_answer(authenticator, api_key, version):
    request = frame(api_key, version) if api_key != 36 else authenticate(b"n,,n=alice,r=abc")
    reply = authenticator.receive(request)
    assert reply.frame is None and reply.close and reply.delay_ms == 50
    assert "during SASL handshake" in reply.reason


def test_only_sasl_authenticate_after_the_handshake(authenticator):
    authenticator.receive(handshake())
    reply = authenticator.receive(frame(18, 3, client_software_name="a", client_software_version="1"))
    assert reply.close and reply.frame is None and "during SASL authentication" in reply.reason


def test_unreadable_bytes_fail_the_login(authenticator):
    reply = authenticator.receive(b"\x00\x11\x00")
    assert reply.close and reply.frame is None and "unreadable" in reply.reason


def test_a_handshake_v0_login_sends_bare_tokens(authenticator):
    _, body = read(authenticator.receive(handshake("SCRAM-SHA-512", version=0)).frame, 17, 0)
    assert int(body.error_code) == 0
    client = ScramClient("SCRAM-SHA-512", "bob", PASSWORDS["bob"])
    first = authenticator.receive(client.first_message())
    final = authenticator.receive(client.final_message(first.frame))
    client.verify_server_final(final.frame)
    assert str(authenticator.principal) == "User:bob"


def test_a_bare_token_login_that_fails_closes_without_an_answer(authenticator):
    authenticator.receive(handshake(version=0))
    client = ScramClient("SCRAM-SHA-256", "bob", "wrong")
    first = authenticator.receive(client.first_message())
    reply = authenticator.receive(client.final_message(first.frame))
    assert reply.frame is None and reply.close and reply.delay_ms == 50


def test_a_token_login_gives_a_token_authenticated_principal(security):
    from kafkasec import RequestContext

    owner = RequestContext.for_principal("User:alice", security_protocol="SASL_PLAINTEXT")
    token = security.create_delegation_token(owner)
    authenticator = Authenticator(security, "10.1.2.3", ranges=RANGES)
    authenticator.receive(handshake("SCRAM-SHA-512"))
    client = ScramClient("SCRAM-SHA-512", token.token_id, token.hmac_as_base64, token_auth=True)
    _, first = read(authenticator.receive(authenticate(client.first_message())).frame, 36, 2)
    _, final = read(authenticator.receive(authenticate(client.final_message(bytes(first.auth_bytes)))).frame, 36, 2)
    client.verify_server_final(bytes(final.auth_bytes))
    assert authenticator.principal.name == "alice" and authenticator.principal.token_authenticated


def test_mechanisms_no_plugin_serves_are_refused_at_construction(security):
    with pytest.raises(ValueError, match="names GSSAPI, which no plugin serves; served: OAUTHBEARER, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"):
        Authenticator(security, "10.1.2.3", ranges=RANGES, mechanisms=("GSSAPI", "SCRAM-SHA-256"))


def test_no_principal_before_the_login(authenticator):
    with pytest.raises(ValueError, match="no principal"):
        _ = authenticator.principal


def test_the_api_versions_answer_lists_ranges_in_key_order():
    body = api_versions_response(3, {36: (0, 2), 3: (0, 13)})
    assert [int(key.api_key) for key in body.api_keys] == [3, 36]
