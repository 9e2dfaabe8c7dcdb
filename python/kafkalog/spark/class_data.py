"""A class-data archive for Spark drivers: the JDK's application class-data sharing (AppCDS).

A local Spark session's JVM loads, parses and verifies the classes of Spark, Scala and their
libraries before its first job. A dynamic archive (``-XX:ArchiveClassesAtExit``, JDK 13+) holds
those classes as the JVM had them after a run (176 MB after the demo's training), and a JVM
started with ``-XX:SharedArchiveFile`` maps it instead: on the 2-core machine the demo's session
starts in 3.2-4.4 s instead of 7.1 s.

- :func:`build_archive` makes the archive once, by a training run of kafkalog's demo pipeline
  (:mod:`kafkalog.demo`, small) in a child process whose driver JVM dumps its classes when it
  exits. The archive is written under a temporary name, fsynced, and renamed only after the JVM
  exited cleanly: a truncated archive would crash the JVM that maps it (SIGBUS), not be refused.
  ``make demo`` runs it (``python -m kafkalog.spark.class_data``).
- :func:`driver_java_options` gives the options that use it, or nothing when there is none.

The archive's name is a digest of what it depends on: the Java runtime Spark starts (its path,
size and modification time) and the Spark pyspark launches (its version, and the jars directory
of ``$SPARK_HOME``, else of pyspark's own install). A new JDK or
Spark gets a new name, so a stale archive is never offered. The JVM checks the rest itself (its
own build, each jar's size and time): an archive it cannot use is ignored with one warning
line, and the session starts as without it. Only the driver JVM uses it; the classpath must be
pyspark's own, as :func:`kafkalog.demo.build_session` starts it.

Archives live in ``$KAFKALOG_CLASS_DATA_DIR``, by default ``share/kafkalog`` in the Python
environment (``sys.prefix``). Thread-safety: stateless functions; :func:`build_archive` starts
child processes and waits for them; concurrent builds (threads or processes) each dump to a
name of their own, and the last rename wins with a complete archive.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ..exceptions import SparkUnavailableError
from .environment import find_java

__all__ = ["DIR_ENV", "archive_dir", "archive_path", "driver_java_options", "build_archive", "main"]

#: The environment variable naming the directory of the archives.
DIR_ENV = "KAFKALOG_CLASS_DATA_DIR"
#: The training run's size: enough to run every kind of job the demo runs, small enough to take
#: seconds.
_TRAINING = {"events": 20_000, "keys": 2_000, "partitions": 4, "segment_bytes": 256 << 10}
_TRAININGS = ("demo", "minimal")
_TMP_SUFFIX = ".tmp"


def archive_dir() -> Path:
    """Where archives live: ``$KAFKALOG_CLASS_DATA_DIR``, else ``share/kafkalog`` under ``sys.prefix``."""
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix, "share", "kafkalog"))


def archive_path(java: str | None = None) -> Path:
    """The archive for the Java runtime Spark starts (``java``, else found as ``spark-submit``
    finds it) and the Spark pyspark launches (``$SPARK_HOME``, else pyspark's own); it need not
    exist. Raises SparkUnavailableError when there is no Java, ImportError when there is no
    pyspark."""
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    java = os.path.realpath(java or find_java()[0])
    jars = os.path.realpath(Path(_find_spark_home()) / "jars")
    parts = [java, pyspark.__version__, jars]
    for path in (java, jars):
        st = os.stat(path)
        parts += [str(st.st_size), str(st.st_mtime_ns)]
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return archive_dir() / f"spark-driver-{pyspark.__version__}-{digest}.jsa"


def driver_java_options(java: str | None = None) -> str:
    """``-XX:SharedArchiveFile=...`` for a driver JVM when :func:`archive_path`'s archive
    exists, else the empty string (also when Java or pyspark cannot be found: the session's
    start reports those)."""
    try:
        path = archive_path(java)
    except Exception:  # noqa: BLE001 (no Java or pyspark: the session's start names the fix)
        return ""
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""


def build_archive(java: str | None = None, *, force: bool = False, training: str = "demo",
                  timeout_s: float = 600.0) -> Path:
    """Makes :func:`archive_path`'s archive by a training run in a child process, unless it
    exists (or ``force``); returns its path. ``training``: ``demo`` (the demo pipeline, small:
    the classes of every job the demo runs) or ``minimal`` (a session's start alone, for
    tests). A Java runtime that cannot dump an archive is found first, in a second. Raises
    RuntimeError saying why (the runtime cannot dump; the training's exit status and its
    output's last lines; its timeout) when no archive is made; the training's processes (its
    JVM included) are killed on a timeout or an interrupt, and nothing is left behind."""
    if training not in _TRAININGS:
        raise ValueError(f"training must be one of {', '.join(_TRAININGS)}, not {training!r}")
    java = java or find_java()[0]
    final = archive_path(java)
    if final.is_file() and not force:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(final.parent)
    # A name of its own per build (another thread or process may build the same archive): the
    # JVM dumps there, and only a complete dump is renamed.
    tmp = final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}{_TMP_SUFFIX}")
    try:
        _check_java_dumps(java, tmp)
        with tempfile.TemporaryDirectory(prefix="kafkalog-class-data-") as work:
            status, output = _run_group([sys.executable, "-m", "kafkalog.spark.class_data", "--train", training,
                                         str(tmp), work], timeout_s)
        size = tmp.stat().st_size if tmp.is_file() else None
        if status != 0 or not size:
            tail = "\n".join(output.strip().splitlines()[-15:])
            left = "no archive" if size is None else "an empty archive" if size == 0 else f"{size:,} bytes, not used"
            raise RuntimeError(f"the training run for {final} exited with status {status}, leaving {left}:\n{tail}")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.rename(tmp, final)
        dir_fd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def _check_java_dumps(java: str, probe: Path) -> None:
    """RuntimeError unless ``java -XX:ArchiveClassesAtExit=<probe> -version`` writes an archive
    (a runtime without CDS, or without a base archive, only warns and writes none: the 45 s
    training would be for nothing). Removes the probe."""
    try:
        out = subprocess.run([java, f"-XX:ArchiveClassesAtExit={probe}", "-version"], capture_output=True, text=True,
                             timeout=120, check=False)
        if out.returncode != 0 or not probe.is_file():
            said = " ".join((out.stderr + out.stdout).split())[:300]
            raise RuntimeError(f"{java} cannot dump a class-data archive (-XX:ArchiveClassesAtExit: {said})")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{java} cannot dump a class-data archive ({e})") from e
    finally:
        probe.unlink(missing_ok=True)


def _run_group(cmd: list[str], timeout_s: float) -> tuple[int, str]:
    """Runs ``cmd`` in a session of its own and returns its exit status and output; on a
    timeout or any interruption the whole group (the training's Python and the JVM pyspark
    started, which ignores SIGINT) is killed, so no JVM dumps after the caller gave up."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output = _wait(proc, timeout_s)
    except BaseException as e:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise RuntimeError(f"the training run did not finish within {timeout_s:g} s; it was killed") from e
        raise
    return proc.returncode, output


def _wait(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """``proc``'s output once it exits (a test seam: tests interrupt the wait)."""
    output, _ = proc.communicate(timeout=timeout_s)
    return output


def _remove_abandoned(directory: Path) -> None:
    """Removes the temporary dumps of builds whose process is gone (killed before it could
    remove its own)."""
    for p in directory.glob(f".spark-driver-*{_TMP_SUFFIX}"):
        try:
            pid = int(p.name.split(".")[-3])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError):
            p.unlink(missing_ok=True)
        except PermissionError:
            pass  # alive, another user's


def _train(training: str, dump_to: str, work: str) -> None:
    """The child's run (:func:`build_archive`'s ``training``) in a session whose driver JVM
    dumps its classes to ``dump_to`` at exit. Returns after the JVM exited, so the archive is
    complete (the gateway JVM exits when its stdin closes)."""
    from pyspark import SparkContext

    from .. import demo

    spark = demo.build_session(work, java_options=f"-XX:ArchiveClassesAtExit={dump_to}")
    try:
        if training == "demo":
            demo.run(spark, work, picture=os.path.join(work, "picture.png"), **_TRAINING)  # type: ignore[arg-type]
        # minimal: the session's start alone
    finally:
        spark.stop()
    gateway = SparkContext._gateway  # noqa: SLF001 (pyspark keeps the launched JVM's process here)
    proc = getattr(gateway, "proc", None)
    if proc is None:
        raise RuntimeError("pyspark did not launch the driver JVM itself (PYSPARK_GATEWAY_PORT set?): no archive")
    proc.stdin.close()
    if proc.wait(timeout=300) != 0:
        raise RuntimeError(f"the driver JVM exited with status {proc.returncode} while writing {dump_to}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.spark.class_data",
                                     description="Builds the class-data archive Spark drivers started by kafkalog's "
                                     "demo map at start (see the module's documentation).")
    parser.add_argument("--force", action="store_true", help="build it again even if it exists")
    parser.add_argument("--train", nargs=3, metavar=("TRAINING", "DUMP_TO", "WORK_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.train:
        _train(*args.train)
        return
    t0 = time.perf_counter()
    try:
        existed = archive_path().is_file() and not args.force
        path = build_archive(force=args.force)
    except (SparkUnavailableError, ImportError, RuntimeError, OSError) as e:
        # The demo still runs, only its JVM starts slower; a missing Java or pyspark is named by
        # the demo itself.
        print(f"class-data archive: not built, Spark's driver starts without it ({e})", file=sys.stderr)
        return
    if existed:
        print(f"class-data archive: {path}")
    else:
        print(f"class-data archive: {path} ({path.stat().st_size / 1e6:.0f} MB, built in "
              f"{time.perf_counter() - t0:.1f} s, once)")

if __name__ == "__main__":
    main()
