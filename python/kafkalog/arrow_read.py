"""``UnifiedLog.to_arrow`` with threads: the offset range cut into pieces of about equal
``.log`` bytes, each decoded by the native ``read_columns`` (which releases the GIL) on its own
thread, the batches put back in offset order.

Reading ``[a, b)`` then ``[b, c)`` gives exactly the rows of ``[a, c)``, whatever ``b``: a
batch that straddles ``b`` is decoded by both pieces and each keeps its own offsets, as the
chunks of ``iter_arrow`` already do; ``read_committed`` pieces find the aborted transactions
that reach into them from the transaction index. So a cut needs no batch boundary, and the
pieces are placed by interpolating each segment's offsets over its bytes.

No Kafka class: Kafka's consumers read a partition on one thread. Thread-safety: the pool is
made per call and joined before it returns; the log handle's reads are safe to run
concurrently.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ._native import Progress, SegmentInfo

__all__ = ["MIN_PIECE_BYTES", "read_pieces", "split_range"]

#: A piece holds at least this much of the log: below it a thread costs more than it saves.
MIN_PIECE_BYTES = 16 << 20


def split_range(segments: Sequence[SegmentInfo], first: int, stop: int, log_end: int, pieces: int) -> list[tuple[int, int]]:
    """Cuts ``[first, stop)`` into at most ``pieces`` consecutive ranges of about equal bytes
    (and none smaller than ``MIN_PIECE_BYTES``), from each segment's size spread evenly over its
    offsets (the last segment's end at ``log_end``). One range when the log is too small."""
    spans = []  # (from offset, to offset, bytes) of each segment's share of the range
    for i, s in enumerate(segments):
        end = segments[i + 1].base_offset if i + 1 < len(segments) else max(log_end, s.base_offset)
        lo, hi = max(first, s.base_offset), min(stop, end)
        if lo < hi:
            spans.append((lo, hi, s.size * (hi - lo) / (end - s.base_offset)))
    total = sum(b for _, _, b in spans)
    pieces = max(1, min(pieces, int(total // MIN_PIECE_BYTES)))
    cuts = [first]
    acc = 0.0
    k = 1  # the next cut goes where the bytes before it reach k / pieces of the total
    for lo, hi, size in spans:
        while k < pieces and size > 0 and acc + size >= total * k / pieces:
            at = lo + int((hi - lo) * (total * k / pieces - acc) / size)
            if cuts[-1] < at < stop:
                cuts.append(at)
            k += 1
        acc += size
    cuts.append(stop)
    return list(zip(cuts, cuts[1:]))


def read_pieces(
    read: Callable[[int, int, Callable[[Progress], None] | None], list[pa.RecordBatch]],
    ranges: list[tuple[int, int]],
    total: int,
    on_progress: Callable[[Progress], None] | None,
) -> list[pa.RecordBatch]:
    """Runs ``read(start, end, progress)`` for each range on a thread of its own and returns
    the batches in range order. ``on_progress`` is called on this thread with the offsets of
    all pieces read so far, the last with ``done == total``; an exception it raises stops the
    pieces at their next chunk and propagates. A failing piece's error propagates (the first
    range's first), once every piece has stopped."""
    events: queue.SimpleQueue[tuple[int, int | None]] = queue.SimpleQueue()
    stopping = False

    def piece(i: int, start: int, end: int) -> list[pa.RecordBatch]:
        def report(p: Progress) -> None:
            if stopping:
                raise _Stopped
            events.put((i, p.done))

        try:
            return read(start, end, report if on_progress is not None else None)
        finally:
            events.put((i, None))

    with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="kafkalog-to_arrow") as pool:
        futures = [pool.submit(piece, i, a, b) for i, (a, b) in enumerate(ranges)]
        done = [0] * len(ranges)
        reported = -1
        running = len(ranges)
        failure: BaseException | None = None
        while running:
            i, reached = events.get()
            if reached is None:
                running -= 1
                continue
            done[i] = reached
            if on_progress is not None and failure is None:
                try:
                    reported = min(total, sum(done))
                    on_progress(Progress("reading", reported, total, "offsets"))
                except BaseException as e:  # stop the other pieces, then re-raise
                    failure, stopping = e, True
        if failure is not None:
            raise failure
        batches = [b for f in futures for b in f.result()]
    if on_progress is not None and reported < total:
        on_progress(Progress("reading", total, total, "offsets"))
    return batches


class _Stopped(Exception):
    """Ends a piece whose read the caller's progress callback stopped."""
