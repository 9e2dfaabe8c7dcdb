"""``kafkalog dump``: Kafka's ``kafka-dump-log.sh`` (``org.apache.kafka.tools.DumpLogSegments``
of Kafka 4.3.1), on kafkalog's own readers.

``kafkalog dump --files F[,F...]`` takes Kafka's options (``--deep-iteration``,
``--print-data-log``, ``--index-sanity-check``, ``--verify-index-only``, ``--max-bytes``,
``--max-message-size``, ``--skip-record-metadata``); ``--decode {utf8,hex,json}`` replaces
``--key-decoder-class`` / ``--value-decoder-class`` (utf8 is Kafka's default StringDecoder) and
implies ``--print-data-log`` as a decoder class does.

For the files Kafka dumps the output is Kafka's, line for line, on the same streams (checked
against Kafka's own tool by ``tests/interop/test_dump_interop.py``):

- every file: ``Dumping <path>`` (the path as given, as Java's ``File`` prints it);
- ``.log``: ``Log starting offset: N``, then per batch ``baseOffset: .. lastOffset: .. count: ..
  baseSequence: .. lastSequence: .. producerId: .. producerEpoch: .. partitionLeaderEpoch: ..
  isTransactional: .. isControl: .. deleteHorizonMs: OptionalLong[..] position: ..
  CreateTime: .. size: .. magic: 2 compresscodec: .. crc: .. isvalid: ..`` (a legacy entry:
  ``offset: N position: ...``); with deep iteration per record ``| offset: .. CreateTime: ..
  keySize: .. valueSize: .. sequence: .. headerKeys: [a,b]``, `` endTxnMarker: COMMIT
  coordinatorEpoch: N`` for a marker, `` key: .. payload: ..`` when printing data;
  ``Found N invalid bytes at the end of NAME`` for a torn tail (only without ``--max-bytes``);
- ``.index``: ``offset: N position: P``, or ``PATH is empty.`` / ``PATH passed sanity check.``;
- ``.timeindex``: ``timestamp: T offset: O``;
- ``.txnindex``: ``version: 0 producerId: .. firstOffset: .. lastOffset: .. lastStableOffset: ..``;
- ``.snapshot``: ``producerId: .. producerEpoch: .. coordinatorEpoch: .. currentTxnFirstOffset:
  OptionalLong.empty lastTimestamp: ..`` and `` firstSequence: .. lastSequence: .. lastOffset: ..
  offsetDelta: .. timestamp: ..``; a corrupt snapshot prints Kafka's message on stderr;
- at the end, on stderr: ``Mismatches in :PATH`` / ``  Index offset: A, log offset: B`` (highest
  index offset first), ``Found timestamp mismatch in :PATH``, ``Found out of order timestamp in
  :PATH``, ``The following indexed offsets are not found in :PATH``, ``Non-consecutive offsets in
  PATH`` / ``  A is followed by B`` (Kafka 4.3.1 starts its count at -1, so a segment not starting
  at offset 0 lists ``-1 is followed by <base>``), files in the order of Java's ``HashMap``;
- another name: ``Ignoring unknown file PATH`` on stderr.

Files Kafka does not dump, in the same style (Kafka ignores them):

- ``leader-epoch-checkpoint``: ``epoch: E startOffset: O`` per entry;
- ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``: ``topic: T partition: P
  offset: O`` per entry, in the file's order.

``--json`` prints one JSON object per line instead, all on stdout: ``{"type": "file", "file":
.., "kind": ..}`` before each file, then ``batch``, ``record``, ``index_entry``,
``time_index_entry``, ``aborted_txn``, ``producer_state``, ``leader_epoch``,
``checkpoint_entry`` objects with Kafka's field names (``deleteHorizonMs`` and
``currentTxnFirstOffset`` a number or null), and the problems as ``trailing_bytes``,
``index_mismatch``, ``timestamp_mismatch``, ``out_of_order_timestamp``,
``offset_not_found``, ``non_consecutive_offsets``, ``corrupt_snapshot``, ``ignored_file``.

Differences from Kafka, all where Kafka would crash or write: a failure (a batch size below
14, a record that does not decode, an index entry past the log) is a one-line error naming the
file and byte position and ends the dump (exit 1) where Kafka stops with a stack trace; Kafka
creates a missing ``.index`` / ``.txnindex`` when opening it, this never creates or writes
anything and takes no lock (safe on a live broker's files); KRaft control records other than
the transaction markers print ``controlType: NAME(id)`` instead of Kafka's JSON; the records of
a compressed legacy (magic 0/1) wrapper show the wrapper's ``isValid`` / ``crc``; header keys
that are not UTF-8 print with Python's replacement characters (keys and values use Java's).

Exit codes: 0 the files were dumped and nothing damaged was found; 1 damage was found (a batch
whose CRC fails, a torn tail, an index or time index entry that does not match the log, a
corrupt snapshot) or the dump failed; 2 usage (a file that does not exist). Offsets that are not
consecutive are listed but are not damage (compaction leaves gaps); nor is the unused first slot
of a live segment's zero-filled index, which Kafka reads as an entry and reports (printed the
same here).

Thread-safety: ``run`` writes to stdout and stderr; one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ..checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from . import EXIT_OK, EXIT_PROBLEMS, UsageError
from .dump_index import IndexOptions, dump_index, dump_producer_snapshot, dump_time_index, dump_txn_index
from .dump_log import INT_MAX, LogOptions, Problems, dump_log

__all__ = ["register", "run"]

OFFSET_CHECKPOINTS = frozenset(
    {"recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}
)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

_EPILOG = """examples:
  kafkalog dump --files /var/lib/kafka/data/orders-0/00000000000000000000.log --print-data-log
  kafkalog dump --files 00000000000000000000.index,00000000000000000000.timeindex --verify-index-only
  kafkalog dump --files 00000000000000000000.log --deep-iteration --json | jq .offset
  kafkalog dump --files leader-epoch-checkpoint,../recovery-point-offset-checkpoint

Output lines match Kafka 4.3.1's kafka-dump-log.sh (DumpLogSegments) for .log, .index,
.timeindex, .txnindex and .snapshot files. Never writes; safe on a live broker's files.
Exit codes: 0 ok, 1 damage found or failure, 2 usage."""


def register(commands: Any) -> None:
    """Adds ``dump`` to the ``kafkalog`` command's subparsers."""
    p = commands.add_parser(
        "dump",
        help="print log segments, indexes, snapshots and checkpoints (Kafka's kafka-dump-log)",
        description="Parse log files and dump their contents, as Kafka's kafka-dump-log.sh (DumpLogSegments).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--files", required=True, metavar="file1,file2,...", help="REQUIRED: the comma separated list of data and index log files to be dumped")
    p.add_argument("--deep-iteration", action="store_true", help="print every record, not only the batches (implied by --print-data-log)")
    p.add_argument("--print-data-log", action="store_true", help="print the records' keys and values (implies --deep-iteration)")
    p.add_argument("--decode", choices=("utf8", "hex", "json"), help="how keys and values print (default utf8, Kafka's StringDecoder); implies --print-data-log")
    p.add_argument("--skip-record-metadata", action="store_true", help="do not print the records' metadata (nor control records)")
    p.add_argument("--index-sanity-check", action="store_true", help="only run the index sanity check a broker runs at start-up")
    p.add_argument("--verify-index-only", action="store_true", help="only check the index against the log, without printing it")
    p.add_argument("--max-message-size", type=_non_negative, default=5 * 1024 * 1024, metavar="SIZE", help="size of the largest batch (default 5242880)")
    p.add_argument("--max-bytes", type=_non_negative, default=INT_MAX, metavar="BYTES", help="read at most this many bytes of each .log (default 2147483647)")
    p.add_argument("--json", action="store_true", help="one JSON object per line (per batch, record, index entry, ...) instead of Kafka's text")
    p.set_defaults(run=run)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value <= INT_MAX:
        raise argparse.ArgumentTypeError(f"{value} is outside [0, {INT_MAX}]")
    return value


def java_file_string(path: str) -> str:
    """How ``java.io.File`` prints a path: repeated separators collapsed, no trailing one."""
    out = path
    while "//" in out:
        out = out.replace("//", "/")
    return out[:-1] if len(out) > 1 and out.endswith("/") else out


class _Output:
    """Stdout and stderr lines, or JSON objects (all on stdout) with ``--json``."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json
        self._out = sys.stdout
        self._err = sys.stderr

    def out(self, line: str) -> None:
        self._out.write(line + "\n")

    def err(self, line: str) -> None:
        if self.json:
            self._out.write(line + "\n")
        else:
            self._out.flush()
            self._err.write(line + "\n")

    def emit(self, obj: dict[str, Any]) -> None:
        self._out.write(json.dumps(obj, ensure_ascii=False) + "\n")


def run(args: argparse.Namespace) -> int:
    """The ``dump`` command: every file in order, then Kafka's end-of-dump sections."""
    files = args.files.split(",")
    while files and files[-1] == "":  # Java's String.split drops trailing empty strings
        files.pop()
    for f in files:
        if f and not os.path.isfile(f):
            raise UsageError(f"{f}: no such file" if not os.path.exists(f) else f"{f}: not a regular file")
    decode = args.decode or "utf8"
    print_data = args.print_data_log or args.decode is not None
    log_opts = LogOptions(args.deep_iteration or print_data, print_data, args.skip_record_metadata, args.max_bytes, decode, args.json)
    index_opts = IndexOptions(args.index_sanity_check, args.verify_index_only, args.max_message_size, args.json)
    out = _Output(args.json)
    problems = Problems()
    for f in files:
        _dump_file(f, log_opts, index_opts, problems, out)
    _print_sections(problems, out)
    return EXIT_PROBLEMS if problems.found else EXIT_OK


def _kind(name: str) -> str:
    if name in OFFSET_CHECKPOINTS:
        return "offset-checkpoint"
    if name == LEADER_EPOCH_CHECKPOINT:
        return LEADER_EPOCH_CHECKPOINT
    dot = name.rfind(".")
    suffix = name[dot:] if dot >= 0 else ""
    return {".log": "log", ".checkpoint": "log", ".index": "index", ".timeindex": "timeindex", ".snapshot": "snapshot", ".txnindex": "txnindex"}.get(
        suffix, "unknown"
    )


def _dump_file(f: str, log_opts: LogOptions, index_opts: IndexOptions, problems: Problems, out: _Output) -> None:
    display = java_file_string(f)
    kind = _kind(os.path.basename(display))
    if out.json:
        out.emit({"type": "file", "file": display, "kind": kind})
    else:
        out.out(f"Dumping {display}")
    write: Callable[[str], None] = out.out
    if kind == "log":
        dump_log(f, display, log_opts, problems, write)
    elif kind == "index":
        dump_index(f, display, index_opts, problems, write)
    elif kind == "timeindex":
        dump_time_index(f, display, index_opts, problems, write)
    elif kind == "snapshot":
        dump_producer_snapshot(f, display, out.json, problems, write, out.err)
    elif kind == "txnindex":
        dump_txn_index(f, display, out.json, write)
    elif kind == LEADER_EPOCH_CHECKPOINT:
        for e in read_leader_epoch_checkpoint(f):
            _line(out, f"epoch: {e.epoch} startOffset: {e.start_offset}", {"type": "leader_epoch", "epoch": e.epoch, "startOffset": e.start_offset})
    elif kind == "offset-checkpoint":
        for (topic, partition), offset in read_offset_checkpoint(f).items():
            _line(out, f"topic: {topic} partition: {partition} offset: {offset}", {"type": "checkpoint_entry", "topic": topic, "partition": partition, "offset": offset})
    elif out.json:
        out.emit({"type": "ignored_file", "file": display})
    else:
        out.err(f"Ignoring unknown file {display}")


def _line(out: _Output, line: str, obj: dict[str, Any]) -> None:
    if out.json:
        out.emit(obj)
    else:
        out.out(line)


def _print_sections(p: Problems, out: _Output) -> None:
    """Kafka's end-of-dump sections (stderr), or their JSON objects."""
    for path, mismatches in p.index_mismatches.items():
        pairs = sorted(mismatches.items(), reverse=True)
        _section(out, f"Mismatches in :{path}", [(f"  Index offset: {a}, log offset: {b}", {"type": "index_mismatch", "file": path, "indexOffset": a, "logOffset": b}) for a, b in pairs])
    for path, rows in p.time_mismatches.items():
        _section(out, f"Found timestamp mismatch in :{path}", [
            (f"  Index timestamp: {a}, log timestamp: {b}", {"type": "timestamp_mismatch", "file": path, "indexTimestamp": a, "logTimestamp": b})
            for a, b in rows
        ])  # fmt: skip
    for path, rows in p.time_out_of_order.items():
        _section(out, f"Found out of order timestamp in :{path}", [
            (f"  Index timestamp: {a}, Previously indexed timestamp: {b}", {"type": "out_of_order_timestamp", "file": path, "indexTimestamp": a, "previousIndexTimestamp": b})
            for a, b in rows
        ])  # fmt: skip
    for path, rows in p.time_not_found.items():
        _section(out, f"The following indexed offsets are not found in :{path}", [
            (f"Indexed offset: {a}, found log offset: {b}", {"type": "offset_not_found", "file": path, "indexOffset": a, "logOffset": b})
            for a, b in rows
        ])  # fmt: skip
    for path, gaps in p.non_consecutive.items():
        pairs = sorted(gaps.items())
        _section(out, f"Non-consecutive offsets in {path}", [(f"  {a} is followed by {b}", {"type": "non_consecutive_offsets", "file": path, "offset": a, "nextOffset": b}) for a, b in pairs])


def _section(out: _Output, title: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
    if out.json:
        for _, obj in rows:
            out.emit(obj)
        return
    out.err(title)
    for line, _ in rows:
        out.err(line)
