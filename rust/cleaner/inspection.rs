//! A read-only look at one log through the cleaner's rules, for tools (`kafkalog stats`) and
//! the per-partition status: the clean / cleanable / uncleanable sections from the log dir's
//! `cleaner-offset-checkpoint` (Kafka's `LogCleanerManager.cleanableOffsets` and
//! `calculateCleanableBytes`), what bounds the cleanable range, whether Kafka's cleaner would
//! pick the log now and why not ([`skip_reason`], the rule `compact_dirty` applies), and the
//! tombstones of each segment with their delete horizons (`delete.retention.ms`, KIP-534's
//! two-pass rule). Nothing here writes or locks: it works on a read-only open of a live log.
//!
//! No Kafka counterpart as a whole (Kafka computes the same numbers inside its cleaner only).
//! Thread-safety: plain data, computed from a snapshot of the log's segments.

use std::sync::Arc;

use super::log_to_clean::{cleanable_offsets, earliest_dirty_timestamp, max_compaction_delay, LogToClean};
use crate::checkpoint::cleaner_checkpoint::read_cleaner_checkpoint;
use crate::error::Result;
use crate::log::unified_log::UnifiedLog;
use crate::record::records::AnyBatch;

/// Why Kafka's cleaner would not clean a log now (and `compact_dirty` did not). Its `Display` starts with the reason's name
/// ([`SkipReason::name`]), then the numbers behind it.
#[derive(Debug, Clone, PartialEq)]
pub enum SkipReason {
    /// `cleanup.policy` lacks `compact`: Kafka's cleaner never compacts such a log.
    DeletePolicy {
        /// The policy, as Kafka prints it.
        policy: String,
    },
    /// Nothing between the first dirty offset and the first uncleanable offset.
    NothingDirty {
        /// Where the dirty section starts.
        first_dirty_offset: i64,
        /// Where the cleanable range ends.
        first_uncleanable_offset: i64,
    },
    /// The dirty ratio is not above `min.cleanable.dirty.ratio` and no segment is past
    /// `max.compaction.lag.ms`.
    BelowMinCleanableRatio {
        /// Cleanable bytes over clean + cleanable bytes.
        ratio: f64,
        /// The topic's `min.cleanable.dirty.ratio`.
        min_ratio: f64,
    },
}

impl SkipReason {
    /// The reason's name, the start of its text: `delete policy`, `nothing dirty` or `below
    /// min.cleanable.dirty.ratio`.
    pub fn name(&self) -> &'static str {
        match self {
            SkipReason::DeletePolicy { .. } => "delete policy",
            SkipReason::NothingDirty { .. } => "nothing dirty",
            SkipReason::BelowMinCleanableRatio { .. } => "below min.cleanable.dirty.ratio",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.name();
        match self {
            SkipReason::DeletePolicy { policy } => {
                write!(f, "{name}: cleanup.policy={policy} does not contain compact; Kafka's cleaner leaves it alone")
            }
            SkipReason::NothingDirty { first_dirty_offset, first_uncleanable_offset } => write!(
                f,
                "{name}: no cleanable segment from the first dirty offset {first_dirty_offset} to the first \
                 uncleanable offset {first_uncleanable_offset} (roll to make the active segment cleanable)"
            ),
            SkipReason::BelowMinCleanableRatio { ratio, min_ratio } => write!(
                f,
                "{name}: dirty ratio {ratio:.4} is not above min.cleanable.dirty.ratio {min_ratio} (pass \
                 min.cleanable.dirty.ratio=0 to clean whatever is dirty)"
            ),
        }
    }
}

/// What ends the cleanable range (the least of these wins, as in Kafka's `cleanableOffsets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncleanableBound {
    /// The active segment's base offset: the active segment is never cleaned.
    ActiveSegment,
    /// The last stable offset (an open transaction's first offset, or the high watermark).
    LastStableOffset,
    /// A dirty segment younger than `min.compaction.lag.ms`.
    MinCompactionLag,
}

impl UncleanableBound {
    /// `active segment`, `last stable offset` or `min.compaction.lag.ms`.
    pub fn name(self) -> &'static str {
        match self {
            UncleanableBound::ActiveSegment => "active segment",
            UncleanableBound::LastStableOffset => "last stable offset",
            UncleanableBound::MinCompactionLag => "min.compaction.lag.ms",
        }
    }
}

/// The cleaner's view of one compacted log. A snapshot: plain data.
#[derive(Debug, Clone)]
pub struct CleanableSections {
    /// The partition's entry in `cleaner-offset-checkpoint` (the last clean's end), if any.
    pub checkpoint: Option<i64>,
    /// Where the dirty section starts (the entry healed into the log's range).
    pub first_dirty_offset: i64,
    /// Where the cleanable section ends (a segment base).
    pub first_uncleanable_offset: i64,
    /// What ends the cleanable range.
    pub bound: UncleanableBound,
    /// Bytes below the dirty section.
    pub clean_bytes: u64,
    /// Bytes of the cleanable dirty section.
    pub cleanable_bytes: u64,
    /// Bytes from the cleanable section's end to the log end.
    pub uncleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)`: Kafka's dirty ratio.
    pub dirty_ratio: f64,
    /// How far past `max.compaction.lag.ms` the oldest dirty segment is (ms; 0 when not).
    pub max_compaction_delay_ms: i64,
    /// When `max.compaction.lag.ms` forces a clean of the dirty segments (their earliest
    /// first-batch timestamp plus the lag); None without dirty non-active segments or with the
    /// lag at its default (never).
    pub max_compaction_lag_due_ms: Option<i64>,
    /// The segment `min.compaction.lag.ms` holds back and when it becomes cleanable (ms).
    pub lag_held_segment: Option<(i64, i64)>,
    /// Records in the cleanable section's segments (exact per segment; an upper bound of the
    /// records to clean).
    pub records_to_clean: u64,
    /// Why Kafka's cleaner would not clean the log now, None when it would.
    pub skip: Option<SkipReason>,
}

/// Whether Kafka's cleaner would clean `to_clean` at `now` (`grabFilthiestCompactedLog`'s
/// choice): None when it would, else why not. The caller has checked the cleanup policy.
///
/// # Errors
/// I/O errors reading segment timestamps.
pub fn skip_reason(log: &UnifiedLog, to_clean: &LogToClean, now: i64) -> Result<Option<SkipReason>> {
    let config = log.config();
    if to_clean.cleanable_bytes == 0 || to_clean.first_dirty_offset >= to_clean.first_uncleanable_offset {
        return Ok(Some(SkipReason::NothingDirty {
            first_dirty_offset: to_clean.first_dirty_offset,
            first_uncleanable_offset: to_clean.first_uncleanable_offset,
        }));
    }
    if to_clean.cleanable_ratio <= config.min_cleanable_dirty_ratio
        && max_compaction_delay(log, to_clean.first_dirty_offset, now)? == 0
    {
        return Ok(Some(SkipReason::BelowMinCleanableRatio {
            ratio: to_clean.cleanable_ratio,
            min_ratio: config.min_cleanable_dirty_ratio,
        }));
    }
    Ok(None)
}

/// The sections of `log` from `checkpoint` (the log dir's `cleaner-offset-checkpoint` entry)
/// at `now`. Reading changes nothing: an entry outside the log is shown healed, not rewritten.
///
/// # Errors
/// I/O errors reading segment timestamps or record counts.
pub fn sections_from(log: &Arc<UnifiedLog>, checkpoint: Option<i64>, now: i64) -> Result<CleanableSections> {
    let config = log.config();
    let offsets = cleanable_offsets(log, checkpoint, now)?;
    let delay = max_compaction_delay(log, offsets.first_dirty_offset, now)?;
    let ltc =
        LogToClean::new(log.clone(), offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, delay > 0);
    let mut records = 0;
    for segment in log.log_segments(ltc.first_dirty_offset, ltc.first_uncleanable_offset) {
        records += segment.record_count()?;
    }
    let active_base = log.active_segment().map(|s| s.base_offset());
    let (lso, active) = (log.last_stable_offset(), active_base.unwrap_or(i64::MAX));
    let bound = match offsets.lag_held_segment {
        Some((base, _)) if base < lso.min(active) => UncleanableBound::MinCompactionLag,
        _ if active <= lso => UncleanableBound::ActiveSegment,
        _ => UncleanableBound::LastStableOffset,
    };
    let max_lag = config.max_compaction_lag_ms;
    let due = if max_lag == i64::MAX {
        None
    } else {
        earliest_dirty_timestamp(log, ltc.first_dirty_offset)?.map(|t| t.saturating_add(max_lag))
    };
    let min_lag = config.min_compaction_lag_ms.max(0);
    let skip = if config.compact() {
        skip_reason(log, &ltc, now)?
    } else {
        Some(SkipReason::DeletePolicy { policy: config.cleanup_policy.to_string() })
    };
    Ok(CleanableSections {
        checkpoint,
        first_dirty_offset: ltc.first_dirty_offset,
        first_uncleanable_offset: ltc.first_uncleanable_offset,
        bound,
        clean_bytes: ltc.clean_bytes,
        cleanable_bytes: ltc.cleanable_bytes,
        uncleanable_bytes: log.size_in_bytes().saturating_sub(ltc.clean_bytes + ltc.cleanable_bytes),
        dirty_ratio: ltc.cleanable_ratio,
        max_compaction_delay_ms: delay,
        max_compaction_lag_due_ms: due,
        lag_held_segment: offsets.lag_held_segment.map(|(base, largest)| (base, largest.saturating_add(min_lag))),
        records_to_clean: records,
        skip,
    })
}

/// [`sections_from`] with the partition's entry of `<log dir>/cleaner-offset-checkpoint` (read,
/// never written; a missing or unreadable file means no entry, as for Kafka's cleaner).
///
/// # Errors
/// As [`sections_from`].
pub fn cleanable_sections(log: &Arc<UnifiedLog>, now: i64) -> Result<CleanableSections> {
    let checkpoint = read_cleaner_checkpoint(log.log_dir(), log.topic_partition());
    sections_from(log, checkpoint, now)
}

/// The tombstones of one segment (records with a null value in data batches).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentTombstones {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Tombstones in the segment.
    pub tombstones: u64,
    /// Of those, in batches a clean has stamped with a delete horizon (KIP-534): the next clean
    /// after the horizon removes them.
    pub with_horizon: u64,
    /// Of those, whose horizon has passed at `now` (the next clean removes them).
    pub past_horizon: u64,
    /// The earliest horizon still ahead of `now` (ms), if any.
    pub next_horizon_ms: Option<i64>,
    /// The latest horizon in the segment (ms), if any.
    pub last_horizon_ms: Option<i64>,
}

/// Counts each segment's tombstones and their delete horizons at `now` (decoding every data
/// batch: a full read of the log). Tombstones without a horizon have not been through a clean
/// yet; the first clean stamps `now + delete.retention.ms` into their batch.
///
/// # Errors
/// I/O and corrupt-record errors, naming the file and position.
pub fn tombstone_census(log: &UnifiedLog, now: i64) -> Result<Vec<SegmentTombstones>> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    for segment in log.log_segments(i64::MIN, i64::MAX) {
        let mut t = SegmentTombstones { base_offset: segment.base_offset(), ..SegmentTombstones::default() };
        segment.log().for_each_batch(0, segment.size(), &mut buf, |_, batch| {
            if batch.is_control() {
                return Ok(true);
            }
            let mut nulls = 0u64;
            batch.for_each_record(&mut scratch, |r| {
                nulls += u64::from(r.value.is_none());
                Ok(())
            })?;
            t.tombstones += nulls;
            if let (AnyBatch::V2(b), true) = (&batch, nulls > 0) {
                if let Some(h) = b.delete_horizon_ms() {
                    t.with_horizon += nulls;
                    t.last_horizon_ms = t.last_horizon_ms.max(Some(h));
                    if h <= now {
                        t.past_horizon += nulls;
                    } else if t.next_horizon_ms.is_none_or(|n| h < n) {
                        t.next_horizon_ms = Some(h);
                    }
                }
            }
            Ok(true)
        })?;
        out.push(t);
    }
    Ok(out)
}
