"""SCRAM credentials exactly as Kafka derives and stores them (ScramFormatter, ScramCredentialUtils).

Kafka differs from RFC 5802 libraries such as scramp in one point that matters: the password
is not SASLprep-normalized, only encoded as UTF-8, so a non-ASCII password gives the keys
Kafka's brokers and clients compute. Only the salt, the stored key, the server key and the
iteration count are ever stored; the password and the salted password are not.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Iterable

from attrs import field, frozen, validators
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from kafkasec._enums import KafkaEnum

MIN_ITERATIONS = 4096
"""Kafka's ScramMechanism minimum, and the lowest count AlterUserScramCredentials accepts."""

MAX_ITERATIONS = 16384
"""The highest count KRaft's ScramControlManager accepts."""


def xor(left: bytes, right: bytes) -> bytes:
    """Two byte strings of one length XORed: a client proof is ClientKey XOR ClientSignature,
    and a server recovers the ClientKey the same way."""
    return (int.from_bytes(left, "big") ^ int.from_bytes(right, "big")).to_bytes(len(left), "big")


class ScramMechanism(KafkaEnum):
    """The SCRAM mechanisms, with Kafka's codes (as confluent-kafka's ScramMechanism)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL mechanism name, e.g. ``SCRAM-SHA-256``."""
        if self is ScramMechanism.UNKNOWN:
            raise ValueError("UNKNOWN is not a SASL mechanism")
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        """The hashlib name of the mechanism's hash: ``sha256`` or ``sha512``."""
        return {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}[self._known()]

    def _known(self) -> ScramMechanism:
        if self is ScramMechanism.UNKNOWN:
            raise ValueError("the UNKNOWN SCRAM mechanism has no hash")
        return self

    @classmethod
    def from_mechanism_name(cls, name: str) -> ScramMechanism:
        """``SCRAM-SHA-256`` -> SCRAM_SHA_256; any other name is a ValueError."""
        for member in (cls.SCRAM_SHA_256, cls.SCRAM_SHA_512):
            if name == member.mechanism_name:
                return member
        raise ValueError(f"{name!r} is not a SCRAM mechanism: expected SCRAM-SHA-256 or SCRAM-SHA-512")

    @classmethod
    def coerce(cls, value: object) -> ScramMechanism:
        """Also accepts the SASL name, ``SCRAM-SHA-256``, besides what every KafkaEnum accepts."""
        if isinstance(value, str) and "-" in value:
            return cls.from_mechanism_name(value.strip().upper())
        return super().coerce(value)


def _bytes(value: object) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected bytes or str, not {type(value).__name__}")


def _mechanism(value: ScramMechanism | str | int) -> ScramMechanism:
    # A named converter: attrs' mypy plugin takes a converter's argument type as the init
    # argument's type, and cannot read one from a classmethod such as ScramMechanism.coerce.
    return ScramMechanism.coerce(value)


def _infos(infos: Iterable[ScramCredentialInfo]) -> tuple[ScramCredentialInfo, ...]:
    # A named converter, for the same reason: the plugin cannot read converter=tuple's.
    return tuple(infos)


def _iterations(instance, attribute, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{attribute.name} must be an int, not {value!r}")
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, not {value}")


def _secret(instance, attribute, value):
    if not value:
        raise ValueError(f"{attribute.name} must not be empty")


@frozen
class ScramCredential:
    """What a broker keeps for one user and mechanism (Kafka's ScramCredential)."""

    salt: bytes = field(converter=_bytes, validator=_secret, repr=False)
    stored_key: bytes = field(converter=_bytes, validator=_secret, repr=False)
    server_key: bytes = field(converter=_bytes, validator=_secret, repr=False)
    iterations: int = field(validator=_iterations)


@frozen
class ScramCredentialInfo:
    """A mechanism and its iteration count: what may be shown about a credential."""

    mechanism: ScramMechanism = field(converter=_mechanism)
    iterations: int = field(validator=validators.instance_of(int))


@frozen
class UserScramCredentialsDescription:
    """A user and the mechanisms it has credentials for (never a secret)."""

    user: str = field(validator=validators.instance_of(str))
    infos: tuple[ScramCredentialInfo, ...] = field(converter=_infos)


def random_salt() -> bytes:
    """A salt as Kafka's ScramFormatter.secureRandomBytes makes it: the ASCII base-36 digits of
    a 130-bit random number."""
    number = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
    return (text or "0").encode("ascii")


@frozen
class UserScramCredentialUpsertion:
    """Create or replace a user's credential for one mechanism.

    Built from a password (the salt defaults to a random one, as Kafka's admin client makes
    it), or with :meth:`from_salted_password` from what the wire request carries.
    """

    user: str = field(validator=validators.instance_of(str))
    info: ScramCredentialInfo = field(validator=validators.instance_of(ScramCredentialInfo))
    password: bytes | None = field(default=None, converter=lambda v: None if v is None else _bytes(v), repr=False)
    salt: bytes = field(factory=random_salt, converter=_bytes, repr=False)
    salted_password: bytes | None = field(
        default=None, converter=lambda v: None if v is None else _bytes(v), repr=False, kw_only=True
    )

    def __attrs_post_init__(self):
        if (self.password is None) == (self.salted_password is None):
            raise ValueError("an upsertion needs exactly one of password and salted_password")

    @classmethod
    def from_salted_password(cls, user: str, info: ScramCredentialInfo, salt: bytes, salted_password: bytes):
        """As AlterUserScramCredentials carries it: the client already ran PBKDF2."""
        return cls(user, info, None, salt, salted_password=salted_password)

    def credential(self) -> ScramCredential:
        """The credential to store (the password and salted password are not kept)."""
        formatter = ScramFormatter(self.info.mechanism)
        salted = self.salted_password
        if salted is None:
            assert self.password is not None  # __attrs_post_init__: exactly one of the two is set
            salted = formatter.salted_password(self.password, self.salt, self.info.iterations)
        return formatter.credential(self.salt, salted, self.info.iterations)


@frozen
class UserScramCredentialDeletion:
    """Delete a user's credential for one mechanism."""

    user: str = field(validator=validators.instance_of(str))
    mechanism: ScramMechanism = field(converter=_mechanism)


class ScramFormatter:
    """Kafka's ScramFormatter for one mechanism: PBKDF2, HMAC and hash as RFC 5802 uses them."""

    def __init__(self, mechanism: ScramMechanism | str | int):
        self.mechanism = ScramMechanism.coerce(mechanism)
        self._hash = self.mechanism.hash_name
        self._algorithm = {"sha256": hashes.SHA256, "sha512": hashes.SHA512}[self._hash]

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self._hash, data).digest()

    def salted_password(self, password: str | bytes, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): PBKDF2 over the plain UTF-8 password, with no SASLprep."""
        algorithm = self._algorithm()
        kdf = PBKDF2HMAC(algorithm, algorithm.digest_size, bytes(salt), iterations)
        return kdf.derive(_bytes(password))

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def client_signature(self, stored_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(stored_key, auth_message)

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(server_key, auth_message)

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        return xor(client_key, self.client_signature(self.stored_key(client_key), auth_message))

    def credential(self, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
        return ScramCredential(
            salt, self.stored_key(self.client_key(salted_password)), self.server_key(salted_password), iterations
        )

    def generate_credential(self, password: str | bytes, iterations: int, salt: bytes | None = None) -> ScramCredential:
        """A new credential for ``password`` (a random Kafka-style salt unless one is given)."""
        salt = random_salt() if salt is None else _bytes(salt)
        return self.credential(salt, self.salted_password(password, salt, iterations), iterations)


_CREDENTIAL_KEYS = ("salt", "stored_key", "server_key", "iterations")


def credential_to_string(credential: ScramCredential) -> str:
    """Kafka's credential string: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return (
        f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
        f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
    )


def credential_from_string(text: str) -> ScramCredential:
    """Parse Kafka's credential string; a ValueError names what is missing or malformed."""
    if not isinstance(text, str):
        raise TypeError(f"a credential string must be a str, not {type(text).__name__}")
    values = {}
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals:
            raise ValueError(f"credential string part {part!r} is not key=value")
        values[key.strip()] = value.strip()
    missing = [key for key in _CREDENTIAL_KEYS if key not in values]
    unknown = sorted(set(values) - set(_CREDENTIAL_KEYS))
    if missing or unknown:
        raise ValueError(
            "a credential string has exactly salt, stored_key, server_key and iterations"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else "")
        )
    decoded = {}
    for key in ("salt", "stored_key", "server_key"):
        try:
            decoded[key] = base64.b64decode(values[key], validate=True)
        except binascii.Error:
            raise ValueError(f"{key} in the credential string is not standard base64") from None
    try:
        iterations = int(values["iterations"])
    except ValueError:
        raise ValueError(f"iterations in the credential string is not a number: {values['iterations']!r}") from None
    return ScramCredential(decoded["salt"], decoded["stored_key"], decoded["server_key"], iterations)
