"""kafkalog checked against kafka-python's pure-Python record codec, an implementation nobody here
wrote: the .log files kafkalog writes must decode identically with kafka-python (CRC checked), the
batches kafka-python builds must be read and appended identically by kafkalog, and the offset and
time indexes must point where Kafka's would."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import kafka.codec
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

import kafkalog
from kafkalog import Record
from kit.records import expected_rows

pytestmark = pytest.mark.oracle

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000  # 2023-11-14, well inside the default timestamp bounds


# -- helpers --------------------------------------------------------------------------------------


def varied_records(n: int, tag: str = "") -> list[Record]:
    """Records covering what a producer can send: null / empty / long keys and values,
    tombstones, headers with null values and non-ASCII keys, out-of-order timestamps."""
    out = []
    for i in range(n):
        kind = i % 8
        key: bytes | None = b"key-%d%s" % (i, tag.encode())
        value: bytes | None = (b"value-%d-%s|" % (i, tag.encode())) * (1 + i % 6)
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if kind == 0:
            key = None
        elif kind == 1:
            key, value = b"", b""
        elif kind == 2:
            value = None  # tombstone
        elif kind == 3:
            headers = (("trace-id", b"abc-%d" % i), ("null-value", None))
        elif kind == 4:
            headers = (("ключ-ü-🔑", b"\x00\xff\x00"), ("", b""), ("dup", b"1"), ("dup", b"2"))
        elif kind == 5:
            key, value = None, None
            headers = (("only-header", None),)
        elif kind == 6:
            value = bytes(range(256))
        # Non-monotonic timestamps, spread over ~17 minutes.
        ts = BASE_TS + ((i * 7919) % 1000) * 1000 + i
        out.append(Record(key, value, headers, ts))
    return out


def scan_log_file(path: Path) -> list[tuple[int, DefaultRecordBatch]]:
    """(position, batch) for every batch kafka-python finds in a .log file; asserts the whole file
    is made of complete batches."""
    data = path.read_bytes()
    records = MemoryRecords(data)
    out = []
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        assert isinstance(batch, DefaultRecordBatch), f"{path}: batch at {pos} is not magic 2"
        out.append((pos, batch))
        pos += batch.size_in_bytes
    assert pos == len(data), f"{path}: {len(data) - pos} bytes after the last batch"
    return out


def decode_batch(batch: DefaultRecordBatch) -> list[tuple]:
    assert batch.validate_crc(), f"CRC mismatch in batch at offset {batch.base_offset}"
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(tuple(h) for h in r.headers))
        for r in batch
    ]


def log_files(log_dir: Path) -> list[Path]:
    return sorted(log_dir.glob("*.log"))


def kafka_python_batch(
    codec: int,
    records: list[Record],
    *,
    producer: tuple[int, int, int] = (-1, -1, -1),
) -> bytes:
    pid, epoch, seq = producer
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 24,
    )
    for i, r in enumerate(records):
        meta = builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        assert meta is not None
    return bytes(builder.build())


def consumer_rows(recs) -> list[tuple]:
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers)) for r in recs]


# -- set-up check ---------------------------------------------------------------------------------


def test_oracle_has_every_codec():
    # The Makefile installs these; without them the oracle checks below would not be independent.
    assert kafka.codec.has_gzip()
    assert kafka.codec.has_snappy()
    assert kafka.codec.has_lz4()
    assert kafka.codec.has_zstd()


# -- (a) kafkalog writes, kafka-python reads -------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_kafkalog_log_files_decode_with_kafka_python(tmp_path, codec):
    log_dir = tmp_path / "oracle-3"
    # Kafka refuses an append larger than a segment, so each append stays below 1500 bytes.
    config = {"internal.segment.bytes": 1500, "index.interval.bytes": 512}
    pool = varied_records(72, tag="/oracle")
    appended: list[Record] = []
    with kafkalog.UnifiedLog.open(log_dir, config) as log:
        while len(appended) < len(pool):
            recs = pool[len(appended) : len(appended) + 2 + len(appended) % 3]
            info = log.append(recs, compression=codec, leader_epoch=4, batch_size=300)
            assert info.first_offset == len(appended)
            assert info.record_count == len(recs)
            appended.extend(recs)
        segment_infos = log.segments
        via_kafkalog = consumer_rows(log.records())

    files = log_files(log_dir)
    assert len(files) >= 3, "internal.segment.bytes should have produced several segments"
    assert [Path(s.path).name for s in segment_infos] == [f.name for f in files]

    decoded: list[tuple] = []
    batch_count = 0
    next_offset = 0
    for seg_info, path in zip(segment_infos, files):
        batches = scan_log_file(path)
        assert batches, f"{path.name} is empty"
        # Segment file named after the 20-digit base offset of its first batch.
        assert path.name == f"{batches[0][1].base_offset:020d}.log"
        seg_rows = []
        for _, batch in batches:
            batch_count += 1
            assert batch.magic == 2
            assert batch.base_offset == next_offset, "batches must be contiguous across segments"
            assert batch.leader_epoch == 4
            assert batch.compression_type == CODECS[codec]
            assert batch.producer_id == -1 and batch.base_sequence == -1
            assert batch.timestamp_type == 0
            assert not batch.is_transactional and not batch.is_control_batch
            rows = decode_batch(batch)
            assert len(rows) == batch.records_count
            assert rows[-1][0] == batch.last_offset
            assert batch.max_timestamp == max(r[1] for r in rows)
            seg_rows.extend(rows)
            next_offset = batch.next_offset
        assert seg_info.base_offset == batches[0][1].base_offset
        assert seg_info.record_count == len(seg_rows)
        decoded.extend(seg_rows)

    assert batch_count > len(files), "batch_size should have split appends into several batches"
    assert decoded == expected_rows(appended)
    assert via_kafkalog == decoded


@pytest.mark.parametrize("codec", list(CODECS))
def test_log_append_time_topic_seen_by_kafka_python(tmp_path, codec):
    log_dir = tmp_path / "lat-0"
    before = int(time.time() * 1000)
    with kafkalog.UnifiedLog.open(log_dir, {"message.timestamp.type": "LogAppendTime"}) as log:
        infos = [log.append(varied_records(7, tag=str(i)), compression=codec) for i in range(3)]
        via_kafkalog = list(log.records())
    after = int(time.time() * 1000)

    batches = [b for f in log_files(log_dir) for _, b in scan_log_file(f)]
    assert len(batches) == 3
    for info, batch in zip(infos, batches):
        assert before <= info.log_append_time <= after
        assert batch.timestamp_type == 1
        assert batch.max_timestamp == info.log_append_time
        assert batch.compression_type == CODECS[codec]
        for row in decode_batch(batch):
            assert row[2] == 1, "kafka-python must see timestamp_type 1 (LogAppendTime)"
            assert row[1] == info.log_append_time
    assert all(r.timestamp_type == 1 for r in via_kafkalog)
    assert [r.timestamp for r in via_kafkalog] == [i.log_append_time for i in infos for _ in range(7)]


# -- (b) kafka-python writes, kafkalog reads -----------------------------------------------------


@pytest.mark.parametrize("with_headers", [True, False], ids=["headers", "no-headers"])
@pytest.mark.parametrize("producer", [(-1, -1, -1), (4242, 7, 100)], ids=["plain", "idempotent"])
@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python_batches_read_by_kafkalog(tmp_path, codec, producer, with_headers):
    recs = varied_records(23, tag="kp")
    if not with_headers:
        recs = [Record(r.key, r.value, (), r.timestamp) for r in recs]
    raw = kafka_python_batch(CODECS[codec], recs, producer=producer)
    # kafka-python falls back to no compression when it does not pay; these records compress.
    assert DefaultRecordBatch(raw).compression_type == CODECS[codec]

    # decode_batches: kafkalog's reading of the raw producer bytes equals kafka-python's.
    oracle = decode_batch(DefaultRecordBatch(raw))
    assert oracle == expected_rows(recs)
    native = kafkalog.decode_batches(raw)
    assert [(o, ts, tt, k, v, tuple(tuple(h) for h in hs)) for (o, ts, tt, k, v, hs, _) in native] == oracle
    assert not any(control for *_, control in native)

    # Two batches back to back decode as both.
    native2 = kafkalog.decode_batches(raw + raw)
    assert len(native2) == 2 * len(recs)

    # append_batch: offsets reassigned from the log end, everything else kept.
    with kafkalog.UnifiedLog.open(tmp_path / "produced-0") as log:
        log.append([(b"pre-%d" % i, b"x") for i in range(5)])
        info = log.append_batch(raw, leader_epoch=9)
        assert (info.first_offset, info.last_offset) == (5, 5 + len(recs) - 1)
        assert info.record_count == len(recs) and info.batch_count == 1
        assert info.max_timestamp == max(r.timestamp for r in recs)
        assert info.valid_bytes == len(raw)
        got = consumer_rows(log.records(start=5))
        assert log.log_end_offset == 5 + len(recs)
    assert got == expected_rows(recs, first_offset=5)

    # On disk the batch keeps the producer's codec and producer id/epoch/sequence (the topic's
    # compression.type is "producer"), with the broker-assigned base offset and epoch.
    batches = [b for f in log_files(tmp_path / "produced-0") for _, b in scan_log_file(f)]
    stored = batches[-1]
    assert stored.base_offset == 5
    assert stored.leader_epoch == 9
    assert stored.compression_type == CODECS[codec]
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence) == producer
    assert decode_batch(stored) == expected_rows(recs, first_offset=5)


@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python_batches_appended_back_to_back(tmp_path, codec):
    """Several producer requests in a row: each batch gets the next offsets."""
    with kafkalog.UnifiedLog.open(tmp_path / "seq-0", {"internal.segment.bytes": 2048}) as log:
        expected: list[tuple] = []
        for n in range(1, 12):
            recs = varied_records(n, tag=f"b{n}")
            first = log.log_end_offset
            info = log.append_batch(kafka_python_batch(CODECS[codec], recs, producer=(77, 0, len(expected))))
            assert info.first_offset == first
            expected.extend(expected_rows(recs, first_offset=first))
        assert consumer_rows(log.records()) == expected
        assert len(log.segments) > 1
    decoded = [row for f in log_files(tmp_path / "seq-0") for _, b in scan_log_file(f) for row in decode_batch(b)]
    assert decoded == expected


# -- legacy message sets (magic 0 and 1), as old brokers left them on disk ------------------------

# kafka-python writes magic-0 lz4 only with the optional xxhash module, which the oracle set-up
# does not install; Kafka never wrote zstd before magic 2.
LEGACY_CODECS = [(0, "none"), (0, "gzip"), (0, "snappy"), (1, "none"), (1, "gzip"), (1, "snappy"), (1, "lz4")]


def legacy_message_sets(magic: int, codec: str, sets: int = 4, per_set: int = 3) -> bytes:
    """Message sets as a pre-0.11 broker stored them: consecutive offsets, and each compressed
    wrapper carrying the offset of its last inner message."""
    out = b""
    base = 0
    for s in range(sets):
        builder = MemoryRecordsBuilder(magic=magic, compression_type=CODECS[codec], batch_size=1 << 20, offset=base)
        for i in range(per_set):
            o = base + i
            builder.append(
                timestamp=BASE_TS + o * 10 if magic else None,
                key=None if o % 4 == 0 else b"legacy-key-%d" % o,
                value=None if o % 5 == 2 else b"legacy value %d " % o * 8,
                headers=[],
            )
        builder.close()
        raw = bytearray(builder.buffer())
        if codec != "none":
            struct.pack_into(">q", raw, 0, base + per_set - 1)
        out += bytes(raw)
        base += per_set
    return out


def legacy_rows(data: bytes) -> list[tuple]:
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        batch = records.next_batch()
        assert isinstance(batch, LegacyRecordBatch)
        assert batch.validate_crc()
        for r in batch:
            out.append((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value))
    return out


@pytest.mark.parametrize("magic, codec", LEGACY_CODECS, ids=[f"v{m}-{c}" for m, c in LEGACY_CODECS])
def test_legacy_message_sets_read_like_kafka_python(tmp_path, magic, codec):
    data = legacy_message_sets(magic, codec)
    oracle = legacy_rows(data)
    assert [r[0] for r in oracle] == list(range(12))

    native = kafkalog.decode_batches(data)
    assert [(o, ts, k, v) for (o, ts, _, k, v, _, _) in native] == oracle
    assert all(hs == [] and not control for (*_, hs, control) in native)
    if magic == 1:
        assert {tt for (_, _, tt, *_) in native} == {0}

    # The same bytes as a segment of an old log directory, read offline.
    log_dir = tmp_path / "legacy-0"
    log_dir.mkdir()
    (log_dir / "00000000000000000000.log").write_bytes(data)
    with kafkalog.UnifiedLog.open(log_dir, read_only=True) as log:
        assert log.log_end_offset == 12
        assert [(r.offset, r.timestamp, r.key, r.value) for r in log.records()] == oracle
        table = log.to_arrow()
        assert table.column("offset").to_pylist() == list(range(12))
        assert table.column("key").to_pylist() == [r[2] for r in oracle]
        assert table.column("value").to_pylist() == [r[3] for r in oracle]
        assert [s.record_count for s in log.segments] == [12]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_legacy_v0_records_have_no_timestamp_type(tmp_path, codec):
    """Magic 0 messages carry no timestamp: Kafka reports timestamp -1 (NO_TIMESTAMP) and
    timestamp type -1 (NO_TIMESTAMP_TYPE, LegacyRecord.timestampType), which is what Spark's
    timestampType column shows for them."""
    data = legacy_message_sets(0, codec)
    native = kafkalog.decode_batches(data)
    assert {(ts, tt) for (_, ts, tt, *_) in native} == {(-1, -1)}
    log_dir = tmp_path / "v0-0"
    log_dir.mkdir()
    (log_dir / "00000000000000000000.log").write_bytes(data)
    with kafkalog.UnifiedLog.open(log_dir, read_only=True) as log:
        assert {(r.timestamp, r.timestamp_type) for r in log.records()} == {(-1, -1)}
        assert {(r.timestamp, r.timestamp_type) for r in log.read(0).records} == {(-1, -1)}
        assert set(log.to_arrow().column("timestampType").to_pylist()) == {-1}


# -- (c) indexes ---------------------------------------------------------------------------------


def read_offset_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 8 == 0, f"{path.name}: length {len(data)} is not a multiple of 8"
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]


def read_time_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 12 == 0, f"{path.name}: length {len(data)} is not a multiple of 12"
    return [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)]


def kafka_index_model(batches: list[tuple[int, DefaultRecordBatch]], base: int, interval: int):
    """The entries Kafka's LogSegment.append writes for a segment appended one batch at a time,
    plus the time-index entry added when the segment is rolled or closed."""
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    since_last = 0
    max_ts, max_ts_offset = -1, -1

    def maybe_append_time(ts: int, off: int) -> None:
        if not time_entries or ts > time_entries[-1][0]:
            time_entries.append((ts, off - base))

    for pos, batch in batches:
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if since_last > interval:
            offset_entries.append((batch.last_offset - base, pos))
            maybe_append_time(max_ts, max_ts_offset)
            since_last = 0
        since_last += batch.size_in_bytes
    if batches:
        maybe_append_time(max_ts, max_ts_offset)  # onBecomeInactiveSegment / close
    return offset_entries, time_entries


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_index_entries_point_at_batch_boundaries(tmp_path, codec):
    log_dir = tmp_path / "indexed-0"
    interval = 150
    with kafkalog.UnifiedLog.open(log_dir, {"internal.segment.bytes": 1500, "index.interval.bytes": interval}) as log:
        for i in range(60):
            # One batch per append; varied sizes and non-monotonic timestamps.
            recs = varied_records(1 + i % 4, tag=f"i{i}")
            recs = [Record(r.key, r.value, r.headers, BASE_TS + ((i * 37) % 50) * 1000 + j) for j, r in enumerate(recs)]
            info = log.append(recs, compression=codec)
            assert info.batch_count == 1
        lookups = {o: log.read(o, max_bytes=1).records[0].offset for o in range(0, log.log_end_offset, 7)}

    files = log_files(log_dir)
    assert len(files) >= 3
    total_entries = 0
    for path in files:
        base = int(path.stem)
        batches = scan_log_file(path)
        boundaries = {pos: batch for pos, batch in batches}
        offsets = read_offset_index(path.with_suffix(".index"))
        times = read_time_index(path.with_suffix(".timeindex"))
        total_entries += len(offsets)

        # The properties every reader relies on, whatever the indexing interval.
        prev = (-1, -1)
        for rel, pos in offsets:
            assert rel > prev[0] and pos > prev[1], f"{path.name}: entries must strictly increase"
            prev = (rel, pos)
            assert pos in boundaries, f"{path.name}: entry ({rel}, {pos}) is not at a batch boundary"
            batch = boundaries[pos]
            assert batch.base_offset <= base + rel <= batch.last_offset, (
                f"{path.name}: entry ({rel}, {pos}) points at a batch holding "
                f"[{batch.base_offset}, {batch.last_offset}]"
            )
            earlier = [b for p, b in batches if p < pos]
            assert all(b.last_offset < base + rel for b in earlier)
        prev_t = (-1, -1)
        for ts, rel in times:
            assert ts > prev_t[0] and rel >= prev_t[1], f"{path.name}: time index must increase"
            prev_t = (ts, rel)
            # (T, O): the largest timestamp among offsets <= O is T.
            upto = [b for _, b in batches if b.base_offset <= base + rel]
            assert max(b.max_timestamp for b in upto) == ts

        # And exactly the entries Kafka would have written.
        assert (offsets, times) == kafka_index_model(batches, base, interval), path.name
    assert total_entries > 10

    # A read found each record through the index.
    assert all(found == asked for asked, found in lookups.items())
