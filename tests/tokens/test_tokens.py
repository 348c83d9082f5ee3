"""Delegation tokens (KIP-48, KIP-373): every rule and error with an injectable clock, token
logins through the SCRAM server, durable state and the expiry sweeper."""

import base64
import sqlite3
import time

import pytest
from cryptography.hazmat.primitives import hashes, hmac as crypto_hmac
from hypothesis import given, settings, strategies as st

from kafkasec import AclBinding, KafkaPrincipal, KafkaSecurity, RequestContext, SaslAuthenticationError, hookimpl
from kafkasec.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    InvalidPrincipalTypeError,
)
from kafkasec.scram.client import ScramClient
from kafkasec.store import StateError
from kafkasec.tokens import (
    DelegationTokenManager,
    TokenInformation,
    manager as manager_module,
    new_token_id,
    parse_hmac,
    token_hmac,
)

SECRET = "the-secret"
DAY = 24 * 60 * 60 * 1000
WEEK = 7 * DAY
T0 = 1_700_000_000_000


class Clock:
    def __init__(self, now=T0):
        self.now = now

    def __call__(self):
        return self.now


def sasl(name, protocol="SASL_SSL", token_authenticated=False):
    return RequestContext(KafkaPrincipal("User", name, token_authenticated), "10.0.0.1", security_protocol=protocol)


ALICE, BOB, CAROL = sasl("alice"), sasl("bob"), sasl("carol")


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def security(clock, tmp_path):
    config = {"delegation.token.secret.key": SECRET, "kafkasec.state.path": str(tmp_path / "state.db"), "super.users": "User:admin"}
    with KafkaSecurity.from_config(config, clock=clock) as security:
        yield security


def token_login(security, token, mechanism="SCRAM-SHA-256", password=None):
    client = ScramClient(mechanism, token.token_id, password or token.hmac_as_base64, token_auth=True)
    server = security.scram_server(mechanism)
    client.verify_server_final(server.evaluate_response(client.final_message(server.evaluate_response(client.first_message()))))
    return security.build_principal(server.authentication_context("10.0.0.1"))


# --- ids and HMACs, as Kafka makes them ---------------------------------------------------------


def test_token_ids_are_kafka_uuids():
    for _ in range(500):
        token_id = new_token_id()
        assert len(token_id) == 22 and not token_id.startswith("-")
        assert len(base64.urlsafe_b64decode(token_id + "==")) == 16


def test_ids_starting_with_a_dash_or_reserved_are_drawn_again(monkeypatch):
    draws = iter([b"\xf8" + bytes(15), bytes(16), (1).to_bytes(16, "big"), b"\x01" * 16])
    monkeypatch.setattr(manager_module.secrets, "token_bytes", lambda n: next(draws))
    assert base64.urlsafe_b64encode(b"\xf8" + bytes(15)).startswith(b"-")
    assert new_token_id() == base64.urlsafe_b64encode(b"\x01" * 16).rstrip(b"=").decode()


def test_hmac_is_hmac_sha512_of_the_utf8_token_id_keyed_by_the_utf8_secret():
    mac = crypto_hmac.HMAC("clé-secrète".encode(), hashes.SHA512())
    mac.update("tokenÄ".encode())
    assert token_hmac("tokenÄ", "clé-secrète") == mac.finalize()
    assert len(token_hmac("x", "y")) == 64


def test_created_token_carries_its_hmac_and_hides_it(security):
    token = security.create_delegation_token(ALICE, renewers=["User:bob"])
    assert token.hmac == token_hmac(token.token_id, SECRET)
    assert security.delegation_tokens.hmac_for(token.token_id) == token.hmac
    assert token.hmac_as_base64 not in repr(token) and repr(token.hmac) not in repr(token)
    assert parse_hmac(token.hmac_as_base64) == token.hmac
    assert parse_hmac(token.hmac_as_base64.rstrip("=")) == token.hmac
    with pytest.raises(ValueError):
        parse_hmac("not base64!")


# --- timestamps -----------------------------------------------------------------------------------


def test_create_timestamps_with_the_defaults(security):
    info = security.create_delegation_token(ALICE).info
    assert (info.issue_timestamp, info.expiry_timestamp, info.max_timestamp) == (T0, T0 + DAY, T0 + WEEK)
    assert info.owner == info.token_requester == KafkaPrincipal.user("alice")


@pytest.mark.parametrize(
    "requested, max_lifetime",
    [(-1, WEEK), (0, WEEK), (2 * WEEK, WEEK), (3 * DAY, 3 * DAY), (1000, 1000)],
)
def test_max_lifetime_is_capped_by_the_configured_one(security, requested, max_lifetime):
    info = security.create_delegation_token(ALICE, max_lifetime_ms=requested).info
    assert info.max_timestamp == T0 + max_lifetime
    assert info.expiry_timestamp == T0 + min(max_lifetime, DAY)


def test_a_token_is_valid_at_exactly_its_expiry(security, clock):
    token = security.create_delegation_token(ALICE)
    clock.now = token.info.expiry_timestamp
    assert security.renew_delegation_token(ALICE, token.hmac) == min(clock.now + DAY, token.info.max_timestamp)
    clock.now += DAY + 1
    with pytest.raises(DelegationTokenExpiredError):
        security.renew_delegation_token(ALICE, token.hmac)


def test_renew_moves_the_expiry_but_never_past_the_max(security, clock):
    token = security.create_delegation_token(ALICE, renewers=["User:bob"], max_lifetime_ms=2 * DAY)
    clock.now += 1000
    assert security.renew_delegation_token(BOB, token.hmac, 3600_000) == clock.now + 3600_000
    # A renewal period is capped by delegation.token.expiry.time.ms, as a new token's is.
    assert security.renew_delegation_token(ALICE, token.hmac, 5 * DAY) == clock.now + DAY
    clock.now += DAY  # exactly at the renewed expiry: still valid, and a day from the max
    assert security.renew_delegation_token(ALICE, token.hmac, -1) == token.info.max_timestamp


def test_renew_and_expire_only_by_the_owner_or_a_renewer(security):
    token = security.create_delegation_token(ALICE, renewers=["User:bob"])
    for call in (security.renew_delegation_token, security.expire_delegation_token):
        with pytest.raises(DelegationTokenOwnerMismatchError) as refused:
            call(CAROL, token.hmac, 1000)
        assert refused.value.code == 63


def test_unknown_hmac_is_not_found(security):
    for call in (security.renew_delegation_token, security.expire_delegation_token):
        with pytest.raises(DelegationTokenNotFoundError) as refused:
            call(ALICE, b"\x00" * 64, 1000)
        assert refused.value.code == 62


def test_expire_with_a_negative_period_removes_the_token_at_once(security, clock):
    token = security.create_delegation_token(ALICE)
    assert security.expire_delegation_token(ALICE, token.hmac, -1) == T0
    assert security.describe_delegation_tokens(ALICE) == []
    with pytest.raises(DelegationTokenNotFoundError):
        security.renew_delegation_token(ALICE, token.hmac)


def test_expire_with_a_period_brings_the_expiry_forward(security, clock):
    token = security.create_delegation_token(ALICE)
    assert security.expire_delegation_token(ALICE, token.hmac, 5000) == T0 + 5000
    [described] = security.describe_delegation_tokens(ALICE)
    assert described.info.expiry_timestamp == T0 + 5000
    assert security.expire_delegation_token(ALICE, token.hmac, 30 * DAY) == token.info.max_timestamp


def test_expired_tokens_cannot_be_renewed_or_given_a_new_expiry(security, clock):
    token = security.create_delegation_token(ALICE)
    clock.now = token.info.expiry_timestamp + 1
    with pytest.raises(DelegationTokenExpiredError) as refused:
        security.renew_delegation_token(ALICE, token.hmac)
    assert refused.value.code == 66
    with pytest.raises(DelegationTokenExpiredError):
        security.expire_delegation_token(ALICE, token.hmac, 1000)
    # ... but a negative period removes it, expired or not, as Kafka's controller does.
    assert security.expire_delegation_token(ALICE, token.hmac, -1) == clock.now
    with pytest.raises(DelegationTokenNotFoundError):
        security.expire_delegation_token(ALICE, token.hmac, -1)


def test_kafkas_order_of_checks_for_expired_tokens_of_someone_else(security, clock):
    # Renew looks at the expiry before the owner; expire at the owner before the expiry.
    token = security.create_delegation_token(ALICE)
    clock.now = token.info.max_timestamp + 1
    with pytest.raises(DelegationTokenExpiredError):
        security.renew_delegation_token(CAROL, token.hmac)
    with pytest.raises(DelegationTokenOwnerMismatchError):
        security.expire_delegation_token(CAROL, token.hmac)


@settings(max_examples=60, deadline=None)
@given(
    lifetime=st.integers(-5, 3 * WEEK),
    steps=st.lists(st.tuples(st.integers(0, 2 * DAY), st.integers(-5, 3 * DAY)), max_size=8),
)
def test_expiry_never_passes_the_max_and_never_precedes_now(lifetime, steps):
    clock = Clock()
    manager = DelegationTokenManager(SECRET, clock=clock)
    token = manager.create_token("User:alice", max_lifetime_ms=lifetime)
    assert token.info.issue_timestamp <= token.info.expiry_timestamp <= token.info.max_timestamp
    for advance, period in steps:
        clock.now += advance
        try:
            expiry = manager.renew_token(token.hmac, "User:alice", period)
        except DelegationTokenExpiredError:
            assert clock.now > token.info.max_timestamp or clock.now > manager.describe_tokens()[0].info.expiry_timestamp
            break
        assert clock.now <= expiry <= token.info.max_timestamp


# --- tokens off, and who may ask -------------------------------------------------------------------


def test_without_a_secret_every_operation_is_auth_disabled():
    with KafkaSecurity() as security:
        assert not security.delegation_tokens.enabled
        calls = [
            lambda: security.create_delegation_token(ALICE),
            lambda: security.renew_delegation_token(ALICE, b"x" * 64),
            lambda: security.expire_delegation_token(ALICE, b"x" * 64),
            lambda: security.describe_delegation_tokens(ALICE),
        ]
        for call in calls:
            with pytest.raises(DelegationTokenAuthDisabledError) as refused:
                call()
            assert refused.value.code == 61


@pytest.mark.parametrize(
    "context",
    [
        RequestContext(KafkaPrincipal.user("alice"), "10.0.0.1", security_protocol="PLAINTEXT"),
        RequestContext(KafkaPrincipal.user("ANONYMOUS"), "10.0.0.1", security_protocol="SSL"),
        sasl("alice", token_authenticated=True),
        sasl("alice", "SASL_PLAINTEXT", token_authenticated=True),
    ],
)
def test_token_requests_are_not_allowed_over_plaintext_one_way_ssl_or_a_token_login(security, context):
    token = security.create_delegation_token(ALICE)
    calls = [
        lambda: security.create_delegation_token(context),
        lambda: security.renew_delegation_token(context, token.hmac),
        lambda: security.expire_delegation_token(context, token.hmac),
        lambda: security.describe_delegation_tokens(context),
    ]
    for call in calls:
        with pytest.raises(DelegationTokenRequestNotAllowedError) as refused:
            call()
        assert refused.value.code == 64


def test_two_way_ssl_and_sasl_plaintext_may_ask(security):
    ssl_user = RequestContext(KafkaPrincipal.user("CN=alice"), "10.0.0.1", security_protocol="SSL")
    assert security.create_delegation_token(ssl_user).info.owner == KafkaPrincipal.user("CN=alice")
    assert security.create_delegation_token(sasl("alice", "SASL_PLAINTEXT")).info.owner.name == "alice"


def test_a_token_for_another_owner_needs_create_tokens_on_that_user(security):
    with pytest.raises(DelegationTokenAuthorizationFailedError) as refused:
        security.create_delegation_token(BOB, owner="User:alice")
    assert refused.value.code == 65
    security.create_acls([AclBinding.of("USER", "User:alice", "LITERAL", "User:bob", "*", "CREATE_TOKENS", "ALLOW")])
    token = security.create_delegation_token(BOB, owner="User:alice")
    assert token.info.owner == KafkaPrincipal.user("alice")
    assert token.info.token_requester == KafkaPrincipal.user("bob")
    with pytest.raises(DelegationTokenAuthorizationFailedError):
        security.create_delegation_token(BOB, owner="User:carol")


def test_renewers_must_be_users_after_the_kip_373_check(security):
    with pytest.raises(InvalidPrincipalTypeError) as refused:
        security.create_delegation_token(ALICE, renewers=["User:bob", "Group:eng"])
    assert refused.value.code == 67
    # Kafka's broker checks CREATE_TOKENS before the renewers' types.
    with pytest.raises(DelegationTokenAuthorizationFailedError):
        security.create_delegation_token(ALICE, owner="User:bob", renewers=["Group:eng"])
    # As in Kafka, the owner's type is not checked.
    security.create_acls([AclBinding.of("USER", "Group:eng", "LITERAL", "User:alice", "*", "CREATE_TOKENS", "ALLOW")])
    assert security.create_delegation_token(ALICE, owner="Group:eng").info.owner == KafkaPrincipal("Group", "eng")


def test_describe_shows_a_token_to_owner_renewers_and_holders_of_describe_rights(security):
    alices = security.create_delegation_token(ALICE, renewers=["User:bob"])
    carols = security.create_delegation_token(CAROL)

    def ids(context, owners=None):
        return sorted(token.token_id for token in security.describe_delegation_tokens(context, owners))

    assert ids(ALICE) == [alices.token_id]
    assert ids(BOB) == [alices.token_id]
    assert ids(CAROL) == [carols.token_id]
    dave, erin = sasl("dave"), sasl("erin")
    # The requester of a token made for someone else sees it too (KIP-373), but may not renew it.
    security.create_acls([AclBinding.of("USER", "User:frank", "LITERAL", "User:gina", "*", "CREATE_TOKENS", "ALLOW")])
    franks = security.create_delegation_token(sasl("gina"), owner="User:frank")
    assert ids(sasl("gina")) == [franks.token_id] == ids(sasl("frank"))
    with pytest.raises(DelegationTokenOwnerMismatchError):
        security.renew_delegation_token(sasl("gina"), franks.hmac)
    security.expire_delegation_token(sasl("frank"), franks.hmac, -1)
    assert ids(dave) == []
    security.create_acls([
        AclBinding.of("USER", "User:carol", "LITERAL", "User:dave", "*", "DESCRIBE_TOKENS", "ALLOW"),
        AclBinding.of("DELEGATION_TOKEN", alices.token_id, "LITERAL", "User:erin", "*", "DESCRIBE", "ALLOW"),
    ])
    assert ids(dave) == [carols.token_id]
    assert ids(erin) == [alices.token_id]
    assert ids(sasl("admin")) == sorted([alices.token_id, carols.token_id])
    # The owners filter: tokens each listed principal owns or may renew; empty: none.
    assert ids(sasl("admin"), ["User:bob"]) == [alices.token_id]
    assert ids(sasl("admin"), []) == []
    [described] = security.describe_delegation_tokens(BOB)
    assert described.hmac == alices.hmac


# --- token logins ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner_token_authenticated(security, mechanism):
    token = security.create_delegation_token(BOB, owner=None)
    principal = token_login(security, token, mechanism)
    assert principal == KafkaPrincipal.user("bob") and principal.token_authenticated
    # ... and a connection that logged in with a token may not ask for tokens.
    context = RequestContext(principal, "10.0.0.1", security_protocol="SASL_SSL")
    with pytest.raises(DelegationTokenRequestNotAllowedError):
        security.create_delegation_token(context)


def test_a_token_login_derives_nothing_the_token_was_derived_when_learnt(security, monkeypatch, tmp_path):
    """PBKDF2 for a token's credentials runs where the token is applied (a writer's or the
    follower's thread), as Kafka's token cache does, never in a login on an endpoint's loop;
    a renewal keeps them, and another node on the same state derives its own when it learns."""
    from kafkasec.scram.credentials import ScramFormatter

    token = security.create_delegation_token(BOB, owner=None)
    derive = ScramFormatter.generate_credential
    monkeypatch.setattr(ScramFormatter, "generate_credential", lambda *args: pytest.fail("PBKDF2 in a login or a renewal"))
    security.renew_delegation_token(BOB, token.hmac)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert token_login(security, token, mechanism).token_authenticated
    monkeypatch.setattr(ScramFormatter, "generate_credential", derive)
    with KafkaSecurity.from_config(security.config, clock=security.delegation_tokens.clock) as other_node:
        assert token_login(other_node, token).token_authenticated


def test_token_login_refused_for_a_wrong_hmac_an_unknown_or_an_expired_token(security, clock):
    token = security.create_delegation_token(ALICE)
    with pytest.raises(SaslAuthenticationError):
        token_login(security, token, password=base64.b64encode(b"\x01" * 64).decode())
    with pytest.raises(SaslAuthenticationError) as unknown:
        token_login(security, type(token)(token.info.__class__(**{**_fields(token.info), "token_id": "nope"}), token.hmac))
    assert "Invalid tokenId" in unknown.value.reason
    clock.now = token.info.expiry_timestamp + 1
    with pytest.raises(SaslAuthenticationError):
        token_login(security, token)


def _fields(info):
    return {name: getattr(info, name) for name in (
        "token_id", "owner", "token_requester", "renewers", "issue_timestamp", "expiry_timestamp", "max_timestamp")}


def test_lifecycle_create_login_renew_expire_with_a_restart_in_between(tmp_path, clock):
    config = {"delegation.token.secret.key": SECRET, "kafkasec.state.path": str(tmp_path / "state.db")}
    with KafkaSecurity.from_config(config, clock=clock) as security:
        token = security.create_delegation_token(ALICE, renewers=["User:bob"])
        assert token_login(security, token).token_authenticated
    clock.now += DAY - 1
    with KafkaSecurity.from_config(config, clock=clock) as security:
        [reloaded] = security.describe_delegation_tokens(ALICE)
        assert reloaded == token
        assert security.renew_delegation_token(BOB, token.hmac) == clock.now + DAY
    clock.now += DAY
    with KafkaSecurity.from_config(config, clock=clock) as security:
        assert token_login(security, token) == KafkaPrincipal.user("alice")
        security.expire_delegation_token(ALICE, token.hmac, -1)
        with pytest.raises(SaslAuthenticationError):
            token_login(security, token)
    with KafkaSecurity.from_config(config, clock=clock) as security:
        assert security.describe_delegation_tokens(ALICE) == []


def test_the_state_file_holds_no_hmac(tmp_path, clock):
    config = {"delegation.token.secret.key": SECRET, "kafkasec.state.path": str(tmp_path / "state.db")}
    with KafkaSecurity.from_config(config, clock=clock) as security:
        token = security.create_delegation_token(ALICE)
        token_login(security, token)
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.token_id.encode() in data
    for secret in (token.hmac, token.hmac_as_base64.encode(), SECRET.encode()):
        assert secret not in data


def test_a_bad_token_row_is_a_state_error(tmp_path):
    path = tmp_path / "state.db"
    with KafkaSecurity(state_path=str(path)):
        pass
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO delegation_tokens VALUES ('t', 'alice', 'User:alice', '[]', 1, 2, 3, 'k')")
    connection.commit()
    connection.close()
    with pytest.raises(StateError, match="delegation token 't'"):
        KafkaSecurity(state_path=str(path), config={"delegation.token.secret.key": SECRET})


# --- secret rotation -------------------------------------------------------------------------------


def test_tokens_of_an_older_secret_verify_until_that_secret_is_dropped(tmp_path, clock):
    path = str(tmp_path / "state.db")
    with KafkaSecurity.from_config({"delegation.token.secret.key": "old", "kafkasec.state.path": path}, clock=clock) as security:
        old_token = security.create_delegation_token(ALICE)
    rotated = {
        "delegation.token.secret.key": "new",
        "kafkasec.delegation.token.previous.secret.keys": "old",
        "kafkasec.state.path": path,
    }
    with KafkaSecurity.from_config(rotated, clock=clock) as security:
        assert token_login(security, old_token) == KafkaPrincipal.user("alice")
        security.renew_delegation_token(ALICE, old_token.hmac)
        new_token = security.create_delegation_token(ALICE)
        assert new_token.hmac == token_hmac(new_token.token_id, "new")
    with KafkaSecurity.from_config({**rotated, "kafkasec.delegation.token.previous.secret.keys": ""}, clock=clock) as security:
        assert [t.token_id for t in security.describe_delegation_tokens(ALICE)] == [new_token.token_id]
        with pytest.raises(DelegationTokenNotFoundError):
            security.renew_delegation_token(ALICE, old_token.hmac)
        with pytest.raises(SaslAuthenticationError):
            token_login(security, old_token)
        # Once expired, the sweeper removes the unverifiable token from the file too.
        clock.now += WEEK + 1
        assert set(security.delegation_tokens.expire_tokens()) == {old_token.token_id, new_token.token_id}
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT COUNT(*) FROM delegation_tokens").fetchone() == (0,)
    connection.close()


def test_rotation_settings_are_checked():
    with pytest.raises(ValueError, match="previous secret keys need"):
        DelegationTokenManager(None, previous_secret_keys=["old"])
    with pytest.raises(ValueError, match="delegation.token.max.lifetime.ms"):
        DelegationTokenManager(SECRET, max_lifetime_ms=0)
    with pytest.raises(ValueError, match="delegation.token.expiry.check.interval.ms"):
        KafkaSecurity.from_config({"delegation.token.expiry.check.interval.ms": "0"})
    with pytest.raises(TypeError):
        DelegationTokenManager(SECRET, expiry_time_ms="1000")
    with pytest.raises(ValueError, match="delegation.token.max.lifetime.ms"):
        KafkaSecurity.from_config({"delegation.token.secret.key": SECRET, "delegation.token.max.lifetime.ms": "soon"})


# --- the sweeper -------------------------------------------------------------------------------------


def test_expire_tokens_removes_exactly_the_expired_ones(security, clock):
    short = security.create_delegation_token(ALICE, max_lifetime_ms=1000)
    long = security.create_delegation_token(ALICE)
    clock.now += 1000
    assert security.delegation_tokens.expire_tokens() == []
    clock.now += 1
    assert security.delegation_tokens.expire_tokens() == [short.token_id]
    assert [t.token_id for t in security.describe_delegation_tokens(ALICE)] == [long.token_id]


def test_the_background_sweeper_removes_expired_tokens(tmp_path):
    config = {
        "delegation.token.secret.key": SECRET,
        "delegation.token.expiry.check.interval.ms": "20",
        "kafkasec.state.path": str(tmp_path / "state.db"),
    }
    with KafkaSecurity.from_config(config) as security:
        token = security.create_delegation_token(ALICE, max_lifetime_ms=1)
        deadline = time.monotonic() + 10
        while security.delegation_tokens.hmac_for(token.token_id) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert security.delegation_tokens.hmac_for(token.token_id) is None
    connection = sqlite3.connect(tmp_path / "state.db")
    assert connection.execute("SELECT COUNT(*) FROM delegation_tokens").fetchone() == (0,)
    connection.close()


# --- the store hook ----------------------------------------------------------------------------------


class DictTokenStore:
    def __init__(self):
        self.tokens = {}

    def load_delegation_tokens(self):
        return list(self.tokens.values())

    def apply_delegation_token_changes(self, upserts, removed_ids):
        for token_id in removed_ids:
            del self.tokens[token_id]
        for info, key in upserts:
            self.tokens[info.token_id] = (info, key)


def test_a_plugin_can_keep_the_tokens(clock):
    kept = DictTokenStore()

    class TokenStorePlugin:
        @hookimpl
        def kafkasec_delegation_token_store(self, security):
            return kept

    with KafkaSecurity(config={"delegation.token.secret.key": SECRET}, plugins=[TokenStorePlugin()], clock=clock) as security:
        token = security.create_delegation_token(ALICE)
        assert security.store.snapshot().tokens == {}  # not in the security log
    [(info, _key_id)] = kept.load_delegation_tokens()
    assert isinstance(info, TokenInformation) and info == token.info
    with KafkaSecurity(config={"delegation.token.secret.key": SECRET}, plugins=[TokenStorePlugin()], clock=clock) as again:
        assert again.delegation_tokens.token_for(token.hmac) == token
