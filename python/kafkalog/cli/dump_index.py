"""``kafkalog dump`` for a segment's ``.index``, ``.timeindex`` and ``.txnindex`` and for
producer-state ``.snapshot`` files: Kafka 4.3.1's ``DumpLogSegments.dumpIndex``,
``dumpTimeIndex``, ``dumpTxnIndex`` and ``dumpProducerIdSnapshot`` line for line (formats in
``kafkalog.cli.dump``).

Indexes are read whole with one read (never mapped: a broker may trim them under us), their
segment's ``.log`` with positional reads. Kafka opens a missing ``.index`` or ``.txnindex`` by
creating it; this never creates anything: a missing ``.index`` beside a ``.timeindex`` reads as
empty, and a file named on the command line must exist.

Thread-safety: none needed; one call per file from the command's thread.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _native
from ..exceptions import CorruptIndexError, IllegalStateError
from .dump_log import LogFile, Problems, optional_long

__all__ = ["IndexOptions", "dump_index", "dump_time_index", "dump_txn_index", "dump_producer_snapshot"]

#: AbstractIndex's warm section: the last 8192 bytes of entries are searched first.
_WARM_BYTES = 8192
_ABORTED_TXN = struct.Struct(">hqqqq")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_SNAPSHOT_ENTRIES_OFFSET = 6
_INT_MAX = 2**31 - 1

Write = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class IndexOptions:
    sanity_only: bool
    verify_only: bool
    max_message_size: int
    json: bool


def _read_all(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _base_offset(path: str) -> int:
    stem = os.path.basename(path).split(".")[0]
    if not stem.isdigit():
        raise IllegalStateError(f"{path}: the name does not start with a base offset (Kafka's <20 digits>.<suffix>)")
    return int(stem)


def _sibling(path: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(path).split(".")[0] + suffix)


def _emit(write: Write, as_json: bool, line: str, obj: dict[str, Any]) -> None:
    write(json.dumps(obj) if as_json else line)


class OffsetIndexView:
    """An ``.index`` file's entries as Kafka's ``OffsetIndex`` reads them (every whole 8-byte
    slot of the file is an entry, the zero tail of a preallocated file included)."""

    def __init__(self, path: str, base_offset: int, data: bytes) -> None:
        self.path, self.base_offset, self.data = path, base_offset, data
        self.entries = len(data) // 8

    def entry(self, i: int) -> tuple[int, int]:
        rel, position = struct.unpack_from(">ii", self.data, i * 8)
        return self.base_offset + rel, position

    def lookup(self, target: int) -> int:
        """``OffsetIndex.lookup(target).position``: Kafka's search (warm section first) for the
        last entry at or below ``target``; position 0 when there is none."""
        slot = self._largest_lower_bound(target)
        return 0 if slot == -1 else self.entry(slot)[1]

    def _largest_lower_bound(self, target: int) -> int:
        n = self.entries
        if n == 0:
            return -1
        first_hot = max(0, n - 1 - _WARM_BYTES // 8)
        if self.entry(first_hot)[0] < target:
            return self._binary_search(first_hot, n - 1, target)
        if self.entry(0)[0] > target:
            return -1
        return self._binary_search(0, first_hot, target)

    def _binary_search(self, lo: int, hi: int, target: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = self.entry(mid)[0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    def sanity_check(self) -> None:
        """``OffsetIndex.sanityCheck``."""
        last = self.entry(self.entries - 1)[0] if self.entries else self.base_offset
        path = os.path.abspath(self.path)
        if self.entries and last < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {path} has non-zero size but the last offset is {last} which is less than the base offset {self.base_offset}"
            )
        if len(self.data) % 8:
            raise CorruptIndexError(f"Index file {path} is corrupt, found {len(self.data)} bytes which is neither positive nor a multiple of 8")


def dump_index(path: str, display: str, opts: IndexOptions, problems: Problems, write: Write) -> None:
    """DumpLogSegments.dumpIndex: each entry, and the entries whose batch does not end at the
    entry's offset (Kafka's "Mismatches in" section)."""
    base = _base_offset(display)
    with LogFile(_sibling(path, ".log"), _sibling(display, ".log")) as log:
        index = OffsetIndexView(display, base, _read_all(path))
        if index.entries == 0:
            _emit(write, opts.json, f"{display} is empty.", {"type": "empty_index"})
            return
        if opts.sanity_only:
            index.sanity_check()
            _emit(write, opts.json, f"{display} passed sanity check.", {"type": "sanity_check_passed"})
            return
        for i in range(index.entries):
            offset, position = index.entry(i)
            if offset == base and i > 0:  # the zero tail of a preallocated (or crashed) index
                return
            batch_last = _first_batch_last_offset(log, position, opts.max_message_size)
            if batch_last != offset:
                problems.found |= (offset, position) != (base, 0)  # an unused slot: see dump_time_index
                problems.index_mismatches.compute_if_absent(os.path.abspath(path), dict)[offset] = batch_last
            if not opts.verify_only:
                _emit(write, opts.json, f"offset: {offset} position: {position}", {"type": "index_entry", "offset": offset, "position": position, "batchLastOffset": batch_last})


def _first_batch_last_offset(log: LogFile, position: int, max_size: int) -> int:
    """The last offset of the first batch of ``slice(position, max_size)`` (Kafka fails with
    NoSuchElementException when there is none; this names the file and position)."""
    if position < 0 or position > log.size:
        raise CorruptIndexError(f"{log.display}: index entry position {position} is outside the log's {log.size} bytes")
    end = min(position + max_size, log.size)
    size = log.frame(position, end)
    if size is None:
        raise CorruptIndexError(f"{log.display}: no complete batch at position {position} within {max_size} bytes (--max-message-size)")
    return log.header(position, size).last_offset


def dump_time_index(path: str, display: str, opts: IndexOptions, problems: Problems, write: Write) -> None:
    """DumpLogSegments.dumpTimeIndex: each entry, checked against the batch it points at."""
    base = _base_offset(display)
    with LogFile(_sibling(path, ".log"), _sibling(display, ".log")) as log:
        index_path = _sibling(path, ".index")
        index = OffsetIndexView(index_path, base, _read_all(index_path) if os.path.exists(index_path) else b"")
        data = _read_all(path)
        entries = len(data) // 12
        abspath = os.path.abspath(path)
        if opts.sanity_only:
            _time_index_sanity(abspath, base, data)
            _emit(write, opts.json, f"{display} passed sanity check.", {"type": "sanity_check_passed"})
            return
        walker = _ChainWalker(log)
        previous = -1
        for i in range(entries):
            timestamp, rel = struct.unpack_from(">qi", data, i * 12)
            offset = base + rel
            if offset == base and i > 0:
                return
            found = walker.first_ending_at_or_after(index.lookup(offset), offset)
            # A live segment's index is preallocated with zeros, and Kafka reads its first slot
            # as an entry: printed as Kafka prints it, but an unused slot is not damage.
            unused = (timestamp, rel) == (0, 0)
            problems.found |= not unused and (found is None or found[1] != offset)
            if found is None:
                problems.time_not_found.compute_if_absent(abspath, list).append((offset, -1))
            elif found[1] != offset:
                problems.time_not_found.compute_if_absent(abspath, list).append((offset, found[1]))
            else:
                header = log.header(found[0], found[2])
                max_ts = max([-1, *(r.timestamp for r in log.records(header))])
                problems.found |= not unused and (max_ts != timestamp or previous >= timestamp)
                if max_ts != timestamp:
                    problems.time_mismatches.compute_if_absent(abspath, list).append((timestamp, max_ts))
                if previous >= timestamp:
                    problems.time_out_of_order.compute_if_absent(abspath, list).append((timestamp, previous))
            if not opts.verify_only:
                _emit(write, opts.json, f"timestamp: {timestamp} offset: {offset}", {"type": "time_index_entry", "timestamp": timestamp, "offset": offset})
            previous = timestamp


class _ChainWalker:
    """Kafka reads every batch from the looked-up position to the end of the log for each time
    index entry (a corrupt size anywhere after it fails the dump); this walks each chain of
    batch positions once, remembering (last offset, size) per position."""

    def __init__(self, log: LogFile) -> None:
        self.log = log
        self.next_of: dict[int, tuple[int, int, int]] = {}  # position -> (last offset, size, next)
        self.checked: set[int] = set()  # positions whose chain reaches the end cleanly

    def first_ending_at_or_after(self, start: int, target: int) -> tuple[int, int, int] | None:
        """(position, last offset, size) of the first batch from ``start`` whose last offset is
        at least ``target``, or None."""
        if start > self.log.size:
            raise CorruptIndexError(f"{self.log.display}: index entry position {start} is outside the log's {self.log.size} bytes")
        found = None
        position = start
        visited = []
        while position not in self.checked:
            step = self.next_of.get(position)
            if step is None:
                size = self.log.frame(position, self.log.size)
                if size is None:
                    break
                step = (self.log.header(position, size).last_offset, size, position + size)
                self.next_of[position] = step
            visited.append(position)
            if found is None and step[0] >= target:
                found = (position, step[0], step[1])
            position = step[2]
        self.checked.update(visited)
        if found is None:  # the rest of the chain was walked before: search it without reading
            while (step := self.next_of.get(position)) is not None:
                if step[0] >= target:
                    return position, step[0], step[1]
                position = step[2]
        return found


def _time_index_sanity(abspath: str, base: int, data: bytes) -> None:
    """``TimeIndex.sanityCheck``."""
    entries = len(data) // 12
    if entries:
        last_ts, last_rel = struct.unpack_from(">qi", data, (entries - 1) * 12)
        first_ts = struct.unpack_from(">q", data, 0)[0]
        if last_ts < first_ts:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({abspath}) has non-zero size but the last timestamp is {last_ts} which is less than the first timestamp {first_ts}"
            )
        if base + last_rel < base:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({abspath}) has non-zero size but the last offset is {base + last_rel} which is less than the first offset {base}"
            )
    if len(data) % 12:
        raise CorruptIndexError(f"Time index file {abspath} is corrupt, found {len(data)} bytes which is neither positive nor a multiple of 12")


def dump_txn_index(path: str, display: str, as_json: bool, write: Write) -> None:
    """DumpLogSegments.dumpTxnIndex: each aborted transaction (34-byte entries; a partial
    entry at the end is not read, as Kafka's iterator stops there)."""
    data = _read_all(path)
    for i in range(len(data) // _ABORTED_TXN.size):
        version, pid, first, last, lso = _ABORTED_TXN.unpack_from(data, i * _ABORTED_TXN.size)
        if version != 0:
            raise IllegalStateError(
                f"Unexpected aborted transaction version {version} in transaction index {os.path.abspath(path)}, current version is 0"
            )
        _emit(
            write, as_json,
            f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} lastStableOffset: {lso}",
            {"type": "aborted_txn", "version": version, "producerId": pid, "firstOffset": first, "lastOffset": last, "lastStableOffset": lso},
        )  # fmt: skip


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence``."""
    if sequence < decrement:
        return _INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def dump_producer_snapshot(path: str, display: str, as_json: bool, problems: Problems, write: Write, error: Write) -> None:
    """DumpLogSegments.dumpProducerIdSnapshot: each producer of a ``.snapshot`` (Kafka's
    ProducerSnapshot v1); a corrupt file prints Kafka's message to stderr and the dump goes on."""
    data = _read_all(path)
    try:
        entries = _snapshot_entries(data)
    except ValueError as e:
        problems.found = True
        _emit(error, as_json, str(e), {"type": "corrupt_snapshot", "message": str(e)})
        return
    for pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first in entries:
        txn = txn_first if txn_first >= 0 else None
        line = (
            f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
            f"currentTxnFirstOffset: {optional_long(txn)} lastTimestamp: {ts}"
        )
        obj: dict[str, Any] = {"type": "producer_state", "producerId": pid, "producerEpoch": epoch, "coordinatorEpoch": coordinator_epoch, "currentTxnFirstOffset": txn, "lastTimestamp": ts}
        if last_offset >= 0:
            first_seq = _decrement_sequence(last_seq, delta)
            line += f" firstSequence: {first_seq} lastSequence: {last_seq} lastOffset: {last_offset} offsetDelta: {delta} timestamp: {ts}"
            obj.update(firstSequence=first_seq, lastSequence=last_seq, lastOffset=last_offset, offsetDelta=delta, timestamp=ts)
        _emit(write, as_json, line, obj)


def _snapshot_entries(data: bytes) -> list[tuple[int, ...]]:
    """``ProducerStateManager.readSnapshot``'s checks, with its messages."""
    try:
        version, crc, count = struct.unpack_from(">hIi", data, 0)
        if version != 1:
            raise ValueError(f"Snapshot contained an unknown file version {version}")
        if count < 0:
            raise ValueError("non-nullable field producerEntries was serialized as null")
        entries = [_SNAPSHOT_ENTRY.unpack_from(data, 10 + i * _SNAPSHOT_ENTRY.size) for i in range(count)]
    except (struct.error, ValueError) as e:
        reason = str(e) if isinstance(e, ValueError) and not isinstance(e, struct.error) else "null"
        raise ValueError(f"Snapshot failed schema validation: {reason}") from None
    computed = _native.dump_crc32c(data, _SNAPSHOT_ENTRIES_OFFSET, len(data))
    if computed != crc:
        raise ValueError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}")
    return entries
