"""The delegation-token manager: Kafka's DelegationTokenControlManager rules (KIP-48), with the
tokens kept in a store and their HMACs recomputed from the secret.

The manager answers for the controller's side: it checks what Kafka's controller checks (tokens
enabled, the token exists, owner or renewer, not expired) and computes the timestamps as Kafka
does. What Kafka checks before a request reaches the controller (the connection may ask for
tokens at all, KIP-373's CREATE_TOKENS and DESCRIBE_TOKENS) is in :mod:`kafkasec.tokens.admin`.

Beyond Kafka, the secret can be rotated: the manager takes the current secret and older ones.
New tokens use the current one; a token made with an older secret keeps working until it
expires, as long as that secret is still listed. Each stored token records which secret made
it by a key id (an HMAC of a fixed text under the secret), never the secret itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_module
import secrets
import threading
import time
from typing import Callable, Iterable, Mapping

from attrs import evolve

from kafkasec.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    InvalidPrincipalTypeError,
)
from kafkasec.principals.principal import USER_TYPE, KafkaPrincipal
from kafkasec.scram.credentials import (
    MIN_ITERATIONS,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
)
from kafkasec.settings import parse_milliseconds
from kafkasec.store.records import DelegationTokenRecord, Record, RemoveDelegationTokenRecord
from kafkasec.store.writer import LocalWriter
from kafkasec.tokens.model import (
    DelegationToken,
    TokenInformation,
    principal_of,
    principals_of,
)

SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME_MS = "delegation.token.max.lifetime.ms"
EXPIRY_TIME_MS = "delegation.token.expiry.time.ms"
EXPIRY_CHECK_INTERVAL_MS = "delegation.token.expiry.check.interval.ms"
PREVIOUS_SECRET_KEYS = "kafkasec.delegation.token.previous.secret.keys"

DEFAULT_MAX_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000
DEFAULT_EXPIRY_TIME_MS = 24 * 60 * 60 * 1000
DEFAULT_EXPIRY_CHECK_INTERVAL_MS = 60 * 60 * 1000

_KEY_ID_TEXT = b"kafkasec delegation token key id"
# Kafka's Uuid.randomUuid() draws again for these two and for text starting with '-'.
_RESERVED_IDS = {bytes(16), (1).to_bytes(16, "big")}


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def token_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac: HMAC-SHA512 keyed by the UTF-8 secret over the
    UTF-8 token id."""
    return hmac_module.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes in unpadded base64url (22
    characters), drawn again if reserved or if the text would start with '-'."""
    while True:
        raw = secrets.token_bytes(16)
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if raw not in _RESERVED_IDS and not text.startswith("-"):
            return text


def key_id(secret_key: str) -> str:
    """Which secret made a token, without storing the secret. Anyone who holds a token can
    already test guesses of the secret against its HMAC, so this tells nothing more."""
    return hmac_module.new(secret_key.encode("utf-8"), _KEY_ID_TEXT, hashlib.sha256).hexdigest()[:16]


def user_principal(principal: object, role: str) -> KafkaPrincipal:
    """``principal`` as a KafkaPrincipal; INVALID_PRINCIPAL_TYPE (67) unless it is a User, as
    Kafka requires of a token's renewers."""
    principal = principal_of(principal)
    if principal.principal_type != USER_TYPE:
        raise InvalidPrincipalTypeError(f"The {role} of a delegation token must be a User principal, not {principal}")
    return principal


def _milliseconds(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int number of milliseconds, not {value!r}")
    return value


class DelegationTokenManager:
    """Creates, renews, expires and describes delegation tokens, and serves token logins.

    ``secret_key`` is ``delegation.token.secret.key``: None or empty turns tokens off (every
    operation raises DELEGATION_TOKEN_AUTH_DISABLED, and no token logs in).
    ``previous_secret_keys`` are older secrets whose tokens still verify. ``clock()`` returns
    the time in milliseconds since the epoch.

    Write and apply are apart, as in Kafka's controller and token cache: an operation plans
    its change inside ``writer.writing()`` (a :class:`~kafkasec.store.writer.StateWriter` that
    appends DelegationTokenRecord / RemoveDelegationTokenRecord to the security log), and the
    node's follower applies the records back through :meth:`load_token_snapshot` and
    :meth:`apply_records`, on every node. Without a ``writer`` the tokens live in this
    manager only.
    """

    def __init__(
        self,
        secret_key: str | None = None,
        *,
        previous_secret_keys: Iterable[str] = (),
        max_lifetime_ms: int = DEFAULT_MAX_LIFETIME_MS,
        expiry_time_ms: int = DEFAULT_EXPIRY_TIME_MS,
        expiry_check_interval_ms: int = DEFAULT_EXPIRY_CHECK_INTERVAL_MS,
        clock: Callable[[], int] = wall_clock_ms,
        writer=None,
    ):
        for name, setting, value in (
            ("max_lifetime_ms", MAX_LIFETIME_MS, max_lifetime_ms),
            ("expiry_time_ms", EXPIRY_TIME_MS, expiry_time_ms),
            ("expiry_check_interval_ms", EXPIRY_CHECK_INTERVAL_MS, expiry_check_interval_ms),
        ):
            if _milliseconds(name, value) <= 0:
                raise ValueError(f"{setting} ({name}) must be > 0, not {value}")
        if secret_key is not None and not isinstance(secret_key, str):
            raise TypeError("delegation.token.secret.key must be a str or None")
        previous = [key for key in previous_secret_keys]
        if not all(isinstance(key, str) and key for key in previous):
            raise ValueError("every previous secret key must be a non-empty str")
        if previous and not secret_key:
            raise ValueError("previous secret keys need a current delegation.token.secret.key")
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {clock!r}")
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.expiry_check_interval_ms = expiry_check_interval_ms
        self.clock = clock
        self._secret_key = secret_key or None
        # key id -> secret, the current one first; a token whose key id is not here is dead.
        self._secrets = {key_id(key): key for key in ([secret_key] if secret_key else []) + previous}
        self._writer = writer or LocalWriter(self.apply_in_order)
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[DelegationToken, str]] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._scram: dict[bytes, dict[ScramMechanism, ScramCredential]] = {}  # by token HMAC
        self._unverifiable: dict[str, TokenInformation] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, object], **kwargs) -> DelegationTokenManager:
        """From Kafka's settings: ``delegation.token.secret.key``, ``delegation.token.max.lifetime.ms``,
        ``delegation.token.expiry.time.ms``, ``delegation.token.expiry.check.interval.ms``, and
        ``kafkasec.delegation.token.previous.secret.keys`` (comma-separated older secrets)."""
        previous = str(config.get(PREVIOUS_SECRET_KEYS, "") or "")
        return cls(
            str(config.get(SECRET_KEY) or "") or None,
            previous_secret_keys=[key.strip() for key in previous.split(",") if key.strip()],
            max_lifetime_ms=parse_milliseconds(config, MAX_LIFETIME_MS, DEFAULT_MAX_LIFETIME_MS),
            expiry_time_ms=parse_milliseconds(config, EXPIRY_TIME_MS, DEFAULT_EXPIRY_TIME_MS),
            expiry_check_interval_ms=parse_milliseconds(config, EXPIRY_CHECK_INTERVAL_MS, DEFAULT_EXPIRY_CHECK_INTERVAL_MS),
            **kwargs,
        )

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"DelegationTokenManager({state}, {len(self._tokens)} tokens, secrets={len(self._secrets)})"

    @property
    def enabled(self) -> bool:
        """Whether ``delegation.token.secret.key`` is set."""
        return self._secret_key is not None

    # ------------------------------------------------------------------ the operations

    def create_token(
        self,
        owner: KafkaPrincipal | str,
        *,
        requester: KafkaPrincipal | str | None = None,
        renewers: Iterable[KafkaPrincipal | str] = (),
        max_lifetime_ms: int = -1,
    ) -> DelegationToken:
        """A new token for ``owner``: it ends at now + ``max_lifetime_ms`` (capped by
        ``delegation.token.max.lifetime.ms``; <= 0 means that setting) and expires after
        ``delegation.token.expiry.time.ms`` unless renewed. ``requester`` defaults to the owner.
        Renewers must be User principals; as in Kafka, the owner's type is not checked."""
        owner = principal_of(owner)
        requester = owner if requester is None else principal_of(requester)
        renewers = [user_principal(renewer, "renewer") for renewer in principals_of(renewers)]
        _milliseconds("max_lifetime_ms", max_lifetime_ms)
        secret_key = self._secret_key
        if secret_key is None:
            raise DelegationTokenAuthDisabledError()
        now = self.clock()
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
        max_timestamp = now + lifetime
        info = TokenInformation(
            new_token_id(), owner, requester, renewers, now, min(max_timestamp, now + self.expiry_time_ms), max_timestamp
        )
        with self._writer.writing() as transaction:
            transaction.append([DelegationTokenRecord(info, key_id(secret_key))])
        return self._tokens[info.token_id][0]

    def renew_token(self, hmac: bytes, principal: KafkaPrincipal | str, renew_period_ms: int = -1) -> int:
        """Move the token's expiry to now + ``renew_period_ms`` (capped by
        ``delegation.token.expiry.time.ms``; <= 0 means that setting), never past its maximum
        timestamp; return the new expiry timestamp. Only the owner or a renewer may."""
        principal = principal_of(principal)
        _milliseconds("renew_period_ms", renew_period_ms)
        self._check_enabled()
        with self._writer.writing() as transaction:
            now = self.clock()
            token = self._live_token(hmac)
            if token.info.is_expired(now):
                raise DelegationTokenExpiredError()
            if not token.info.may_renew(principal):
                raise DelegationTokenOwnerMismatchError()
            period = self.expiry_time_ms if renew_period_ms <= 0 else min(renew_period_ms, self.expiry_time_ms)
            expiry = min(token.info.max_timestamp, now + period)
            transaction.append([self._with_expiry(token, expiry)])
        return expiry

    def expire_token(self, hmac: bytes, principal: KafkaPrincipal | str, expiry_period_ms: int = -1) -> int:
        """Bring the token's expiry to now + ``expiry_period_ms`` (never past its maximum); a
        negative period removes it at once, expired or not. Returns the expiry timestamp. Only
        the owner or a renewer may."""
        principal = principal_of(principal)
        _milliseconds("expiry_period_ms", expiry_period_ms)
        self._check_enabled()
        with self._writer.writing() as transaction:
            now = self.clock()
            token = self._live_token(hmac)
            if not token.info.may_renew(principal):
                raise DelegationTokenOwnerMismatchError()
            if expiry_period_ms < 0:  # removed at once, even if it has already expired
                transaction.append([RemoveDelegationTokenRecord(token.token_id)])
                return now
            if token.info.is_expired(now):
                raise DelegationTokenExpiredError()
            expiry = min(token.info.max_timestamp, now + expiry_period_ms)
            transaction.append([self._with_expiry(token, expiry)])
        return expiry

    def describe_tokens(self, predicate: Callable[[TokenInformation], bool] | None = None) -> list[DelegationToken]:
        """Every live token (with ``predicate``: those it accepts), oldest first."""
        self._check_enabled()
        with self._lock:
            tokens = [token for token, _ in self._tokens.values()]
        tokens.sort(key=lambda token: (token.info.issue_timestamp, token.token_id))
        return [token for token in tokens if predicate is None or predicate(token.info)]

    def token_for(self, hmac: bytes) -> DelegationToken | None:
        """The token whose HMAC is ``hmac`` (expired or not, until removed), or None."""
        if not isinstance(hmac, (bytes, bytearray, memoryview)):
            raise TypeError(f"an HMAC is bytes, not {type(hmac).__name__}")
        token_id = self._by_hmac.get(bytes(hmac))
        entry = None if token_id is None else self._tokens.get(token_id)
        return None if entry is None else entry[0]

    def hmac_for(self, token_id: str) -> bytes | None:
        """The HMAC of the token ``token_id``, or None when there is no such live token."""
        entry = self._tokens.get(token_id)
        return None if entry is None else entry[0].hmac

    def token_login(self, token_id: str, mechanism: ScramMechanism | str | int) -> tuple[str, ScramCredential, int] | None:
        """For a SCRAM login with ``tokenauth=true``: the owner's name, the token's SCRAM
        credential (password: the standard base64 of the HMAC, 4096 iterations, as Kafka's
        token cache derives it) and its expiry (epoch ms: the session ends with it, KIP-368),
        or None for an unknown or expired token."""
        mechanism = ScramMechanism.coerce(mechanism)
        entry = self._tokens.get(token_id)
        if entry is None or entry[0].info.is_expired(self.clock()):
            return None
        token = entry[0]
        credential = self._scram.get(token.hmac, {}).get(mechanism)
        if credential is None:  # removed between the two lookups
            return None
        return token.info.owner.name, credential, token.info.expiry_timestamp

    # ------------------------------------------------------------------ expiry sweeper

    def expire_tokens(self) -> list[str]:
        """Remove every token past its expiry or maximum timestamp; return their ids."""
        with self._writer.writing() as transaction:
            now = self.clock()
            infos = [token.info for token, _ in self._tokens.values()] + list(self._unverifiable.values())
            expired = [info.token_id for info in infos if info.is_expired(now)]
            transaction.append([RemoveDelegationTokenRecord(token_id) for token_id in expired])
        return expired

    # ------------------------------------------------------------------ internals

    def _check_enabled(self) -> None:
        if not self.enabled:
            raise DelegationTokenAuthDisabledError()

    def _live_token(self, hmac: bytes) -> DelegationToken:
        token = self.token_for(hmac)
        if token is None:
            raise DelegationTokenNotFoundError()
        return token

    def _with_expiry(self, token: DelegationToken, expiry: int) -> DelegationTokenRecord:
        return DelegationTokenRecord(evolve(token.info, expiry_timestamp=expiry), self._tokens[token.token_id][1])

    # ------------------------------------------------------------------ the feed (apply side)

    def has_token(self, token_id: str) -> bool:
        """Whether a token with this id is applied here (verifiable or not)."""
        return token_id in self._tokens or token_id in self._unverifiable

    def load_token_snapshot(self, tokens: Mapping[str, tuple[TokenInformation, str]]) -> None:
        """Feed: replace every token with ``tokens`` (id -> (TokenInformation, key_id))."""
        with self._lock:
            derived = self._scram
            self._tokens, self._by_hmac, self._scram, self._unverifiable = {}, {}, {}, {}
            for info, token_key_id in tokens.values():
                self._remember(info, token_key_id, derived)

    def apply_records(self, upserts: Iterable[DelegationTokenRecord], removed_ids: Iterable[str]) -> None:
        """Feed: forget the tokens ``removed_ids``, then take in the ``upserts``."""
        with self._lock:
            derived: dict[bytes, dict[ScramMechanism, ScramCredential]] = {}
            for token_id in removed_ids:
                derived.update(self._forget(token_id))
            for record in upserts:
                self._remember(record.info, record.key_id, derived)

    def apply_in_order(self, records: Iterable[Record]) -> None:
        """The feed of a manager without a log (a :class:`LocalWriter`'s): records one by one."""
        for record in records:
            if isinstance(record, DelegationTokenRecord):
                self.apply_records([record], [record.info.token_id] if self.has_token(record.info.token_id) else [])
            elif isinstance(record, RemoveDelegationTokenRecord):
                self.apply_records((), [record.token_id])
            else:
                raise TypeError(f"not a delegation token record: {record!r}")

    # The feed holds the lock; readers that look up one key (a login, hmac_for) do not need it:
    # a single dict lookup never sees a half-made entry.

    def _remember(
        self, info: TokenInformation, token_key_id: str, derived: Mapping[bytes, dict[ScramMechanism, ScramCredential]]
    ) -> None:
        """Take in one token; its SCRAM credentials come from ``derived`` (the same HMAC, say a
        renewal) or are derived now."""
        secret = self._secrets.get(token_key_id)
        if secret is None:
            # Made with a secret no longer configured: it cannot verify, but the sweeper still
            # removes it from the store once it has expired.
            self._unverifiable[info.token_id] = info
            return
        token = DelegationToken(info, token_hmac(info.token_id, secret))
        # As Kafka's token cache does, the credentials (PBKDF2, 4096 iterations, per mechanism)
        # are derived when the token is learnt, on the thread that applies the log, so that a
        # token login never waits for them on an endpoint's event loop.
        self._scram[token.hmac] = derived.get(token.hmac) or {
            mechanism: ScramFormatter(mechanism).generate_credential(token.hmac_as_base64, MIN_ITERATIONS)
            for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        }
        self._tokens[info.token_id] = (token, token_key_id)
        self._by_hmac[token.hmac] = info.token_id

    def _forget(self, token_id: str) -> dict[bytes, dict[ScramMechanism, ScramCredential]]:
        """Drop one token; its derived credentials, by HMAC, for a record that brings it back."""
        if self._unverifiable.pop(token_id, None) is not None:
            return {}
        token, _ = self._tokens.pop(token_id)
        self._by_hmac.pop(token.hmac, None)
        credentials = self._scram.pop(token.hmac, None)
        return {} if credentials is None else {token.hmac: credentials}
