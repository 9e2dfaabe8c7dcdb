"""Runs real Apache Kafka from the jars jvm/fetch-deps.sh resolves: a single-node KRaft broker
on loopback, DumpLogSegments, and the javac'd helpers under jvm/java/.

Nothing here knows about pytest: tests/interop/conftest.py wraps it in fixtures, and the
``--kafka`` benches (benches/bench_common.py) call it directly. Both import it as
``kit.kafka_harness`` (tests/ is on the path: pytest's ``pythonpath`` setting, and the
``kafkalog-dev.pth`` file the Makefile writes into the venv).
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import hashlib
import os
import re
import signal
import socket
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

T = TypeVar("T")

JVM = Path(__file__).resolve().parent / "jvm"
#: The jars Maven resolves (lib/) and the compiled helpers (classes-<digest>/); gitignored.
CACHE = JVM / ".cache"
JAVA_SOURCES = JVM / "java"

# -Xshare:auto and a small heap keep a JVM start near a second; TieredStopAtLevel=1 helps the
# short-lived tool runs (DumpLogSegments), not the broker.
TOOL_JVM_OPTS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
BROKER_JVM_OPTS = ["-Xms256m", "-Xmx1g", "-Djava.awt.headless=true"]
# For timing Kafka's classes (benches/bench_kafka.py, bench_recovery.py): what
# kafka-server-start.sh gives a broker (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS), log4j kept
# to warnings.
BENCH_JVM_OPTS = [
    "-Xms1g",
    "-Xmx1g",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Dlog4j2.level=WARN",
]


#: How long the harness waits for something the broker or a tool does before it fails. Only a
#: hang guard: every wait polls for the state it needs, so a slow but healthy run (a loaded
#: machine, a JVM start ten times slower than usual) never reaches it.
HANG_GUARD_S = 300.0


class HarnessError(RuntimeError):
    pass


# -- jars and helpers -----------------------------------------------------------------------------


def fetch_jars() -> Path:
    """Runs fetch-deps.sh (a no-op when the cache is current); returns the lib directory."""
    proc = subprocess.run(
        ["bash", str(JVM / "fetch-deps.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0:
        raise HarnessError(f"fetch-deps.sh failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    lib = Path(proc.stdout.strip().splitlines()[-1])
    if not any(lib.glob("kafka_2.13-*.jar")) or not any(lib.glob("kafka-tools-*.jar")):
        raise HarnessError(f"{lib} lacks kafka_2.13 or kafka-tools jars")
    return lib


def cached_jars() -> Path | None:
    """The lib directory when fetch-deps.sh would find its cache current (the stamp holds
    pom.xml's sha256, and the Kafka jars are there), else None. Runs nothing and fetches
    nothing: for callers that must not download (the demo's Kafka line)."""
    lib, stamp = CACHE / "lib", CACHE / "deps.stamp"
    try:
        current = stamp.read_text().strip() == hashlib.sha256((JVM / "pom.xml").read_bytes()).hexdigest()
    except OSError:
        return None
    if not current or not any(lib.glob("kafka_2.13-*.jar")) or not any(lib.glob("kafka-tools-*.jar")):
        return None
    return lib


def kafka_version(lib: Path) -> str:
    (jar,) = lib.glob("kafka_2.13-*.jar")
    return jar.name[len("kafka_2.13-") : -len(".jar")]


def compile_helpers(lib: Path) -> Path:
    """javac's jvm/java/*.java against the Kafka jars into jvm/.cache/classes-<digest> (skipped
    when the sources and the jar set are unchanged); returns the classes directory."""
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    for jar in sorted(lib.glob("*.jar")):
        digest.update(jar.name.encode())
    want = digest.hexdigest()
    # Content-addressed: one directory per (sources, jars) digest, built in a private temp dir
    # and renamed into place, so concurrent sessions never delete each other's classes.
    classes = CACHE / f"classes-{want[:16]}"
    if classes.is_dir():
        return classes
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="classes-", dir=CACHE))
    proc = subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp), "-cp", f"{lib}/*", *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HarnessError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
    try:
        tmp.rename(classes)
    except OSError:
        # Another session finished the same build first; its classes are identical.
        shutil.rmtree(tmp, ignore_errors=True)
    return classes


@dataclasses.dataclass(frozen=True)
class KafkaJars:
    lib: Path
    classes: Path
    version: str

    @property
    def classpath(self) -> str:
        return f"{self.lib}/*{os.pathsep}{self.classes}"

    def java(self, main: str, *args: str, timeout: float = HANG_GUARD_S, jvm_opts: Sequence[str] = TOOL_JVM_OPTS):
        """Runs ``main`` on the Kafka classpath; returns the CompletedProcess (text)."""
        return subprocess.run(
            ["java", *jvm_opts, "-cp", self.classpath, main, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )


# -- the broker -----------------------------------------------------------------------------------


#: Broker ports come from outside the kernel's ephemeral range, so no outgoing connection (a
#: client, the broker's own) can take one between the harness choosing it and the broker
#: binding it; each is held under a lock file here for the broker's life, so concurrent test
#: sessions on one machine never pick the same one; and a port must be free to bind when
#: chosen. (A broker has to bind its ports itself, so a socket cannot be handed over.)
PORT_LOCKS = Path(tempfile.gettempdir()) / "kafkalog-interop-ports"


def _port_range() -> range:
    """Ports no connect() or bind(0) hands out: below the ephemeral range if there is room
    there, else above it."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    if low - 20000 >= 1000:
        return range(20000, low)
    if 65535 - high >= 1000:
        return range(high + 1, 65536)
    return range(10000, 65536)  # no room outside: the lock and the bind check still apply


class PortReservation:
    """``count`` loopback TCP ports, reserved until :meth:`release`: each was free to bind (as
    the broker binds, with SO_REUSEADDR) and is locked (flock) against other harness sessions.
    The search starts at a place derived from ``name``, so a test gets the same ports run after
    run unless they are taken."""

    def __init__(self, count: int, name: str) -> None:
        PORT_LOCKS.mkdir(parents=True, exist_ok=True)
        ports = _port_range()
        start = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") % len(ports)
        self.ports: list[int] = []
        self._locks: list[int] = []
        for i in range(len(ports)):
            port = ports[(start + i) % len(ports)]
            if self._try(port):
                self.ports.append(port)
                if len(self.ports) == count:
                    return
        self.release()
        raise HarnessError(f"no {count} free ports in {ports}")

    def _try(self, port: int) -> bool:
        fd = os.open(PORT_LOCKS / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
        except OSError:
            os.close(fd)  # locked by another session, or in use
            return False
        self._locks.append(fd)
        return True

    def release(self) -> None:
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()


def cluster_id_for(name: str) -> str:
    """A cluster id derived from ``name`` (the test's id), so a run is repeatable: Kafka's
    Uuid form (16 bytes, base64url without padding) that, like Kafka's Uuid.randomUuid, never
    starts with '-' (the storage tool would read such an id as an option)."""
    digest = hashlib.sha256(name.encode()).digest()
    while True:
        cluster_id = base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
        digest = hashlib.sha256(digest).digest()


LOG4J2_CONFIG = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


class KafkaBroker:
    """A single-node KRaft broker (combined broker+controller) on 127.0.0.1.

    ``work_dir`` holds server.properties, log4j2.properties, server.log (the broker's log4j
    output) and console.log (its stdout/stderr); ``log_dir`` is the data directory. ``name``
    (the test's id; the work dir's name by default) fixes the cluster id and where the search
    for free ports starts. The ports stay reserved until :meth:`release`."""

    def __init__(
        self, jars: KafkaJars, work_dir: Path, overrides: dict[str, str] | None = None, name: str | None = None
    ) -> None:
        self.jars = jars
        self.work_dir = work_dir
        self.log_dir = work_dir / "data"
        name = work_dir.name if name is None else name
        self._ports = PortReservation(2, name)
        self.port, self.controller_port = self._ports.ports
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.cluster_id = cluster_id_for(name)
        self.server_log = work_dir / "server.log"
        self.console_log = work_dir / "console.log"
        self.properties_file = work_dir / "server.properties"
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self._console = None

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Small segments by default (1 MiB is the 4.x minimum of log.segment.bytes; tests
            # set the topic-level internal.segment.bytes for smaller ones) and a fast cleaner.
            "log.segment.bytes": str(1 << 20),
            "log.cleaner.backoff.ms": "200",
            "log.retention.check.interval.ms": "1000",
            "log.initial.task.delay.ms": "0",
        }
        props.update(self.overrides)
        return props

    def format_storage(self) -> None:
        """kafka-storage.sh format -t <cluster id> -c server.properties --standalone."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        (self.work_dir / "log4j2.properties").write_text(LOG4J2_CONFIG.format(log_file=self.server_log))
        proc = self.jars.java(
            "kafka.tools.StorageTool",
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(self.properties_file),
            "--standalone",
            jvm_opts=[*TOOL_JVM_OPTS, f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}"],
        )
        if proc.returncode != 0:
            raise HarnessError(f"kafka-storage format failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")

    def start(self, timeout: float = HANG_GUARD_S) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise HarnessError("broker already running")
        if not (self.log_dir / "meta.properties").exists():
            self.format_storage()
        self._console = open(self.console_log, "ab")  # noqa: SIM115 (closed in _reap)
        self.proc = subprocess.Popen(
            [
                "java",
                *BROKER_JVM_OPTS,
                f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={self.work_dir}",
                "-cp",
                self.jars.classpath,
                "kafka.Kafka",
                str(self.properties_file),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._console,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a SIGINT to pytest does not reach it
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.kill()
            raise

    def _wait_ready(self, timeout: float) -> None:
        def ready() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                return False
            return self._metadata_ok()

        self.await_state(ready, "the broker to accept connections and know its cluster", timeout=timeout)

    def await_state(
        self, probe: Callable[[], T | None | Literal[False]], what: str, *, pause: float = 0.1, timeout: float = HANG_GUARD_S
    ) -> T:
        """Calls ``probe`` until it returns something truthy, and returns that. The broker is
        another process that announces nothing, so this is the one place the harness polls its
        state (a file it writes, what its API answers); ``pause`` separates two probes (0 for a
        probe that blocks by itself, such as a consumer's poll). It fails at once if the broker
        exits, and after ``timeout``, which only turns a hang into a failure."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if self.proc is None or self.proc.poll() is not None:
                raise HarnessError(
                    f"broker exited with {self.proc and self.proc.returncode} while waiting for {what}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise HarnessError(f"no {what} after {timeout}s:\n{self.log_tail()}")
            time.sleep(pause)

    def _metadata_ok(self) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
        except (KafkaError, OSError):
            return False
        try:
            cluster = admin.describe_cluster()
            return bool(cluster.get("brokers")) and cluster.get("controller_id", -1) != -1
        except (KafkaError, OSError):
            return False
        finally:
            admin.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = HANG_GUARD_S) -> int:
        """Clean shutdown: SIGTERM (what kafka-server-stop.sh sends) and wait. A broker still
        alive after ``timeout`` is killed and HarnessError raised. Returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise HarnessError(f"broker did not stop within {timeout}s of SIGTERM; killed") from None
        return self._reap()

    def kill(self) -> int:
        """SIGKILL, no shutdown hooks: the data dir is left as after a crash."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(HANG_GUARD_S)
        return self._reap()

    def release(self) -> None:
        """Kills the broker if it runs and frees its ports (fixture teardown)."""
        if self.running:
            self.kill()
        self._ports.release()

    def _reap(self) -> int:
        assert self.proc is not None
        code = self.proc.returncode
        if self._console is not None:
            self._console.close()
            self._console = None
        return code

    def log_tail(self, lines: int = 40) -> str:
        out = []
        for f in (self.console_log, self.server_log):
            if f.exists():
                text = f.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {f.name} ---\n" + "\n".join(text))
        return "\n".join(out)

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.log_dir / f"{topic}-{partition}"


# -- kafka-python clients -------------------------------------------------------------------------


def _kafka():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
        import kafka.admin
    return kafka


def create_topic(broker: KafkaBroker, topic: str, config: dict[str, str], partitions: int = 1) -> None:
    """Creates ``topic`` (replication factor 1) and waits until the broker's metadata has it."""
    admin = _kafka().KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([_kafka().admin.NewTopic(topic, partitions, 1, topic_configs=config)], timeout_ms=30000)
        broker.await_state(lambda: topic in admin.list_topics(), f"topic {topic} in the metadata")
    finally:
        admin.close()


def produce(
    broker: KafkaBroker, topic: str, records: list[dict], codec: str, partition: int = 0, **producer_config
) -> None:
    """acks=all to `partition`; returns once every record is acknowledged. Each record is the
    keyword arguments of `KafkaProducer.send`."""
    config = {
        "bootstrap_servers": broker.bootstrap,
        "acks": "all",
        "compression_type": None if codec == "none" else codec,
        "linger_ms": 5,
        "batch_size": 16384,
        "max_in_flight_requests_per_connection": 1,
        "enable_idempotence": False,
        "retries": 5,
        "request_timeout_ms": 30000,
    }
    config.update(producer_config)
    producer = _kafka().KafkaProducer(**config)
    try:
        futures = []
        for i, r in enumerate(records):
            futures.append(producer.send(topic, partition=partition, **r))
            if i % 150 == 149:
                producer.flush()  # a batch boundary regardless of size
        producer.flush()
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close()


def produce_records(broker: KafkaBroker, topic: str, records: Iterable, codec: str, partition: int = 0) -> None:
    """:func:`produce` for ``kafkalog.Record`` objects. kafka-python's producer takes no null
    header values, so those headers are left out (the caller builds its expectation from what
    the consumer returns)."""
    sends = [
        {
            "key": r.key,
            "value": r.value,
            "headers": [(k, v) for k, v in r.headers if v is not None],
            "timestamp_ms": r.timestamp,
        }
        for r in records
    ]
    produce(broker, topic, sends, codec, partition=partition)


def consume_all(broker: KafkaBroker, topic: str, partition: int = 0, **consumer_config) -> list[tuple]:
    """Every record of `partition` up to its end offset, as (offset, timestamp, timestamp_type,
    key, value, headers)."""
    tp = _kafka().TopicPartition(topic, partition)
    consumer = _kafka().KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=30000,
        **consumer_config,
    )
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        rows = []

        def caught_up() -> bool:
            if consumer.position(tp) >= end:
                return True
            for recs in consumer.poll(timeout_ms=500).values():  # blocks until records come
                rows.extend(consumer_row(r) for r in recs)
            return False

        broker.await_state(caught_up, f"records up to offset {end} of {topic}-{partition}", pause=0)
        return rows
    finally:
        consumer.close()


def consumer_row(r) -> tuple:
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple((k, v) for k, v in r.headers))



def write_transactional_workload(
    broker: KafkaBroker, topic: str, partitions: int, rounds: int, per_txn: int, leave_open: bool
) -> None:
    """Kafka's own producers write an exactly-once pipeline's data to ``topic`` (already
    created with ``partitions`` partitions): transactions committed, every third aborted, the
    last one left open with ``leave_open``, interleaved with an idempotent and a plain
    producer's records. See ``jvm/java/TransactionalWorkload.java`` for the exact layout."""
    proc = broker.jars.java(
        "TransactionalWorkload", broker.bootstrap, topic, str(partitions), str(rounds), str(per_txn), str(leave_open).lower()
    )
    if proc.returncode != 0 or proc.stdout.strip().splitlines()[-1:] != ["done"]:
        raise HarnessError(f"TransactionalWorkload failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")


# -- DumpLogSegments ------------------------------------------------------------------------------

DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"


@dataclasses.dataclass
class DumpResult:
    returncode: int
    stdout: str
    stderr: str
    args: list[str]

    def problems(self) -> list[str]:
        """Every line DumpLogSegments prints for a problem (read from its 4.x source):
        stderr "Mismatches in :..." (offset index entry not the last offset of its batch),
        "Found timestamp mismatch in :...", "Found out of order timestamp in :...",
        "The following indexed offsets are not found in :...", "Non-consecutive offsets in ...",
        "Ignoring unknown file", an exception's stack trace; stdout "Found N invalid bytes at
        the end of ...", "isvalid: false", "is empty." is not a problem. A non-zero exit code
        counts too.

        Kafka quirk: dumpLog starts every file at lastOffset = -1, so a segment whose base
        offset is not 0 always reports "-1 is followed by <base offset>"; that pair alone is
        dropped."""
        bad: list[str] = []
        if self.returncode != 0:
            bad.append(f"exit code {self.returncode}")
        err = self.stderr.splitlines()
        i = 0
        while i < len(err):
            line = err[i]
            m = re.match(r"Non-consecutive offsets in (.*)$", line)
            if m:
                base = int(Path(m.group(1)).name.split(".")[0])
                j = i + 1
                pairs = []
                while j < len(err) and re.match(r"\s+-?\d+ is followed by -?\d+$", err[j]):
                    pairs.append(err[j].strip())
                    j += 1
                real = [p for p in pairs if p != f"-1 is followed by {base}"]
                if real:
                    bad.append(line)
                    bad.extend(real)
                i = j
                continue
            if line.strip() and not line.startswith(("SLF4J", "WARNING")):
                bad.append(line)
            i += 1
        for line in self.stdout.split("\n"):
            if line.startswith("Found ") or "isvalid: false" in line or "Exception" in line:
                bad.append(line)
        return bad


def dump_log_segments(jars: KafkaJars, files: Iterable[Path], *options: str, timeout: float = HANG_GUARD_S) -> DumpResult:
    """Runs Kafka's DumpLogSegments (kafka-dump-log.sh) on ``files`` with ``options``."""
    names = [str(f) for f in files]
    for n in names:
        if "," in n:
            raise ValueError(f"DumpLogSegments splits --files on commas: {n}")
    args = ["--files", ",".join(names), *options]
    proc = jars.java(DUMP_LOG_SEGMENTS, *args, timeout=timeout)
    return DumpResult(proc.returncode, proc.stdout, proc.stderr, args)


@dataclasses.dataclass
class DumpedBatch:
    base_offset: int
    last_offset: int
    count: int | None
    base_sequence: int
    last_sequence: int
    producer_id: int
    producer_epoch: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    position: int
    timestamp_type: str
    max_timestamp: int
    size: int
    magic: int
    codec: str
    crc: int
    valid: bool
    records: list[DumpedRecord] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class DumpedRecord:
    offset: int
    timestamp_type: str
    timestamp: int
    key_size: int
    value_size: int
    sequence: int
    header_keys: list[str]
    key: str | None
    payload: str | None


_BATCH_RE = re.compile(
    r"baseOffset: (?P<base>-?\d+) lastOffset: (?P<last>-?\d+) count: (?P<count>\S+) "
    r"baseSequence: (?P<bseq>-?\d+) lastSequence: (?P<lseq>-?\d+) producerId: (?P<pid>-?\d+) "
    r"producerEpoch: (?P<pepoch>-?\d+) partitionLeaderEpoch: (?P<ple>-?\d+) "
    r"isTransactional: (?P<txn>true|false) isControl: (?P<ctrl>true|false) deleteHorizonMs: \S+ "
    r"position: (?P<pos>\d+) (?P<tstype>CreateTime|LogAppendTime|NoTimestampType): (?P<maxts>-?\d+) "
    r"size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) "
    r"isvalid: (?P<valid>true|false)$"
)
_RECORD_RE = re.compile(
    r"\| offset: (?P<offset>-?\d+) (?P<tstype>CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+) "
    r"keySize: (?P<ks>-?\d+) valueSize: (?P<vs>-?\d+) sequence: (?P<seq>-?\d+) headerKeys: \[(?P<hk>[^\]]*)\]"
    r"(?P<rest>.*)$"
)


def parse_dump(stdout: str) -> dict[str, list[DumpedBatch]]:
    """File name -> batches (with their records) from DumpLogSegments' --deep-iteration
    --print-data-log output of v2 .log files. Keys and values print through StringDecoder
    (UTF-8); ``rest`` is split on " key: " / " payload: ", so the tests use keys without
    " payload: " in them. A line that parses as neither a batch nor a record of a .log section
    raises ValueError."""
    out: dict[str, list[DumpedBatch]] = {}
    current: list[DumpedBatch] | None = None
    # split("\n"), not splitlines(): a printed value may hold \x0b, \x1c, \u2028, ...
    for line in stdout.split("\n"):
        if line.startswith("Dumping "):
            name = line[len("Dumping ") :]
            current = out.setdefault(name, []) if name.endswith(".log") else None
            continue
        if current is None or not line or line.startswith("Log starting offset: "):
            continue
        m = _BATCH_RE.match(line)
        if m:
            current.append(
                DumpedBatch(
                    base_offset=int(m["base"]),
                    last_offset=int(m["last"]),
                    count=None if m["count"] == "null" else int(m["count"]),
                    base_sequence=int(m["bseq"]),
                    last_sequence=int(m["lseq"]),
                    producer_id=int(m["pid"]),
                    producer_epoch=int(m["pepoch"]),
                    partition_leader_epoch=int(m["ple"]),
                    is_transactional=m["txn"] == "true",
                    is_control=m["ctrl"] == "true",
                    position=int(m["pos"]),
                    timestamp_type=m["tstype"],
                    max_timestamp=int(m["maxts"]),
                    size=int(m["size"]),
                    magic=int(m["magic"]),
                    codec=m["codec"],
                    crc=int(m["crc"]),
                    valid=m["valid"] == "true",
                )
            )
            continue
        m = _RECORD_RE.match(line)
        if m and current:
            rest = m["rest"]
            key = payload = None
            if " payload: " in rest:
                rest, payload = rest.split(" payload: ", 1)
            if rest.startswith(" key: "):
                key = rest[len(" key: ") :]
            elif rest:
                raise ValueError(f"unparsed record tail {rest!r} in {line!r}")
            current[-1].records.append(
                DumpedRecord(
                    offset=int(m["offset"]),
                    timestamp_type=m["tstype"],
                    timestamp=int(m["ts"]),
                    key_size=int(m["ks"]),
                    value_size=int(m["vs"]),
                    sequence=int(m["seq"]),
                    header_keys=[k for k in m["hk"].split(",") if k] if m["hk"] else [],
                    key=key,
                    payload=payload,
                )
            )
            continue
        if line.startswith("Found ") and " invalid bytes at the end of " in line:
            continue  # reported by DumpResult.problems()
        raise ValueError(f"unparsed DumpLogSegments line: {line!r}")
    return out


# -- SegmentRecords (jvm/java/SegmentRecords.java) ------------------------------------------------


@dataclasses.dataclass
class JavaBatch:
    position: int
    base_offset: int
    last_offset: int
    magic: int
    codec: str
    timestamp_type: str
    max_timestamp: int
    is_control: bool
    is_transactional: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    size: int
    records: list[tuple] = dataclasses.field(default_factory=list)


def _unhex(s: str) -> bytes | None:
    if s == "-":
        return None
    if s == "=":
        return b""
    return bytes.fromhex(s)


def read_segments_with_kafka(jars: KafkaJars, files: Iterable[Path]) -> tuple[dict[str, list[JavaBatch]], dict[str, int]]:
    """Decodes .log files with Kafka's FileRecords (CRC-checked). Returns file -> batches, each
    with records (offset, timestamp, key, value, headers), and file -> trailing bytes."""
    names = [str(f) for f in files]
    proc = jars.java("SegmentRecords", *names, timeout=HANG_GUARD_S)
    if proc.returncode != 0:
        raise HarnessError(f"SegmentRecords failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    batches: dict[str, list[JavaBatch]] = {}
    trailing: dict[str, int] = {}
    current: list[JavaBatch] = []
    name = ""
    for line in proc.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "F":
            name = rest
            current = batches.setdefault(name, [])
        elif kind == "B":
            f = rest.split(" ")
            current.append(
                JavaBatch(
                    int(f[0]), int(f[1]), int(f[2]), int(f[3]), f[4], f[5], int(f[6]), f[7] == "true",
                    f[8] == "true", int(f[9]), int(f[10]), int(f[11]), int(f[12]), int(f[13]),
                )
            )
        elif kind == "R":
            f = rest.split(" ")
            n = int(f[4])
            headers = tuple(
                ((_unhex(f[5 + 2 * i]) or b"").decode(), _unhex(f[6 + 2 * i])) for i in range(n)
            )
            current[-1].records.append((int(f[0]), int(f[1]), _unhex(f[2]), _unhex(f[3]), headers))
        elif kind == "T":
            trailing[name] = int(rest)
        else:
            raise ValueError(f"unexpected SegmentRecords line {line!r}")
    return batches, trailing


# -- what Kafka's LogSegment would have indexed ----------------------------------------------------


def kafka_segment_indexes(batches: Sequence[JavaBatch], base_offset: int, index_interval_bytes: int) -> tuple[bytes, bytes]:
    """The .index and .timeindex bytes Kafka 4.x's LogSegment writes for a segment holding
    ``batches`` appended in order and then closed or rolled (LogSegment.append,
    onBecomeInactiveSegment / close, TimeIndex.maybeAppend, indexes trimmed to their entries):

    - before each batch, if more than index.interval.bytes were appended since the last entry,
      the offset index gets (batch last offset, batch position) and the time index gets
      (max timestamp so far, last offset of the batch holding it) if that timestamp is larger
      than its last entry's; the byte count then restarts at 0 and the batch's size is added;
    - at roll or close the time index gets the max timestamp so far, under the same rule.

    The byte count starts at 0 for a segment created by a roll and is not persisted, so this
    holds for segments written in one session (not for a segment reopened and appended to)."""
    offset_index = bytearray()
    time_index = bytearray()
    since_last = 0
    max_ts, max_ts_offset = -1, -1
    last_time_entry_ts = -1  # an empty TimeIndex's lastEntry is (NO_TIMESTAMP, baseOffset)

    def maybe_time_entry() -> None:
        nonlocal last_time_entry_ts
        if max_ts > last_time_entry_ts:
            time_index.extend(max_ts.to_bytes(8, "big", signed=True))
            time_index.extend((max_ts_offset - base_offset).to_bytes(4, "big", signed=True))
            last_time_entry_ts = max_ts

    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
        if since_last > index_interval_bytes:
            offset_index.extend((b.last_offset - base_offset).to_bytes(4, "big", signed=True))
            offset_index.extend(b.position.to_bytes(4, "big", signed=True))
            maybe_time_entry()
            since_last = 0
        since_last += b.size
    maybe_time_entry()
    return bytes(offset_index), bytes(time_index)


def index_mismatches(jars: KafkaJars, partition_dir: Path, index_interval_bytes: int) -> list[str]:
    """Segments of ``partition_dir`` whose .index / .timeindex bytes differ from
    kafka_segment_indexes() over the batches Kafka's FileRecords finds in their .log."""
    logs = sorted(partition_dir.glob("*.log"))
    batches, _ = read_segments_with_kafka(jars, logs)
    out = []
    for log in logs:
        base = int(log.name.split(".")[0])
        want_index, want_time = kafka_segment_indexes(batches[str(log)], base, index_interval_bytes)
        for suffix, want in ((".index", want_index), (".timeindex", want_time)):
            f = log.with_suffix(suffix)
            got = f.read_bytes() if f.exists() else None
            if got != want:
                out.append(
                    f"{f.name}: {describe_index(got, suffix, base)} but Kafka writes {describe_index(want, suffix, base)}"
                )
    return out


def describe_index(data: bytes | None, suffix: str, base: int) -> str:
    if data is None:
        return "missing"
    size = 8 if suffix == ".index" else 12
    entries = []
    for i in range(0, len(data) - len(data) % size, size):
        e = data[i : i + size]
        if suffix == ".index":
            entries.append((base + int.from_bytes(e[:4], "big"), int.from_bytes(e[4:], "big")))
        else:
            entries.append((int.from_bytes(e[:8], "big", signed=True), base + int.from_bytes(e[8:], "big")))
    shown = entries if len(entries) <= 6 else [*entries[:3], "...", *entries[-3:]]
    return f"{len(data)} bytes, {len(entries)} entries {shown}"


# -- Kafka's cleaner (jvm/java/KafkaCleanerDriver.java) --------------------------------------------


@dataclasses.dataclass
class KafkaCleanerRun:
    """What one KafkaCleanerDriver invocation printed: one JSON object per run (``runs``), and
    with ``--read true`` the log as Kafka's UnifiedLog.read returned it: ``batches`` as
    (base offset, last offset, codec, max timestamp, is control, count, delete horizon or None)
    and ``records`` as (offset, timestamp, key, value, headers) (those of control batches, the
    transaction markers, in ``control_records``)."""

    runs: list[dict]
    batches: list[tuple]
    records: list[tuple]
    control_records: list[tuple]
    log_start_offset: int | None
    log_end_offset: int | None
    stderr: str


def run_kafka_cleaner(
    jars: KafkaJars,
    *args: str,
    config: dict[str, str] | None = None,
    timeout: float = 600,
    jvm_opts: Sequence[str] = TOOL_JVM_OPTS,
) -> KafkaCleanerRun:
    """Runs KafkaCleanerDriver with ``args`` (e.g. "--dir", path, "--now-ms", "123") and each
    ``config`` entry as ``--config key=value``; raises HarnessError if it fails."""
    import json

    cmd = [*args]
    for k, v in (config or {}).items():
        cmd += ["--config", f"{k}={v}"]
    proc = jars.java("KafkaCleanerDriver", *cmd, timeout=timeout, jvm_opts=jvm_opts)
    if proc.returncode != 0:
        raise HarnessError(f"KafkaCleanerDriver failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    runs: list[dict] = []
    batches: list[tuple] = []
    records: list[tuple] = []
    control: list[tuple] = []
    start = end = None
    for line in proc.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "cleaner-json":
            runs.append(json.loads(rest))
        elif kind == "B":
            f = rest.split(" ")
            batches.append(
                (int(f[0]), int(f[1]), f[2], int(f[3]), f[4] == "true", None if f[5] == "null" else int(f[5]),
                 None if f[6] == "-" else int(f[6]))
            )  # fmt: skip
        elif kind == "R":
            f = rest.split(" ")
            n = int(f[4])
            headers = tuple(((_unhex(f[5 + 2 * i]) or b"").decode(), _unhex(f[6 + 2 * i])) for i in range(n))
            (control if batches and batches[-1][4] else records).append(
                (int(f[0]), int(f[1]), _unhex(f[2]), _unhex(f[3]), headers)
            )
        elif kind == "E":
            start, end = (int(x) for x in rest.split(" "))
    if not runs:
        raise HarnessError(f"KafkaCleanerDriver printed no result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return KafkaCleanerRun(runs, batches, records, control, start, end, proc.stderr)
