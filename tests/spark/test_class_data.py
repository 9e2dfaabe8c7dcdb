"""kafkalog.spark.class_data: the class-data archive the demo's Spark driver maps.

The keying, lookup and publishing rules run against a fake training (no JVM); one test builds a
real archive (the minimal training: a session's start) and starts a Spark driver JVM that must
map it (``-Xshare:on`` makes a JVM that cannot use its archive exit)."""

from __future__ import annotations

import inspect
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog.exceptions import SparkUnavailableError
from kafkalog.spark import class_data

_real_check = class_data._check_java_dumps


@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(class_data.DIR_ENV, str(tmp_path / "archives"))
    return tmp_path / "archives"


def _fake_java(path: Path, body: str = "#!/bin/sh\n") -> str:
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def test_archive_name_follows_the_java_runtime_and_the_directory(archives: Path, tmp_path: Path) -> None:
    a = _fake_java(tmp_path / "java-a")
    b = _fake_java(tmp_path / "java-b")
    path_a = class_data.archive_path(a)
    assert path_a.parent == archives and path_a.name.startswith("spark-driver-") and path_a.suffix == ".jsa"
    assert class_data.archive_path(a) == path_a
    assert class_data.archive_path(b) != path_a
    os.utime(a, ns=(1, 1))  # the same path, another build of the runtime
    assert class_data.archive_path(a) != path_a


def test_options_name_the_archive_only_when_it_exists(archives: Path, tmp_path: Path) -> None:
    java = _fake_java(tmp_path / "java")
    assert class_data.driver_java_options(java) == ""
    path = class_data.archive_path(java)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert class_data.driver_java_options(java) == f"-XX:SharedArchiveFile={path}"


def test_no_java_gives_no_options_and_main_says_why(archives: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JAVA_HOME", "/nonexistent-jdk")
    with pytest.raises(SparkUnavailableError, match="JAVA_HOME"):
        class_data.archive_path()
    assert class_data.driver_java_options() == ""
    class_data.main([])
    err = capsys.readouterr().err
    assert err.startswith("class-data archive: not built, Spark's driver starts without it (JAVA_HOME is")
    assert not archives.exists()


def _fake_training(monkeypatch: pytest.MonkeyPatch, returncode: int, archive: bytes | None) -> list[list[str]]:
    """The training replaced by one that writes ``archive`` (None: nothing) to the temporary
    name it is given and exits with ``returncode``; the runtime's dump check passes."""
    calls: list[list[str]] = []

    def run_group(cmd: list[str], timeout_s: float) -> tuple[int, str]:
        calls.append(cmd)
        assert cmd[1:5] == ["-m", "kafkalog.spark.class_data", "--train", "minimal"]
        if archive is not None:
            Path(cmd[5]).write_bytes(archive)
        return returncode, "training output\nlast line of the training\n"

    monkeypatch.setattr(class_data, "_run_group", run_group)
    monkeypatch.setattr(class_data, "_check_java_dumps", lambda java, probe: None)
    return calls


def test_a_finished_training_publishes_the_archive_under_its_name(archives: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    java = _fake_java(tmp_path / "java")
    calls = _fake_training(monkeypatch, 0, b"archive bytes")
    path = class_data.build_archive(java, training="minimal")
    assert path == class_data.archive_path(java) and path.read_bytes() == b"archive bytes"
    assert sorted(p.name for p in archives.iterdir()) == [path.name]  # no temporary file left
    assert class_data.build_archive(java, training="minimal") == path and len(calls) == 1  # exists: not rebuilt
    class_data.build_archive(java, training="minimal", force=True)
    assert len(calls) == 2


@pytest.mark.parametrize("returncode, archive, what", [
    (1, b"partial", "exited with status 1, leaving 7 bytes, not used"),
    (0, None, "exited with status 0, leaving no archive"),
    (0, b"", "exited with status 0, leaving an empty archive"),
])
def test_a_failed_training_publishes_nothing(archives: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             returncode: int, archive: bytes | None, what: str) -> None:
    java = _fake_java(tmp_path / "java")
    _fake_training(monkeypatch, returncode, archive)
    with pytest.raises(RuntimeError, match=what) as e:
        class_data.build_archive(java, training="minimal")
    assert "last line of the training" in str(e.value)
    assert list(archives.iterdir()) == []  # neither the archive nor its temporary file
    assert class_data.driver_java_options(java) == ""


def test_a_runtime_that_cannot_dump_is_found_before_the_training(archives: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A "java" that runs but writes no archive, as a runtime without CDS (it only warns).
    java = _fake_java(tmp_path / "java", "#!/bin/sh\necho 'warning: CDS is disabled' >&2\n")
    calls = _fake_training(monkeypatch, 0, b"archive")
    monkeypatch.setattr(class_data, "_check_java_dumps", _real_check)
    with pytest.raises(RuntimeError, match=r"cannot dump a class-data archive \(-XX:ArchiveClassesAtExit: "
                                           r"warning: CDS is disabled\)"):
        class_data.build_archive(java, training="minimal")
    assert calls == [] and list(archives.iterdir()) == []


def test_a_training_that_times_out_is_killed_with_its_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's own child (as the JVM pyspark starts) dies too: no dump after the build gave
    up. Events only: the wait is interrupted once the child has said its child's pid; the
    grandchild shares the output pipe, so the run returns only after it closed it, and its pidfd
    then says it exited (a kill that missed it would leave the run waiting, not passing)."""
    script = ("import signal, subprocess, sys\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()'])\n"
              "print(p.pid, flush=True)\n"
              "signal.pause()\n")
    grandchild: list[int] = []

    def interrupted_wait(proc: subprocess.Popen[str], timeout_s: float) -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().isdigit(), f"the child never started its child: {line!r}"
        grandchild.append(os.pidfd_open(int(line)))  # it runs: it was started before the line
        raise subprocess.TimeoutExpired(proc.args, timeout_s)

    monkeypatch.setattr(class_data, "_wait", interrupted_wait)
    with pytest.raises(RuntimeError, match="did not finish within 7 s; it was killed"):
        class_data._run_group([sys.executable, "-c", script], 7)
    (pidfd,) = grandchild
    try:
        readable, _, _ = select.select([pidfd], [], [])  # readable once the process has exited
        assert readable == [pidfd]
    finally:
        os.close(pidfd)


def test_abandoned_dumps_are_removed_and_live_ones_kept(archives: Path) -> None:
    archives.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = archives / f".spark-driver-4.3.0-0123.jsa.{int(dead.stdout)}.abc.tmp"
    mine = archives / f".spark-driver-4.3.0-0123.jsa.{os.getpid()}.def.tmp"
    other = archives / "spark-driver-4.3.0-0123.jsa"
    for p in (gone, mine, other):
        p.write_bytes(b"x")
    class_data._remove_abandoned(archives)
    assert sorted(p.name for p in archives.iterdir()) == sorted([mine.name, other.name])


def test_the_demo_accepts_the_trainings_arguments() -> None:
    from kafkalog import demo

    inspect.signature(demo.run).bind(None, "work", picture="p.png", **class_data._TRAINING)


def test_unknown_training_is_refused(archives: Path) -> None:
    with pytest.raises(ValueError, match="training must be one of demo, minimal, not 'all'"):
        class_data.build_archive(training="all")


@pytest.mark.spark
def test_a_real_archive_is_mapped_by_the_next_driver(archives: Path) -> None:
    """The training's driver JVM dumps its classes when pyspark's gateway closes; a Spark driver
    JVM started with the archive and -Xshare:on (which refuses to start without mapping it, e.g.
    on another class path) runs (``spark-submit --version``: the driver's class path and JVM
    options, without a session)."""
    import pyspark

    path = class_data.build_archive(training="minimal")
    assert path.stat().st_size > 10 << 20  # Spark's classes, not only the JDK's
    assert sorted(p.name for p in archives.iterdir()) == [path.name]
    options = class_data.driver_java_options()
    assert options == f"-XX:SharedArchiveFile={path}"
    from kafkalog import demo

    assert demo._driver_java_options(archives / "log4j2.properties", None).endswith(f" -XX:+UseParallelGC -XX:TieredStopAtLevel=1 {options}")
    assert demo._driver_java_options(archives / "log4j2.properties", "").endswith(" -XX:+UseParallelGC -XX:TieredStopAtLevel=1")
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    ok = subprocess.run([str(submit), "--driver-java-options", f"{options} -Xshare:on", "--version"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and f"version {pyspark.__version__}" in ok.stderr + ok.stdout, ok.stderr[-2000:]
    refused = subprocess.run([str(submit), "--driver-java-options", f"{options}.missing -Xshare:on", "--version"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "Unable to use shared archive" in refused.stderr + refused.stdout
