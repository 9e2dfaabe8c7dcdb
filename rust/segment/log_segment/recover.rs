//! Recovery of one segment (Kafka's `LogSegment.recover`): every batch validated from the
//! file's start, the file truncated at the first invalid byte, both indexes rebuilt in memory
//! (`index::rebuild`) and each written once, at its final size; and the index rebuild alone
//! that a check at first use runs (`log_segment/index_check.rs`), which leaves the data as it is.
//!
//! Thread-safety: the owner (the loader, or the log under its write lock) serialises recovery;
//! the rebuild at first use runs under the segment's index-check lock.

use std::sync::atomic::Ordering;

use super::{IndexWrite, LogSegment, RecoveredBatchFn};
use crate::error::{Error, Result};
use crate::index::lazy::RewriteMode;
use crate::index::rebuild::IndexRebuild;
use crate::index::time_index::TimestampOffset;

/// What [`LogSegment::scan_valid_prefix`] found: the valid prefix of the `.log` and the index
/// entries rebuilt over it.
pub(super) struct ValidPrefix {
    pub(super) rebuilt: IndexRebuild,
    /// Bytes of valid batches from the file's start.
    valid: u64,
    /// The last valid batch's last offset (`i64::MIN` if none).
    last_offset: i64,
    /// Position of the batch of the last offset index entry.
    last_index_entry: u64,
    max: TimestampOffset,
    /// Records in the valid batches.
    count: u64,
    /// The first valid batch's max timestamp.
    first_ts: Option<i64>,
    /// Why the valid prefix ends before the file does, if it does.
    invalid: Option<String>,
}

thread_local! {
    /// The read buffer of the last segment recovery on this thread, reused by the next (a
    /// loader thread recovers segment after segment): no allocation, fill or `munmap` each.
    static SCAN_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The largest scan buffer a thread keeps between recoveries.
const MAX_KEPT_SCAN_BUFFER: usize = 16 << 20;

impl LogSegment {
    /// Rebuilds both indexes from the data, validating every batch, and truncates the file at
    /// the first invalid byte (`LogSegment.recover`). Returns the number of bytes truncated.
    ///
    /// Without producer state to rebuild it from, the `.txnindex` is kept (Kafka's broker and
    /// kafkalog's cleaner wrote it), cut to the transactions whose markers survive; see
    /// `recover_rebuilding_txn_index` (`log_segment/txn.rs`).
    pub fn recover(&self) -> Result<u64> {
        self.recover_with(None, IndexWrite::Atomic)
    }

    /// The scan of [`Self::recover`]: the indexes are rebuilt in memory (`index::rebuild`) and
    /// each file written once, at its final size, when the scan is done; an error during the
    /// scan leaves the index files as they were.
    pub(super) fn recover_with(
        &self,
        producer_state: Option<&mut RecoveredBatchFn<'_>>,
        write: IndexWrite,
    ) -> Result<u64> {
        if self.read_only {
            return Err(Error::ReadOnly { path: self.path() });
        }
        let reset_txn_index = producer_state.is_some();
        if reset_txn_index {
            self.txn_index.write().reset()?;
        }
        let scan = match self.scan_valid_prefix(producer_state) {
            Ok(scan) => scan,
            Err(e) => {
                // The index files stay as they were; missing ones are created, as Kafka's reset
                // does before its scan, so a split renames and deletes them with the segment.
                self.offset_index.create_empty_if_missing()?;
                self.time_index.create_empty_if_missing()?;
                return Err(e);
            }
        };
        let valid = scan.valid;
        let truncated = self.log.size() - valid;
        if truncated > 0 {
            self.warn_invalid_tail(valid, scan.invalid);
        }
        self.log.truncate_to(valid)?;
        // No marker past the valid data stays indexed (one cut with the data, or one whose
        // index entry reached the disk before it did); a rebuilt index has none.
        let next_offset = if valid == 0 { self.base_offset } else { scan.last_offset.saturating_add(1) };
        self.txn_index.write().truncate_to(next_offset)?;
        self.write_rebuilt_indexes(&scan.rebuilt, write)?;
        let mut st = self.state.lock();
        st.max_timestamp_so_far = Some(scan.max);
        st.bytes_since_last_index_entry = valid - scan.last_index_entry;
        st.record_count = Some(scan.count);
        st.rolling_based_timestamp = scan.first_ts;
        st.recovered_end = Some((next_offset, valid));
        Ok(truncated)
    }

    /// Scans the `.log` from its start to the first invalid byte, rebuilding both indexes in
    /// memory as `LogSegment.recover` appends them, and showing `producer_state` each valid v2
    /// batch (its aborted transactions go to the `.txnindex`). Framing errors (a size below the
    /// minimum, an unknown magic) end the valid prefix; an I/O or offset-overflow error is
    /// returned.
    pub(super) fn scan_valid_prefix(
        &self,
        mut producer_state: Option<&mut RecoveredBatchFn<'_>>,
    ) -> Result<ValidPrefix> {
        let mut p = ValidPrefix {
            rebuilt: self.empty_index_rebuild(),
            valid: 0,
            last_offset: i64::MIN,
            last_index_entry: 0,
            max: TimestampOffset { timestamp: -1, offset: -1 },
            count: 0,
            first_ts: None,
            invalid: None,
        };
        let mut buf = SCAN_BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
        let scan = self.log.for_each_batch(0, self.log.size(), &mut buf, |pos, batch| {
            if let Some(why) = self.recovery_problem(&batch, pos, p.valid, p.last_offset) {
                p.invalid = Some(why);
                return Ok(false);
            }
            p.last_offset = batch.last_offset();
            // Kafka's ensureOffsetInRange: the caller splits the segment (LogLoader).
            if !self.can_convert_to_relative_offset(batch.last_offset()) {
                return Err(Error::OffsetOverflow { base_offset: self.base_offset, offset: batch.last_offset() });
            }
            if batch.max_timestamp() > p.max.timestamp {
                p.max = TimestampOffset { timestamp: batch.max_timestamp(), offset: batch.last_offset() };
            }
            if p.valid - p.last_index_entry > self.index_interval_bytes {
                p.rebuilt.append_offset(batch.last_offset(), p.valid)?;
                p.rebuilt.maybe_append_time(p.max.timestamp, p.max.offset, false)?;
                p.last_index_entry = p.valid;
            }
            p.first_ts.get_or_insert(batch.max_timestamp());
            p.count += batch.record_count()?;
            p.valid += batch.size_in_bytes() as u64;
            if let (Some(f), true) = (producer_state.as_mut(), batch.magic() >= 2) {
                if let Some(aborted) = f(&batch)? {
                    self.update_txn_index(aborted)?;
                }
            }
            Ok(true)
        });
        if buf.capacity() <= MAX_KEPT_SCAN_BUFFER {
            SCAN_BUFFER.with(|b| *b.borrow_mut() = buf);
        }
        match scan {
            Err(e @ Error::CorruptRecord { .. }) => p.invalid = Some(e.to_string()),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        p.rebuilt.maybe_append_time(p.max.timestamp, p.max.offset, true)?;
        Ok(p)
    }

    /// Writes the indexes a scan rebuilt: the time index, then the offset index (a crash
    /// before the latter's write leaves it as it was, so a segment recovered for a missing or
    /// damaged offset index is recovered again). Unless `write` fsyncs them, the segment's next
    /// flush does.
    pub(super) fn write_rebuilt_indexes(&self, rebuilt: &IndexRebuild, write: IndexWrite) -> Result<()> {
        let (time_bytes, offset_bytes) = (rebuilt.time_index_bytes(), rebuilt.offset_index_bytes());
        let max_size = self.offset_index.max_index_size();
        // Both fit their full size (else a plain rewrite, which keeps any length).
        let fit = offset_bytes.len() <= max_size / 8 * 8 && time_bytes.len() + 12 <= max_size / 12 * 12;
        if write != IndexWrite::AtomicDurable {
            self.indexes_unsynced.store(true, Ordering::Release);
        }
        if write == IndexWrite::InPlaceActive && fit {
            self.time_index.rewrite_mapped(time_bytes)?;
            self.offset_index.rewrite_mapped(offset_bytes)?;
        } else {
            let how = match write {
                IndexWrite::InPlace | IndexWrite::InPlaceActive => RewriteMode::InPlace,
                IndexWrite::Atomic => RewriteMode::Replace,
                IndexWrite::AtomicDurable => RewriteMode::ReplaceDurably,
            };
            self.time_index.rewrite(time_bytes, how)?;
            self.offset_index.rewrite(offset_bytes, how)?;
        }
        self.index_check.done();
        Ok(())
    }

    /// Both indexes of this segment with no entries yet: what a scan fills, or (unfilled) what a
    /// rebuild that failed leaves (`log_segment/index_check.rs`).
    pub(super) fn empty_index_rebuild(&self) -> IndexRebuild {
        IndexRebuild::new(
            self.base_offset,
            self.offset_index.max_index_size(),
            self.offset_index.path(),
            self.time_index.path(),
        )
    }

    /// Why recovery must stop at `batch` (found at `position`, where the valid prefix ends at
    /// `valid`), if it must: it does not follow on, it fails its checks (CRC, sizes), or its
    /// offsets go back. Offsets only grow within a segment, from its base offset; a damaged base
    /// offset, which the CRC does not cover, would otherwise serve the batch under the wrong
    /// offsets (Kafka does not check this).
    pub(crate) fn recovery_problem(
        &self,
        batch: &crate::record::records::AnyBatch<'_>,
        position: u64,
        valid: u64,
        last_offset: i64,
    ) -> Option<String> {
        if position != valid {
            return Some(format!("a batch at byte offset {position} does not follow the one before"));
        }
        if let Err(e) = batch.ensure_valid() {
            return Some(e.to_string());
        }
        match batch.base_offset() {
            Ok(b) if b < self.base_offset => {
                Some(format!("the batch's base offset {b} is below the segment's base offset {}", self.base_offset))
            }
            Ok(b) if b <= last_offset => {
                Some(format!("the batch's base offset {b} is not above the previous batch's last offset {last_offset}"))
            }
            _ => None,
        }
    }

    /// Kafka's warning for a recovery that truncates, with the file, the position and the bytes.
    fn warn_invalid_tail(&self, valid: u64, invalid: Option<String>) {
        let reason = invalid.unwrap_or_else(|| self.describe_incomplete_batch(valid));
        let size = self.log.size();
        log::warn!(
            target: super::LOG_TARGET,
            "Found invalid messages in log segment {} at byte offset {valid}: {reason}. \
             Truncating the segment from {size} to {valid} bytes ({} bytes discarded)",
            self.path().display(),
            size - valid
        );
    }

    /// Why the bytes at `position` are not a complete batch (recovery found no invalid batch, so
    /// the scan stopped at a batch that runs past the end of the file, or at a partial header).
    fn describe_incomplete_batch(&self, position: u64) -> String {
        let remaining = self.log.size().saturating_sub(position);
        let mut header = Vec::new();
        match self
            .log
            .read_into(position, 17, &mut header)
            .map(|n| crate::record::records::next_batch_size(&header[..n]))
        {
            Ok(Ok(Some(size))) => {
                format!("a batch of {size} bytes starts there, but only {remaining} bytes remain (a torn write or a damaged size)")
            }
            Ok(Ok(None)) => format!("the last {remaining} bytes are too few for a batch header (a torn write)"),
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("the bytes there cannot be read ({e})"),
        }
    }
}
