"""A LogManager's gauges for a monitoring system: :func:`prometheus_text` renders
:meth:`LogManager.metrics` in Prometheus' text exposition format (0.0.4), and
:func:`serve_metrics` serves it over HTTP on loopback.

Names follow what Prometheus' JMX exporter makes of Kafka's MBeans with the rules Kafka users
run it with (``kafka-2_0_0.yml``, ``lowercaseOutputName: true``): ``kafka.log:type=Log,
name=Size,topic=t,partition=0`` becomes ``kafka_log_log_size{topic="t",partition="0"}``, the
MBean's other keys become labels, and every character outside ``[a-zA-Z0-9_:]`` becomes ``_``
(runs of ``_`` collapsed), so ``max-dirty-percent`` gives
``kafka_log_logcleanermanager_max_dirty_percent`` and ``is-future`` the label ``is_future``.
Every gauge is a Prometheus ``gauge``. No Kafka counterpart (Kafka exposes JMX).

Nothing here starts a thread at import; :func:`serve_metrics` starts one HTTP thread per call.
Thread-safety: :func:`prometheus_text` reads one snapshot; the server answers one request at a
time on its own thread (the manager is safe to call from any thread).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import TYPE_CHECKING

from . import _arguments as arg
from ._native import Gauge, MetricsSnapshot

if TYPE_CHECKING:
    from .manager import LogManager

__all__ = ["prometheus_text", "render", "serve_metrics", "MetricsServer", "metric_name", "CONTENT_TYPE"]

#: The Content-Type of the text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: What each gauge measures (Kafka's documentation of the MBean, in short).
DESCRIPTIONS: dict[str, str] = {
    "NumLogSegments": "Number of segments of the log",
    "LogStartOffset": "First offset of the log",
    "LogEndOffset": "Offset after the last record of the log",
    "Size": "Size of the log in bytes",
    "OfflineLogDirectoryCount": "Number of offline log directories",
    "LogDirectoryOffline": "1 if the log directory is offline, else 0",
    "remainingLogsToRecover": "Logs of the log directory still to load at start-up",
    "remainingSegmentsToRecover": "Segments still to recover by a recovery thread at start-up",
    "max-buffer-utilization-percent": "Largest offset map utilisation of the cleaner threads' last cleans, in percent",
    "cleaner-recopy-percent": "Bytes written / bytes read by the cleaner threads' last cleans, in percent",
    "max-clean-time-secs": "Longest duration of the cleaner threads' last cleans, in seconds",
    "max-compaction-delay-secs": "Largest delay past max.compaction.lag.ms of a partition waiting for compaction",
    "DeadThreadCount": "Cleaner threads that died",
    "max-dirty-percent": "Dirty ratio of the dirtiest compacted log at the last choice, in percent",
    "time-since-last-run-ms": "Time since a cleaner thread last looked for a log to clean, in ms",
    "uncleanable-partitions-count": "Partitions of the log directory marked uncleanable",
    "uncleanable-bytes": "Cleanable bytes of the log directory's uncleanable partitions",
}

_UNSAFE = re.compile(r"[^a-zA-Z0-9_:]")
_UNDERSCORES = re.compile(r"__+")


def _safe(name: str) -> str:
    """The JMX exporter's ``safeName``: unsafe characters to ``_``, runs of ``_`` collapsed,
    a leading digit prefixed with ``_``."""
    out = _UNDERSCORES.sub("_", _UNSAFE.sub("_", name))
    return "_" + out if out[:1].isdigit() else out


def metric_name(gauge: Gauge) -> str:
    """The Prometheus name of a gauge: ``kafka_<domain>_<type>_<name>``, lowercased and made safe."""
    return _safe(f"{gauge.group}_{gauge.type_name}_{gauge.name}").lower()


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _format_value(value: int) -> str:
    return str(value)


def render(snapshot: MetricsSnapshot) -> str:
    """The snapshot in Prometheus' text format: one family per gauge name (``# HELP``, naming
    the MBean pattern, and ``# TYPE ... gauge``), its samples together, families in the order
    the snapshot first names them."""
    families: dict[str, list[Gauge]] = {}
    for gauge in snapshot.gauges:
        families.setdefault(metric_name(gauge), []).append(gauge)
    lines: list[str] = []
    for name, gauges in families.items():
        first = gauges[0]
        mbean = f"{first.group}:type={first.type_name},name={first.name}"
        lines.append(f"# HELP {name} {_help(DESCRIPTIONS.get(first.name, first.name))} ({mbean})")
        lines.append(f"# TYPE {name} gauge")
        for g in gauges:
            lines.append(f"{name}{_labels(g.tags)} {_format_value(g.value)}")
    return "\n".join(lines) + "\n"


def _labels(tags: Iterable[tuple[str, str]]) -> str:
    pairs = [f'{_safe(k)}="{_label_value(v)}"' for k, v in tags]
    return "{" + ",".join(pairs) + "}" if pairs else ""


def prometheus_text(manager: LogManager) -> str:
    """``manager.metrics()`` in Prometheus' text exposition format (see :func:`render`)."""
    return render(manager.metrics())


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            self._reply(404, "text/plain; charset=utf-8", b"not found: try /metrics\n")
            return
        try:
            body = prometheus_text(self.server.manager).encode()
        except Exception as e:  # noqa: BLE001 (a closed manager: the scraper sees why)
            self._reply(503, "text/plain; charset=utf-8", f"{type(e).__name__}: {e}\n".encode())
            return
        self._reply(200, CONTENT_TYPE, body)

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass  # requests are not logged; a scraper polls every few seconds


class _Server(HTTPServer):
    def __init__(self, address: tuple[str, int], manager: LogManager) -> None:
        self.manager = manager
        super().__init__(address, _Handler)


class MetricsServer:
    """The HTTP server of :func:`serve_metrics`: ``host`` and the bound ``port``; :meth:`close`
    (or leaving a ``with`` block) stops it and joins its thread. Thread-safe."""

    __slots__ = ("_server", "_thread", "_lock", "_closed", "host", "port")

    def __init__(self, server: _Server) -> None:
        self._server = server
        self.host: str = str(server.server_address[0])
        self.port: int = int(server.server_address[1])
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=server.serve_forever, name="kafkalog-metrics", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stops serving and joins the thread; later calls do nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MetricsServer({self.url}{', closed' if self._closed else ''})"


def serve_metrics(manager: LogManager, port: int, host: str = "127.0.0.1") -> MetricsServer:
    """Serves ``prometheus_text(manager)`` at ``http://host:port/metrics`` (and ``/``) from a
    thread started by this call; ``port=0`` picks a free port (see ``MetricsServer.port``).
    Binds loopback by default: pass another ``host`` to expose it. A port in use raises
    OSError. Call ``close()`` on the result to stop it."""
    port = arg.integer("port", port, 0, 65535)
    host = arg.string("host", host)
    return MetricsServer(_Server((host, port), manager))
