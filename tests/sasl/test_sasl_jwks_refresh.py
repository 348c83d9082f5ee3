"""The JWKS validator's keys, refreshed in the background as Kafka's RefreshingHttpsJwks does,
over real sockets and within bounded time: a login never waits on the identity provider (one
that hangs, one that is down), the last good key set is kept through an outage, ``file:`` JWKS
are read again, and tokens naming unknown key ids ask for at most one fetch per cooldown."""

import gc
import json
import logging
import os
import threading
import time

import pytest

from kafkasec import KafkaSecurity
from kafkasec.sasl.jwks import JwksValidator
from kafkasec.sasl.oauthbearer import InvalidTokenError

from identity_provider import AUDIENCE, ISSUER, IdentityProvider, eventually

PROMPTLY_S = 0.5


def jwks_validator(url, **options):
    return JwksValidator(url, expected_audience=[AUDIENCE], expected_issuer=ISSUER, **options)


def validates(validator, token) -> bool:
    try:
        validator.validate(token)
    except InvalidTokenError:
        return False
    return True


def refresh_thread(url):
    return [thread for thread in threading.enumerate() if thread.name == f"kafkasec-jwks-refresh {url}"]


# ----------------------------------------------------------------------------- an endpoint that hangs


def test_a_login_does_not_wait_on_a_refresh_stuck_at_a_hanging_endpoint():
    provider = IdentityProvider()
    with provider.serving() as url:
        validator = jwks_validator(url, unknown_key_cooldown_ms=0, fetch_timeout_ms=5000, retry_backoff_max_ms=0)
        try:
            assert validator.keys.wait_until_known(5)
            tokens = [provider.token(f"user-{n}") for n in range(8)]
            provider.answering.clear()  # from now on the endpoint takes requests and answers none
            asked = provider.requests
            with pytest.raises(InvalidTokenError, match="no key of the JWKS has the token's key id 'rsa-9'"):
                validator.validate(_token_with_kid(provider, "rsa-9"))
            assert eventually(lambda: provider.requests == asked + 1)  # the refresh is now stuck in its fetch

            started = time.monotonic()
            assert validator.validate(tokens[0]).principal_name == "user-0"
            assert time.monotonic() - started < PROMPTLY_S

            # Eight threads at once, each validating 25 tokens: none waits behind the fetch.
            barrier = threading.Barrier(len(tokens))
            took: dict[int, float] = {}
            failures: list[BaseException] = []

            def logins(n):
                barrier.wait()
                began = time.monotonic()
                try:
                    for _ in range(25):
                        assert validator.validate(tokens[n]).principal_name == f"user-{n}"
                except BaseException as error:  # reported below, on the test's thread
                    failures.append(error)
                took[n] = time.monotonic() - began

            threads = [threading.Thread(target=logins, args=(n,)) for n in range(len(tokens))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
            assert not failures and len(took) == len(tokens)
            assert max(took.values()) < 2 * PROMPTLY_S, took
            assert provider.requests == asked + 1  # the fetch was still stuck all along
        finally:
            provider.answering.set()
            validator.close()


def test_a_validator_for_a_hanging_endpoint_is_built_at_once_and_refuses_logins_until_keys_come():
    provider = IdentityProvider()
    provider.answering.clear()
    with provider.serving() as url:
        started = time.monotonic()
        validator = jwks_validator(url, unknown_key_cooldown_ms=0, fetch_timeout_ms=5000)
        try:
            assert time.monotonic() - started < PROMPTLY_S
            token = provider.token("alice")
            started = time.monotonic()
            with pytest.raises(InvalidTokenError, match="no key set from .* is known yet"):
                validator.validate(token)
            assert time.monotonic() - started < PROMPTLY_S
            provider.answering.set()
            assert validator.keys.wait_until_known(5)
            assert validator.validate(token).principal_name == "alice"
        finally:
            provider.answering.set()
            validator.close()


def _token_with_kid(provider, kid):
    """A token signed with the provider's RSA key but naming a key id it does not have."""
    import jwt

    now = int(time.time())
    claims = {"sub": "mallory", "iat": now, "exp": now + 300, "aud": AUDIENCE, "iss": ISSUER}
    return jwt.encode(claims, provider.keys["rsa-1"][0], algorithm="RS256", headers={"kid": kid})


# ----------------------------------------------------------------------------- an endpoint that is down


def test_the_last_good_key_set_is_kept_while_the_provider_is_down_and_a_rotated_key_is_taken_after(caplog):
    provider = IdentityProvider()
    caplog.set_level(logging.DEBUG, logger="kafkasec.sasl.jwks")
    with provider.serving() as url:
        validator = jwks_validator(url, refresh_ms=500, retry_backoff_ms=50, retry_backoff_max_ms=200, fetch_timeout_ms=1000)
        assert validator.keys.wait_until_known(5)
    port = int(url.split(":")[2].split("/")[0])
    try:
        token = provider.token("alice")
        # The provider is down (connections refused) for three seconds: logins go on.
        down_until = time.monotonic() + 3
        while time.monotonic() < down_until:
            started = time.monotonic()
            assert validator.validate(token).principal_name == "alice"
            assert time.monotonic() - started < PROMPTLY_S
            time.sleep(0.1)
        kept = [r for r in caplog.records if r.levelno == logging.WARNING and "the last good key set (rsa-1)" in r.message]
        assert kept and "is kept" in kept[0].message and "s ago" in kept[0].message

        # It comes back having rotated its key: the new one is taken, the old one dropped.
        provider.add_key("rsa-2", "RS256")
        del provider.keys["rsa-1"]
        caplog.clear()
        with provider.serving(port=port):
            rotated = provider.token("bob", kid="rsa-2")
            assert eventually(lambda: validates(validator, rotated), timeout_s=5)
        assert any(r.levelno == logging.INFO and "JWKS keys refreshed" in r.message and "rsa-2" in r.message
                   for r in caplog.records)
        with pytest.raises(InvalidTokenError, match="no key of the JWKS has the token's key id 'rsa-1'"):
            validator.validate(token)
    finally:
        validator.close()


# ----------------------------------------------------------------------------- file: JWKS


def write_atomically(path, text):
    staged = path.with_suffix(".new")
    staged.write_text(text)
    os.replace(staged, path)


@pytest.mark.parametrize("as_url", [lambda path: f"file:{path}", lambda path: path.as_uri()], ids=["file:/path", "file:///path"])
def test_a_jwks_file_is_read_at_construction_and_again_every_refresh(tmp_path, caplog, as_url):
    first, second = IdentityProvider(), IdentityProvider()
    second.keys = {"ec-2": second.keys["rsa-1"]}  # another key under another key id
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(first.jwks()))
    with jwks_validator(as_url(path), refresh_ms=200, retry_backoff_max_ms=100) as validator:
        assert validator.validate(first.token("alice")).principal_name == "alice"  # read at construction
        write_atomically(path, json.dumps(second.jwks()))
        rotated = second.token("bob", kid="ec-2")
        assert eventually(lambda: validates(validator, rotated), timeout_s=3)
        assert not validates(validator, first.token("alice"))

        # A broken file later keeps the last good keys, and says so.
        caplog.set_level(logging.WARNING, logger="kafkasec.sasl.jwks")
        write_atomically(path, "{not json")
        assert eventually(lambda: any("the last good key set (ec-2)" in r.message for r in caplog.records), timeout_s=3)
        assert validator.validate(rotated).principal_name == "bob"


@pytest.mark.parametrize(
    "url, message",
    [
        ("file:{tmp}/missing.json", "cannot read a JWKS from .*missing.json: .*No such file"),
        ("file:{tmp}/broken.json", "cannot read a JWKS .*: the JWKS is not JSON"),
        ("file:{tmp}/empty.json", "cannot read a JWKS .*: the JWKS has no usable key"),
        ("file:{tmp}/hmac.json", "no signing key with a key id"),
        ("file:relative/jwks.json", "must name an absolute path"),
        ("file://elsewhere/etc/jwks.json", "names a file on another host"),
        ("ftp://idp/jwks", "must be an https://, http:// or file: URL"),
        ("idp.example.test/jwks", "must be an https://, http:// or file: URL"),
        ("https:///jwks", "names no host"),
        ("https://idp:port/jwks", "is not a URL"),
    ],
)
def test_a_jwks_that_cannot_be_had_at_start_up_is_one_clear_value_error(tmp_path, url, message):
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "empty.json").write_text('{"keys": []}')
    (tmp_path / "hmac.json").write_text('{"keys": [{"kty": "oct", "kid": "h", "k": "c2VjcmV0"}]}')
    url = url.format(tmp=tmp_path)
    with pytest.raises(ValueError, match=message) as refused:
        JwksValidator(url)
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=message):
        KafkaSecurity(config={"sasl.oauthbearer.jwks.endpoint.url": url})  # fails the start, not each login


# ----------------------------------------------------------------------------- unknown key ids


def test_unknown_key_ids_ask_for_at_most_one_fetch_per_cooldown():
    provider = IdentityProvider()
    with provider.serving() as url:
        with jwks_validator(url, unknown_key_cooldown_ms=700) as validator:
            assert validator.keys.wait_until_known(5)
            asked = provider.requests
            provider.add_key("ec-new", "ES256")
            rotated = provider.token("carol", kid="ec-new")
            with pytest.raises(InvalidTokenError, match="'ec-new' \\(a fetch of the JWKS is asked for\\)"):
                validator.validate(rotated)  # refused now, and the keys are fetched
            for n in range(20):  # a client inventing key ids
                with pytest.raises(InvalidTokenError, match="less than 700 ms ago"):
                    validator.validate(_token_with_kid(provider, f"invented-{n}"))
            assert eventually(lambda: "ec-new" in validator.keys.current.keys)
            time.sleep(0.2)
            assert provider.requests == asked + 1
            assert validator.validate(rotated).principal_name == "carol"

            time.sleep(0.7)  # the cooldown is over: one more fetch, and one only
            for n in range(20):
                with pytest.raises(InvalidTokenError):
                    validator.validate(_token_with_kid(provider, f"invented-again-{n}"))
            assert eventually(lambda: provider.requests == asked + 2)
            time.sleep(0.2)
            assert provider.requests == asked + 2


# ----------------------------------------------------------------------------- the refresh thread's end


def test_the_refresh_thread_ends_with_close_with_its_kafka_security_and_with_its_validator():
    provider = IdentityProvider()
    with provider.serving() as url:
        validator = jwks_validator(url)
        [thread] = refresh_thread(url)
        assert thread.daemon
        validator.close()
        thread.join(5)
        assert not thread.is_alive()
        assert validator.validate(provider.token("alice")).principal_name == "alice"  # the keys stay

        with KafkaSecurity(config={"sasl.oauthbearer.jwks.endpoint.url": url}) as security:
            security.sasl_server("OAUTHBEARER")  # the validator built at start-up, keys fetched
            [thread] = refresh_thread(url)
        thread.join(5)
        assert not thread.is_alive()

        jwks_validator(url).keys.wait_until_known(5)  # dropped without close()
        [thread] = refresh_thread(url)
        gc.collect()
        thread.join(5)
        assert not thread.is_alive()
