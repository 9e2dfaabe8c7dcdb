"""``kafkalog verify``: checks every file of Kafka log directories, read-only, and ``--fix``
repairs them by recovery.

The partition checks are the engine's (``kafkalog._native.verify_partition``, which validates
batches as recovery does and checks the indexes against them); the log dir's own files are
read here with the engine's readers (``kafkalog.checkpoints``). ``--fix`` is in
``kafkalog.cli.verify_fix``.

A problem is damage, or a state the next recovery would change; a note is what a live broker's
directory shows in passing (an append in progress at the end of the active segment, a
``.deleted`` file waiting for ``file.delete.delay.ms``) and does not count.

Thread-safety: the functions are not shared between threads (the command runs one at a time).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import _native, checkpoints
from ..exceptions import KafkaLogError
from . import EXIT_OK, EXIT_PROBLEMS, UsageError

__all__ = ["Finding", "Report", "register", "verify_paths"]

#: The log dir's offset checkpoints, as Kafka names them.
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"

_DESCRIPTION = """Checks Kafka log directories (a log dir, several, or one partition directory):
every segment (batch framing, CRC, offsets increasing and inside the segment, magic), every
offset, time and transaction index against the batches (Kafka's sanity checks, and each entry
at a batch boundary), producer snapshots (version, CRC), leader-epoch-checkpoint,
partition.metadata, the log dir's checkpoints (format, and entries naming partitions that
exist), meta.properties and the files an interrupted operation leaves (.cleaned, .swap,
.deleted). Each problem is printed as FILE:POSITION: what is wrong, and what recovery does
about it. Exit code 0 when clean, 1 when problems were found.

Without --fix nothing is written or locked, so a live broker's directory can be checked: when
another process holds the directory, bytes after the last complete batch of the active segment
are an append in progress and are reported as a note, not a problem (after a crash Kafka's
recovery truncates them, and so they are a problem in a directory nobody holds)."""

_EPILOG = """examples:
  kafkalog verify /var/lib/kafka/data
  kafkalog verify /var/lib/kafka/data/orders-0 --json
  kafkalog verify /var/lib/kafka/data --fix    # the broker must be stopped"""


@dataclass(frozen=True)
class Finding:
    """One finding: ``severity`` "problem" or "note", the file, the byte position in it (when
    there is one) and the message."""

    severity: str
    file: str
    position: int | None
    message: str

    def line(self) -> str:
        where = self.file if self.position is None else f"{self.file}:{self.position}"
        prefix = "note: " if self.severity == "note" else ""
        return f"{where}: {prefix}{self.message}"


@dataclass
class Report:
    """What verifying some paths found."""

    findings: list[Finding]
    partitions: list[_native.PartitionCheck]
    log_dirs: list[str]

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "problem"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "verify",
        help="check every segment, index, checkpoint and snapshot; --fix repairs by recovery",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a log dir, or a partition directory")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="run recovery on the log dirs with problems (a LogManager over each, as after an unclean "
        "shutdown from the first damaged segment), report what it changed, and verify again; refuses "
        "a log dir whose .lock a broker or LogManager holds",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths]
    for p in paths:
        if not p.is_dir():
            raise UsageError(f"{p} is not a directory (give a log dir or a partition directory)")
    report = verify_paths(paths)
    if not args.fix:
        _print(report, args.json)
        return EXIT_PROBLEMS if report.problems else EXIT_OK
    from .verify_fix import fix

    outcome = fix(report)
    after = verify_paths(paths)
    if args.json:
        doc = {"before": _document(report), "fixed": outcome.as_json(), "after": _document(after)}
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        for line in outcome.lines():
            print(line)
        if after.problems:
            print("after the fix:")
            _print(after, False)
        else:
            print(f"verified after the fix: {_summary(after)}")
    return EXIT_PROBLEMS if after.problems or outcome.failed else EXIT_OK


def verify_paths(paths: Iterable[Path]) -> Report:
    """Checks each path: a partition directory on its own, or a log dir with its partitions."""
    report = Report([], [], [])
    log_dirs: list[Path] = []
    for path in paths:
        found = _native.discover(path)
        if len(found) == 1 and Path(found[0].path) == path:
            _check_partition(Path(found[0].path), report)
            continue
        log_dirs.append(path)
        report.log_dirs.append(str(path))
        recovery_points = _recovery_points(path)
        for p in found:
            _check_partition(Path(p.path), report, recovery_points.get((p.topic, p.partition)))
        _check_log_dir(path, {(p.topic, p.partition) for p in found}, report)
    _check_meta_agreement(log_dirs, report)
    _check_topic_ids(report)
    return report


def _recovery_points(log_dir: Path) -> dict[tuple[str, int], int]:
    """The log dir's recovery points when its next load recovers from them (no clean-shutdown
    marker); empty otherwise, or when the checkpoint is missing or unreadable (a problem
    :func:`_check_log_dir` reports)."""
    path = log_dir / "recovery-point-offset-checkpoint"
    if (log_dir / CLEAN_SHUTDOWN).exists() or not path.exists():
        return {}
    try:
        return checkpoints.read_offset_checkpoint(path)
    except KafkaLogError:
        return {}


def _check_partition(dir: Path, report: Report, recovery_point: int | None = None) -> None:
    check = _native.verify_partition(dir, recovery_point)
    report.partitions.append(check)
    report.findings.extend(Finding(f.severity, f.file, f.position, f.message) for f in check.findings)


def _line_position(path: Path, message: str) -> int | None:
    """The byte position of the line an engine error names ("at line N"), if it names one."""
    m = re.search(r"\bline (\d+)", message)
    if not m:
        return None
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError:
        return None
    n = int(m.group(1))
    return sum(len(line) + 1 for line in lines[: n - 1]) if 0 < n <= len(lines) + 1 else None


def _entry_position(path: Path, topic: str, partition: int) -> int | None:
    """The byte position of the line of an offset checkpoint naming ``topic partition``."""
    data = path.read_bytes()
    m = re.search(rb"(?m)^" + re.escape(topic.encode()) + rb" " + str(partition).encode() + rb" ", data)
    return m.start() if m else None


def _check_log_dir(dir: Path, partitions: set[tuple[str, int]], report: Report) -> None:
    """The log dir's offset checkpoints (format; entries naming partitions that exist, at offsets
    inside their log), meta.properties and the clean-shutdown marker."""
    ends = {(Path(c.dir).parent, Path(c.dir).name): c for c in report.partitions}

    def partition_check(tp: tuple[str, int]) -> _native.PartitionCheck | None:
        return ends.get((dir, f"{tp[0]}-{tp[1]}"))

    for name in OFFSET_CHECKPOINTS:
        path = dir / name
        if not path.exists():
            continue
        try:
            entries = checkpoints.read_offset_checkpoint(path)
        except KafkaLogError as e:
            report.findings.append(Finding("problem", str(path), _line_position(path, str(e)), _cause(e, name)))
            continue
        _check_duplicates(path, report)
        for tp, offset in sorted(entries.items()):
            check = partition_check(tp)
            why = None
            if tp not in partitions or check is None:
                why = f"names partition {tp[0]}-{tp[1]}, which has no directory in this log dir: the next checkpoint drops it"
            elif name != "cleaner-offset-checkpoint" and offset > check.log_end_offset:
                why = (
                    f"{tp[0]}-{tp[1]} at offset {offset}, past its log end offset {check.log_end_offset}"
                    + (": recovery deletes every segment of the log (Kafka's rule)" if name.startswith("log-start") else "")
                )
            elif name == "cleaner-offset-checkpoint" and offset > check.log_end_offset:
                why = f"{tp[0]}-{tp[1]} at offset {offset}, past its log end offset {check.log_end_offset}: the cleaner resets it"
            if why:
                report.findings.append(Finding("problem", str(path), _entry_position(path, *tp), why))
    for tmp in sorted(dir.glob("*.tmp")):
        report.findings.append(Finding(
            "problem", str(tmp), None, "left by an interrupted atomic write: the LogManager deletes it at load"
        ))
    _check_meta_properties(dir, report)
    marker = dir / CLEAN_SHUTDOWN
    if marker.exists():
        try:
            checkpoints.read_clean_shutdown(marker)
        except KafkaLogError as e:
            report.findings.append(Finding(
                "problem", str(marker), None,
                f"{e} (Kafka only needs the marker to exist; the next clean shutdown writes a new one)",
            ))


def _check_duplicates(path: Path, report: Report) -> None:
    """An offset checkpoint names each partition once (Kafka writes a map; read back, the last
    line of a partition wins)."""
    seen: set[bytes] = set()
    position = 0
    for line in path.read_bytes().split(b"\n"):
        fields = line.split(b" ")
        if len(fields) == 3:
            key = b" ".join(fields[:2])
            if key in seen:
                name = key.decode(errors="replace").replace(" ", "-")
                report.findings.append(Finding(
                    "problem", str(path), position, f"names {name} a second time: the last line wins when read"
                ))
            seen.add(key)
        position += len(line) + 1


def _cause(e: KafkaLogError, name: str) -> str:
    if name == "recovery-point-offset-checkpoint":
        effect = "the LogManager reads it as empty and recovers every segment"
    elif name == "log-start-offset-checkpoint":
        effect = "the LogManager reads it as empty: each log starts at its first segment again"
    else:
        effect = "the LogManager reads it as empty and writes it again"
    return f"{e}: {effect}"


def _check_meta_properties(dir: Path, report: Report) -> None:
    path = dir / META_PROPERTIES
    if not path.exists():
        return
    try:
        props = checkpoints.read_meta_properties(path)
    except KafkaLogError as e:
        report.findings.append(Finding("problem", str(path), _line_position(path, str(e)), f"{e}: the log dir goes offline"))
        return
    missing = [k for k in ("version", "cluster.id", "node.id") if k not in props]
    if missing or props.get("version") != "1":
        what = f"lacks {', '.join(missing)}" if missing else f"has version {props.get('version')!r}, not 1 (KRaft)"
        report.findings.append(Finding("problem", str(path), None, f"{what}: the log dir goes offline"))


def _check_meta_agreement(log_dirs: list[Path], report: Report) -> None:
    """The log dirs of one broker agree on cluster.id and node.id (the LogManager's start-up
    fails otherwise, as Kafka's does): each dir differing from the value most hold is reported,
    or every one when no value has a majority."""
    props: dict[Path, dict[str, str]] = {}
    for d in log_dirs:
        try:
            props[d] = checkpoints.read_meta_properties(d / META_PROPERTIES)
        except (KafkaLogError, OSError):
            continue
    for key in ("cluster.id", "node.id"):
        values = {d: p[key] for d, p in props.items() if key in p}
        for d, why in _outliers(values).items():
            report.findings.append(Finding(
                "problem", str(d / META_PROPERTIES), None, f"{key} is {values[d]!r}, but {why}: a LogManager over these dirs fails to start"
            ))


def _outliers(values: dict[Path, str]) -> dict[Path, str]:
    """The keys whose value differs from the one most hold (every key when none has a
    majority), each with what the others hold."""
    counts: dict[str, int] = {}
    for v in values.values():
        counts[v] = counts.get(v, 0) + 1
    if len(counts) < 2:
        return {}
    best, most = max(counts.items(), key=lambda kv: kv[1])
    majority = best if most * 2 > len(values) else None
    out = {}
    for k, v in values.items():
        if v != majority:
            others = ", ".join(repr(o) for o in sorted(set(values.values()) - {v}))
            out[k] = f"the others hold {others}" + ("" if majority else " (no value has a majority: which one is right cannot be told from the files)")
    return out


def _check_topic_ids(report: Report) -> None:
    """The partitions of one topic share its topic id (Kafka's ``InconsistentTopicIdException``
    at the broker)."""
    by_topic: dict[str, dict[Path, str]] = {}
    for c in report.partitions:
        if c.topic_id is not None:
            topic = Path(c.dir).name.rpartition("-")[0]
            by_topic.setdefault(topic, {})[Path(c.dir)] = c.topic_id
    for topic, ids in sorted(by_topic.items()):
        for dir, why in sorted(_outliers(ids).items()):
            report.findings.append(Finding(
                "problem", str(dir / "partition.metadata"), None,
                f"topic id {ids[dir]} differs from the other partitions of {topic}: {why}",
            ))


def _summary(report: Report) -> str:
    segments = sum(len(c.segment_bases) for c in report.partitions)
    notes = len(report.findings) - len(report.problems)
    text = f"{len(report.partitions)} partitions, {segments} segments"
    if report.log_dirs:
        text = f"{len(report.log_dirs)} log dirs, {text}"
    return text + (f" ({notes} notes)" if notes else "")


def _document(report: Report) -> dict[str, object]:
    return {
        "clean": not report.problems,
        "log_dirs": report.log_dirs,
        "partitions": [c.dir for c in report.partitions],
        "segments": sum(len(c.segment_bases) for c in report.partitions),
        "live": [c.dir for c in report.partitions if c.live],
        "problems": [asdict(f) for f in report.problems],
        "notes": [asdict(f) for f in report.findings if f.severity == "note"],
    }


def _print(report: Report, as_json: bool) -> None:
    if as_json:
        json.dump(_document(report), sys.stdout, indent=1)
        print()
        return
    for f in report.findings:
        print(f.line())
    problems = len(report.problems)
    if problems:
        print(f"{problems} problem{'s' if problems != 1 else ''} in {_summary(report)}")
    else:
        print(f"clean: {_summary(report)}")
