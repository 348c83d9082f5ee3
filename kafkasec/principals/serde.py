"""KafkaPrincipalSerde (KIP-590): a principal as bytes, the way Kafka's brokers exchange it.

``DefaultPrincipalSerde`` is byte-compatible with Kafka's DefaultKafkaPrincipalBuilder: an int16
version (0) and then DefaultPrincipalData v0 in flexible encoding: the type and the name as
compact strings (an unsigned varint of the UTF-8 length + 1, then the bytes), a boolean
(token authenticated), and a tagged-field section (empty when we write it). ``User:alice`` is
``0000 05 55736572 06 616c696365 00 00``.

Reading is a small state machine over a byte string with no I/O: any input ends in a principal
or in a PrincipalDeserializationError (Kafka's error 97), never another exception or a hang.
"""

from __future__ import annotations

from kafkasec.errors import PrincipalDeserializationError
from kafkasec.hookspecs import hookimpl
from kafkasec.principals.principal import KafkaPrincipal

VERSION = 0
"""The only DefaultPrincipalData version Kafka has shipped."""

MAX_STRING_BYTES = 0x7FFF
"""Kafka's generated code refuses longer strings, on writing and on reading."""

_MAX_VARINT_BYTES = 5  # an unsigned varint of an int32, as Kafka's ByteUtils reads it


class DefaultPrincipalSerde:
    """Kafka's DefaultKafkaPrincipalBuilder serialize/deserialize."""

    def serialize(self, principal: KafkaPrincipal) -> bytes:
        if not isinstance(principal, KafkaPrincipal):
            raise TypeError(f"serialize takes a KafkaPrincipal, not {principal!r}")
        return b"".join(
            (
                VERSION.to_bytes(2, "big"),
                compact_string("principal type", principal.principal_type),
                compact_string("principal name", principal.name),
                b"\x01" if principal.token_authenticated else b"\x00",
                b"\x00",  # no tagged fields
            )
        )

    def deserialize(self, data: bytes) -> KafkaPrincipal:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"deserialize takes bytes, not {type(data).__name__}")
        data = bytes(data)
        principal = _read_short_form(data)
        if principal is not None:
            return principal
        reader = PrincipalDataReader(data)
        version = reader.int16()
        if version != VERSION:
            raise PrincipalDeserializationError(f"Invalid principal data version {version}")
        principal_type = reader.compact_string("Type")
        name = reader.compact_string("Name")
        token_authenticated = reader.byte("TokenAuthenticated") != 0  # Kafka: any non-zero byte
        reader.skip_tagged_fields()
        reader.end()
        return KafkaPrincipal(principal_type, name, token_authenticated)


def compact_string(what: str, text: str) -> bytes:
    """``text`` as a compact string (Kafka's flexible encoding); ValueError naming ``what`` when
    it is longer than Kafka allows. For serdes whose format extends Kafka's."""
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_STRING_BYTES:
        raise ValueError(f"the {what} is {len(encoded)} UTF-8 bytes; Kafka allows at most {MAX_STRING_BYTES}")
    return unsigned_varint(len(encoded) + 1) + encoded


def unsigned_varint(value: int) -> bytes:
    """``value`` (0 or more) as Kafka's unsigned varint: seven bits a byte, low bits first."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_short_form(data: bytes) -> KafkaPrincipal | None:
    """The common case in one pass: version 0, both strings under 127 bytes (one-byte varints),
    no tagged fields. None for anything else, which the full reader then reads or refuses with
    a precise message; this path never decides that bytes are malformed."""
    if len(data) < 6 or data[0] or data[1]:
        return None
    type_end = 3 + data[2] - 1
    if not 1 <= data[2] < 0x80 or type_end >= len(data):
        return None
    name_length = data[type_end]
    name_end = type_end + name_length
    if not 1 <= name_length < 0x80 or name_end + 2 != len(data) or data[name_end + 1]:
        return None
    try:
        principal_type = data[3:type_end].decode("utf-8")
        name = data[type_end + 1:name_end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return KafkaPrincipal(principal_type, name, data[name_end] != 0)


class PrincipalDataReader:
    """A cursor over principal bytes; every shortfall is a PrincipalDeserializationError (97).
    Public so that a serde whose format extends Kafka's reads it with the same checks."""

    def __init__(self, data: bytes):
        self.data = data
        self.position = 0

    def _take(self, count: int, what: str) -> bytes:
        end = self.position + count
        if end > len(self.data):
            raise PrincipalDeserializationError(
                f"principal data ends at byte {len(self.data)} inside {what} (needs {count} bytes at {self.position})"
            )
        chunk = self.data[self.position:end]
        self.position = end
        return chunk

    def int16(self) -> int:
        return int.from_bytes(self._take(2, "the version"), "big", signed=True)

    def byte(self, what: str) -> int:
        return self._take(1, what)[0]

    def unsigned_varint(self, what: str) -> int:
        value = 0
        for index in range(_MAX_VARINT_BYTES):
            current = self.byte(what)
            value |= (current & 0x7F) << (7 * index)
            if not current & 0x80:
                return value
        raise PrincipalDeserializationError(f"the varint of {what} is longer than {_MAX_VARINT_BYTES} bytes")

    def compact_string(self, field: str) -> str:
        length = self.unsigned_varint(f"the length of {field}") - 1
        if length < 0:
            raise PrincipalDeserializationError(f"non-nullable field {field} was serialized as null")
        if length > MAX_STRING_BYTES:
            raise PrincipalDeserializationError(f"string field {field} had invalid length {length}")
        raw = self._take(length, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # Stricter than Kafka, which would read U+FFFD: two byte strings must not name one principal.
            raise PrincipalDeserializationError(f"string field {field} is not valid UTF-8") from None

    def skip_tagged_fields(self) -> None:
        # Unknown tagged fields are skipped, as Kafka's generated reader does (forward compatibility).
        count = self.unsigned_varint("the tagged-field count")
        for _ in range(count):
            self.unsigned_varint("a tag")
            size = self.unsigned_varint("a tagged-field size")
            self._take(size, "a tagged field")

    def end(self) -> None:
        if self.position != len(self.data):
            raise PrincipalDeserializationError(
                f"{len(self.data) - self.position} bytes follow the principal data"
            )


# Built-in plugin: Kafka's format answers last, so a plugin's own serde (e.g. one whose
# principals carry a tenant) is asked first and declines bytes that are not its own.
_DEFAULT = DefaultPrincipalSerde()


@hookimpl(trylast=True)
def kafkasec_serialize_principal(principal):
    return _DEFAULT.serialize(principal)


@hookimpl(trylast=True)
def kafkasec_deserialize_principal(data):
    return _DEFAULT.deserialize(data)


__all__ = ["MAX_STRING_BYTES", "VERSION", "DefaultPrincipalSerde", "PrincipalDataReader", "compact_string", "unsigned_varint"]
