"""JWTs checked against an identity provider's keys: Kafka's OAuthBearerValidatorCallbackHandler
(KIP-768), with PyJWT.

The keys come from ``sasl.oauthbearer.jwks.endpoint.url``: an ``https://`` or ``http://`` URL, or
a ``file:`` URL of a JWKS on disk. :class:`JwksKeys` holds them as Kafka's RefreshingHttpsJwks
does: a daemon thread fetches the set at start and again every
``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (a file is read again on the same schedule, so that
replacing it rotates the keys). A failed fetch is retried after
``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms``, doubled at each retry, for at most
``sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms``; then the last good set is kept until the
next refresh, and a warning on the ``kafkasec.sasl.jwks`` logger says so and how old that set is.
Validating a token reads only the set in memory: a login never waits on the identity provider,
nor on the disk.

A token naming a key id the set lacks asks the thread for a fetch now and is refused (Kafka's
RefreshingHttpsJwksVerificationKeyResolver: maybeExpediteRefresh, then UnresolvableKeyException).
At most one such fetch is asked for per ``unknown_key_cooldown_ms``, so that clients inventing key
ids cannot make every login a request to the identity provider. When the provider rotates its
keys, the first login with the new key is therefore refused, and the client's retry, after its
backoff, finds the key.

A token is valid when its signature verifies with the key its ``kid`` names, using that key's
asymmetric algorithm (``alg: none``, HMAC and any algorithm other than the key's are refused,
whatever the token's header says), its ``exp`` is in the future and its ``iat``/``nbf`` not in it
(with ``sasl.oauthbearer.clock.skew.seconds`` of slack), its audience is one of
``sasl.oauthbearer.expected.audience`` and its issuer ``sasl.oauthbearer.expected.issuer`` when
those are set. The principal is the ``sasl.oauthbearer.sub.claim.name`` claim (``sub``), the
scope the ``sasl.oauthbearer.scope.claim.name`` claim (``scope``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
import urllib.request
import weakref
from pathlib import Path
from typing import Iterable, Mapping

import jwt
from attrs import define, field, frozen

from kafkasec.sasl.oauthbearer import InvalidTokenError, ValidatedToken, jwt_part, scope_claim

log = logging.getLogger("kafkasec.sasl.jwks")

ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
"""The algorithms a key from a JWKS may verify with; a token's header chooses none of them."""

MAX_JWKS_BYTES = 1024 * 1024
"""A larger JWKS is refused: a few keys take a few kilobytes, and the fetch must not fill memory."""

_SETTINGS = {
    "url": "sasl.oauthbearer.jwks.endpoint.url",
    "refresh": "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "backoff": "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "backoff_max": "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "audience": "sasl.oauthbearer.expected.audience",
    "issuer": "sasl.oauthbearer.expected.issuer",
    "sub": "sasl.oauthbearer.sub.claim.name",
    "scope": "sasl.oauthbearer.scope.claim.name",
    "skew": "sasl.oauthbearer.clock.skew.seconds",
}


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@frozen
class JwksKeySet:
    """One JWKS as read: its verification keys by key id, and when it was read
    (``time.monotonic()`` seconds)."""

    keys: Mapping[str, jwt.PyJWK]
    fetched_at: float

    @classmethod
    def parse(cls, document: bytes | str, fetched_at: float) -> JwksKeySet:
        """The keys of a JWKS that have a key id and verify signatures with one of
        :data:`ASYMMETRIC_ALGORITHMS` (the others, and keys for encryption, are left out);
        ValueError when no key is left."""
        try:
            parsed = json.loads(document)
        except ValueError as error:
            raise ValueError(f"the JWKS is not JSON: {error}") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("keys"), list):
            raise ValueError('the JWKS is not a JSON object with a "keys" list')
        try:
            key_set = jwt.PyJWKSet.from_dict(parsed)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as error:
            # What the identity provider sends is untrusted: a malformed key is a bad JWKS, whatever breaks.
            raise ValueError(f"the JWKS has no usable key: {error}") from None
        keys = {
            key.key_id: key
            for key in key_set.keys
            if isinstance(key.key_id, str)
            and key.algorithm_name in ASYMMETRIC_ALGORITHMS
            and key.public_key_use in ("sig", None)
        }
        if not keys:
            raise ValueError("the JWKS has no signing key with a key id (kid) for an asymmetric algorithm")
        return cls(keys, fetched_at)

    def age_seconds(self) -> float:
        return time.monotonic() - self.fetched_at


def _file_path(url: str) -> Path | None:
    """The file a ``file:`` URL names, None for an http(s) URL; ValueError for anything else."""
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # reading it checks that the port is a number
    except ValueError as error:
        raise ValueError(f"{_SETTINGS['url']} is not a URL ({error}): {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme in ("https", "http"):
        if not parts.hostname:
            raise ValueError(f"{_SETTINGS['url']} names no host: {url!r}")
        return None
    if scheme != "file":
        raise ValueError(f"{_SETTINGS['url']} must be an https://, http:// or file: URL, not {url!r}")
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"{_SETTINGS['url']} names a file on another host ({parts.netloc}): {url!r}")
    path = Path(urllib.request.url2pathname(parts.path))
    if not path.is_absolute():
        raise ValueError(f"{_SETTINGS['url']} must name an absolute path (file:/path/jwks.json), not {url!r}")
    return path


@define(eq=False)
class JwksKeys:
    """The identity provider's current key set, kept fresh by a daemon thread (see the module
    docstring): :attr:`current` never waits, :meth:`expedite` asks for a fetch now.

    A ``file:`` URL is read at construction, and a missing or malformed file is a ValueError then;
    an http(s) endpoint is first fetched by the thread, so construction never waits on it, and
    :attr:`current` is None until a fetch succeeds. :meth:`close` (or leaving a ``with`` block, or
    dropping the last reference) ends the thread.
    """

    url: str = field(repr=lambda url: repr(_without_credentials(url)))
    refresh_ms: int = 3_600_000
    unknown_key_cooldown_ms: int = 10_000
    """At most one fetch asked for by :meth:`expedite` per this long."""
    fetch_timeout_ms: int = 10_000
    """How long one fetch may wait on the network (each connect and read)."""
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 10_000
    current: JwksKeySet | None = field(init=False, default=None, repr=False)
    """The last good key set, replaced whole (one reference swap) by each successful fetch."""
    shown_url: str = field(init=False, repr=False)
    """The URL without its user and password, for logs and messages."""
    _file: Path | None = field(init=False, default=None, repr=False)
    _wake: threading.Event = field(init=False, factory=threading.Event, repr=False)
    _closing: threading.Event = field(init=False, factory=threading.Event, repr=False)
    _known: threading.Event = field(init=False, factory=threading.Event, repr=False)
    _expedite_lock: threading.Lock = field(init=False, factory=threading.Lock, repr=False)
    _last_expedited: float | None = field(init=False, default=None, repr=False)
    _next_refresh: float = field(init=False, default=0.0, repr=False)
    _failing: bool = field(init=False, default=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._file = _file_path(self.url)
        self.shown_url = _without_credentials(self.url)
        if self.refresh_ms <= 0:
            # A refresh every 0 ms would be a thread fetching without pause.
            raise ValueError(f"{_SETTINGS['refresh']} must be > 0, not {self.refresh_ms}")
        for name, value in [
            ("unknown_key_cooldown_ms", self.unknown_key_cooldown_ms),
            ("fetch_timeout_ms", self.fetch_timeout_ms),
            (_SETTINGS["backoff"], self.retry_backoff_ms),
            (_SETTINGS["backoff_max"], self.retry_backoff_max_ms),
        ]:
            if value < 0:
                raise ValueError(f"{name} must be >= 0, not {value}")
        if self._file is not None:
            # A file is there at start-up or the start fails: one clear error, not one per login.
            try:
                self.current = self._fetch()
            except (OSError, ValueError) as error:
                raise ValueError(f"{_SETTINGS['url']} {self.shown_url!r}: cannot read a JWKS from {self._file}: {error}") from None
            self._known.set()
            self._next_refresh = self.current.fetched_at + self.refresh_ms / 1000
        else:
            self._next_refresh = time.monotonic()
        # The thread holds this object only while it fetches: one dropped without close() is
        # collected, and the finalizer ends its thread.
        weakref.finalize(self, _stop, self._wake, self._closing)
        threading.Thread(
            target=_refresh_until_closed,
            args=(weakref.ref(self), self._wake, self._closing),
            name=f"kafkasec-jwks-refresh {self.shown_url}",
            daemon=True,
        ).start()

    def expedite(self) -> bool:
        """Ask the thread for a fetch now, unless one was asked for less than
        ``unknown_key_cooldown_ms`` ago; True when asked. Never waits for the fetch."""
        now = time.monotonic()
        with self._expedite_lock:
            if self._last_expedited is not None and now - self._last_expedited < self.unknown_key_cooldown_ms / 1000:
                return False
            self._last_expedited = now
        self._wake.set()
        return True

    def wait_until_known(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for a first key set; True when there is one. For start-up
        and tests: a login never waits."""
        return self._known.wait(timeout_s)

    def close(self) -> None:
        """End the thread: at once when it waits, after its fetch when one is under way (a
        daemon, it never keeps the process alive). :attr:`current` stays as it is."""
        _stop(self._wake, self._closing)

    def __enter__(self) -> JwksKeys:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _seconds_until_refresh(self) -> float:
        return max(0.0, self._next_refresh - time.monotonic())

    def _fetch(self) -> JwksKeySet:
        if self._file is not None:
            with self._file.open("rb") as source:
                document = source.read(MAX_JWKS_BYTES + 1)
        else:
            request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
            with urllib.request.urlopen(request, timeout=self.fetch_timeout_ms / 1000) as response:
                document = response.read(MAX_JWKS_BYTES + 1)
        if len(document) > MAX_JWKS_BYTES:
            raise ValueError(f"the JWKS is larger than {MAX_JWKS_BYTES} bytes")
        return JwksKeySet.parse(document, time.monotonic())

    def _refresh(self) -> None:
        """One refresh: fetch, retrying with a doubling backoff for at most
        ``retry_backoff_max_ms``; swap in the new set, or keep the last good one and say so."""
        give_up_at = time.monotonic() + self.retry_backoff_max_ms / 1000
        attempts = 0
        while True:
            attempts += 1
            try:
                key_set = self._fetch()
                break
            except Exception as error:  # the thread must outlive whatever the provider sends
                failure = error
            backoff = min(self.retry_backoff_ms / 1000 * 2 ** (attempts - 1), give_up_at - time.monotonic())
            if backoff > 0:
                log.debug("JWKS fetch from %s failed (%s: %s); retrying in %.3f s", self.shown_url,
                          type(failure).__name__, failure, backoff)
            if backoff > 0 and self._closing.wait(backoff):
                return  # closed while waiting to retry: nothing to report
            if backoff <= 0:
                self._next_refresh = time.monotonic() + self.refresh_ms / 1000
                self._failed(failure, attempts)
                return
        previous, self.current = self.current, key_set
        self._known.set()
        self._next_refresh = time.monotonic() + self.refresh_ms / 1000
        changed = previous is None or set(previous.keys) != set(key_set.keys)
        log.log(
            logging.INFO if changed or self._failing else logging.DEBUG,
            "JWKS keys refreshed from %s: %s",
            self.shown_url,
            ", ".join(sorted(key_set.keys)),
        )
        self._failing = False

    def _failed(self, error: Exception, attempts: int) -> None:
        self._failing = True
        why = f"{type(error).__name__}: {error}"
        last_good = self.current
        if last_good is None:
            log.warning(
                "JWKS fetch from %s failed after %d attempt(s) (%s); no key set is known, so OAUTHBEARER logins "
                "are refused until one is fetched (next try in %d ms, or sooner when a login asks for it)",
                self.shown_url, attempts, why, self.refresh_ms,
            )
        else:
            log.warning(
                "JWKS refresh from %s failed after %d attempt(s) (%s); the last good key set (%s), fetched %.0f s "
                "ago, is kept (next try in %d ms)",
                self.shown_url, attempts, why, ", ".join(sorted(last_good.keys)), last_good.age_seconds(), self.refresh_ms,
            )


def _without_credentials(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _stop(wake: threading.Event, closing: threading.Event) -> None:
    closing.set()
    wake.set()


def _refresh_until_closed(owner: weakref.ReferenceType[JwksKeys], wake: threading.Event, closing: threading.Event) -> None:
    # A strong reference lives only across one refresh: between them, the thread holds the
    # events alone, so that the JwksKeys can be collected.
    while not closing.is_set():
        keys = owner()
        if keys is None:
            return
        delay = keys._seconds_until_refresh()
        del keys
        wake.wait(delay)
        wake.clear()
        keys = owner()
        if keys is None or closing.is_set():
            return
        keys._refresh()
        del keys


@define
class JwksValidator:
    """Validates signed JWTs against the keys of a JWKS endpoint (see the module docstring).

    The keys are held by :attr:`keys`, refreshed in the background; :meth:`validate` reads them
    and never waits on the endpoint. :meth:`close` ends the refresh thread.
    """

    jwks_url: str = field(repr=lambda url: repr(_without_credentials(url)))
    refresh_ms: int = 3_600_000
    expected_audience: tuple[str, ...] = field(default=(), converter=_names)
    expected_issuer: str | None = None
    sub_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    clock_skew_seconds: int = 30
    unknown_key_cooldown_ms: int = 10_000
    """At most one fetch per this long for tokens naming a key id the JWKS lacks: a client
    inventing key ids must not make every login a request to the identity provider."""
    fetch_timeout_ms: int = 10_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 10_000
    keys: JwksKeys = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.keys = JwksKeys(
            self.jwks_url,
            refresh_ms=self.refresh_ms,
            unknown_key_cooldown_ms=self.unknown_key_cooldown_ms,
            fetch_timeout_ms=self.fetch_timeout_ms,
            retry_backoff_ms=self.retry_backoff_ms,
            retry_backoff_max_ms=self.retry_backoff_max_ms,
        )

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> JwksValidator:
        def number(key: str, default: int) -> int:
            value = config.get(_SETTINGS[key], default)
            try:
                parsed = int(str(value))
            except ValueError:
                raise ValueError(f"{_SETTINGS[key]} must be a whole number, not {value!r}") from None
            if parsed < 0:
                raise ValueError(f"{_SETTINGS[key]} must be >= 0, not {parsed}")
            return parsed

        audience = str(config.get(_SETTINGS["audience"]) or "")
        return cls(
            jwks_url=str(config[_SETTINGS["url"]]),
            refresh_ms=number("refresh", 3_600_000),
            expected_audience=[part.strip() for part in audience.split(",") if part.strip()],
            expected_issuer=str(config[_SETTINGS["issuer"]]) if config.get(_SETTINGS["issuer"]) else None,
            sub_claim_name=str(config.get(_SETTINGS["sub"]) or "sub"),
            scope_claim_name=str(config.get(_SETTINGS["scope"]) or "scope"),
            clock_skew_seconds=number("skew", 30),
            retry_backoff_ms=number("backoff", 100),
            retry_backoff_max_ms=number("backoff_max", 10_000),
        )

    def close(self) -> None:
        """End the key refresh thread (see :meth:`JwksKeys.close`)."""
        self.keys.close()

    def __enter__(self) -> JwksValidator:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def validate(self, token: str) -> ValidatedToken:
        # The header is read here, once: PyJWT parses the whole token again to verify it.
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidTokenError("the token is not a JWT: it has not three parts")
        header = jwt_part(parts[0])
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise InvalidTokenError("the token names no key id (kid)")
        key_set = self.keys.current  # one read of the reference: a refresh swapping it meanwhile is harmless
        key = None if key_set is None else key_set.keys.get(kid)
        if key is None:
            # Kafka's RefreshingHttpsJwksVerificationKeyResolver: ask for the keys now and refuse
            # this token; the client's next login, after the fetch, finds a rotated key.
            asked = self.keys.expedite()
            fetch = "a fetch of the JWKS is asked for" if asked else (
                f"a fetch was asked for less than {self.unknown_key_cooldown_ms} ms ago")
            if key_set is None:
                raise InvalidTokenError(f"no key set from {self.keys.shown_url} is known yet ({fetch})")
            raise InvalidTokenError(f"no key of the JWKS has the token's key id {kid[:100]!r} ({fetch})")
        algorithm = key.algorithm_name
        if algorithm not in ASYMMETRIC_ALGORITHMS or header.get("alg") != algorithm:
            raise InvalidTokenError(f"the token's alg {header.get('alg')!r} is not its key's ({algorithm})")
        required = ["exp", self.sub_claim_name]
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=list(self.expected_audience) or None,
                issuer=self.expected_issuer,
                leeway=self.clock_skew_seconds,
                options={"require": required, "verify_aud": bool(self.expected_audience)},
            )
        except jwt.InvalidTokenError as error:
            raise InvalidTokenError(f"the token does not validate: {type(error).__name__}: {error}") from None
        principal = claims.get(self.sub_claim_name)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidTokenError(f"the {self.sub_claim_name!r} claim is not a principal name")
        issued = claims.get("iat")
        return ValidatedToken(
            principal,
            int(claims["exp"] * 1000),
            scope_claim(claims.get(self.scope_claim_name)),
            int(issued * 1000) if isinstance(issued, (int, float)) else None,
        )
