"""kafkalog.spark's environment checks (kafkalog.spark.environment): a missing or unsupported
pyspark and a missing or old Java raise SparkUnavailableError naming what was found and the
fix, before anything Spark starts. No Spark session is started here."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

import kafkalog.spark
from kafkalog.exceptions import KafkaLogError, SparkUnavailableError
from kafkalog.spark import environment


def test_the_installed_pyspark_is_supported() -> None:
    import pyspark

    assert environment.require_pyspark() == pyspark.__version__


def test_a_missing_pyspark_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` now raises ImportError
    for call in (lambda: kafkalog.spark.register(None), lambda: kafkalog.spark.compact):  # type: ignore[arg-type]
        with pytest.raises(SparkUnavailableError, match=r"needs pyspark.*pip install 'kafkalog\[spark\]'") as exc:
            call()
        assert isinstance(exc.value, ImportError) and isinstance(exc.value, KafkaLogError)


@pytest.mark.parametrize("version", ["3.5.1", "4.1.0", "5.0.0", "dev"])
def test_an_unsupported_pyspark_names_its_version(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", version)
    with pytest.raises(SparkUnavailableError, match=rf"needs pyspark >= 4\.2 and < 5, but pyspark {version} is"):
        kafkalog.spark.register(None)  # type: ignore[arg-type]


def test_java_is_found_on_this_machine() -> None:
    java, major = environment.require_java()
    assert os.access(java, os.X_OK) and major >= 17


def test_no_java_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SparkUnavailableError, match="JAVA_HOME is not set and no java is on PATH: install a JDK"):
        environment.require_java({"PATH": str(tmp_path)})
    with pytest.raises(SparkUnavailableError, match=r"JAVA_HOME is .*, but .*bin/java is not an executable"):
        environment.require_java({"JAVA_HOME": str(tmp_path)})


def _fake_java(dir: Path, version_line: str) -> Path:
    """A `java` whose `-version` prints `version_line` on stderr, as Java does."""
    java = dir / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return java


def test_an_old_java_names_its_version(tmp_path: Path) -> None:
    _fake_java(tmp_path, 'openjdk version "1.8.0_392"')
    with pytest.raises(SparkUnavailableError, match=r"needs Java 17 or newer, but .*java \(from JAVA_HOME .*\) is Java 8"):
        environment.require_java({"JAVA_HOME": str(tmp_path)})
    java = _fake_java(tmp_path / "on-path", 'openjdk version "21.0.2" 2024-01-16')
    assert environment.require_java({"PATH": str(java.parent)}) == (str(java), 21)


@pytest.mark.parametrize(
    ("output", "major"),
    [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_392"', 8), ('openjdk version "21"', 21),
     ("no version here", None)],
)  # fmt: skip
def test_java_major_version(output: str, major: int | None) -> None:
    assert environment.java_major_version(output) == major


def test_the_spark_extra_installs_a_supported_pyspark() -> None:
    """`pip install 'kafkalog[spark]'` brings a pyspark within PYSPARK_SUPPORTED, and the dev
    extra tests with the same bounds."""
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    (low_major, low_minor), (high_major, _) = environment.PYSPARK_SUPPORTED
    want = f"pyspark>={low_major}.{low_minor},<{high_major}"
    assert project["optional-dependencies"]["spark"] == [want]
    dev = [r for r in project["optional-dependencies"]["dev"] if r.startswith("pyspark")]
    assert [r.replace("[connect]", "") for r in dev] == [want], dev


@pytest.mark.parametrize("version", ["3.5.0", "4.1.1", "5.0.0"])
def test_a_session_running_another_spark_is_refused(version: str) -> None:
    """The cluster's Spark (``spark.version``) may differ from the pyspark package's."""

    class Session:
        def __init__(self) -> None:
            self.version = version

    with pytest.raises(SparkUnavailableError, match=rf"but the session runs Spark {version}: run on a Spark 4\.2\+"):
        kafkalog.spark.register(Session())  # type: ignore[arg-type]


def test_the_column_functions_name_the_fix_without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.delitem(sys.modules, "kafkalog.spark.functions", raising=False)
    with pytest.raises(SparkUnavailableError, match=r"pip install 'kafkalog\[spark\]'"):
        import kafkalog.spark.functions  # noqa: F401


def test_the_demo_without_java_names_the_fix(tmp_path: Path) -> None:
    """`make demo` on a machine without Java stops before Spark starts, with the fix."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java on it
    done = subprocess.run(
        [sys.executable, "-m", "kafkalog.demo", "--data-dir", str(tmp_path / "demo")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "SparkUnavailableError: Spark needs Java 17 or newer, but JAVA_HOME is not set" in done.stderr, done.stderr
    assert not (tmp_path / "demo").exists(), "nothing started"
