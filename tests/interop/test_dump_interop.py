"""``kafkalog dump`` against Kafka 4.3.1's own DumpLogSegments (kafka-dump-log.sh), line for
line, on the same files with the same options.

The files (``_files``):
- kafkalog-written: the cleaner suite's input (``test_cleaner_interop.write_input``: every
  codec, headers, null and empty keys and values, binary values, follower and empty batches,
  several segments with their ``.index`` / ``.timeindex``), then compacted by kafkalog twice so
  that tombstones carry KIP-534 delete horizons; and a transactional partition (producer
  batches, COMMIT and ABORT markers, an aborted transaction's ``.txnindex``, a producer-state
  ``.snapshot``, the ``leader-epoch-checkpoint``);
- Kafka-written: copies of the same two partitions compacted by Kafka's own cleaner
  (``KafkaCleanerDriver``, kafka-storage's Cleaner), which writes the cleaned segments, their
  indexes and ``.txnindex`` itself, with the horizons Kafka stamps.

Every option set runs both tools once over every file of the four directories (so Kafka's
end-of-dump sections, ordered by Java's HashMap over paths, are compared across files too), and
stdout and stderr must be equal byte for byte (Kafka's stderr without the JVM's and SLF4J's
start-up notices). Java prints with ``-Dsun.stdout.encoding=UTF-8`` so that StringDecoder's
text is compared as text. A few damaged copies (a flipped byte, a torn tail, an index entry
that points at the wrong batch, a time index out of order) check the problem sections.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import kafkalog
import pytest
from kafkalog import Record
from kafkalog.batches import build
from kit.files import copy_partition
from kit.kafka_harness import TOOL_JVM_OPTS, KafkaJars
from test_cleaner_interop import BASE_TS, NOW1, TOPIC_CONFIG, kafka_clean, kafkalog_clean, write_input

KAFKALOG = Path(sys.executable).with_name("kafkalog")
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
UTF8_JVM_OPTS = [*TOOL_JVM_OPTS, "-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8", "-Dfile.encoding=UTF-8"]
MAP_BYTES = 1 << 20
OPTION_SETS = [
    [],
    ["--deep-iteration"],
    ["--print-data-log"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--verify-index-only"],
    ["--index-sanity-check"],
    ["--max-bytes", "20000", "--deep-iteration"],
]


def kafka_dump(jars: KafkaJars, files: list[Path], options: list[str]) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(
        ["java", *UTF8_JVM_OPTS, "-cp", jars.classpath, DUMP_LOG_SEGMENTS, "--files", ",".join(map(str, files)), *options],
        capture_output=True, timeout=600, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    err = b"".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith((b"SLF4J", b"WARNING", b"Picked up")))
    return proc.returncode, proc.stdout, err


def kafkalog_dump(files: list[Path], options: list[str]) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(
        [str(KAFKALOG), "dump", "--files", ",".join(map(str, files)), *options], capture_output=True, timeout=600, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


def write_transactions(path: Path) -> None:
    """Keyed records of two transactional producers (one commits, one aborts, across a roll),
    an idempotent producer, all five codecs, markers with coordinator epochs."""
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        ts = BASE_TS
        seq = {1000: 0, 2000: 0, 3000: 0}
        for step, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"] * 3):
            for pid in (1000, 2000, 3000):
                recs = [Record(b"k%d" % ((step * 7 + i) % 11), b"v%d-%d" % (pid, i), (("p", b"%d" % pid),), ts + i) for i in range(3)]
                log.append_as_follower(build(log.log_end_offset, recs, compression=codec, producer_id=pid, producer_epoch=0,
                                             base_sequence=seq[pid], transactional=pid != 3000, partition_leader_epoch=0))  # fmt: skip
                seq[pid] += 3
                ts += 10
            if step % 4 == 3:
                log.append_txn_marker(1000, 0, True, coordinator_epoch=step)
                log.append_txn_marker(2000, 0, False, coordinator_epoch=step)
            if step == 7:
                log.roll()
        log.append_as_follower(log_append_time(build(log.log_end_offset, [Record(b"lat", b"x", (), ts), Record(None, b"y", (), ts + 1)], compression="lz4"), ts + 500))
        log.append_txn_marker(1000, 0, True, coordinator_epoch=99)
        log.append_txn_marker(2000, 0, False, coordinator_epoch=99)
        log.roll()
        log.append([Record(b"k1", b"last", (), ts)])


def log_append_time(batch: bytes, max_timestamp: int) -> bytes:
    """``batch`` (one v2 batch) turned into a LogAppendTime batch stamped ``max_timestamp``, as
    a broker with message.timestamp.type=LogAppendTime writes it."""
    raw = bytearray(batch)
    raw[22] |= 0x08  # attributes (bytes 21-22): the timestamp type bit
    raw[35:43] = max_timestamp.to_bytes(8, "big")
    raw[17:21] = kafkalog._native.dump_crc32c(bytes(raw), 21, len(raw)).to_bytes(4, "big")
    return bytes(raw)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory, kafka_jars: KafkaJars) -> list[Path]:
    root = tmp_path_factory.mktemp("dump")
    kl = root / "kafkalog" / "topic-0"
    kl.parent.mkdir()
    write_input(kl, seed=16)
    txn = root / "kafkalog" / "txn-0"
    write_transactions(txn)
    kafka_copy = copy_partition(kl, root / "kafka" / "topic-0")
    kafka_txn = copy_partition(txn, root / "kafka" / "txn-0")
    for d in (kl, txn):
        kafkalog_clean(d, NOW1, MAP_BYTES)
        kafkalog_clean(d, NOW1 + 1, MAP_BYTES)  # a second pass leaves the horizons as they are
    for d in (kafka_copy, kafka_txn):
        kafka_clean(kafka_jars, d, NOW1, MAP_BYTES, read=False)
    return [kl, txn, kafka_copy, kafka_txn]


def _files(dirs: list[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
            out += sorted(d.glob(f"*{suffix}"))
    return out


def assert_same(jars: KafkaJars, files: list[Path], options: list[str]) -> tuple[bytes, bytes]:
    """Both tools print the same stdout and stderr; where Kafka fails with an exception (exit 1,
    a stack trace), kafkalog prints the same stdout up to there and exits 1 with the
    exception's message in its one-line error."""
    k_rc, k_out, k_err = kafka_dump(jars, files, options)
    l_rc, l_out, l_err = kafkalog_dump(files, options)
    k_lines, l_lines = k_out.split(b"\n"), l_out.split(b"\n")
    for i, (a, b) in enumerate(zip(k_lines, l_lines)):
        if a != b:
            at = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            pytest.fail(f"{options}: stdout line {i} differs at byte {at}:\nkafka:    {a[max(0, at - 12) : at + 30]!r}\nkafkalog: {b[max(0, at - 12) : at + 30]!r}")
    assert len(k_lines) == len(l_lines), f"{options}: {len(k_lines)} lines from Kafka, {len(l_lines)} from kafkalog"
    if k_rc != 0:
        first = k_err.decode().splitlines()[0]
        assert first.startswith('Exception in thread "main" '), k_err.decode()[:3000]
        message = first.split(": ", 1)[1]
        assert l_rc == 1 and message in l_err.decode() and b"Traceback" not in l_err, (first, l_err.decode())
        return l_out, l_err
    assert l_err == k_err, f"{options}: stderr differs:\nkafka:\n{k_err.decode()[:3000]}\nkafkalog:\n{l_err.decode()[:3000]}"
    assert l_rc in (0, 1)
    return l_out, l_err


def test_the_files_cover_what_the_dump_must_print(dirs: list[Path]) -> None:
    """The set-up holds every kind of file and batch the comparisons are meant to cover."""
    files = _files(dirs)
    assert {f.suffix for f in files} == {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}
    assert any(f.stat().st_size for f in files if f.suffix == ".txnindex")
    out = subprocess.run([str(KAFKALOG), "dump", "--files", ",".join(str(f) for f in files if f.suffix == ".log"), "--deep-iteration"],
                         capture_output=True, check=True).stdout.decode()  # fmt: skip
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in out
    for needle in ("LogAppendTime: ", "deleteHorizonMs: OptionalLong[", "isTransactional: true", "endTxnMarker: ABORT", "endTxnMarker: COMMIT", "headerKeys: [h,,null]"):
        assert needle in out, needle


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "shallow")
def test_dump_matches_kafka_dump_log_segments(dirs: list[Path], kafka_jars: KafkaJars, options: list[str]) -> None:
    assert_same(kafka_jars, _files(dirs), options)


def test_damaged_files_print_the_same_problems(dirs: list[Path], kafka_jars: KafkaJars, tmp_path: Path) -> None:
    """A CRC failure (isvalid: false), a torn tail, an offset index entry pointing at the wrong
    batch and a time index whose entries go backwards: the same lines and sections as Kafka."""
    damaged = copy_partition(dirs[0], tmp_path / "damaged-0")
    logs = sorted(damaged.glob("*.log"))
    first, second = logs[0], logs[1]
    data = bytearray(first.read_bytes())
    data[200] ^= 0x5A  # inside the first batch's records: its CRC fails, its records may still decode
    first.write_bytes(bytes(data))
    with open(second, "ab") as f:
        f.write(b"\x00" * 9)  # a torn tail of 9 bytes
    index = max(damaged.glob("*.index"), key=lambda f: f.stat().st_size)
    raw = bytearray(index.read_bytes())
    assert len(raw) >= 16, "test set-up: an offset index of two entries or more"
    raw[12:16] = raw[4:8]  # the second entry points at the first's batch, which ends before it
    index.write_bytes(bytes(raw))
    tindex = max(damaged.glob("*.timeindex"), key=lambda f: f.stat().st_size)
    traw = tindex.read_bytes()
    assert len(traw) >= 24, "test set-up: a time index of two entries or more"
    tindex.write_bytes(traw[12:24] + traw[0:12] + traw[24:])  # the first two entries swapped
    snapshots = sorted(dirs[1].glob("*.snapshot"))
    bad_crc = damaged / snapshots[0].name
    good = snapshots[0].read_bytes()
    assert len(good) > 10, "test set-up: a snapshot with producers"
    bad_crc.write_bytes(good[:-1] + bytes([good[-1] ^ 0x5A]))  # the CRC no longer matches
    bad_version = damaged / ("9" + snapshots[0].name[1:])
    bad_version.write_bytes(b"\x00\x07" + snapshots[0].read_bytes()[2:])  # an unknown version
    files = _files([damaged])
    out, err = assert_same(kafka_jars, files, [])
    assert b"Snapshot is corrupt (CRC is no longer valid)" in err and b"unknown file version 7" in err, err.decode()
    assert b"isvalid: false" in out and b"invalid bytes at the end of" in out
    _, err = assert_same(kafka_jars, files, ["--verify-index-only"])
    assert b"Mismatches in :" in err and b"Found out of order timestamp in :" in err, err.decode()
    rc = subprocess.run([str(KAFKALOG), "dump", "--files", ",".join(map(str, files))], capture_output=True).returncode
    assert rc == 1, "damage found: exit code 1"


def test_paths_print_as_java_prints_them(dirs: list[Path], kafka_jars: KafkaJars) -> None:
    """A relative path with a doubled separator prints as java.io.File prints it."""
    log = sorted(dirs[0].glob("*.log"))[0]
    rel = Path(os.path.relpath(log.parent, Path.cwd()))
    weird = Path(str(rel) + "//" + log.name)
    assert_same(kafka_jars, [weird], [])


def test_unknown_and_checkpoint_files(dirs: list[Path], kafka_jars: KafkaJars, tmp_path: Path) -> None:
    """Kafka ignores leader-epoch-checkpoint (a name without a suffix it knows) on stderr; kafkalog
    prints its entries instead; a .deleted file is ignored by both alike."""
    deleted = tmp_path / "00000000000000000000.log.deleted"
    shutil.copy(sorted(dirs[0].glob("*.log"))[0], deleted)
    assert_same(kafka_jars, [deleted], [])
    epochs = dirs[1] / "leader-epoch-checkpoint"
    done = subprocess.run([str(KAFKALOG), "dump", "--files", str(epochs)], capture_output=True, text=True, check=True)
    assert done.stdout == f"Dumping {epochs}\nepoch: 0 startOffset: 0\n"


def test_a_live_log_with_preallocated_indexes(kafka_jars: KafkaJars, tmp_path: Path) -> None:
    """Dumped while a writer holds it open: the active segment's .index and .timeindex are
    preallocated (zero-filled), and Kafka reads their first slot as an entry."""
    path = tmp_path / "live-0"
    with kafkalog.UnifiedLog.open(path, {"index.interval.bytes": "100"}) as log:
        for i in range(20):
            log.append([Record(b"k%d" % i, b"v" * 50, (), BASE_TS + i), Record(None, b"w", (), BASE_TS + i)], compression="lz4")
        files = sorted(f for f in path.iterdir() if f.suffix in (".log", ".index", ".timeindex"))
        for options in ([], ["--deep-iteration"], ["--verify-index-only"], ["--index-sanity-check"]):
            assert_same(kafka_jars, files, options)
