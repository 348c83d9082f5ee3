"""Kafka record batches as bytes, for the tests that put records on the wire themselves.

``record_batch`` writes one batch in Kafka's on-disk format (DefaultRecordBatch, magic 2), or with
``magic`` 0 or 1 a legacy message set (LegacyRecord), which a Produce v3+ must refuse. A Produce's
``records`` field is the concatenation of such batches; nothing here checks that the result is
valid, because the tests want to send what Kafka refuses: two batches, a control batch from a
client, a transactional batch without a transactional id.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Sequence

import crc32c

from kafkasec.principals.serde import unsigned_varint

Record = tuple[bytes | None, bytes | None]
"""A record's key and value; None is null (length -1)."""

TRANSACTIONAL = 0x10
CONTROL = 0x20
"""Attribute bits of a magic 2 batch (DefaultRecordBatch.TRANSACTIONAL_FLAG_MASK, CONTROL_FLAG_MASK)."""

# Everything of a magic 2 batch after its crc: attributes, lastOffsetDelta, baseTimestamp, maxTimestamp,
# producerId, producerEpoch, baseSequence, record count.
_AFTER_CRC = struct.Struct(">hiqqqhii")


def record_batch(
    records: Sequence[Record] = ((None, b"value"),),
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    magic: int = 2,
    timestamp_ms: int | None = None,
) -> bytes:
    """One uncompressed batch of ``records`` at base offset 0, as a producer sends it.

    With ``magic`` 0 or 1 it is a legacy message set (one message per record; the producer fields,
    ``transactional`` and ``control`` have no place there and must keep their defaults).
    """
    timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    if magic in (0, 1):
        if (producer_id, producer_epoch, base_sequence, transactional, control) != (-1, -1, -1, False, False):
            raise ValueError(f"a magic {magic} message set has no producer id, sequence or attributes")
        return b"".join(_legacy_message(offset, magic, timestamp, key, value) for offset, (key, value) in enumerate(records))
    if magic != 2:
        raise ValueError(f"magic {magic}: Kafka's record formats are 0, 1 and 2")
    attributes = (TRANSACTIONAL if transactional else 0) | (CONTROL if control else 0)
    body = b"".join(_record(offset, key, value) for offset, (key, value) in enumerate(records))
    after_crc = _AFTER_CRC.pack(
        attributes, len(records) - 1, timestamp, timestamp, producer_id, producer_epoch, base_sequence, len(records),
    ) + body
    # batchLength counts from partitionLeaderEpoch (int32) on: epoch, magic, crc, then the rest. The epoch is -1
    # (NO_PARTITION_LEADER_EPOCH) as a producer sends it: the leader fills it in.
    batch_length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc32c.crc32c(after_crc)) + after_crc


def end_transaction_marker(committed: bool, coordinator_epoch: int = 0) -> Record:
    """The one record of a control batch that ends a transaction (EndTransactionMarker, version 0):
    key = version, type (0 abort, 1 commit); value = version, coordinator epoch."""
    return struct.pack(">hh", 0, 1 if committed else 0), struct.pack(">hi", 0, coordinator_epoch)


def _record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    """A magic 2 record: attributes, timestamp delta 0, offset delta, key, value, no headers."""
    body = b"\x00" + _varint(0) + _varint(offset_delta) + _bytes(key) + _bytes(value) + _varint(0)
    return _varint(len(body)) + body


def _legacy_message(offset: int, magic: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """A magic 0 or 1 message (LegacyRecord): its crc is CRC-32 (not 32C) of magic through value."""
    after_crc = struct.pack(">bb", magic, 0) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    after_crc += _legacy_bytes(key) + _legacy_bytes(value)
    message = struct.pack(">I", zlib.crc32(after_crc)) + after_crc
    return struct.pack(">qi", offset, len(message)) + message


def _legacy_bytes(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def _bytes(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _varint(value: int) -> bytes:
    """Zigzag, then Kafka's unsigned varint (ByteUtils.writeVarint/writeVarlong)."""
    return unsigned_varint((value << 1) ^ (value >> 63))
