//! Per-partition visibility into compaction, which Kafka lacks (operators see only the
//! dirtiest ratio and a log line per clean): for each compacted partition, its cleaning state,
//! its clean / dirty / uncleanable sections, the last clean and its stats, why it is
//! uncleanable or paused, and how many passes the current offset map needs to clean it.
//!
//! Thread-safety: plain data, computed from a snapshot of the logs and the manager's state.

use std::path::PathBuf;
use std::sync::Arc;

use super::cleaner_stats::CleanerStats;
use super::inspection::{sections_from, CleanableSections, UncleanableBound};
use super::log_cleaner::{map_capacity, LogCleaner};
use crate::file_names::TopicPartition;
use crate::log::unified_log::UnifiedLog;

use super::log_cleaner_manager::LogCleaningState;

/// Which partitions a status covers. A plain value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusFilter {
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this partition number.
    pub partition: Option<i32>,
}

impl StatusFilter {
    /// Whether `tp` is selected.
    pub fn matches(&self, tp: &TopicPartition) -> bool {
        self.topic.as_ref().is_none_or(|t| *t == tp.topic) && self.partition.is_none_or(|p| p == tp.partition)
    }
}

/// The compaction picture of one compacted partition (no Kafka counterpart: Kafka exposes
/// only `max-dirty-percent`). A snapshot: plain data.
#[derive(Debug, Clone)]
pub struct CleanerPartitionStatus {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Its log dir.
    pub log_dir: PathBuf,
    /// `none`, `in-progress`, `aborted` or `paused(n)`.
    pub state: String,
    /// Who paused it, one entry per pause.
    pub pause_reasons: Vec<String>,
    /// `cleanup.policy`.
    pub cleanup_policy: String,
    /// The log start offset.
    pub log_start_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
    /// Where the dirty section starts (the checkpoint, healed into the log's range).
    pub first_dirty_offset: i64,
    /// Where the cleanable section ends (a segment base): the uncleanable section starts here.
    pub first_uncleanable_offset: i64,
    /// Bytes below the dirty section.
    pub clean_bytes: u64,
    /// Bytes of the cleanable dirty section.
    pub cleanable_bytes: u64,
    /// Bytes from the cleanable section's end to the log end (active segment and anything held
    /// back by `min.compaction.lag.ms` or the last stable offset).
    pub uncleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)`: Kafka's dirty ratio.
    pub dirty_ratio: f64,
    /// The topic's `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// How far past `max.compaction.lag.ms` the oldest dirty segment is (ms; 0 when not).
    pub max_compaction_delay_ms: i64,
    /// Records in the segments of the cleanable section: exact per segment, so an upper bound
    /// of the records to clean (the first segment may start below the dirty offset).
    pub records_to_clean: u64,
    /// Passes the current offset map needs: `ceil(records_to_clean / (slots x load factor))`.
    /// An upper bound: duplicate keys in the dirty section share one slot.
    pub passes_needed: u64,
    /// Keys one pass holds (`slots x log.cleaner.io.buffer.load.factor`).
    pub map_capacity: u64,
    /// When the last clean since start-up finished (ms).
    pub last_clean_ms: Option<i64>,
    /// Its dirty range `[from, to)`.
    pub last_clean_range: Option<(i64, i64)>,
    /// Its stats.
    pub last_clean_stats: Option<CleanerStats>,
    /// Why the partition is not cleaned, if a clean failed.
    pub uncleanable_reason: Option<String>,
    /// Since when (ms).
    pub uncleanable_since_ms: Option<i64>,
    /// An error computing this status (the byte fields are then 0).
    pub error: Option<String>,
}

impl LogCleaner {
    /// The compaction status of every compacted partition that `filter` selects, in
    /// topic-partition order. Reading it changes nothing (an out-of-range checkpoint is shown
    /// healed, not rewritten).
    pub fn status(&self, filter: &StatusFilter) -> Vec<CleanerPartitionStatus> {
        let manager = self.manager();
        let now = manager.clock().milliseconds();
        let capacity = map_capacity(&self.current_config());
        let mut logs: Vec<_> =
            manager.logs().into_iter().filter(|(tp, log)| filter.matches(tp) && log.config().compact()).collect();
        logs.sort_by(|a, b| a.0.cmp(&b.0));
        logs.into_iter().map(|(tp, log)| self.partition_status(tp, &log, now, capacity)).collect()
    }

    fn partition_status(
        &self,
        tp: TopicPartition,
        log: &Arc<UnifiedLog>,
        now: i64,
        capacity: u64,
    ) -> CleanerPartitionStatus {
        let manager = self.manager();
        let checkpoint = manager.checkpoint_of(log);
        let (s, error) = match sections_from(log, checkpoint, now) {
            Ok(s) => (s, None),
            Err(e) => {
                let zero = CleanableSections {
                    checkpoint,
                    first_dirty_offset: checkpoint.unwrap_or(log.log_start_offset()),
                    first_uncleanable_offset: log.log_end_offset(),
                    bound: UncleanableBound::ActiveSegment,
                    clean_bytes: 0,
                    cleanable_bytes: 0,
                    uncleanable_bytes: 0,
                    dirty_ratio: 0.0,
                    max_compaction_delay_ms: 0,
                    max_compaction_lag_due_ms: None,
                    lag_held_segment: None,
                    records_to_clean: 0,
                    skip: None,
                };
                (zero, Some(e.to_string()))
            }
        };
        let last = manager.last_clean(&tp);
        let uncleanable = manager.uncleanable_reason(&tp);
        let config = log.config();
        CleanerPartitionStatus {
            state: LogCleaningState::name(manager.cleaning_state(&tp)),
            pause_reasons: manager.pause_reasons(&tp),
            log_dir: log.log_dir().to_path_buf(),
            cleanup_policy: config.cleanup_policy.to_string(),
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            first_dirty_offset: s.first_dirty_offset,
            first_uncleanable_offset: s.first_uncleanable_offset,
            clean_bytes: s.clean_bytes,
            cleanable_bytes: s.cleanable_bytes,
            uncleanable_bytes: log.size_in_bytes().saturating_sub(s.clean_bytes + s.cleanable_bytes),
            dirty_ratio: s.dirty_ratio,
            min_cleanable_dirty_ratio: config.min_cleanable_dirty_ratio,
            max_compaction_delay_ms: s.max_compaction_delay_ms,
            records_to_clean: s.records_to_clean,
            passes_needed: if capacity == 0 { 0 } else { s.records_to_clean.div_ceil(capacity) },
            map_capacity: capacity,
            last_clean_ms: last.as_ref().map(|l| l.time_ms),
            last_clean_range: last.as_ref().map(|l| (l.first_dirty_offset, l.end_offset)),
            last_clean_stats: last.map(|l| l.stats),
            uncleanable_reason: uncleanable.as_ref().map(|u| u.reason.clone()),
            uncleanable_since_ms: uncleanable.map(|u| u.since_ms),
            error,
            topic_partition: tp,
        }
    }
}
