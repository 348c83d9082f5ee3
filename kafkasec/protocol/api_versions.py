"""ApiVersions (API 18): which APIs and versions an endpoint speaks, answered as a broker does.

A client sends ApiVersions first, often at a newer version than the broker knows. Kafka reads
only the header of such a request and answers at v0 (which every client can read) with
UNSUPPORTED_VERSION (35) and, by KIP-511, the range of ApiVersions itself (not the other APIs:
the client learns those from its retry at the highest version listed). From v3 on
the request names the client software, which must match Kafka's pattern, else the answer is
INVALID_REQUEST (42).
"""

from __future__ import annotations

import re
from typing import Mapping

from kafkasec.errors import KafkaErrorCode, UnsupportedVersionError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

_SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

VersionRanges = Mapping[int, "tuple[int, int]"]
"""API key -> (lowest, highest) version served."""


def kio_versions(api_key: int, *, up_to: int = 20) -> tuple[int, int]:
    """The contiguous range of versions kio has schemas for, both ways, for ``api_key``."""
    versions: list[int] = []
    for version in range(up_to + 1):
        try:
            wire.request_schema(api_key, version)
            wire.response_schema(api_key, version)
        except UnsupportedVersionError:
            if versions:
                break
            continue
        versions.append(version)
    if not versions:
        raise ValueError(f"kio has no schema for API key {api_key}")
    return versions[0], versions[-1]


def api_versions_response(version: int, ranges: VersionRanges, error: KafkaErrorCode = KafkaErrorCode.NONE):
    """An ApiVersionsResponse body of ``version`` listing ``ranges`` (none with INVALID_REQUEST)."""
    response_type = wire.response_schema(ApiKey.API_VERSIONS, version)
    key_type = wire.item_type(response_type, "api_keys")
    keys = ()
    if error is not KafkaErrorCode.INVALID_REQUEST:
        keys = tuple(
            wire.build(key_type, api_key=api_key, min_version=low, max_version=high)
            for api_key, (low, high) in sorted(ranges.items())
        )
    return wire.build(response_type, error_code=wire.error_code(error), api_keys=keys)


def answer_api_versions(frame: bytes, ranges: VersionRanges) -> tuple[bytes, bool]:
    """The response frame to an ApiVersions request frame, and whether the request was good
    (a client whose request was refused may try again)."""
    _, version = wire.peek_api(frame)
    low, high = ranges[ApiKey.API_VERSIONS]
    if not low <= version <= high:
        # Kafka's header for ApiVersions is v2 from request v3 on, whatever the version.
        header = wire.decode_request_header(frame, flexible=version >= 3)
        body = api_versions_response(0, {ApiKey.API_VERSIONS: (low, high)}, KafkaErrorCode.UNSUPPORTED_VERSION)
        return wire.encode_response(body, correlation_id=int(header.correlation_id)), False
    request = wire.decode_request(frame)
    correlation_id = int(request.header.correlation_id)
    if version >= 3 and not all(
        _SOFTWARE_NAME_OR_VERSION.fullmatch(text or "")
        for text in (request.body.client_software_name, request.body.client_software_version)
    ):
        body = api_versions_response(version, ranges, KafkaErrorCode.INVALID_REQUEST)
        return wire.encode_response(body, correlation_id=correlation_id), False
    return wire.encode_response(api_versions_response(version, ranges), correlation_id=correlation_id), True
