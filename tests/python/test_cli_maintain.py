"""``kafkalog compact`` and ``kafkalog retention``: the installed command run as a subprocess
over a log dir kafkalog wrote with known contents (kit.cli_logs): the cleaner's summary (Kafka's
stats block, ``LogCleaner.CleanerThread.recordStats``) per clean, the skip reasons, each deleted
segment with its reason, the exit codes; a log dir a LogManager holds is refused with the holder
named and nothing changed; the progress bar only on a terminal."""

from __future__ import annotations

import json
import os
import fcntl
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

import kafkalog
from kit import cli_logs
from kit.cli_logs import TOPIC_CONFIG_ARGS
from kit.files import dir_snapshot

SCRIPT = Path(sys.executable).with_name("kafkalog")


def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=os.environ, **kw)


@pytest.fixture
def fx(tmp_path: Path) -> cli_logs.Fixture:
    return cli_logs.build(tmp_path)


def stats(fx: cli_logs.Fixture) -> dict[str, dict[str, Any]]:
    done = run("stats", str(fx.log_dir), "--json", "--now-ms", str(fx.now), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr
    return {f"{p['topic']}-{p['partition']}": p for d in json.loads(done.stdout)["log_dirs"] for p in d["partitions"]}


def test_compact_cleans_what_kafkas_cleaner_would_and_prints_its_stats_block(fx: cli_logs.Fixture) -> None:
    done = run("compact", str(fx.log_dir), "--now-ms", str(fx.now), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # users-1 is eligible: one clean, Kafka's block for it.
    assert "users-1 (Kafka's defaults, with cleanup.policy=compact (--topic-config)):" in out
    assert "\tLog cleaner thread 0 cleaned log users-1 (dirty section = [80, 480])" in out
    for line in ("MB of log processed in", "\tBuffer utilization:", "\tStart size:", "\tEnd size:", "% size reduction"):
        assert line in out
    assert "cleaner-offset-checkpoint: users 1 480" in out
    # users-0 is below min.cleanable.dirty.ratio, events-0 has the delete policy: both skipped.
    assert "users-0 (" in out and "  skipped: below min.cleanable.dirty.ratio: dirty ratio" in out
    assert "  skipped: delete policy: cleanup.policy=delete" in out
    parts = stats(fx)
    assert parts["users-1"]["compaction"]["checkpoint"] == 480
    # Its dirty segment rewrote every key: one record per key is left in the cleaned section,
    # and nothing is dirty any more.
    assert parts["users-1"]["tombstones"]["total"] == 0
    assert parts["users-1"]["compaction"]["not_eligible_reason"] == "nothing dirty"
    assert sum(s["records"] for s in parts["users-1"]["segments"][:-1]) == 10
    assert parts["users-0"]["compaction"]["checkpoint"] == fx.cleaned_to[0]


def test_compact_with_ratio_zero_removes_tombstones_past_their_horizon(fx: cli_logs.Fixture) -> None:
    """users-0's clean section keeps tombstones for k2 and k6, past their horizon; its dirty
    segment rewrites k3..k9 and k0. A clean removes k6's as superseded and k2's as past its
    horizon (Kafka's shouldRetainRecord): no tombstone is left."""
    assert stats(fx)["users-0"]["tombstones"]["past_horizon"] == fx.tombstones[0] == 2
    done = run(
        "compact", str(fx.log_dir), "--topic", "users", "--partition", "0", "--now-ms", str(fx.now),
        "--config", "min.cleanable.dirty.ratio=0", *TOPIC_CONFIG_ARGS,
    )
    assert done.returncode == 0, done.stderr
    assert "users-1" not in done.stdout and "events-0" not in done.stdout
    assert "\tLog cleaner thread 0 cleaned log users-0 (dirty section = [80, 88])" in done.stdout
    assert "1 tombstones removed" in done.stdout
    after = stats(fx)["users-0"]
    assert after["tombstones"]["total"] == 0
    assert after["compaction"]["checkpoint"] == 88


def test_compact_roll_makes_the_active_segment_cleanable(fx: cli_logs.Fixture) -> None:
    done = run(
        "compact", str(fx.log_dir), "--topic", "users", "--partition", "0", "--roll", "--now-ms", str(fx.now),
        "--config", "min.cleanable.dirty.ratio=0", *TOPIC_CONFIG_ARGS,
    )
    assert done.returncode == 0, done.stderr
    assert "  rolled the active segment at offset 91" in done.stdout
    assert "(dirty section = [80, 91])" in done.stdout and "cleaner-offset-checkpoint: users 0 91" in done.stdout


def test_retention_deletes_expired_segments_naming_the_reason(fx: cli_logs.Fixture) -> None:
    ages = sorted(fx.events_segments)
    before = stats(fx)["events-0"]
    done = run("retention", str(fx.log_dir), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"  deleted segment {ages[0]} [{ages[0]}, {ages[1]}): 2,241 bytes, largest timestamp" in out
    assert f"  deleted segment {ages[1]} [{ages[1]}, {ages[2]}): 2,241 bytes" in out
    assert out.count(": retention_ms") == 2
    assert f"  log start offset 0 -> {ages[2]}" in out
    assert "  warning: segment 60 of events-0 contains future timestamps" in out
    assert out.count("  nothing to delete") == 2  # the users partitions
    assert not list((fx.log_dir / "events-0").glob("*.deleted")), "the deleted segments' files are unlinked"
    assert not (fx.log_dir / "events-0" / "00000000000000000000.log").exists()
    after = stats(fx)["events-0"]
    assert [s["base_offset"] for s in after["segments"]] == [s["base_offset"] for s in before["segments"]][2:]
    assert after["retention"]["would_delete"] == []


def test_retention_never_deletes_at_or_above_the_checkpointed_high_watermark(fx: cli_logs.Fixture) -> None:
    """The replication-offset-checkpoint's high watermark bounds retention as it does in Kafka
    (deletableSegments stops at a segment reaching past it)."""
    hw_file = fx.log_dir / "replication-offset-checkpoint"
    kafkalog.checkpoints.write_offset_checkpoint(hw_file, {("events", 0): 10})
    done = run("retention", str(fx.log_dir), "--topic", "events")
    assert done.returncode == 0, done.stderr
    assert "  nothing to delete" in done.stdout


def test_a_log_dir_a_log_manager_holds_is_refused_naming_the_holder(fx: cli_logs.Fixture) -> None:
    # No scheduler: the manager's own cleaner and retention would change the dir meanwhile.
    with kafkalog.LogManager([fx.log_dir], topic_configs={"users": {"cleanup.policy": "compact"}}, scheduler=False):
        before = dir_snapshot(fx.log_dir)
        for command in ("compact", "retention"):
            done = run(command, str(fx.log_dir), *TOPIC_CONFIG_ARGS)
            assert done.returncode == 1, done.stdout
            assert f"log dir {fx.log_dir} is held by process {os.getpid()}" in done.stderr
            assert "refused, nothing was changed" in done.stderr and "Traceback" not in done.stderr
            assert done.stdout == ""
        assert dir_snapshot(fx.log_dir) == before


def test_a_partition_another_writer_holds_is_reported_and_the_others_done(fx: cli_logs.Fixture) -> None:
    with kafkalog.UnifiedLog.open(fx.log_dir / "users-0", {"cleanup.policy": "compact"}):
        done = run("retention", str(fx.log_dir), *TOPIC_CONFIG_ARGS)
    assert done.returncode == 1
    assert "users-0: FAILED: LogDirLockedError" in done.stdout
    assert "deleted segment 0 [0, 20)" in done.stdout


def test_no_matching_partition_and_bad_cleaner_config(fx: cli_logs.Fixture) -> None:
    done = run("compact", str(fx.log_dir), "--topic", "nope")
    assert done.returncode == 1 and "no partition directory" in done.stderr
    done = run("compact", str(fx.log_dir), "--cleaner-config", "log.cleaner.io.buffer.load.factor=7")
    assert done.returncode == 2 and "log.cleaner.io.buffer.load.factor" in done.stderr
    done = run("compact", str(fx.log_dir), "--cleaner-config", "nonsense")
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr


def _stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Runs the command with stderr on a pseudo-terminal (stdout a pipe); returns its exit
    code, stdout and what it drew on the terminal."""
    leader, follower = pty.openpty()
    # A terminal 120 columns wide (a fresh pseudo-terminal has 0, where tqdm draws nothing).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    try:
        child = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=follower, text=True, env=os.environ)
        os.close(follower)
        drawn = bytearray()
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        out = child.stdout.read() if child.stdout else ""
        return child.wait(timeout=120), out, drawn.decode(errors="replace")
    finally:
        os.close(leader)


def test_the_progress_bar_is_drawn_on_a_terminal_only_and_not_with_no_progress(fx: cli_logs.Fixture) -> None:
    code, out, drawn = _stderr_on_a_terminal("retention", str(fx.log_dir))
    assert code == 0
    assert "retention: 100%" in drawn and "3/3" in drawn and "partition" in drawn
    assert "deleted segment 0" in out and "100%" not in out
    code, out, drawn = _stderr_on_a_terminal("retention", str(fx.log_dir), "--no-progress")
    assert code == 0 and drawn == ""
    piped = run("retention", str(fx.log_dir))
    assert piped.returncode == 0 and piped.stderr == ""


@pytest.mark.parametrize("command", ["stats", "compact", "retention"])
def test_each_command_has_help_with_an_example(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: kafkalog {command}")
    assert f"examples:\n  kafkalog {command} /var/lib/kafka/data" in done.stdout
    assert "--topic-config TOPIC:KEY=VALUE" in done.stdout


def test_a_clean_on_a_terminal_shows_the_engines_phases_on_the_bar(fx: cli_logs.Fixture) -> None:
    """The bar carries the engine's on_progress reports of each clean: the partition, its phase
    (indexing, then cleaning) and its share of the bytes; each phase's last report (100%) is
    always delivered."""
    code, out, drawn = _stderr_on_a_terminal("compact", str(fx.log_dir), "--now-ms", str(fx.now), *TOPIC_CONFIG_ARGS)
    assert code == 0, out
    assert "Log cleaner thread" in out
    assert "users-1 indexing 100%" in drawn and "users-1 cleaning 100%" in drawn
