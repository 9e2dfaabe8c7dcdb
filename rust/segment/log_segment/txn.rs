//! A segment's `.txnindex` (the `TransactionIndex` part of Kafka's `LogSegment`): the
//! aborted transactions whose ABORT markers lie in the segment. The segment renames, truncates,
//! flushes and deletes it with its other files (`log_segment.rs`); this holds what the log
//! asks of it.
//!
//! Thread-safety: as `LogSegment`: reads share the index's read lock; the append hook takes
//! its write lock and, like every segment write, runs under the log's write lock.

use std::path::PathBuf;

use parking_lot::RwLockReadGuard;

use super::{IndexWrite, LogSegment, RecoveredBatchFn};
use crate::error::Result;
use crate::index::transaction_index::{AbortedTxn, TransactionIndex, TxnIndexSearchResult};

impl LogSegment {
    /// The segment's transaction index (Kafka's `txnIndex()`).
    pub fn txn_index(&self) -> RwLockReadGuard<'_, TransactionIndex> {
        self.txn_index.read()
    }

    /// Records that the segment's `.txnindex` does not exist (the loader listed the directory),
    /// so recovery and reads find it empty without looking.
    pub fn txn_index_known_missing(&mut self) {
        self.txn_index.get_mut().known_missing();
    }

    /// The segment's `.txnindex` path, with the same suffix as its `.log` file (the file exists
    /// only once the segment indexed an aborted transaction, or another writer made it).
    pub fn txn_index_path(&self) -> PathBuf {
        self.txn_index.read().path().to_path_buf()
    }

    /// [`LogSegment::recover`] that also rebuilds the `.txnindex` as Kafka's does: the index is
    /// reset first, and `producer_state` is shown every valid v2 batch in order (Kafka's
    /// `updateProducerState`); the aborted transaction it returns for an ABORT marker, with the
    /// last stable offset then, is appended (Kafka's `updateTxnIndex`).
    ///
    /// # Errors
    /// As [`LogSegment::recover`], and what `producer_state` returns.
    /// `write` says how the rebuilt offset and time indexes are written (see [`IndexWrite`]).
    pub fn recover_rebuilding_txn_index(
        &self,
        producer_state: &mut RecoveredBatchFn<'_>,
        write: IndexWrite,
    ) -> Result<u64> {
        self.recover_with(Some(producer_state), write)
    }

    /// Indexes an aborted transaction whose ABORT marker was appended to this segment (Kafka's
    /// `updateTxnIndex` for an aborted `CompletedTxn`; committed transactions index nothing).
    /// Producer state builds `aborted` from the completed transaction and the last stable
    /// offset then. The first one creates the file.
    ///
    /// # Errors
    /// `InvalidOffset` naming the file if its last offset is not above the previous entry's;
    /// `ReadOnly` on a read-only segment; `Io`.
    pub fn update_txn_index(&self, aborted: AbortedTxn) -> Result<()> {
        log::trace!(
            "Writing aborted transaction {aborted} to transaction index {}",
            self.txn_index.read().path().display()
        );
        self.txn_index.write().append(aborted)
    }

    /// The aborted transactions of this segment that overlap `[fetch_offset,
    /// upper_bound_offset)`, and whether the search can stop here (Kafka's
    /// `LogSegment.collectAbortedTxns`).
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and position of an entry of an unknown version; `Io`.
    pub fn collect_aborted_txns(&self, fetch_offset: i64, upper_bound_offset: i64) -> Result<TxnIndexSearchResult> {
        self.txn_index.read().collect_aborted_txns(fetch_offset, upper_bound_offset)
    }

    /// Kafka's `txnIndex.sanityCheck()` (part of `LogSegment.sanityCheck`): the file holds whole
    /// entries of a known version, none below the segment's base offset.
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and what is wrong; `Io`.
    pub fn sanity_check_txn_index(&self) -> Result<()> {
        self.txn_index.read().sanity_check()
    }
}
