"""kafkalog.checkpoints: Kafka's log-dir text files, in Kafka's exact formats."""

from __future__ import annotations

import pytest

from kafkalog import checkpoints
from kafkalog.exceptions import IllegalStateError, KafkaLogIOError


def test_offset_checkpoint_round_trips_in_kafka_text_form(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    offsets = {("orders", 0): 42, ("my-topic", 12): 0}
    checkpoints.write_offset_checkpoint(path, offsets)
    assert path.read_text() == "0\n2\nmy-topic 12 0\norders 0 42\n"
    assert checkpoints.read_offset_checkpoint(path) == offsets
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


@pytest.mark.parametrize(
    "text, needle",
    [("1\n0\n", "version 1"), ("0\n2\norders 0 1\n", "says 2 entries"), ("0\n1\norders x 1\n", "line 3")],
)
def test_malformed_checkpoint_names_file_and_line(tmp_path, text, needle):
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(IllegalStateError) as e:
        checkpoints.read_offset_checkpoint(path)
    assert needle in str(e.value) and str(path) in str(e.value)


def test_missing_checkpoint_is_an_os_error(tmp_path):
    with pytest.raises(KafkaLogIOError) as e:
        checkpoints.read_offset_checkpoint(tmp_path / "nope")
    assert e.value.filename == str(tmp_path / "nope")


def test_leader_epoch_clean_shutdown_and_meta_properties(tmp_path):
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 120\n")
    assert checkpoints.read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint") == [(0, 0), (3, 120)]
    (tmp_path / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":57}')
    assert checkpoints.read_clean_shutdown(tmp_path / ".kafka_cleanshutdown") == 57
    (tmp_path / "meta.properties").write_text("#\n#Sun Nov 22 12:00:00 UTC 2026\nnode.id=1\nversion=1\ncluster.id=Q\n")
    assert checkpoints.read_meta_properties(tmp_path / "meta.properties") == {
        "node.id": "1",
        "version": "1",
        "cluster.id": "Q",
    }
