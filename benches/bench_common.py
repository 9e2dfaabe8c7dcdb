"""What the Python benches share: the work directory, timing loops, the table printer, Apache
Kafka's jars and the JVM runner (for the ``--kafka`` sides), and kafka-python's record decoder
(the pure-Python baseline).

The bench scripts run as ``python benches/<script>.py``, so this module is importable as
``bench_common`` from them. Apache Kafka's side comes from the dev kit the interop tests use
(``kit.kafka_harness``, under tests/kit/): the venv's ``kafkalog-dev.pth``, written by the
Makefile, puts tests/ on the path. It starts no thread and reads nothing at import.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


# -- the work directory ------------------------------------------------------------------------


@contextlib.contextmanager
def work_dir(prefix: str, scratch: str | os.PathLike[str] | None, keep: bool) -> Iterator[Path]:
    """A new directory under ``scratch`` (default: the system temp dir), removed afterwards
    unless ``keep``, even when the bench fails."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))
    try:
        yield work
    finally:
        if keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# -- timing and reporting ----------------------------------------------------------------------


def timed_runs(fn: Callable[[], object], runs: int, warmup: int = 0) -> list[float]:
    """Seconds of each of ``runs`` calls of ``fn``, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def read_buffer(size: int = 1 << 20) -> mmap.mmap:
    """A page-aligned buffer for a floor's reads. A ``bytearray`` of a MiB starts 16 or 32
    bytes into its page, and on AMD's Zen cores the kernel's copy into a destination 1 to
    about 40 bytes past its source modulo 4 KiB (every read from a page-aligned file position)
    runs about 3x slower: such a floor measures that slow copy, not the page cache."""
    return mmap.mmap(-1, size)


def machine() -> str:
    """The 1-minute load average and CPU count, for every report: the machines the benches run
    on are often shared."""
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


@dataclass(frozen=True)
class Column:
    title: str
    width: int
    left: bool = False  # aligned left (text) rather than right (numbers)


def print_table(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> None:
    """Prints a header line and one line per row; cells are formatted strings, padded to their
    column's width (a longer cell widens its line, never truncated)."""

    def line(cells: Iterable[str]) -> str:
        return " ".join(f"{cell:{'<' if c.left else '>'}{c.width}}" for c, cell in zip(columns, cells)).rstrip()

    print(line(c.title for c in columns))
    for row in rows:
        print(line(row))


# -- Apache Kafka's side -----------------------------------------------------------------------


def require_tools(*tools: str, why: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            raise SystemExit(f"{why} needs {tool} on PATH")


def kafka_harness() -> ModuleType:
    """tests/kit/kafka_harness.py: fetches the Kafka 4.x jars (Maven Central, cached in
    tests/kit/jvm/.cache) and compiles the Java helpers in tests/kit/jvm/java. Imported here,
    not at the top: only the ``--kafka`` sides need it."""
    from kit import kafka_harness  # type: ignore[import-not-found]

    return kafka_harness  # type: ignore[no-any-return]


def kafka_classpath(why: str = "--kafka") -> str:
    """The class path of Kafka's jars and the compiled helpers (KafkaStorageBench,
    KafkaLoadBench, KafkaCleanerDriver); prints the Kafka version."""
    require_tools("java", "javac", "mvn", why=why)
    harness = kafka_harness()
    lib = harness.fetch_jars()
    classpath = f"{lib}/*{os.pathsep}{harness.compile_helpers(lib)}"
    print(f"Kafka {harness.kafka_version(lib)} jars: {lib}", flush=True)
    return classpath


def jvm_opts() -> list[str]:
    """The JVM options of a broker (kafka-server-start.sh's heap and GC flags)."""
    return list(kafka_harness().BENCH_JVM_OPTS)


def run_checked(cmd: Sequence[str], timeout: float = 600) -> str:
    """Runs ``cmd`` (stdin closed) and returns its stdout; exits with the tail of its output
    when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def run_java(classpath: str, main_class: str, args: Sequence[str], timeout: float = 600) -> str:
    """Runs one of the Java helpers with a broker's JVM options; returns its stdout."""
    return run_checked(["java", *jvm_opts(), "-cp", classpath, main_class, *args], timeout)


# -- kafka-python, the pure-Python baseline ----------------------------------------------------


def kafka_python_batches(path: str | os.PathLike[str]) -> Iterator[Any]:
    """The record batches of one ``.log`` file, decoded by kafka-python's pure-Python codec
    (``MemoryRecords``), each CRC-checked as kafkalog checks it."""
    from kafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]

    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise ValueError(f"kafka-python found a bad CRC in {path}")
        yield batch
