"""Delegation tokens (KIP-48, KIP-373): the values, the manager and the request-level checks."""

from kafkasec.tokens.manager import (
    DEFAULT_EXPIRY_CHECK_INTERVAL_MS,
    DEFAULT_EXPIRY_TIME_MS,
    DEFAULT_MAX_LIFETIME_MS,
    DelegationTokenManager,
    new_token_id,
    token_hmac,
)
from kafkasec.tokens.model import DelegationToken, TokenInformation, parse_hmac

__all__ = [
    "DEFAULT_EXPIRY_CHECK_INTERVAL_MS",
    "DEFAULT_EXPIRY_TIME_MS",
    "DEFAULT_MAX_LIFETIME_MS",
    "DelegationToken",
    "DelegationTokenManager",
    "TokenInformation",
    "new_token_id",
    "parse_hmac",
    "token_hmac",
]
