"""kafkalog.spark.class_data: the class-data archive the demo's Spark driver maps.

The keying, lookup and publishing rules run against a fake training (no JVM); one test builds a
real archive (the minimal training: a session's start) and starts a Spark driver JVM that must
map it (``-Xshare:on`` makes a JVM that cannot use its archive exit)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kafkalog.exceptions import SparkUnavailableError
from kafkalog.spark import class_data


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
    """subprocess.run replaced by a training that writes ``archive`` (None: nothing) to the
    temporary name it is given and exits with ``returncode``."""
    calls: list[list[str]] = []

    def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        assert cmd[1:5] == ["-m", "kafkalog.spark.class_data", "--train", "minimal"]
        if archive is not None:
            Path(cmd[5]).write_bytes(archive)
        return subprocess.CompletedProcess(cmd, returncode, "training output\n", "last line of the training\n")

    monkeypatch.setattr(class_data.subprocess, "run", run)
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
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    ok = subprocess.run([str(submit), "--driver-java-options", f"{options} -Xshare:on", "--version"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and f"version {pyspark.__version__}" in ok.stderr + ok.stdout, ok.stderr[-2000:]
    refused = subprocess.run([str(submit), "--driver-java-options", f"{options}.missing -Xshare:on", "--version"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "Unable to use shared archive" in refused.stderr + refused.stdout
