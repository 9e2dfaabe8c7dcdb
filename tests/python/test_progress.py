"""Progress callbacks of long calls: ``compact_now`` (a manager's and a standalone log's),
``LogManager.run_retention`` and ``to_arrow`` / ``iter_arrow``.

Each phase's reports rise monotonically and end at their total; the callback runs on the
calling thread; an exception raised in it propagates once the operation stopped, and leaves
the log neither locked nor half-cleaned (a later clean, retention and reads all work and see
every latest value).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafkalog import Progress, Record, UnifiedLog, arrow_read
from kafkalog.exceptions import InvalidArgumentTypeError
from kit.manager import SMALL_SEGMENTS, fill, now_ms, open_manager

BROKER: dict[str, Any] = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.io.buffer.size": 65536}
COMPACTED: dict[str, Any] = {"cleanup.policy": "compact", "internal.segment.bytes": 1024, "min.cleanable.dirty.ratio": 0.01}
KEYS = 60


class Stop(Exception):
    """Raised by a callback."""


class Recorder:
    """Records every report and the thread it came on; optionally raises at the n-th."""

    def __init__(self, raise_at: int | None = None) -> None:
        self.reports: list[Progress] = []
        self.threads: set[int] = set()
        self.raise_at = raise_at

    def __call__(self, p: Progress) -> None:
        self.reports.append(p)
        self.threads.add(threading.get_ident())
        if self.raise_at is not None and len(self.reports) >= self.raise_at:
            raise Stop(f"stopped at report {len(self.reports)}")

    def phases(self) -> dict[tuple[int, str], list[Progress]]:
        out: dict[tuple[int, str], list[Progress]] = defaultdict(list)
        for p in self.reports:
            out[(p.round, p.phase)].append(p)
        return out

    def check_each_phase_rises_to_its_total(self) -> None:
        assert self.reports, "no report"
        for key, reports in self.phases().items():
            dones = [p.done for p in reports]
            assert dones == sorted(dones), (key, dones)
            assert len({p.total for p in reports}) == 1, (key, reports)
            assert dones[-1] == reports[-1].total, (key, reports)
        assert self.threads == {threading.get_ident()}, "called on the calling thread only"


def dirty(log: UnifiedLog, rounds: int = 4) -> dict[bytes, bytes]:
    latest = {}
    for r in range(rounds):
        for k in range(KEYS):
            key, value = b"key-%03d" % k, b"value-%d-%d" % (r, k) + b"x" * 40
            log.append([Record(key, value)])
            latest[key] = value
    log.roll()
    return latest


def latest_values(log: UnifiedLog) -> dict[bytes, bytes]:
    out = {}
    for r in log.records():
        assert r.key is not None and r.value is not None
        out[r.key] = r.value
    return out


def test_a_managed_compact_now_reports_indexing_then_cleaning(tmp_path: Path) -> None:
    with open_manager(tmp_path / "d", BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        latest = dirty(log)
        dirty_bytes = sum(s.size for s in log.segments[:-1])  # all but the empty active segment
        seen = Recorder()
        result = m.compact_now("c", 0, on_progress=seen)
        seen.check_each_phase_rises_to_its_total()
        assert list(seen.phases()) == [(1, "indexing"), (1, "cleaning")]
        assert all(p.unit == "bytes" for p in seen.reports)
        indexing = seen.phases()[(1, "indexing")][-1]
        assert indexing.total == dirty_bytes
        assert seen.phases()[(1, "cleaning")][-1].total == dirty_bytes, "every segment below the active one recopied"
        assert result.stats.messages_written == KEYS
        assert latest_values(log) == latest
        assert isinstance(seen.reports[0], Progress) and seen.reports[0] == Progress(*seen.reports[0])


def test_a_standalone_compact_in_several_rounds_reports_each_round(tmp_path: Path) -> None:
    """A map for about 25 keys: the clean runs in rounds, each an indexing then a cleaning phase."""
    with UnifiedLog.open(tmp_path / "s-0", COMPACTED) as log:
        latest = dirty(log)
        seen = Recorder()
        result = log.compact_now(dedupe_buffer_size=24 * 28, load_factor=0.9, on_progress=seen)
        assert len(result.passes) >= 2
        seen.check_each_phase_rises_to_its_total()
        rounds = sorted({p.round for p in seen.reports})
        assert rounds == list(range(1, len(result.passes) + 1))
        for r in rounds:
            assert [phase for (rr, phase) in seen.phases() if rr == r] == ["indexing", "cleaning"]
        assert latest_values(log) == latest


@pytest.mark.parametrize("raise_at", [1, 2, 3])
def test_an_exception_in_the_callback_stops_a_managed_clean_cleanly(tmp_path: Path, raise_at: int) -> None:
    with open_manager(tmp_path / "d", BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        latest = dirty(log)
        seen = Recorder(raise_at=raise_at)
        with pytest.raises(Stop, match=f"stopped at report {raise_at}"):
            m.compact_now("c", 0, on_progress=seen)
        assert len(seen.reports) == raise_at, "no callback after it raised"
        # Not locked, not half-cleaned: every latest value is there, no .cleaned file is left,
        # the partition is free for the next clean, which finishes the job.
        assert latest_values(log) == latest
        assert not list(Path(log.path).glob("*.cleaned"))
        status = m.cleaner_status("c", 0)[0]
        assert status.uncleanable_reason is None
        m.compact_now("c", 0)
        assert [r.value for r in log.records()] == list(latest.values())
        log.append([Record(b"after", b"v")])


def test_an_exception_in_the_callback_stops_a_standalone_clean_cleanly(tmp_path: Path) -> None:
    with UnifiedLog.open(tmp_path / "s-0", COMPACTED) as log:
        latest = dirty(log)
        with pytest.raises(Stop):
            log.compact_now(dedupe_buffer_size=24 * 28, on_progress=Recorder(raise_at=1))
        assert latest_values(log) == latest
        assert not list(Path(log.path).glob("*.cleaned"))
        log.compact_now()
        assert latest_values(log) == latest
        log.truncate_to(log.log_end_offset)  # the cleaning guard is free


def test_run_retention_reports_logs(tmp_path: Path) -> None:
    t0 = now_ms()
    with open_manager(tmp_path / "d", {"log.initial.task.delay.ms": 10**12}, time_ms=t0) as m:
        for p in range(3):
            fill(m.create_log("t", p, {**SMALL_SEGMENTS, "retention.ms": 1000}), 20, timestamp=t0)
        m.advance_time(1001)
        seen = Recorder()
        results = m.run_retention(on_progress=seen)
        seen.check_each_phase_rises_to_its_total()
        assert {(p.phase, p.unit, p.total) for p in seen.reports} == {("retention", "logs", 3)}
        assert seen.reports[-1].done == 3 and len(results) == 3
        assert all(r.deleted for r in results.values())


def test_an_exception_in_the_retention_callback_propagates_and_leaves_the_manager_usable(tmp_path: Path) -> None:
    t0 = now_ms()
    with open_manager(tmp_path / "d", {"log.initial.task.delay.ms": 10**12}, time_ms=t0) as m:
        for p in range(3):
            fill(m.create_log("t", p, {**SMALL_SEGMENTS, "retention.ms": 1000}), 20, timestamp=t0)
        m.advance_time(1001)
        with pytest.raises(Stop):
            m.run_retention(on_progress=Recorder(raise_at=1))
        again = m.run_retention()
        assert len(again) == 3
        for p in range(3):
            log = m.get_log("t", p)
            assert log is not None and log.log_start_offset == 20
            log.append([Record(b"k", b"v")])


def test_to_arrow_reports_offsets_read(tmp_path: Path) -> None:
    with UnifiedLog.open(tmp_path / "r-0", SMALL_SEGMENTS) as log:
        fill(log, 200)
        seen = Recorder()
        table = log.to_arrow(10, on_progress=seen)
        assert table.num_rows == 190
        seen.check_each_phase_rises_to_its_total()
        assert {(p.phase, p.unit, p.total) for p in seen.reports} == {("reading", "offsets", 190)}
        chunked = Recorder()
        batches = list(log.iter_arrow(max_chunk_bytes=2048, on_progress=chunked))
        chunked.check_each_phase_rises_to_its_total()
        assert len(chunked.reports) >= len(batches) > 3
        with pytest.raises(Stop):
            log.to_arrow(on_progress=Recorder(raise_at=2))


def test_to_arrow_on_threads_reports_on_the_calling_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_read, "MIN_PIECE_BYTES", 1)
    monkeypatch.setattr(pa, "cpu_count", lambda: 4)
    with UnifiedLog.open(tmp_path / "r-0", SMALL_SEGMENTS) as log:
        fill(log, 200)
        seen = Recorder()
        table = log.to_arrow(10, on_progress=seen)
        assert table.equals(log.to_arrow(10, use_threads=False)) and table.num_rows == 190
        seen.check_each_phase_rises_to_its_total()
        assert {(p.phase, p.unit, p.total) for p in seen.reports} == {("reading", "offsets", 190)}
        assert len(seen.reports) > 4  # each of the four pieces reports its chunks
        # A callback that raises stops every piece; the pool is gone when the error arrives.
        with pytest.raises(Stop):
            log.to_arrow(on_progress=Recorder(raise_at=2))
        assert not [t for t in threading.enumerate() if t.name.startswith("kafkalog-to_arrow")]


def test_a_callback_must_be_callable(tmp_path: Path) -> None:
    with open_manager(tmp_path / "d", BROKER) as m:
        m.create_log("c", 0, COMPACTED)
        with pytest.raises(InvalidArgumentTypeError, match="on_progress"):
            m.compact_now("c", 0, on_progress=5)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="on_progress"):
            m.run_retention(on_progress="x")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="on_progress"):
            m.get_log("c", 0).to_arrow(on_progress=1)  # type: ignore[arg-type, union-attr]
