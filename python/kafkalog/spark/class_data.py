"""A class-data archive for Spark drivers: the JDK's application class-data sharing (AppCDS).

A local Spark session's JVM loads, parses and verifies the classes of Spark, Scala and their
libraries before its first job. A dynamic archive (``-XX:ArchiveClassesAtExit``, JDK 13+) holds
those classes as the JVM had them after a run (176 MB after the demo's training), and a JVM
started with ``-XX:SharedArchiveFile`` maps it instead: on the 2-core machine the demo's session
starts in 3.2-3.5 s instead of 7 s.

- :func:`build_archive` makes the archive once, by a training run of kafkalog's demo pipeline
  (:mod:`kafkalog.demo`, small) in a child process whose driver JVM dumps its classes when it
  exits. The archive is written under a temporary name, fsynced, and renamed only after the JVM
  exited cleanly: a truncated archive would crash the JVM that maps it (SIGBUS), not be refused.
  ``make demo`` runs it (``python -m kafkalog.spark.class_data``).
- :func:`driver_java_options` gives the options that use it, or nothing when there is none.

The archive's name is a digest of what it depends on: the Java runtime Spark starts (its path,
size and modification time) and the pyspark install (version, its jars directory). A new JDK or
Spark gets a new name, so a stale archive is never offered. The JVM checks the rest itself (its
own build, each jar's size and time): an archive it cannot use is ignored with one warning
line, and the session starts as without it. Only the driver JVM uses it; the classpath must be
pyspark's own, as :func:`kafkalog.demo.build_session` starts it.

Archives live in ``$KAFKALOG_CLASS_DATA_DIR``, by default ``share/kafkalog`` in the Python
environment (``sys.prefix``). Thread-safety: stateless functions; :func:`build_archive` starts
one child process and waits for it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
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


def archive_dir() -> Path:
    """Where archives live: ``$KAFKALOG_CLASS_DATA_DIR``, else ``share/kafkalog`` under ``sys.prefix``."""
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix, "share", "kafkalog"))


def archive_path(java: str | None = None) -> Path:
    """The archive for the Java runtime Spark starts (``java``, else found as ``spark-submit``
    finds it) and the installed pyspark; it need not exist. Raises SparkUnavailableError when
    there is no Java, ImportError when there is no pyspark."""
    import pyspark

    java = os.path.realpath(java or find_java()[0])
    jars = os.path.realpath(Path(pyspark.__file__).parent / "jars")
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
    tests). Raises RuntimeError naming the child's exit status and its output's last lines when
    the run fails or leaves no archive."""
    if training not in _TRAININGS:
        raise ValueError(f"training must be one of {', '.join(_TRAININGS)}, not {training!r}")
    final = archive_path(java)
    if final.is_file() and not force:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="kafkalog-class-data-") as work:
            child = subprocess.run([sys.executable, "-m", "kafkalog.spark.class_data", "--train", training, str(tmp), work],
                                   capture_output=True, text=True, timeout=timeout_s, check=False)
        size = tmp.stat().st_size if tmp.is_file() else None
        if child.returncode != 0 or not size:
            tail = "\n".join((child.stdout + child.stderr).strip().splitlines()[-15:])
            left = "no archive" if size is None else "an empty archive" if size == 0 else f"{size:,} bytes, not used"
            raise RuntimeError(f"the training run for {final} exited with status {child.returncode}, "
                               f"leaving {left}:\n{tail}")
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
