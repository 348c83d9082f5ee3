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
import typing
import uuid

try:
    from kio.index import KioIndexError, load_request_schema, load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
    from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
    from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
    from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
    from kio.serial import entity_reader, entity_writer
except ImportError as error:  # pragma: no cover - depends on how kafkasec was installed
    raise ImportError(
        "kafkasec.wire needs the 'wire' extra: pip install 'kafkasec[wire]'"
    ) from error

from kafkasec.context import RequestContext
from kafkasec.errors import InvalidRequestError, KafkaErrorCode, UnsupportedVersionError

API_VERSIONS = 18


RequestHeader = typing.Union[RequestHeaderV1, RequestHeaderV2]


@dataclasses.dataclass(frozen=True)
class Request:
    """A request read off the wire: its header and its body (a kio dataclass)."""

    header: RequestHeader
    body: typing.Any

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
def request_schema(api_key: int, version: int) -> type:
    """The kio class of a request body; UnsupportedVersionError when kio has none."""
    try:
        return load_request_schema(api_key, version)
    except KioIndexError:
        raise UnsupportedVersionError(f"no request schema for API key {api_key} version {version}") from None


@functools.lru_cache(maxsize=None)
def response_schema(api_key: int, version: int) -> type:
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


def _read(entity_type: type, data: bytes, offset: int, what: str):
    try:
        return entity_reader(entity_type)(data, offset)
    except Exception as error:  # kio raises its DecodeError, ValueError or UnicodeDecodeError
        raise InvalidRequestError(f"could not read {what}: {error}") from None


FRAME_SIZE = struct.Struct(">i")
"""The int32 before every frame on a connection: the frame's length in bytes."""


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
    """A request frame (header and body) as a :class:`Request`."""
    data = bytes(data)
    api_key, version = peek_api(data)
    schema = request_schema(api_key, version)
    header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    header, size = _read(header_type, data, 0, "the request header")
    body, _ = _read(schema, data, size, f"the body of a request with API key {api_key} v{version}")
    return Request(header, body)


def encode_request(body, *, correlation_id: int, client_id: str | None) -> bytes:
    """A request frame for ``body`` with a header of the version its API uses."""
    header_type = RequestHeaderV2 if body.__flexible__ else RequestHeaderV1
    header = header_type(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return encode(header) + encode(body)


def _response_header_type(schema: type) -> type:
    if schema.__api_key__ == API_VERSIONS or not schema.__flexible__:
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
        options = {"metadata": metadata}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        fields.append((f.name, int if f.name in names else f.type, dataclasses.field(**options)))
    twin = dataclasses.make_dataclass(schema.__name__, fields, frozen=True, slots=True, kw_only=True)
    for variable in _SCHEMA_CLASS_VARIABLES:
        setattr(twin, variable, getattr(schema, variable))
    return twin, names


def decode_response(data: bytes, api_key: int, version: int):
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


def encode_response(body, *, correlation_id: int) -> bytes:
    """A response frame for ``body``, with the header version its API and version use."""
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
def _zero_fields(entity_type: type) -> tuple[frozenset[str], dict]:
    """The field names of a kio class, and the zero of each field that has no schema default.

    Cached per class: handlers build thousands of entities per request (a Metadata answer has
    one per partition), and reading the dataclass fields each time was most of the cost.
    """
    zeros = {}
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
            zeros[field.name] = build(field.type)  # frozen, so one instance serves every build
    return frozenset(field.name for field in dataclasses.fields(entity_type)), zeros


def build(entity_type: type, **values):
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
    for field in dataclasses.fields(entity_type):
        if field.name == field_name:
            field_type = field.type
            if typing.get_origin(field_type) is not tuple:  # X | None: the X
                field_type = next((arg for arg in typing.get_args(field_type) if arg is not type(None)), field_type)
            if typing.get_origin(field_type) is tuple:
                return typing.get_args(field_type)[0]
            return field_type
    raise ValueError(f"{entity_type.__name__} has no field {field_name!r}")


def has_field(entity, field_name: str) -> bool:
    return any(field.name == field_name for field in dataclasses.fields(entity))


def error_code(code: int | KafkaErrorCode) -> ErrorCode:
    """kio's ErrorCode for one of ours."""
    return ErrorCode(int(code))
