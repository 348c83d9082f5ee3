"""Kafka's SASL/SCRAM server (ScramSaslServer) for SCRAM-SHA-256 and SCRAM-SHA-512, sans I/O.

One :class:`ScramServer` per authentication; the broker passes it the bytes of each
SaslAuthenticate request and sends back what it returns::

    server = ScramServer("SCRAM-SHA-256", credentials.get)
    server_first = server.evaluate_response(client_first)    # -> RECEIVE_CLIENT_FINAL_MESSAGE
    server_final = server.evaluate_response(client_final)    # -> COMPLETE
    server.authorization_id, server.token_authenticated

A refused exchange raises :class:`SaslAuthenticationError` (SASL_AUTHENTICATION_FAILED, 58)
and the server is FAILED for good. Its ``message`` is what Kafka's broker tells the client: for
a malformed message, an unknown user or a wrong proof that is the same generic sentence; the
detail (Kafka's SaslException message) is in ``reason``, for the broker's log only, and never
holds a proof or any other secret. The same sentence does not hide which users exist: as on
Kafka, an unknown user is refused at the client-first message while a known one is sent a
challenge, so a client can tell them apart. A call that makes no sense in the current state raises
:class:`IllegalSaslStateError` (ILLEGAL_SASL_STATE, 34).

Messages are parsed with the grammar of Kafka's ScramMessages, which is narrower and in places
looser than RFC 5802, and the AuthMessage is rebuilt the way Kafka rebuilds it; both matter,
since a client whose proof Kafka would refuse must be refused here too, and the other way round.
"""

from __future__ import annotations

import base64
import enum
import hmac
import re
import secrets
import string
from collections import Counter
from typing import Callable, Iterable

from kafkasec.errors import KafkaError, SaslAuthenticationError
from kafkasec.sasl.exchange import SaslExchange, sasl_transitions
from kafkasec.scram.credentials import (
    MIN_ITERATIONS,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
    xor,
)

DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100
"""Kafka's ``connection.failed.authentication.delay.ms`` default: how long a broker holds a
failed login's answer, so that password guessing is slow."""

TOKEN_AUTH_CONFIG = "tokenauth"
"""The SCRAM extension by which a client logs in with a delegation token (ScramLoginModule)."""

CredentialCallback = Callable[[str], "ScramCredential | None"]
TokenCallback = Callable[[str], "tuple[str, ScramCredential | None] | tuple[str, ScramCredential | None, int] | None"]


class ScramServerState(enum.Enum):
    """The states of Kafka's ScramSaslServer, with its names."""

    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_S = ScramServerState
TRANSITIONS = sasl_transitions(
    {
        _S.RECEIVE_CLIENT_FIRST_MESSAGE: ("_receive_client_first", {_S.RECEIVE_CLIENT_FINAL_MESSAGE}),
        _S.RECEIVE_CLIENT_FINAL_MESSAGE: ("_receive_client_final", {_S.COMPLETE}),
    },
    _S.FAILED,
)
"""state -> (the method that takes the client's message in it, the state it leads to).

Any failure leads to FAILED. In a state not listed (COMPLETE, FAILED) a client message is an
IllegalSaslStateError and, as in Kafka, leaves the exchange FAILED even if it had completed."""


# ScramMessages' grammar, character class by character class. Java's [\x01-\x7F&&[^=,]] is an
# intersection; here the same sets are spelt as ranges around ',' (0x2C) and '=' (0x3D). Every
# class is ASCII, so a message with any other character (or invalid UTF-8) does not match.
_VALUE_SAFE_CHAR = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = rf"(?:{_VALUE_SAFE_CHAR}|=2C|=3D)+"
_ALPHA = r"[A-Za-z]+"
_BASE64_CHAR = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_BASE64_CHAR}{{4}})*(?:{_BASE64_CHAR}{{3}}=|{_BASE64_CHAR}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,{_ALPHA}={_VALUE})*"

# Only the gs2 flag "n" (no channel binding) is accepted: "y" and "p=" do not match. A reserved
# "m=" attribute is accepted and ignored as Kafka does, though RFC 5802 says to fail on it.
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
# Kafka's client-final pattern is c=BASE64,r=PRINTABLE EXTENSIONS,p=BASE64. No part may hold a
# ',' after "p=", so the proof is the last ',' field: matching the two sides of that comma apart
# accepts exactly the same messages, without the backtracking that made the proof be tried as
# an extension value first, character by character.
_CLIENT_FINAL_WITHOUT_PROOF = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}")
_PROOF = re.compile(rf"p=(?P<proof>{_BASE64})")
_NONCE = re.compile(_PRINTABLE)


def username_from_sasl_name(sasl_name: str) -> str:
    """The username a saslname escapes (``=2C`` is ',', ``=3D`` is '='), as Kafka unescapes it.

    Any other '=' is a ValueError (Kafka's IllegalArgumentException "Invalid username").
    """
    if "=" not in sasl_name:
        return sasl_name
    username = sasl_name.replace("=2C", ",")
    if "=" in username.replace("=3D", ""):
        raise ValueError(f"Invalid username: {sasl_name}")
    return username.replace("=3D", "=")


def sasl_name(username: str) -> str:
    """The saslname a client sends for ``username``: '=' as ``=3D``, then ',' as ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _java_string_hash(text: str) -> int:
    """Java's HashMap.hash(key) for a String of ASCII characters (extension names are letters)."""
    h = 0
    for char in text:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _java_hash_map_order(keys: Iterable[str], capacity: int) -> list[str]:
    """The iteration order of a java.util.HashMap into which the distinct ``keys`` were put in
    order, its table starting with ``capacity`` slots.

    Iteration goes bucket by bucket (hash & (capacity - 1)), and a bucket keeps insertion
    order, through every resize. The table doubles when the map is more than 3/4 full, and
    also when a bucket would hold a 9th entry while the table has fewer than 64 slots. With 64
    slots or more (25 extensions or more) Java turns such a bucket into a red-black tree, with
    an order of its own that is not followed here: it takes 9 of the names in one bucket.
    """
    order: list[str] = []
    hashes: dict[str, int] = {}
    buckets: Counter[int] = Counter()
    for key in keys:
        if key in hashes:
            continue
        hashes[key] = h = _java_string_hash(key)
        order.append(key)
        crowded = buckets[h & (capacity - 1)] >= 8
        buckets[h & (capacity - 1)] += 1
        resized = False
        if crowded and capacity < 64:  # treeifyBin resizes a small table instead
            capacity, resized = capacity * 2, True
        if len(order) > capacity * 3 // 4:
            capacity, resized = capacity * 2, True
        if resized:
            buckets = Counter(hashes[k] & (capacity - 1) for k in order)
    return sorted(order, key=lambda k: hashes[k] & (capacity - 1))


def _extension_values(text: str) -> dict[str, str]:
    """The extensions by name (a repeated name keeps its first place and its last value)."""
    values: dict[str, str] = {}
    for pair in text.split(","):
        name, _, value = pair.partition("=")
        values[name] = value
    return values


def _java_extension_order(values: dict[str, str]) -> dict[str, str]:
    """The client-first extensions (``values``) as Kafka holds them, in the order it writes them
    back.

    Kafka parses them into a HashMap (a repeated name keeps its first place and its last value)
    and copies that into another HashMap (SaslExtensions), sized for the entries as Java 19 and
    later size it (``ceil(n / 0.75)`` rounded up to a power of two; the JDK that Apache Kafka's
    image ships is 21). The AuthMessage lists them in that map's order, not as the client sent
    them: with several extensions a client that signed another order fails, as on Kafka.
    """
    if len(values) <= 1:  # a token login's tokenauth=true alone: no order to work out
        return values
    parsed = _java_hash_map_order(values, 16)
    copy_capacity = 1 << ((4 * len(values) + 2) // 3 - 1).bit_length()
    return {name: values[name] for name in _java_hash_map_order(parsed, copy_capacity)}


_BASE36_DIGITS = string.digits + string.ascii_lowercase
_BASE36_PAIRS = [high + low for high in _BASE36_DIGITS for low in _BASE36_DIGITS]


def secure_random_string() -> str:
    """Kafka's ScramFormatter.secureRandomString, the server's part of the nonce: a 130-bit
    random number in base 36. Two digits at a time, since this runs for every login."""
    number = secrets.randbits(130)
    pairs = []
    while number:
        number, pair = divmod(number, 36 * 36)
        pairs.append(_BASE36_PAIRS[pair])
    return "".join(reversed(pairs)).lstrip("0") or "0"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# A formatter holds no state of its own; one per mechanism saves building it for every login,
# as looking up the SASL name a broker passes saves the enum's general conversion.
_FORMATTERS = {
    mechanism: ScramFormatter(mechanism) for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
}
_BY_SASL_NAME = {mechanism.mechanism_name: mechanism for mechanism in _FORMATTERS}


class ScramServer(SaslExchange):
    """The server side of one SASL/SCRAM exchange, as Kafka's ScramSaslServer.

    ``credential_callback(username)`` returns the user's :class:`ScramCredential` for this
    mechanism, or None when there is none. ``token_callback(token_id)`` serves logins with the
    ``tokenauth=true`` extension: the delegation token's ``(owner, credential)``, or
    ``(owner, credential, expiry_ms)`` so that the session ends with the token (KIP-368) (the credential
    None if the token has none for this mechanism), or None for an unknown token; without a
    token_callback every token is unknown. The SCRAM password of a token is the standard base64
    of its HMAC and its owner becomes the authorization id. ``nonce_factory()`` returns the
    server's part of the nonce (default: Kafka's, the base-36 digits of a 130-bit random number);
    fix it only in tests.

    A callback that raises a :class:`KafkaError` fails the exchange with that error; any other
    exception fails it with SASL_AUTHENTICATION_FAILED, as Kafka does.
    """

    TRANSITIONS = TRANSITIONS
    INITIAL, COMPLETE, FAILED = _S.RECEIVE_CLIENT_FIRST_MESSAGE, _S.COMPLETE, _S.FAILED


    def __init__(
        self,
        mechanism: ScramMechanism | str | int,
        credential_callback: CredentialCallback,
        *,
        token_callback: TokenCallback | None = None,
        nonce_factory: Callable[[], str] | None = None,
        failed_authentication_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
    ):
        self.mechanism = self.mechanism_for(mechanism)
        self._formatter = _FORMATTERS[self.mechanism]
        if not callable(credential_callback):
            raise TypeError(f"credential_callback must be callable, not {credential_callback!r}")
        if token_callback is not None and not callable(token_callback):
            raise TypeError(f"token_callback must be callable or None, not {token_callback!r}")
        if nonce_factory is not None and not callable(nonce_factory):
            raise TypeError(f"nonce_factory must be callable or None, not {nonce_factory!r}")
        if (
            not isinstance(failed_authentication_delay_ms, int)
            or isinstance(failed_authentication_delay_ms, bool)
            or failed_authentication_delay_ms < 0
        ):
            raise ValueError(
                f"failed_authentication_delay_ms must be an int >= 0, not {failed_authentication_delay_ms!r}"
            )
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self._credential_callback = credential_callback
        self._token_callback = token_callback
        self._nonce_factory = nonce_factory
        super().__init__()
        self._token_expiry_ms: int | None = None
        self._token_authenticated = False
        # Held between the two client messages only; dropped when the exchange ends.
        self._credential: ScramCredential | None = None
        self._client_first_bare: str | None = None
        self._server_first: str | None = None
        self._nonce: str | None = None

    @staticmethod
    def mechanism_for(mechanism: ScramMechanism | str | int) -> ScramMechanism:
        """The mechanism a server runs for ``mechanism`` (an enum, its name or code, or the SASL
        name "SCRAM-SHA-256"); ValueError for UNKNOWN or anything else."""
        if isinstance(mechanism, str) and mechanism in _BY_SASL_NAME:
            return _BY_SASL_NAME[mechanism]
        coerced = ScramMechanism.coerce(mechanism)
        if coerced not in _FORMATTERS:
            raise ValueError(f"{coerced.name} is not a SCRAM mechanism a server can run")
        return coerced

    def __repr__(self) -> str:
        return f"ScramServer({self.mechanism_name}, state={self._state.name})"

    @property
    def mechanism_name(self) -> str:
        """``SCRAM-SHA-256`` or ``SCRAM-SHA-512``."""
        return self.mechanism.mechanism_name

    @property
    def credential_lifetime_ms(self) -> int | None:
        """A token login's token expiry (epoch ms), as Kafka's CREDENTIAL_LIFETIME_MS; None for a
        password login."""
        self._require_complete()
        return self._token_expiry_ms

    @property
    def token_authenticated(self) -> bool:
        """Whether the client logged in with a delegation token (``tokenauth=true``)."""
        self._require_complete()
        return self._token_authenticated

    def _end(self, state) -> None:
        self._credential = self._client_first_bare = self._server_first = self._nonce = None
        super()._end(state)

    def _refuse(self, reason: str, *, respond: bool = True, message: str | None = None) -> SaslAuthenticationError:
        return self._refusal(reason, self.failed_authentication_delay_ms, message=message, respond=respond)

    def _receive_client_first(self, data: bytes) -> bytes:
        text = data.decode("utf-8", "replace")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._refuse(f"Invalid SCRAM client first message format ({len(data)} bytes)")
        sasl_name_, client_nonce = match["saslname"], match["nonce"]
        extensions = _extension_values(match["extensions"][1:]) if match["extensions"] else {}
        server_nonce = self._server_nonce()
        username = username_from_sasl_name(sasl_name_)
        if extensions.get(TOKEN_AUTH_CONFIG, "").lower() == "true":
            token = self._call(self._token_callback, username) if self._token_callback else None
            if token is None:
                raise self._refuse(f"Token Authentication failed: Invalid tokenId : {username}")
            owner, credential, self._token_expiry_ms = _token_answer(token)
            self._authorization_id, self._token_authenticated = owner, True
        else:
            credential = _credential_answer(self._call(self._credential_callback, username))
            self._authorization_id = username
        if credential is None:
            raise self._refuse("Authentication failed: Invalid user credentials")
        # Kafka compares the authzid as sent (still escaped) with the unescaped username, and
        # says so to the client: this is the one refusal whose text is not replaced.
        authzid = match["authzid"]
        if authzid is not None and authzid != username:
            not_username = "Authentication failed: Client requested an authorization id that is different from username"
            raise self._refuse(not_username, message=not_username)
        if credential.iterations < MIN_ITERATIONS:
            raise self._refuse(
                f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism.name}"
            )
        self._credential = credential
        # Ordered as Kafka's HashMap orders them only now, for a user that exists: the ordering
        # is the costly part of a message that may hold thousands of extensions.
        extensions = _java_extension_order(extensions)
        self._nonce = client_nonce + server_nonce
        # Kafka writes the bare message back from what it parsed: a reserved m= attribute is
        # dropped and the extensions come in its HashMap's order.
        bare = f"n={sasl_name_},r={client_nonce}"
        if extensions:
            bare += "," + ",".join(f"{name}={value}" for name, value in extensions.items())
        self._client_first_bare = bare
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def _server_nonce(self) -> str:
        if self._nonce_factory is None:
            return secure_random_string()
        nonce = self._nonce_factory()
        if not isinstance(nonce, str) or _NONCE.fullmatch(nonce) is None:
            raise ValueError(f"nonce_factory must return printable ASCII without ',', not {nonce!r}")
        return nonce

    def _call(self, callback, name: str):
        try:
            return callback(name)
        except KafkaError:
            raise
        except Exception as exc:
            raise self._refuse("Authentication failed: Credentials could not be obtained") from exc

    def _receive_client_final(self, data: bytes) -> bytes:
        # Set by _receive_client_first, the step this one follows (and cleared only when the exchange ends).
        assert self._nonce is not None and self._credential is not None
        text = data.decode("utf-8", "replace")
        without_proof, _, proof_field = text.rpartition(",")
        match = _CLIENT_FINAL_WITHOUT_PROOF.fullmatch(without_proof)
        proof_match = _PROOF.fullmatch(proof_field)
        if match is None or proof_match is None:
            # Never the text: it holds the client proof, which with the stored key yields the ClientKey.
            raise self._refuse(f"Invalid SCRAM client final message format ({len(data)} bytes)")
        # Kafka only asks that the nonce end with the one it sent; the channel binding is not
        # compared with the gs2 header either. Both are signed by the proof, as sent.
        if not match["nonce"].endswith(self._nonce):
            raise self._refuse("Invalid client nonce in the final client message.")
        channel_binding = base64.b64decode(match["channel"])
        proof = base64.b64decode(proof_match["proof"])
        auth_message = (
            f"{self._client_first_bare},{self._server_first},c={_b64(channel_binding)},r={match['nonce']}"
        ).encode("ascii")
        credential = self._credential
        signature = self._formatter.client_signature(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._refuse("Argument arrays must be of the same length", respond=False)
        # ClientKey = proof XOR ClientSignature; the client knew it iff H(ClientKey) = StoredKey.
        client_key = xor(proof, signature)
        if not hmac.compare_digest(self._formatter.hash(client_key), credential.stored_key):
            raise self._refuse("Invalid client credentials")
        server_signature = self._formatter.server_signature(credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode("ascii")


def _credential_answer(credential) -> ScramCredential | None:
    if credential is not None and not isinstance(credential, ScramCredential):
        raise TypeError(f"credential_callback must return a ScramCredential or None, not {credential!r}")
    return credential


def _token_answer(token) -> tuple[str, ScramCredential | None, int | None]:
    """(owner, credential, expiry in epoch ms or None) from a token_callback's answer."""
    if not (isinstance(token, tuple) and len(token) in (2, 3) and isinstance(token[0], str)):
        raise TypeError(f"token_callback must return (owner, credential[, expiry_ms]) or None, not {token!r}")
    expiry_ms = token[2] if len(token) == 3 else None
    if expiry_ms is not None and (not isinstance(expiry_ms, int) or isinstance(expiry_ms, bool)):
        raise TypeError(f"a token's expiry is epoch milliseconds (an int), not {expiry_ms!r}")
    return token[0], _credential_answer(token[1]), expiry_ms
