"""Kafka's wire format for requests and responses: one thin codec over kio (the ``wire`` extra).

Everything else in kafkasec that touches bytes on the wire goes through these functions, so
the choice of kio (pinned in pyproject.toml) stays in this module. Frames here are what follows
the int32 size prefix: a header, then the body. Which header version an API uses follows
Kafka's rule: a flexible request has header v2 (else v1), a flexible response header v1 (else
v0), except that an ApiVersions response always has header v0 so that any client can read it.

Bytes we cannot read raise InvalidRequestError (42); an API or version we have no schema for
raises UnsupportedVersionError (35). Bytes after a request body are ignored, as Kafka's
brokers do (librdkafka sends some).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import sys
import typing
import uuid

from kafkasec.context import RequestContext
from kafkasec.errors import InvalidRequestError, KafkaErrorCode, UnsupportedVersionError
from kafkasec.principals.serde import unsigned_varint
from kafkasec.protocol.api_keys import ApiKey

# kio registers hypothesis strategies for its types when hypothesis is installed, and building
# them makes hypothesis create ./.hypothesis/ in whatever directory a server starts in. Unless a
# test run has imported hypothesis already, kio is imported as if it were absent.
_HIDE_HYPOTHESIS = "hypothesis" not in sys.modules
if _HIDE_HYPOTHESIS:
    # None, which typeshed does not allow in sys.modules, makes "import hypothesis" raise ImportError.
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
try:
    from kio.index import KioIndexError, load_request_schema, load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
    from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
    from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
    from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
    from kio.serial import entity_reader, entity_writer
    from kio.serial.writers import write_compact_array_length, write_legacy_array_length
    from kio.static.primitive import i32
    from kio.static.protocol import Entity, RequestPayload, ResponsePayload
except ImportError as error:  # pragma: no cover - depends on how kafkasec was installed
    # name="kio" lets a caller tell a missing extra from any other failed import.
    raise ImportError(
        "kafkasec.protocol.wire needs the 'wire' extra: pip install 'kafkasec[wire]'", name="kio"
    ) from error
finally:
    if _HIDE_HYPOTHESIS:
        del sys.modules["hypothesis"]


RequestHeader = typing.Union[RequestHeaderV1, RequestHeaderV2]


@dataclasses.dataclass(frozen=True)
class Request:
    """A request read off the wire: its header and its body (a kio dataclass)."""

    header: RequestHeader
    body: typing.Any
    trailing_bytes: int = 0
    """Bytes the frame held after the body: read past, as Kafka's clients sometimes send them."""
    unknown_tag_sections: int = 0
    """Tagged-field sections that held tags this version's schema lacks, skipped as Kafka skips them."""

    @property
    def read_whole(self) -> bool:
        """Every byte of the frame was read: a proxy may pass it on as it came. Otherwise it
        encodes the request again, so that a broker behind never acts on what was not read."""
        return not (self.trailing_bytes or self.unknown_tag_sections)

    @property
    def api_key(self) -> int:
        return int(self.header.request_api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.request_api_version)


def request_context(request: Request, principal, client_address: str, *, listener_name: str, security_protocol: str, **extra) -> RequestContext:
    """The RequestContext of ``request`` from ``principal`` at ``client_address``; ``extra`` for
    the KIP-590 forwarding fields."""
    return RequestContext(
        principal,
        client_address,
        listener_name=listener_name,
        security_protocol=security_protocol,
        request_type=request.api_key,
        request_version=request.api_version,
        client_id=request.header.client_id or "",
        correlation_id=int(request.header.correlation_id),
        **extra,
    )


@functools.lru_cache(maxsize=None)
def request_schema(api_key: int, version: int) -> type[RequestPayload]:
    """The kio class of a request body; UnsupportedVersionError when kio has none."""
    try:
        return load_request_schema(api_key, version)
    except KioIndexError:
        raise UnsupportedVersionError(f"no request schema for API key {api_key} version {version}") from None


@functools.lru_cache(maxsize=None)
def response_schema(api_key: int, version: int) -> type[ResponsePayload]:
    """The kio class of a response body; UnsupportedVersionError when kio has none."""
    try:
        return load_response_schema(api_key, version)
    except KioIndexError:
        raise UnsupportedVersionError(f"no response schema for API key {api_key} version {version}") from None


def encode(entity) -> bytes:
    """One kio entity (a header or a body) as bytes."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def _read(entity_type: type, data: bytes, offset: int, what: str, *, checked: bool = False):
    try:
        # kio's native reader trusts lengths: a count of 2^32 makes it allocate tens of GB and
        # abort the process. Every length is checked against the bytes left first (unless the
        # caller walked them already).
        if not checked:
            check_lengths(entity_type, data, offset)
        return entity_reader(entity_type)(data, offset)
    except InvalidRequestError as error:
        raise InvalidRequestError(f"could not read {what}: {error.message}") from None
    except Exception as error:  # kio raises its DecodeError, ValueError or UnicodeDecodeError
        raise InvalidRequestError(f"could not read {what}: {error}") from None


# ---------------------------------------------------------------------- length checks before decoding

_FIXED_SIZES = {
    "int8": 1, "uint8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4, "uint32": 4,
    "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8, "uuid": 16,
}


def _uvarint_at(data: bytes | bytearray, offset: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``offset`` and the offset after it; InvalidRequestError when it
    runs past ``end`` or is longer than 5 bytes."""
    value = shift = 0
    while True:
        if offset >= end:
            raise InvalidRequestError("a varint runs past the end of the frame")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise InvalidRequestError("a varint is longer than 5 bytes")


class _Frame:
    """A cursor over a frame that refuses to read past its end or to trust a length that
    claims more than the bytes left (Kafka's generated readers refuse the same)."""

    __slots__ = ("data", "offset", "end", "unknown_tags")

    def __init__(self, data: bytes | bytearray, offset: int, end: int, unknown_tags: list | None = None):
        self.data, self.offset, self.end = data, offset, end
        self.unknown_tags = unknown_tags
        """Where set, each tagged-field section holding tags the schema lacks is noted in it:
        (start, end, the bytes of the section without them)."""

    def skip(self, size: int, what: str) -> None:
        if size < 0 or size > self.end - self.offset:
            raise InvalidRequestError(f"{what} claims {size} bytes, but only {self.end - self.offset} remain")
        self.offset += size

    def uvarint(self) -> int:
        value, self.offset = _uvarint_at(self.data, self.offset, self.end)
        return value

    def signed(self, size: int) -> int:
        start = self.offset
        self.skip(size, "a fixed-size field")
        return int.from_bytes(self.data[start:self.offset], "big", signed=True)

    def count(self, flexible: bool, what: str) -> int:
        """An array's element count (-1: null), no larger than the bytes left."""
        count = self.uvarint() - 1 if flexible else self.signed(4)
        if count > self.end - self.offset:
            raise InvalidRequestError(f"{what} claims {count} elements, but only {self.end - self.offset} bytes remain")
        return count


class _FieldShape(typing.NamedTuple):
    """How one field lies on the wire: what both walkers below step over."""

    name: str
    is_array: bool
    optional: bool
    """The array may be null (count -1), or the struct may be (KIP-893's marker byte)."""
    entity: type | None = None
    """A struct's kio type; else the field is a fixed size or a sized string or bytes."""
    fixed_size: int | None = None
    legacy_size: int = 0
    """A string's or bytes' size prefix: int16 or int32 (2, 4), or 0 for a varint."""
    nullable: bool = False
    """A string's or bytes' size may be -1."""


@functools.lru_cache(maxsize=None)
def _field_shapes(entity_type: type[Entity]) -> tuple[tuple[int | None, _FieldShape], ...]:
    """Each field of ``entity_type`` in order, with its tag (None: a plain field) and shape."""
    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        classify_field,
        get_field_tag,
        get_schema_field_type,
        is_optional,
    )

    flexible = entity_type.__flexible__
    is_header = entity_type.__name__ == "RequestHeader"
    shapes = []
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        field_class = classify_field(field)
        optional = tag is None and is_optional(field)
        name = field.name
        if isinstance(field_class, (EntityField, EntityTupleField)):
            shape = _FieldShape(name, field_class.is_array, optional, entity=field_class.type_)
        else:
            kafka_type = get_schema_field_type(field)
            if kafka_type in _FIXED_SIZES:
                shape = _FieldShape(name, field_class.is_array, optional, fixed_size=_FIXED_SIZES[kafka_type])
            elif kafka_type in ("string", "bytes", "records"):
                # Kafka writes the header's client id as a legacy string always, and null.
                header_client_id = is_header and name == "client_id"
                legacy_size = 0 if flexible and not header_client_id else (2 if kafka_type == "string" else 4)
                nullable = optional or kafka_type == "records" or header_client_id
                shape = _FieldShape(name, field_class.is_array, optional, legacy_size=legacy_size, nullable=nullable)
            else:
                raise InvalidRequestError(f"no length check for the field type {kafka_type!r} of {name}")
        shapes.append((None if tag is None else int(tag), shape))
    return tuple(shapes)


def _field_checker(shape: _FieldShape, flexible: bool):
    """A function(frame) that steps over one field's bytes, checking every length in it. The
    function is made for the field's kind once, not told apart at every read: the walk runs
    over every request."""
    name, optional = shape.name, shape.optional
    if shape.entity is not None:
        entity = _entity_checker(shape.entity)
        if optional and not shape.is_array:
            def element(frame: _Frame) -> None:
                if frame.signed(1) >= 0:  # -1: KIP-893's null struct marker
                    entity(frame)
        else:
            element = entity
    elif shape.fixed_size is not None:
        fixed_size = shape.fixed_size

        def element(frame: _Frame) -> None:
            frame.skip(fixed_size, name)
    else:
        legacy_size, nullable = shape.legacy_size, shape.nullable

        def element(frame: _Frame) -> None:
            size = frame.signed(legacy_size) if legacy_size else frame.uvarint() - 1
            if size >= 0 or not nullable:
                frame.skip(size, name)

    if not shape.is_array:
        return element

    def array(frame: _Frame) -> None:
        count = frame.count(flexible, name)
        if count < 0 and not optional:
            raise InvalidRequestError(f"{name} is a null array, which the schema does not allow")
        for _ in range(count):
            element(frame)

    return array


@functools.lru_cache(maxsize=None)
def _field_steps(entity_type: type[Entity]) -> tuple[tuple, dict]:
    """The checkers of an entity's plain fields, in order (a run of fixed-size fields is one
    step), and of its tagged fields, by tag."""
    flexible = entity_type.__flexible__
    plain: list = []
    tagged = {}
    run_bytes, run_names = 0, []
    for tag, shape in _field_shapes(entity_type):
        if tag is not None:
            tagged[tag] = _field_checker(shape, flexible)
            continue
        if shape.fixed_size is not None and not shape.is_array:
            run_bytes += shape.fixed_size
            run_names.append(shape.name)
            continue
        if run_names:
            plain.append(_fixed_run(run_bytes, run_names))
            run_bytes, run_names = 0, []
        plain.append(_field_checker(shape, flexible))
    if run_names:
        plain.append(_fixed_run(run_bytes, run_names))
    return tuple(plain), tagged


def _fixed_run(size: int, names: list[str]):
    what = ", ".join(names)

    def step(frame: _Frame) -> None:
        frame.skip(size, what)

    return step


def _tags(frame: _Frame, tagged: dict) -> list[int]:
    """Step over a tagged-field section, checking the fields it knows; the tags present."""
    section = frame.offset
    if section < frame.end and frame.data[section] == 0:  # no tagged field: the usual case
        frame.offset += 1
        return []
    fields = frame.uvarint()
    if fields > frame.end - frame.offset:
        raise InvalidRequestError(f"{fields} tagged fields claimed, but only {frame.end - frame.offset} bytes remain")
    tags = []
    kept: list[bytes | bytearray] = []
    for _ in range(fields):
        field_start = frame.offset
        tag, size = frame.uvarint(), frame.uvarint()
        start = frame.offset
        frame.skip(size, f"tagged field {tag}")
        known = tagged.get(tag)
        if known is not None:  # read it within its own size
            known(_Frame(frame.data, start, start + size, frame.unknown_tags))
            kept.append(frame.data[field_start:frame.offset])
        tags.append(tag)
    if frame.unknown_tags is not None and len(kept) < fields:
        frame.unknown_tags.append((section, frame.offset, unsigned_varint(len(kept)) + b"".join(kept)))
    return tags


def _known_tags_only(data: bytes, entity_types: typing.Sequence[type]) -> tuple[bytes, int]:
    """``data`` (``entity_types`` one after the other) with every tagged field their schemas
    lack taken out, as Kafka's generated readers skip them, and how many sections lost some;
    every length checked on the way (InvalidRequestError)."""
    try:
        offset, end = 0, len(data)
        for entity_type in entity_types:
            offset = _plain_walker(entity_type)(data, offset, end)
        return data, 0
    except _PLAIN_STOPS:
        pass
    unknown: list[tuple[int, int, bytes]] = []
    frame = _Frame(data, 0, len(data), unknown)
    for entity_type in entity_types:
        _entity_checker(entity_type)(frame)
    if not unknown:
        return data, 0
    pieces, at = [], 0
    for start, end, section in sorted(unknown):
        pieces += [data[at:start], section]
        at = end
    pieces.append(data[at:])
    return b"".join(pieces), len(unknown)


@functools.lru_cache(maxsize=None)
def _entity_checker(entity_type: type[Entity]):
    flexible = entity_type.__flexible__
    plain, tagged = _field_steps(entity_type)

    def check(frame: _Frame) -> None:
        for step in plain:
            step(frame)
        if flexible:
            _tags(frame, tagged)

    return check


class _NotPlain(Exception):
    """The plain walk met what it leaves to the careful one: a tagged field, or a length that
    is not sound (which the careful walk names)."""


_PLAIN_STOPS = (_NotPlain, InvalidRequestError)
"""What stops a plain walk: its own _NotPlain, or the varint reader's error (the careful walk
then reads the frame again and names the fault)."""
_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from


@functools.lru_cache(maxsize=None)
def _plain_walker(entity_type: type[Entity]):
    """A function(data, offset, end) that steps over one ``entity_type`` and returns the offset
    after it, or stops (:data:`_PLAIN_STOPS`): the careful walk (:func:`_entity_checker`) as straight-line
    code, generated from the same field shapes once per type, for frames whose every length is
    sound and which hold no tagged field (nearly all of them). It checks the same lengths, so a
    frame it walks is one the careful walk reads whole, to the same offset, with no tag to
    take out; the careful walk runs on anything else and says what is wrong. The careful walk
    costs a Python call per field, which made it half of reading a small request."""
    flexible = entity_type.__flexible__
    namespace: dict[str, typing.Any] = {"_NotPlain": _NotPlain, "_uvarint": _uvarint_at, "_INT16": _INT16, "_INT32": _INT32}
    lines = ["def walk(d, o, e):"]

    def emit(depth: int, *code: str) -> None:
        lines.extend("    " * depth + line for line in code)

    def varint_into(depth: int, name: str) -> None:  # a length or count: the varint less one
        emit(depth, f"if o < e and d[o] < 0x80: {name} = d[o] - 1; o += 1",
             f"else: {name}, o = _uvarint(d, o, e); {name} -= 1")

    fixed = 0  # bytes of fixed-size fields not yet stepped over

    def step_fixed(depth: int) -> None:
        nonlocal fixed
        if fixed:
            emit(depth, f"o += {fixed}", "if o > e: raise _NotPlain")
            fixed = 0

    for tag, shape in _field_shapes(entity_type):
        if tag is not None:
            continue
        if shape.fixed_size is not None and not shape.is_array:
            fixed += shape.fixed_size
            continue
        step_fixed(1)
        depth = 1
        if shape.is_array:
            if flexible:
                varint_into(1, "n")
            else:
                emit(1, "if o + 4 > e: raise _NotPlain", "n = _INT32(d, o)[0]; o += 4")
            emit(1, "if n > e - o: raise _NotPlain")
            if not shape.optional:
                emit(1, "if n < 0: raise _NotPlain")
            if shape.fixed_size is not None:
                emit(1, f"if n > 0: o += n * {shape.fixed_size}", "if o > e: raise _NotPlain")
                continue
            emit(1, "for _ in range(n):")
            depth = 2
        if shape.entity is not None:
            walk = f"walk_{len(namespace)}"
            namespace[walk] = _plain_walker(shape.entity)
            if shape.optional and not shape.is_array:  # KIP-893: a signed byte, -1 for null
                emit(depth, "if o >= e: raise _NotPlain", f"o = {walk}(d, o + 1, e) if d[o] < 0x80 else o + 1")
            else:
                emit(depth, f"o = {walk}(d, o, e)")
            continue
        if shape.legacy_size:
            size = shape.legacy_size
            emit(depth, f"if o + {size} > e: raise _NotPlain", f"s = {'_INT16' if size == 2 else '_INT32'}(d, o)[0]; o += {size}")
        else:
            varint_into(depth, "s")
        if shape.nullable:
            emit(depth, "if s > 0:", "    o += s", "    if o > e: raise _NotPlain")
        else:
            emit(depth, "if s < 0: raise _NotPlain", "o += s", "if o > e: raise _NotPlain")
    step_fixed(1)
    if flexible:
        emit(1, "if o >= e or d[o]: raise _NotPlain", "o += 1")  # a tagged field: the careful walk
    emit(1, "return o")
    exec(compile("\n".join(lines), f"<plain walk of {entity_type.__module__}.{entity_type.__qualname__}>", "exec"), namespace)
    return namespace["walk"]


def response_tags(frame: bytes | bytearray, api_key: int, version: int) -> frozenset[int]:
    """The top-level tagged fields present in a response frame, found by walking its lengths
    without building it (a Fetch answer's records are stepped over, not copied): whether an
    answer carries, say, KIP-951's ``node_endpoints`` (tag 0) costs a walk, not a decode.
    InvalidRequestError if a length claims more than the frame holds."""
    schema = response_schema(api_key, version)
    if not schema.__flexible__:
        return frozenset()
    try:  # an answer the plain walk steps over has no tagged field at all
        _plain_walker(schema)(frame, _plain_walker(_response_header_type(schema))(frame, 0, len(frame)), len(frame))
        return frozenset()
    except _PLAIN_STOPS:
        pass
    cursor = _Frame(frame, 0, len(frame))
    _entity_checker(_response_header_type(schema))(cursor)
    for step in _field_steps(schema)[0]:
        step(cursor)
    return frozenset(_tags(cursor, _field_steps(schema)[1]))


def check_lengths(entity_type: type, data: bytes, offset: int = 0) -> int:
    """Walk one ``entity_type`` at ``offset`` without building it: InvalidRequestError if any
    length, count or varint claims more than the bytes left. Linear in the bytes read; where
    the entity ends."""
    frame = _Frame(data, offset, len(data))
    _entity_checker(entity_type)(frame)
    return frame.offset


FRAME_SIZE = struct.Struct(">i")
"""The int32 before every frame on a connection: the frame's length in bytes."""


def cut_frame(buffer: bytearray, size: int) -> bytes:
    """The ``size``-byte frame after the int32 size at the start of ``buffer``, taken out of
    it (its size too), copied once. ``bytes(buffer[4:end])`` copies it twice, through a
    bytearray, and costs 20-40x more for a large frame (measured: 47 µs against 2.3 for
    100 KB, 1 ms against 23 µs for 1 MB): a Produce of batches, a Fetch answer."""
    end = FRAME_SIZE.size + size
    with memoryview(buffer) as view:
        frame = bytes(view[FRAME_SIZE.size:end])
    del buffer[:end]
    return frame


def size_prefixed(frame: bytes) -> bytes:
    """``frame`` as it goes on a connection: its int32 size, then the frame."""
    return FRAME_SIZE.pack(len(frame)) + frame


def instant(milliseconds: int) -> datetime.datetime:
    """Milliseconds since the epoch (Kafka's -1 included) as the UTC datetime kio carries a
    ``datetime_i64`` field as."""
    return datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.timezone.utc)


def peek_api(data: bytes) -> tuple[int, int]:
    """The API key and version at the start of a request frame."""
    if len(data) < 4:
        raise InvalidRequestError(f"a request header needs at least 4 bytes, got {len(data)}")
    return int.from_bytes(data[0:2], "big", signed=True), int.from_bytes(data[2:4], "big", signed=True)


def decode_request_header(data: bytes, *, flexible: bool) -> RequestHeader:
    """Only the header of a request frame: v2 for a ``flexible`` API version, else v1."""
    header, _ = _read(RequestHeaderV2 if flexible else RequestHeaderV1, bytes(data), 0, "the request header")
    return header


def decode_request(data: bytes) -> Request:
    """A request frame (header and body) as a :class:`Request`. Tagged fields its version's
    schema lacks are skipped, as Kafka's readers skip them, and so are bytes after the body
    (a few clients send some); :attr:`Request.read_whole` says whether the frame held nothing
    else. InvalidRequestError when it cannot be read."""
    data = bytes(data)
    api_key, version = peek_api(data)
    schema = request_schema(api_key, version)
    header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    what = f"a request with API key {api_key} v{version}"
    try:
        data, skipped = _known_tags_only(data, (header_type, schema))
    except InvalidRequestError as error:
        raise InvalidRequestError(f"could not read {what}: {error.message}") from None
    header, size = _read(header_type, data, 0, "the request header", checked=True)
    body, body_size = _read(schema, data, size, f"the body of {what}", checked=True)
    return Request(header, body, len(data) - size - body_size, skipped)


def encode_request(body, *, correlation_id: int, client_id: str | None) -> bytes:
    """A request frame for ``body`` with a header of the version its API uses."""
    header_type = RequestHeaderV2 if body.__flexible__ else RequestHeaderV1
    header = header_type(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    return encode(header) + encode(body)


def _response_header_type(schema: type[ResponsePayload]) -> type:
    if schema.__api_key__ == ApiKey.API_VERSIONS or not schema.__flexible__:
        return ResponseHeaderV0
    return ResponseHeaderV1


_SCHEMA_CLASS_VARIABLES = ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__")


@functools.lru_cache(maxsize=None)
def _timestamps_as_integers(schema: type) -> tuple[type, tuple[str, ...]]:
    """A twin of ``schema`` whose top-level datetime fields are read as plain int64, and their names.

    Kafka answers a refused token request with timestamps of -1, and kio's reader refuses
    negative timestamps; its writer takes them. The twin reads the milliseconds, which
    :func:`decode_response` turns back into the datetimes the real schema holds.
    """
    names = tuple(f.name for f in dataclasses.fields(schema) if f.metadata.get("kafka_type") == "datetime_i64")
    if not names:
        return schema, ()
    fields = []
    for f in dataclasses.fields(schema):
        metadata = {**f.metadata, "kafka_type": "int64"} if f.name in names else f.metadata
        options: dict[str, typing.Any] = {"metadata": metadata}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        fields.append((f.name, int if f.name in names else f.type, dataclasses.field(**options)))
    twin = dataclasses.make_dataclass(schema.__name__, fields, frozen=True, slots=True, kw_only=True)
    for variable in _SCHEMA_CLASS_VARIABLES:
        setattr(twin, variable, getattr(schema, variable))
    return twin, names


def decode_response(data: bytes | bytearray, api_key: int, version: int):
    """A response frame to a request of ``api_key`` v``version``: (correlation id, body)."""
    data = bytes(data)
    schema = response_schema(api_key, version)
    header, size = _read(_response_header_type(schema), data, 0, "the response header")
    readable, timestamps = _timestamps_as_integers(schema)
    body, _ = _read(readable, data, size, f"the body of a response with API key {api_key} v{version}")
    if timestamps:
        values = {f.name: getattr(body, f.name) for f in dataclasses.fields(body)}
        for name in timestamps:
            values[name] = instant(values[name])
        body = schema(**values)
    return int(header.correlation_id), body


@dataclasses.dataclass(frozen=True)
class EncodedBody:
    """A body already in bytes, of kio class ``schema``: what a handler returns when it
    assembles its answer from pieces it encoded before (see :func:`encode_with_items`)."""

    schema: type
    data: bytes


def encode_with_items(entity, field_name: str, items: typing.Sequence[bytes]) -> EncodedBody:
    """``entity`` encoded with its array ``field_name`` made of ``items``, each item already
    encoded with :func:`encode`.

    For answers that repeat the same items request after request (Metadata's topics, each with
    its partitions): the caller encodes an item once and keeps the bytes. The array's place is
    found by encoding ``entity`` with that array empty and with one item: the two encodings
    agree up to the array's length and after the item.
    """
    entity_type = type(entity)
    one_item = build(item_type(entity_type, field_name))
    empty = encode(dataclasses.replace(entity, **{field_name: ()}))
    with_one = encode(dataclasses.replace(entity, **{field_name: (one_item,)}))
    differs_at = next(index for index, (a, b) in enumerate(zip(empty, with_one)) if a != b)
    flexible = entity_type.__flexible__
    # The length is a compact varint of n + 1 (1 byte for 0 and 1) or an int32 of n; the last
    # byte of it is where the two encodings first differ.
    length_end = differs_at + 1
    head = empty[: length_end - (1 if flexible else 4)]
    tail = empty[length_end:]
    length = io.BytesIO()
    (write_compact_array_length if flexible else write_legacy_array_length)(length, i32(len(items)))
    return EncodedBody(entity_type, b"".join((head, length.getvalue(), *items, tail)))


def encode_response(body, *, correlation_id: int) -> bytes:
    """A response frame for ``body`` (a kio entity or an :class:`EncodedBody`), with the header
    version its API and version use."""
    if isinstance(body, EncodedBody):
        return encode(_response_header_type(body.schema)(correlation_id=correlation_id)) + body.data
    header = _response_header_type(type(body))(correlation_id=correlation_id)
    return encode(header) + encode(body)


# Zero values for building error responses: Kafka's getErrorResponse leaves every field it does
# not set at its schema default, which kio carries as a dataclass default; the rest are zeros.
_ZEROS = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "datetime_i64": instant(0),
}


@functools.lru_cache(maxsize=None)
def _zero_fields(entity_type: type) -> tuple[frozenset[str], dict[str, typing.Any]]:
    """The field names of a kio class, and the zero of each field that has no schema default.

    Cached per class: handlers build thousands of entities per request (a Metadata answer has
    one per partition), and reading the dataclass fields each time was most of the cost.
    """
    zeros: dict[str, typing.Any] = {}
    for field in dataclasses.fields(entity_type):
        if field.default is not dataclasses.MISSING:
            continue
        if typing.get_origin(field.type) is tuple:
            zeros[field.name] = ()
        elif "kafka_type" in field.metadata:
            zeros[field.name] = _ZEROS[field.metadata["kafka_type"]]
        elif type(None) in typing.get_args(field.type):
            zeros[field.name] = None  # a nullable nested entity
        else:
            assert not isinstance(field.type, str)  # kio annotates its schemas with classes, never strings
            zeros[field.name] = build(field.type)  # frozen, so one instance serves every build
    return frozenset(field.name for field in dataclasses.fields(entity_type)), zeros


def build(entity_type: type, /, **values):
    """An instance of a kio class with ``values``; every other field without a schema default
    is zero (empty string, empty array, no error, no records).

    Values for fields that this version of the schema does not have are dropped, as Kafka's
    writers drop ignorable fields an older version lacks: one call serves every version.
    """
    names, zeros = _zero_fields(entity_type)
    fields = dict(zeros)
    fields.update((name, value) for name, value in values.items() if name in names)
    return entity_type(**fields)


def item_type(entity_type: type, field_name: str) -> type:
    """The kio class of the items of an array field (or of a nested field)."""
    return _item_type(entity_type, field_name)


@functools.lru_cache(maxsize=None)
def _item_type(entity_type: typing.Any, field_name: str) -> type:
    """:func:`item_type`, cached: a rule asks it for every item it refuses."""
    for field in dataclasses.fields(entity_type):
        if field.name == field_name:
            assert not isinstance(field.type, str)  # kio annotates its schemas with classes, never strings
            field_type = field.type
            if typing.get_origin(field_type) is not tuple:  # X | None: the X
                field_type = next((arg for arg in typing.get_args(field_type) if arg is not type(None)), field_type)
            if typing.get_origin(field_type) is tuple:
                return typing.get_args(field_type)[0]
            return field_type
    raise ValueError(f"{entity_type.__name__} has no field {field_name!r}")


def carries_error(entity) -> bool:
    """Whether ``entity`` holds an error code other than NONE, at the top or in any item: an
    error response of an API whose shape has no place for a whole request's error (Produce,
    Fetch before v7) and no items to put it on says nothing."""
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.name.endswith("error_code") and value:
            return True
        items = value if isinstance(value, tuple) else (value,)
        if any(dataclasses.is_dataclass(item) and carries_error(item) for item in items):
            return True
    return False


def has_field(entity, field_name: str) -> bool:
    return any(field.name == field_name for field in dataclasses.fields(entity))


def error_code(code: int | KafkaErrorCode) -> ErrorCode:
    """kio's ErrorCode for one of ours."""
    return ErrorCode(int(code))
