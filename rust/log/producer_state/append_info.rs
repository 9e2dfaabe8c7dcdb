//! The checks and state changes of one producer's batches in one append (Kafka's
//! `ProducerAppendInfo`, as of Kafka 4.3.1 with transactions version 2).

use std::sync::Arc;

use super::entry::ProducerStateEntry;
use super::txn_metadata::{CompletedTxn, LogOffsetMetadata, TxnMetadata};
use super::verification::VerificationStateEntry;
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::log::log_validator::AppendOrigin;
use crate::record::batch::{RecordBatch, NO_PRODUCER_EPOCH, NO_SEQUENCE};
use crate::record::control::{ControlRecordType, EndTransactionMarker};

/// The transaction version is not known (Kafka's `TransactionVersion.TV_UNKNOWN`): allowed only
/// for replication, where it counts as version 0.
pub const TV_UNKNOWN: i16 = -1;
/// Transactions version 0 (before KIP-890).
pub const TV_0: i16 = 0;
/// Transactions version 1 (KIP-890 part 1: server-side verification).
pub const TV_1: i16 = 1;
/// Transactions version 2 (KIP-890 part 2): the coordinator bumps the producer epoch at the end
/// of every transaction, so a marker must carry a higher epoch than the data it closes.
pub const TV_2: i16 = 2;

/// Validates the batches one producer appends and accumulates the state they leave (Kafka's
/// `ProducerAppendInfo`). It starts from a copy of the producer's entry; nothing changes in the
/// `ProducerStateManager` until it is handed to `ProducerStateManager::update`, so a refused
/// append leaves producer state untouched.
///
/// What is checked depends on the [`AppendOrigin`], as in Kafka: `Client` appends get the
/// epoch, sequence and transaction checks; `Coordinator` appends (markers) the epoch and
/// coordinator-epoch checks but no sequences; `Replication` appends (followers and recovery)
/// are trusted: an old epoch or a fenced coordinator is only logged.
///
/// Not thread-safe; lives for one append, under the log's write lock.
#[derive(Debug, Clone)]
pub struct ProducerAppendInfo {
    topic_partition: Arc<TopicPartition>,
    producer_id: i64,
    current_entry: ProducerStateEntry,
    origin: AppendOrigin,
    verification_state_entry: Option<VerificationStateEntry>,
    transactions: Vec<TxnMetadata>,
    updated_entry: ProducerStateEntry,
}

impl ProducerAppendInfo {
    /// Starts from `current_entry`, the producer's state after its last append (an empty entry
    /// for a producer the partition does not know), and the producer's verification entry, if
    /// one is pending.
    pub fn new(
        topic_partition: Arc<TopicPartition>,
        producer_id: i64,
        current_entry: ProducerStateEntry,
        origin: AppendOrigin,
        verification_state_entry: Option<VerificationStateEntry>,
    ) -> Self {
        ProducerAppendInfo {
            topic_partition,
            producer_id,
            current_entry,
            origin,
            verification_state_entry,
            transactions: Vec::new(),
            updated_entry: current_entry.with_producer_id(producer_id),
        }
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// Where the append came from.
    pub fn origin(&self) -> AppendOrigin {
        self.origin
    }

    /// The producer's state as the appended batches leave it, batches of this append only
    /// (`toEntry`).
    pub fn to_entry(&self) -> &ProducerStateEntry {
        &self.updated_entry
    }

    /// The transactions this append opened, in order (`startedTransactions`).
    pub fn started_transactions(&self) -> &[TxnMetadata] {
        &self.transactions
    }

    /// Validates and records one batch (`append`): a control batch is a COMMIT / ABORT marker
    /// (returned as the transaction it completed, if one was open; an empty control batch, left
    /// by the cleaner, does nothing); a data batch goes to [`Self::append_data_batch`].
    /// `first_offset_metadata` places the batch in the log when the caller knows where (leader
    /// appends of transactional batches); `transaction_version` is the marker's (see
    /// [`TV_UNKNOWN`]), unused for data.
    pub fn append(
        &mut self,
        batch: &RecordBatch<'_>,
        first_offset_metadata: Option<LogOffsetMetadata>,
        transaction_version: i16,
    ) -> Result<Option<CompletedTxn>> {
        if batch.is_control() {
            let mut scratch = Vec::new();
            let records = batch.records(&mut scratch)?;
            let Some(record) = records.first() else { return Ok(None) };
            let marker = EndTransactionMarker::from_record(record)?;
            return self.append_end_txn_marker(
                marker,
                batch.producer_epoch(),
                batch.base_offset(),
                record.timestamp,
                transaction_version,
            );
        }
        let first = first_offset_metadata.unwrap_or_else(|| LogOffsetMetadata::offset_only(batch.base_offset()));
        self.append_data_batch(
            batch.producer_epoch(),
            batch.base_sequence(),
            batch.last_sequence(),
            batch.max_timestamp(),
            first,
            batch.last_offset(),
            batch.is_transactional(),
        )?;
        Ok(None)
    }

    /// Validates and records a data batch (`appendDataBatch`): the epoch check, the sequence
    /// check for client appends, and the transaction rules: a transactional batch with no open
    /// transaction opens one at its first offset; a non-transactional batch while one is open
    /// is `InvalidTxnState`.
    #[allow(clippy::too_many_arguments)]
    pub fn append_data_batch(
        &mut self,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
        last_timestamp: i64,
        first_offset_metadata: LogOffsetMetadata,
        last_offset: i64,
        is_transactional: bool,
    ) -> Result<()> {
        let first_offset = first_offset_metadata.message_offset;
        self.check_producer_epoch(epoch, first_offset, TV_UNKNOWN)?;
        if self.origin == AppendOrigin::Client {
            self.check_sequence(epoch, first_seq, first_offset)?;
        }
        let open = self.updated_entry.current_txn_first_offset();
        if open.is_some() && !is_transactional {
            return Err(self.invalid_txn_state(format!(
                "expected a transactional write at offset {first_offset}: its transaction opened at offset {} is \
                 still open",
                open.unwrap_or(-1)
            )));
        }
        let offset_delta = i32::try_from(last_offset - first_offset).map_err(|_| {
            Error::invalid_offset(format!(
                "batch of producer {} in {} spans offsets {first_offset}..={last_offset}, more than a batch can hold",
                self.producer_id, self.topic_partition
            ))
        })?;
        self.updated_entry.add_batch(epoch, last_seq, last_offset, offset_delta, last_timestamp);
        if open.is_none() && is_transactional {
            self.updated_entry.set_current_txn_first_offset(first_offset);
            self.transactions.push(TxnMetadata::new(self.producer_id, first_offset_metadata));
        }
        Ok(())
    }

    /// Validates and records a COMMIT / ABORT marker at `offset` (`appendEndTxnMarker`): the
    /// epoch check (with transactions version 2 the marker must bump the epoch, except a retried
    /// marker of a transaction already closed), the coordinator-epoch check, then the marker's
    /// epoch, coordinator epoch and timestamp become the producer's and its transaction closes.
    /// Returns the transaction it closed, if one was open (an empty transaction leaves nothing
    /// for the LSO or the transaction index). `transaction_version` may be [`TV_UNKNOWN`] only
    /// for replication.
    pub fn append_end_txn_marker(
        &mut self,
        marker: EndTransactionMarker,
        producer_epoch: i16,
        offset: i64,
        timestamp: i64,
        transaction_version: i16,
    ) -> Result<Option<CompletedTxn>> {
        if transaction_version == TV_UNKNOWN && self.origin != AppendOrigin::Replication {
            return Err(Error::invalid_argument(
                "transaction_version",
                transaction_version,
                format!(
                    "must be given (0, 1 or 2) for a marker from origin {:?}; only replication may leave it unknown",
                    self.origin
                ),
            ));
        }
        let version = if transaction_version == TV_UNKNOWN { TV_0 } else { transaction_version };
        self.check_producer_epoch(producer_epoch, offset, version)?;
        self.check_coordinator_epoch(marker.coordinator_epoch, offset)?;
        let completed = self.updated_entry.current_txn_first_offset().map(|first_offset| CompletedTxn {
            producer_id: self.producer_id,
            first_offset,
            last_offset: offset,
            is_aborted: marker.control_type == ControlRecordType::Abort,
        });
        self.updated_entry.update_for_marker(producer_epoch, marker.coordinator_epoch, timestamp);
        Ok(completed)
    }

    /// Kafka's `checkProducerEpoch`: data needs an epoch no older than the producer's; a
    /// transactions-version-2 marker needs a newer one, except a retry of a marker whose
    /// transaction is already closed (or at the last epoch), which is accepted. Replication only
    /// logs a violation.
    fn check_producer_epoch(&self, epoch: i16, offset: i64, transaction_version: i16) -> Result<()> {
        let current = self.updated_entry.producer_epoch();
        let invalid = if transaction_version >= TV_2 { epoch <= current } else { epoch < current };
        if !invalid {
            return Ok(());
        }
        if transaction_version >= TV_2
            && epoch == current
            && (self.updated_entry.current_txn_first_offset().is_none() || epoch == i16::MAX)
        {
            log::info!(
                "Idempotent transaction marker retry detected for producer {} epoch {epoch} in {}: the transaction \
                 is already complete, allowing the duplicate marker",
                self.producer_id,
                self.topic_partition
            );
            return Ok(());
        }
        let err = Error::InvalidProducerEpoch {
            partition: self.topic_partition.to_string(),
            producer_id: self.producer_id,
            offset,
            epoch,
            current_epoch: current,
            transaction_version,
        };
        if self.origin == AppendOrigin::Replication {
            log::warn!("{err}");
            return Ok(());
        }
        Err(err)
    }

    /// Kafka's `checkSequence` (client appends only).
    fn check_sequence(&self, epoch: i16, first_seq: i32, offset: i64) -> Result<()> {
        if let Some(v) = &self.verification_state_entry {
            if v.supports_epoch_bump() && first_seq != 0 && self.current_entry.is_empty() {
                return Err(self.out_of_order(
                    offset,
                    first_seq,
                    "expected sequence 0 for a transactions version 2 producer with no existing state".into(),
                ));
            }
            if first_seq > v.lowest_sequence() {
                let detail = format!("{} (earliest seen sequence)", v.lowest_sequence());
                return Err(self.out_of_order(offset, first_seq, detail));
            }
        }
        let updated_epoch = self.updated_entry.producer_epoch();
        if epoch != updated_epoch {
            if first_seq != 0 && updated_epoch != NO_PRODUCER_EPOCH {
                let detail = format!(
                    "but a new epoch must start at sequence 0: {epoch} (request epoch), {updated_epoch} (current \
                     producer epoch)"
                );
                return Err(self.out_of_order(offset, first_seq, detail));
            }
            return Ok(());
        }
        let current_last_seq = if !self.updated_entry.is_empty() {
            self.updated_entry.last_seq()
        } else if epoch == self.current_entry.producer_epoch() {
            self.current_entry.last_seq()
        } else {
            NO_SEQUENCE
        };
        // A producer whose records are all gone (retention, DeleteRecords) has no epoch left:
        // any sequence is accepted.
        if self.current_entry.producer_epoch() == NO_PRODUCER_EPOCH || in_sequence(current_last_seq, first_seq) {
            return Ok(());
        }
        Err(self.out_of_order(offset, first_seq, format!("{current_last_seq} (current end sequence number)")))
    }

    /// Kafka's `checkCoordinatorEpoch`: a marker from an older coordinator epoch is a zombie
    /// coordinator's; replication only logs it.
    fn check_coordinator_epoch(&self, coordinator_epoch: i32, offset: i64) -> Result<()> {
        let current = self.updated_entry.coordinator_epoch();
        if current <= coordinator_epoch {
            return Ok(());
        }
        if self.origin == AppendOrigin::Replication {
            log::info!(
                "Detected invalid coordinator epoch for producerId {} at offset {offset} in partition {}: \
                 {coordinator_epoch} is older than previously known coordinator epoch {current}",
                self.producer_id,
                self.topic_partition
            );
            return Ok(());
        }
        Err(Error::TransactionCoordinatorFenced {
            partition: self.topic_partition.to_string(),
            producer_id: self.producer_id,
            offset,
            coordinator_epoch,
            current_coordinator_epoch: current,
        })
    }

    fn out_of_order(&self, offset: i64, sequence: i32, detail: String) -> Error {
        Error::OutOfOrderSequence {
            partition: self.topic_partition.to_string(),
            producer_id: self.producer_id,
            offset,
            sequence,
            detail,
        }
    }

    fn invalid_txn_state(&self, reason: String) -> Error {
        Error::InvalidTxnState { partition: self.topic_partition.to_string(), producer_id: self.producer_id, reason }
    }

    /// The parts `ProducerStateManager::update` folds in.
    pub(super) fn into_parts(self) -> (i64, ProducerStateEntry, Vec<TxnMetadata>) {
        (self.producer_id, self.updated_entry, self.transactions)
    }
}

/// Whether `next` follows `last` (Kafka's `inSequence`): one more, or 0 after `i32::MAX`.
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}
