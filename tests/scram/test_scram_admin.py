"""KIP-554 on the facade and the wire: Kafka's KRaft rules (ScramControlManager, ScramImage),
their order, codes and messages, authorization, and a model of every sequence of alterations."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0.request import DescribeUserScramCredentialsRequest, UserName
from kio.static.primitive import i8, i32

from kafkasec import (
    AclBinding,
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    KafkaSecurity,
    RequestContext,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
    hookimpl,
)
from kafkasec.protocol import wire
from kafkasec.protocol.scram_apis import (
    HANDLERS,
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from kafkasec.scram import (
    ScramCredentialInfo,
    ScramFormatter,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

SHA256, SHA512, UNKNOWN = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512, ScramMechanism.UNKNOWN
SALTED = b"s" * 32  # a salted password, as the wire carries it: no PBKDF2 in most tests


def up(user, mechanism=SHA256, iterations=4096, password=None, salt=b"salt"):
    info = ScramCredentialInfo(mechanism, iterations)
    if password is None:
        return UserScramCredentialUpsertion.from_salted_password(user, info, salt, SALTED)
    return UserScramCredentialUpsertion(user, info, password, salt)


def delete(user, mechanism=SHA256):
    return UserScramCredentialDeletion(user, mechanism)


def outcome(results):
    """{user: None or (code, message)}, checking each user is answered once."""
    users = [r.user for r in results]
    assert len(users) == len(set(users)), users
    return {r.user: None if r.error is None else (r.error.code, r.error.message) for r in results}


def described(security, users=None):
    return {
        d.user: {(i.mechanism, i.iterations) for i in d.infos}
        for d in security.describe_user_scram_credentials(users).all().values()
    }


@pytest.fixture
def security():
    with KafkaSecurity(super_users="User:admin") as security:
        yield security


TWICE = (92, "A user credential cannot be altered twice in the same request")
EMPTY_NAME = (93, "Username must not be empty")
UNKNOWN_MECHANISM = (33, "Unknown SCRAM mechanism")
MISSING = (91, "Attempt to delete a user credential that does not exist")


# ---------------------------------------------------------------------------------------- alter


def test_upsert_describe_and_fetch(security):
    results = security.alter_user_scram_credentials([up("alice", SHA256, 8192), up("bob", SHA512)])
    assert outcome(results) == {"alice": None, "bob": None}
    assert described(security) == {"alice": {(SHA256, 8192)}, "bob": {(SHA512, 4096)}}
    formatter = ScramFormatter(SHA256)
    assert security.scram_credential("alice", "SCRAM-SHA-256") == formatter.credential(b"salt", SALTED, 8192)
    assert security.scram_credential("alice", SHA512) is None
    assert security.scram_credential("carol", SHA256) is None


def test_a_password_is_salted_as_kafka_does(security):
    security.alter_user_scram_credentials([up("alice", SHA512, 4096, password="päss", salt=b"pepper")])
    formatter = ScramFormatter(SHA512)
    expected = formatter.credential(b"pepper", formatter.salted_password("päss".encode(), b"pepper", 4096), 4096)
    assert security.scram_credential("alice", SHA512) == expected


def test_an_upsertion_replaces_the_credential(security):
    security.alter_user_scram_credentials([up("alice", iterations=4096)])
    security.alter_user_scram_credentials([up("alice", iterations=16384, salt=b"other")])
    assert described(security) == {"alice": {(SHA256, 16384)}}
    assert security.scram_credential("alice", SHA256).salt == b"other"


@pytest.mark.parametrize(
    "alterations",
    [
        [up("alice", SHA256), up("alice", SHA512)],  # two mechanisms of one user
        [up("alice"), up("alice")],
        [delete("alice"), delete("alice")],
        [delete("alice"), up("alice", SHA512)],  # deleted and upserted
        [up("alice", SHA512), delete("alice")],  # deletions are read first, whatever the order
        [delete("alice"), delete("alice", SHA512), up("alice")],  # a third time changes nothing
    ],
)
def test_a_user_altered_twice_is_duplicate_resource(security, alterations):
    security.alter_user_scram_credentials([up("alice"), up("bob")])
    security.alter_user_scram_credentials([up("bob", SHA512)])
    results = security.alter_user_scram_credentials([*alterations, up("carol")])
    assert outcome(results) == {"alice": TWICE, "carol": None}
    assert described(security) == {
        "alice": {(SHA256, 4096)},
        "bob": {(SHA256, 4096), (SHA512, 4096)},
        "carol": {(SHA256, 4096)},
    }


def test_the_first_error_of_a_user_stands(security):
    """ScramControlManager skips a user already in error: no DUPLICATE_RESOURCE after it."""
    results = security.scram_service.alter_credentials([delete("alice"), delete("alice")], [up("alice"), up("bob", UNKNOWN), up("bob")])
    assert outcome(results) == {"alice": MISSING, "bob": UNKNOWN_MECHANISM}


@pytest.mark.parametrize(
    "alteration, error",
    [
        (up("", SHA256), EMPTY_NAME),
        (up("", UNKNOWN, 1), EMPTY_NAME),  # the name first
        (delete("", UNKNOWN), EMPTY_NAME),
        (up("alice", UNKNOWN, 1), UNKNOWN_MECHANISM),  # then the mechanism
        (delete("alice", UNKNOWN), UNKNOWN_MECHANISM),
        (up("alice", SHA256, 4095), (93, "Too few iterations")),  # then the iterations
        (up("alice", SHA512, -1), (93, "Too few iterations")),
        (up("alice", SHA256, 16385), (93, "Too many iterations")),
        (up("alice", SHA512, 2**31 - 1), (93, "Too many iterations")),
        (delete("alice", SHA512), MISSING),
    ],
)
def test_kafkas_checks_and_messages(security, alteration, error):
    security.alter_user_scram_credentials([up("alice", SHA256)])
    for results in (
        security.alter_user_scram_credentials([alteration]),
        security.scram_service.alter_credentials(
            [alteration] if isinstance(alteration, UserScramCredentialDeletion) else [],
            [alteration] if isinstance(alteration, UserScramCredentialUpsertion) else [],
        ),
    ):
        assert outcome(results) == {alteration.user: error}
    assert described(security) == {"alice": {(SHA256, 4096)}}


@pytest.mark.parametrize("iterations", [4096, 16384])
def test_iteration_limits_are_inclusive(security, iterations):
    assert outcome(security.alter_user_scram_credentials([up("alice", iterations=iterations)])) == {"alice": None}


def test_error_classes_carry_the_codes(security):
    results = security.alter_user_scram_credentials([up(""), up("a", UNKNOWN), delete("b"), up("c"), up("c", SHA512)])
    errors = {r.user: type(r.error) for r in results}
    assert errors == {
        "": UnacceptableCredentialError,
        "a": UnsupportedSaslMechanismError,
        "b": ResourceNotFoundError,
        "c": DuplicateResourceError,
    }


def test_a_user_exists_from_its_first_credential_to_its_last(security):
    assert described(security) == {}
    security.alter_user_scram_credentials([up("alice", SHA256)])
    security.alter_user_scram_credentials([up("alice", SHA512, 8192)])
    assert described(security, ["alice"]) == {"alice": {(SHA256, 4096), (SHA512, 8192)}}
    assert outcome(security.alter_user_scram_credentials([delete("alice", SHA256)])) == {"alice": None}
    assert described(security) == {"alice": {(SHA512, 8192)}}
    security.alter_user_scram_credentials([delete("alice", SHA512)])
    assert described(security) == {}
    assert security.describe_user_scram_credentials(["alice"]).users() == []


def test_users_are_independent_and_each_all_or_nothing(security):
    security.alter_user_scram_credentials([up("alice", SHA256), up("bob", SHA256)])
    results = security.alter_user_scram_credentials(
        [delete("alice"), delete("bob", SHA512), up("carol", SHA512), up("dave", SHA256), up("dave", SHA512)]
    )
    assert outcome(results) == {"alice": None, "bob": MISSING, "carol": None, "dave": TWICE}
    assert described(security) == {"bob": {(SHA256, 4096)}, "carol": {(SHA512, 4096)}}


def test_results_list_deletions_then_upsertions_then_errors(security):
    security.alter_user_scram_credentials([up("d1"), up("d2")])
    results = security.alter_user_scram_credentials([up("u1"), up("e1", UNKNOWN), delete("d2"), up("u2"), delete("e2"), delete("d1")])
    # The controller's deletions, upsertions, errors; then the users the admin client refused.
    assert [r.user for r in results] == ["d2", "d1", "u1", "u2", "e2", "e1"]
    results = security.scram_service.alter_credentials([delete("e2"), delete("u1")], [up("e1", UNKNOWN), up("u3")])
    assert [r.user for r in results] == ["u1", "u3", "e2", "e1"]


def test_an_empty_request_changes_nothing(security):
    assert security.alter_user_scram_credentials([]) == []


# -------------------------------------------------------------------- the admin client's own checks


def test_an_empty_password_is_refused_before_the_request(security):
    security.alter_user_scram_credentials([up("alice")])
    results = security.alter_user_scram_credentials([delete("alice"), up("alice", SHA512, password=""), up("bob", password="")])
    assert outcome(results) == {
        "alice": (93, "Password must not be empty"),
        "bob": (93, "Password must not be empty"),
    }
    assert described(security) == {"alice": {(SHA256, 4096)}}  # alice's deletion was not sent either


def test_the_admin_client_checks_before_the_controller():
    """A bad deletion after a good one: the admin client refuses the user (33) before the
    controller could see it twice (92); a request off the wire gets the controller's answer."""
    with KafkaSecurity() as security:
        security.alter_user_scram_credentials([up("alice")])
        facade = security.alter_user_scram_credentials([delete("alice"), delete("alice", UNKNOWN)])
        assert outcome(facade) == {"alice": UNKNOWN_MECHANISM}
        controller = security.scram_service.alter_credentials([delete("alice"), delete("alice", UNKNOWN)], [])
        assert outcome(controller) == {"alice": TWICE}
        assert described(security) == {"alice": {(SHA256, 4096)}}


def test_an_empty_salted_password_is_an_unknown_server_error(security):
    results = security.alter_user_scram_credentials(
        [UserScramCredentialUpsertion.from_salted_password("alice", ScramCredentialInfo(SHA256, 4096), b"salt", b""), up("bob")]
    )
    assert outcome(results) == {"alice": (-1, "The server experienced an unexpected error when processing the request."), "bob": None}


def test_an_empty_salt_is_refused(security):
    assert outcome(security.alter_user_scram_credentials([up("alice", salt=b"")])) == {"alice": (93, "Salt must not be empty")}
    assert described(security) == {}


def test_misuse_is_a_type_or_value_error(security):
    with pytest.raises(TypeError, match="UserScramCredentialUpsertion or UserScramCredentialDeletion"):
        security.alter_user_scram_credentials([("alice", "SCRAM-SHA-256")])
    with pytest.raises(TypeError, match="single name"):
        security.describe_user_scram_credentials("alice")
    with pytest.raises(TypeError, match="must be a str"):
        security.describe_user_scram_credentials([b"alice"])
    with pytest.raises(TypeError):
        security.scram_credential(None, SHA256)
    with pytest.raises(ValueError, match="UNKNOWN"):
        security.scram_credential("alice", UNKNOWN)
    security.close()
    for call in (
        lambda: security.describe_user_scram_credentials(),
        lambda: security.alter_user_scram_credentials([up("alice")]),
        lambda: security.scram_credential("alice", SHA256),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()


# ---------------------------------------------------------------------------------------- describe


def test_describe_every_user_when_none_or_empty(security):
    security.alter_user_scram_credentials([up("bob", SHA512), up("alice")])
    security.alter_user_scram_credentials([up("alice", SHA512, 8192)])
    for users in (None, [], ()):
        result = security.describe_user_scram_credentials(users)
        assert result.error is None
        assert [r.user for r in result.results] == ["alice", "bob"]
        assert [(i.mechanism, i.iterations) for i in result.description("alice").infos] == [(SHA256, 4096), (SHA512, 8192)]


def test_describe_missing_and_duplicate_users(security):
    security.alter_user_scram_credentials([up("alice"), up("bob")])
    result = security.describe_user_scram_credentials(["carol", "alice", "bob", "bob", "dave", "dave"])
    assert [(r.user, r.error and (r.error.code, r.error.message)) for r in result.results] == [
        ("carol", (91, "Attempt to describe a user credential that does not exist: carol")),
        ("alice", None),
        ("bob", (92, "Cannot describe SCRAM credentials for the same user twice in a single request: bob")),
        ("dave", (92, "Cannot describe SCRAM credentials for the same user twice in a single request: dave")),
    ]
    # As Kafka's admin client reads it: a missing user is not among the users.
    assert result.users() == ["alice", "bob", "dave"]
    assert result.description("alice").user == "alice"
    with pytest.raises(ResourceNotFoundError, match="does not exist: carol"):
        result.description("carol")
    with pytest.raises(DuplicateResourceError):
        result.description("bob")
    with pytest.raises(ResourceNotFoundError, match="No such user: erin"):
        result.description("erin")
    with pytest.raises(DuplicateResourceError):
        result.all()
    assert security.describe_user_scram_credentials(["alice", "carol"]).all().keys() == {"alice"}


def test_describe_never_shows_a_secret(security):
    security.alter_user_scram_credentials([up("alice", password="alice-secret", salt=b"NaCl")])
    credential = security.scram_credential("alice", SHA256)
    text = repr(security.describe_user_scram_credentials()) + repr(security.describe_user_scram_credentials(["alice"]))
    for secret in (b"alice-secret", b"NaCl", credential.stored_key, credential.server_key):
        assert secret.hex() not in text and repr(secret) not in text and secret.decode("latin-1") not in text


# ---------------------------------------------------------------------------------------- authorization


def grant_cluster(security, principal, operation):
    security.create_acls([AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", principal, "*", operation, "ALLOW")])


def test_describe_needs_describe_on_the_cluster(security):
    security.alter_user_scram_credentials([up("alice")])
    mallory = RequestContext.for_principal("User:mallory")
    denied = security.describe_user_scram_credentials(["alice", "x", "x"], context=mallory)
    assert isinstance(denied.error, ClusterAuthorizationFailedError) and denied.error.code == 31
    assert [(r.user, r.error.code) for r in denied.results] == [("alice", 31), ("x", 31), ("x", 31)]
    with pytest.raises(ClusterAuthorizationFailedError):
        denied.users()
    grant_cluster(security, "User:mallory", "DESCRIBE")
    assert security.describe_user_scram_credentials(context=mallory).users() == ["alice"]
    admin_context = RequestContext.for_principal("User:admin")
    assert security.describe_user_scram_credentials(context=admin_context).users() == ["alice"]


def test_alter_needs_alter_on_the_cluster(security):
    mallory = RequestContext.for_principal("User:mallory")
    grant_cluster(security, "User:mallory", "DESCRIBE")  # not enough
    results = security.alter_user_scram_credentials([up("bob"), delete("alice"), up("alice", SHA512), up("")], context=mallory)
    # Each user once, in name order; the admin client's own refusal first.
    assert [(r.user, r.error.code) for r in results] == [("alice", 31), ("bob", 31), ("", 93)]
    assert all(isinstance(r.error, ClusterAuthorizationFailedError) for r in results[:2])
    assert described(security) == {}
    grant_cluster(security, "User:mallory", "ALTER")
    assert outcome(security.alter_user_scram_credentials([up("bob")], context=mallory)) == {"bob": None}


def test_authorization_goes_through_the_authorizer_hook():
    decided = []

    class Recorder:
        @hookimpl
        def kafkasec_audit(self, security, context, decisions):
            decided.extend((d.action.operation.name, d.action.resource_pattern.resource_type.name, d.result.name) for d in decisions)

    with KafkaSecurity(plugins=[Recorder()]) as security:
        context = RequestContext.for_principal("User:alice")
        security.describe_user_scram_credentials(context=context)
        security.alter_user_scram_credentials([up("alice")], context=context)
    assert decided == [("DESCRIBE", "CLUSTER", "DENIED"), ("ALTER", "CLUSTER", "DENIED")]


# ---------------------------------------------------------------------------------------- the wire


def alter_body(deletions=(), upsertions=()):
    return AlterUserScramCredentialsRequest(
        deletions=tuple(ScramCredentialDeletion(name=n, mechanism=i8(m)) for n, m in deletions),
        upsertions=tuple(
            ScramCredentialUpsertion(name=n, mechanism=i8(m), iterations=i32(i), salt=s, salted_password=p)
            for n, m, i, s, p in upsertions
        ),
    )


def describe_body(users):
    return DescribeUserScramCredentialsRequest(users=None if users is None else tuple(UserName(name=u) for u in users))


def roundtrip_response(body, api_key):
    """The response as a client reads it: encoded, then decoded."""
    return wire.decode_response(wire.encode_response(body, correlation_id=7), api_key, 0)[1]


ADMIN = RequestContext.for_principal("User:admin")


def test_wire_alter_then_describe(security):
    body = alter_body(
        deletions=[("bob", 1)],
        upsertions=[("alice", 1, 8192, b"salt", SALTED), ("carol", 10, 4096, b"salt", SALTED), ("dave", 2, 100, b"s", SALTED)],
    )
    response = roundtrip_response(HANDLERS[51](security, ADMIN, body, 0), 51)
    answers = {r.user: (int(r.error_code), r.error_message) for r in response.results}
    assert answers == {
        "alice": (0, None),
        "bob": MISSING,
        "carol": UNKNOWN_MECHANISM,  # a code Kafka does not know is UNKNOWN
        "dave": (93, "Too few iterations"),
    }
    assert security.scram_credential("alice", SHA256) == ScramFormatter(SHA256).credential(b"salt", SALTED, 8192)

    for users in (None, []):  # librdkafka sends an empty list for "every user"
        response = roundtrip_response(HANDLERS[50](security, ADMIN, describe_body(users), 0), 50)
        assert int(response.error_code) == 0 and response.error_message is None
        [result] = response.results
        assert (result.user, int(result.error_code), result.error_message) == ("alice", 0, None)
        assert [(int(i.mechanism), int(i.iterations)) for i in result.credential_infos] == [(1, 8192)]

    response = roundtrip_response(handle_describe_user_scram_credentials(security, ADMIN, describe_body(["zed", "alice"]), 0), 50)
    assert [(r.user, int(r.error_code), r.error_message, len(r.credential_infos)) for r in response.results] == [
        ("zed", 91, "Attempt to describe a user credential that does not exist: zed", 0),
        ("alice", 0, None, 1),
    ]


def test_wire_answers_unauthorized_requests_as_kafka(security):
    mallory = RequestContext.for_principal("User:mallory")
    response = roundtrip_response(handle_describe_user_scram_credentials(security, mallory, describe_body(["b", "a"]), 0), 50)
    # Kafka's getErrorResponse: a message equal to the default is not sent; the users are left empty.
    assert (int(response.error_code), response.error_message) == (31, None)
    assert [(r.user, int(r.error_code), r.error_message) for r in response.results] == [("", 31, None), ("", 31, None)]
    response = roundtrip_response(handle_describe_user_scram_credentials(security, mallory, describe_body(None), 0), 50)
    assert int(response.error_code) == 31 and response.results == ()

    body = alter_body(deletions=[("b", 1)], upsertions=[("a", 1, 4096, b"s", SALTED), ("b", 2, 4096, b"s", SALTED)])
    response = roundtrip_response(handle_alter_user_scram_credentials(security, mallory, body, 0), 51)
    assert [(r.user, int(r.error_code), r.error_message) for r in response.results] == [("a", 31, None), ("b", 31, None)]
    assert described(security) == {}


def test_wire_unknown_server_error_has_no_message(security):
    body = alter_body(upsertions=[("alice", 1, 4096, b"salt", b"")])
    [result] = handle_alter_user_scram_credentials(security, ADMIN, body, 0).results
    assert (int(result.error_code), result.error_message) == (-1, None)


# ---------------------------------------------------------------------------------------- the model

USERS = ["alice", "bob", ""]
MECHANISMS = [SHA256, SHA512, UNKNOWN]


def model_request(state, alterations):
    """The rules, written as plainly as possible: the admin client's checks per user, then per
    user its alterations (deletions first): the first decides, a second is a duplicate."""
    errors = {}
    for a in alterations:
        if isinstance(a, UserScramCredentialDeletion) and (not a.user or a.mechanism is UNKNOWN):
            errors[a.user] = EMPTY_NAME if not a.user else UNKNOWN_MECHANISM
    for a in alterations:
        if isinstance(a, UserScramCredentialUpsertion) and a.user not in errors:
            if not a.user:
                errors[a.user] = EMPTY_NAME
            elif a.info.mechanism is UNKNOWN:
                errors[a.user] = UNKNOWN_MECHANISM
    ordered = [a for a in alterations if isinstance(a, UserScramCredentialDeletion)]
    ordered += [a for a in alterations if isinstance(a, UserScramCredentialUpsertion)]
    by_user = {}
    for a in ordered:
        if a.user not in errors:
            by_user.setdefault(a.user, []).append(a)
    new_state = dict(state)
    for user, mine in by_user.items():
        first = mine[0]
        if isinstance(first, UserScramCredentialDeletion):
            error = None if (user, first.mechanism) in state else MISSING
        else:
            iterations = first.info.iterations
            error = (93, "Too few iterations") if iterations < 4096 else (93, "Too many iterations") if iterations > 16384 else None
        if error is None and len(mine) > 1:
            error = TWICE
        errors[user] = error
        if error is None and isinstance(first, UserScramCredentialDeletion):
            del new_state[(user, first.mechanism)]
        elif error is None:
            new_state[(user, first.info.mechanism)] = first.info.iterations
    return new_state, errors


alteration = st.one_of(
    st.builds(delete, st.sampled_from(USERS), st.sampled_from(MECHANISMS)),
    st.builds(up, st.sampled_from(USERS), st.sampled_from(MECHANISMS), st.sampled_from([1, 4096, 8192, 16384, 16385])),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(alteration, max_size=5), max_size=6))
def test_any_sequence_of_alterations_matches_the_model(requests):
    state = {}
    with KafkaSecurity() as security:
        for alterations in requests:
            state, expected = model_request(state, alterations)
            assert outcome(security.alter_user_scram_credentials(alterations)) == expected
            model_users = {}
            for (user, mechanism), iterations in state.items():
                model_users.setdefault(user, set()).add((mechanism, iterations))
            assert described(security) == model_users
            assert security.describe_user_scram_credentials(USERS).users() == sorted(
                (u for u in model_users), key=USERS.index
            )
