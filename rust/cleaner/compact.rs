//! Cleaning a log's whole cleanable range, in as many passes as the offset map needs
//! (kafkalog's on-demand compaction; Kafka's cleaner threads clean one pass per turn).
//!
//! Thread-safety: `compact_log` runs on the caller's thread with the cleaner it is given.

use std::sync::Arc;

use super::cleaner::Cleaner;
use super::cleaner_stats::CleanerStats;
use super::log_to_clean::{cleanable_offsets, LogToClean};
use crate::error::Result;
use crate::log::unified_log::UnifiedLog;

/// What `compact_log` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompactOptions {
    /// Start of the dirty section (the checkpoint); `None` = the log start.
    pub first_dirty_offset: Option<i64>,
    /// The time to clean at (tombstone horizons, compaction lags); `None` = the clock's.
    pub now_ms: Option<i64>,
}

/// One pass of a clean.
#[derive(Debug, Clone)]
pub struct CleanPass {
    /// Dirty section start.
    pub first_dirty_offset: i64,
    /// First offset not cleaned by this pass.
    pub end_offset: i64,
    /// Stats.
    pub stats: CleanerStats,
}

/// The result of cleaning a log's whole cleanable range.
#[derive(Debug, Clone)]
pub struct CompactResult {
    /// The passes run (empty when there was nothing to clean).
    pub passes: Vec<CleanPass>,
    /// Where the dirty section started.
    pub first_dirty_offset: i64,
    /// The cleanable range ended here.
    pub first_uncleanable_offset: i64,
    /// The new checkpoint: the first offset not cleaned.
    pub end_offset: i64,
    /// All passes' counters together.
    pub stats: CleanerStats,
}

/// Cleans the whole cleanable range of `log` (from the checkpoint to the first uncleanable
/// offset) with `cleaner`, in as many passes as its map needs. Kafka has no such call: its
/// cleaner threads clean one pass per turn when the dirty ratio says so.
pub fn compact_log(
    cleaner: &mut Cleaner,
    log: &Arc<UnifiedLog>,
    options: &CompactOptions,
    check_done: &dyn Fn() -> Result<()>,
) -> Result<CompactResult> {
    let now = options.now_ms.unwrap_or_else(|| cleaner.now_ms());
    let mut result: Option<CompactResult> = None;
    let mut first_dirty = options.first_dirty_offset;
    loop {
        let offsets = cleanable_offsets(log, first_dirty, now)?;
        let to_clean =
            LogToClean::new(log.clone(), offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, false);
        let result = result.get_or_insert_with(|| CompactResult {
            passes: Vec::new(),
            first_dirty_offset: offsets.first_dirty_offset,
            first_uncleanable_offset: to_clean.first_uncleanable_offset,
            end_offset: offsets.first_dirty_offset,
            stats: CleanerStats::new(),
        });
        result.first_uncleanable_offset = to_clean.first_uncleanable_offset;
        if to_clean.cleanable_bytes == 0 || to_clean.first_dirty_offset >= to_clean.first_uncleanable_offset {
            break;
        }
        let (end, stats) = cleaner.do_clean(&to_clean, now, check_done)?;
        log::info!(
            "{}",
            stats.summary(cleaner.id(), &log.topic_partition().to_string(), to_clean.first_dirty_offset, end)
        );
        if stats.invalid_messages_read > 0 {
            log::warn!("\tFound {} invalid messages during compaction.", stats.invalid_messages_read);
        }
        if end <= to_clean.first_dirty_offset {
            // An open transaction starts in the first dirty segment: nothing more to clean.
            result.first_uncleanable_offset = end;
            break;
        }
        result.stats.merge(&stats);
        result.passes.push(CleanPass { first_dirty_offset: to_clean.first_dirty_offset, end_offset: end, stats });
        result.end_offset = end;
        first_dirty = Some(end);
        if end >= to_clean.first_uncleanable_offset {
            break;
        }
    }
    Ok(result.expect("the loop runs at least once"))
}
