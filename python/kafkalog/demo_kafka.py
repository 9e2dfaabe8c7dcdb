"""The demo's comparison line: the compact step's topic cleaned by Apache Kafka's own cleaner.

Before the compact, the demo copies the topic's partition directories; afterwards Kafka's
``Cleaner`` (kafka-storage 4.3.1, the class a broker's cleaner thread runs, driven by
``tests/kit/jvm/java/KafkaCleanerDriver.java``) cleans the copies one after the other on one
thread, in a JVM started for it, as the interop tests and ``benches/bench_cleaner.py --kafka``
run it. The line puts Kafka's time in ``doClean`` beside the time kafkalog's cleaner took in the
compact job's tasks (from opening each log to closing it), both summed over the partitions, and
the records each kept.

It needs the repository's dev kit (``tests/kit``, on the venv's path through the Makefile's
``kafkalog-dev.pth``), ``java``, ``javac`` and ``mvn``, and the Kafka jars already fetched into
``tests/kit/jvm/.cache`` (``make test-interop`` fetches them). Without one of them the line is
skipped with a note saying what is missing: the demo never downloads anything. Nothing here
starts a thread; the JVM is a child process waited for.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["KafkaCleaner", "KafkaCleanerResult", "find_kafka_cleaner", "copy_partitions"]

FETCH_HINT = "make test-interop fetches them into tests/kit/jvm/.cache"


@dataclass(frozen=True)
class KafkaCleanerResult:
    """Kafka's cleaner on copies of the topic: ``seconds`` in ``Cleaner.doClean`` summed over
    the partitions (the JVM's start, and the logs' open and close, not counted), records read
    and kept (``messages_read`` / ``messages_written`` of its CleanerStats, all passes) and the
    bytes it read."""

    version: str
    partitions: int
    seconds: float
    messages_read: int
    messages_written: int
    bytes_read: int


class KafkaCleaner:
    """Runs KafkaCleanerDriver from the fetched jars (a found harness: see
    :func:`find_kafka_cleaner`). Holds no resources; safe to share."""

    def __init__(self, harness: ModuleType, jars: Any) -> None:
        self._harness = harness
        self._jars = jars
        self.version: str = jars.version

    def clean(self, dirs: Sequence[Path], config: dict[str, str]) -> KafkaCleanerResult:
        """Cleans ``dirs`` one after the other in one JVM (a broker's JVM options), with the
        topic ``config``. Raises the harness's HarnessError when the driver fails."""
        run = self._harness.run_kafka_cleaner(self._jars, "--dir", ",".join(map(str, dirs)), config=config,
                                              jvm_opts=self._harness.BENCH_JVM_OPTS)
        results: list[dict[str, Any]] = run.runs
        return KafkaCleanerResult(
            self.version, len(results), sum(float(r["secs"]) for r in results),
            sum(int(r["messages_read"]) for r in results), sum(int(r["messages_written"]) for r in results),
            sum(int(r["bytes_read"]) for r in results),
        )


def find_kafka_cleaner() -> KafkaCleaner | str:
    """Kafka's cleaner when everything it needs is here (the Java helpers are compiled on first
    use, a few seconds), else the note saying why the comparison is skipped."""
    try:
        harness = importlib.import_module("kit.kafka_harness")
    except ImportError:
        return ("the Kafka harness (tests/kit) is not importable: run the demo from the repository's venv "
                "(make demo)")
    missing = [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]
    if missing:
        return f"needs {', '.join(missing)} on PATH (Java 17+ and Maven)"
    lib: Path | None = harness.cached_jars()
    if lib is None:
        return f"Kafka's jars are not fetched yet ({FETCH_HINT})"
    try:
        classes = harness.compile_helpers(lib)
    except harness.HarnessError as e:
        return f"the Java helpers did not compile: {str(e).strip().splitlines()[0]}"
    return KafkaCleaner(harness, harness.KafkaJars(lib=lib, classes=classes, version=harness.kafka_version(lib)))


def copy_partitions(dirs: Sequence[Path], target: Path) -> list[Path]:
    """Copies each partition directory into ``target`` (replacing what was there); returns the
    copies, in order."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    return [Path(shutil.copytree(d, target / d.name)) for d in dirs]
