"""Disk failures on purpose through kafkalog.testing: an injected EIO on append surfaces as a
KafkaLogIOError (an OSError) naming the segment file, and the log appends again once the fault
is cleared."""

from __future__ import annotations

import errno
import os

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
        inject_fault(path, "fsync", errno.EIO, times=1)
        log.append([(b"k", b"v")])
        with pytest.raises(KafkaLogIOError, match="fsync"):
            log.flush()
        log.flush()
        assert log.recovery_point == 1
    with pytest.raises(ValueError, match="open, write, fsync, rename, delete, read"):
        inject_fault(path, "explode", errno.EIO)
