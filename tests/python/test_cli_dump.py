"""``kafkalog dump`` (kafkalog.cli.dump): the installed command run as a subprocess over
segments kafkalog wrote, its output and exit codes. Kafka's own tool on the same files is
compared line for line in tests/interop/test_dump_interop.py; here each line is checked
against what the test wrote (offsets, positions, sizes, timestamps, sequences, horizons).

Mirrors DumpLogSegmentsTest (testBatchAndRecordMetadataOutput, testPrintDataLog,
testDumpIndexMismatches, testDumpTimeIndexErrors, testDumpEmptyIndex,
testPrintDataLogPartialBatches) where a case has a counterpart there.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import kafkalog
import pytest
from kafkalog import Record
from kafkalog.batches import build, end_txn_marker
from kafkalog.checkpoints import write_offset_checkpoint
from kafkalog.cli.dump_log import JavaHashMap
from kafkalog.cli.java_text import java_utf8

SCRIPT = Path(sys.executable).with_name("kafkalog")
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000
DAY = 86_400_000


def dump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "dump", *map(str, args)], capture_output=True, text=True, timeout=120, env=os.environ)


def seg(path: Path, base: int = 0, suffix: str = ".log") -> Path:
    return path / f"{base:020d}{suffix}"


def batch_positions(log: Path) -> list[tuple[int, int]]:
    """(position, size) of each batch of a .log file."""
    data, pos, out = log.read_bytes(), 0, []
    while pos + 12 <= len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        out.append((pos, size))
        pos += size
    return out


@pytest.fixture
def codecs_log(tmp_path: Path) -> Path:
    """One batch per codec (3 records with headers each), then a record with null key and value."""
    path = tmp_path / "codecs-0"
    with kafkalog.UnifiedLog.open(path, {"index.interval.bytes": "1"}) as log:
        for i, codec in enumerate(CODECS):
            recs = [Record(b"k%d" % j, "välue-%d".encode() % j, (("h1", b"x"), ("h2", None)), T0 + 10 * i + j) for j in range(3)]
            log.append(recs, compression=codec)
        log.append([Record(None, None, (), T0 + 100)])
    return path


def test_batch_and_record_lines_for_every_codec(codecs_log: Path) -> None:
    """testBatchAndRecordMetadataOutput / testPrintDataLog: Kafka's batch and record lines,
    positions and sizes from the file, record timestamps and header keys as written."""
    log = seg(codecs_log)
    done = dump("--files", log, "--print-data-log")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    batches = [line for line in lines if line.startswith("baseOffset:")]
    frames = batch_positions(log)
    assert len(batches) == len(frames) == 6
    for i, (line, (pos, size)) in enumerate(zip(batches, frames)):
        codec = CODECS[i] if i < 5 else "none"
        last = 3 * i + 2 if i < 5 else 15
        count = 3 if i < 5 else 1
        max_ts = T0 + 10 * i + 2 if i < 5 else T0 + 100
        assert re.fullmatch(
            rf"baseOffset: {3 * i} lastOffset: {last} count: {count} baseSequence: -1 lastSequence: -1 producerId: -1 "
            rf"producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
            rf"deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: {max_ts} size: {size} magic: 2 "
            rf"compresscodec: {codec} crc: \d+ isvalid: true",
            line,
        ), line
    records = [line for line in lines if line.startswith("| ")]
    assert records[4] == f"| offset: 4 CreateTime: {T0 + 11} keySize: 2 valueSize: 8 sequence: -1 headerKeys: [h1,h2] key: k1 payload: välue-1"
    assert records[-1] == f"| offset: 15 CreateTime: {T0 + 100} keySize: -1 valueSize: -1 sequence: -1 headerKeys: []"
    assert len(records) == 16


def test_shallow_is_batches_only_and_decode_implies_print_data(codecs_log: Path) -> None:
    log = seg(codecs_log)
    shallow = dump("--files", log).stdout.splitlines()
    assert not [line for line in shallow if line.startswith("|")] and len(shallow) == 8
    deep = dump("--files", log, "--deep-iteration").stdout
    assert "| offset: 0 " in deep and "payload:" not in deep
    hexed = dump("--files", log, "--decode", "hex").stdout
    assert f"key: {b'k0'.hex()} payload: {'välue-0'.encode().hex()}" in hexed
    skipped = dump("--files", log, "--print-data-log", "--skip-record-metadata").stdout.splitlines()
    assert "| key: k0 payload: välue-0" in skipped


def test_decode_json_prints_compact_json_and_falls_back_to_text(tmp_path: Path) -> None:
    path = tmp_path / "j-0"
    with kafkalog.UnifiedLog.open(path) as log:
        log.append([Record(b"a", b'{ "x" : [1, 2] }', (), T0), Record(b"b", b"not json", (), T0)])
    out = dump("--files", seg(path), "--decode", "json").stdout
    assert 'key: a payload: {"x":[1,2]}' in out and "key: b payload: not json" in out


def test_max_bytes_stops_at_the_last_whole_batch(codecs_log: Path) -> None:
    """testPrintDataLogPartialBatches: --max-bytes N shows the batches that end within N bytes,
    and no "invalid bytes" line for the cut."""
    log = seg(codecs_log)
    frames = batch_positions(log)
    limit = frames[2][0] + frames[2][1] + 5  # three batches and 5 bytes of the fourth
    done = dump("--files", log, "--max-bytes", str(limit))
    assert done.returncode == 0
    assert sum(line.startswith("baseOffset:") for line in done.stdout.splitlines()) == 3
    assert "invalid bytes" not in done.stdout


def write_transactions(path: Path) -> None:
    with kafkalog.UnifiedLog.open(path) as log:
        recs = [Record(b"t%d" % i, b"v", (), T0 + i) for i in range(3)]
        log.append_as_follower(build(0, recs, compression="zstd", producer_id=7, producer_epoch=2, base_sequence=10, transactional=True, partition_leader_epoch=4))
        log.append_as_follower(end_txn_marker(3, T0 + 5, producer_id=7, producer_epoch=2, commit=False, coordinator_epoch=9, partition_leader_epoch=4))
        log.append_as_follower(build(4, recs, producer_id=8, producer_epoch=0, base_sequence=2147483646, partition_leader_epoch=4))
        log.append_as_follower(end_txn_marker(7, T0 + 6, producer_id=7, producer_epoch=2, commit=True, coordinator_epoch=10, partition_leader_epoch=4))


def test_transactions_control_batches_txnindex_and_snapshot(tmp_path: Path) -> None:
    """Transactional and idempotent batches (sequences wrapping past Integer.MAX_VALUE), ABORT /
    COMMIT markers, the aborted transaction in the .txnindex, the producers in the .snapshot."""
    path = tmp_path / "txn-0"
    write_transactions(path)
    log = seg(path)
    out = dump("--files", log, "--deep-iteration").stdout
    assert "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 10 lastSequence: 12 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 4 isTransactional: true isControl: false" in out
    assert "| offset: 1 CreateTime: 1700000000001 keySize: 2 valueSize: 1 sequence: 11 headerKeys: []" in out
    assert "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 4 isTransactional: true isControl: true" in out
    assert "| offset: 3 CreateTime: 1700000000005 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 9" in out
    assert "baseSequence: 2147483646 lastSequence: 0 producerId: 8" in out  # the sequence wraps
    assert "| offset: 6 CreateTime: 1700000000002 keySize: 2 valueSize: 1 sequence: 0 headerKeys: []" in out
    assert "endTxnMarker: COMMIT coordinatorEpoch: 10" in out
    # markers carry no data: --print-data-log prints nothing more for them
    printed = dump("--files", log, "--print-data-log").stdout.splitlines()
    assert [line for line in printed if "endTxnMarker: ABORT" in line][0].endswith("coordinatorEpoch: 9")
    txn = dump("--files", seg(path, 0, ".txnindex")).stdout.splitlines()
    assert txn == [f"Dumping {seg(path, 0, '.txnindex')}", "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 4"]
    snapshots = sorted(path.glob("*.snapshot"))
    assert snapshots, "closing the log writes a producer snapshot"
    snap = dump("--files", snapshots[-1]).stdout
    assert "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1700000000002 firstSequence: 2147483646 lastSequence: 0 lastOffset: 6 offsetDelta: 2 timestamp: 1700000000002" in snap
    assert "producerId: 7 producerEpoch: 2 coordinatorEpoch: 10 currentTxnFirstOffset: OptionalLong.empty" in snap
    assert dump("--files", snapshots[-1]).returncode == 0


def test_compacted_segment_shows_delete_horizons_and_gaps(tmp_path: Path) -> None:
    """A clean stamps tombstone batches with delete.retention.ms past the clean's time (KIP-534);
    the records removed leave gaps, listed (as Kafka lists them) but not counted as damage."""
    path = tmp_path / "c-0"
    config = {"cleanup.policy": "compact", "delete.retention.ms": str(DAY), "min.compaction.lag.ms": "0"}
    with kafkalog.UnifiedLog.open(path, config) as log:
        log.append([Record(b"a", b"1", (), T0), Record(b"b", b"1", (), T0 + 1)])
        log.append([Record(b"a", b"2", (), T0 + 2), Record(b"b", None, (), T0 + 3)], compression="gzip")
        log.roll()
        log.append([Record(b"c", b"1", (), T0 + 4)])
        log.compact_now(time_ms=T0 + 10)
    done = dump("--files", seg(path), "--deep-iteration")
    assert done.returncode == 0, done.stderr
    assert f"deleteHorizonMs: OptionalLong[{T0 + 10 + DAY}]" in done.stdout
    assert f"Non-consecutive offsets in {seg(path)}\n  -1 is followed by 2\n" in done.stderr


def test_indexes_entries_mismatches_and_empty(codecs_log: Path) -> None:
    """The .index and .timeindex entries as the files hold them; testDumpIndexMismatches (an
    entry pointing at a batch that ends elsewhere: exit 1 and Kafka's section on stderr);
    testDumpEmptyIndex."""
    index, tindex = seg(codecs_log, 0, ".index"), seg(codecs_log, 0, ".timeindex")
    raw = index.read_bytes()
    expected = [f"offset: {r} position: {p}" for r, p in struct.iter_unpack(">ii", raw)]
    done = dump("--files", f"{index},{tindex}")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[: len(expected) + 1] == [f"Dumping {index}", *expected]
    assert out[len(expected) + 1] == f"Dumping {tindex}"
    assert [line for line in out if line.startswith("timestamp:")] == [f"timestamp: {t} offset: {o}" for t, o in struct.iter_unpack(">qi", tindex.read_bytes())]
    # the second entry pointed at the first batch
    bad = bytearray(raw)
    bad[12:16] = raw[4:8]
    index.write_bytes(bytes(bad))
    done = dump("--files", index, "--verify-index-only")
    first, second = struct.unpack_from(">i", raw, 0)[0], struct.unpack_from(">i", raw, 8)[0]
    assert (done.returncode, done.stdout) == (1, f"Dumping {index}\n")
    assert done.stderr == f"Mismatches in :{index.resolve()}\n  Index offset: {second}, log offset: {first}\n"
    index.write_bytes(b"")
    assert dump("--files", index).stdout == f"Dumping {index}\n{index} is empty.\n"


def test_time_index_errors(codecs_log: Path) -> None:
    """testDumpTimeIndexErrors: entries swapped print Kafka's out-of-order and mismatch sections."""
    tindex = seg(codecs_log, 0, ".timeindex")
    raw = tindex.read_bytes()
    assert len(raw) >= 24
    tindex.write_bytes(raw[12:24] + raw[:12] + raw[24:])
    done = dump("--files", tindex)
    assert done.returncode == 1
    assert f"Found out of order timestamp in :{tindex.resolve()}\n" in done.stderr


def test_index_sanity_check(codecs_log: Path) -> None:
    index = seg(codecs_log, 0, ".index")
    assert dump("--files", index, "--index-sanity-check").stdout == f"Dumping {index}\n{index} passed sanity check.\n"
    index.write_bytes(index.read_bytes() + b"\x00\x00\x00")
    done = dump("--files", index, "--index-sanity-check")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"is corrupt, found {index.stat().st_size} bytes which is neither positive nor a multiple of 8" in done.stderr


def test_damaged_log_crc_torn_tail_and_bad_size(codecs_log: Path) -> None:
    """A flipped byte fails the batch's CRC (isvalid: false, the dump goes on, exit 1); a torn
    tail is Kafka's "Found N invalid bytes"; a size field below 14 ends the dump with an error
    naming the file and position (Kafka's CorruptRecordException)."""
    log = seg(codecs_log)
    frames = batch_positions(log)
    data = bytearray(log.read_bytes())
    data[frames[1][0] + 70] ^= 0xFF
    log.write_bytes(bytes(data) + b"\x00" * 7)
    done = dump("--files", log)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[3].endswith("isvalid: false") and lines[2].endswith("isvalid: true")
    assert lines[-1] == f"Found 7 invalid bytes at the end of {log.name}"
    bad = bytearray(log.read_bytes())
    bad[frames[2][0] + 8 : frames[2][0] + 12] = (5).to_bytes(4, "big")
    log.write_bytes(bytes(bad))
    done = dump("--files", log)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{log} at position {frames[2][0]}: found record size 5 smaller than minimum record overhead (14)" in done.stderr
    assert done.stdout.count("baseOffset:") == 2


def test_json_output(codecs_log: Path) -> None:
    """--json: one object per line; batches, records, index entries with Kafka's field names."""
    log, index = seg(codecs_log), seg(codecs_log, 0, ".index")
    done = dump("--files", f"{log},{index}", "--print-data-log", "--json")
    assert done.returncode == 0, done.stderr
    objs = [json.loads(line) for line in done.stdout.splitlines()]
    assert objs[0] == {"type": "file", "file": str(log), "kind": "log"}
    kinds = [o["type"] for o in objs]
    assert kinds.count("batch") == 6 and kinds.count("record") == 16 and "index_entry" in kinds
    rec = next(o for o in objs if o["type"] == "record" and o["offset"] == 4)
    assert (rec["key"], rec["payload"], rec["headerKeys"], rec["headers"]) == ("k1", "välue-1", ["h1", "h2"], [["h1", "x"], ["h2", None]])
    batch = next(o for o in objs if o["type"] == "batch" and o["compresscodec"] == "zstd")
    assert (batch["baseOffset"], batch["lastOffset"], batch["isvalid"], batch["deleteHorizonMs"]) == (12, 14, True, None)


def test_checkpoints_and_unknown_files(tmp_path: Path, codecs_log: Path) -> None:
    """The files Kafka does not dump: leader-epoch-checkpoint and the offset checkpoints in
    kafkalog's format; anything else is Kafka's "Ignoring unknown file" on stderr."""
    cp = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(cp, {("orders", 3): 42, ("a", 0): 7})
    epochs = codecs_log / "leader-epoch-checkpoint"
    other = codecs_log / "partition.metadata"
    other.write_text("version: 0\n")
    done = dump("--files", f"{cp},{epochs},{other}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"Dumping {cp}\ntopic: a partition: 0 offset: 7\ntopic: orders partition: 3 offset: 42\n"
        f"Dumping {epochs}\nepoch: 0 startOffset: 0\nDumping {other}\n"
    )
    assert done.stderr == f"Ignoring unknown file {other}\n"


def test_usage_errors_exit_2_and_paths_print_as_java(codecs_log: Path) -> None:
    done = dump("--files", codecs_log / "nope.log")
    assert done.returncode == 2 and "nope.log: no such file" in done.stderr and done.stdout == ""
    assert dump("--max-bytes", "-1", "--files", seg(codecs_log)).returncode == 2
    doubled = f"{codecs_log}//{seg(codecs_log).name}"
    assert dump("--files", doubled).stdout.startswith(f"Dumping {seg(codecs_log)}\n")


def test_read_only_on_a_live_log(tmp_path: Path) -> None:
    """Dumping an open (writable) log's files changes nothing and takes no lock: the writer
    goes on appending, and a .timeindex whose .index is missing is read, not created."""
    path = tmp_path / "live-0"
    with kafkalog.UnifiedLog.open(path) as log:
        log.append([Record(b"k", b"v", (), T0)])
        before = {f.name: (f.stat().st_size, f.stat().st_mtime_ns) for f in path.iterdir()}
        files = ",".join(str(f) for f in sorted(path.iterdir()))
        done = dump("--files", files, "--deep-iteration")
        # the active segment's preallocated indexes: Kafka reads their first (zero) slot as an
        # entry and reports it; kafkalog prints the same but does not count it as damage
        assert done.returncode == 0, done.stderr
        assert "timestamp: 0 offset: 0" in done.stdout
        assert {f.name: (f.stat().st_size, f.stat().st_mtime_ns) for f in path.iterdir()} == before
        log.append([Record(b"k", b"w", (), T0 + 1)])
    lone = tmp_path / "lone-0"
    lone.mkdir()
    (lone / "00000000000000000000.log").write_bytes(seg(path).read_bytes())
    (lone / "00000000000000000000.timeindex").write_bytes(b"")
    assert dump("--files", lone / "00000000000000000000.timeindex").returncode == 0
    assert sorted(p.name for p in lone.iterdir()) == ["00000000000000000000.log", "00000000000000000000.timeindex"]


def test_java_hashmap_order_of_colliding_paths() -> None:
    """Kafka's end-of-dump sections follow a HashMap filled by computeIfAbsent: "Aa" and "BB"
    share Java's hash (2112), and the later key comes first in their bin."""
    m: JavaHashMap[int] = JavaHashMap()
    for k in ("Aa", "BB", "C"):
        m.compute_if_absent(k, int)
    assert [k for k, _ in m.items()] == ["BB", "Aa", "C"]


def test_java_utf8_replacement() -> None:
    """StringDecoder's malformed input: an encoded surrogate is one U+FFFD in Java (three in
    Python's decoder); a truncated three-byte sequence is one."""
    assert java_utf8(b"a\xed\xa0\x80b") == "a\ufffdb"
    assert java_utf8(b"\xe2\x82") == "\ufffd"
    assert java_utf8(b"\xf0\x9f\x98\x80") == "\U0001f600"
