"""``LogManager.metrics()`` under Kafka's MBean names, its Prometheus text (checked with
``prometheus_client``'s own parser) and ``serve_metrics`` on loopback.

Kafka's gauges: ``UnifiedLog`` (``kafka.log:type=Log``: NumLogSegments, LogStartOffset,
LogEndOffset, Size with topic / partition tags), ``LogManager`` (OfflineLogDirectoryCount,
LogDirectoryOffline per logDirectory, the recovery gauges), ``LogCleaner`` and
``LogCleanerManager`` (the cleaner's, per logDirectory where Kafka tags them).
"""

from __future__ import annotations

import http.client
import pickle
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkalog import Gauge, LogManager, MetricsSnapshot, Record
from kafkalog.exceptions import InvalidArgumentError
from kafkalog.metrics import prometheus_text, render, serve_metrics
from kit.manager import open_manager

BROKER: dict[str, Any] = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.io.buffer.size": 65536}
COMPACTED: dict[str, Any] = {"cleanup.policy": "compact", "internal.segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01}


def busy_manager(tmp_path: Path) -> tuple[LogManager, Path, Path]:
    """Two log dirs, one of them a file (offline); a delete log and a compacted log, cleaned once."""
    offline, live = tmp_path / "f", tmp_path / "a"
    offline.write_text("not a dir")
    m = open_manager([offline, live], BROKER)
    plain = m.create_log("plain", 3, {"internal.segment.bytes": 300})
    for i in range(12):
        plain.append([Record(b"k%d" % i, b"v" * 50)])
    plain.delete_records(2)
    compacted = m.create_log("c", 0, COMPACTED)
    for i in range(40):
        compacted.append([Record(b"k%d" % (i % 4), b"v%d" % i)])
    compacted.roll()
    assert m.run_cleaner_once() is not None
    return m, offline, live


def by_mbean(snapshot: MetricsSnapshot) -> dict[str, int]:
    names = [g.mbean_name for g in snapshot.gauges]
    assert len(names) == len(set(names)), "each MBean once"
    return {g.mbean_name: g.value for g in snapshot.gauges}


def test_the_snapshot_has_kafkas_names_and_the_managers_values(tmp_path: Path) -> None:
    m, offline, live = busy_manager(tmp_path)
    with m:
        snapshot = m.metrics()
        values = by_mbean(snapshot)
        for log in m.logs():
            tags = f"topic={log.topic},partition={log.partition}"
            assert values[f"kafka.log:type=Log,name=NumLogSegments,{tags}"] == len(log.segments)
            assert values[f"kafka.log:type=Log,name=LogStartOffset,{tags}"] == log.log_start_offset
            assert values[f"kafka.log:type=Log,name=LogEndOffset,{tags}"] == log.log_end_offset
            assert values[f"kafka.log:type=Log,name=Size,{tags}"] == log.size_in_bytes
        assert values["kafka.log:type=Log,name=LogStartOffset,topic=plain,partition=3"] == 2
        assert values["kafka.log:type=Log,name=NumLogSegments,topic=plain,partition=3"] >= 3
        assert values["kafka.log:type=LogManager,name=OfflineLogDirectoryCount"] == 1
        assert values[f"kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory={offline}"] == 1
        assert values[f"kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory={live}"] == 0
        assert values[f"kafka.log:type=LogManager,name=remainingLogsToRecover,dir={live}"] == 0
        assert values[f"kafka.log:type=LogManager,name=remainingSegmentsToRecover,dir={live},threadNum=0"] == 0
        # The cleaner's gauges are those cleaner_metrics() reports by the same names.
        cleaner = m.cleaner_metrics()
        for name in ("max-buffer-utilization-percent", "cleaner-recopy-percent", "max-clean-time-secs",
                     "max-compaction-delay-secs", "DeadThreadCount"):
            assert values[f"kafka.log:type=LogCleaner,name={name}"] == cleaner[name], name
        assert 0 < values["kafka.log:type=LogCleaner,name=cleaner-recopy-percent"] < 100
        assert values["kafka.log:type=LogCleanerManager,name=max-dirty-percent"] == cleaner["max-dirty-percent"]
        assert values[f"kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count,logDirectory={live}"] == 0
        assert values[f"kafka.log:type=LogCleanerManager,name=uncleanable-bytes,logDirectory={live}"] == 0
        assert snapshot.value("kafka.log:type=Log,name=Size,topic=c,partition=0") == m.get_log("c", 0).size_in_bytes
        assert snapshot.value("kafka.log:type=Log,name=Size,topic=nope,partition=0") is None
        assert snapshot.time_ms == m.time_ms
        # A frozen, picklable result.
        assert pickle.loads(pickle.dumps(snapshot)) == snapshot
        with pytest.raises(AttributeError):
            snapshot.gauges[0].value = 1  # type: ignore[misc]


def test_no_cleaner_gauges_without_a_cleaner(tmp_path: Path) -> None:
    with open_manager(tmp_path / "a", {"log.cleaner.enable": False}) as m:
        m.create_log("t", 0).append([(b"k", b"v")])
        types = {g.type_name for g in m.metrics().gauges}
    assert types == {"Log", "LogManager"}


def test_the_prometheus_text_parses_and_matches_the_snapshot(tmp_path: Path) -> None:
    m, offline, live = busy_manager(tmp_path)
    with m:
        snapshot = m.metrics()
        text = render(snapshot)
        assert prometheus_text(m).splitlines()[0] == text.splitlines()[0]
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert all(f.type == "gauge" for f in families.values())
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    assert len(samples) == len(snapshot.gauges)
    assert samples[("kafka_log_log_size", (("partition", "3"), ("topic", "plain")))] == by_mbean(snapshot)[
        "kafka.log:type=Log,name=Size,topic=plain,partition=3"
    ]
    assert samples[("kafka_log_logmanager_offlinelogdirectorycount", ())] == 1
    assert samples[("kafka_log_logmanager_logdirectoryoffline", (("logDirectory", str(offline)),))] == 1
    assert ("kafka_log_logcleanermanager_max_dirty_percent", ()) in samples
    assert ("kafka_log_logcleanermanager_uncleanable_partitions_count", (("logDirectory", str(live)),)) in samples
    assert "kafka_log_logcleaner_deadthreadcount" in families
    assert "(kafka.log:type=Log,name=Size)" in families["kafka_log_log_size"].documentation


def test_names_and_labels_are_made_safe_and_escaped() -> None:
    """The JMX exporter's safe names (dashes to underscores, lowercased names, label names
    kept in case) and Prometheus' label escaping (backslash, quote, newline)."""
    weird = 'a"b\\c\nd'
    snapshot = MetricsSnapshot(
        5,
        (
            Gauge("Log", "Size", (("topic", weird), ("partition", "0"), ("is-future", "true")), 7),
            Gauge("LogCleanerManager", "uncleanable-bytes", (("logDirectory", "/x"),), 2**40),
        ),
    )
    text = render(snapshot)
    assert 'kafka_log_log_size{topic="a\\"b\\\\c\\nd",partition="0",is_future="true"} 7' in text
    parsed = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    assert parsed["kafka_log_log_size"].labels == {"topic": weird, "partition": "0", "is_future": "true"}
    assert parsed["kafka_log_logcleanermanager_uncleanable_bytes"].value == 2**40


def get(port: int, path: str) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def test_serve_metrics_answers_on_loopback_and_closes(tmp_path: Path) -> None:
    with open_manager(tmp_path / "a") as m:
        m.create_log("t", 0).append([(b"k", b"v")])
        server = serve_metrics(m, 0)
        try:
            assert server.host == "127.0.0.1" and server.port > 0
            status, content_type, body = get(server.port, "/metrics")
            assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
            assert body == prometheus_text(m)
            assert get(server.port, "/other")[0] == 404
        finally:
            server.close()
        server.close()  # twice is fine
        with pytest.raises(OSError):
            get(server.port, "/metrics")


def test_serve_metrics_reports_a_closed_manager(tmp_path: Path) -> None:
    m = open_manager(tmp_path / "a")
    with serve_metrics(m, 0) as server:
        m.close()
        status, _, body = get(server.port, "/metrics")
    assert status == 503 and "closed" in body.lower()


def test_serve_metrics_checks_its_port(tmp_path: Path) -> None:
    with open_manager(tmp_path / "a") as m:
        with pytest.raises(InvalidArgumentError, match="port"):
            serve_metrics(m, 70000)
