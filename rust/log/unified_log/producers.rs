//! The log's producer state (Kafka's `UnifiedLog` around its `ProducerStateManager`): the
//! duplicate, sequence, epoch and transaction checks of an append, the transactions its
//! batches open and close, the `.txnindex` entries of aborted ones, the first unstable offset
//! and the last stable offset, and the rebuild of the state when the log opens.
//!
//! Thread-safety: the manager sits behind its own mutex, taken only under the log's write lock
//! (appends, roll, truncation, close) or briefly by the high-watermark and log-start updates and
//! the read-only introspection. The first unstable offset is published in an atomic after every
//! change, so [`UnifiedLog::last_stable_offset`] reads it without any lock.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::UnifiedLog;
use crate::error::Result;
use crate::index::transaction_index::AbortedTxn;
use crate::log::log_validator::{AppendOrigin, LogAppendInfo};
use crate::log::producer_state::{
    last_stable_offset_for, rebuild_producer_state, BatchMetadata, ProducerAppendInfo, ProducerStateEntry,
    ProducerStateManager, RebuildParams, TxnMetadata, TV_UNKNOWN,
};
use crate::log::producer_state::{LastRecord, LogOffsetMetadata};
use crate::record::batch::RecordBatch;
use crate::record::records::{AnyBatch, BatchIter};
use crate::segment::log_segment::LogSegment;

/// The first unstable offset as published: none.
pub(super) const NO_UNSTABLE_OFFSET: i64 = -1;

/// A duplicate of a batch the log already holds (Kafka's `maybeDuplicate` of
/// `analyzeAndValidateProducerState`): the append writes nothing and answers with the original
/// batch's offsets.
#[derive(Debug, Clone, Copy)]
pub(super) struct Duplicate(pub BatchMetadata);

/// One producer's state, as the Python introspection shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveProducer {
    /// Producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub producer_epoch: i16,
    /// The last sequence of its last batch (-1 if none is retained).
    pub last_sequence: i32,
    /// The last offset of its last batch (-1 if none is retained).
    pub last_data_offset: i64,
    /// The coordinator epoch of its last marker (-1 if none).
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction.
    pub current_txn_first_offset: Option<i64>,
    /// The timestamp of its last write.
    pub last_timestamp: i64,
}

impl ActiveProducer {
    fn of(e: &ProducerStateEntry) -> Self {
        let empty = e.is_empty();
        ActiveProducer {
            producer_id: e.producer_id(),
            producer_epoch: e.producer_epoch(),
            last_sequence: if empty { -1 } else { e.last_seq() },
            last_data_offset: if empty { -1 } else { e.last_data_offset() },
            coordinator_epoch: e.coordinator_epoch(),
            current_txn_first_offset: e.current_txn_first_offset(),
            last_timestamp: e.last_timestamp(),
        }
    }
}

impl UnifiedLog {
    /// Publishes the first unstable offset after producer state or the offsets changed
    /// (Kafka's `maybeIncrementFirstUnstableOffset`), letting the manager first drop the
    /// completed transactions the high watermark has passed.
    pub(super) fn publish_first_unstable_offset(&self, psm: &mut ProducerStateManager) {
        let (log_start, hw) = {
            let o = self.offsets.read();
            (o.log_start, o.high_watermark)
        };
        psm.on_high_watermark_updated(hw);
        let fuo = psm.first_unstable_offset_from(log_start).map_or(NO_UNSTABLE_OFFSET, |m| m.message_offset);
        self.first_unstable.store(fuo, Ordering::Release);
    }

    /// After the high watermark moved (Kafka's `onHighWatermarkIncremented`): completed
    /// transactions whose markers it passed stop holding the last stable offset back.
    pub(super) fn on_high_watermark_updated(&self) {
        let mut psm = self.producer_state.lock();
        self.publish_first_unstable_offset(&mut psm);
    }

    /// After the log start moved up (Kafka's `maybeIncrementLogStartOffset`):
    /// `onLogStartOffsetIncremented`, then the first unstable offset again.
    pub(super) fn on_log_start_offset_incremented(&self, log_start_offset: i64) {
        let mut psm = self.producer_state.lock();
        psm.on_log_start_offset_incremented(log_start_offset);
        self.publish_first_unstable_offset(&mut psm);
    }

    /// The first offset that is not yet stable (Kafka's `firstUnstableOffset`): the first
    /// offset of the earliest open transaction, or of the earliest completed one whose marker
    /// the high watermark has not passed; `None` when every offset is stable. Lock-free.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let fuo = self.first_unstable.load(Ordering::Acquire);
        (fuo != NO_UNSTABLE_OFFSET).then_some(fuo)
    }

    /// The last stable offset (Kafka's `UnifiedLog.lastStableOffset`): the first unstable
    /// offset when there is one below the high watermark, else the high watermark. A
    /// `read_committed` consumer reads below it; the cleaner cleans below it. Lock-free.
    pub fn last_stable_offset(&self) -> i64 {
        last_stable_offset_for(self.first_unstable_offset(), self.high_watermark())
    }

    /// Forgets the producers idle for `producer.id.expiration.ms` (by `current_time_ms`) with
    /// no open transaction (Kafka's `UnifiedLog.removeExpiredProducers`, which the
    /// `PeriodicProducerExpirationCheck` task runs; here the `LogManager`'s scheduler). In
    /// memory only: the next snapshot leaves them out.
    pub fn remove_expired_producers(&self, current_time_ms: i64) {
        let _guard = self.write_lock.lock();
        self.producer_state.lock().remove_expired_producers(current_time_ms);
    }

    /// The producers the log knows, by producer id (Kafka's `activeProducers`).
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        let psm = self.producer_state.lock();
        let mut all: Vec<ActiveProducer> = psm.active_producers().values().map(ActiveProducer::of).collect();
        all.sort_unstable_by_key(|p| p.producer_id);
        all
    }

    /// Each known producer's last data batch and epoch, by producer id (Kafka's
    /// `UnifiedLog.lastRecordsOfActiveProducers`): the cleaner keeps each of these batches, so
    /// the producer's sequence survives compaction. Expired producers are not in it.
    pub fn last_records_of_active_producers(&self) -> HashMap<i64, LastRecord> {
        let psm = self.producer_state.lock();
        psm.active_producers()
            .iter()
            .map(|(&pid, e)| {
                let offset = e.last_data_offset();
                (
                    pid,
                    LastRecord {
                        last_data_offset: (offset >= 0).then_some(offset),
                        producer_epoch: e.producer_epoch(),
                    },
                )
            })
            .collect()
    }

    /// The open transactions as `(producer id, first offset)`, by first offset.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        let psm = self.producer_state.lock();
        psm.ongoing_txns().map(|t: &TxnMetadata| (t.producer_id, t.first_offset.message_offset)).collect()
    }

    /// The offset of the latest producer snapshot (`<offset>.snapshot`), if any.
    pub fn latest_producer_snapshot_offset(&self) -> Option<i64> {
        self.producer_state.lock().latest_snapshot_offset()
    }

    /// The end offset (exclusive) of what producer state has seen (Kafka's `mapEndOffset`).
    pub fn producer_state_map_end_offset(&self) -> i64 {
        self.producer_state.lock().map_end_offset()
    }
}

/// The transaction version a replicated marker carries (Kafka replicates with
/// `TV_UNKNOWN`: the follower trusts the leader).
pub(super) const REPLICATION_TRANSACTION_VERSION: i16 = TV_UNKNOWN;

/// Kafka's `analyzeAndValidateProducerState`, run before anything is written: every batch
/// with a producer id goes through the checks of `origin` against the current state (so an
/// `OutOfOrderSequence`, `InvalidProducerEpoch`, `InvalidTxnState` or
/// `TransactionCoordinatorFenced` refuses the whole append), and a client batch that repeats
/// one of its producer's last five is reported as a [`Duplicate`].
pub(super) fn check_producer_state(
    psm: &mut ProducerStateManager,
    records: &[u8],
    origin: AppendOrigin,
    transaction_version: i16,
) -> Result<Option<Duplicate>> {
    let mut infos: HashMap<i64, ProducerAppendInfo> = HashMap::new();
    for item in BatchIter::new(records) {
        let AnyBatch::V2(batch) = item?.1 else { continue };
        if !batch.has_producer_id() {
            continue;
        }
        if origin == AppendOrigin::Client {
            if let Some(d) = psm.last_entry(batch.producer_id()).and_then(|e| e.find_duplicate_batch(&batch)) {
                return Ok(Some(Duplicate(d)));
            }
        }
        let info = infos.entry(batch.producer_id()).or_insert_with(|| psm.prepare_update(batch.producer_id(), origin));
        info.append(&batch, None, transaction_version)?;
    }
    Ok(None)
}

/// Folds one written batch into producer state (Kafka's `update`, `updateTxnIndex`,
/// `completeTxn` and `updateMapEndOffset` after `localLog.append`): its producer's entry,
/// the transaction it opens, and for a marker the completed transaction, indexed in
/// `segment`'s `.txnindex` when aborted, with the last stable offset then.
pub(super) fn apply_producer_batch(
    psm: &mut ProducerStateManager,
    batch: &RecordBatch<'_>,
    segment: &LogSegment,
    position: u64,
    origin: AppendOrigin,
    transaction_version: i16,
) -> Result<()> {
    if batch.has_producer_id() {
        let mut infos = HashMap::with_capacity(1);
        let first = LogOffsetMetadata::new(
            batch.base_offset(),
            segment.base_offset(),
            i32::try_from(position).unwrap_or(i32::MAX),
        );
        let completed = psm.update_producers(batch, &mut infos, Some(first), origin, transaction_version)?;
        for info in infos.into_values() {
            psm.update(info)?;
        }
        if let Some(txn) = completed {
            let lso = psm.last_stable_offset(&txn);
            if txn.is_aborted {
                segment.update_txn_index(AbortedTxn {
                    producer_id: txn.producer_id,
                    first_offset: txn.first_offset,
                    last_offset: txn.last_offset,
                    last_stable_offset: lso,
                })?;
            }
            psm.complete_txn(&txn)?;
        }
    }
    psm.update_map_end_offset(batch.last_offset() + 1);
    Ok(())
}

/// What a writable open's load knows of the producer snapshots on disk.
pub(super) enum KnownProducerState {
    /// The producer state the recovery past the recovery point ended with (its snapshots are
    /// those on disk).
    Recovered(Box<ProducerStateManager>),
    /// The snapshots the load's listing shows (the load changed none).
    Listed(std::collections::BTreeMap<i64, crate::log::producer_state::snapshot::SnapshotFile>),
    /// Nothing: the directory is listed again.
    Unknown,
}

/// The producer state of a log being opened: a manager knowing the snapshots in `dir`,
/// rebuilt up to the log end ([`rebuild_producer_state`]). `known`: what the load knows of
/// the snapshots, so the directory is not listed again (nor the last snapshot read back, for
/// the state a recovery ended with).
pub(super) fn open_producer_state(
    dir: &std::path::Path,
    topic_partition: &crate::file_names::TopicPartition,
    local: &crate::log::local_log::LocalLog,
    load: &super::LoadResult,
    options: &super::LogOpenOptions,
    now: i64,
    known: KnownProducerState,
) -> Result<ProducerStateManager> {
    let (tp, timeout, config, clock) =
        (topic_partition.clone(), options.max_transaction_timeout_ms, options.producer_state, options.clock.clone());
    let (mut recovered, listed) = match known {
        KnownProducerState::Recovered(psm) => (Some(*psm), None),
        KnownProducerState::Listed(snapshots) => (None, Some(snapshots)),
        KnownProducerState::Unknown => (None, None),
    };
    // The state the load's recovery ended with, at the log end with its snapshot there: what a
    // fresh manager would read back from that snapshot (`reload_from_own_snapshot`), without
    // listing the directory and reading the file.
    recovered = recovered.filter(|p| !options.read_only && p.map_end_offset() == load.log_end_offset);
    if let Some(psm) = recovered.as_mut() {
        if !psm.reload_from_own_snapshot(now)? {
            recovered = None;
        }
    }
    let mut psm = if let Some(mut psm) = recovered {
        psm.remove_known_stray_snapshots(&local.segments().base_offsets())?;
        psm
    } else if let Some(snapshots) = listed.filter(|_| !options.read_only) {
        // The load's listing (nothing it did since changed a snapshot).
        let mut psm = ProducerStateManager::with_snapshots(tp, dir, timeout, config, clock, snapshots);
        psm.remove_known_stray_snapshots(&local.segments().base_offsets())?;
        psm
    } else if options.read_only {
        ProducerStateManager::new(tp, dir, timeout, config, clock)?
    } else {
        // Kafka's LogLoader: the segment recoveries' own managers may have deleted or written
        // snapshots; list them again, dropping those without a segment.
        let mut psm = ProducerStateManager::new_unlisted(tp, dir, timeout, config, clock);
        psm.remove_stray_snapshots(&local.segments().base_offsets())?;
        psm
    };
    let params = RebuildParams {
        log_start_offset: load.log_start_offset,
        last_offset: load.log_end_offset,
        reload_from_clean_shutdown: options.had_clean_shutdown,
        read_only: options.read_only,
        now,
    };
    rebuild_producer_state(&mut psm, local.segments(), &params)?;
    Ok(psm)
}

/// Places a coordinator's marker batch (built at offset 0 by [`UnifiedLog::append_txn_marker`])
/// at `offset` in `leader_epoch`, with the LogAppendTime of a topic that uses it (what Kafka's
/// `LogValidator` does to a marker), and describes it as the validator would.
pub(super) fn stamp_marker(
    records: &mut [u8],
    offset: i64,
    now: i64,
    leader_epoch: i32,
    config: &crate::config::LogConfig,
) -> Result<crate::log::log_validator::Analysis> {
    let mut m = crate::record::batch::RecordBatchMut::new(records)?;
    m.set_base_offset(offset);
    m.set_partition_leader_epoch(leader_epoch);
    if config.message_timestamp_type == crate::record::TimestampType::LogAppendTime {
        m.set_max_timestamp(crate::record::TimestampType::LogAppendTime, now);
    }
    let batch = RecordBatch::new(records)?;
    Ok(crate::log::log_validator::Analysis {
        first_offset: offset,
        last_offset: batch.last_offset(),
        max_timestamp: batch.max_timestamp(),
        offset_of_max_timestamp: batch.last_offset(),
        record_count: 1,
        batch_count: 1,
        valid_bytes: records.len() as u64,
    })
}

impl UnifiedLog {
    /// What an append that repeats a batch the log holds answers (Kafka's `appendAsLeader`
    /// with `maybeDuplicate`): the original batch's offsets, its timestamp as the append time,
    /// and nothing written (no records, batches or bytes).
    pub(super) fn duplicate_append_info(&self, duplicate: Duplicate, _log_append_time: i64) -> LogAppendInfo {
        let d = duplicate.0;
        LogAppendInfo {
            first_offset: d.first_offset(),
            last_offset: d.last_offset,
            max_timestamp: d.timestamp,
            offset_of_max_timestamp: d.last_offset,
            log_append_time: d.timestamp,
            log_start_offset: self.log_start_offset(),
            record_count: 0,
            batch_count: 0,
            valid_bytes: 0,
        }
    }
}

impl UnifiedLog {
    /// After a truncation from the end (Kafka's `truncateTo` -> `rebuildProducerState`):
    /// snapshots past the new end go, the state is reloaded from the latest one left and the
    /// batches after it replayed up to the log end, and a snapshot is taken there.
    pub(super) fn reload_producer_state_after_truncation(&self) -> Result<()> {
        let mut psm = self.producer_state.lock();
        let (log_start_offset, last_offset) = {
            let o = self.offsets.read();
            (o.log_start, o.log_end)
        };
        let params = RebuildParams {
            log_start_offset,
            last_offset,
            reload_from_clean_shutdown: false,
            read_only: false,
            now: self.local.clock().milliseconds(),
        };
        let rebuilt = rebuild_producer_state(&mut psm, self.local.segments(), &params);
        self.publish_first_unstable_offset(&mut psm);
        rebuilt
    }
}
