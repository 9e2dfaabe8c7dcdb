"""kafkalog.spark.functions: the cleaner and retention as column functions. Each row's result is
the maintenance jobs' per-partition result (the same task code): the same logs and the same
numbers as kafkalog.spark.compact / run_retention on copies, the checkpoint kept, locked dirs
skipped as the jobs skip them, bad rows reported in ``error`` without failing the query, bad
arguments named when the column is built, and the column usable inside ``foreachBatch``.
"""

from __future__ import annotations

import shutil
import threading

import pytest

import kafkalog
from kafkalog.spark import COMPACT_SCHEMA, RETENTION_SCHEMA, compact, run_retention
from kafkalog.spark.functions import compact_log
from kafkalog.spark.functions import run_retention as retention_col
from kafkalog.testing import Seam

from test_maintenance import CONFIG, T0, contents, write_keyed, write_timed

pytestmark = pytest.mark.spark

NOW = T0 + 100_000
VOLATILE = {"waited_ms", "duration_ms", "path"}


def schema_names(ddl: str) -> list[str]:
    return [part.strip().split(" ")[0] for part in ddl.split(", ")]


def stable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in VOLATILE}


def test_compact_log_equals_the_job_on_copies_and_keeps_the_checkpoint(spark, tmp_path):
    """Three partitions compacted through ``select(compact_log("path"))`` equal copies
    compacted by kafkalog.spark.compact: same logs, same row (but timings), fields in
    COMPACT_SCHEMA's order. A second select finds the checkpoint: nothing dirty."""
    data, copy = tmp_path / "data", tmp_path / "copy"
    for p in range(3):
        write_keyed(data / f"users-{p}", seed=p, codec="lz4")
    shutil.copytree(data, copy)
    want = {r["partition"]: r.asDict() for r in compact(spark, copy, config=CONFIG, roll=True, time_ms=NOW).collect()}

    dirs = spark.createDataFrame([(str(data / f"users-{p}"),) for p in range(3)], "path string")
    result = dirs.select(compact_log("path", CONFIG, roll=True, time_ms=NOW).alias("r")).select("r.*")
    assert result.columns == schema_names(COMPACT_SCHEMA)
    got = {r["partition"]: r.asDict() for r in result.collect()}
    for p in range(3):
        assert got[p]["error"] is None and got[p]["skipped"] is None and got[p]["passes"] >= 1
        assert stable(got[p]) == stable(want[p])
        assert got[p]["path"] == str(data / f"users-{p}")
        assert contents(data / f"users-{p}") == contents(copy / f"users-{p}")
    again = dirs.select(compact_log(dirs.path, CONFIG, time_ms=NOW).alias("r")).select("r.*").collect()
    assert all(r["skipped"].startswith("nothing dirty: ") and r["checkpoint"] == got[r["partition"]]["cleaned_to_offset"]
               for r in again)


def test_bad_rows_get_their_error_and_the_others_run(spark, tmp_path):
    """A null path, a missing dir and a log dir (not one partition) each get an error; the
    partition in between is cleaned."""
    write_keyed(tmp_path / "logs" / "users-0", seed=1, codec="none")
    write_keyed(tmp_path / "logs" / "users-1", seed=2, codec="none")
    paths = [None, str(tmp_path / "missing-0"), str(tmp_path / "logs"), str(tmp_path / "logs" / "users-1"), "logs/users-0"]
    df = spark.createDataFrame([(p,) for p in paths], "path string")
    rows = [r["r"] for r in df.select(compact_log("path", CONFIG, roll=True).alias("r")).collect()]
    assert rows[0]["error"].startswith("ValueError: path is null")
    assert rows[1]["error"].startswith("KafkaLogIOError") and "missing-0" in rows[1]["error"]
    assert "is not a partition directory" in rows[2]["error"] and "holds 2 partition directories" in rows[2]["error"]
    assert rows[3]["error"] is None and rows[3]["passes"] >= 1 and (rows[3]["topic"], rows[3]["partition"]) == ("users", 1)
    # Executors do not share the driver's working directory: a relative path is refused.
    assert rows[4]["error"].startswith("ValueError: path 'logs/users-0' is relative"), rows[4]["error"]


def test_a_log_dir_a_log_manager_holds_is_skipped_or_waited_for(spark, tmp_path):
    """As for the job: skipped as locked (also after wait_timeout), and with wait=True the row
    waits (the seam says so) until the manager closes, then cleans."""
    data = tmp_path / "data"
    write_keyed(data / "users-0", seed=3, codec="none")
    df = spark.createDataFrame([(str(data / "users-0"),)], "path string")
    manager = kafkalog.LogManager(data, {"log.cleaner.enable": "false"},
                                  topic_configs={"users": {**CONFIG, "cleanup.policy": "compact"}}, scheduler=False)
    try:
        row = df.select(compact_log("path", CONFIG).alias("r")).first()["r"]
        assert row["error"] is None and row["skipped"].startswith("locked: ") and "running LogManager" in row["skipped"]
        row = df.select(compact_log("path", CONFIG, wait=True, wait_timeout=0.2).alias("r")).first()["r"]
        assert "still locked after waiting 0.2 s" in row["skipped"]
        out: list = []
        waiting = threading.Thread(target=lambda: out.append(df.select(compact_log("path", CONFIG, wait=True).alias("r")).first()["r"]))
        with Seam(tmp_path / "seam") as seam:
            waiting.start()
            seam.wait_for("compact.locked.users-0")
            manager.close()
            waiting.join()
    finally:
        manager.close()
    assert out[0]["error"] is None and out[0]["skipped"] is None and out[0]["passes"] >= 1


def test_run_retention_equals_the_job_and_works_in_foreach_batch(spark, tmp_path):
    """run_retention as a column inside foreachBatch of a stream of paths: the same deletions
    and row as the run_retention job on copies."""
    data, copy = tmp_path / "data", tmp_path / "copy"
    for p in range(2):
        write_timed(data / f"events-{p}", seed=p, old_batches=20, new_batches=20)
    shutil.copytree(data, copy)
    config = {"internal.segment.bytes": "4096", "retention.ms": str(3 * 24 * 3600 * 1000)}
    want = {r["partition"]: r.asDict() for r in run_retention(spark, copy, config=config).collect()}

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "paths.json").write_text("".join(f'{{"path": "{data / f"events-{p}"}"}}\n' for p in range(2)))
    got: dict = {}

    def batch(batch_df, _batch_id) -> None:
        for r in batch_df.select(retention_col("path", config).alias("r")).select("r.*").collect():
            got[r["partition"]] = r.asDict()

    stream = spark.readStream.schema("path string").json(str(inbox))
    query = (stream.writeStream.foreachBatch(batch).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "stream-checkpoint")).start())
    query.awaitTermination()
    assert sorted(got) == [0, 1]
    for p in range(2):
        assert list(got[p]) == schema_names(RETENTION_SCHEMA)
        assert got[p]["error"] is None and got[p]["segments_deleted"] > 0
        assert stable(got[p]) == stable(want[p])
        assert contents(data / f"events-{p}") == contents(copy / f"events-{p}")


@pytest.mark.parametrize(
    "build, error, words",
    [
        (lambda: compact_log("path", {"no.such.key": "1"}), ValueError, ["config", "no.such.key"]),
        (lambda: compact_log("path", wait="yes"), TypeError, ["wait", "yes"]),
        (lambda: compact_log("path", time_ms=-1), ValueError, ["time_ms", "-1"]),
        (lambda: compact_log(42), TypeError, ["path_col", "42"]),
        (lambda: retention_col("path", {"log.cleaner.io.buffer.size": "1024"}), ValueError, ["log.cleaner.io.buffer.size"]),
    ],
)
def test_bad_arguments_fail_when_the_column_is_built(spark, build, error, words):
    with pytest.raises(error) as info:
        build()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
