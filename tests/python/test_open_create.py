"""``UnifiedLog.open(..., create=False)``: a partition directory expected to exist (found
earlier, perhaps deleted since) is never recreated by the open; a read-only open never creates
either; the default writable open still creates a missing directory."""

from __future__ import annotations

import errno

import pytest

import kafkalog
from kafkalog.exceptions import KafkaLogIOError


def test_open_without_create_refuses_a_missing_dir_and_creates_nothing(tmp_path):
    missing = tmp_path / "orders-0"
    with pytest.raises(KafkaLogIOError) as info:
        kafkalog.UnifiedLog.open(missing, {"segment.bytes": "1048576"}, create=False)
    assert info.value.errno == errno.ENOENT and info.value.filename == str(missing)
    assert str(missing) in str(info.value) and "create=false" in str(info.value)
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_read_only_open_never_creates(tmp_path):
    missing = tmp_path / "orders-0"
    for create in (True, False):
        with pytest.raises(KafkaLogIOError) as info:
            kafkalog.UnifiedLog.open(missing, read_only=True, create=create)
        assert info.value.errno == errno.ENOENT
    assert list(tmp_path.iterdir()) == []


def test_open_without_create_opens_an_existing_dir_and_the_default_creates(tmp_path):
    path = tmp_path / "orders-0"
    with kafkalog.UnifiedLog.open(path) as log:  # default: created
        log.append([(b"k", b"v")])
    with kafkalog.UnifiedLog.open(path, create=False) as log:
        assert [r.value for r in log.records()] == [b"v"]
        log.append([(b"k", b"w")])
    with kafkalog.UnifiedLog.open(path, read_only=True, create=False) as log:
        assert log.log_end_offset == 2
