//! `UnifiedLog`'s trusted leader append: batches the engine builds itself from rows it has
//! checked (`append_arrow`), planned before anything is written ([`PlannedRecords`]) and
//! encoded under the write lock, chunk by chunk, with their final offsets and leader epoch.
//!
//! It makes every check of Kafka's leader append (`UnifiedLog.appendAsLeader` and
//! `LogValidator`) whose answer depends on the log: the leader epoch, the room left for offsets,
//! `max.message.bytes` and the segment size per batch, `cleanup.policy=compact`'s key, the
//! CreateTime bounds of `message.timestamp.before.max.ms` / `after.max.ms` (or the
//! LogAppendTime stamp), all before a byte is written, in Kafka's order. It skips what cannot be
//! wrong in batches built here: the CRC (computed once, over the final bytes), the framing, the
//! record count against the offset deltas, the producer fields (these batches carry no producer
//! id, so producer state only moves its map end offset), and decoding the records again. The
//! bytes written are those of `append_as_leader` of the same batches.
//!
//! Thread-safety: runs under the log's write lock, as every append.

use super::{arguments, UnifiedLog};
use crate::config::{LogConfig, TopicCompression};
use crate::error::{Error, Result};
use crate::log::log_validator::{check_timestamp, timestamp_bounds, LogAppendInfo};
use crate::log::producer_state::ProducerStateManager;
use crate::record::builder::BatchHeader;
use crate::record::planned_batches::{BatchPlan, PlannedRecords};
use crate::record::records::BatchIter;
use crate::record::TimestampType;
use crate::segment::log_segment::IncomingBatch;

/// How many bytes of batches are encoded before they are written: small enough to stay in the
/// CPU's cache between encoding and the copy into the page cache, big enough that a write
/// carries many batches.
const CHUNK_BYTES: usize = 1 << 20;

impl UnifiedLog {
    /// Appends planned batches as the leader (see the module doc): offsets from the log end,
    /// `leader_epoch` stamped, the topic's timestamp type applied. Every check is made before
    /// anything is written; the batches are then written in chunks of about a MiB, the log end
    /// offset advancing after each batch (as for any append of several batches), so an I/O
    /// error part way leaves the log consistent, holding the batches before the failed one.
    ///
    /// A topic whose `compression.type` names a codec rebuilds the batches with it: those
    /// appends encode the whole plan and take `append_as_leader`'s path.
    ///
    /// # Errors
    /// Those of `append_as_leader`: `InvalidArgument` for a `leader_epoch` below -1,
    /// `InvalidRecord`, `RecordBatchTooLarge`, `InvalidOffset`, a fenced epoch, `ReadOnly`,
    /// `LogClosed`, `Io`.
    pub fn append_planned_as_leader(
        &self,
        records: &mut dyn PlannedRecords,
        leader_epoch: i32,
    ) -> Result<LogAppendInfo> {
        arguments::check_leader_epoch(leader_epoch)?;
        let config = self.config();
        if !matches!(config.compression_type, TopicCompression::Producer | TopicCompression::Uncompressed) {
            let plan = records.plan().clone();
            let mut bytes = Vec::with_capacity(plan.bytes as usize);
            for _ in &plan.batches {
                records.encode_next(&BatchHeader::default(), None, &mut bytes)?;
            }
            return self.append_as_leader(&mut bytes, leader_epoch);
        }
        self.handle_io(self.append_planned_inner(records, leader_epoch, &config))
    }

    fn append_planned_inner(
        &self,
        records: &mut dyn PlannedRecords,
        leader_epoch: i32,
        config: &LogConfig,
    ) -> Result<LogAppendInfo> {
        self.check_writable()?;
        let plan = records.plan().clone();
        // Kafka's analyzeAndValidateRecords: every batch within max.message.bytes.
        let max = config.max_message_bytes as usize;
        if let Some(b) = plan.batches.iter().find(|b| b.size > max) {
            return Err(Error::RecordBatchTooLarge { size: b.size, max });
        }
        let _guard = self.write_lock.lock();
        self.check_open()?;
        self.check_leader_epoch_current(leader_epoch)?;
        let now = self.local.clock().milliseconds();
        let leo = self.log_end_offset();
        arguments::check_room_for(&self.topic_partition, leo, plan.records)?;
        let log_append = config.message_timestamp_type == TimestampType::LogAppendTime;
        validate(&*records, &plan, leo, now, log_append, config)?;
        // Kafka's UnifiedLog.append: no batch larger than a segment.
        let max = config.segment_size() as usize;
        if let Some(b) = plan.batches.iter().find(|b| b.size > max) {
            return Err(Error::RecordBatchTooLarge { size: b.size, max });
        }
        let mut psm = self.producer_state.lock();
        if leader_epoch >= 0 {
            self.leader_epoch_cache.assign(leader_epoch, leo)?;
        }
        let header = BatchHeader {
            partition_leader_epoch: leader_epoch,
            timestamp_type: if log_append { TimestampType::LogAppendTime } else { TimestampType::CreateTime },
            ..BatchHeader::default()
        };
        let stamp = log_append.then_some(now);
        let written =
            self.write_planned(records, &plan, Chunk { header, log_append_time: stamp, now, leo }, config, &mut psm);
        self.publish_first_unstable_offset(&mut psm);
        drop(psm);
        written?;
        self.after_append(plan.records, now, config)?;
        Ok(append_info(&plan, leo, stamp, self.log_start_offset()))
    }

    /// Encodes the plan's batches a chunk at a time into one reused buffer and writes each
    /// chunk as `append_as_leader` writes its batches.
    fn write_planned(
        &self,
        records: &mut dyn PlannedRecords,
        plan: &BatchPlan,
        chunk: Chunk,
        config: &LogConfig,
        psm: &mut ProducerStateManager,
    ) -> Result<()> {
        let mut buf = Vec::with_capacity(CHUNK_BYTES + plan.max_batch_size);
        let mut offset = chunk.leo;
        let mut batches = plan.batches.iter().peekable();
        while batches.peek().is_some() {
            buf.clear();
            while let Some(b) = batches.next_if(|_| buf.len() < CHUNK_BYTES) {
                let header = BatchHeader { base_offset: offset, ..chunk.header };
                records.encode_next(&header, chunk.log_append_time, &mut buf)?;
                offset += i64::from(b.records);
            }
            self.append_runs(&buf, chunk.now, config, psm)?;
        }
        Ok(())
    }

    /// Writes a chunk of encoded batches (no producer ids) as `append_batches` writes them one
    /// at a time: the same rolls, bytes and index entries, but each run of batches that goes
    /// into one segment without a roll (`LogSegment::batches_before_roll`) in one write, the log
    /// end offset advancing after each run.
    fn append_runs(&self, records: &[u8], now: i64, config: &LogConfig, psm: &mut ProducerStateManager) -> Result<()> {
        let batches = BatchIter::new(records).collect::<Result<Vec<_>>>()?;
        let incoming: Vec<IncomingBatch> = batches
            .iter()
            .map(|(_, b)| IncomingBatch {
                size: b.bytes().len() as u64,
                max_timestamp: b.max_timestamp(),
                last_offset: b.last_offset(),
            })
            .collect();
        let (max_bytes, max_ms) = (config.segment_size() as u64, config.max_segment_ms());
        let mut i = 0;
        while i < batches.len() {
            let segment = self.maybe_roll(&batches[i].1, now, config, psm)?;
            // maybe_roll has just made room for batch i.
            let run = segment.batches_before_roll(max_bytes, max_ms, now, &incoming[i..])?.max(1);
            let (start, last) = (batches[i].0, &batches[i + run - 1]);
            let end = last.0 + last.1.bytes().len();
            let records_in_run = batches[i..i + run].iter().map(|(_, b)| b.record_count()).sum::<Result<u64>>()?;
            segment.append(last.1.last_offset(), &records[start..end], records_in_run)?;
            self.publish_log_end(last.1.next_offset(), &segment);
            psm.update_map_end_offset(last.1.last_offset() + 1);
            i += run;
        }
        Ok(())
    }
}

/// What every batch of a planned append shares.
#[derive(Clone, Copy)]
struct Chunk {
    header: BatchHeader,
    log_append_time: Option<i64>,
    now: i64,
    /// The log end offset the append starts at.
    leo: i64,
}

/// `LogValidator`'s record checks that depend on the log, in its order (record by record, the
/// key before the timestamp): a compacted topic's key, and a CreateTime timestamp within
/// `message.timestamp.before.max.ms` / `after.max.ms` of `now`. The errors are those of
/// `append_as_leader`, naming the record by the offset it would have had.
fn validate(
    records: &dyn PlannedRecords,
    plan: &BatchPlan,
    leo: i64,
    now: i64,
    log_append: bool,
    config: &LogConfig,
) -> Result<()> {
    let null_key = plan.first_null_key.filter(|_| config.compact());
    let (earliest, latest) = timestamp_bounds(now, config);
    let bad_timestamp = if !log_append && (plan.min_timestamp < earliest || plan.max_timestamp > latest) {
        records.first_timestamp_outside(earliest, latest)
    } else {
        None
    };
    match (null_key, bad_timestamp) {
        (Some(k), t) if t.is_none_or(|(n, _)| k <= n) => Err(Error::invalid_record(
            "compacted topic cannot accept message without key (cleanup.policy contains compact)",
        )),
        (_, Some((n, ts))) => check_timestamp(ts, leo + n as i64, now, config),
        _ => Ok(()),
    }
}

/// The `LogAppendInfo` of a planned append written from `leo`: as `append_as_leader`'s, the
/// offset of the largest timestamp is the last offset of the first batch holding it.
fn append_info(plan: &BatchPlan, leo: i64, log_append_time: Option<i64>, log_start_offset: i64) -> LogAppendInfo {
    let (mut max_timestamp, mut offset_of_max_timestamp) = (-1, -1);
    let mut next = leo;
    for b in &plan.batches {
        next += i64::from(b.records);
        let batch_max = log_append_time.unwrap_or(b.max_timestamp);
        if batch_max > max_timestamp {
            (max_timestamp, offset_of_max_timestamp) = (batch_max, next - 1);
        }
    }
    LogAppendInfo {
        first_offset: leo,
        last_offset: next - 1,
        max_timestamp,
        offset_of_max_timestamp,
        log_append_time: log_append_time.unwrap_or(-1),
        log_start_offset,
        record_count: plan.records,
        batch_count: plan.batches.len() as u32,
        valid_bytes: plan.bytes,
    }
}

#[cfg(test)]
#[path = "append_planned_tests.rs"]
mod tests;
