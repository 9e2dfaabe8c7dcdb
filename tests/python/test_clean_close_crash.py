"""A standalone log's clean-close record (``kafkalog-clean-close``) under SIGKILL: a child
(clean_close_child.py) reopens, appends, rolls and closes one log again and again until the
crash seam kills it just before its N-th file operation, for every N of a range (no timing:
each kill lands between the same two system calls on any machine).

After each kill the record, when it is there, must still describe the directory exactly: an
open that trusts it (and so recovers nothing) finds the same log as an open of a copy without
it, which recovers the active segment as after a crash. A torn tail added after the kill is
cut by the next open either way (the child's open removed the record before it appended)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkalog import Record, UnifiedLog
from kit.manager import run_until_crash_seam

CHILD = Path(__file__).with_name("clean_close_child.py")
MARKER = "kafkalog-clean-close"


def _contents(path: Path) -> tuple[int, int, list[tuple[int, bytes | None, bytes | None]]]:
    with UnifiedLog.open(path) as log:
        return log.log_start_offset, log.log_end_offset, [(r.offset, r.key, r.value) for r in log.records(0)]


@pytest.mark.parametrize("skip", range(0, 90, 3))
def test_a_kill_at_any_point_leaves_a_true_record_or_none(tmp_path: Path, skip: int) -> None:
    path = tmp_path / "t-0"
    with UnifiedLog.open(path) as log:
        log.append([Record(b"k", f"v{i}".encode()) for i in range(5)])
    assert (path / MARKER).exists()
    run_until_crash_seam(CHILD, [path, skip], tmp_path / "stderr")

    without = tmp_path / "without" / "t-0"
    shutil.copytree(path, without)
    (without / MARKER).unlink(missing_ok=True)
    had_record = (path / MARKER).exists()
    if had_record:  # left by a close that finished: nothing changed after it
        version, entry = (path / MARKER).read_text().splitlines()
        base, size, _ = map(int, entry.split())
        active = max(path.glob("*.log"))
        assert (version, int(active.name[:20]), active.stat().st_size) == ("0", base, size)
    trusted, recovered = _contents(path), _contents(without)
    assert trusted == recovered, f"kill after {skip} file operations (record left: {had_record})"
    assert recovered[1] >= 5 and [o for o, _, _ in recovered[2]] == list(range(recovered[1]))


@pytest.mark.parametrize("skip", [20, 40])
def test_a_torn_tail_after_a_kill_is_cut_at_the_next_open(tmp_path: Path, skip: int) -> None:
    path = tmp_path / "t-0"
    with UnifiedLog.open(path) as log:
        log.append([Record(b"k", b"v")])
    run_until_crash_seam(CHILD, [path, skip], tmp_path / "stderr")
    active = max(path.glob("*.log"))
    size = active.stat().st_size
    with open(active, "ab") as f:  # half a batch header: a write the crash tore
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01\x00torn")
    with UnifiedLog.open(path) as log:
        assert [r.offset for r in log.records(0)] == list(range(log.log_end_offset))
    assert active.stat().st_size == size, "the torn bytes were cut"
