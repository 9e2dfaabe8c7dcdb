"""``kafkalog verify [--fix]``, the installed command run as a subprocess.

The damage is the corruption suites' own: test_corruption's fixture, targets and damage
(``build_fixture``, ``pick``, ``damage_file``: a seeded random bit flip or truncation in a
segment, an index, a checkpoint, meta.properties, partition.metadata or the clean-shutdown
marker), test_damaged_batches' cuts and flips of a standalone partition, and test_crash_recovery's
SIGKILLed child (``crash_child.py`` through the crash seam). For each case ``verify`` names the
damaged file (with the byte position for segment and index files) and exits 1, ``verify --fix``
repairs it, and a second ``verify`` exits 0.

Damage no file can reveal is accepted only where the test can show it is of that kind: a bit
flip in a batch's partition leader epoch (outside the CRC), a truncation of an active index that
only cut its preallocated zeros, a checkpoint or marker that still parses to plausible values,
a meta.properties comment or directory.id. Two kinds ``--fix`` cannot repair from the files, and
says so (exit 1, "not repaired"): an unreadable meta.properties (recovery never rewrites it) and
two partitions of one topic holding different topic ids with no majority.

KAFKALOG_VERIFY_CASES sets the cases per kind and damage (default 3).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_child import CONFIG as CRASH_CONFIG
from test_corruption import (
    KINDS,
    Fixture,
    batch_at,
    build_fixture,
    clean,  # noqa: F401 (the module's fixture, reused)
    damage_file,
    header_field,
    meta_properties_invalid,
    pick,
    unclean,  # noqa: F401 (the module's fixture, reused)
)
from test_damaged_batches import (
    batch_spans,
    cut_inside_first_batch,
    cut_inside_second_batch,
    flip_a_value_byte_of_the_second_batch,
    middle_segment,
    write_segments,
)

from kafkalog import LogManager, Record, UnifiedLog
from kafkalog.checkpoints import read_clean_shutdown, read_offset_checkpoint
from kafkalog.exceptions import KafkaLogError
from kit.files import dir_snapshot
from kit.manager import run_until_crash_seam

SCRIPT = Path(sys.executable).with_name("kafkalog")
CASES = int(os.environ.get("KAFKALOG_VERIFY_CASES", "3"))
CRASH_CHILD = Path(__file__).with_name("crash_child.py")


def kafkalog(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300, env=os.environ
    )


def verify(*paths: Path, fix: bool = False) -> subprocess.CompletedProcess[str]:
    return kafkalog("verify", *paths, *(["--fix"] if fix else []))


# -- what no file can reveal -------------------------------------------------------------------


def _undetectable(fx: Fixture, case: Path, kind: str, target: str, at: int, damage: str) -> str | None:
    """Why ``verify`` may rightly find nothing wrong with this damage, or None when it must."""
    path = case / target
    if kind in ("active_log", "old_log") and damage == "flip":
        seg = next(s for p in fx.parts.values() for s in p.segments if s.log == target)
        batch = batch_at(seg, at)
        if header_field(at - batch.position) == "leader_epoch":
            return "a batch's partition leader epoch is outside its CRC"
    if kind in ("index", "timeindex") and damage == "truncate":
        if not any((fx.root / target).read_bytes()[at:]):
            return "only the preallocated zeros of an active index were cut"
        if kind == "index" and at % 8 == 0:
            # (A time index cut so is caught: a rolled segment's last entry holds its largest
            # timestamp.)
            return "whole offset index entries were cut: those left are right, lookups scan further"
    if kind in ("recovery_checkpoint", "log_start_checkpoint"):
        parsed = read_offset_checkpoint(path)  # raises if it no longer parses: verify must say so
        d = Path(target).parts[0]
        ends = {tp: p.end for tp, p in fx.parts.items() if p.dir == d}
        assert all(tp in ends and 0 <= o <= ends[tp] for tp, o in parsed.items()), parsed
        return "the checkpoint still names this dir's partitions at offsets inside their logs"
    if kind == "meta_properties" and not meta_properties_invalid(path):
        return "meta.properties still holds a KRaft v1 identity (a comment or directory.id changed)"
    if kind == "clean_shutdown":
        read_clean_shutdown(path)
        return "Kafka only needs the marker to exist, and it still parses"
    return None


# -- the corruption suite's damage kinds -------------------------------------------------------


@pytest.mark.parametrize("damage", ["flip", "truncate"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_corruption_kind_is_named_and_fixed(
    kind: str, damage: str, unclean: Fixture, clean: Fixture, tmp_path: Path  # noqa: F811
) -> None:
    fx = clean if kind == "clean_shutdown" else unclean
    rng = random.Random(f"verify-{kind}-{damage}")
    for i in range(CASES):
        case = tmp_path / f"case-{i}"
        shutil.copytree(fx.root, case)
        target, _, _ = pick(fx, kind, rng)
        at = damage_file(case / target, damage, rng)
        dirs = [case / d for d in fx.dirs]
        where = f"case {i}: {damage} of {target} at {at}"
        before = dir_snapshot(case)
        found = verify(*dirs)
        assert dir_snapshot(case) == before, f"{where}: verify changed files"
        assert "Traceback" not in found.stderr, found.stderr
        if found.returncode == 0:
            why = _undetectable(fx, case, kind, target, at, damage)
            assert why, f"{where}: verify found nothing:\n{found.stdout}"
            continue
        assert found.returncode == 1, f"{where}: {found.stdout}{found.stderr}"
        lines = [line for line in found.stdout.splitlines() if line.startswith(str(case / target))]
        assert lines, f"{where}: the damaged file is not named:\n{found.stdout}"
        if kind in ("active_log", "old_log", "index", "timeindex"):
            # FILE:POSITION: for the segment and index files (the first line may be a sibling's).
            assert any(line[len(str(case / target))] == ":" for line in lines), lines
            assert any(line.split(":")[1].strip().isdigit() for line in lines), lines
        fixed = verify(*dirs, fix=True)
        if kind == "meta_properties" or "no value has a majority" in found.stdout:
            assert fixed.returncode == 1 and "not repaired" in fixed.stdout, f"{where}: {fixed.stdout}"
            continue
        assert fixed.returncode == 0, f"{where}: --fix failed:\n{found.stdout}\n{fixed.stdout}{fixed.stderr}"
        again = verify(*dirs)
        assert again.returncode == 0, f"{where}: still damaged after --fix:\n{again.stdout}"
        with LogManager(dirs, scheduler=False) as manager:
            assert manager.offline_log_dirs == {}


# -- test_damaged_batches' damage of a standalone partition -------------------------------------


@pytest.mark.parametrize(
    "damage", [cut_inside_first_batch, cut_inside_second_batch, flip_a_value_byte_of_the_second_batch]
)
def test_a_damaged_batch_in_an_older_segment_is_named_at_its_position_and_fixed(
    damage: Callable[[Path], set[int]], tmp_path: Path
) -> None:
    path = write_segments(tmp_path / "logs" / "t-0")
    spans = batch_spans(middle_segment(path))
    lost = damage(path)
    found = verify(path)
    assert found.returncode == 1, found.stdout
    segment = str(middle_segment(path))
    batch = 0 if damage is cut_inside_first_batch else 1
    assert f"{segment}:{spans[batch][0]}: " in found.stdout, found.stdout
    fixed = verify(path, fix=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "truncated" in fixed.stdout and "deleted" in fixed.stdout, fixed.stdout
    assert verify(path).returncode == 0
    with UnifiedLog.open(path, read_only=True) as log:
        # Kafka's recovery: the segment is cut at the damaged batch, later segments are deleted.
        assert log.log_end_offset == min(lost)


def test_a_damaged_batch_length_with_data_after_it_is_named(tmp_path: Path) -> None:
    """test_damaged_batches' length + 65536: no torn tail, as the CRC matches a shorter length."""
    path = write_segments(tmp_path / "logs" / "t-0")
    f = middle_segment(path)
    data = bytearray(f.read_bytes())
    data[9] ^= 0x01
    f.write_bytes(bytes(data))
    found = verify(path)
    assert found.returncode == 1 and f"{f}:0: invalid record batch" in found.stdout, found.stdout
    assert "length is damaged" in found.stdout, found.stdout
    assert verify(path, fix=True).returncode == 0
    assert verify(path).returncode == 0


def test_an_index_entry_pointing_past_its_offset_is_named(tmp_path: Path) -> None:
    """test_damaged_batches' index entry whose offset was set to the segment's base."""
    path = write_segments(tmp_path / "logs" / "t-0", {"index.interval.bytes": 100})
    index = path / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    data[0:4] = b"\x00\x00\x00\x00"
    index.write_bytes(bytes(data))
    found = verify(path)
    assert found.returncode == 1 and f"{index}:0: entry 0 " in found.stdout, found.stdout
    fixed = verify(path, fix=True)
    # Rebuilt with the broker's default index.interval.bytes (topic configs are not on disk).
    assert fixed.returncode == 0 and f"{index}: " in fixed.stdout, fixed.stdout
    assert verify(path).returncode == 0


# -- test_crash_recovery's SIGKILLed writer ---------------------------------------------------


def test_what_a_sigkill_leaves_is_fixed(tmp_path: Path) -> None:
    """Each kill leaves an unclean shutdown (.deleted files of an unfinished retention, a torn
    last batch, unrecovered tails); whatever verify reports, --fix repairs it, and the next
    child starts from the fixed dir."""
    rng = random.Random(16)
    log_dir = tmp_path / "logs"
    reported = 0
    for kill in range(4):
        seed, crash_after = rng.randrange(1 << 32), rng.randrange(40, 600)
        run_until_crash_seam(CRASH_CHILD, [log_dir, seed, tmp_path / "status.json", crash_after], tmp_path / "err")
        found = verify(log_dir)
        assert found.returncode in (0, 1) and "Traceback" not in found.stderr, found.stderr
        if found.returncode == 1:
            reported += 1
            fixed = verify(log_dir, fix=True)
            assert fixed.returncode == 0, f"kill {kill}: {found.stdout}\n{fixed.stdout}{fixed.stderr}"
        assert verify(log_dir).returncode == 0, f"kill {kill}"
        with LogManager([log_dir], CRASH_CONFIG, scheduler=False) as manager:
            assert manager.offline_log_dirs == {}
    assert reported, "no kill left anything for verify to report"


# -- clean dirs, read-only, live and locked dirs, JSON -----------------------------------------


def test_clean_kafkalog_dirs_verify_clean_and_are_left_untouched(unclean: Fixture, clean: Fixture) -> None:  # noqa: F811
    for fx in (unclean, clean):
        before = dir_snapshot(fx.root)
        done = verify(*[fx.root / d for d in fx.dirs])
        assert done.returncode == 0, done.stdout
        assert done.stdout.startswith("clean: 2 log dirs, 4 partitions, 12 segments"), done.stdout
        assert dir_snapshot(fx.root) == before
        one = verify(fx.root / fx.parts[("t", 0)].segments[0].log).returncode
        assert one == 2  # a file is not a directory: usage


def test_json_names_each_problem_with_file_and_position(unclean: Fixture, tmp_path: Path) -> None:  # noqa: F811
    case = tmp_path / "case"
    shutil.copytree(unclean.root, case)
    seg = unclean.parts[("t", 0)].segments[1]
    batch = seg.batches[2]
    data = bytearray((case / seg.log).read_bytes())
    data[batch.position + 40] ^= 0x10  # covered by the CRC
    (case / seg.log).write_bytes(bytes(data))
    done = kafkalog("verify", "--json", *[case / d for d in unclean.dirs])
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert doc["clean"] is False and len(doc["partitions"]) == 4
    first = doc["problems"][0]
    assert (first["file"], first["position"], first["severity"]) == (str(case / seg.log), batch.position, "problem")
    assert "CRC" in first["message"] or "crc" in first["message"], first


def test_a_live_dir_is_checked_without_writing_and_fix_names_the_holder(tmp_path: Path) -> None:
    """While a LogManager holds the dir: verify writes and locks nothing, a partial batch at the
    end of the active segment is an append in progress (a note, exit 0), and --fix refuses,
    naming this process."""
    log_dir = tmp_path / "logs"
    with LogManager([log_dir], scheduler=False) as manager:
        log = manager.create_log("live", 0)
        log.append([Record(b"k%d" % i, b"v" * 50) for i in range(20)])
        log.flush()
        active = Path(log.segments[-1].path)
        whole = active.read_bytes()
        with active.open("ab") as f:
            f.write(whole[: len(whole) // 2])  # half of a batch: an append not finished yet
        before = dir_snapshot(log_dir)
        found = verify(log_dir)
        assert found.returncode == 0, found.stdout
        assert f"{active}:{len(whole)}: note: " in found.stdout and "append in progress" in found.stdout
        assert dir_snapshot(log_dir) == before
        fixed = verify(log_dir, fix=True)
        assert fixed.returncode == 1, fixed.stdout
        assert f"process {os.getpid()}" in fixed.stderr and "locked" in fixed.stderr, fixed.stderr
        assert "Traceback" not in fixed.stderr
        assert dir_snapshot(log_dir) == before
        with active.open("r+b") as f:
            f.truncate(len(whole))
        del log
    # At rest, the same bytes are a torn write: a problem that recovery truncates.
    with active.open("ab") as f:
        f.write(whole[: len(whole) // 2])
    found = verify(log_dir)
    assert found.returncode == 1 and f"{active}:{len(whole)}: the last" in found.stdout, found.stdout
    assert verify(log_dir, fix=True).returncode == 0
    assert verify(log_dir).returncode == 0


def test_leftovers_and_checkpoints_naming_missing_partitions_are_reported(unclean: Fixture, tmp_path: Path) -> None:  # noqa: F811
    case = tmp_path / "case"
    shutil.copytree(unclean.root, case)
    part = unclean.parts[("t", 0)]
    seg = case / part.segments[1].log
    shutil.copy(seg, seg.with_name(seg.name + ".cleaned"))
    (case / part.dir / "recovery-point-offset-checkpoint").write_text("0\n3\nt 0 100\nu 0 100\ngone 7 5\n")
    (case / part.dir / "log-start-offset-checkpoint.tmp").write_text("0\n1\nt 0")  # test_crash_recovery's
    (case / part.dir / "t-0" / "leader-epoch-checkpoint.tmp").write_text("0\n1\n0 ")
    found = verify(*[case / d for d in unclean.dirs])
    assert found.returncode == 1
    assert f"{seg}.cleaned: left by an interrupted clean" in found.stdout, found.stdout
    assert "names partition gone-7, which has no directory in this log dir" in found.stdout, found.stdout
    assert found.stdout.count("left by an interrupted atomic write") == 2, found.stdout
    assert verify(*[case / d for d in unclean.dirs], fix=True).returncode == 0
    assert verify(*[case / d for d in unclean.dirs]).returncode == 0
    assert ("gone", 7) not in read_offset_checkpoint(case / part.dir / "recovery-point-offset-checkpoint")


def test_a_malformed_leader_epoch_checkpoint_is_rebuilt_from_the_batches(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    with LogManager([log_dir], scheduler=False) as manager:
        log = manager.create_log("e", 0)
        log.append([Record(b"k", b"v")], leader_epoch=3)
        del log
    checkpoint = log_dir / "e-0" / "leader-epoch-checkpoint"
    assert checkpoint.read_text() == "0\n1\n3 0\n"
    checkpoint.write_text("0\n1\n3 x\n")
    found = verify(log_dir)
    assert found.returncode == 1 and f"{checkpoint}: malformed" in found.stdout, found.stdout
    with pytest.raises(KafkaLogError):
        UnifiedLog.open(checkpoint.parent, read_only=True)
    assert verify(log_dir, fix=True).returncode == 0
    assert checkpoint.read_text() == "0\n1\n3 0\n"
    assert verify(log_dir).returncode == 0


def test_a_compacted_log_verifies_clean(tmp_path: Path) -> None:
    """Cleaned segments (rebuilt batches, their indexes written by the clean) check as any
    other; the replaced segments' .deleted files, waiting for file.delete.delay.ms, are notes."""
    config = {"cleanup.policy": "compact", "internal.segment.bytes": "4096", "index.interval.bytes": "256"}
    log_dir = tmp_path / "logs"
    with LogManager([log_dir], scheduler=False) as manager:
        log = manager.create_log("compacted", 0, config)
        for r in range(30):
            records = [Record(b"k%d" % (i % 7), b"v%d-%d" % (r, i), timestamp=1_700_000_000_000 + r * 100 + i) for i in range(20)]
            log.append(records, compression="lz4" if r % 2 else "none")
        assert manager.compact_now("compacted", 0).stats.messages_written == 7
        del log
    done = verify(log_dir)
    assert done.returncode == 0, done.stdout
    assert ".log.deleted: note: awaits deletion" in done.stdout, done.stdout
