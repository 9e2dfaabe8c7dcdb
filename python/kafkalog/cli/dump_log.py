"""``kafkalog dump`` for ``.log`` segments (and KRaft ``.checkpoint`` snapshots): Kafka 4.3.1's
``DumpLogSegments.dumpLog`` line for line (see ``kafkalog.cli.dump`` for the formats).

The file is framed here as Kafka's ``FileLogInputStream`` frames it (a batch needs more than 17
bytes left, a size field below 14 is a corrupt record, a batch running past the end is the
end); the 61-byte v2 header (or the legacy entry header) is read with ``struct``; the CRC and
the records come from the engine (``_native.dump_crc32c``, ``_native.dump_batch_records``,
which decodes a batch without checking its CRC, as Kafka's deep iteration does). The file is
read with positional reads in chunks, never mapped and never written.

Thread-safety: none needed; one call per file from the command's thread.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .. import _native
from ..exceptions import CorruptRecordError, InvalidRecordError
from .java_text import java_utf8

__all__ = ["BatchHeader", "JavaHashMap", "LogFile", "Problems", "dump_log", "decoder", "java_bool", "optional_long"]

INT_MAX = 2**31 - 1
#: Kafka's FileLogInputStream constants.
HEADER_SIZE_UP_TO_MAGIC = 17
LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14
RECORD_BATCH_OVERHEAD = 61
_V2 = struct.Struct(">qiibIhiqqqhii")
_LEGACY = struct.Struct(">qiIbb")
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_CHUNK = 8 << 20


def java_bool(b: bool) -> str:
    return "true" if b else "false"


def optional_long(v: int | None) -> str:
    """Java's ``OptionalLong.toString``."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


V = TypeVar("V")


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit value."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h


class JavaHashMap(Generic[V]):
    """A dict whose iteration order is that of a ``java.util.HashMap<String, V>`` filled only by
    ``computeIfAbsent``, as DumpLogSegments fills its per-file problem maps: a new key goes to
    the head of its bin, and the table doubles at the start of the call after the size passed
    0.75 of it (every call counts, for a present key too). Bins treeified past 8 keys are not
    modelled (that takes 64 files colliding)."""

    def __init__(self) -> None:
        self._values: dict[str, V] = {}
        self._table: list[list[str]] = []
        self._threshold = 0

    def compute_if_absent(self, key: str, make: Callable[[], V]) -> V:
        if len(self._values) > self._threshold or not self._table:
            self._resize()
        value = self._values.get(key)
        if value is None:
            value = self._values[key] = make()
            self._table[self._bin(key, len(self._table))].insert(0, key)
        return value

    def _resize(self) -> None:
        capacity = 2 * len(self._table) if self._table else 16
        self._threshold = capacity * 3 // 4
        table: list[list[str]] = [[] for _ in range(capacity)]
        for keys in self._table:
            for k in keys:
                table[self._bin(k, capacity)].append(k)
        self._table = table

    @staticmethod
    def _bin(key: str, capacity: int) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    def items(self) -> list[tuple[str, V]]:
        return [(k, self._values[k]) for keys in self._table for k in keys]

    def __bool__(self) -> bool:
        return bool(self._values)


class Problems:
    """What Kafka collects while dumping and prints to stderr at the end (its maps keyed by
    absolute path, in Java's HashMap order), and whether anything an operator must look at
    was found."""

    def __init__(self) -> None:
        self.index_mismatches: JavaHashMap[dict[int, int]] = JavaHashMap()
        self.time_mismatches: JavaHashMap[list[tuple[int, int]]] = JavaHashMap()
        self.time_out_of_order: JavaHashMap[list[tuple[int, int]]] = JavaHashMap()
        self.time_not_found: JavaHashMap[list[tuple[int, int]]] = JavaHashMap()
        self.non_consecutive: JavaHashMap[dict[int, int]] = JavaHashMap()
        #: A damaged file or entry was found (exit code 1).
        self.found = False


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fields DumpLogSegments prints for a batch (Kafka's ``FileChannelRecordBatch``)."""

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    count: int | None
    base_sequence: int
    last_sequence: int
    producer_id: int
    producer_epoch: int
    partition_leader_epoch: int
    transactional: bool
    control: bool
    delete_horizon_ms: int | None
    timestamp_type: str
    max_timestamp: int
    codec: str
    crc: int
    valid: bool


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence`` (wraps past Integer.MAX_VALUE)."""
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


class LogFile:
    """A ``.log`` file read with positional reads; ``frames`` walks its batches as Kafka's
    ``FileLogInputStream`` does."""

    def __init__(self, path: str, display: str) -> None:
        self.path = path
        self.display = display
        self._fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size
        self._chunk = b""
        self._chunk_at = 0

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, position: int, size: int) -> tuple[bytes, int]:
        """(buffer, offset in it) holding ``size`` bytes from ``position`` (fewer at the end)."""
        at = self._chunk_at
        if at <= position and position + size <= at + len(self._chunk):
            return self._chunk, position - at
        self._chunk = os.pread(self._fd, max(size, _CHUNK), position)
        self._chunk_at = position
        return self._chunk, 0

    def frame(self, position: int, end: int) -> int | None:
        """The size of the batch at ``position`` if it lies before ``end``; None when fewer
        than 18 bytes remain or the batch runs past ``end``; a size below 14 is corrupt."""
        if position >= end - HEADER_SIZE_UP_TO_MAGIC:
            return None
        buf, at = self.read(position, LOG_OVERHEAD)
        size = int.from_bytes(buf[at + 8 : at + 12], "big", signed=True)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"corrupt record batch in {self.display} at position {position}: found record size {size} "
                f"smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
            )
        if position > end - LOG_OVERHEAD - size:
            return None
        return LOG_OVERHEAD + size

    def frames(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(position, size) of each batch from ``start`` up to ``end``."""
        position = start
        while (size := self.frame(position, end)) is not None:
            yield position, size
            position += size

    def header(self, position: int, size: int) -> BatchHeader:
        buf, at = self.read(position, size)
        if len(buf) - at < size:
            raise CorruptRecordError(f"corrupt record batch in {self.display} at position {position}: the file ended while reading it")
        magic = buf[at + 16]
        if magic >= 2:
            return self._v2_header(buf, at, position, size)
        return self._legacy_header(buf, at, position, size)

    def _v2_header(self, buf: bytes, at: int, position: int, size: int) -> BatchHeader:
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"corrupt record batch in {self.display} at position {position}: a v2 batch of {size} bytes is "
                f"shorter than its {RECORD_BATCH_OVERHEAD}-byte header"
            )
        (base, _, epoch, magic, crc, attrs, last_delta, first_ts, max_ts, pid, pepoch, base_seq, count) = _V2.unpack_from(buf, at)
        codec = _codec(attrs & 7, self.display, position)
        valid = crc == _native.dump_crc32c(buf, at + 21, at + size)
        return BatchHeader(
            position=position, size=size, magic=magic, base_offset=base, last_offset=base + last_delta, count=count,
            base_sequence=base_seq, last_sequence=-1 if base_seq == -1 else increment_sequence(base_seq, last_delta),
            producer_id=pid, producer_epoch=pepoch, partition_leader_epoch=epoch, transactional=bool(attrs & 0x10),
            control=bool(attrs & 0x20), delete_horizon_ms=first_ts if attrs & 0x40 else None,
            timestamp_type="LogAppendTime" if attrs & 0x08 else "CreateTime", max_timestamp=max_ts, codec=codec,
            crc=crc, valid=valid,
        )  # fmt: skip

    def _legacy_header(self, buf: bytes, at: int, position: int, size: int) -> BatchHeader:
        offset, _, crc, magic, attrs = _LEGACY.unpack_from(buf, at)
        if magic == 0:
            ts_type, max_ts = "NoTimestampType", -1
        else:
            ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
            max_ts = struct.unpack_from(">q", buf, at + 18)[0] if size >= 26 else -1
        valid = crc == zlib.crc32(memoryview(buf)[at + 16 : at + size])
        return BatchHeader(
            position=position, size=size, magic=magic, base_offset=offset, last_offset=offset, count=None,
            base_sequence=-1, last_sequence=-1, producer_id=-1, producer_epoch=-1, partition_leader_epoch=-1,
            transactional=False, control=False, delete_horizon_ms=None, timestamp_type=ts_type, max_timestamp=max_ts,
            codec=_codec(attrs & 7, self.display, position), crc=crc, valid=valid,
        )  # fmt: skip

    def records(self, header: BatchHeader) -> list[_native.DecodedRecord]:
        buf, at = self.read(header.position, header.size)
        return _native.dump_batch_records(buf, at, at + header.size, self.display, header.position)


def _codec(codec_id: int, display: str, position: int) -> str:
    name = _CODECS.get(codec_id)
    if name is None:
        raise CorruptRecordError(f"corrupt record batch in {display} at position {position}: unknown compression type id: {codec_id}")
    return name


# --- decoders (--decode) ------------------------------------------------------------------


def decoder(kind: str) -> Callable[[bytes], Any]:
    """utf8 (Kafka's StringDecoder: malformed bytes become U+FFFD as in Java), hex, or json (compact JSON
    text; bytes that are not JSON print as their UTF-8 text)."""
    if kind == "hex":
        return bytes.hex
    if kind == "json":
        return _json_text
    return _utf8


def _utf8(b: bytes) -> str:
    return java_utf8(b)


def _json_text(b: bytes) -> str:
    text = _utf8(b)
    try:
        return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return text


def json_value(kind: str, b: bytes) -> Any:
    """A key or value for ``--json`` output: a string, or with ``--decode json`` the parsed
    JSON value (the UTF-8 text when it is not JSON)."""
    if kind == "json":
        text = _utf8(b)
        try:
            return json.loads(text)
        except ValueError:
            return text
    return decoder(kind)(b)


# --- the dump ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogOptions:
    deep: bool
    print_data: bool
    skip_metadata: bool
    max_bytes: int
    decode: str
    json: bool


_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def dump_log(path: str, display: str, opts: LogOptions, problems: Problems, write: Callable[[str], None]) -> None:
    """DumpLogSegments.dumpLog: the file's batches (and with ``deep`` its records) to ``write``."""
    name = os.path.basename(path)
    if name.endswith(".log"):
        first = _segment_base(name, display)
        _emit(write, opts, f"Log starting offset: {first}", {"type": "log", "startOffset": first})
    elif name == "bootstrap.checkpoint":
        _emit(write, opts, "KRaft bootstrap snapshot", {"type": "kraft_bootstrap_snapshot"})
    else:
        m = _SNAPSHOT_NAME.match(name)
        if m is None:
            raise InvalidRecordError(f"{display}: not a KRaft snapshot name (<20-digit offset>-<10-digit epoch>.checkpoint)")
        end_offset, epoch = int(m.group(1)), int(m.group(2))
        _emit(write, opts, f"Snapshot end offset: {end_offset}, epoch: {epoch}", {"type": "kraft_snapshot", "endOffset": end_offset, "epoch": epoch})
    with LogFile(path, display) as log:
        end = min(opts.max_bytes, log.size)
        valid_bytes = 0
        last = [-1]
        for position, size in log.frames(0, end):
            header = log.header(position, size)
            problems.found |= not header.valid
            _print_batch(header, valid_bytes, opts, write)
            if opts.deep:
                _print_records(log, header, opts, problems, last, write)
            valid_bytes += size
        trailing = end - valid_bytes
        if trailing > 0 and opts.max_bytes == INT_MAX:
            problems.found = True
            _emit(write, opts, f"Found {trailing} invalid bytes at the end of {name}", {"type": "trailing_bytes", "position": valid_bytes, "bytes": trailing})


def _segment_base(name: str, display: str) -> int:
    stem = name.split(".")[0]
    if not stem.isdigit():
        raise InvalidRecordError(f"{display}: the name does not start with a base offset (Kafka's <20 digits>.<suffix>)")
    return int(stem)


def _emit(write: Callable[[str], None], opts: LogOptions, line: str, obj: dict[str, Any]) -> None:
    write(json.dumps(obj, ensure_ascii=False) if opts.json else line)


def _print_batch(h: BatchHeader, position: int, opts: LogOptions, write: Callable[[str], None]) -> None:
    if opts.json:
        write(json.dumps({"type": "batch", **_batch_fields(h, position)}))
        return
    if h.magic >= 2:
        head = (
            f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.count} baseSequence: {h.base_sequence} "
            f"lastSequence: {h.last_sequence} producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
            f"partitionLeaderEpoch: {h.partition_leader_epoch} isTransactional: {java_bool(h.transactional)} "
            f"isControl: {java_bool(h.control)} deleteHorizonMs: {optional_long(h.delete_horizon_ms)}"
        )
    else:
        head = f"offset: {h.last_offset}"
    write(
        f"{head} position: {position} {h.timestamp_type}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {h.codec} crc: {h.crc} isvalid: {java_bool(h.valid)}"
    )


def _batch_fields(h: BatchHeader, position: int) -> dict[str, Any]:
    return {
        "baseOffset": h.base_offset if h.magic >= 2 else None, "lastOffset": h.last_offset, "count": h.count,
        "baseSequence": h.base_sequence, "lastSequence": h.last_sequence, "producerId": h.producer_id,
        "producerEpoch": h.producer_epoch, "partitionLeaderEpoch": h.partition_leader_epoch,
        "isTransactional": h.transactional, "isControl": h.control, "deleteHorizonMs": h.delete_horizon_ms,
        "position": position, "timestampType": h.timestamp_type, "maxTimestamp": h.max_timestamp, "size": h.size,
        "magic": h.magic, "compresscodec": h.codec, "crc": h.crc, "isvalid": h.valid,
    }  # fmt: skip


def _print_records(log: LogFile, h: BatchHeader, opts: LogOptions, problems: Problems, last: list[int], write: Callable[[str], None]) -> None:
    gaps = problems.non_consecutive
    for r in log.records(h):
        if r.offset != last[0] + 1:
            gaps.compute_if_absent(os.path.abspath(log.path), dict)[last[0]] = r.offset
        last[0] = r.offset
        if opts.json:
            write(json.dumps(_record_object(h, r, opts, log.display), ensure_ascii=False))
        else:
            write(_record_line(h, r, opts, log.display))


def _record_line(h: BatchHeader, r: _native.DecodedRecord, opts: LogOptions, display: str) -> str:
    parts: list[str] = []
    prefix = "| "
    if not opts.skip_metadata:
        parts.append(
            f"| offset: {r.offset} {h.timestamp_type}: {r.timestamp} keySize: {_size(r.key)} valueSize: {_size(r.value)}"
        )
        if h.magic >= 2:
            keys = ",".join(k for k, _ in r.headers)
            parts.append(f" sequence: {_sequence(h, r.offset)} headerKeys: [{keys}]")
        else:
            parts.append(f" isValid: {java_bool(h.valid)} crc: {h.crc}")
        if h.control:
            parts.append(_control_text(r, display))
        prefix = " "
    if opts.print_data and not h.control:
        decode = decoder(opts.decode)
        if r.key is not None:
            parts.append(f"{prefix}key: {decode(r.key)}")
            prefix = " "
        if r.value is not None:
            parts.append(f"{prefix}payload: {decode(r.value)}")
    return "".join(parts)


def _record_object(h: BatchHeader, r: _native.DecodedRecord, opts: LogOptions, display: str) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "type": "record", "offset": r.offset, "timestampType": h.timestamp_type, "timestamp": r.timestamp,
        "keySize": _size(r.key), "valueSize": _size(r.value), "headerKeys": [k for k, _ in r.headers],
    }  # fmt: skip
    if h.magic >= 2:
        obj["sequence"] = _sequence(h, r.offset)
    if h.control:
        obj.update(_control_fields(r, display))
    elif opts.print_data:
        kind = opts.decode
        obj["key"] = None if r.key is None else json_value(kind, r.key)
        obj["payload"] = None if r.value is None else json_value(kind, r.value)
        obj["headers"] = [[k, None if v is None else json_value(kind, v)] for k, v in r.headers]
    return obj


def _size(b: bytes | None) -> int:
    return -1 if b is None else len(b)


def _sequence(h: BatchHeader, offset: int) -> int:
    return -1 if h.base_sequence == -1 else increment_sequence(h.base_sequence, offset - h.base_offset)


def _control_fields(r: _native.DecodedRecord, display: str) -> dict[str, Any]:
    """The control record's type (Kafka's ``ControlRecordType.parseTypeId``) and, for an
    ABORT / COMMIT marker, its coordinator epoch (``EndTransactionMarker.deserialize``)."""
    key = r.key or b""
    if len(key) < 4:
        raise InvalidRecordError(
            f"{display}: control record at offset {r.offset}: invalid value size found for control record key. "
            f"Must have at least 4 bytes, but found only {len(key)}"
        )
    version, type_id = struct.unpack_from(">hh", key)
    if version < 0:
        raise InvalidRecordError(f"{display}: control record at offset {r.offset}: invalid version found for control record: {version}")
    name = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    fields: dict[str, Any] = {"controlType": name, "controlTypeId": type_id}
    if name in ("ABORT", "COMMIT"):
        value = r.value or b""
        if len(value) < 6:
            raise InvalidRecordError(f"{display}: end transaction marker at offset {r.offset} has a value of {len(value)} bytes (6 needed)")
        marker_version, coordinator_epoch = struct.unpack_from(">hi", value)
        if marker_version < 0:
            raise InvalidRecordError(
                f"{display}: invalid version found for end transaction marker at offset {r.offset}: {marker_version}"
            )
        fields["coordinatorEpoch"] = coordinator_epoch
    return fields


def _control_text(r: _native.DecodedRecord, display: str) -> str:
    f = _control_fields(r, display)
    if "coordinatorEpoch" in f:
        return f" endTxnMarker: {f['controlType']} coordinatorEpoch: {f['coordinatorEpoch']}"
    # Kafka decodes the KRaft control records (LeaderChange, SnapshotHeader, ...) into JSON;
    # a topic partition's log has none, and kafkalog prints their type as for an unknown one.
    return f" controlType: {f['controlType']}({f['controlTypeId']})"
