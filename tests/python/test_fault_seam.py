"""Disk failures on purpose through kafkalog.testing: an injected EIO on append surfaces as a
KafkaLogIOError (an OSError) naming the segment file, and the log appends again once the fault
is cleared; and the crash seam (crash_after) kills a process just before a chosen file
operation, never on a read."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys

import pytest

from kafkalog import UnifiedLog
from kafkalog.exceptions import KafkaLogIOError
from kafkalog.testing import fault, inject_fault

SEGMENT = "00000000000000000000.log"


def test_eio_on_append_names_the_segment(tmp_path):
    path = tmp_path / "orders-0"
    with UnifiedLog.open(path) as log:
        log.append([(b"k", b"before")])
        with fault(path, "write", errno.EIO):
            with pytest.raises(KafkaLogIOError) as exc:
                log.append([(b"k", b"lost")])
        assert exc.value.errno == errno.EIO
        assert exc.value.filename == os.fspath(path / SEGMENT)
        assert os.fspath(path / SEGMENT) in str(exc.value) and "append" in str(exc.value)
        assert log.log_end_offset == 1, "the failed append wrote nothing"
        assert log.append([(b"k", b"after")]).first_offset == 1, "cleared on leaving the with block"


def test_counted_faults_and_unknown_ops(tmp_path):
    path = tmp_path / "orders-0"
    with UnifiedLog.open(path) as log:
        # After the append: its leader-epoch-checkpoint write (epoch 0 is new) fsyncs too.
        log.append([(b"k", b"v")])
        inject_fault(path, "fsync", errno.EIO, times=1)
        with pytest.raises(KafkaLogIOError, match="fsync"):
            log.flush()
        log.flush()
        assert log.recovery_point == 1
    with pytest.raises(ValueError, match="open, write, fsync, rename, delete, read"):
        inject_fault(path, "explode", errno.EIO)


CRASHING_CHILD = """
import sys
from kafkalog import UnifiedLog
from kafkalog.testing import crash_after
path, skip = sys.argv[1], int(sys.argv[2])
crash_after(path, skip)
with UnifiedLog.open(path) as log:
    for i in range(100):
        log.append([(b"k", b"v%d" % i)])  # one write each
        print(i, flush=True)
"""


def _run_crashing_child(path, skip):
    return subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, os.fspath(path), str(skip)],
        capture_output=True, text=True, timeout=300,  # a hang guard only
    )


def test_crash_after_kills_the_process_just_before_the_chosen_file_operation(tmp_path):
    # The open creates the dir, the segment and its indexes: crash before the very first.
    first = _run_crashing_child(tmp_path / "first-0", 0)
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert not (tmp_path / "first-0").exists()
    # The smallest skip that lets the first append's write through (the open's operations plus
    # one) kills the second's. One more, and the third append's write is the one that crashes:
    # the first two records are on disk (the page cache outlives a SIGKILL), the third is not.
    skip = next(k for k in range(1, 50) if _run_crashing_child(tmp_path / f"probe{k}-0", k).stdout)
    crashed = _run_crashing_child(tmp_path / "third-0", skip + 1)
    assert crashed.returncode == -signal.SIGKILL
    assert crashed.stdout.split() == ["0", "1"]
    with UnifiedLog.open(tmp_path / "third-0", read_only=True) as log:
        assert [r.value for r in log.records()] == [b"v0", b"v1"]


def test_crash_after_ignores_reads(tmp_path):
    path = tmp_path / "orders-0"
    with UnifiedLog.open(path) as log:
        log.append([(b"k", b"v")])
    reader = """
import sys
from kafkalog import UnifiedLog
from kafkalog.testing import crash_after
crash_after(sys.argv[1], 0)
with UnifiedLog.open(sys.argv[1], read_only=True) as log:
    print(len(list(log.records())))
"""
    done = subprocess.run([sys.executable, "-c", reader, os.fspath(path)], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
