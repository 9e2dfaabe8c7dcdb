//! An on-demand clean of a log's dirty section only, kept in the log dir's
//! `cleaner-offset-checkpoint` as Kafka's cleaner keeps it (the Spark maintenance jobs'
//! compaction; `UnifiedLog.compact_dirty` in Python): the partition's entry is read, healed into
//! the log's range by Kafka's `LogCleanerManager.cleanableOffsets` rules (an entry below the
//! log start or above the log end means the log start, with Kafka's warning), the clean runs
//! from there when Kafka's cleaner would pick the log, and the new first dirty offset is written
//! back (`checkpoint::cleaner_checkpoint`, which keeps the other partitions' entries), and the
//! clean with its stats beside it (`last_clean`).
//!
//! Kafka's choice (`grabFilthiestCompactedLog`) is followed: a log is cleaned when its dirty
//! ratio (cleanable bytes over clean + cleanable bytes) is above `min.cleanable.dirty.ratio`, or
//! when `max.compaction.lag.ms` has passed for its oldest dirty segment and it has bytes to
//! clean. Otherwise the clean is skipped and says why ([`SkipReason`]); pass
//! `min.cleanable.dirty.ratio=0` to clean whatever is dirty.
//!
//! Thread-safety: runs on the caller's thread; the caller holds the partition (a writable open).

use std::sync::Arc;

use super::compact::{CompactOptions, CompactResult};
use super::compactor::Compactor;
pub use super::inspection::SkipReason;
use super::last_clean::{record_on_demand, CleanedBy, LastClean};
use super::log_to_clean::{cleanable_offsets, LogToClean};
use crate::checkpoint::cleaner_checkpoint::{read_cleaner_checkpoint, update_cleaner_checkpoint};
use crate::error::Result;
use crate::log::unified_log::UnifiedLog;
use crate::util::progress::ProgressSink;

/// What [`compact_dirty`] did.
#[derive(Debug)]
pub struct DirtyClean {
    /// The partition's entry in `cleaner-offset-checkpoint` before the clean, if any.
    pub checkpoint: Option<i64>,
    /// Where the dirty section started (the entry healed into the log's range).
    pub first_dirty_offset: i64,
    /// Where the cleanable range ended.
    pub first_uncleanable_offset: i64,
    /// The dirty ratio the choice was made on.
    pub cleanable_ratio: f64,
    /// The clean, when one ran.
    pub result: Option<CompactResult>,
    /// Why no clean ran.
    pub skipped: Option<SkipReason>,
    /// The entry written back, when one was.
    pub checkpoint_written: Option<i64>,
    /// Why the entry could not be written back (the clean itself stands; the next one starts
    /// from the old entry).
    pub checkpoint_error: Option<crate::error::Error>,
}

/// Cleans `log`'s dirty section with `compactor` as described in the module docs, reading and
/// writing its entry of `<log.log_dir()>/cleaner-offset-checkpoint`. `now_ms` is the clean's
/// "now" (tombstone horizons, compaction lags), the compactor's clock when `None`.
///
/// # Errors
/// The clean's errors (nothing is written then); a failed checkpoint write is not an error but
/// [`DirtyClean::checkpoint_error`].
pub fn compact_dirty(
    compactor: &Compactor,
    log: &Arc<UnifiedLog>,
    now_ms: Option<i64>,
    progress: Option<ProgressSink>,
) -> Result<DirtyClean> {
    let config = log.config();
    let checkpoint = read_cleaner_checkpoint(log.log_dir(), log.topic_partition());
    let mut outcome = DirtyClean {
        checkpoint,
        first_dirty_offset: log.log_start_offset(),
        first_uncleanable_offset: log.log_start_offset(),
        cleanable_ratio: 0.0,
        result: None,
        skipped: None,
        checkpoint_written: None,
        checkpoint_error: None,
    };
    if !config.compact() {
        outcome.skipped = Some(SkipReason::DeletePolicy { policy: config.cleanup_policy.to_string() });
        return Ok(outcome);
    }
    let now = now_ms.unwrap_or_else(|| compactor.now_ms());
    let offsets = cleanable_offsets(log, checkpoint, now)?;
    let to_clean =
        LogToClean::new(log.clone(), offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, false);
    outcome.first_dirty_offset = offsets.first_dirty_offset;
    outcome.first_uncleanable_offset = to_clean.first_uncleanable_offset;
    outcome.cleanable_ratio = to_clean.cleanable_ratio;
    let mut new_entry = offsets.force_update_checkpoint.then_some(offsets.first_dirty_offset);
    if let Some(skip) = super::inspection::skip_reason(log, &to_clean, now)? {
        outcome.skipped = Some(skip);
    } else {
        let options = CompactOptions { first_dirty_offset: Some(offsets.first_dirty_offset), now_ms: Some(now) };
        let result = compactor.compact_with_progress(log, &options, false, progress)?;
        outcome.first_uncleanable_offset = result.first_uncleanable_offset;
        if !result.passes.is_empty() {
            new_entry = Some(result.end_offset);
        }
        outcome.result = Some(result);
    }
    if let Some(entry) = new_entry {
        match update_cleaner_checkpoint(log.log_dir(), log.topic_partition(), entry) {
            Ok(()) => outcome.checkpoint_written = Some(entry),
            Err(e) => outcome.checkpoint_error = Some(e),
        }
    }
    if let (Some(result), None) = (&outcome.result, &outcome.checkpoint_error) {
        record_last_clean(log, result, now);
    }
    Ok(outcome)
}

/// Keeps a clean that did work in the log dir's `kafkalog-last-clean` (after its checkpoint
/// entry, so the file never names a clean the checkpoint has not seen). A failure is a
/// warning: the file is informational, and the clean and its checkpoint stand. `now` is the
/// clean's "now" (the compactor's clock, or the time the caller gave).
fn record_last_clean(log: &UnifiedLog, result: &CompactResult, now: i64) {
    if result.passes.is_empty() {
        return;
    }
    let clean = LastClean {
        time_ms: now,
        first_dirty_offset: result.first_dirty_offset,
        end_offset: result.end_offset,
        by: CleanedBy::OnDemand,
        stats: result.stats.clone(),
    };
    if let Err(e) = record_on_demand(log.log_dir(), log.topic_partition(), clean) {
        log::warn!("the last clean of {} is not kept on disk: {e}", log.topic_partition());
    }
}
