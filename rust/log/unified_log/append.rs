//! `UnifiedLog`'s append path (Kafka's `UnifiedLog.appendAsLeader`, `appendAsFollower`,
//! `append` and `maybeRoll`): validation and offset assignment for a leader, offset checks for
//! a follower, the producer-state duplicate and sequence checks, the leader epochs stamped on
//! the batches, then one batch at a time into the active segment, rolling first when it must.
//!
//! Thread-safety: every append runs under the log's write lock; the producer state is locked
//! inside it, and the offsets are published after each batch.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{arguments, producers, UnifiedLog};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::log::log_validator::{analyze, validate_and_assign_offsets, AppendOrigin, LogAppendInfo};
use crate::log::producer_state::ProducerStateManager;
use crate::record::records::{AnyBatch, BatchIter};
use crate::segment::log_segment::{LogSegment, RollParams};

/// The bytes of an append: a leader's are validated and rewritten in place (offsets, leader
/// epoch, timestamps), a follower's are written as they are.
pub(super) enum AppendInput<'a> {
    /// A client's batches (`Client`) or a coordinator's marker (`Coordinator`, with its
    /// transaction version).
    Leader {
        records: &'a mut Vec<u8>,
        leader_epoch: i32,
        origin: AppendOrigin,
        transaction_version: i16,
    },
    Follower(&'a [u8]),
}

impl AppendInput<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            AppendInput::Leader { records, .. } => records,
            AppendInput::Follower(records) => records,
        }
    }
}

impl UnifiedLog {
    /// Appends producer batches as the leader: validates them, assigns offsets from the log
    /// end, stamps `leader_epoch` and applies the topic's timestamp type and codec. `records` is
    /// rewritten in place (or replaced when recompressed). A `leader_epoch` below -1 (Kafka's
    /// `NO_PARTITION_LEADER_EPOCH`) is refused, and so is an append whose offsets would pass
    /// [`MAX_OFFSET`].
    pub fn append_as_leader(&self, records: &mut Vec<u8>, leader_epoch: i32) -> Result<LogAppendInfo> {
        arguments::check_leader_epoch(leader_epoch)?;
        let transaction_version = crate::log::producer_state::TV_UNKNOWN;
        self.append(AppendInput::Leader { records, leader_epoch, origin: AppendOrigin::Client, transaction_version })
    }

    /// Appends batches copied from a leader: offsets are kept and must follow the log end.
    /// The bytes are written as they are (no copy, no per-record validation).
    pub fn append_as_follower(&self, records: &[u8]) -> Result<LogAppendInfo> {
        self.append(AppendInput::Follower(records))
    }

    pub(super) fn append(&self, input: AppendInput<'_>) -> Result<LogAppendInfo> {
        self.handle_io(self.append_inner(input))
    }

    fn append_inner(&self, mut input: AppendInput<'_>) -> Result<LogAppendInfo> {
        self.check_writable()?;
        let config = self.config();
        let (origin, transaction_version) = match input {
            AppendInput::Leader { origin, transaction_version, .. } => (origin, transaction_version),
            AppendInput::Follower(_) => (AppendOrigin::Replication, producers::REPLICATION_TRANSACTION_VERSION),
        };
        let shallow = analyze(input.bytes(), &config, origin, &self.topic_partition)?;
        let _guard = self.write_lock.lock();
        self.check_open()?;
        if let AppendInput::Leader { leader_epoch, .. } = input {
            self.check_leader_epoch_current(leader_epoch)?;
        }
        let clock = self.local.clock().clone();
        let now = clock.milliseconds();
        let leo = self.log_end_offset();
        if shallow.batch_count == 0 {
            return Ok(LogAppendInfo {
                first_offset: -1,
                last_offset: -1,
                max_timestamp: -1,
                offset_of_max_timestamp: -1,
                log_append_time: -1,
                log_start_offset: self.log_start_offset(),
                record_count: 0,
                batch_count: 0,
                valid_bytes: 0,
            });
        }
        let (info, log_append_time) = match &mut input {
            AppendInput::Leader { records, leader_epoch, origin, .. } => {
                arguments::check_room_for(&self.topic_partition, leo, shallow.record_count)?;
                let info = if *origin == AppendOrigin::Coordinator {
                    producers::stamp_marker(records, leo, now, *leader_epoch, &config)?
                } else {
                    validate_and_assign_offsets(records, leo, now, *leader_epoch, &config)?
                };
                let lat =
                    if config.message_timestamp_type == crate::record::TimestampType::LogAppendTime { now } else { -1 };
                (info, lat)
            }
            AppendInput::Follower(_) => {
                if shallow.first_offset < leo {
                    return Err(Error::invalid_offset(format!(
                        "unexpected append offset: the first offset {} of the append to {} is below the log end offset {leo}",
                        shallow.first_offset, self.topic_partition
                    )));
                }
                arguments::check_follower_last_offset(&self.topic_partition, shallow.last_offset)?;
                (shallow, -1)
            }
        };
        let records = input.bytes();
        // Kafka's UnifiedLog.append refuses a batch larger than a segment; checked for every
        // batch before anything is written, so a refused append writes nothing.
        let max_size = config.segment_size() as usize;
        for item in BatchIter::new(records) {
            let size = item?.1.size_in_bytes();
            if size > max_size {
                return Err(Error::RecordBatchTooLarge { size, max: max_size });
            }
        }
        let mut psm = self.producer_state.lock();
        if let Some(duplicate) = producers::check_producer_state(&mut psm, records, origin, transaction_version)? {
            return Ok(self.duplicate_append_info(duplicate, log_append_time));
        }
        self.assign_epochs_of(records)?;
        let written = self.append_batches(records, now, &config, &mut psm, origin, transaction_version);
        self.publish_first_unstable_offset(&mut psm);
        drop(psm);
        written?;
        self.after_append(info.record_count, now, &config)?;
        Ok(LogAppendInfo {
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            max_timestamp: info.max_timestamp,
            offset_of_max_timestamp: info.offset_of_max_timestamp,
            log_append_time,
            log_start_offset: self.log_start_offset(),
            record_count: info.record_count,
            batch_count: info.batch_count,
            valid_bytes: info.valid_bytes,
        })
    }

    /// What follows a written append of `records` records, under the write lock: the flush
    /// `flush.messages` / `flush.ms` ask for, and the deletion of the files that are due.
    pub(super) fn after_append(&self, records: u64, now: i64, config: &LogConfig) -> Result<()> {
        let unflushed = self.unflushed_messages.fetch_add(records, Ordering::AcqRel) + records;
        let since_flush = now - self.last_flush_ms.load(Ordering::Acquire);
        if unflushed as i64 >= config.flush_messages || since_flush >= config.flush_ms {
            self.flush_locked(self.log_end_offset())?;
        }
        self.local.delete_due_files(false)
    }

    /// Writes validated batches one at a time. A Kafka producer sends one batch per partition
    /// per request, and Kafka's leader refuses more; kafkalog accepts a run of batches,
    /// validates them all first, then writes each as Kafka would write that batch alone (each
    /// may roll the segment first), so the files match what a producer would have produced.
    /// The offsets advance after every batch, so an I/O failure part way leaves the log
    /// consistent.
    pub(super) fn append_batches(
        &self,
        records: &[u8],
        now: i64,
        config: &LogConfig,
        psm: &mut ProducerStateManager,
        origin: AppendOrigin,
        transaction_version: i16,
    ) -> Result<()> {
        for item in BatchIter::new(records) {
            let (_, batch) = item?;
            let bytes = batch.bytes();
            let count = batch.record_count()?;
            let segment = self.maybe_roll(&batch, now, config, psm)?;
            let position = segment.size();
            segment.append(batch.last_offset(), bytes, count)?;
            self.publish_log_end(batch.next_offset(), &segment);
            match &batch {
                AnyBatch::V2(b) => {
                    producers::apply_producer_batch(psm, b, &segment, position, origin, transaction_version)?;
                }
                AnyBatch::Legacy(_) => psm.update_map_end_offset(batch.last_offset() + 1),
            }
        }
        Ok(())
    }

    /// Makes `log_end` (just written to `segment`, the active one) the log end offset, and the
    /// high watermark too when it follows the log end.
    pub(super) fn publish_log_end(&self, log_end: i64, segment: &LogSegment) {
        let mut o = self.offsets.write();
        o.log_end = log_end;
        o.log_end_position = segment.size();
        if self.hw_follows_leo.load(Ordering::Acquire) {
            o.high_watermark = o.log_end;
        }
    }

    /// Rolls when the active segment is full, too old, has a full index, or cannot hold the
    /// incoming offsets (Kafka's `maybeRoll`).
    pub(super) fn maybe_roll(
        &self,
        batch: &AnyBatch<'_>,
        now: i64,
        config: &LogConfig,
        psm: &mut ProducerStateManager,
    ) -> Result<Arc<LogSegment>> {
        let (size, max_timestamp, max_offset) =
            (batch.bytes().len() as u64, batch.max_timestamp(), batch.last_offset());
        let first_offset = batch.base_offset()?;
        let active = self.local.segments().last_segment().ok_or_else(|| Error::illegal_state("log has no segments"))?;
        let params = RollParams {
            max_segment_ms: config.max_segment_ms(),
            max_segment_bytes: config.segment_size() as u64,
            max_timestamp_in_messages: max_timestamp,
            max_offset_in_messages: max_offset,
            messages_size: size,
            now,
        };
        if active.should_roll(&params)? {
            return self.roll_locked(Some(first_offset), psm);
        }
        Ok(active)
    }

    /// Writes a transaction coordinator's COMMIT (`commit`) or ABORT marker for `producer_id`
    /// as the leader, in the log's latest leader epoch (Kafka's `appendAsLeader` of a marker
    /// built by `MemoryRecords.withEndTransactionMarker`, origin `Coordinator`). The marker
    /// closes the producer's open transaction (an ABORT is indexed in the `.txnindex`); the
    /// checks are Kafka's: an older producer epoch is `InvalidProducerEpoch` (with transactions
    /// version 2 the marker must carry a bumped epoch), an older coordinator epoch
    /// `TransactionCoordinatorFenced`. `transaction_version` defaults to 0 (`None`).
    ///
    /// # Errors
    /// Those above, refused before anything is written; `InvalidArgument` for a
    /// `producer_id` below 0 or a version outside 0..=2; `ReadOnly`, `LogClosed`, `Io`.
    pub fn append_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        transaction_version: Option<i16>,
    ) -> Result<LogAppendInfo> {
        use crate::record::control::ControlRecordType;
        if producer_id < 0 {
            return Err(crate::error::Error::invalid_argument(
                "producer_id",
                producer_id,
                format!("a transaction marker needs a producer id >= 0, not {producer_id}"),
            ));
        }
        let version = transaction_version.unwrap_or(crate::log::producer_state::TV_0);
        if !(0..=2).contains(&version) {
            return Err(crate::error::Error::invalid_argument(
                "transaction_version",
                version,
                format!("the transaction version must be 0, 1 or 2, not {version}"),
            ));
        }
        let marker = if commit { ControlRecordType::Commit } else { ControlRecordType::Abort };
        let mut records = Vec::new();
        let now = self.local.clock().milliseconds();
        crate::record::builder::write_end_txn_marker(
            &mut records,
            0,
            now,
            -1,
            producer_id,
            producer_epoch,
            marker,
            coordinator_epoch,
        )?;
        let leader_epoch = self.latest_epoch().unwrap_or(0);
        self.append(AppendInput::Leader {
            records: &mut records,
            leader_epoch,
            origin: AppendOrigin::Coordinator,
            transaction_version: version,
        })
    }
}
