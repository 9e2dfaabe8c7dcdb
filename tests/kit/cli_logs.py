"""A log dir with known contents for the ``kafkalog stats`` / ``compact`` / ``retention`` tests,
written by kafkalog around "now" (:attr:`Fixture.now`, the wall clock when it was built, in
whole seconds: ``retention`` runs on the wall clock, whose distance from it is seconds against
the days the ages below are apart; ``stats`` and ``compact`` take ``--now-ms``):

- ``users-0`` (compacted): two segments of keyed records with tombstones, cleaned at
  ``now - 5 d`` (so their tombstones' delete horizon, ``now - 4 d``, has passed), then a small
  dirty segment (``now - 1 d``, no tombstones) and an active segment: the dirty ratio is below
  0.5, so Kafka's cleaner would not clean it now;
- ``users-1`` (compacted): the same, cleaned at ``now - 1 h`` (tombstones waiting until
  ``now + 23 h``), then a large dirty segment: eligible now;
- ``events-0`` (delete policy, retention.ms 7 days): segments whose records are 30 d, 8 d and
  1 d old, one with future timestamps (``now + 3 d``) and an active one: retention deletes the
  first two (retention_ms);
- ``replication-offset-checkpoint`` with every partition's high watermark (``events-0``'s one
  below its log end) and the ``cleaner-offset-checkpoint`` the cleans wrote.

Topic configs are not on disk: :data:`TOPIC_CONFIG_ARGS` are the command-line arguments that
give the users topic its policy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import kafkalog
from kafkalog import Record
from kafkalog.checkpoints import write_offset_checkpoint

DAY = 86_400_000
HOUR = 3_600_000
COMPACT = {"cleanup.policy": "compact"}
TOPIC_CONFIG_ARGS = ["--topic-config", "users:cleanup.policy=compact"]
RETENTION_MS = 7 * DAY


@dataclass
class Fixture:
    """Where things are and what is known of them."""

    log_dir: Path
    now: int
    #: users partition -> tombstones the first clean kept (keys whose latest record is one).
    tombstones: dict[int, int] = field(default_factory=dict)
    #: users partition -> the cleaner-offset-checkpoint entry after the first clean.
    cleaned_to: dict[int, int] = field(default_factory=dict)
    #: users partition -> (time, first dirty offset, stats) of the first clean.
    cleans: dict[int, tuple[int, int, kafkalog.CleanerStats]] = field(default_factory=dict)
    #: users partition -> (base offset, max timestamp) of the dirty segment.
    dirty_segment: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: events-0's segments: base offset -> max timestamp.
    events_segments: dict[int, int] = field(default_factory=dict)
    events_high_watermark: int = 0


def _keyed(n: int, ts: int, tombstone_every: int, start: int = 0) -> list[Record]:
    return [
        Record(f"k{(start + i) % 10}".encode(), None if tombstone_every and i % tombstone_every == 0 else b"v" * 40, timestamp=ts)
        for i in range(n)
    ]


def _users(fixture: Fixture, partition: int, cleaned_ago: int, dirty_records: int) -> int:
    NOW = fixture.now
    cleaned_at = NOW - cleaned_ago
    path = fixture.log_dir / f"users-{partition}"
    with kafkalog.UnifiedLog.open(path, COMPACT) as log:
        latest: dict[bytes | None, bytes | None] = {}
        for _ in range(2):
            batch = _keyed(40, NOW - 10 * DAY, 4)
            latest.update((r.key, r.value) for r in batch)
            log.append(batch)
            log.roll()
        outcome = log.compact_dirty(time_ms=cleaned_at, dedupe_buffer_size=1 << 16)
        assert outcome.result is not None and outcome.checkpoint_written is not None
        fixture.cleaned_to[partition] = outcome.checkpoint_written
        fixture.cleans[partition] = (cleaned_at, outcome.result.first_dirty_offset, outcome.result.stats)
        base = log.log_end_offset
        log.append(_keyed(dirty_records, NOW - DAY, 0, start=3))
        fixture.dirty_segment[partition] = (base, NOW - DAY)
        log.roll()
        log.append(_keyed(3, NOW, 0))
        fixture.tombstones[partition] = sum(v is None for v in latest.values())
        return log.log_end_offset


#: events-0's config when written: future timestamps accepted (a producer with a wrong clock).
EVENTS_WRITE_CONFIG = {"cleanup.policy": "delete", "message.timestamp.after.max.ms": 10 * DAY}


def _events(fixture: Fixture) -> int:
    NOW = fixture.now
    path = fixture.log_dir / "events-0"
    with kafkalog.UnifiedLog.open(path, EVENTS_WRITE_CONFIG) as log:
        for age in (30 * DAY, 8 * DAY, DAY, -3 * DAY):
            base = log.log_end_offset
            log.append([Record(None, b"e" * 100, timestamp=NOW - age) for _ in range(20)])
            fixture.events_segments[base] = NOW - age
            log.roll()
        log.append([Record(None, b"e" * 100, timestamp=NOW) for _ in range(5)])
        return log.log_end_offset


def build(root: Path) -> Fixture:
    fixture = Fixture(root / "d1", int(time.time()) * 1000)
    fixture.log_dir.mkdir(parents=True)
    ends = {("users", 0): _users(fixture, 0, 5 * DAY, 8), ("users", 1): _users(fixture, 1, HOUR, 400)}
    fixture.events_high_watermark = _events(fixture) - 2
    ends[("events", 0)] = fixture.events_high_watermark
    write_offset_checkpoint(fixture.log_dir / "replication-offset-checkpoint", ends)
    return fixture
