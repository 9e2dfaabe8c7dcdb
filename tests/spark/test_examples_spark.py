"""examples/spark_read.py runs as a user runs it: a child process with its own Spark session,
started from another directory, with no PYSPARK_PYTHON set (the script must point Spark's
workers at its own interpreter, or they cannot import kafkalog). With no path it reads the
sample log dir it makes, from the startingOffsets it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_spark_read_example_starts_each_partition_where_asked(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "spark_read.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-5000:]}"
    lines = proc.stdout.splitlines()
    assert 'startingOffsets {"orders": {"0": 40, "1": -2, "2": 250}}:' in lines
    assert "orders-0: 60 records, offsets 40..99" in lines
    assert "orders-1: 200 records, offsets 0..199" in lines
    assert "orders-2: 50 records, offsets 250..299" in lines
    assert any(line.startswith("|0        |40    |order-40|") for line in lines), proc.stdout
