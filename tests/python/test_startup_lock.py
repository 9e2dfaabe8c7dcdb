"""A LogManager start-up that finds a partition directory locked by another process (a
distributed clean, a standalone UnifiedLog) waits for it up to ``lock_timeout_ms``, then fails
naming the partition and the process holding it. The holder is a real child process; the test
releases it when the start-up reports, through ``on_progress``, that it is waiting: no sleeps.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalog import DirRecoveryProgress, LogManager
from kafkalog.exceptions import InvalidConfigError, LogDirLockedError

HOLDER = """
import sys
import kafkalog
log = kafkalog.UnifiedLog.open(sys.argv[1])
print("holding", flush=True)
sys.stdin.readline()
log.close()
print("released", flush=True)
"""


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    with LogManager([tmp_path / "d"], scheduler=False) as m:
        m.create_log("orders", 0).append([(b"k", b"v")])
    return tmp_path / "d"


@pytest.fixture
def holder(log_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding orders-0's lock until a line arrives on its stdin."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(log_dir / "orders-0")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "holding\n"
    yield child
    if child.poll() is None:
        child.kill()
    child.wait()


def test_a_partition_held_past_the_timeout_fails_the_start_up_naming_it_and_its_holder(
    log_dir: Path, holder: subprocess.Popen[str]
) -> None:
    with pytest.raises(LogDirLockedError) as e:
        LogManager([log_dir], lock_timeout_ms=0)
    message = str(e.value)
    assert str(log_dir / "orders-0") in message
    assert f"process {holder.pid}" in message and "kafkalog" in message
    assert "partition lock timeout" in message


def test_a_partition_released_while_the_start_up_waits_is_loaded(
    log_dir: Path, holder: subprocess.Popen[str]
) -> None:
    seen: list[tuple[str, ...]] = []

    def on_progress(dirs: list[DirRecoveryProgress]) -> None:
        waiting = tuple(w for d in dirs for w in d.waiting_for_lock)
        seen.append(waiting)
        if waiting and holder.poll() is None and holder.stdin is not None:
            holder.stdin.write("release\n")
            holder.stdin.flush()

    # 10 minutes only guards against a hang: the holder lets go as soon as we are told.
    with LogManager([log_dir], lock_timeout_ms=600_000, on_progress=on_progress) as m:
        log = m.get_log("orders", 0)
        assert log is not None and [r.value for r in log.records()] == [b"v"]
    assert (str(log_dir / "orders-0"),) in seen
    assert seen[-1] == ()
    assert holder.stdout is not None and holder.stdout.readline() == "released\n"


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, True, "10"])
def test_a_bad_lock_timeout_is_refused(log_dir: Path, bad: object) -> None:
    with pytest.raises(InvalidConfigError, match="lock_timeout_ms"):
        LogManager([log_dir], lock_timeout_ms=bad)  # type: ignore[arg-type]
