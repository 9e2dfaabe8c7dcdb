//! A segment leaving the active role and coming back to it (Kafka's
//! `LogSegment.onBecomeInactiveSegment`, and the index resize of `LogSegment.truncateTo`), and
//! its flush and close, which finish what the roll left for later.
//!
//! Kafka trims a rolled segment's indexes to their entries inside the roll, under the log's
//! lock. On ext4 (with delayed allocation), cutting a file inside a page that the index's
//! mapping dirtied writes that page out first, about 1 ms per index on this machine's disk, so
//! kafkalog leaves the trim to the segment's next flush: the `flush-log` task after the roll
//! (`log/unified_log/roll_flush.rs`), a synchronous or periodic flush, or the close. The flush
//! trims, then fsyncs, and the recovery point passes a segment only after a flush of it, so
//! every segment below the recovery point has trimmed indexes, as in Kafka; a segment above it
//! is recovered (its indexes rebuilt) by the next load after a crash, trimmed or not. Until the
//! trim, lookups see only the index's entries (its length past them is not read).
//!
//! A truncation back into a segment whose trim is pending makes it active again: it drops the
//! pending trim and resizes the indexes holding the same lock the trim takes, so a flush never
//! cuts the indexes of a segment that took appends again.
//!
//! Thread-safety: the pending trim is behind its own mutex, taken before the index locks; the
//! trim may run on the flush thread while the log appends to another segment.

use std::sync::atomic::Ordering;

use super::LogSegment;
use crate::error::Result;

impl LogSegment {
    /// Called when a newer segment takes over (`onBecomeInactiveSegment`): writes the final
    /// time-index entry and trims a preallocated `.log` to its data. The indexes are trimmed
    /// to their entries by the next [`LogSegment::flush`] (see the module docs).
    pub fn on_become_inactive_segment(&self) -> Result<()> {
        let max = self.max_timestamp_so_far()?;
        self.time_index()?.get_mut()?.maybe_append(max.timestamp, max.offset, true)?;
        *self.trim_pending.lock() = true;
        self.log.trim()
    }

    /// Whether the indexes still await the trim of [`LogSegment::on_become_inactive_segment`].
    pub fn index_trim_pending(&self) -> bool {
        *self.trim_pending.lock()
    }

    /// Trims both indexes to their entries if the segment became inactive since the last trim;
    /// an index never mapped is cut to its entries if a recovery left it at full size, or
    /// created empty if missing (the roll's result in Kafka, whose trim maps it first).
    pub fn trim_indexes_if_pending(&self) -> Result<()> {
        let mut pending = self.trim_pending.lock();
        if *pending {
            self.trim_indexes()?;
            *pending = false;
        }
        Ok(())
    }

    /// A loaded index is trimmed as it is: trimming needs no check left to the first use
    /// (`log_segment/index_check.rs`), and a segment flagged for one never had an index
    /// loaded through a lookup. An index not open is trimmed without mapping it (a recovered
    /// active segment's, left at full size until its first use) or created empty.
    fn trim_indexes(&self) -> Result<()> {
        if !self.offset_index.trim_unopened()? {
            self.offset_index.get_mut()?.trim_to_valid_size()?;
        }
        if !self.time_index.trim_unopened()? {
            self.time_index.get_mut()?.trim_to_valid_size()?;
        }
        Ok(())
    }

    /// Resizes both indexes (the active segment gets full-size indexes again); a pending trim
    /// is dropped.
    pub fn resize_indexes(&self, size: usize) -> Result<()> {
        self.check_indexes_if_pending()?;
        let mut pending = self.trim_pending.lock();
        *pending = false;
        // An index not opened yet is opened at `size` (one open and map, not two).
        self.offset_index.resize(size)?;
        self.time_index.resize(size)?;
        Ok(())
    }

    /// Truncates both indexes to `offset` and gives them their full size again (the index part
    /// of Kafka's `truncateTo`, which may make an inactive segment active); a pending trim is
    /// dropped.
    pub(super) fn truncate_indexes(&self, offset: i64) -> Result<()> {
        let mut pending = self.trim_pending.lock();
        *pending = false;
        {
            let mut oi = self.offset_index()?.get_mut()?;
            oi.truncate_to(offset)?;
            let max = oi.max_index_size();
            oi.resize(max)?;
        }
        let mut ti = self.time_index()?.get_mut()?;
        ti.truncate_to(offset)?;
        let max = ti.max_index_size();
        ti.resize(max)?;
        Ok(())
    }

    /// Trims the indexes of a segment that became inactive (see the module docs), then fsyncs
    /// the data and the indexes.
    pub fn flush(&self) -> Result<()> {
        self.trim_indexes_if_pending()?;
        self.txn_index.read().flush()?;
        self.log.flush()?;
        if self.indexes_unsynced.swap(false, Ordering::AcqRel) {
            let synced = crate::util::file::fsync_file_if_exists(&self.offset_index.path())
                .and_then(|()| crate::util::file::fsync_file_if_exists(&self.time_index.path()));
            if let Err(e) = synced {
                self.indexes_unsynced.store(true, Ordering::Release);
                return Err(e);
            }
        }
        // As in `trim_indexes`: a loaded index is flushed as it is.
        if self.offset_index.is_loaded() {
            self.offset_index.get()?.flush()?;
        }
        if self.time_index.is_loaded() {
            self.time_index.get()?.flush()?;
        }
        Ok(())
    }

    /// Appends the final time-index entry and trims the files, as on a clean close.
    pub fn close(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        // Only a segment whose max timestamp is known (it was appended to or read) gets the
        // final entry; closing never maps the time index of an untouched segment.
        if self.state.lock().max_timestamp_so_far.is_some() {
            let max = self.max_timestamp_so_far()?;
            self.time_index()?.get_mut()?.maybe_append(max.timestamp, max.offset, true)?;
        }
        {
            let mut pending = self.trim_pending.lock();
            self.trim_indexes()?;
            *pending = false;
        }
        self.txn_index.write().close();
        self.log.trim()
    }
}
