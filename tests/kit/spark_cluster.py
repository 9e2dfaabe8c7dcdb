"""Real Spark deployments for the tests, started from pyspark's own launchers: a standalone
cluster (a master and workers, ``spark-class org.apache.spark.deploy.master.Master`` /
``...deploy.worker.Worker``) and a Spark Connect server (``sbin/start-connect-server.sh
--wait``), all on loopback.

Every daemon binds port 0 (its RPC, web UI and gRPC ports), so the kernel picks free ports and
nothing can take one between a choice and the bind; the daemon's log says which port it got.
Readiness is an event: each daemon's output is read line by line by a thread, and a waiter
wakes when the line it needs arrives (the master's "Starting Spark master at spark://...",
"Bound MasterWebUI ... at http://..." and "New state: ALIVE"; a worker's "Successfully
registered with master"; the Connect server's "Spark Connect server started at: host:port"). A
waiter fails at once when the daemon exits, and after a hang guard that only turns a hang into
a failure. The master's JSON status (``/json``) then confirms what the log lines said.

Each daemon runs in its own process group, which holds everything it starts (a worker's
executor JVMs, their Python workers); :meth:`SparkDaemon.stop` ends the group (SIGTERM, then
SIGKILL after the hang guard) and checks that no process of it is left.

Nothing here knows about pytest: tests/spark/conftest.py wraps it in fixtures.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark

#: How long a wait for a daemon lasts before it fails. Only a hang guard: every wait is for a
#: line the daemon prints, so a slow but healthy start never reaches it.
HANG_GUARD_S = 300.0

SPARK_HOME = Path(pyspark.__file__).resolve().parent

#: Small daemons: the machine has 2 cores and other jobs; the master and workers only schedule.
DAEMON_MEMORY = "256m"

# Daemon settings that have no command-line flag. The REST submission server would bind the
# fixed port 6066; the tests submit through the RPC port only.
_DAEMON_PROPERTIES = {
    "spark.master.rest.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.worker.cleanup.enabled": "false",
}


def task_process() -> tuple[int, str, int, str]:
    """Call it in a Spark task (it lives here, importable by every Python worker, as a test
    module is not): the worker's pid and interpreter, and the pid and command line of the JVM
    that started it (pyspark's daemon forks the workers; the daemon's parent is that JVM: an
    executor's ``CoarseGrainedExecutorBackend`` on a cluster)."""

    def parent(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

    jvm = parent(parent(os.getpid()))
    cmdline = Path(f"/proc/{jvm}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return os.getpid(), sys.executable, jvm, cmdline


class SparkDaemonError(RuntimeError):
    """A daemon exited or did not say it was ready."""


class SparkDaemon:
    """One JVM started by a pyspark launcher script, its output copied to ``log`` by a reader
    thread that wakes waiters of :meth:`wait_for`. Thread-safe."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str]) -> None:
        self.name, self.log = name, log
        self._lines: list[str] = []
        self._eof = False
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,  # its own process group: it and everything it starts
        )
        self.pgid = self.proc.pid
        self._reader = threading.Thread(target=self._read, name=f"spark-{name}-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.log, "w", encoding="utf-8") as out:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                out.write(line + "\n")
                out.flush()
                with self._changed:
                    self._lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def wait_for(self, pattern: str, what: str, timeout: float = HANG_GUARD_S) -> re.Match[str]:
        """The first output line matching ``pattern`` (a regex), waiting until it is printed:
        the reader thread's notification is the event. Raises SparkDaemonError if the daemon's
        output ends first, or if nothing matches within ``timeout`` (a hang guard only)."""
        regex = re.compile(pattern)
        found: list[re.Match[str]] = []
        seen = 0

        def matched_or_ended() -> bool:
            nonlocal seen
            for line in self._lines[seen:]:
                if m := regex.search(line):
                    found.append(m)
                    return True
            seen = len(self._lines)
            return self._eof

        with self._changed:
            if not self._changed.wait_for(matched_or_ended, timeout):
                raise SparkDaemonError(f"no {what} from {self.name} after {timeout} s:\n{self.tail()}")
        if not found:
            raise SparkDaemonError(f"{self.name} exited ({self.proc.wait()}) before {what}:\n{self.tail()}")
        return found[0]

    def tail(self, lines: int = 40) -> str:
        with self._changed:
            return "\n".join(self._lines[-lines:])

    def stop(self, timeout: float = HANG_GUARD_S) -> None:
        """Ends the daemon's process group: SIGTERM (what Spark's stop scripts send; a worker
        then kills its executors), SIGKILL for whatever is left after ``timeout``. Raises
        SparkDaemonError if a process of the group outlives both."""
        _signal_group(self.pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(self.pgid, signal.SIGKILL)
        self.proc.wait(timeout)
        self._reader.join(timeout)
        _await_group_exit(self.pgid, self.name, timeout)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that have not exited (from /proc; zombies excluded)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _await_group_exit(pgid: int, name: str, timeout: float) -> None:
    """Waits until every process of group ``pgid`` (executors, Python workers: not our children,
    so not waitable) has exited, on an event per process: its pidfd turns readable when it
    exits. SIGKILLed processes start nothing, so one listing is complete. Raises
    SparkDaemonError if some are still running after ``timeout`` (a hang guard only)."""
    fds = []
    try:
        for pid in _group_members(pgid):
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:  # exited since the listing
                pass
        pending = list(fds)
        while pending:
            ready, _, _ = select.select(pending, [], [], timeout)
            if not ready:
                raise SparkDaemonError(f"processes of {name}'s group {pgid} survived SIGKILL: {_group_members(pgid)}")
            pending = [fd for fd in pending if fd not in ready]
    finally:
        for fd in fds:
            os.close(fd)


def daemon_env(work_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launchers' environment: loopback only, small daemon heaps, logs and pid files in
    ``work_dir``, and this interpreter as every Python worker's (its venv has kafkalog)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="127.0.0.1",
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        SPARK_LOG_DIR=str(work_dir),
        SPARK_PID_DIR=str(work_dir),
        SPARK_CONF_DIR=str(work_dir / "conf"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    env.update(extra or {})
    return env


def _write_conf(work_dir: Path) -> Path:
    conf = work_dir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    props = conf / "spark-defaults.conf"
    props.write_text("".join(f"{k} {v}\n" for k, v in _DAEMON_PROPERTIES.items()))
    return props


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers (``cores`` cores, ``memory`` each) on
    loopback, started by ``spark-class``; :attr:`master_url` is what a session's ``master``
    takes. Stop it with :meth:`stop` (also after a failed start)."""

    def __init__(self, work_dir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.work_dir = work_dir
        self.daemons: list[SparkDaemon] = []
        self.master_url = self.web_url = ""
        props = _write_conf(work_dir)
        self._env = daemon_env(work_dir)
        self._spark_class = str(SPARK_HOME / "bin" / "spark-class")
        self._props = props
        self._workers, self._cores, self._memory = workers, cores, memory

    def start(self, timeout: float = HANG_GUARD_S) -> StandaloneCluster:
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        master = self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
        )
        self.master_url = master.wait_for(r"Starting Spark master at (spark://\S+)", "its URL", timeout)[1]
        port = master.wait_for(r"Bound MasterWebUI to \S+ and started at https?://[^:\s]+:(\d+)", "its web UI", timeout)[1]
        self.web_url = f"http://127.0.0.1:{port}"
        master.wait_for(r"New state: ALIVE", "leadership (ALIVE)", timeout)
        for i in range(self._workers):
            worker_dir = self.work_dir / f"worker-{i}"
            worker_dir.mkdir(exist_ok=True)
            self._launch(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                "--cores", str(self._cores), "--memory", self._memory, "--work-dir", str(worker_dir),
                self.master_url,
            )
        for worker in self.daemons[1:]:
            worker.wait_for(r"Successfully registered with master", "registration with the master", timeout)
        state = self.status()
        alive = [w for w in state["workers"] if w["state"] == "ALIVE"]
        if state["status"] != "ALIVE" or len(alive) != self._workers:
            raise SparkDaemonError(f"the master's status after every worker registered: {state}")

    def _launch(self, name: str, main: str, *args: str) -> SparkDaemon:
        argv = [self._spark_class, main, *args, "--properties-file", str(self._props)]
        daemon = SparkDaemon(name, argv, self.work_dir / f"{name}.out", self._env)
        self.daemons.append(daemon)
        return daemon

    def status(self) -> dict:
        """The master's JSON status (``/json`` of its web UI): workers, applications."""
        with urllib.request.urlopen(f"{self.web_url}/json", timeout=60) as r:
            return json.load(r)

    def stop(self) -> None:
        """Workers first (each takes its executors down), then the master."""
        errors = []
        for daemon in reversed(self.daemons):
            try:
                daemon.stop()
            except SparkDaemonError as e:
                errors.append(str(e))
        self.daemons.clear()
        if errors:
            raise SparkDaemonError("; ".join(errors))


class ConnectServer:
    """A Spark Connect server (``sbin/start-connect-server.sh --wait``, in the foreground) on a
    free loopback port with ``master`` (local[2] by default); :attr:`url` is what
    ``SparkSession.builder.remote`` takes."""

    def __init__(self, work_dir: Path, *, master: str = "local[2]", conf: Mapping[str, str] | None = None) -> None:
        self.work_dir = work_dir
        self.master = master
        self.conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": "0",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.python.worker.reuse": "true",
            **(conf or {}),
        }
        self.daemon: SparkDaemon | None = None
        self.url = ""

    def start(self, timeout: float = HANG_GUARD_S) -> ConnectServer:
        _write_conf(self.work_dir)
        argv = [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--wait", "--master", self.master]
        for k, v in self.conf.items():
            argv += ["--conf", f"{k}={v}"]
        # The script names its log and pid files by SPARK_IDENT_STRING; keep them in work_dir.
        # Spark's launcher sizes the server's JVM (its driver) by SPARK_DAEMON_MEMORY, as a daemon.
        env = daemon_env(self.work_dir, {"SPARK_IDENT_STRING": "kafkalog-tests", "SPARK_DAEMON_MEMORY": "768m"})
        self.daemon = SparkDaemon("connect-server", argv, self.work_dir / "connect-server.out", env)
        try:
            m = self.daemon.wait_for(r"Spark Connect server started at: ([^:\s]+):(\d+)", "its gRPC address", timeout)
        except BaseException:
            self.stop()
            raise
        self.url = f"sc://127.0.0.1:{m[2]}"
        return self

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None
