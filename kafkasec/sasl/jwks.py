"""JWTs checked against an identity provider's keys: Kafka's OAuthBearerValidatorCallbackHandler
(KIP-768), with PyJWT.

The keys come from ``sasl.oauthbearer.jwks.endpoint.url`` (an ``https://`` or ``http://`` URL,
or ``file:`` for a JWKS on disk), fetched once and again every
``sasl.oauthbearer.jwks.endpoint.refresh.ms``, and at once when a token names a key id not in the
cache (an identity provider rotating its keys). A token is valid when its signature verifies with
the key its ``kid`` names, using that key's asymmetric algorithm (``alg: none``, HMAC and any
algorithm other than the key's are refused, whatever the token's header says), its ``exp`` is
in the future and its ``iat``/``nbf`` not in it (with ``sasl.oauthbearer.clock.skew.seconds`` of
slack), its audience is one of ``sasl.oauthbearer.expected.audience`` and its issuer
``sasl.oauthbearer.expected.issuer`` when those are set. The principal is the
``sasl.oauthbearer.sub.claim.name`` claim (``sub``), the scope the
``sasl.oauthbearer.scope.claim.name`` claim (``scope``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

import jwt
from attrs import define, field

from kafkasec.sasl.oauthbearer import InvalidTokenError, ValidatedToken, jwt_part, scope_claim

ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
"""The algorithms a key from a JWKS may verify with; a token's header chooses none of them."""

_SETTINGS = {
    "url": "sasl.oauthbearer.jwks.endpoint.url",
    "refresh": "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "audience": "sasl.oauthbearer.expected.audience",
    "issuer": "sasl.oauthbearer.expected.issuer",
    "sub": "sasl.oauthbearer.sub.claim.name",
    "scope": "sasl.oauthbearer.scope.claim.name",
    "skew": "sasl.oauthbearer.clock.skew.seconds",
}


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@define
class JwksValidator:
    """Validates signed JWTs against the keys of a JWKS endpoint (see the module docstring)."""

    jwks_url: str
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
    _client: jwt.PyJWKClient = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.jwks_url.startswith(("https://", "http://", "file:")):
            raise ValueError(f"{_SETTINGS['url']} must be an https://, http:// or file: URL, not {self.jwks_url!r}")
        # PyJWKClient keeps the key set and looks a missing kid up again; the lifespan is ours.
        self._client = jwt.PyJWKClient(
            self.jwks_url,
            cache_jwk_set=True,
            lifespan=max(1, self.refresh_ms // 1000),
            cooldown_duration=self.unknown_key_cooldown_ms / 1000,
            timeout=self.fetch_timeout_ms / 1000,
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
        )

    def validate(self, token: str) -> ValidatedToken:
        # The header is read here, once: PyJWT parses the whole token again to verify it.
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidTokenError("the token is not a JWT: it has not three parts")
        header = jwt_part(parts[0])
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise InvalidTokenError("the token names no key id (kid)")
        try:
            # PyJWKClient refetches the set when its lifespan (refresh.ms) is over, and for an unknown kid.
            key = self._client.get_signing_key(kid)
        except jwt.PyJWKClientError as error:
            raise InvalidTokenError(f"no key of the JWKS verifies the token: {error}") from None
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
