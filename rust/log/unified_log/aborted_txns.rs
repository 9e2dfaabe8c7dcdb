//! The aborted transactions of a log's `.txnindex` files across segments: what Kafka's cleaner
//! asks (`UnifiedLog.collectAbortedTransactions`) and what a `read_committed` fetch returns
//! with its records (the collection in Kafka's `LocalLog.addAbortedTransactions`).
//!
//! Thread-safety: reads only; each segment's index is read under its own read lock, so a
//! concurrent append or truncation is seen whole or not at all.

use super::arguments::check_offset;
use super::UnifiedLog;
use crate::error::Result;
use crate::index::transaction_index::AbortedTxn;

impl UnifiedLog {
    /// Kafka's `UnifiedLog.collectAbortedTransactions(startOffset, upperBoundOffset)`: the
    /// aborted transactions ending at or after the log start offset and starting before
    /// `upper_bound_offset`, read from the segment holding `start_offset` on until the search
    /// is complete. The cleaner's question.
    ///
    /// # Errors
    /// `CorruptIndex` for an entry of an unknown version; `LogClosed`; `Io`.
    pub fn collect_aborted_transactions(&self, start_offset: i64, upper_bound_offset: i64) -> Result<Vec<AbortedTxn>> {
        self.check_open()?;
        let collected =
            self.local.collect_aborted_transactions(self.log_start_offset(), start_offset, upper_bound_offset);
        self.handle_io(collected)
    }

    /// The aborted transactions that overlap `[start_offset, end_offset)`: their ABORT marker at
    /// or after `start_offset`, their first offset before `end_offset`, in marker order per
    /// segment. A `read_committed` fetch at `start_offset` whose records end at `end_offset`
    /// returns these (Kafka's `addAbortedTransactions`). A start below the first segment reads
    /// from the first segment; an empty range has none.
    ///
    /// # Errors
    /// `InvalidArgument` for a negative offset; `CorruptIndex` for an entry of an unknown
    /// version; `LogClosed`; `Io`.
    pub fn aborted_transactions(&self, start_offset: i64, end_offset: i64) -> Result<Vec<AbortedTxn>> {
        check_offset("start_offset", start_offset, "the start of the range")?;
        check_offset("end_offset", end_offset, "the end of the range")?;
        self.check_open()?;
        if end_offset <= start_offset {
            return Ok(Vec::new());
        }
        let first_base = self.local.segments().first_segment().map_or(start_offset, |s| s.base_offset());
        let collected = self.local.collect_aborted_transactions(start_offset, start_offset.max(first_base), end_offset);
        self.handle_io(collected)
    }
}
