"""kafkalog.LogManager against Kafka 4.3.1's LogManager: placement and cordoned dirs, topic
names and ids, the `.lock`, `meta.properties`, the clean-shutdown marker, the offset
checkpoints, retention (by hand and on the scheduler), compacted topics, partition deletion,
the special directories of a log dir, parallel recovery with progress, recovery after SIGKILL,
the scheduler thread, and closing. Docstrings name the LogManagerTest case each test mirrors.

Managers run on a manual clock with no scheduler thread (kit.manager.open_manager) unless a
test is about the thread itself. A "crash" in-process is `del` of the manager and every log
handle, then gc: nothing is flushed, checkpointed or marked clean.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkalog import DirRecoveryProgress, LogManager, UnifiedLog
from kafkalog.checkpoints import read_meta_properties
from kafkalog.exceptions import (
    AllLogDirsOfflineError,
    IllegalStateError,
    InconsistentTopicIdError,
    InvalidConfigError,
    InvalidTopicError,
    KafkaLogError,
    LogClosedError,
    LogDirLockedError,
)
from kit.manager import (
    CLEAN_SHUTDOWN,
    HANG_GUARD_S,
    LOCK,
    LOG_STARTS,
    META,
    RECOVERY_POINTS,
    SMALL_SEGMENTS,
    check_contents,
    fill,
    leftover_temp_files,
    log_dir_of,
    names,
    native_thread_names,
    native_threads,
    now_ms,
    open_manager,
    partition_dirs,
    read_checkpoint,
    read_line,
    wait_for,
    wait_for_new_threads,
)

#: Keeps the scheduled retention out of tests that call run_retention themselves.
NO_SCHEDULED_TASKS = {"log.initial.task.delay.ms": 10**12}
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def dirs_of(tmp_path: Path, *names_: str) -> list[Path]:
    return [tmp_path / n for n in names_]


# -- placement ----------------------------------------------------------------------------------


def test_create_log_spreads_partitions_over_dirs(tmp_path: Path) -> None:
    """testCreateLog: a new partition goes to the online dir holding the fewest partitions, and
    its directory is <topic>-<partition> with a segment and partition.metadata."""
    dirs = dirs_of(tmp_path, "a", "b", "c")
    with open_manager(dirs) as m:
        for p in range(6):
            log = m.create_log("orders", p)
            assert Path(log.path).name == f"orders-{p}"
            assert (Path(log.path) / "00000000000000000000.log").is_file()
            assert (Path(log.path) / "partition.metadata").is_file()
        assert {Path(d.path).name: d.partitions for d in m.log_dirs()} == {"a": 2, "b": 2, "c": 2}
        assert [len(partition_dirs(d)) for d in dirs] == [2, 2, 2]


def test_placement_counts_partitions_loaded_at_startup(tmp_path: Path) -> None:
    """nextLogDirs counts every log a dir holds, including those loaded at start-up: after three
    partitions landed in a, the next three all go to the empty b."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        m.cordon_log_dir(b)
        assert [log_dir_of(m.create_log("t", p)) for p in range(3)] == [a, a, a]
    with open_manager([a, b]) as m:
        assert [log_dir_of(m.create_log("t", p)) for p in range(3, 6)] == [b, b, b]
        assert {log_dir_of(m.create_log("t", p)) for p in (6, 7)} == {a, b}


def test_cordoned_dirs_get_no_new_partitions(tmp_path: Path) -> None:
    """KIP-1066: `cordoned.log.dirs` and cordon_log_dir stop placement in a dir; the partitions
    already there keep serving; un-cordoning makes the dir eligible again."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b], {"cordoned.log.dirs": str(a)}) as m:
        assert {d.path: d.cordoned for d in m.log_dirs()} == {str(a): True, str(b): False}
        assert {log_dir_of(m.create_log("t", p)) for p in range(4)} == {b}
        m.cordon_log_dir(a, False)
        m.cordon_log_dir(b)
        in_a = m.create_log("t", 4)
        assert log_dir_of(in_a) == a
        assert {log_dir_of(m.create_log("t", p)) for p in range(5, 8)} == {a}
        in_b = m.get_log("t", 0)
        assert in_b is not None and log_dir_of(in_b) == b
        fill(in_b, 2)
        assert in_b.log_end_offset == 2, "a cordoned dir still serves its partitions"
        assert {d.path: d.cordoned for d in m.log_dirs()} == {str(a): False, str(b): True}


def test_cordoned_dirs_config_must_name_log_dirs(tmp_path: Path) -> None:
    """KafkaConfig.validateCordonedLogDirs: every entry must be a log dir; "*" must be alone."""
    a, b = dirs_of(tmp_path, "a", "b")
    with pytest.raises(InvalidConfigError, match="cordoned.log.dirs"):
        open_manager([a], {"cordoned.log.dirs": str(b)})
    with pytest.raises(InvalidConfigError, match="cordoned.log.dirs"):
        open_manager([a, b], {"cordoned.log.dirs": f"*,{a}"})
    assert not a.exists() and not b.exists(), "a rejected config creates no directory"


def test_every_dir_cordoned_falls_back_to_the_first_live_dir(tmp_path: Path) -> None:
    """nextLogDirs: when every live dir is cordoned, Kafka still places the partition, in the
    first live dir."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        m.cordon_log_dir(a)
        m.cordon_log_dir(b)
        assert log_dir_of(m.create_log("t", 0)) == a


@pytest.mark.parametrize(
    "topic", [".", "..", "a/b", "x" * 250, "", "white space", "ünicode"], ids=lambda t: repr(t)[:12]
)
def test_invalid_topic_names_create_nothing(tmp_path: Path, topic: str) -> None:
    """Topic.validate: '.', '..', names over 249 characters, empty names and characters other
    than [a-zA-Z0-9._-] raise InvalidTopicError before any directory is made."""
    dirs = dirs_of(tmp_path, "a", "b")
    with open_manager(dirs) as m:
        before = [names(d) for d in dirs]
        with pytest.raises(InvalidTopicError):
            m.create_log(topic, 0)
        assert [names(d) for d in dirs] == before
        assert m.logs() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"], "nothing escaped the log dirs"


def test_negative_partition_is_rejected(tmp_path: Path) -> None:
    a = tmp_path / "a"
    with open_manager(a) as m:
        with pytest.raises(KafkaLogError, match="negative"):
            m.create_log("t", -1)
        assert partition_dirs(a) == [] and m.logs() == []


# -- getOrCreateLog and topic ids ---------------------------------------------------------------


def test_get_or_create_returns_the_existing_log(tmp_path: Path) -> None:
    """getOrCreateLog returns the log already there; get_log finds it; nothing is created twice."""
    dirs = dirs_of(tmp_path, "a", "b")
    with open_manager(dirs) as m:
        first = m.create_log("t", 0)
        fill(first, 3)
        again = m.create_log("t", 0)
        assert again.path == first.path and again.log_end_offset == 3
        fill(again, 2)
        assert first.log_end_offset == 5, "both handles are the same log"
        found = m.get_log("t", 0)
        assert found is not None and found.log_end_offset == 5
        assert m.get_log("t", 1) is None
        assert [(log.topic, log.partition) for log in m.logs()] == [("t", 0)]
        assert sum(len(partition_dirs(d)) for d in dirs) == 1


def test_partitions_of_a_topic_share_one_topic_id(tmp_path: Path) -> None:
    """Every partition of a topic, in any dir, gets the same topic id in partition.metadata
    (`version: 0\\ntopic_id: <id>`, no trailing newline); another topic gets another id; a
    partition created after a restart gets the topic's id too."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        logs = [m.create_log("t", p) for p in range(4)]
        assert {log_dir_of(log) for log in logs} == {a, b}
        topic_id = logs[0].topic_id
        assert topic_id is not None and len(topic_id) == 22
        files = {(Path(log.path) / "partition.metadata").read_bytes() for log in logs}
        assert files == {b"version: 0\ntopic_id: " + topic_id.encode()}
        assert m.create_log("u", 0).topic_id not in (None, topic_id)
    with open_manager([a, b]) as m:
        assert m.create_log("t", 4).topic_id == topic_id


def test_explicit_topic_id_is_written(tmp_path: Path) -> None:
    """getOrCreateLog with a topic id writes it; a different id for an existing log raises
    InconsistentTopicIdError and changes nothing."""
    a = tmp_path / "a"
    with open_manager(a) as m:
        log = m.create_log("t", 0, topic_id=TOPIC_ID)
        metadata = Path(log.path) / "partition.metadata"
        assert metadata.read_bytes() == b"version: 0\ntopic_id: " + TOPIC_ID.encode()
        assert m.create_log("t", 1).topic_id == TOPIC_ID
        with pytest.raises(InconsistentTopicIdError):
            m.create_log("t", 0, topic_id="AAAAAAAAAAAAAAAAAAAAAg")
        assert metadata.read_bytes() == b"version: 0\ntopic_id: " + TOPIC_ID.encode()


# -- the lock -----------------------------------------------------------------------------------

LOCK_PROBE = textwrap.dedent(
    """
    import sys
    from kafkalog import LogManager
    from kafkalog.exceptions import LogDirLockedError
    try:
        LogManager(sys.argv[1:], scheduler=False).close()
    except LogDirLockedError as e:
        print("locked:", e)
    else:
        print("opened")
    """
)


def probe_from_another_process(*dirs: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", LOCK_PROBE, *map(str, dirs)], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_two_log_managers_using_same_dir_fails(tmp_path: Path) -> None:
    """testTwoLogManagersUsingSameDirFails / testLock: while a manager runs, a second one on any
    of its dirs (in this process or another) raises LogDirLockedError naming the dir; after
    close the `.lock` files are deleted (Kafka's FileLock.destroy) and the dirs open again."""
    a, b, c = dirs_of(tmp_path, "a", "b", "c")
    m = open_manager([a, b])
    try:
        assert (a / LOCK).is_file() and (b / LOCK).is_file()
        with pytest.raises(LogDirLockedError, match=re.escape(str(b))):
            open_manager([b])
        with pytest.raises(LogDirLockedError, match=re.escape(str(a))):
            open_manager([c, a])
        assert probe_from_another_process(a).startswith("locked:")
        assert probe_from_another_process(c, b).startswith("locked:")
        fill(m.create_log("t", 0), 1)
    finally:
        m.close()
    assert not (a / LOCK).exists() and not (b / LOCK).exists()
    assert probe_from_another_process(a, b) == "opened"
    with open_manager([a, b]) as again:
        log = again.get_log("t", 0)
        assert log is not None and log.log_end_offset == 1


# -- log dirs -----------------------------------------------------------------------------------


def test_duplicate_log_dirs_are_rejected(tmp_path: Path) -> None:
    """createAndValidateLogDirs: a dir listed twice is a configuration error naming it (here
    caught when log.dirs is parsed, before anything is created)."""
    d = tmp_path / "d"
    with pytest.raises(InvalidConfigError, match=re.escape(str(d))):
        LogManager(config={"log.dirs": f"{d},{d}/"}, scheduler=False)
    with pytest.raises(InvalidConfigError, match=re.escape(str(d))):
        open_manager([d, tmp_path / "x" / ".." / "d"])
    assert not d.exists()


def test_same_dir_through_a_symlink_fails_startup(tmp_path: Path) -> None:
    """Kafka compares canonical paths ("Duplicate log directory found"); a symlinked duplicate
    must not be served twice. kafkalog fails it at the second lock."""
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "link").symlink_to(d)
    with pytest.raises((InvalidConfigError, LogDirLockedError)):
        open_manager([d, tmp_path / "link"])


def test_missing_log_dir_is_created(tmp_path: Path) -> None:
    """createAndValidateLogDirs: a missing dir (and its parents) is created, then used."""
    d = tmp_path / "not" / "yet" / "there"
    with open_manager(d) as m:
        assert d.is_dir() and (d / META).is_file()
        fill(m.create_log("t", 0), 1)
    assert (d / "t-0").is_dir()


def test_log_dir_that_is_a_file_goes_offline(tmp_path: Path) -> None:
    """createAndValidateLogDirs: "<dir> is not a readable log directory" takes that dir offline;
    the others serve and get every new partition. All dirs bad: AllLogDirsOfflineError."""
    f, a = tmp_path / "f", tmp_path / "a"
    f.write_text("not a dir")
    with open_manager([f, a]) as m:
        assert m.live_log_dirs == [str(a)]
        assert "not a readable log directory" in m.offline_log_dirs[str(f)]
        assert {log_dir_of(m.create_log("t", p)) for p in range(3)} == {a}
    assert f.read_text() == "not a dir"
    g = tmp_path / "g"
    g.write_text("also not a dir")
    with pytest.raises(AllLogDirsOfflineError, match=re.escape(str(f))):
        open_manager([f, g])


# -- meta.properties ----------------------------------------------------------------------------


def meta_lines(d: Path) -> tuple[list[str], dict[str, str]]:
    lines = (d / META).read_text().splitlines()
    return [line for line in lines if line.startswith("#")], dict(
        line.split("=", 1) for line in lines if not line.startswith("#")
    )


def test_meta_properties_written_and_kept(tmp_path: Path) -> None:
    """`kafka-storage format`'s meta.properties: `#`, a date comment, then node.id, directory.id,
    version=1 and cluster.id; one cluster.id for every dir, distinct directory ids; reopening
    rewrites nothing; a dir added later joins the same cluster."""
    a, b, c = dirs_of(tmp_path, "a", "b", "c")
    with open_manager([a, b], {"node.id": 3}) as m:
        ids = {d.path: d.directory_id for d in m.log_dirs()}
    props = {}
    for d in (a, b):
        comments, p = meta_lines(d)
        lines = (d / META).read_text().splitlines()
        assert lines[0] == "#" and re.fullmatch(r"#\w{3} \w{3} \d{2} \d\d:\d\d:\d\d \w+ \d{4}", lines[1]), lines
        assert len(comments) == 2
        assert set(p) == {"node.id", "directory.id", "version", "cluster.id"}
        assert p["version"] == "1" and p["node.id"] == "3"
        assert p["directory.id"] == ids[str(d)] and len(p["directory.id"]) == 22
        assert read_meta_properties(d / META) == p
        props[d] = p
    assert props[a]["cluster.id"] == props[b]["cluster.id"]
    assert props[a]["directory.id"] != props[b]["directory.id"]
    before = {d: (d / META).read_bytes() for d in (a, b)}
    with open_manager([a, b], {"node.id": 3}) as m:
        assert {d.path: d.directory_id for d in m.log_dirs()} == ids
    assert {d: (d / META).read_bytes() for d in (a, b)} == before
    with open_manager([a, b, c], {"node.id": 3}):
        pass
    _, pc = meta_lines(c)
    assert pc["cluster.id"] == props[a]["cluster.id"]
    assert pc["directory.id"] not in (props[a]["directory.id"], props[b]["directory.id"])


def test_mismatched_cluster_id_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """MetaPropertiesEnsemble.verify: "Invalid cluster.id in: <path>"."""
    a, h = dirs_of(tmp_path, "a", "h")
    with open_manager(a):
        pass
    h.mkdir()
    (h / META).write_text("version=1\ncluster.id=SomeOtherClusterId0000\nnode.id=1\n")
    with pytest.raises(KafkaLogError, match=re.escape(str(h / META))) as e:
        open_manager([a, h])
    assert "cluster.id" in str(e.value)
    with open_manager(a):  # the failed start-up left nothing locked
        pass


def test_node_id_mismatch_is_an_error(tmp_path: Path) -> None:
    """"Stored node id A doesn't match previous node id B in <path>"."""
    a = tmp_path / "a"
    with open_manager(a, {"node.id": 1}):
        pass
    with pytest.raises(KafkaLogError, match="node") as e:
        open_manager(a, {"node.id": 2})
    assert str(a / META) in str(e.value)
    with open_manager(a, {"node.id": 1}):
        pass


def test_garbage_meta_properties_takes_the_dir_offline(tmp_path: Path) -> None:
    """A meta.properties that cannot be parsed makes its dir an error dir (offline), with a
    reason naming the file; the file is left as it was; the other dir serves."""
    g, a = dirs_of(tmp_path, "g", "a")
    g.mkdir()
    garbage = b"\x00\x01 this is not a properties file\n"
    (g / META).write_bytes(garbage)
    with open_manager([g, a]) as m:
        assert m.live_log_dirs == [str(a)]
        assert str(g / META) in m.offline_log_dirs[str(g)]
        assert log_dir_of(m.create_log("t", 0)) == a
    assert (g / META).read_bytes() == garbage


# -- clean shutdown -----------------------------------------------------------------------------


def test_clean_shutdown_file_with_broker_epoch(tmp_path: Path) -> None:
    """testCleanShutdownFileWithBrokerEpoch: close(broker_epoch=7) writes exactly
    {"version":0,"brokerEpoch":7} in every dir, after closing each segment with its indexes.
    The next start-up deletes the marker at once (KAFKA-10471), recovers nothing, and the next
    close writes it again (epoch -1 by default)."""
    dirs = dirs_of(tmp_path, "a", "b")
    m = open_manager(dirs, SMALL_SEGMENTS)
    for p in range(4):
        fill(m.create_log("t", p), 15)
    ends = {(log.topic, log.partition): log.log_end_offset for log in m.logs()}
    m.close(broker_epoch=7)
    segments = 0
    for d in dirs:
        assert (d / CLEAN_SHUTDOWN).read_bytes() == b'{"version":0,"brokerEpoch":7}'
        for part in partition_dirs(d):
            logs = sorted((d / part).glob("*.log"))
            segments += len(logs)
            for seg in logs:
                assert seg.with_suffix(".index").is_file() and seg.with_suffix(".timeindex").is_file(), seg
    assert segments >= 8
    m = open_manager(dirs, SMALL_SEGMENTS)
    try:
        assert [d for d in dirs if (d / CLEAN_SHUTDOWN).exists()] == []
        summary = {s.dir: s for s in m.load_summary()}
        assert set(summary) == {str(d) for d in dirs}
        for s in summary.values():
            assert s.had_clean_shutdown and s.error is None
            assert s.logs_loaded == 2 and s.segments_recovered == 0 and s.bytes_truncated == 0
        assert sum(s.segments_loaded for s in summary.values()) == segments
        assert {(log.topic, log.partition): log.log_end_offset for log in m.logs()} == ends
    finally:
        m.close()
    assert [(d / CLEAN_SHUTDOWN).read_bytes() for d in dirs] == [b'{"version":0,"brokerEpoch":-1}'] * 2


def test_manager_dropped_without_close_recovers_at_next_open(tmp_path: Path) -> None:
    """No close, no marker: the next start-up recovers (had_clean_shutdown False). A crash after
    a clean start-up also counts as unclean, since the marker was deleted when it was read."""
    dirs = dirs_of(tmp_path, "a", "b")
    m = open_manager(dirs, SMALL_SEGMENTS)
    log = m.create_log("t", 0)
    fill(log, 20)
    del m, log
    gc.collect()
    assert [d for d in dirs if (d / CLEAN_SHUTDOWN).exists()] == []
    m = open_manager(dirs, SMALL_SEGMENTS)
    summary = m.load_summary()
    assert [s.had_clean_shutdown for s in summary] == [False, False]
    assert sum(s.segments_recovered for s in summary) >= 3
    log2 = m.get_log("t", 0)
    assert log2 is not None and log2.log_end_offset == 20
    check_contents(log2)
    del log2
    m.close()
    m = open_manager(dirs, SMALL_SEGMENTS)
    assert [s.had_clean_shutdown for s in m.load_summary()] == [True, True]
    del m
    gc.collect()
    m = open_manager(dirs, SMALL_SEGMENTS)
    try:
        assert [s.had_clean_shutdown for s in m.load_summary()] == [False, False]
        log3 = m.get_log("t", 0)
        assert log3 is not None and log3.log_end_offset == 20
    finally:
        m.close()


# -- checkpoints --------------------------------------------------------------------------------


def test_checkpoint_recovery_points(tmp_path: Path) -> None:
    """testCheckpointRecoveryPoints: checkpoint() writes recovery-point-offset-checkpoint in each
    dir with every partition of that dir and its recovery point (the flushed offset, not the
    log end)."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        logs = [m.create_log("t", p) for p in range(4)]
        for p, log in enumerate(logs):
            fill(log, 5 + p)
        m.flush()
        m.checkpoint()
        for d in (a, b):
            expected = {("t", log.partition): log.log_end_offset for log in logs if log_dir_of(log) == d}
            assert len(expected) == 2
            assert read_checkpoint(d / RECOVERY_POINTS) == expected
        fill(logs[0], 3)
        m.checkpoint()
        d0 = log_dir_of(logs[0])
        assert read_checkpoint(d0 / RECOVERY_POINTS)[("t", 0)] == 5 == logs[0].recovery_point
        assert logs[0].log_end_offset == 8


def test_checkpoint_log_start_offset_for_normal_topic(tmp_path: Path) -> None:
    """testCheckpointLogStartOffsetForNormalTopic: log-start-offset-checkpoint lists only logs
    whose log start offset lies past their first segment's base; the value comes back at the
    next start-up, also after a crash (it is read from the checkpoint file)."""
    a = tmp_path / "a"
    m = open_manager(a, {**SMALL_SEGMENTS, **NO_SCHEDULED_TASKS})
    moved, still = m.create_log("t", 0), m.create_log("t", 1)
    fill(moved, 30)
    fill(still, 30)
    m.checkpoint()
    assert read_checkpoint(a / LOG_STARTS) == {}
    bases = [s.base_offset for s in moved.segments]
    assert len(bases) >= 4
    moved.delete_records(bases[2] - 1)
    m.checkpoint()
    assert read_checkpoint(a / LOG_STARTS) == {("t", 0): bases[2] - 1}
    m.run_retention()
    assert moved.segments[0].base_offset == bases[1]
    moved.delete_records(bases[2])
    m.run_retention()
    assert moved.segments[0].base_offset == bases[2] == moved.log_start_offset
    m.checkpoint()
    assert read_checkpoint(a / LOG_STARTS) == {}, "log start == first segment base is not listed"
    moved.delete_records(bases[2] + 2)
    m.checkpoint()
    assert read_checkpoint(a / LOG_STARTS) == {("t", 0): bases[2] + 2}
    del m, moved, still
    gc.collect()
    for _ in range(2):  # after the crash, then after a clean close
        with open_manager(a, {**SMALL_SEGMENTS, **NO_SCHEDULED_TASKS}) as m:
            log, other = m.get_log("t", 0), m.get_log("t", 1)
            assert log is not None and other is not None
            assert log.log_start_offset == bases[2] + 2
            assert [r.offset for r in log.records()][:1] == [bases[2] + 2]
            assert other.log_start_offset == 0
            del log, other


# -- retention ----------------------------------------------------------------------------------


def deleted_files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.name.endswith(".deleted"))


def test_cleanup_expired_segments(tmp_path: Path) -> None:
    """testCleanupExpiredSegments: with log.retention.ms, a segment goes once now - its largest
    timestamp > retention.ms (strictly); when all go, the log rolls first and keeps its offsets;
    the files are renamed .deleted and unlinked log.segment.delete.delay.ms later."""
    a = tmp_path / "a"
    t0 = now_ms()
    config = {**SMALL_SEGMENTS, **NO_SCHEDULED_TASKS, "log.retention.ms": 60_000, "log.segment.delete.delay.ms": 5_000}
    with open_manager(a, config, time_ms=t0) as m:
        log = m.create_log("t", 0)
        fill(log, 30, timestamp=t0)
        before = [s.base_offset for s in log.segments]
        assert len(before) >= 4
        m.advance_time(60_000)
        assert m.run_retention()[("t", 0)].deleted == []
        m.advance_time(1)
        result = m.run_retention()[("t", 0)]
        assert [d.base_offset for d in result.deleted] == before
        assert {d.reason for d in result.deleted} == {"retention_ms"}
        assert {d.largest_timestamp for d in result.deleted} == {t0}
        assert log.log_start_offset == log.log_end_offset == 30 == result.log_start_offset
        assert [s.base_offset for s in log.segments] == [30]
        doomed = deleted_files(a / "t-0")
        assert any(p.name == "00000000000000000000.log.deleted" for p in doomed)
        m.advance_time(4_999)
        assert all(p.exists() for p in doomed), "unlinked before file.delete.delay.ms"
        m.advance_time(2)
        assert deleted_files(a / "t-0") == []
        fill(log, 1)
        assert log.log_end_offset == 31


def test_cleanup_segments_to_maintain_size(tmp_path: Path) -> None:
    """testCleanupSegmentsToMaintainSize: with log.retention.bytes, the oldest segments go while
    size - retention.bytes - segment size >= 0 (Kafka's rule), and no further."""
    a = tmp_path / "a"
    config = {**SMALL_SEGMENTS, **NO_SCHEDULED_TASKS, "log.retention.bytes": 3000}
    with open_manager(a, config) as m:
        log = m.create_log("t", 0)
        fill(log, 40)
        before = log.segments
        diff, expected = sum(s.size for s in before) - 3000, []
        for s in before:
            if diff - s.size < 0:
                break
            expected.append(s.base_offset)
            diff -= s.size
        assert len(expected) >= 2
        result = m.run_retention()[("t", 0)]
        assert [d.base_offset for d in result.deleted] == expected
        assert {d.reason for d in result.deleted} == {"retention_bytes"}
        assert log.size_in_bytes >= 3000 > log.size_in_bytes - log.segments[0].size
        assert log.log_start_offset == before[len(expected)].base_offset
        assert m.run_retention()[("t", 0)].deleted == [], "a second run has nothing left to delete"


def test_retention_with_per_topic_configs(tmp_path: Path) -> None:
    """Topic-level retention.ms, retention.bytes and file.delete.delay.ms (from topic_configs,
    create_log's config and update_topic_config) override the broker's; a log start raised by
    delete_records frees whole segments below it (reason "log_start_offset")."""
    a = tmp_path / "a"
    t0 = now_ms()
    topics = {"short": {**SMALL_SEGMENTS, "retention.ms": 1000, "file.delete.delay.ms": 2000}}
    broker = {**SMALL_SEGMENTS, **NO_SCHEDULED_TASKS, "log.segment.delete.delay.ms": 60_000}
    with open_manager(a, broker, time_ms=t0, topic_configs=topics) as m:
        short, long_ = m.create_log("short", 0), m.create_log("long", 0)
        sized = m.create_log("sized", 0, {**SMALL_SEGMENTS, "retention.bytes": 2000})
        for log in (short, long_, sized):
            fill(log, 20, timestamp=t0)
        m.advance_time(1001)
        results = m.run_retention()
        assert set(results) == {("short", 0), ("long", 0), ("sized", 0)}
        assert results[("long", 0)].deleted == []
        assert {d.reason for d in results[("short", 0)].deleted} == {"retention_ms"}
        assert short.log_start_offset == 20
        assert {d.reason for d in results[("sized", 0)].deleted} == {"retention_bytes"}
        assert sized.size_in_bytes >= 2000
        m.advance_time(2001)  # short's file.delete.delay.ms has passed, the broker's has not
        assert deleted_files(a / "short-0") == [] and deleted_files(a / "sized-0") != []
        boundary = long_.segments[2].base_offset
        long_.delete_records(boundary)
        result = m.run_retention()[("long", 0)]
        assert {d.reason for d in result.deleted} == {"log_start_offset"}
        assert long_.segments[0].base_offset == boundary
        m.update_topic_config("long", {**SMALL_SEGMENTS, "retention.ms": 500})
        assert {d.reason for d in m.run_retention()[("long", 0)].deleted} == {"retention_ms"}
        assert long_.log_start_offset == 20


@pytest.mark.parametrize("how", ["create_log", "topic_configs", "update_topic_config"])
def test_topic_overrides_keep_the_broker_defaults(tmp_path: Path, how: str) -> None:
    """Kafka's fetchLogConfig: topic config = broker defaults (log.* keys) + the topic's
    overrides; keys the topic does not set keep the broker's values."""
    a = tmp_path / "a"
    broker = {"log.retention.ms": 60_000, "log.segment.delete.delay.ms": 1234}
    override = {"retention.bytes": 7}
    topics = {"t": override} if how == "topic_configs" else None
    with open_manager(a, broker, topic_configs=topics) as m:
        log = m.create_log("t", 0, override if how == "create_log" else None)
        if how == "update_topic_config":
            m.update_topic_config("t", override)
        assert log.config["retention.bytes"] == "7"
        assert log.config["retention.ms"] == "60000"
        assert log.config["file.delete.delay.ms"] == "1234"


def test_retention_runs_on_the_scheduler(tmp_path: Path) -> None:
    """kafka-log-retention runs first after log.initial.task.delay.ms, then every
    log.retention.check.interval.ms, by the manager's clock; expired segments wait for the
    next check; their .deleted files are unlinked after log.segment.delete.delay.ms."""
    a = tmp_path / "a"
    t0 = now_ms()
    config = {
        **SMALL_SEGMENTS,
        "log.retention.ms": 3000,
        "log.initial.task.delay.ms": 1000,
        "log.retention.check.interval.ms": 5000,
        "log.segment.delete.delay.ms": 2000,
    }
    with open_manager(a, config, time_ms=t0) as m:
        log = m.create_log("t", 0)
        fill(log, 20, timestamp=t0)
        count = len(log.segments)
        m.advance_time(1000)  # first run: the records are 1000 ms old
        assert len(log.segments) == count and log.log_start_offset == 0
        m.advance_time(4999)  # expired since t0+3001, but the next check is at t0+6000
        assert log.log_start_offset == 0 and deleted_files(a / "t-0") == []
        m.advance_time(1)
        assert log.log_start_offset == 20
        doomed = deleted_files(a / "t-0")
        assert len(doomed) >= count
        m.advance_time(1999)
        assert all(p.exists() for p in doomed)
        m.advance_time(2)
        assert deleted_files(a / "t-0") == []


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_doesnt_clean_logs_with_compact_policy(tmp_path: Path, policy: str) -> None:
    """testDoesntCleanLogsWithCompactPolicy / testDoesntCleanLogsWithCompactDeletePolicy:
    retention in LogManager skips compacted topics (the cleaner owns them), by hand and on the
    schedule, while a delete topic with the same settings loses its segments."""
    a = tmp_path / "a"
    t0 = now_ms()
    limits = {"retention.ms": 1000, "retention.bytes": 1000}
    topics = {
        "c": {**SMALL_SEGMENTS, **limits, "cleanup.policy": policy},
        "d": {**SMALL_SEGMENTS, **limits, "cleanup.policy": "delete"},
    }
    config = {**SMALL_SEGMENTS, "log.initial.task.delay.ms": 0, "log.retention.check.interval.ms": 1000}
    with open_manager(a, config, time_ms=t0, topic_configs=topics) as m:
        compacted, deleting = m.create_log("c", 0), m.create_log("d", 0)
        fill(compacted, 20, timestamp=t0)
        fill(deleting, 20, timestamp=t0)
        before = compacted.segments
        m.advance_time(5000)
        assert deleting.log_start_offset == 20, "the scheduled retention ran"
        results = m.run_retention()
        assert ("c", 0) not in results and ("d", 0) in results
        assert compacted.segments == before and compacted.log_start_offset == 0
        assert deleted_files(a / "c-0") == []


# -- deleting partitions ------------------------------------------------------------------------


def test_create_and_delete_overly_long_topic(tmp_path: Path) -> None:
    """testCreateAndDeleteOverlyLongTopic / asyncDelete: a 249-character topic can be created;
    deleting renames its dir to <topic'>-<p>.<32 hex>-delete cut to 255 characters, drops it
    from get_log and the checkpoints, and removes it after log.segment.delete.delay.ms."""
    a = tmp_path / "a"
    topic = "x" * 249
    config = {"log.initial.task.delay.ms": 0, "log.segment.delete.delay.ms": 5000}
    with open_manager(a, config) as m:
        log = m.create_log(topic, 3)
        fill(log, 3)
        m.create_log("keep", 0)
        m.checkpoint()
        assert (topic, 3) in read_checkpoint(a / RECOVERY_POINTS)
        renamed = Path(m.delete_log(topic, 3))
        assert renamed.parent == a
        assert re.fullmatch(r"x+-3\.[0-9a-f]{32}-delete", renamed.name), renamed.name
        assert len(renamed.name) == 255
        assert renamed.is_dir() and not (a / f"{topic}-3").exists()
        assert (renamed / "00000000000000000000.log").stat().st_size > 0
        assert m.get_log(topic, 3) is None
        assert [(lg.topic, lg.partition) for lg in m.logs()] == [("keep", 0)]
        assert m.dirs_pending_deletion() == [str(renamed)]
        assert read_checkpoint(a / RECOVERY_POINTS) == {("keep", 0): 0}
        assert read_checkpoint(a / LOG_STARTS) == {}
        with pytest.raises(KafkaLogError):
            m.delete_log(topic, 3)
        m.advance_time(4999)
        assert renamed.is_dir() and m.dirs_pending_deletion() == [str(renamed)]
        m.advance_time(1001)  # kafka-delete-logs checks at least once a second
        assert not renamed.exists() and m.dirs_pending_deletion() == []
        assert m.create_log(topic, 3).log_end_offset == 0, "the partition can be created again"


def test_delete_dir_found_at_startup_is_removed_after_the_delay(tmp_path: Path) -> None:
    """A `-delete` dir found at start-up is not served, is queued (dirs_pending_deletion) and
    removed log.segment.delete.delay.ms after that start-up; a restart before that keeps it
    pending."""
    a = tmp_path / "a"
    config = {"log.initial.task.delay.ms": 0, "log.segment.delete.delay.ms": 5000}
    with open_manager(a, config) as m:
        fill(m.create_log("t", 0), 3)
        fill(m.create_log("t", 1), 3)
    doomed = a / ("t-0." + "0123456789abcdef" * 2 + "-delete")
    (a / "t-0").rename(doomed)
    with open_manager(a, config) as m:
        assert m.dirs_pending_deletion() == [str(doomed)]
        assert m.get_log("t", 0) is None
        assert [(lg.topic, lg.partition) for lg in m.logs()] == [("t", 1)]
        m.advance_time(2000)
    assert doomed.is_dir()
    with open_manager(a, config) as m:
        assert m.dirs_pending_deletion() == [str(doomed)]
        m.advance_time(4999)
        assert doomed.is_dir()
        m.advance_time(1001)
        assert not doomed.exists() and m.dirs_pending_deletion() == []
        kept = m.get_log("t", 1)
        assert kept is not None and kept.log_end_offset == 3


# -- what a log dir may hold --------------------------------------------------------------------


def test_stray_and_future_dirs(tmp_path: Path) -> None:
    """A `-stray` dir is kept untouched and listed in stray_dirs(), not served; a `-future` dir
    is loaded into future_logs() (and counted as a partition of its dir)."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        for p in range(2):
            fill(m.create_log("t", p), 3 + p)
        home = {p: log_dir_of(lg) for p in range(2) if (lg := m.get_log("t", p)) is not None}
    assert set(home.values()) == {a, b}
    stray = home[0] / ("t-0." + "a" * 32 + "-stray")
    (home[0] / "t-0").rename(stray)
    other = b if home[1] == a else a
    future = other / ("t-1." + "b" * 32 + "-future")
    shutil.copytree(home[1] / "t-1", future)
    stray_files = tree_digest(stray)
    with open_manager([a, b]) as m:
        assert m.stray_dirs() == [str(stray)]
        assert m.get_log("t", 0) is None
        futures = m.future_logs()
        assert [(f.path, f.topic, f.partition, f.log_end_offset) for f in futures] == [(str(future), "t", 1, 4)]
        current = m.get_log("t", 1)
        assert current is not None and log_dir_of(current) == home[1]
        assert [(lg.topic, lg.partition) for lg in m.logs()] == [("t", 1)]
        assert {d.path: d.partitions for d in m.log_dirs()}[str(other)] == 1
        del futures, current
    assert tree_digest(stray) == stray_files


@pytest.mark.parametrize("name", ["lost+found", ".snapshots", "foo-bar", "orders"])
def test_unparsable_subdirectory_fails_startup(tmp_path: Path, name: str) -> None:
    """A sub-directory that is not <topic>-<partition> (e.g. ext4's lost+found) is fatal: "Found
    directory <dir>, '<name>' is not in the form of topic-partition ..." (Kafka's rule)."""
    a = tmp_path / "a"
    with open_manager(a) as m:
        fill(m.create_log("t", 0), 1)
    (a / name).mkdir()
    with pytest.raises(KafkaLogError, match=re.escape(str(a / name))) as e:
        open_manager(a)
    assert "topic-partition" in str(e.value)
    (a / name).rmdir()
    with open_manager(a) as m:  # the failed start-up left no lock behind
        assert [(lg.topic, lg.log_end_offset) for lg in m.logs()] == [("t", 1)]


def test_skipped_dirs_and_plain_files(tmp_path: Path) -> None:
    """testLoadLogsSkipRemoteIndexCache: `remote-log-index-cache` and `__cluster_metadata-0` are
    skipped, plain files are ignored; none of them is touched."""
    a = tmp_path / "a"
    with open_manager(a) as m:
        fill(m.create_log("t", 0), 2)
    (a / "remote-log-index-cache").mkdir()
    (a / "remote-log-index-cache" / "0_abc.index").write_bytes(b"not an index")
    (a / "__cluster_metadata-0").mkdir()
    (a / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"not a segment")
    (a / "notes.txt").write_text("operator notes")
    (a / "orders-9.txt").write_text("a plain file with a partition-like name")
    extras = ["remote-log-index-cache", "__cluster_metadata-0", "notes.txt", "orders-9.txt"]
    digests = {n: tree_digest(a / n) if (a / n).is_dir() else (a / n).read_bytes() for n in extras}
    with open_manager(a) as m:
        assert [(lg.topic, lg.partition) for lg in m.logs()] == [("t", 0)]
        assert m.load_summary()[0].logs_loaded == 1
        m.checkpoint()
        assert read_checkpoint(a / RECOVERY_POINTS) == {("t", 0): 2}
    assert {n: tree_digest(a / n) if (a / n).is_dir() else (a / n).read_bytes() for n in extras} == digests


def test_duplicate_partition_in_two_dirs_fails_startup(tmp_path: Path) -> None:
    """"Duplicate log directories for <tp> are found in both <a> and <b>": fatal, naming both;
    deleting one copy lets the manager start."""
    a, b = dirs_of(tmp_path, "a", "b")
    with open_manager([a, b]) as m:
        home = log_dir_of(m.create_log("t", 0))
        fill(m.create_log("t", 0), 2)
    other = b if home == a else a
    shutil.copytree(home / "t-0", other / "t-0")
    with pytest.raises(KafkaLogError) as e:
        open_manager([a, b])
    assert str(a / "t-0") in str(e.value) and str(b / "t-0") in str(e.value)
    shutil.rmtree(other / "t-0")
    with open_manager([a, b]) as m:
        log = m.get_log("t", 0)
        assert log is not None and log.log_end_offset == 2


# -- loading ------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 4])
def test_recovery_progress_and_parallel_loading(tmp_path: Path, threads: int) -> None:
    """loadLogs with num.recovery.threads.per.data.dir threads per dir: after an unclean
    shutdown every log is recovered and correct, and on_progress (Kafka's
    remainingLogsToRecover / remainingSegmentsToRecover gauges) ends at zero for every dir."""
    dirs = dirs_of(tmp_path, "a", "b")
    m = open_manager(dirs, SMALL_SEGMENTS)
    ends = {}
    for partition in range(12):
        log = m.create_log("t", partition)
        fill(log, 12 + partition)
        ends[partition] = log.log_end_offset
    del m, log
    gc.collect()
    seen: list[list[DirRecoveryProgress]] = []
    config = {**SMALL_SEGMENTS, "num.recovery.threads.per.data.dir": threads}
    m = open_manager(dirs, config, on_progress=seen.append)
    try:
        assert seen, "on_progress was never called"
        assert all({p.dir for p in snapshot} == {str(d) for d in dirs} for snapshot in seen)
        for last in seen[-1]:
            assert (last.logs_total, last.logs_remaining, last.segments_remaining) == (6, 0, 0), last
        for d in dirs:
            remaining = [p.logs_remaining for snapshot in seen for p in snapshot if p.dir == str(d)]
            assert remaining == sorted(remaining, reverse=True) and remaining[0] <= 6
        for s in m.load_summary():
            assert not s.had_clean_shutdown and s.logs_loaded == 6 and s.error is None
            assert s.segments_recovered >= s.segments_loaded > 6, "no checkpoint: every segment is recovered"
        logs = m.logs()
        assert {lg.partition: lg.log_end_offset for lg in logs} == ends
        for lg in logs:
            check_contents(lg)
        del logs, lg
    finally:
        m.close()


def test_segments_recovered_never_exceeds_segments_loaded(tmp_path: Path) -> None:
    a = tmp_path / "a"
    m = open_manager(a, SMALL_SEGMENTS)
    log = m.create_log("t", 0)
    fill(log, 16)
    active = Path(log.segments[-1].path)
    assert not active.with_suffix(".index").exists(), "the trigger: an active segment without .index"
    del m, log
    gc.collect()
    with open_manager(a, SMALL_SEGMENTS) as m:
        (s,) = m.load_summary()
        assert not s.had_clean_shutdown
        assert s.segments_recovered <= s.segments_loaded


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from kafkalog import LogManager, Record
    m = LogManager(sys.argv[1:], {"internal.segment.bytes": 2048}, scheduler=False)
    logs = [m.create_log("orders", p) for p in range(2)]
    value = b"v" * 100
    def put(i):
        for log in logs:
            log.append([Record(b"k%d" % i, value + b"%d" % i)])
    for i in range(100):
        put(i)
    m.flush()
    m.checkpoint()
    print("ready", flush=True)
    at_checkpoint = sum(len(log.segments) for log in logs)
    i = 100
    while True:
        put(i)
        i += 1
        if at_checkpoint is not None and sum(len(log.segments) for log in logs) >= at_checkpoint + 4:
            print("rolled", flush=True)  # four segments past the recovery point; still writing
            at_checkpoint = None
    """
)


def test_unclean_shutdown_after_sigkill(tmp_path: Path) -> None:
    """A writer killed with SIGKILL mid-append: the next start-up (unclean, from the recovery
    points checkpointed before the kill) keeps every record flushed before the checkpoint,
    offsets stay contiguous with intact contents, only segments past the recovery point are
    recovered, and no .swap/.cleaned/.tmp file remains. The dead writer's `.lock` does not
    block the new manager."""
    dirs = dirs_of(tmp_path, "a", "b")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, *map(str, dirs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    try:
        assert read_line(proc, "ready") == b"ready"
        # The writer says when it has rolled four segments past its checkpoint, and goes on.
        assert read_line(proc, "rolled") == b"rolled"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=HANG_GUARD_S) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert all((d / LOCK).exists() for d in dirs) and not any((d / CLEAN_SHUTDOWN).exists() for d in dirs)
    with open_manager(dirs, {"internal.segment.bytes": 2048}) as m:
        summary = m.load_summary()
        assert [s.had_clean_shutdown for s in summary] == [False, False]
        assert 0 < sum(s.segments_recovered for s in summary) < sum(s.segments_loaded for s in summary)
        logs = m.logs()
        assert [(lg.topic, lg.partition) for lg in logs] == [("orders", 0), ("orders", 1)]
        for lg in logs:
            assert lg.log_end_offset >= 100
            check_contents(lg)
            table = lg.to_arrow()
            assert table.column("offset").to_pylist() == list(range(lg.log_end_offset))
        assert leftover_temp_files(tmp_path) == []
        del logs, lg


# -- the scheduler thread, import, close --------------------------------------------------------


def test_scheduler_thread_writes_checkpoints(tmp_path: Path) -> None:
    """With the scheduler thread (kafka-scheduler-0) on the system clock, the recovery-point
    checkpoint task runs every log.flush.offset.checkpoint.interval.ms; close stops the thread."""
    a = tmp_path / "a"
    config = {"log.initial.task.delay.ms": 0, "log.flush.offset.checkpoint.interval.ms": 50}
    m = LogManager([a], config)
    try:
        # The thread names itself once it runs (until then it shows its parent's name).
        wait_for(lambda: "kafka-scheduler" in native_thread_names(), what="the kafka-scheduler-0 thread")
        log = m.create_log("t", 0)
        fill(log, 3)
        log.flush()
        wait_for(
            lambda: (a / RECOVERY_POINTS).exists() and read_checkpoint(a / RECOVERY_POINTS) == {("t", 0): 3},
            what="the scheduled recovery-point checkpoint",
        )
    finally:
        m.close()
    # close() joined the thread; it leaves /proc a moment later.
    wait_for(lambda: "kafka-scheduler" not in native_thread_names(), what="the scheduler thread to go")


def test_no_background_thread_when_scheduler_is_off(tmp_path: Path) -> None:
    """scheduler=False (and a manual clock) starts no thread: while the manager is open the
    process has no thread it did not have before (the start-up threads were joined when open
    returned; they leave /proc a moment later, so the check waits for that)."""
    before = set(native_threads())
    with open_manager(tmp_path / "a"):
        wait_for_new_threads(before, [], "no thread but the ones before (manual clock)")
    with LogManager([tmp_path / "b"], scheduler=False):
        wait_for_new_threads(before, [], "no thread but the ones before (system clock)")
    with LogManager([tmp_path / "c"]):
        # The control: scheduler=True adds kafka-scheduler-0 and kafka-log-cleaner-thread-0.
        wait_for_new_threads(before, ["kafka-log-clean", "kafka-scheduler"], "the scheduler's two threads")


IMPORT_PROBE = textwrap.dedent(
    """
    import os, sys, threading
    py_before, os_before = len(threading.enumerate()), len(os.listdir("/proc/self/task"))
    import kafkalog, kafkalog.manager, kafkalog.testing, kafkalog.spark, kafkalog.cli
    late = sorted(m for m in ("pyarrow", "numpy", "pyspark") if m in sys.modules)
    print(py_before, len(threading.enumerate()), os_before, len(os.listdir("/proc/self/task")), ",".join(late) or "-")
    """
)


def test_import_starts_no_threads() -> None:
    """House style: no thread at import time (Spark forks Python workers). pyarrow (whose
    numpy starts OpenBLAS's pool) and pyspark are imported on first use, not by ``import
    kafkalog`` or its command line and Spark modules."""
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    py_before, py_after, os_before, os_after, late = out.stdout.split()
    assert (int(py_after), int(os_after)) == (int(py_before), int(os_before))
    assert late == "-", f"imported by import kafkalog: {late}"


def test_importing_the_demo_starts_no_threads() -> None:
    """The demo (``python -m kafkalog.demo``; pyspark and its Spark session are its business)
    imports numpy and pyarrow, whose import starts OpenBLAS's threads, only when it generates."""
    probe = IMPORT_PROBE.replace("import kafkalog, kafkalog.manager, kafkalog.testing, kafkalog.spark, kafkalog.cli",
                                 "import kafkalog.demo, kafkalog.demo_events, kafkalog.spark.pyspark_bytecode")
    probe = probe.replace('("pyarrow", "numpy", "pyspark")', '("pyarrow", "numpy")')
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    py_before, py_after, os_before, os_after, late = out.stdout.split()
    assert (int(py_after), int(os_after)) == (int(py_before), int(os_before))
    assert late == "-", f"imported by import kafkalog.demo: {late}"


def test_kafka_schema_is_exported_on_first_use() -> None:
    """``kafkalog.KAFKA_SCHEMA`` (and ``from kafkalog import *``) still give the Arrow schema."""
    import kafkalog
    from kafkalog.arrow import KAFKA_SCHEMA

    assert kafkalog.KAFKA_SCHEMA is KAFKA_SCHEMA and "KAFKA_SCHEMA" in kafkalog.__all__
    namespace: dict[str, object] = {}
    exec("from kafkalog import *", namespace)  # noqa: S102 - the star import is what is tested
    assert namespace["KAFKA_SCHEMA"] is KAFKA_SCHEMA
    assert "KAFKA_SCHEMA" in dir(kafkalog)
    with pytest.raises(AttributeError, match="no attribute 'NOT_THERE'"):
        kafkalog.NOT_THERE  # type: ignore[attr-defined]  # noqa: B018


def test_managed_log_close_is_a_no_op_and_manager_close_is_idempotent(tmp_path: Path) -> None:
    """A managed UnifiedLog's close() (and its with-block) leaves it usable; LogManager.close()
    twice is harmless; afterwards the manager's operations raise IllegalStateError and its logs
    are closed."""
    a = tmp_path / "a"
    m = open_manager(a)
    log = m.create_log("t", 0)
    assert log.managed
    with UnifiedLog.open(tmp_path / "alone-0") as alone:
        assert not alone.managed
    log.close()
    fill(log, 2)
    with log as same:
        fill(same, 1)
    fill(log, 1)
    assert log.log_end_offset == 4
    m.close()
    m.close()
    assert (a / CLEAN_SHUTDOWN).exists() and not (a / LOCK).exists()
    with pytest.raises(IllegalStateError):
        m.create_log("t", 1)
    with pytest.raises(IllegalStateError):
        m.flush()
    with pytest.raises(IllegalStateError):
        m.checkpoint()
    with pytest.raises(IllegalStateError):
        m.run_retention()
    with pytest.raises(IllegalStateError):
        m.delete_log("t", 0)
    with pytest.raises(LogClosedError):
        fill(log, 1)
    with open_manager(a) as again:
        reopened = again.get_log("t", 0)
        assert reopened is not None and reopened.log_end_offset == 4


@pytest.mark.parametrize("call", ["get_log", "logs", "update_topic_config"])
def test_reads_after_close_raise(tmp_path: Path, call: str) -> None:
    m = open_manager(tmp_path / "a")
    m.create_log("t", 0)
    m.close()
    with pytest.raises(IllegalStateError):
        if call == "get_log":
            m.get_log("t", 0)
        elif call == "logs":
            m.logs()
        else:
            m.update_topic_config("t", {"retention.ms": 1000})
