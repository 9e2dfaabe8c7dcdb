"""The engine's rules for tools (rust/manager/discovery.rs through kafkalog): which directories
are partitions (``discover``, ``log_dir_partitions``), whether a LogManager or a Kafka broker
holds a log dir's ``.lock`` (``probe_log_dir_lock``, tested against real child processes that
say through a pipe when they hold the lock), and the on-demand cleaner's broker keys
(``on_demand_cleaner_config``).
"""

from __future__ import annotations

import errno
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import kafkalog
from kafkalog import DiscoveredPartition, LogManager, _native, discover, log_dir_partitions, on_demand_cleaner_config, probe_log_dir_lock
from kafkalog.exceptions import InvalidConfigError, KafkaLogIOError

UUID = "0123456789abcdef0123456789abcdef"


def partition_dir(path: Path, *, segment: bool = True) -> Path:
    path.mkdir(parents=True)
    if segment:
        (path / "00000000000000000000.log").write_bytes(b"")
    return path


def found(path: str | os.PathLike[str]) -> list[tuple[str, int, str, str]]:
    return [(d.topic, d.partition, d.path, d.log_dir) for d in discover(path)]


# -- discover: the shapes a path may have -------------------------------------------------------


def test_a_log_dir_gives_its_partitions_sorted_by_topic_and_partition(tmp_path: Path) -> None:
    for name in ("b-0", "a-10", "a-2", "__cluster_metadata-0"):
        partition_dir(tmp_path / name)
    (tmp_path / "empty-3").mkdir()  # an empty partition, as Kafka's LogManager loads one
    (tmp_path / ".lock").write_bytes(b"")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    want = [("__cluster_metadata", 0), ("a", 2), ("a", 10), ("b", 0), ("empty", 3)]
    assert found(tmp_path) == [(t, p, str(tmp_path / f"{t}-{p}"), str(tmp_path)) for t, p in want]
    assert discover(tmp_path) == log_dir_partitions(tmp_path)


def test_a_partition_dir_named_directly_gives_itself(tmp_path: Path) -> None:
    orders = partition_dir(tmp_path / "orders-7")
    assert found(orders) == [("orders", 7, str(orders), str(tmp_path))]
    assert found(str(orders)) == found(orders)
    # A partition holding only partition.metadata, or nothing yet, is one too.
    meta = tmp_path / "meta-0"
    meta.mkdir()
    (meta / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    assert found(meta) == [("meta", 0, str(meta), str(tmp_path))]
    empty = tmp_path / "empty-0"
    empty.mkdir()
    assert found(empty) == [("empty", 0, str(empty), str(tmp_path))]
    # log_dir_partitions never takes the directory itself for a partition.
    assert log_dir_partitions(orders) == []


def test_a_relative_partition_dir_lives_in_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition_dir(tmp_path / "t-0")
    monkeypatch.chdir(tmp_path)
    assert found("t-0") == [("t", 0, "t-0", ".")]


def test_a_log_dir_named_like_a_partition_is_a_log_dir(tmp_path: Path) -> None:
    data = tmp_path / "data-1"
    partition_dir(data / "users-0")
    partition_dir(data / "users-1")
    assert found(data) == [("users", p, str(data / f"users-{p}"), str(data)) for p in (0, 1)]
    # One level up, data-1 is not a partition, and its partitions are not reached.
    assert discover(tmp_path) == []


def test_renamed_partition_dirs_are_never_discovered(tmp_path: Path) -> None:
    partition_dir(tmp_path / "a-0")
    for suffix in ("delete", "future", "stray"):
        partition_dir(tmp_path / f"a-{ord(suffix[0])}.{UUID}-{suffix}")
    assert found(tmp_path) == [("a", 0, str(tmp_path / "a-0"), str(tmp_path))]
    # Named directly, a renamed dir is a folder without partitions.
    assert discover(tmp_path / f"a-100.{UUID}-delete") == []


@pytest.mark.parametrize(
    "name",
    ["orders", "orders-x", "orders-01", "orders-+1", "orders-2147483648", "a b-0", "..-0", "t\u00e9-0", "-0", f"{'t' * 250}-0", "remote-log-index-cache"],
)
def test_names_that_are_not_a_partitions_are_skipped(tmp_path: Path, name: str) -> None:
    partition_dir(tmp_path / name)
    assert discover(tmp_path) == []
    assert discover(tmp_path / name) == []


def test_files_named_like_partitions_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "a-0").write_bytes(b"not a directory")
    partition_dir(tmp_path / "b-0")
    assert [d.topic for d in discover(tmp_path)] == ["b"]


def test_symlinked_partitions_are_followed(tmp_path: Path) -> None:
    target = partition_dir(tmp_path / "elsewhere" / "t-0")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "t-0").symlink_to(target)
    (logs / "t-1").symlink_to(tmp_path / "missing")
    assert found(logs) == [("t", 0, str(logs / "t-0"), str(logs))]


def test_a_missing_path_or_a_file_is_an_io_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(KafkaLogIOError) as e:
        discover(tmp_path / "nowhere")
    assert e.value.errno == errno.ENOENT and e.value.filename == str(tmp_path / "nowhere")
    (tmp_path / "f-0").write_bytes(b"")
    with pytest.raises(KafkaLogIOError) as e:
        discover(tmp_path / "f-0")
    assert e.value.errno == errno.ENOTDIR and e.value.filename == str(tmp_path / "f-0")
    with pytest.raises(TypeError):
        discover(42)  # type: ignore[arg-type]


def test_discovery_agrees_with_the_log_manager(tmp_path: Path) -> None:
    """The partitions a LogManager created are the ones discovered; a deleted one (renamed
    -delete) is gone at once."""
    data = tmp_path / "data"
    with LogManager([data], {"log.segment.delete.delay.ms": "600000"}, scheduler=False) as m:
        for topic, partition in [("orders", 0), ("orders", 1), ("users.v2", 0)]:
            m.create_log(topic, partition).append([(b"k", b"v")])
        assert [(d.topic, d.partition) for d in discover(data)] == [("orders", 0), ("orders", 1), ("users.v2", 0)]
        renamed = m.delete_log("orders", 1)
        assert os.path.isdir(renamed)
        assert [(d.topic, d.partition) for d in discover(data)] == [("orders", 0), ("users.v2", 0)]
    with LogManager([data], scheduler=False) as m:
        assert sorted((log.topic, log.partition) for log in m.logs()) == [(d.topic, d.partition) for d in discover(data)]


def test_discovered_partitions_are_frozen_ordered_hashable_and_pickle(tmp_path: Path) -> None:
    partition_dir(tmp_path / "a-1")
    partition_dir(tmp_path / "a-0")
    a0, a1 = discover(tmp_path)
    assert a0 < a1 and sorted([a1, a0]) == [a0, a1]
    assert pickle.loads(pickle.dumps(a1)) == a1
    assert {a0, a1, DiscoveredPartition("a", 0, a0.path, a0.log_dir)} == {a0, a1}
    with pytest.raises(AttributeError):
        a0.topic = "b"  # type: ignore[misc]
    assert repr(a0) == f"DiscoveredPartition(topic='a', partition=0, path={a0.path!r}, log_dir={str(tmp_path)!r})"
    assert tuple(a1) == ("a", 1, str(tmp_path / "a-1"), str(tmp_path))


# -- the .lock probe --------------------------------------------------------------------------

MANAGER_HOLDER = """
import sys
import kafkalog
manager = kafkalog.LogManager([sys.argv[1]], scheduler=False)
print("holding", flush=True)
sys.stdin.readline()
manager.close()
"""

# A Kafka broker's lock: Java's FileChannel.tryLock is a process-owned POSIX record lock.
BROKER_HOLDER = """
import fcntl, os, sys
fd = os.open(os.path.join(sys.argv[1], ".lock"), os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("holding", flush=True)
sys.stdin.readline()
"""


@contextmanager
def hold(code: str, log_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding ``log_dir``'s lock until a line arrives on its stdin (it says
    "holding" on its stdout once it holds it)."""
    child = subprocess.Popen([sys.executable, "-c", code, str(log_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "holding\n"
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def release(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("release\n")
    child.stdin.flush()
    assert child.wait() == 0


@pytest.mark.parametrize("code", [MANAGER_HOLDER, BROKER_HOLDER], ids=["log-manager", "kafka-broker"])
def test_the_probe_sees_another_process_holding_the_lock(tmp_path: Path, code: str) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    free = probe_log_dir_lock(log_dir)
    assert (free.lock_file, free.held, free.pid, free.holder) == (str(log_dir / ".lock"), False, None, None)
    assert not (log_dir / ".lock").exists(), "the probe creates nothing"
    with hold(code, log_dir) as child:
        held = probe_log_dir_lock(log_dir)
        assert held.held and held.pid == child.pid
        assert held.holder is not None and held.holder.startswith(f"process {child.pid} (") and "python" in held.holder
        assert probe_log_dir_lock(str(log_dir)) == held
        release(child)
        assert not probe_log_dir_lock(log_dir).held


def test_the_probe_takes_nothing_so_the_manager_still_starts(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / ".lock").write_bytes(b"")
    assert not probe_log_dir_lock(log_dir).held
    with LogManager([log_dir], scheduler=False):
        probe = probe_log_dir_lock(log_dir)
        assert probe.held and probe.pid == os.getpid() and probe.holder == f"this process (pid {os.getpid()})"
    assert not probe_log_dir_lock(log_dir).held
    assert not probe_log_dir_lock(tmp_path / "missing").held


# -- the on-demand cleaner's keys -------------------------------------------------------------


def test_cleaner_keys_default_to_kafkas_and_parse_through_the_broker_table() -> None:
    assert kafkalog.OnDemandCleanerConfig.KEYS == [
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
    ]
    c = on_demand_cleaner_config([])
    assert (c.dedupe_buffer_size, c.load_factor, c.io_buffer_size) == (128 * 1024 * 1024, 0.9, 512 * 1024)
    assert c.max_io_bytes_per_second == sys.float_info.max
    c = on_demand_cleaner_config(
        [
            ("log.cleaner.dedupe.buffer.size", " 4096 "),
            ("log.cleaner.io.buffer.load.factor", "0.5"),
            ("log.cleaner.io.buffer.size", "1024"),
            ("log.cleaner.io.max.bytes.per.second", "1e6"),
        ]
    )
    assert (c.dedupe_buffer_size, c.load_factor, c.io_buffer_size, c.max_io_bytes_per_second) == (4096, 0.5, 1024, 1e6)


@pytest.mark.parametrize(
    "key, value, rule",
    [
        ("log.cleaner.dedupe.buffer.size", "lots", "must be a long"),
        ("log.cleaner.dedupe.buffer.size", "1.5", "must be a long"),
        ("log.cleaner.dedupe.buffer.size", "0", "must be >= 1"),
        ("log.cleaner.io.buffer.load.factor", "1.5", "must be in (0.0, 1.0]"),
        ("log.cleaner.io.buffer.load.factor", "0", "must be in (0.0, 1.0]"),
        ("log.cleaner.io.buffer.size", "-1", "must be >= 0"),
        ("log.cleaner.io.buffer.size", "1", "must be in [2, 2147483647]"),
        ("log.cleaner.io.buffer.size", "2147483648", "must be an int"),
        ("log.cleaner.io.max.bytes.per.second", "0", "must be finite and > 0"),
        ("log.cleaner.io.max.bytes.per.second", "inf", "must be finite and > 0"),
        ("log.cleaner.threads", "2", "not a setting of an on-demand clean"),
        ("segment.bytes", "1024", "not a setting of an on-demand clean"),
    ],
)
def test_bad_cleaner_keys_name_key_value_and_rule(key: str, value: str, rule: str) -> None:
    with pytest.raises(InvalidConfigError) as e:
        on_demand_cleaner_config([("log.cleaner.io.buffer.size", "1024"), (key, value)])
    message = str(e.value)
    assert key in message and repr(value).strip("'") in message and rule in message, message
    assert isinstance(e.value, ValueError)


def test_the_cleaner_sizes_are_what_compact_now_takes(tmp_path: Path) -> None:
    c = on_demand_cleaner_config([("log.cleaner.dedupe.buffer.size", "2048"), ("log.cleaner.io.buffer.size", "4096")])
    with kafkalog.UnifiedLog.open(tmp_path / "t-0", {"cleanup.policy": "compact"}) as log:
        log.append([(b"k", b"1"), (b"k", b"2")])
        log.roll()
        result = log.compact_now(
            dedupe_buffer_size=c.dedupe_buffer_size,
            load_factor=c.load_factor,
            io_buffer_size=c.io_buffer_size,
            max_io_bytes_per_second=c.max_io_bytes_per_second,
        )
        assert result.stats.messages_read == 2 and result.stats.messages_written == 1


def test_topic_configs_are_checked_by_the_engine_table_without_a_log(tmp_path: Path) -> None:
    """validate_topic_config is the check UnifiedLog.open makes and resolves the same config, with
    nothing on disk."""
    resolved = _native.validate_topic_config([("cleanup.policy", "compact"), ("segment.bytes", "1048576")])
    with kafkalog.UnifiedLog.open(tmp_path / "ok-0", {"cleanup.policy": "compact", "segment.bytes": 1048576}) as log:
        assert resolved == log.config
    assert resolved["segment.bytes"] == "1048576" and resolved["cleanup.policy"] == "compact"
    shutil.rmtree(tmp_path / "ok-0")
    for key, value in [("segment.bytes", "10"), ("cleanup.policy", "shred"), ("no.such.key", "1")]:
        with pytest.raises(InvalidConfigError) as checked:
            _native.validate_topic_config([(key, value)])
        assert key in str(checked.value)
        with pytest.raises(InvalidConfigError) as opened:
            kafkalog.UnifiedLog.open(tmp_path / "t-0", {key: value})
        assert str(checked.value) == str(opened.value)
    assert list(tmp_path.iterdir()) == []
