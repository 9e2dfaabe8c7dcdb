//! What the log cleaner needs from a log (the cleaner-facing parts of Kafka's `UnifiedLog`):
//! segment ranges with Kafka's `logSegments(from, to)` semantics, the last stable offset, new
//! `.cleaned` segments, the crash-safe segment replace under the log lock, the overflow split,
//! and the guard that keeps truncation and close from racing a clean.
//!
//! Thread-safety: a clean holds the log's cleaning mutex for its whole run ([`CleaningGuard`]).
//! Truncation and close first raise an abort request, which the cleaner sees at its next check
//! (every chunk read) and stops; then they take the mutex, so a replace never installs segments
//! that a truncation has just removed. Appends and reads never wait for a clean.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::UnifiedLog;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{CLEANED_FILE_SUFFIX, SEGMENT_FILE_SUFFIXES};
use crate::segment::log_segment::LogSegment;

/// Proof that the holder is the only clean of this log. Dropping it ends the clean.
pub struct CleaningGuard<'a> {
    log: &'a UnifiedLog,
    _lock: MutexGuard<'a, ()>,
}

impl std::fmt::Debug for CleaningGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CleaningGuard({})", self.log.topic_partition())
    }
}

impl CleaningGuard<'_> {
    /// Whether a truncation or close asked the clean to stop.
    pub fn abort_requested(&self) -> bool {
        self.log.cleaning_abort.load(Ordering::Acquire) > 0
    }
}

/// Held by truncation / close while they run: a clean that starts meanwhile waits.
pub(super) struct CleaningStop<'a> {
    log: &'a UnifiedLog,
    _lock: MutexGuard<'a, ()>,
}

impl Drop for CleaningStop<'_> {
    fn drop(&mut self) {
        self.log.cleaning_abort.fetch_sub(1, Ordering::AcqRel);
    }
}

impl UnifiedLog {
    /// Starts a clean of this log, waiting for any other clean (or truncation) to finish.
    pub fn begin_cleaning(&self) -> Result<CleaningGuard<'_>> {
        self.check_writable()?;
        let lock = self.cleaning.lock();
        self.check_writable()?;
        Ok(CleaningGuard { log: self, _lock: lock })
    }

    /// Starts a clean only if none is running; `None` otherwise.
    pub fn try_begin_cleaning(&self) -> Result<Option<CleaningGuard<'_>>> {
        self.check_writable()?;
        Ok(self.cleaning.try_lock().map(|lock| CleaningGuard { log: self, _lock: lock }))
    }

    /// Whether a truncation or close has asked the clean of this log to stop and is waiting for
    /// it (the request a running clean sees at its next check). Lets a caller order its work
    /// against a clean without timing: the tests wait for it before they let a clean go on.
    pub fn cleaning_abort_requested(&self) -> bool {
        self.cleaning_abort.load(Ordering::Acquire) > 0
    }

    /// Asks a running clean to stop and waits until it has (Kafka's `abortAndPauseCleaning`
    /// as seen from the log).
    pub(super) fn stop_cleaning(&self) -> CleaningStop<'_> {
        self.cleaning_abort.fetch_add(1, Ordering::AcqRel);
        CleaningStop { log: self, _lock: self.cleaning.lock() }
    }

    pub(super) fn note_truncation(&self, offset: i64) {
        let mut t = self.truncated_to.lock();
        *t = Some(t.map_or(offset, |o| o.min(offset)));
    }

    /// The lowest offset the log was truncated to since the last call (the cleaner lowers its
    /// checkpoint there, as Kafka's `maybeTruncateCheckpoint` does).
    pub fn take_truncation(&self) -> Option<i64> {
        self.truncated_to.lock().take()
    }

    /// The segments holding offsets in `[from, to)`: from the segment containing `from` (or
    /// the first one after it) to the last one starting below `to` (Kafka's
    /// `logSegments(from, to)`). Empty when `from >= to`.
    pub fn log_segments(&self, from: i64, to: i64) -> Vec<Arc<LogSegment>> {
        if from >= to {
            return Vec::new();
        }
        let segments = self.local.segments();
        let start = segments.floor_segment(from).map_or(from, |s| s.base_offset());
        segments.values_range(start, to)
    }

    /// Every segment but the active one, from the one holding `from` on (Kafka's
    /// `nonActiveLogSegmentsFrom`).
    pub fn non_active_log_segments_from(&self, from: i64) -> Vec<Arc<LogSegment>> {
        let active = self.active_segment().map_or(i64::MAX, |s| s.base_offset());
        self.log_segments(from, active)
    }

    /// The active (last) segment.
    pub fn active_segment(&self) -> Option<Arc<LogSegment>> {
        self.local.segments().last_segment()
    }

    /// A new empty segment at `base_offset` with the `.cleaned` suffix, not in the segment map
    /// (Kafka's `createNewCleanedSegment`); leftover `.cleaned` files at that base go first.
    pub fn create_new_cleaned_segment(&self, base_offset: i64) -> Result<LogSegment> {
        self.check_writable()?;
        let config = self.config();
        let result = (|| {
            let dir = self.dir();
            for suffix in SEGMENT_FILE_SUFFIXES {
                let name = format!(
                    "{}{suffix}{CLEANED_FILE_SUFFIX}",
                    crate::file_names::filename_prefix_from_offset(base_offset)
                );
                crate::util::file::delete_if_exists(&dir.join(name))?;
            }
            LogSegment::open(
                dir,
                base_offset,
                &config,
                self.local.clock().clone(),
                CLEANED_FILE_SUFFIX,
                config.preallocate,
                false,
            )
        })();
        self.handle_io(result)
    }

    /// Swaps cleaned segments in for `old` under the log lock, through the crash-safe replace
    /// (`.cleaned` -> `.swap` -> live, old ones `.deleted`). Fails without touching the log if a
    /// truncation asked the clean to stop.
    pub fn replace_segments(
        &self,
        guard: &CleaningGuard<'_>,
        new: &[Arc<LogSegment>],
        old: &[Arc<LogSegment>],
    ) -> Result<()> {
        if guard.abort_requested() {
            return Err(Error::LogCleaningAborted { partition: self.topic_partition().to_string() });
        }
        self.check_writable()?;
        let _lock = self.write_lock.lock();
        let config = self.config();
        match self.handle_io(self.local.replace_segments(new, old, &config)) {
            Ok(()) => self.handle_io(self.delete_replaced_snapshots(new, old, &config)),
            Err(e) => {
                // Some renames may have happened: the segment map and the files can disagree,
                // and only a reopen (whose loader completes or rolls back the replace) makes
                // them agree again. Kafka takes the log dir offline here; a standalone log
                // closes itself so nothing reads or cleans the half-swapped segments. The
                // error is returned as it is (it names the file).
                log::error!(
                    "replacing cleaned segments of {} failed part-way ({e}); the log is closed and must be reopened, \
                     whose recovery finishes or rolls back the replace",
                    self.topic_partition()
                );
                self.close_handlers();
                Err(e)
            }
        }
    }

    /// Marks for deletion the producer snapshots of the replaced segments whose base offset no
    /// new segment has (Kafka's `replaceSegments` then `deleteProducerSnapshots(asyncDelete =
    /// true)`): renamed `.deleted`, unlinked after `file.delete.delay.ms`. The caller holds the
    /// write lock.
    fn delete_replaced_snapshots(
        &self,
        new: &[Arc<LogSegment>],
        old: &[Arc<LogSegment>],
        config: &LogConfig,
    ) -> Result<()> {
        let kept: std::collections::HashSet<i64> = new.iter().map(|s| s.base_offset()).collect();
        let mut marked = Vec::new();
        {
            let mut psm = self.producer_state.lock();
            for s in old.iter().filter(|s| !kept.contains(&s.base_offset())) {
                marked.extend(psm.remove_and_mark_snapshot_for_deletion(s.base_offset())?);
            }
        }
        self.local.schedule_file_deletion(marked.into_iter().map(|s| s.file().to_path_buf()).collect(), config)
    }

    /// Splits a segment whose offsets overflow its index (pre-KAFKA-6264 data) under the log
    /// lock; returns the bytes left behind.
    pub fn split_overflowed_segment(&self, _guard: &CleaningGuard<'_>, segment: &Arc<LogSegment>) -> Result<u64> {
        self.check_writable()?;
        let _lock = self.write_lock.lock();
        let config = self.config();
        self.handle_io(crate::log::splitter::split_overflowed_segment(segment, &config, &self.local))
    }
}
