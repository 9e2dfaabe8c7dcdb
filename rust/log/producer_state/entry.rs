//! One producer's state (Kafka's `ProducerStateEntry`): its epoch, the coordinator epoch of its
//! last marker, the metadata of its last [`NUM_BATCHES_TO_RETAIN`] batches, the first offset of
//! its open transaction and its last timestamp.

use super::batch_metadata::BatchMetadata;
use crate::record::batch::{RecordBatch, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP};

/// How many batches of a producer are kept for the duplicate check (Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// What a producer last wrote, as the cleaner needs it (Kafka's `LastRecord`): the last offset
/// of its last data batch, if it has one retained, and its current epoch. Plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRecord {
    /// Last offset of the producer's last data batch.
    pub last_data_offset: Option<i64>,
    /// The producer's latest epoch.
    pub producer_epoch: i16,
}

/// The state of one producer id. Mirrors Kafka's `ProducerStateEntry`: the batch metadata is
/// ordered oldest first, at most [`NUM_BATCHES_TO_RETAIN`] of them (the oldest is dropped for a
/// new one), and a change of epoch clears it. The batches live inline (a ring of five), so an
/// entry is `Copy` and copying one for an append allocates nothing.
///
/// A plain value; the `ProducerStateManager` that owns it is not thread-safe.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStateEntry {
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    last_timestamp: i64,
    current_txn_first_offset: Option<i64>,
    ring: [BatchMetadata; NUM_BATCHES_TO_RETAIN],
    head: u8,
    len: u8,
}

impl ProducerStateEntry {
    /// A producer with no epoch, no batches, coordinator epoch -1 and no timestamp
    /// (`ProducerStateEntry.empty`).
    pub fn empty(producer_id: i64) -> Self {
        Self::new(producer_id, NO_PRODUCER_EPOCH, -1, NO_TIMESTAMP, None)
    }

    /// An entry with no batch metadata.
    pub fn new(
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        last_timestamp: i64,
        current_txn_first_offset: Option<i64>,
    ) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            last_timestamp,
            current_txn_first_offset,
            ring: [BatchMetadata::default(); NUM_BATCHES_TO_RETAIN],
            head: 0,
            len: 0,
        }
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }
    /// The producer epoch (-1 when none).
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }
    /// The coordinator epoch of the last transaction marker (-1 when none).
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }
    /// The max timestamp of the last batch or the marker's timestamp, whichever came last.
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp
    }
    /// The first offset of the producer's open transaction.
    pub fn current_txn_first_offset(&self) -> Option<i64> {
        self.current_txn_first_offset
    }

    /// Whether no batch metadata is kept (a new epoch, or only a marker seen).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kept batches, oldest first.
    pub fn batch_metadata(&self) -> impl DoubleEndedIterator<Item = &BatchMetadata> + ExactSizeIterator + '_ {
        (0..usize::from(self.len)).map(move |i| &self.ring[(usize::from(self.head) + i) % NUM_BATCHES_TO_RETAIN])
    }

    fn first_batch(&self) -> Option<&BatchMetadata> {
        self.batch_metadata().next()
    }

    fn last_batch(&self) -> Option<&BatchMetadata> {
        self.batch_metadata().next_back()
    }

    /// The first sequence of the oldest kept batch, or -1.
    pub fn first_seq(&self) -> i32 {
        self.first_batch().map_or(NO_SEQUENCE, BatchMetadata::first_seq)
    }
    /// The last sequence of the newest kept batch, or -1.
    pub fn last_seq(&self) -> i32 {
        self.last_batch().map_or(NO_SEQUENCE, |b| b.last_seq)
    }
    /// The first offset of the oldest kept batch, or -1.
    pub fn first_data_offset(&self) -> i64 {
        self.first_batch().map_or(-1, BatchMetadata::first_offset)
    }
    /// The last offset of the newest kept batch, or -1.
    pub fn last_data_offset(&self) -> i64 {
        self.last_batch().map_or(-1, |b| b.last_offset)
    }
    /// The offset delta of the newest kept batch, or 0.
    pub fn last_offset_delta(&self) -> i32 {
        self.last_batch().map_or(0, |b| b.offset_delta)
    }

    /// This entry's epoch, coordinator epoch, timestamp and open transaction under
    /// `producer_id`, with no batches (`withProducerId`): where an append starts.
    pub fn with_producer_id(&self, producer_id: i64) -> Self {
        Self::new(
            producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )
    }

    /// Records a batch (`addBatch`): a new epoch clears the kept batches first; the timestamp
    /// becomes the batch's.
    pub fn add_batch(
        &mut self,
        producer_epoch: i16,
        last_seq: i32,
        last_offset: i64,
        offset_delta: i32,
        timestamp: i64,
    ) {
        self.maybe_update_producer_epoch(producer_epoch);
        self.push_batch(BatchMetadata::new(last_seq, last_offset, offset_delta, timestamp));
        self.last_timestamp = timestamp;
    }

    /// Takes `producer_epoch`, clearing the batches when it differs; returns whether it did.
    pub fn maybe_update_producer_epoch(&mut self, producer_epoch: i16) -> bool {
        if self.producer_epoch == producer_epoch {
            return false;
        }
        self.head = 0;
        self.len = 0;
        self.producer_epoch = producer_epoch;
        true
    }

    fn push_batch(&mut self, batch: BatchMetadata) {
        if usize::from(self.len) == NUM_BATCHES_TO_RETAIN {
            self.head = ((usize::from(self.head) + 1) % NUM_BATCHES_TO_RETAIN) as u8;
            self.len -= 1;
        }
        let slot = (usize::from(self.head) + usize::from(self.len)) % NUM_BATCHES_TO_RETAIN;
        self.ring[slot] = batch;
        self.len += 1;
    }

    /// Folds an append's result into this entry (`update(ProducerStateEntry)`): its epoch
    /// (clearing the batches when it changed), its batches after the kept ones, its coordinator
    /// epoch, open transaction and timestamp.
    pub fn update(&mut self, next: &ProducerStateEntry) {
        self.maybe_update_producer_epoch(next.producer_epoch);
        for b in next.batch_metadata() {
            self.push_batch(*b);
        }
        self.coordinator_epoch = next.coordinator_epoch;
        self.current_txn_first_offset = next.current_txn_first_offset;
        self.last_timestamp = next.last_timestamp;
    }

    /// What a transaction marker does (`update(epoch, coordinatorEpoch, timestamp)`): takes the
    /// marker's epoch (a bump clears the batches), its coordinator epoch and timestamp, and
    /// closes the open transaction.
    pub fn update_for_marker(&mut self, producer_epoch: i16, coordinator_epoch: i32, timestamp: i64) {
        self.maybe_update_producer_epoch(producer_epoch);
        self.coordinator_epoch = coordinator_epoch;
        self.current_txn_first_offset = None;
        self.last_timestamp = timestamp;
    }

    /// Opens a transaction at `first_offset`.
    pub fn set_current_txn_first_offset(&mut self, first_offset: i64) {
        self.current_txn_first_offset = Some(first_offset);
    }

    /// The kept batch a retried `batch` duplicates (`findDuplicateBatch`): same epoch, same
    /// first and last sequence.
    pub fn find_duplicate_batch(&self, batch: &RecordBatch<'_>) -> Option<BatchMetadata> {
        self.find_duplicate(batch.producer_epoch(), batch.base_sequence(), batch.last_sequence())
    }

    /// The kept batch with `producer_epoch` (the entry's) and exactly the sequence range
    /// `first_seq..=last_seq`.
    pub fn find_duplicate(&self, producer_epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batch_metadata().find(|b| b.first_seq() == first_seq && b.last_seq == last_seq).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_five_batches_oldest_first() {
        let mut e = ProducerStateEntry::empty(7);
        for i in 0..8 {
            e.add_batch(0, i, i64::from(i) * 10, 0, 100 + i64::from(i));
        }
        let seqs: Vec<i32> = e.batch_metadata().map(|b| b.last_seq).collect();
        assert_eq!(seqs, [3, 4, 5, 6, 7]);
        assert_eq!((e.first_seq(), e.last_seq()), (3, 7));
        assert_eq!((e.first_data_offset(), e.last_data_offset()), (30, 70));
        assert_eq!(e.last_timestamp(), 107);
        // Every kept batch is found as a duplicate, an evicted one is not.
        assert_eq!(e.find_duplicate(0, 5, 5).map(|b| b.last_offset), Some(50));
        assert_eq!(e.find_duplicate(0, 2, 2), None);
        assert_eq!(e.find_duplicate(1, 5, 5), None, "another epoch is never a duplicate");
    }

    #[test]
    fn an_epoch_change_clears_the_batches() {
        let mut e = ProducerStateEntry::empty(7);
        e.add_batch(0, 4, 10, 4, 1);
        assert!(!e.is_empty());
        e.update_for_marker(1, 3, 2);
        assert!(e.is_empty());
        assert_eq!((e.producer_epoch(), e.coordinator_epoch(), e.last_seq()), (1, 3, -1));
        assert_eq!((e.first_data_offset(), e.last_offset_delta()), (-1, 0));
    }

    #[test]
    fn update_appends_the_next_batches_and_takes_its_fields() {
        let mut e = ProducerStateEntry::empty(7);
        for i in 0..4 {
            e.add_batch(0, i, i64::from(i), 0, 0);
        }
        let mut next = e.with_producer_id(7);
        assert!(next.is_empty());
        next.add_batch(0, 4, 4, 0, 9);
        next.add_batch(0, 5, 5, 0, 10);
        next.set_current_txn_first_offset(4);
        e.update(&next);
        let seqs: Vec<i32> = e.batch_metadata().map(|b| b.last_seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        assert_eq!((e.current_txn_first_offset(), e.last_timestamp()), (Some(4), 10));
    }
}
