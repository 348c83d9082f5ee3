"""SCRAM (RFC 5802, RFC 7677) as Kafka speaks it: credentials, the KIP-554 operations and a SASL server."""

from kafkasec.scram.admin import (
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsResult,
    UserScramCredentialsResult,
)
from kafkasec.scram.credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramCredentialInfo,
    ScramFormatter,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
    credential_from_string,
    credential_to_string,
    random_salt,
)

__all__ = [
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "AlterUserScramCredentialsResult",
    "DescribeUserScramCredentialsResult",
    "ScramCredential",
    "ScramCredentialInfo",
    "ScramFormatter",
    "ScramMechanism",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "UserScramCredentialsResult",
    "credential_from_string",
    "credential_to_string",
    "random_salt",
]
