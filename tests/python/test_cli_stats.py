"""``kafkalog stats``: the installed command run as a subprocess over a log dir kafkalog wrote
with known contents (kit.cli_logs): its text, its ``--json`` document, its ``--plot`` PNG and
its exit codes; it never writes (every file's bytes and mtime unchanged, nothing created), and
reads a dir a LogManager holds.

``UnifiedLog.retention_plan`` is also checked against what ``delete_old_segments`` then deletes
(Kafka's ``UnifiedLogTest.testRetentionDeletesProducerStateSnapshots``-style cases are in the
retention tests; here the dry run must equal the run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kafkalog
from kit import cli_logs
from kit.cli_logs import DAY, HOUR, RETENTION_MS, TOPIC_CONFIG_ARGS
from kit.files import dir_snapshot

SCRIPT = Path(sys.executable).with_name("kafkalog")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=os.environ)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> cli_logs.Fixture:
    return cli_logs.build(tmp_path_factory.mktemp("stats"))


def stats_json(fx: cli_logs.Fixture, *extra: str) -> dict[str, Any]:
    done = run("stats", str(fx.log_dir), "--json", "--now-ms", str(fx.now), *TOPIC_CONFIG_ARGS, *extra)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def partitions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{p['topic']}-{p['partition']}": p for d in doc["log_dirs"] for p in d["partitions"]}


def test_json_reports_sizes_offsets_and_where_the_high_watermark_comes_from(built: cli_logs.Fixture) -> None:
    doc = stats_json(built)
    assert doc["time_ms"] == built.now
    (log_dir,) = doc["log_dirs"]
    assert log_dir["path"] == str(built.log_dir)
    assert log_dir["lock"]["held"] is False
    assert log_dir["checkpoint_files"] == ["cleaner-offset-checkpoint", "replication-offset-checkpoint"]
    parts = partitions(doc)
    assert sorted(parts) == ["events-0", "users-0", "users-1"]
    for name, p in parts.items():
        with kafkalog.UnifiedLog.open(built.log_dir / name, read_only=True) as log:
            segments = log.segments
            assert [s["base_offset"] for s in p["segments"]] == [s.base_offset for s in segments]
            assert p["bytes"] == sum(s.size for s in segments)
            assert p["records"] == sum(s.record_count for s in segments) == sum(1 for _ in log.records())
            assert p["offsets"]["log_end_offset"] == log.log_end_offset
    events = parts["events-0"]["offsets"]
    assert events["high_watermark"] == built.events_high_watermark < events["log_end_offset"]
    assert events["high_watermark_source"] == "replication-offset-checkpoint"
    assert parts["users-0"]["config"]["cleanup.policy"] == "compact"
    assert parts["users-0"]["config_source"] == "Kafka's defaults, with cleanup.policy=compact (--topic-config)"
    assert parts["events-0"]["config_source"].startswith("Kafka's defaults (no --config")


def test_json_compaction_sections_eligibility_and_last_clean(built: cli_logs.Fixture) -> None:
    parts = partitions(stats_json(built))
    below, eligible = parts["users-0"]["compaction"], parts["users-1"]["compaction"]
    for p, k in ((parts["users-0"], below), (parts["users-1"], eligible)):
        base, _ = built.dirty_segment[p["partition"]]
        assert k["checkpoint"] == k["first_dirty_offset"] == built.cleaned_to[p["partition"]] == base
        active = p["segments"][-1]
        assert k["first_uncleanable_offset"] == active["base_offset"]
        assert k["uncleanable_bound"] == "active segment"
        assert k["clean_bytes"] == p["segments"][0]["size"]
        assert k["cleanable_bytes"] == p["segments"][1]["size"]
        assert k["uncleanable_bytes"] == active["size"]
        assert k["dirty_ratio"] == pytest.approx(k["cleanable_bytes"] / (k["clean_bytes"] + k["cleanable_bytes"]))
        cleaned_at, first_dirty, stats = built.cleans[p["partition"]]
        last = k["last_clean"]
        assert (last["time_ms"], last["age_ms"], last["by"]) == (cleaned_at, built.now - cleaned_at, "on-demand")
        assert (last["first_dirty_offset"], last["end_offset"]) == (first_dirty, k["checkpoint"])
        assert last["stats"] == {name: getattr(stats, name) for name in kafkalog.CleanerStats.FIELDS}
        assert last["stats"]["messages_read"] == 80 and last["stats"]["tombstones_retained"] > 0
        assert k["last_clean_note"] is None
    assert below["dirty_ratio"] < 0.5 and below["eligible"] is False
    assert below["not_eligible_reason"] == "below min.cleanable.dirty.ratio"
    assert "max.compaction.lag.ms is unlimited" in below["eligible_when"]
    assert eligible["dirty_ratio"] > 0.5 and eligible["eligible"] is True and eligible["not_eligible_reason"] is None
    assert parts["events-0"]["compaction"] is None


def test_the_last_clean_is_shown_and_what_the_files_say_beside_it(built: cli_logs.Fixture, tmp_path: Path) -> None:
    """The clean kept in kafkalog-last-clean is printed with its stats; a dir whose checkpoint
    moved past it, or that has the checkpoint alone (a Kafka broker's clean), says so; a
    malformed file is a problem named with its line, and the partitions are still shown."""
    done = run("stats", str(built.log_dir), "--now-ms", str(built.now), *TOPIC_CONFIG_ARGS, "--topic", "users")
    assert done.returncode == 0, done.stderr
    _, _, stats = built.cleans[0]
    assert "last clean: 2" in done.stdout and "(5.0 d ago) by an on-demand clean" in done.stdout
    assert f"{stats.messages_read:,} -> {stats.messages_written:,} records" in done.stdout

    copy = tmp_path / "d"
    shutil.copytree(built.log_dir, copy)
    kafkalog.checkpoints.write_offset_checkpoint(copy / "cleaner-offset-checkpoint", {("users", 0): 82, ("users", 1): built.cleaned_to[1]})
    doc = stats_json(cli_logs.Fixture(copy, built.now))
    k = partitions(doc)["users-0"]["compaction"]
    assert k["last_clean"]["end_offset"] == built.cleaned_to[0]
    assert k["last_clean_note"].startswith(f"the cleaner-offset-checkpoint entry is 82, not this clean's end {built.cleaned_to[0]}")

    (copy / "kafkalog-last-clean").unlink()
    k = partitions(stats_json(cli_logs.Fixture(copy, built.now)))["users-1"]["compaction"]
    assert k["last_clean"] is None
    assert k["last_clean_note"].startswith(f"cleaned up to offset {built.cleaned_to[1]} (the log dir's cleaner-offset-checkpoint); no kafkalog-last-clean entry")

    (copy / "kafkalog-last-clean").write_text("0\n1\nusers 0 1 2 3 janitor\n")
    done = run("stats", str(copy), "--json", "--now-ms", str(built.now), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr  # a report: verify is the command that fails on problems
    doc = json.loads(done.stdout)
    (problem,) = doc["log_dirs"][0]["checkpoint_errors"]
    assert problem.startswith("kafkalog-last-clean: ") and "line 3" in problem and "janitor" in problem
    assert partitions(doc)["users-0"]["compaction"]["last_clean"] is None


def test_json_lag_and_max_lag_say_when_the_partition_becomes_eligible(built: cli_logs.Fixture) -> None:
    """min.compaction.lag.ms holds the dirty segment (its records are a day old) until its
    largest timestamp plus the lag; max.compaction.lag.ms forces a clean below the ratio."""
    lag = 2 * DAY
    parts = partitions(stats_json(built, "--topic-config", f"users:min.compaction.lag.ms={lag}"))
    k = parts["users-0"]["compaction"]
    base, max_ts = built.dirty_segment[0]
    assert (k["uncleanable_bound"], k["first_uncleanable_offset"]) == ("min.compaction.lag.ms", base)
    assert (k["eligible"], k["not_eligible_reason"]) == (False, "min.compaction.lag.ms")
    assert k["eligible_at_ms"] == max_ts + lag
    assert f"segment {base} leaves min.compaction.lag.ms={lag}" in k["eligible_when"]

    parts = partitions(stats_json(built, "--topic-config", f"users:max.compaction.lag.ms={2 * DAY}"))
    k = parts["users-0"]["compaction"]
    # The dirty segment's first batch is a day old: two days' lag forces a clean a day from now.
    assert (k["eligible"], k["eligible_at_ms"]) == (False, max_ts + 2 * DAY)
    parts = partitions(stats_json(built, "--topic-config", f"users:max.compaction.lag.ms={HOUR}"))
    k = parts["users-0"]["compaction"]
    assert k["eligible"] is True and k["max_compaction_delay_ms"] == DAY - HOUR


def test_json_tombstones_past_and_within_their_horizon(built: cli_logs.Fixture) -> None:
    parts = partitions(stats_json(built))
    past, waiting = parts["users-0"]["tombstones"], parts["users-1"]["tombstones"]
    # users-0 was cleaned 5 days ago: horizon (clean + delete.retention.ms, 1 day) passed.
    assert (past["total"], past["past_horizon"], past["waiting_for_horizon"], past["without_horizon"]) == (
        built.tombstones[0], built.tombstones[0], 0, 0
    )
    assert past["next_horizon_ms"] is None and past["last_horizon_ms"] == built.now - 5 * DAY + DAY
    # users-1 was cleaned an hour ago: its horizon is 23 hours away.
    assert (waiting["total"], waiting["past_horizon"], waiting["waiting_for_horizon"]) == (built.tombstones[1], 0, built.tombstones[1])
    assert waiting["next_horizon_ms"] == built.now - HOUR + DAY
    assert parts["users-0"]["segments"][0]["tombstones_past_horizon"] == built.tombstones[0]


def test_json_retention_would_delete_expired_segments_and_names_the_next_expiry(built: cli_logs.Fixture) -> None:
    parts = partitions(stats_json(built))
    r = parts["events-0"]["retention"]
    ages = sorted(built.events_segments.items())
    assert [(d["base_offset"], d["reason"]) for d in r["would_delete"]] == [(ages[0][0], "retention_ms"), (ages[1][0], "retention_ms")]
    assert r["log_start_offset_after"] == ages[2][0]
    assert r["next_expiry"] == {
        "base_offset": ages[2][0],
        "at_ms": ages[2][1] + RETENTION_MS + 1,
        "at": r["next_expiry"]["at"],
    }
    future = parts["events-0"]["future_timestamp_segments"]
    assert future == [{"base_offset": ages[3][0], "max_timestamp": ages[3][1], "ahead_ms": 3 * DAY}]
    assert len(r["warnings"]) == 1 and "future timestamps" in r["warnings"][0]
    assert parts["users-0"]["retention"]["would_delete"] == []


def test_text_output_names_each_section(built: cli_logs.Fixture) -> None:
    done = run("stats", str(built.log_dir), "--now-ms", str(built.now), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"log dir {built.log_dir} (.lock not held; read without locking)" in out
    assert "high watermark: 83 (replication-offset-checkpoint)" in out
    assert "not eligible now: below min.cleanable.dirty.ratio: dirty ratio" in out
    assert "eligible for compaction now" in out
    assert f"tombstones: {built.tombstones[0]} tombstones; {built.tombstones[0]} past their delete horizon" in out
    assert "would delete segment 0 [0, 20): 2,241 bytes" in out and ": retention_ms" in out
    assert "future timestamps: segment 60" in out
    assert "config: Kafka's defaults, with cleanup.policy=compact (--topic-config)" in out


def test_plot_draws_a_png_of_the_expected_size_with_each_section_coloured(built: cli_logs.Fixture, tmp_path: Path) -> None:
    from PIL import Image

    from kafkalog.cli.plot import COLOURS, WIDTH

    png = tmp_path / "stats.png"
    done = run("stats", str(built.log_dir), "--now-ms", str(built.now), "--plot", str(png), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr
    with Image.open(png) as image:
        assert image.format == "PNG"
        assert image.size == (WIDTH, 44 + 64 * 3 + 56)
        colours = {c for _, c in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    for name in ("clean", "dirty", "uncleanable", "delete policy", "tombstones", "retention", "future"):
        assert COLOURS[name] in colours, name
    assert f"plot: {png} ({WIDTH}x{44 + 64 * 3 + 56})" in done.stdout


def test_read_only_leaves_every_file_unchanged(built: cli_logs.Fixture, tmp_path: Path) -> None:
    before = dir_snapshot(built.log_dir)
    for extra in ([], ["--json"], ["--plot", str(tmp_path / "p.png")]):
        assert run("stats", str(built.log_dir), *TOPIC_CONFIG_ARGS, *extra).returncode == 0
    assert dir_snapshot(built.log_dir) == before


def test_reads_a_log_dir_a_log_manager_holds_and_says_so(tmp_path: Path) -> None:
    fx = cli_logs.build(tmp_path)
    with kafkalog.LogManager([fx.log_dir], topic_configs={"users": {"cleanup.policy": "compact"}}):
        done = run("stats", str(fx.log_dir), "--json", "--now-ms", str(fx.now), *TOPIC_CONFIG_ARGS)
        assert done.returncode == 0, done.stderr
        (log_dir,) = json.loads(done.stdout)["log_dirs"]
        assert log_dir["lock"]["held"] is True and log_dir["lock"]["pid"] == os.getpid()
        assert str(os.getpid()) in log_dir["lock"]["holder"]
        assert sorted(p["topic"] for p in log_dir["partitions"]) == ["events", "users", "users"]


def test_a_partition_dir_topic_and_partition_filters(built: cli_logs.Fixture) -> None:
    doc = stats_json(built, "--topic", "users", "--partition", "1")
    assert list(partitions(doc)) == ["users-1"]
    done = run("stats", str(built.log_dir / "events-0"), "--json")
    assert done.returncode == 0, done.stderr
    assert list(partitions(json.loads(done.stdout))) == ["events-0"]


def test_bad_paths_and_configs_are_usage_errors(built: cli_logs.Fixture, tmp_path: Path) -> None:
    done = run("stats", str(tmp_path / "missing"))
    assert done.returncode == 2 and f"{tmp_path / 'missing'}: not a directory" in done.stderr
    done = run("stats", str(built.log_dir), "--config", "min.cleanable.dirty.ratio=2")
    assert done.returncode == 2 and "min.cleanable.dirty.ratio" in done.stderr and "Traceback" not in done.stderr
    done = run("stats", str(built.log_dir), "--topic-config", "users=compact")
    assert done.returncode == 2 and "expected TOPIC:KEY=VALUE" in done.stderr


def test_a_damaged_partition_is_reported_and_the_exit_code_is_1(built: cli_logs.Fixture, tmp_path: Path) -> None:
    copy = tmp_path / "d1"
    shutil.copytree(built.log_dir, copy)
    segment = copy / "users-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[16] = 7  # the first batch's magic byte
    segment.write_bytes(bytes(data))
    done = run("stats", str(copy), "--json", *TOPIC_CONFIG_ARGS)
    assert done.returncode == 1, done.stderr
    parts = partitions(json.loads(done.stdout))
    error = parts["users-0"]["error"]
    assert error.startswith("CorruptRecordError") and "00000000000000000000.log at position 16" in error
    assert parts["users-1"]["error"] is None and parts["events-0"]["error"] is None


def test_retention_plan_equals_what_retention_then_deletes(built: cli_logs.Fixture, tmp_path: Path) -> None:
    copy = tmp_path / "events-0"
    shutil.copytree(built.log_dir / "events-0", copy)
    # 9,570 bytes, 2,570 over retention.bytes: the size check takes the first segment only
    # (2,241 bytes); the time check then goes on from the second (8 days old).
    with kafkalog.UnifiedLog.open(copy, {"retention.bytes": 7000}) as log:
        plan = log.retention_plan()
        result = log.delete_old_segments()
    assert plan.would_delete == result.deleted and plan.log_start_offset == result.log_start_offset
    assert [(d.base_offset, d.reason) for d in plan.would_delete] == [(0, "retention_bytes"), (20, "retention_ms")]


def test_an_open_transaction_ends_the_cleanable_range_at_the_last_stable_offset(tmp_path: Path) -> None:
    """Kafka's cleanableOffsets: the first unstable offset bounds the clean (LogCleanerManagerTest.
    testCleanableOffsetsForTransactionalLogs' case of a transaction still open)."""
    from kafkalog import batches

    path = tmp_path / "d" / "txn-0"
    now = 1_700_000_000_000
    with kafkalog.UnifiedLog.open(path, {"cleanup.policy": "compact"}) as log:
        log.append_batch(
            batches.build(0, [kafkalog.Record(b"k", b"v", timestamp=now)], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
        )
        log.roll()
        log.append([kafkalog.Record(b"k2", b"v", timestamp=now)])
        log.roll()
        assert log.first_unstable_offset == 0
    done = run("stats", str(path), "--json", "--now-ms", str(now), "--config", "cleanup.policy=compact")
    assert done.returncode == 0, done.stderr
    (p,) = partitions(json.loads(done.stdout)).values()
    k = p["compaction"]
    assert p["offsets"]["first_unstable_offset"] == 0 == p["offsets"]["last_stable_offset"]
    assert (k["uncleanable_bound"], k["first_uncleanable_offset"], k["not_eligible_reason"]) == ("last stable offset", 0, "nothing dirty")
    assert k["eligible_when"] == "when the transaction open at offset 0 completes (the first unstable offset)"


def test_plot_without_pillow_says_how_to_install_it(built: cli_logs.Fixture, tmp_path: Path) -> None:
    blocker = tmp_path / "no-pillow" / "PIL"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('Pillow is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": f"{blocker.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    png = tmp_path / "p.png"
    done = subprocess.run(
        [str(SCRIPT), "stats", str(built.log_dir), "--plot", str(png)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 2 and done.stdout == "" and not png.exists()
    assert "--plot needs Pillow, which is not installed: pip install 'kafkalog[cli]'" in done.stderr
