"""The scripts in examples/ run as a user runs them: a child process started from another
directory, with the sample log dir they make when given no path, or with a log dir written here.
Each check is on what the script prints and on the files: the broker's dir is never changed.
(examples/spark_read.py is run by tests/spark/test_examples_spark.py.)"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalog

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(tmp_path: Path, script: str, *args: str, expect_rc: int = 0) -> str:
    """Runs examples/<script> with this interpreter in ``tmp_path``; temporary dirs the script
    makes go under ``tmp_path`` too. Returns stdout (stdout + stderr when a failure is expected)."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == expect_rc, f"{script} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout if expect_rc == 0 else proc.stdout + proc.stderr


def printed_path(out: str, label: str) -> Path:
    m = re.search(rf"^{label}: (.+)$", out, re.M)
    assert m, f"no {label!r} line in:\n{out}"
    return Path(m[1])


def write_broker_dir(root: Path) -> Path:
    """A log dir as a stopped broker leaves it: topic `events` (partitions 0 and 1, 3 and 7
    records), topic `users` (compacted, 4 keys written 3 times, each round a segment, then 2
    tombstones), and a partition dir being deleted, which readers must skip."""
    log_dir = root / "data"
    with kafkalog.LogManager([log_dir], scheduler=False) as manager:
        for partition, count in ((0, 3), (1, 7)):
            manager.create_log("events", partition).append([(f"e{i}", f"v{i}") for i in range(count)])
        users = manager.create_log("users", 0, {"cleanup.policy": "compact"})
        for round_ in range(3):
            users.append([(f"user-{k}", f"round-{round_}") for k in range(4)])
            users.roll()
        users.append([kafkalog.Record(b"user-0", None), kafkalog.Record(b"user-1", None)])
    shutil.copytree(log_dir / "events-0", log_dir / "events-0.0123456789abcdef0123456789abcdef-delete")
    return log_dir


def latest_values(partition_dir: Path) -> tuple[int, dict[bytes, bytes | None]]:
    with kafkalog.UnifiedLog.open(partition_dir, read_only=True) as log:
        table = log.to_arrow()
    return table.num_rows, dict(zip(table["key"].to_pylist(), table["value"].to_pylist()))


# -- read_broker_dir.py ---------------------------------------------------------------------------


def test_read_broker_dir_sample_prints_every_partition(tmp_path):
    out = run_example(tmp_path, "read_broker_dir.py")
    sample = printed_path(out, "sample log dir")
    assert sample.is_relative_to(tmp_path) and (sample / "meta.properties").is_file()
    lines = out.splitlines()
    for line in (
        "customers-0: 165 records, offsets 0..164",
        "customers-1: 165 records, offsets 0..164",
        "orders-0: 100 records, offsets 0..99",
        "orders-1: 200 records, offsets 0..199",
        "orders-2: 300 records, offsets 0..299",
        "total: 930 records in 5 partitions",
    ):
        assert line in lines, out


def test_read_broker_dir_reads_a_given_dir_and_changes_nothing(tmp_path, snapshot_dir):
    log_dir = write_broker_dir(tmp_path / "broker")
    before = snapshot_dir(log_dir)
    out = run_example(tmp_path, "read_broker_dir.py", str(log_dir))
    lines = out.splitlines()
    assert "events-0: 3 records, offsets 0..2" in lines
    assert "events-1: 7 records, offsets 0..6" in lines
    assert "users-0: 14 records, offsets 0..13" in lines
    assert "total: 24 records in 3 partitions" in lines  # the -delete dir is not read
    if importlib.util.find_spec("pandas") is None:
        assert "pandas is not installed: skipping the DataFrame (pip install pandas to see it)" in lines
    else:
        assert re.search(r"^\s*topic\s+partition\s+offset\s+key\s+value$", out, re.M), out
    assert snapshot_dir(log_dir) == before

    only = run_example(tmp_path, "read_broker_dir.py", str(log_dir), "--topic", "events")
    assert "total: 10 records in 2 partitions" in only.splitlines()


# -- compact_topic.py -----------------------------------------------------------------------------


def test_compact_topic_sample_cleans_a_copy_below_the_active_segment(tmp_path):
    out = run_example(tmp_path, "compact_topic.py")
    sample, copy = printed_path(out, "sample log dir"), printed_path(out, "compacted copy")
    for partition in (0, 1):
        line = f"customers-{partition}: 1 pass(es) over offsets 0..160; records 160 -> 50, tombstones kept 10; "
        assert any(s.startswith(line) for s in out.splitlines()), out
        assert f"Log cleaner thread 0 cleaned log customers-{partition} (dirty section = [0, 160])" in out
        # The sample is untouched; the copy keeps the latest of each key, plus the active segment.
        assert latest_values(sample / f"customers-{partition}")[0] == 165
        rows, latest = latest_values(copy / f"customers-{partition}")
        keys = [f"customer-{partition}-{k}".encode() for k in range(50)]
        assert rows == 55
        assert set(latest) == set(keys)
        assert all(latest[k] is None for k in keys[:10])
        assert all(json.loads(latest[k])["version"] == 3 for k in keys[10:15])  # type: ignore[arg-type]
        assert all(json.loads(latest[k])["version"] == 2 for k in keys[15:])  # type: ignore[arg-type]


def test_compact_topic_given_dir_leaves_the_original_alone(tmp_path, snapshot_dir):
    log_dir = write_broker_dir(tmp_path / "broker")
    before = snapshot_dir(log_dir)
    out_dir = tmp_path / "copy"
    out = run_example(tmp_path, "compact_topic.py", str(log_dir), "users", "--out", str(out_dir), "--roll")
    assert "users-0: 1 pass(es) over offsets 0..14; records 14 -> 4, tombstones kept 2; " in out, out
    assert printed_path(out, "compacted copy") == out_dir
    assert sorted(p.name for p in out_dir.iterdir()) == ["users-0"]
    rows, latest = latest_values(out_dir / "users-0")
    assert rows == 4
    assert latest == {b"user-0": None, b"user-1": None, b"user-2": b"round-2", b"user-3": b"round-2"}
    assert snapshot_dir(log_dir) == before


def test_compact_topic_refuses_a_copy_inside_the_broker_dir(tmp_path, snapshot_dir):
    log_dir = write_broker_dir(tmp_path / "broker")
    before = snapshot_dir(log_dir)
    out = run_example(tmp_path, "compact_topic.py", str(log_dir), "users", "--out", str(log_dir / "c"), expect_rc=2)
    assert "is inside the log dir" in out
    assert snapshot_dir(log_dir) == before and not (log_dir / "c").exists()
    missing = run_example(tmp_path, "compact_topic.py", str(log_dir), "nope", "--out", str(tmp_path / "x"), expect_rc=1)
    assert "no partition of 'nope' in" in missing
