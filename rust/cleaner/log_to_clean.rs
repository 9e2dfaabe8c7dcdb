//! A log chosen for cleaning and its byte accounting (Kafka's `LogToClean` and
//! `LogCleanerManager.calculateCleanableBytes`).
//!
//! Thread-safety: plain data computed from a snapshot of the log's segments.

use std::sync::Arc;

use crate::log::unified_log::UnifiedLog;

/// A log and the range of it a clean may touch. Mirrors Kafka's `LogToClean`.
#[derive(Debug, Clone)]
pub struct LogToClean {
    /// The log.
    pub log: Arc<UnifiedLog>,
    /// Where the dirty section starts (the cleaner checkpoint, healed into the log's range).
    pub first_dirty_offset: i64,
    /// `max.compaction.lag.ms` has passed for the oldest dirty segment.
    pub need_compaction_now: bool,
    /// Bytes of the segments below the dirty section.
    pub clean_bytes: u64,
    /// The cleanable range ends here: the base offset of the segment holding the uncleanable
    /// offset (or of the active segment).
    pub first_uncleanable_offset: i64,
    /// Bytes of the segments from the dirty section's start up to `first_uncleanable_offset`.
    pub cleanable_bytes: u64,
    /// `clean_bytes + cleanable_bytes`.
    pub total_bytes: u64,
    /// `cleanable_bytes / total_bytes` (Kafka's dirty ratio).
    pub cleanable_ratio: f64,
}

impl LogToClean {
    /// Accounts the log's bytes for a clean from `first_dirty_offset` up to (the segment
    /// holding) `uncleanable_offset`.
    pub fn new(
        log: Arc<UnifiedLog>,
        first_dirty_offset: i64,
        uncleanable_offset: i64,
        need_compaction_now: bool,
    ) -> Self {
        let clean_bytes: u64 = log.log_segments(-1, first_dirty_offset).iter().map(|s| s.size()).sum();
        let (first_uncleanable_offset, cleanable_bytes) =
            calculate_cleanable_bytes(&log, first_dirty_offset, uncleanable_offset);
        let total_bytes = clean_bytes + cleanable_bytes;
        let cleanable_ratio = if total_bytes == 0 { 0.0 } else { cleanable_bytes as f64 / total_bytes as f64 };
        LogToClean {
            log,
            first_dirty_offset,
            need_compaction_now,
            clean_bytes,
            first_uncleanable_offset,
            cleanable_bytes,
            total_bytes,
            cleanable_ratio,
        }
    }
}

/// Kafka's `calculateCleanableBytes`: aligns `uncleanable_offset` down to the base of the
/// (non-active) segment holding it, or the active segment's base, and sums the sizes of the
/// segments from the one holding `first_dirty_offset` up to there.
pub fn calculate_cleanable_bytes(log: &UnifiedLog, first_dirty_offset: i64, uncleanable_offset: i64) -> (i64, u64) {
    let first_uncleanable = log
        .non_active_log_segments_from(uncleanable_offset)
        .first()
        .map(|s| s.base_offset())
        .or_else(|| log.active_segment().map(|s| s.base_offset()))
        .unwrap_or(uncleanable_offset);
    let bytes =
        log.log_segments(first_dirty_offset.min(first_uncleanable), first_uncleanable).iter().map(|s| s.size()).sum();
    (first_uncleanable, bytes)
}

/// The range of a log a clean may cover (Kafka's `OffsetsToClean`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetsToClean {
    /// Inclusive start of the dirty section.
    pub first_dirty_offset: i64,
    /// Exclusive end of what may be cleaned.
    pub first_uncleanable_dirty_offset: i64,
    /// The checkpoint was outside the log and must be rewritten to `first_dirty_offset`.
    pub force_update_checkpoint: bool,
    /// The first dirty segment `min.compaction.lag.ms` holds back, when one does: its base
    /// offset and largest timestamp (it becomes cleanable once the clock passes that timestamp
    /// plus the lag).
    pub lag_held_segment: Option<(i64, i64)>,
}

/// Kafka's `LogCleanerManager.cleanableOffsets`: the first dirty offset is the checkpoint
/// (the log start when absent), reset to the log start when it lies outside the log; the
/// first uncleanable offset is the least of the last stable offset, the active segment's
/// base and (with `min.compaction.lag.ms > 0`) the base of the first dirty segment holding a
/// record younger than the lag.
pub fn cleanable_offsets(log: &UnifiedLog, last_clean_offset: Option<i64>, now: i64) -> crate::Result<OffsetsToClean> {
    let log_start = log.log_start_offset();
    let checkpoint = last_clean_offset.unwrap_or(log_start);
    let (first_dirty_offset, force_update_checkpoint) = if checkpoint < log_start {
        if !log.config().cleanup_policy.delete() {
            log::warn!(
                "Resetting first dirty offset of {} to log start offset {log_start} since the checkpointed offset \
                 {checkpoint} is invalid.",
                log.topic_partition()
            );
        }
        (log_start, true)
    } else if checkpoint > log.log_end_offset() {
        log::warn!(
            "The last checkpoint dirty offset for partition {} is {checkpoint}, which is larger than the log end \
             offset {}. Resetting to the log start offset {log_start}.",
            log.topic_partition(),
            log.log_end_offset()
        );
        (log_start, true)
    } else {
        (checkpoint, false)
    };
    let min_lag = log.config().min_compaction_lag_ms.max(0);
    let mut uncleanable = log.last_stable_offset();
    if let Some(active) = log.active_segment() {
        uncleanable = uncleanable.min(active.base_offset());
    }
    let mut lag_held_segment = None;
    if min_lag > 0 {
        for segment in log.non_active_log_segments_from(first_dirty_offset) {
            let largest = segment.largest_timestamp()?;
            if largest > now.saturating_sub(min_lag) {
                uncleanable = uncleanable.min(segment.base_offset());
                lag_held_segment = Some((segment.base_offset(), largest));
                break;
            }
        }
    }
    Ok(OffsetsToClean {
        first_dirty_offset,
        first_uncleanable_dirty_offset: first_dirty_offset.max(uncleanable),
        force_update_checkpoint,
        lag_held_segment,
    })
}

/// Kafka's `maxCompactionDelay`: how long past `max.compaction.lag.ms` the oldest dirty
/// non-active segment's first batch is (0 when none is overdue).
pub fn max_compaction_delay(log: &UnifiedLog, first_dirty_offset: i64, now: i64) -> crate::Result<i64> {
    let earliest = earliest_dirty_timestamp(log, first_dirty_offset)?.unwrap_or(i64::MAX);
    let clean_until = now.saturating_sub(log.config().max_compaction_lag_ms.max(0));
    Ok(if earliest < clean_until { clean_until - earliest } else { 0 })
}

/// The earliest positive first-batch timestamp of the dirty non-active segments (what
/// `max.compaction.lag.ms` is counted from), None when there is none.
pub fn earliest_dirty_timestamp(log: &UnifiedLog, first_dirty_offset: i64) -> crate::Result<Option<i64>> {
    let mut earliest = None;
    for segment in log.non_active_log_segments_from(first_dirty_offset) {
        if let Some(ts) = segment.first_batch_timestamp()? {
            if ts > 0 && earliest.is_none_or(|e| ts < e) {
                earliest = Some(ts);
            }
        }
    }
    Ok(earliest)
}
