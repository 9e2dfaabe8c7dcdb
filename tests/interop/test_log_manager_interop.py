"""kafkalog.LogManager and a real Kafka 4.3.1 broker take turns on the same log dir.

What a broker's LogManager keeps at the top of a log dir must pass between the two unchanged:
``meta.properties`` (cluster.id, node.id, directory.id), ``.kafka_cleanshutdown``, the
recovery-point and log-start-offset checkpoints and the ``.lock`` file.

1. Kafka reads what kafkalog wrote. kafkalog formats the data dir (its meta.properties carries
   the broker's cluster id and node id and a directory.id), kafka-storage formats only the
   separate metadata dir. The broker creates a topic (so its metadata holds the topic id) and
   produces to one partition; then kafkalog appends to that partition and creates the other
   partitions from scratch with the broker's topic id, and closes cleanly. The restarted broker
   must skip recovery ("... since clean shutdown file was found"), say nothing about the
   checkpoints or meta.properties, and serve every record. Then a kafkalog process is SIGKILLed
   after a flush: the broker must recover ("... since no clean shutdown file was found") and
   serve every flushed record.
2. kafkalog reads what Kafka wrote. A cleanly stopped broker's dir opens without recovery,
   recovery points equal to the broker's checkpoint and every record readable; after kafkalog's
   clean close the broker skips recovery and serves the same records, meta.properties
   untouched. A SIGKILLed broker's dir is recovered by kafkalog with every acks=all record.
3. The ``.lock``: a running broker keeps kafkalog out (LogDirLockedError) and a kafkalog
   LogManager keeps a broker from starting ("Failed to acquire lock on file .lock in ...").
"""

from __future__ import annotations

import json
import pickle
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record, checkpoints
from kafkalog.exceptions import LogDirLockedError
from kit import kafka_harness
from kit.kafka_harness import (
    HANG_GUARD_S,
    LOG4J2_CONFIG,
    TOOL_JVM_OPTS,
    HarnessError,
    KafkaBroker,
    _kafka,
    create_topic,
    produce_records,
)
from kit.records import RecordRow, expected_rows, record_row

# Small segments on both sides (internal.segment.bytes is Kafka's testing-only override, which
# kafkalog honours too), so a few hundred KB span several segments.
TOPIC_CONFIG = {"segment.bytes": str(1 << 20), "internal.segment.bytes": "32768", "index.interval.bytes": "1024"}
KAFKALOG_LOG_START = 123  # kafkalog's DeleteRecords on partition 1 of test 1
KAFKA_LOG_START = 250  # the broker's DeleteRecords on partition 0 of test 2
KAFKALOG_TOPIC_CONFIG = {"internal.segment.bytes": "32768", "index.interval.bytes": "1024"}

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint")

# Kafka's own start-up race, whatever the log dir holds: with log.initial.task.delay.ms=0 (the
# harness's setting) the first kafka-log-retention run can start before LogManager.startup has
# created the LogCleaner (so it pauses nothing) and end after (so it resumes partitions that are
# not paused): "Uncaught exception in scheduled task 'kafka-log-retention'" followed by this.
KAFKA_STARTUP_RACE = re.compile(
    r"^java\.lang\.IllegalStateException: Compaction for partition \S+ cannot be resumed since it is not paused\.$"
)

# Loggers whose warnings and errors concern the log dirs.
STORAGE_LOGGERS = (
    "kafka.log.",
    "org.apache.kafka.storage.",
    "kafka.cluster.Partition",
    "kafka.server.ReplicaManager",
    "kafka.server.KafkaRaftServer",
    "org.apache.kafka.metadata.properties.",
    "state.change.logger",
)

# Broker log lines (any level) that mean the broker did not take a log dir file as kafkalog (or Kafka) left it.
COMPLAINTS = [
    "Error occurred while reading recovery-point-offset-checkpoint",
    "Error occurred while reading log-start-offset-checkpoint",
    "Error while reading meta.properties",
    "Rewriting ",  # meta.properties without a usable directory.id
    "Could not find offset index file",
    "Found a corrupted index file",
    "Corruption found in segment",
    "Deleting all segments because logEndOffset",
    "marked stray",
    "Loaded stray log",
    "Error while loading log dir",
    "Disk error while",
    "Uncaught exception in scheduled task",
    "Fatal error",
]


# -- helpers ----------------------------------------------------------------------------------------


def mixed_records(n: int, seed: int) -> list[Record]:
    """Text and binary values, null and empty keys, tombstones, headers (with null and empty
    values, repeated keys), out-of-order CreateTime timestamps within the last day."""
    rng = random.Random(seed)
    base_ts = int(time.time() * 1000) - 86_400_000
    out = []
    for i in range(n):
        key: bytes | None = None if i % 7 == 3 else f"key-{seed}-{i % 53}".encode()
        if i % 23 == 5:
            key = b""
        value: bytes | None
        if i % 11 == 4:
            value = None
            if key is None:  # kafka-python refuses a record with neither key nor value
                key = b"tombstone"
        elif i % 3 == 1:
            value = rng.randbytes(rng.randrange(1, 900))
        else:
            value = (f"value {seed}/{i} " * rng.randrange(1, 40)).encode()
        headers: tuple[tuple[str, bytes | None], ...]
        if i % 4 == 0:
            headers = ()
        elif i % 4 == 1:
            headers = (("h", str(i).encode()),)
        else:
            headers = (("trace-id", rng.randbytes(8)), ("null-value", None), ("empty", b""), ("h", b"1"), ("h", b"2"))
        ts = base_ts + i * 3 - (3_600_000 if i % 13 == 0 else 0)
        out.append(Record(key, value, headers, ts))
    return out


def kafkalog_rows(log: kafkalog.UnifiedLog) -> list[RecordRow]:
    return [record_row(r) for r in log.records()]


def append_in_chunks(log: kafkalog.UnifiedLog, records: list[Record], codec: str, leader_epoch: int) -> None:
    rng = random.Random(len(records))
    i = 0
    while i < len(records):
        n = rng.randrange(1, 50)
        log.append(records[i : i + n], compression=codec, leader_epoch=leader_epoch, batch_size=rng.choice([2048, 16384]))
        i += n


def consume(broker: KafkaBroker, topic: str, partition: int) -> list[tuple]:
    """Every record of the partition up to its end offset (the harness's consumer)."""
    return kafka_harness.consume_all(broker, topic, partition=partition)


def delete_records(broker: KafkaBroker, topic: str, partition: int, offset: int) -> None:
    """The broker's DeleteRecords: raises the partition's log start offset to ``offset``."""
    k = _kafka()
    admin = k.KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.delete_records({k.TopicPartition(topic, partition): offset}, timeout_ms=30000)
    finally:
        admin.close()


class LogWatch:
    """The part of a broker's server.log written since the watch was made (the file appender
    appends across restarts)."""

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker
        self.mark = broker.server_log.stat().st_size if broker.server_log.exists() else 0

    def text(self) -> str:
        with open(self.broker.server_log, "rb") as f:
            f.seek(self.mark)
            return f.read().decode(errors="replace")

    def complaints(self) -> list[str]:
        """COMPLAINTS lines, and every WARN or ERROR line of the loggers that load and serve
        logs (LogManager, LogLoader, UnifiedLog, Partition, ReplicaManager, meta.properties)."""
        out = []
        lines = self.text().splitlines()
        for i, line in enumerate(lines):
            if i + 1 < len(lines) and KAFKA_STARTUP_RACE.search(lines[i + 1]):
                continue
            m = re.match(r"\[[^]]*\] (WARN|ERROR) .* \(([\w.$]+)\)$", line)
            if any(c in line for c in COMPLAINTS) or (m and m.group(2).startswith(STORAGE_LOGGERS)):
                out.append(line)
        return out


def start_broker(broker: KafkaBroker) -> str:
    """Starts the broker; returns what it logged while starting. Fails the test on any line of
    COMPLAINTS."""
    watch = LogWatch(broker)
    broker.start()
    text = watch.text()
    assert watch.complaints() == [], "the broker complained about the log dir:\n" + "\n".join(watch.complaints())
    return text


def recovery_line(text: str, log_dir: Path) -> str:
    lines = [
        line
        for line in text.splitlines()
        if f"logs from {log_dir} since" in line or f"No logs found to be loaded in {log_dir}" in line
    ]
    assert len(lines) == 1, f"expected one load line for {log_dir}, got {lines}"
    return lines[0]


def loaded_line(text: str) -> str:
    """LogManager's "Loaded N logs in Xms[ (unclean log dirs = ...)]", the time masked."""
    found = re.findall(r"INFO (Loaded \d+ logs in \d+ms.*) \(kafka\.log\.LogManager\)$", text, re.MULTILINE)
    assert len(found) == 1, f"expected one 'Loaded N logs' line, got {found}"
    return re.sub(r"in \d+ms", "in <ms>ms", found[0])


def skipped_recovery(n: int, log_dir: Path) -> str:
    return f"Skipping recovery of {n} logs from {log_dir} since clean shutdown file was found"


def recovering(n: int, log_dir: Path) -> str:
    return f"Recovering {n} logs from {log_dir} since no clean shutdown file was found"


def format_metadata_dir_only(broker: KafkaBroker) -> subprocess.CompletedProcess[str]:
    """kafka-storage format --ignore-formatted: writes server.properties as the harness does and
    formats every dir of the broker that has no meta.properties yet (here: the separate
    metadata.log.dir); an already formatted dir (kafkalog's data dir) is checked against the
    cluster id and node id and left alone."""
    broker.work_dir.mkdir(parents=True, exist_ok=True)
    broker.properties_file.write_text("".join(f"{k}={v}\n" for k, v in broker.properties().items()))
    (broker.work_dir / "log4j2.properties").write_text(LOG4J2_CONFIG.format(log_file=broker.server_log))
    return broker.jars.java(
        "kafka.tools.StorageTool",
        "format",
        "-t",
        broker.cluster_id,
        "-c",
        str(broker.properties_file),
        "--standalone",
        "--ignore-formatted",
        jvm_opts=[*TOOL_JVM_OPTS, f"-Dlog4j2.configurationFile={broker.work_dir / 'log4j2.properties'}"],
    )


def topic_id_of(partition_dir: Path) -> str:
    return (partition_dir / "partition.metadata").read_text().split("topic_id:")[1].strip()


def latest_leader_epoch(partition_dir: Path) -> int:
    epochs = checkpoints.read_leader_epoch_checkpoint(partition_dir / "leader-epoch-checkpoint")
    return epochs[-1][0] if epochs else 0


def manager_config(broker: KafkaBroker) -> dict[str, str]:
    return {"node.id": broker.properties()["node.id"], "cluster.id": broker.cluster_id}


# A kafkalog process that appends, flushes and then waits to be SIGKILLed.
KAFKALOG_WRITER = r"""
import json, pickle, sys
import kafkalog
from kafkalog import Record

args = json.loads(sys.argv[1])
with open(args["records"], "rb") as f:
    appends = pickle.load(f)
m = kafkalog.LogManager([args["dir"]], args["config"], topic_configs={args["topic"]: args["topic_config"]}, scheduler=False)
summary = m.load_summary()[0]
ends = {}
for partition, codec, rows in appends:
    log = m.get_log(args["topic"], partition)
    for i in range(0, len(rows), 20):
        log.append([Record(*r) for r in rows[i : i + 20]], compression=codec, leader_epoch=args["leader_epoch"])
    ends[partition] = log.log_end_offset
m.flush()
print(json.dumps({"had_clean_shutdown": summary.had_clean_shutdown, "ends": ends}), flush=True)
sys.stdin.read()  # blocks until the parent's SIGKILL (stdin is a pipe the parent keeps open)
"""


def kafkalog_append_flush_and_sigkill(
    tmp: Path, broker: KafkaBroker, topic: str, appends: list[tuple[int, str, list[Record]]], leader_epoch: int
) -> dict:
    """Runs KAFKALOG_WRITER in a child process, waits for its flush, SIGKILLs it."""
    records_file = tmp / "appends.pickle"
    with open(records_file, "wb") as f:
        pickle.dump([(p, codec, [(r.key, r.value, r.headers, r.timestamp) for r in rs]) for p, codec, rs in appends], f)
    args = {
        "dir": str(broker.log_dir),
        "config": manager_config(broker),
        "topic": topic,
        "topic_config": KAFKALOG_TOPIC_CONFIG,
        "records": str(records_file),
        "leader_epoch": leader_epoch,
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", KAFKALOG_WRITER, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], HANG_GUARD_S)
        assert ready, f"the kafkalog writer printed nothing within {HANG_GUARD_S}s"
        line = proc.stdout.readline()
        if not line:
            proc.wait(HANG_GUARD_S)
            raise AssertionError(f"kafkalog writer exited with {proc.returncode}:\n{proc.stderr.read() if proc.stderr else ''}")
        report: dict = json.loads(line)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(HANG_GUARD_S)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
    assert proc.returncode == -signal.SIGKILL
    return report


# -- 1. Kafka reads what kafkalog wrote --------------------------------------------------------------


def test_kafka_starts_on_log_dir_kafkalog_wrote(kafka_broker, tmp_path):
    broker: KafkaBroker = kafka_broker(start=False)
    broker.overrides["metadata.log.dir"] = str(broker.work_dir / "metadata")
    data = broker.log_dir
    topic = "lm-written"

    # kafkalog formats the data dir: meta.properties with the broker's cluster id and node id.
    with kafkalog.LogManager([data], manager_config(broker), scheduler=False) as m:
        (info,) = m.log_dirs()
        assert info.online and info.directory_id
        assert m.load_summary()[0].logs_loaded == 0
    meta_bytes = (data / "meta.properties").read_bytes()
    meta = checkpoints.read_meta_properties(data / "meta.properties")
    assert meta == {
        "version": "1",
        "cluster.id": broker.cluster_id,
        "node.id": "1",
        "directory.id": info.directory_id,
    }
    assert not (data / ".lock").exists(), "kafkalog's close should delete .lock, as Kafka's does"

    # kafka-storage format checks kafkalog's meta.properties (cluster id, node id, directory id)
    # and formats only the metadata dir.
    fmt = format_metadata_dir_only(broker)
    assert fmt.returncode == 0, f"kafka-storage format rejected kafkalog's data dir:\n{fmt.stdout}\n{fmt.stderr}"
    assert (data / "meta.properties").read_bytes() == meta_bytes
    assert (broker.work_dir / "metadata" / "meta.properties").is_file()

    text = start_broker(broker)
    assert recovery_line(text, data).endswith(f"No logs found to be loaded in {data} (kafka.log.LogManager)")
    create_topic(broker, topic, TOPIC_CONFIG, partitions=3)
    kafka_written = mixed_records(300, seed=1)
    produce_records(broker, topic, kafka_written, "snappy", partition=0)
    expected = {0: consume(broker, topic, 0), 1: [], 2: []}
    assert len(expected[0]) == 300
    assert broker.stop() in (0, 143), broker.log_tail()

    topic_id = topic_id_of(broker.partition_dir(topic, 0))
    epoch = latest_leader_epoch(broker.partition_dir(topic, 0))
    # Partitions 1 and 2 are empty; kafkalog recreates them from scratch with the broker's topic id.
    for p in (1, 2):
        assert not any(f.stat().st_size for f in broker.partition_dir(topic, p).glob("*.log"))
        for f in broker.partition_dir(topic, p).iterdir():
            f.unlink()
        broker.partition_dir(topic, p).rmdir()

    with kafkalog.LogManager(
        [data], manager_config(broker), topic_configs={topic: KAFKALOG_TOPIC_CONFIG}, scheduler=False
    ) as m:
        (summary,) = m.load_summary()
        assert summary.had_clean_shutdown and summary.logs_loaded == 1 and summary.segments_recovered == 0
        for p, n, codec in ((0, 400, "lz4"), (1, 700, "zstd"), (2, 500, "gzip")):
            log = m.create_log(topic, p, topic_id=topic_id)
            assert log.topic_id == topic_id
            start = log.log_end_offset
            assert start == len(expected[p])
            records = mixed_records(n, seed=10 + p)
            append_in_chunks(log, records, codec, epoch)
            expected[p] = expected[p] + expected_rows(records, start)
            assert len(log.segments) > 2, "test set-up: several segments"
            assert kafkalog_rows(log) == expected[p]
        ends = {(topic, p): len(rows) for p, rows in expected.items()}
        # A log start offset inside a segment: only log-start-offset-checkpoint carries it to Kafka.
        log1 = m.get_log(topic, 1)
        assert log1 is not None
        assert log1.delete_records(KAFKALOG_LOG_START) == KAFKALOG_LOG_START
        assert log1.segments[0].base_offset < KAFKALOG_LOG_START
        expected[1] = expected[1][KAFKALOG_LOG_START:]

    # What kafkalog's clean close left: Kafka's marker and checkpoints, meta.properties as it was.
    assert (data / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert checkpoints.read_offset_checkpoint(data / "recovery-point-offset-checkpoint") == ends
    assert checkpoints.read_offset_checkpoint(data / "log-start-offset-checkpoint") == {(topic, 1): KAFKALOG_LOG_START}
    assert checkpoints.read_offset_checkpoint(data / "replication-offset-checkpoint") == ends
    assert (data / "meta.properties").read_bytes() == meta_bytes

    text = start_broker(broker)
    assert recovery_line(text, data).endswith(skipped_recovery(3, data) + " (kafka.log.LogManager)")
    assert loaded_line(text) == "Loaded 3 logs in <ms>ms"
    assert "logStartOffset=%d, logEndOffset=%d)" % (KAFKALOG_LOG_START, ends[(topic, 1)]) in text
    for p, rows in expected.items():
        assert consume(broker, topic, p) == rows, f"partition {p}: the broker serves other records than kafkalog wrote"
    assert broker.stop() in (0, 143), broker.log_tail()
    assert (data / "meta.properties").read_bytes() == meta_bytes, "the broker rewrote kafkalog's meta.properties"

    # Unclean: a kafkalog process appends, flushes and is SIGKILLed; no marker is left.
    appends = [(p, codec, mixed_records(150 + 50 * p, seed=20 + p)) for p, codec in ((0, "none"), (1, "snappy"), (2, "zstd"))]
    report = kafkalog_append_flush_and_sigkill(tmp_path, broker, topic, appends, latest_leader_epoch(broker.partition_dir(topic, 0)))
    assert report["had_clean_shutdown"] is True
    for p, _, records in appends:
        expected[p] = expected[p] + expected_rows(records, ends[(topic, p)])
        ends[(topic, p)] += len(records)
        assert report["ends"][str(p)] == ends[(topic, p)]
    assert not (data / ".kafka_cleanshutdown").exists(), "kafkalog takes the marker at start-up, as Kafka does"
    assert (data / ".lock").exists(), "test set-up: the killed process leaves its (released) .lock behind"

    text = start_broker(broker)
    assert recovery_line(text, data).endswith(recovering(3, data) + " (kafka.log.LogManager)")
    assert loaded_line(text) == f"Loaded 3 logs in <ms>ms (unclean log dirs = ArrayBuffer({data}))"
    recovered = re.findall(rf"\[LogLoader partition={topic}-(\d), dir={re.escape(str(data))}\] Recovering unflushed segment", text)
    assert sorted(set(recovered)) == ["0", "1", "2"], "Kafka should recover the segments kafkalog appended to"
    for p, rows in expected.items():
        assert consume(broker, topic, p) == rows, f"partition {p}: flushed records lost after kafkalog was killed"
    assert broker.stop() in (0, 143), broker.log_tail()


# -- 2. kafkalog reads what Kafka wrote --------------------------------------------------------------


def file_contents(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_kafkalog_opens_log_dir_kafka_wrote(kafka_broker):
    broker: KafkaBroker = kafka_broker()  # metadata log in the data dir, as `kafka-storage format` sets it up
    data = broker.log_dir
    topic = "lm-kafka"
    create_topic(broker, topic, TOPIC_CONFIG, partitions=2)
    for p, codec in ((0, "zstd"), (1, "none")):
        produce_records(broker, topic, mixed_records(600 + 200 * p, seed=30 + p), codec, partition=p)
    delete_records(broker, topic, 0, KAFKA_LOG_START)
    expected = {p: consume(broker, topic, p) for p in (0, 1)}
    assert [(rows[0][0], len(rows)) for rows in expected.values()] == [(KAFKA_LOG_START, 600 - KAFKA_LOG_START), (0, 800)]
    assert broker.stop() in (0, 143), broker.log_tail()

    meta_bytes = (data / "meta.properties").read_bytes()
    meta = checkpoints.read_meta_properties(data / "meta.properties")
    kafka_recovery = checkpoints.read_offset_checkpoint(data / "recovery-point-offset-checkpoint")
    assert kafka_recovery == {(topic, 0): 600, (topic, 1): 800}
    kafka_log_start = checkpoints.read_offset_checkpoint(data / "log-start-offset-checkpoint")
    first_base = min(int(f.name.split(".")[0]) for f in broker.partition_dir(topic, 0).glob("*.log"))
    # (Kafka's retention may have deleted the segments below the new start already; Kafka lists
    # a start offset only when it lies past the first segment's base offset.)
    assert kafka_log_start == ({(topic, 0): KAFKA_LOG_START} if first_base < KAFKA_LOG_START else {})
    kafka_hw = checkpoints.read_offset_checkpoint(data / "replication-offset-checkpoint")
    assert kafka_hw == kafka_recovery
    # Files kafkalog must leave byte for byte (the checkpoints and the marker it rewrites).
    rewritten = OFFSET_CHECKPOINTS + (".kafka_cleanshutdown",)
    untouched = {n: b for n, b in file_contents(data).items() if n not in rewritten}
    assert set(untouched) == {"meta.properties", "bootstrap.checkpoint", "cleaner-offset-checkpoint"}
    metadata_log = file_contents(data / "__cluster_metadata-0")
    topic_id = topic_id_of(broker.partition_dir(topic, 0))
    kafka_marker = (data / ".kafka_cleanshutdown").read_bytes()
    broker_epoch = checkpoints.read_clean_shutdown(data / ".kafka_cleanshutdown")
    assert broker_epoch > 0

    with kafkalog.LogManager(
        [data], manager_config(broker), topic_configs={topic: KAFKALOG_TOPIC_CONFIG}, scheduler=False
    ) as m:
        (summary,) = m.load_summary()
        assert summary.error is None
        assert summary.had_clean_shutdown is True
        assert summary.logs_loaded == 2, "kafkalog should load the topic's partitions and skip __cluster_metadata-0"
        assert summary.segments_recovered == 0 and summary.bytes_truncated == 0
        (info,) = m.log_dirs()
        assert info.online and info.directory_id == meta["directory.id"]
        assert [(log.topic, log.partition) for log in m.logs()] == [(topic, 0), (topic, 1)]
        for log in m.logs():
            assert log.topic_id == topic_id
            assert log.recovery_point == kafka_recovery[(topic, log.partition)]
            assert log.log_start_offset == expected[log.partition][0][0]
            assert log.log_end_offset == expected[log.partition][-1][0] + 1
            assert len(log.segments) > 2, "test set-up: the broker should have rolled several segments"
            assert kafkalog_rows(log) == expected[log.partition]
        m.close(broker_epoch)

    # kafkalog left Kafka's meta.properties and the files it does not own byte for byte, wrote
    # the checkpoints Kafka wrote (same entries) and a clean shutdown marker.
    after = file_contents(data)
    assert {n: after.get(n) for n in untouched} == untouched
    assert checkpoints.read_offset_checkpoint(data / "recovery-point-offset-checkpoint") == kafka_recovery
    assert checkpoints.read_offset_checkpoint(data / "replication-offset-checkpoint") == kafka_hw
    assert checkpoints.read_offset_checkpoint(data / "log-start-offset-checkpoint") == kafka_log_start
    assert (data / ".kafka_cleanshutdown").read_bytes() == kafka_marker, "kafkalog's marker differs from Kafka's"
    assert file_contents(data / "__cluster_metadata-0") == metadata_log, "kafkalog touched the metadata log"
    assert not (data / ".lock").exists()

    text = start_broker(broker)
    assert recovery_line(text, data).endswith(skipped_recovery(2, data) + " (kafka.log.LogManager)")
    assert loaded_line(text) == "Loaded 2 logs in <ms>ms"
    for p, rows in expected.items():
        assert consume(broker, topic, p) == rows

    # SIGKILL after acks=all produce: kafkalog recovers and keeps every acknowledged record.
    for p, codec in ((0, "gzip"), (1, "lz4")):
        produce_records(broker, topic, mixed_records(300, seed=40 + p), codec, partition=p)
    expected = {p: consume(broker, topic, p) for p in (0, 1)}
    assert [(rows[0][0], rows[-1][0]) for rows in expected.values()] == [(KAFKA_LOG_START, 899), (0, 1099)]
    broker.kill()
    assert not (data / ".kafka_cleanshutdown").exists()

    with kafkalog.LogManager(
        [data], manager_config(broker), topic_configs={topic: KAFKALOG_TOPIC_CONFIG}, scheduler=False
    ) as m:
        (summary,) = m.load_summary()
        assert summary.error is None
        assert summary.had_clean_shutdown is False
        assert summary.logs_loaded == 2
        assert summary.segments_recovered >= 2, "the segments past each recovery point are recovered"
        assert summary.bytes_truncated == 0
        for log in m.logs():
            assert log.log_start_offset == expected[log.partition][0][0]
            assert log.log_end_offset == expected[log.partition][-1][0] + 1
            assert kafkalog_rows(log) == expected[log.partition], f"partition {log.partition}: acknowledged records lost"
    assert (data / "meta.properties").read_bytes() == meta_bytes

    text = start_broker(broker)
    assert recovery_line(text, data).endswith(skipped_recovery(2, data) + " (kafka.log.LogManager)")
    for p, rows in expected.items():
        assert consume(broker, topic, p) == rows
    assert broker.stop() in (0, 143), broker.log_tail()
    assert (data / "meta.properties").read_bytes() == meta_bytes


# -- 3. the .lock ------------------------------------------------------------------------------------


def test_lock_excludes_kafka_and_kafkalog(kafka_broker):
    broker: KafkaBroker = kafka_broker()
    data = broker.log_dir
    assert (data / ".lock").exists()

    # Kafka holds .lock with FileChannel.tryLock (fcntl F_SETLK); kafkalog's OFD lock conflicts.
    with pytest.raises(LogDirLockedError, match=re.escape(str(data / ".lock"))):
        kafkalog.LogManager([data], manager_config(broker), scheduler=False)
    assert (data / ".lock").exists(), "kafkalog's failed open must not delete the broker's .lock"
    assert broker.running, "kafkalog's failed open must leave the broker alone"
    assert broker.stop() in (0, 143), broker.log_tail()

    with kafkalog.LogManager([data], manager_config(broker), scheduler=False):
        watch = LogWatch(broker)
        with pytest.raises(HarnessError, match="broker exited with 1"):
            broker.start()
        lock_errors = [line for line in watch.text().splitlines() if "Failed to acquire lock on file .lock in" in line]
        assert lock_errors, "the broker died without Kafka's lock error:\n" + broker.log_tail()
        assert all(
            line.endswith(
                f"Failed to acquire lock on file .lock in {data}. A Kafka instance in another process or thread is using this directory."
            )
            for line in lock_errors
        ), lock_errors
        # The broker's failed attempt left kafkalog's lock in force.
        with pytest.raises(LogDirLockedError):
            kafkalog.LogManager([data], manager_config(broker), scheduler=False)

    # Once kafkalog has closed, the broker starts on the dir again.
    text = start_broker(broker)
    recovery_line(text, data)
    assert broker.stop() in (0, 143), broker.log_tail()
