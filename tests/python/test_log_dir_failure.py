"""Log-dir failure in kafkalog.LogManager (Kafka's LogDirFailureChannel and
LogManager.handleLogDirFailure): an I/O error in one log dir takes that whole dir offline (its
logs closed without writes, its checkpoints and clean-shutdown marker never written again, no
new partition placed there) while the other dirs keep serving; when the last dir fails, every
operation raises AllLogDirsOfflineError.

Faults are injected with kafkalog.testing.fault on a log dir's path, so every file kafkalog
touches in that dir fails the chosen operation with the chosen errno.
"""

from __future__ import annotations

import errno
import gc
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalog import DirRecoveryProgress, LogManager, UnifiedLog
from kafkalog.exceptions import AllLogDirsOfflineError, KafkaLogError, KafkaStorageError
from kafkalog.testing import fault
from kit.manager import (
    CLEAN_SHUTDOWN,
    LOCK,
    LOG_STARTS,
    RECOVERY_POINTS,
    SMALL_SEGMENTS,
    check_contents,
    fill,
    log_dir_of,
    now_ms,
    open_manager,
    partition_dirs,
    read_checkpoint,
)


def two_dir_manager(tmp_path: Path) -> tuple[LogManager, Path, Path, UnifiedLog, UnifiedLog]:
    """A manager over dirs a and b with partition t-0 in a and t-1 in b, three records each,
    checkpointed once."""
    a, b = tmp_path / "a", tmp_path / "b"
    m = open_manager([a, b])
    m.cordon_log_dir(b)
    in_a = m.create_log("t", 0)
    m.cordon_log_dir(b, False)
    m.cordon_log_dir(a)
    in_b = m.create_log("t", 1)
    m.cordon_log_dir(a, False)
    assert (log_dir_of(in_a), log_dir_of(in_b)) == (a, b)
    fill(in_a, 3)
    fill(in_b, 3)
    m.checkpoint()
    return m, a, b, in_a, in_b


def file_state(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def assert_dir_offline_and_others_serve(
    m: LogManager, failed: Path, healthy: Path, survivor: UnifiedLog, reason_names: str
) -> None:
    """What Kafka's handleLogDirFailure leaves behind, checked from the outside."""
    offline = m.offline_log_dirs
    assert list(offline) == [str(failed)]
    assert reason_names in offline[str(failed)], offline
    assert m.live_log_dirs == [str(healthy)]
    info = {d.path: d for d in m.log_dirs()}
    assert not info[str(failed)].online and info[str(failed)].partitions == 0
    assert m.get_log("t", 0) is None, "the failed dir's partitions are no longer served"
    assert [(lg.topic, lg.partition) for lg in m.logs()] == [("t", 1)]
    before = survivor.log_end_offset
    fill(survivor, 2)
    assert survivor.log_end_offset == before + 2
    check_contents(survivor)
    placed = [log_dir_of(m.create_log("t", p)) for p in range(2, 6)]
    assert placed == [healthy] * 4, "new partitions go only to the healthy dir"


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_write_error_on_append_takes_the_dir_offline(tmp_path: Path, err: int) -> None:
    """An append hitting EIO (or ENOSPC) in dir a raises KafkaStorageError; a goes offline with
    a reason naming the segment file; t-0 is no longer served and its handle refuses appends
    and reads; b keeps appending and reading and gets every new partition; checkpoint() writes
    only b's files (a's stay as they were)."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        a_files = {name: file_state(a / name) for name in (RECOVERY_POINTS, LOG_STARTS)}
        segment = a / "t-0" / "00000000000000000000.log"
        with fault(a, "write", err):
            with pytest.raises(KafkaStorageError) as e:
                fill(in_a, 1)
        assert str(a) in str(e.value)
        assert_dir_offline_and_others_serve(m, a, b, in_b, str(segment))
        with pytest.raises(KafkaStorageError):
            fill(in_a, 1)
        with pytest.raises(KafkaStorageError):
            in_a.read(0)
        m.checkpoint()
        assert {name: file_state(a / name) for name in a_files} == a_files, "a's checkpoints were rewritten"
        assert read_checkpoint(b / RECOVERY_POINTS) == {("t", p): 0 for p in range(2, 6)} | {("t", 1): 0}
        m.flush()
        m.checkpoint()
        assert read_checkpoint(b / RECOVERY_POINTS)[("t", 1)] == 5
        assert {name: file_state(a / name) for name in a_files} == a_files
    assert segment.read_bytes() != b"", "a's data is left on disk as it was"


def test_fsync_error_during_flush_takes_the_dir_offline(tmp_path: Path) -> None:
    """An fsync failure while flushing dir a's log takes a offline (reason naming the file);
    b's log is still flushed (its recovery point reaches its log end)."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        fill(in_a, 2)
        fill(in_b, 2)
        with fault(a, "fsync", errno.EIO):
            try:
                m.flush()
            except KafkaStorageError:
                pass  # whether flush() reports it is test_flush_reports_an_fsync_failure's question
        assert in_b.recovery_point == in_b.log_end_offset == 5
        assert_dir_offline_and_others_serve(m, a, b, in_b, str(a / "t-0" / "00000000000000000000.log"))


def test_fsync_error_in_a_log_flush_raises_kafka_storage_error(tmp_path: Path) -> None:
    """UnifiedLog.flush() on a managed log whose fsync fails raises KafkaStorageError (Kafka's
    maybeHandleIOException) and takes its dir offline."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        fill(in_a, 1)
        with fault(a, "fsync", errno.EIO):
            with pytest.raises(KafkaStorageError):
                in_a.flush()
        assert list(m.offline_log_dirs) == [str(a)]
        assert m.get_log("t", 0) is None


def test_flush_reports_an_fsync_failure(tmp_path: Path) -> None:
    """LogManager.flush() is documented as 'Fsyncs every log up to its log end offset'; when it
    could not, it must say so."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        fill(in_a, 1)
        with fault(a, "fsync", errno.EIO):
            with pytest.raises(KafkaStorageError):
                m.flush()


def test_create_log_skips_a_dir_that_fails(tmp_path: Path) -> None:
    """getOrCreateLog / createLogDirectory: when making the partition directory fails in the
    preferred dir, that dir goes offline and the next candidate gets the partition."""
    a, b = tmp_path / "a", tmp_path / "b"
    with open_manager([a, b]) as m:
        with fault(a, "open", errno.EIO):
            log = m.create_log("t", 0)
        assert log_dir_of(log) == b
        assert list(m.offline_log_dirs) == [str(a)]
        assert partition_dirs(a) == []
        fill(log, 1)


def test_checkpoint_write_failure_takes_the_dir_offline(tmp_path: Path) -> None:
    """A checkpoint file that cannot be written (here: its rename fails) takes its dir offline,
    as Kafka's CheckpointFileWithFailureHandler does; the other dir's checkpoint is written."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        fill(in_b, 4)
        in_b.flush()
        with fault(a, "rename", errno.EIO):
            m.checkpoint()
        assert list(m.offline_log_dirs) == [str(a)]
        assert "recovery-point-offset-checkpoint" in m.offline_log_dirs[str(a)]
        assert read_checkpoint(b / RECOVERY_POINTS) == {("t", 1): 7}


# -- every dir failed ---------------------------------------------------------------------------


MANAGER_CALLS: dict[str, Callable[[LogManager], object]] = {
    "create_log": lambda m: m.create_log("t", 9),
    "flush": lambda m: m.flush(),
    "checkpoint": lambda m: m.checkpoint(),
    "run_retention": lambda m: m.run_retention(),
    "delete_log": lambda m: m.delete_log("t", 1),
}


def test_the_last_dir_failing_makes_every_call_raise(tmp_path: Path) -> None:
    """handleLogDirFailure with no live dir left: Kafka halts ("Shutdown broker because all log
    dirs in ... have failed"); kafkalog raises AllLogDirsOfflineError (a KafkaStorageError)
    saying so from every operation. close() still works and writes no marker."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with fault(a, "write", errno.EIO):
        with pytest.raises(KafkaStorageError):
            fill(in_a, 1)
    with fault(b, "write", errno.ENOSPC):
        with pytest.raises(KafkaStorageError):
            fill(in_b, 1)
    assert set(m.offline_log_dirs) == {str(a), str(b)} and m.live_log_dirs == []
    for name, call in MANAGER_CALLS.items():
        with pytest.raises(AllLogDirsOfflineError) as e:
            call(m)
        assert re.search(r"all log dirs.*failed", str(e.value)), (name, str(e.value))
        assert str(a) in str(e.value) and str(b) in str(e.value), name
    with pytest.raises(KafkaStorageError):
        fill(in_b, 1)
    m.close()
    assert not (a / CLEAN_SHUTDOWN).exists() and not (b / CLEAN_SHUTDOWN).exists()


def test_single_dir_failure_is_fatal(tmp_path: Path) -> None:
    """With one log dir, its failure is the failure of all dirs."""
    a = tmp_path / "a"
    with open_manager(a) as m:
        log = m.create_log("t", 0)
        fill(log, 1)
        with fault(a, "fsync", errno.EIO):
            with pytest.raises(KafkaStorageError):
                log.flush()
        with pytest.raises(AllLogDirsOfflineError):
            m.create_log("t", 1)


@pytest.mark.parametrize("call", ["get_log", "logs"])
def test_reads_after_all_dirs_failed_raise(tmp_path: Path, call: str) -> None:
    a = tmp_path / "a"
    m = open_manager(a)
    log = m.create_log("t", 0)
    with fault(a, "write", errno.EIO):
        with pytest.raises(KafkaStorageError):
            fill(log, 1)
    with pytest.raises(AllLogDirsOfflineError):
        if call == "get_log":
            m.get_log("t", 0)
        else:
            m.logs()
    m.close()


# -- start-up -----------------------------------------------------------------------------------


def crashed_two_dir_layout(tmp_path: Path) -> tuple[list[Path], dict[tuple[str, int], int]]:
    """Dirs a and b with two partitions each, several segments, left without close (so the
    next start-up must recover every segment)."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = open_manager(dirs, SMALL_SEGMENTS)
    for p in range(4):
        fill(m.create_log("t", p), 20)
    ends = {(lg.topic, lg.partition): lg.log_end_offset for lg in m.logs()}
    assert {log_dir_of(lg) for lg in m.logs()} == set(dirs)
    del m
    gc.collect()
    return dirs, ends


def test_read_error_while_recovering_takes_only_that_dir_offline(tmp_path: Path) -> None:
    """loadLogs: an IOException while loading a dir's logs marks that dir offline ("Error while
    loading log dir") and loading goes on: b's logs are served, a's are not, the summary names
    the error; a's files are untouched, so without the fault everything comes back."""
    (a, b), ends = crashed_two_dir_layout(tmp_path)
    with fault(a, "read", errno.EIO):
        m = open_manager([a, b], SMALL_SEGMENTS)
    with m:
        assert list(m.offline_log_dirs) == [str(a)]
        reason = m.offline_log_dirs[str(a)]
        assert str(a) in reason and ".log" in reason
        summary = {s.dir: s for s in m.load_summary()}
        assert summary[str(a)].error is not None and summary[str(b)].error is None
        assert summary[str(b)].logs_loaded == 2
        served = {(lg.topic, lg.partition): lg.log_end_offset for lg in m.logs()}
        assert served == {tp: end for tp, end in ends.items() if (b / f"{tp[0]}-{tp[1]}").is_dir()}
        assert {log_dir_of(m.create_log("new", p)) for p in range(3)} == {b}
    assert not (a / CLEAN_SHUTDOWN).exists() and (b / CLEAN_SHUTDOWN).exists()
    with open_manager([a, b], SMALL_SEGMENTS) as m:
        assert m.offline_log_dirs == {}
        assert {(lg.topic, lg.partition): lg.log_end_offset for lg in m.logs() if lg.topic == "t"} == ends
        for lg in m.logs():
            check_contents(lg)


def test_progress_ends_at_zero_after_a_dir_failed_to_load(tmp_path: Path) -> None:
    (a, b), _ = crashed_two_dir_layout(tmp_path)
    seen: list[list[DirRecoveryProgress]] = []
    with fault(a, "read", errno.EIO):
        m = open_manager([a, b], SMALL_SEGMENTS, on_progress=seen.append)
    with m:
        assert list(m.offline_log_dirs) == [str(a)]
        assert [(p.logs_remaining, p.segments_remaining) for p in seen[-1]] == [(0, 0), (0, 0)]


# -- close after a failure ----------------------------------------------------------------------


def test_close_after_a_dir_failure_marks_only_the_healthy_dir_clean(tmp_path: Path) -> None:
    """LogManager.shutdown writes checkpoints and .kafka_cleanshutdown only in live dirs: the
    failed dir gets neither (its next start-up recovers), the healthy one gets both and its
    `.lock` is deleted."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    a_checkpoint = file_state(a / RECOVERY_POINTS)
    with fault(a, "write", errno.EIO):
        with pytest.raises(KafkaStorageError):
            fill(in_a, 1)
    fill(in_b, 2)
    m.close(broker_epoch=11)
    assert not (a / CLEAN_SHUTDOWN).exists()
    assert (b / CLEAN_SHUTDOWN).read_bytes() == b'{"version":0,"brokerEpoch":11}'
    assert file_state(a / RECOVERY_POINTS) == a_checkpoint
    assert read_checkpoint(b / RECOVERY_POINTS) == {("t", 1): 5}
    assert not (b / LOCK).exists()
    m = open_manager([a, b], time_ms=now_ms())
    with m:
        summary = {s.dir: s.had_clean_shutdown for s in m.load_summary()}
        assert summary == {str(a): False, str(b): True}
        back = m.get_log("t", 0)
        assert back is not None and back.log_end_offset == 3, "a's data came back after the fault"
        check_contents(back)
        del back


def test_failed_dir_lock_file_is_deleted(tmp_path: Path) -> None:
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    with m:
        with fault(a, "write", errno.EIO):
            with pytest.raises(KafkaStorageError):
                fill(in_a, 1)
        assert list(m.offline_log_dirs) == [str(a)]
        assert (b / LOCK).exists()
        assert not (a / LOCK).exists()


def test_failed_close_job_writes_no_marker_in_that_dir(tmp_path: Path) -> None:
    """LogManager.shutdown writes a dir's checkpoints and .kafka_cleanshutdown only if every
    flush-and-close job of that dir succeeded: an fsync failure while closing a's log leaves a
    unmarked (its next start-up recovers) while b is marked; close() reports the failure."""
    m, a, b, in_a, in_b = two_dir_manager(tmp_path)
    a_checkpoint = file_state(a / RECOVERY_POINTS)
    fill(in_a, 2)
    fill(in_b, 2)
    with fault(a, "fsync", errno.EIO):
        with pytest.raises(KafkaLogError, match=re.escape(str(a))):
            m.close(broker_epoch=3)
    assert not (a / CLEAN_SHUTDOWN).exists()
    assert file_state(a / RECOVERY_POINTS) == a_checkpoint
    assert (b / CLEAN_SHUTDOWN).read_bytes() == b'{"version":0,"brokerEpoch":3}'
    assert read_checkpoint(b / RECOVERY_POINTS) == {("t", 1): 5}
    with open_manager([a, b]) as again:
        assert {s.dir: s.had_clean_shutdown for s in again.load_summary()} == {str(a): False, str(b): True}
        back = again.get_log("t", 0)
        assert back is not None and back.log_end_offset == 5
        del back
