//! `read_committed` reads: the bound of each fetch isolation, the aborted transactions a
//! `TxnCommitted` fetch returns with its records, and the filter a `read_committed` consumer
//! runs over the batches it receives (the aborted-transaction half of Kafka's consumer
//! `CompletedFetch`), so that every read API leaves out aborted and control records exactly as
//! a Kafka consumer does.
//!
//! Thread-safety: `CommittedFilter` is a plain value owned by one read; the `UnifiedLog`
//! methods here only read (each segment's `.txnindex` under its own read lock).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use super::{FetchDataInfo, FetchIsolation, Offsets, UnifiedLog};
use crate::error::Result;
use crate::index::transaction_index::AbortedTxn;
use crate::record::control::ControlRecordType;
use crate::record::records::{AnyBatch, BatchIter};

/// Which batches a `read_committed` consumer returns records from. Mirrors the
/// `isolation.level=read_committed` logic of Kafka's consumer `CompletedFetch`
/// (`consumeAbortedTransactionsUpTo`, `containsAbortMarker`, `isBatchAborted`):
/// - the aborted transactions of a fetch are queued by first offset; before each batch with a
///   producer id, those starting at or before its last offset mark their producer aborted;
/// - an ABORT marker of a producer ends its aborted run;
/// - a transactional batch of an aborted producer is skipped, and so is every control batch.
///
/// Non-transactional batches and committed transactional batches are kept. The batches must be
/// shown in log order, from the fetch offset the aborted transactions were collected for.
///
/// Thread-safety: a plain value (`Send`), used by one read at a time.
#[derive(Debug, Default)]
pub struct CommittedFilter {
    /// Aborted transactions not yet reached, smallest first offset first.
    pending: BinaryHeap<Reverse<(i64, i64)>>,
    /// Producers inside an aborted transaction at the current batch.
    aborted_producers: HashSet<i64>,
    /// Decompression buffer for control batches.
    scratch: Vec<u8>,
}

impl CommittedFilter {
    /// A filter for a fetch whose aborted transactions are `aborted`.
    #[must_use]
    pub fn new(aborted: impl IntoIterator<Item = AbortedTxn>) -> Self {
        let mut filter = CommittedFilter::default();
        filter.add(aborted);
        filter
    }

    /// Queues more aborted transactions (a scan collects them segment by segment).
    pub fn add(&mut self, aborted: impl IntoIterator<Item = AbortedTxn>) {
        self.pending.extend(aborted.into_iter().map(|t| Reverse((t.first_offset, t.producer_id))));
    }

    /// Whether a `read_committed` consumer returns the records of `batch` (the next batch of the
    /// fetch): false for control batches and for transactional batches of an aborted
    /// transaction.
    ///
    /// # Errors
    /// `CorruptRecord` for a control batch that does not decompress, `InvalidRecord` for a
    /// control record key Kafka's `ControlRecordType.parse` refuses.
    pub fn is_visible(&mut self, batch: &AnyBatch<'_>) -> Result<bool> {
        let AnyBatch::V2(b) = batch else { return Ok(true) };
        if b.has_producer_id() {
            self.consume_up_to(b.last_offset());
            let producer_id = b.producer_id();
            if b.is_control() && ControlRecordType::of_batch(b, &mut self.scratch)? == Some(ControlRecordType::Abort) {
                self.aborted_producers.remove(&producer_id);
            } else if b.is_transactional() && self.aborted_producers.contains(&producer_id) {
                return Ok(false);
            }
        }
        Ok(!b.is_control())
    }

    /// Kafka's `consumeAbortedTransactionsUpTo`.
    fn consume_up_to(&mut self, offset: i64) {
        while let Some(Reverse((first, producer_id))) = self.pending.peek().copied() {
            if first > offset {
                break;
            }
            self.pending.pop();
            self.aborted_producers.insert(producer_id);
        }
    }
}

impl UnifiedLog {
    /// The offset reads of `isolation` stop at (Kafka's `maxOffsetMetadata` in
    /// `UnifiedLog.read`): the log end, the high watermark or the last stable offset. This is
    /// also what a Kafka consumer of that isolation level gets as the partition's end offset.
    pub fn fetch_upper_bound(&self, isolation: FetchIsolation) -> i64 {
        let o = *self.offsets.read();
        self.bound_of(isolation, &o)
    }

    /// `fetch_upper_bound` against a snapshot of the offsets: the last stable offset never
    /// passes the snapshot's high watermark.
    pub(super) fn bound_of(&self, isolation: FetchIsolation, o: &Offsets) -> i64 {
        match isolation {
            FetchIsolation::LogEnd => o.log_end,
            FetchIsolation::HighWatermark => o.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset().min(o.high_watermark),
        }
    }

    /// For a `TxnCommitted` read, adds the aborted transactions that overlap the records read
    /// (Kafka's `LocalLog.addAbortedTransactions`): their marker at or after the fetch offset,
    /// their first offset before the offset after the last batch read. Kafka's broker bounds the
    /// search by the next offset-index entry past the bytes read instead, which may add
    /// transactions that start after them; a consumer never reaches those, so both read the same.
    pub(super) fn with_aborted_transactions(
        &self,
        mut info: FetchDataInfo,
        isolation: FetchIsolation,
    ) -> Result<FetchDataInfo> {
        if isolation != FetchIsolation::TxnCommitted {
            return Ok(info);
        }
        let mut upper = info.fetch_offset;
        for item in BatchIter::new(&info.records) {
            upper = item?.1.next_offset();
        }
        let aborted = if upper > info.fetch_offset {
            self.local.collect_aborted_transactions(info.fetch_offset, info.fetch_offset, upper)?
        } else {
            Vec::new()
        };
        info.aborted_transactions = Some(aborted);
        Ok(info)
    }

    /// Queues into `filter` the aborted transactions a scan from `start` needs before it shows
    /// batches below `upper`: those starting in `[*collected, upper)` (those starting earlier
    /// were queued before), then moves `*collected` to `upper`.
    pub(super) fn collect_for_scan(
        &self,
        filter: &mut CommittedFilter,
        start: i64,
        collected: &mut i64,
        upper: i64,
    ) -> Result<()> {
        if upper <= *collected {
            return Ok(());
        }
        // Entries with a marker at or after `*collected` (>= start) and a first offset below
        // `upper`; those starting before `*collected` are queued already, unless this is the
        // first call, whose lower end is the scan's start.
        let from = *collected;
        let found = self.local.collect_aborted_transactions(from, from, upper)?;
        let first_call = from == start;
        filter.add(found.into_iter().filter(|t| first_call || t.first_offset >= from));
        *collected = upper;
        Ok(())
    }
}
