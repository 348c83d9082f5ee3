"""Delegation tokens (KIP-48, KIP-373): the values, the manager and the request-level checks."""

import importlib

from kafkasec.tokens.model import DelegationToken, TokenInformation, parse_hmac

# The manager writes security-log records, whose module reads this package's values: it is
# imported on first use, so that importing the values alone never goes round that circle.
_FROM_MANAGER = {
    "DEFAULT_EXPIRY_CHECK_INTERVAL_MS",
    "DEFAULT_EXPIRY_TIME_MS",
    "DEFAULT_MAX_LIFETIME_MS",
    "DelegationTokenManager",
    "new_token_id",
    "token_hmac",
}


def __getattr__(name: str):
    if name in _FROM_MANAGER:
        return getattr(importlib.import_module("kafkasec.tokens.manager"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
