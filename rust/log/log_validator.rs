//! Validation and offset assignment of incoming batches (Kafka's `LogValidator` and the
//! analysis half of `UnifiedLog.analyzeAndValidateRecords`).
//!
//! Leader appends (`AppendOrigin::Client`) are validated record by record, get offsets assigned
//! in place, the partition leader epoch stamped, and the topic's timestamp type applied; when
//! the topic's `compression.type` names another codec, batches are rebuilt with it. Follower
//! appends (`AppendOrigin::Replication`) keep their offsets, which must increase.

use crate::config::{LogConfig, TopicCompression};
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::record::batch::{RecordBatch, RecordBatchMut, NO_SEQUENCE, NO_TIMESTAMP};
use crate::record::builder::{BatchBuilder, BatchHeader};
use crate::record::compression::CompressionType;
use crate::record::default_record::Header;
use crate::record::records::{AnyBatch, BatchIter};
use crate::record::TimestampType;

/// Who is appending (Kafka's `AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer, through the leader: offsets are assigned here.
    Client,
    /// A follower copying the leader's log: offsets are given.
    Replication,
    /// A transaction coordinator writing COMMIT / ABORT markers through the leader: offsets
    /// are assigned as for a client; producer state checks epochs and coordinator epochs but
    /// not sequences.
    Coordinator,
}

/// What an append did (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// First offset written (-1 when nothing was appended).
    pub first_offset: i64,
    /// Last offset written (-1 when nothing was appended).
    pub last_offset: i64,
    /// Largest timestamp in the append (after LogAppendTime was applied).
    pub max_timestamp: i64,
    /// Last offset of the batch holding `max_timestamp`.
    pub offset_of_max_timestamp: i64,
    /// The broker time stamped into LogAppendTime batches, else -1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
    /// Number of records.
    pub record_count: u64,
    /// Number of batches.
    pub batch_count: u32,
    /// Bytes appended.
    pub valid_bytes: u64,
}

/// The shallow facts about a run of batches, gathered before anything is written.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub offset_of_max_timestamp: i64,
    pub record_count: u64,
    pub batch_count: u32,
    pub valid_bytes: u64,
}

/// Walks the batches in `records`, checking framing, size, CRC and (for followers) that
/// offsets increase. The whole buffer must be complete batches.
pub(crate) fn analyze(
    records: &[u8],
    config: &LogConfig,
    origin: AppendOrigin,
    tp: &TopicPartition,
) -> Result<Analysis> {
    let mut a = Analysis {
        first_offset: -1,
        last_offset: -1,
        max_timestamp: -1,
        offset_of_max_timestamp: -1,
        record_count: 0,
        batch_count: 0,
        valid_bytes: 0,
    };
    let mut iter = BatchIter::new(records);
    for item in iter.by_ref() {
        let (_, batch) = item?;
        let size = batch.size_in_bytes();
        // Followers copy what the leader already accepted: Kafka's appendAsFollower passes
        // ignoreRecordSize = true.
        if origin != AppendOrigin::Replication && size > config.max_message_bytes as usize {
            return Err(Error::RecordBatchTooLarge { size, max: config.max_message_bytes as usize });
        }
        batch.ensure_valid().map_err(|e| e.with_position_offset(a.valid_bytes))?;
        let count = match batch {
            AnyBatch::V2(b) => u64::try_from(b.records_count()).map_err(|_| {
                Error::corrupt(a.valid_bytes + 57, format!("invalid record count {}", b.records_count()))
            })?,
            AnyBatch::Legacy(e) => {
                if origin != AppendOrigin::Replication {
                    return Err(Error::invalid_record(format!(
                        "magic {} batches are not accepted from producers; Kafka 4 requires magic 2",
                        e.magic()
                    )));
                }
                batch.record_count()?
            }
        };
        match origin {
            // Kafka's analyzeAndValidateRecords: a producer sends its batches at base offset 0
            // (only a client append is checked, as in Kafka; markers are built by the log).
            AppendOrigin::Client => {
                if let AnyBatch::V2(b) = batch {
                    if b.base_offset() != 0 {
                        return Err(Error::invalid_record(format!(
                            "The baseOffset of the record batch in the append to {tp} should be 0, but it is {} \
                             (batch at position {} of the append)",
                            b.base_offset(),
                            a.valid_bytes
                        )));
                    }
                }
            }
            AppendOrigin::Coordinator => {}
            // Followers keep the leader's offsets, whose last offsets must increase.
            AppendOrigin::Replication => {
                if a.batch_count > 0 && batch.last_offset() <= a.last_offset {
                    return Err(Error::invalid_offset(format!(
                        "out of order offsets found in append: batch ending at offset {} follows offset {}",
                        batch.last_offset(),
                        a.last_offset
                    )));
                }
                let base = batch.base_offset()?;
                if batch.last_offset() < base {
                    return Err(Error::invalid_offset(format!(
                        "batch last offset {} is below its base offset {base}",
                        batch.last_offset()
                    )));
                }
            }
        }
        if a.batch_count == 0 {
            a.first_offset = batch.base_offset()?;
        }
        a.last_offset = batch.last_offset();
        if batch.max_timestamp() > a.max_timestamp {
            a.max_timestamp = batch.max_timestamp();
            a.offset_of_max_timestamp = batch.last_offset();
        }
        a.record_count += count;
        a.batch_count += 1;
        a.valid_bytes += size as u64;
    }
    if iter.position() != records.len() {
        return Err(Error::corrupt(
            iter.position() as u64,
            format!(
                "{} trailing bytes after the last complete batch do not form a record batch",
                records.len() - iter.position()
            ),
        ));
    }
    Ok(a)
}

/// Validates every record of a client append and assigns offsets from `first_offset`, in
/// place where possible. `records` is replaced when batches are rebuilt with the topic codec.
/// Returns the updated analysis (offsets and timestamps as written).
#[allow(
    clippy::too_many_lines,
    reason = "Kafka's LogValidator.validateMessagesAndAssignOffsets, kept as one piece: the in-place, \
              recompressing and legacy paths share its checks in Kafka's order"
)]
pub(crate) fn validate_and_assign_offsets(
    records: &mut Vec<u8>,
    first_offset: i64,
    now: i64,
    leader_epoch: i32,
    config: &LogConfig,
) -> Result<Analysis> {
    let target_codec = match config.compression_type {
        TopicCompression::Producer => None,
        TopicCompression::Uncompressed => Some(CompressionType::None),
        TopicCompression::Gzip => Some(CompressionType::Gzip),
        TopicCompression::Snappy => Some(CompressionType::Snappy),
        TopicCompression::Lz4 => Some(CompressionType::Lz4),
        TopicCompression::Zstd => Some(CompressionType::Zstd),
    };
    let log_append = config.message_timestamp_type == TimestampType::LogAppendTime;
    let mut out: Vec<u8> = Vec::new();
    let mut rebuilt = false;
    let mut counter = first_offset;
    let mut a = Analysis {
        first_offset,
        last_offset: first_offset - 1,
        max_timestamp: -1,
        offset_of_max_timestamp: -1,
        record_count: 0,
        batch_count: 0,
        valid_bytes: 0,
    };
    let mut pos = 0usize;
    let mut scratch = Vec::new();
    while pos < records.len() {
        let size = crate::record::records::next_batch_size(&records[pos..])?.unwrap_or(records.len() - pos);
        let batch = RecordBatch::new(&records[pos..pos + size]).map_err(|e| e.with_position_offset(pos as u64))?;
        let count = validate_batch(&batch, pos)?;
        let codec = batch.compression_type()?;
        let mut max_ts = -1i64;
        let mut expected_delta = 0i64;
        let mut deltas_in_order = true;
        let base = batch.base_offset();
        let producer_set_log_append_time = batch.timestamp_type() == TimestampType::LogAppendTime;
        batch
            .for_each_record(&mut scratch, |r| {
                deltas_in_order &= r.offset - base == expected_delta;
                expected_delta += 1;
                if config.compact() && r.key.is_none() {
                    return Err(Error::invalid_record(
                        "compacted topic cannot accept message without key (cleanup.policy contains compact)",
                    ));
                }
                // Kafka's validateTimestamp: records without a timestamp (-1) are exempt from the
                // bounds, and a producer may not claim LogAppendTime.
                if !log_append && r.timestamp != NO_TIMESTAMP {
                    check_timestamp(r.timestamp, r.offset - base + counter, now, config)?;
                } else if producer_set_log_append_time {
                    return Err(Error::invalid_record(
                        "invalid timestamp type in batch: the producer should not set timestamp type to LogAppendTime",
                    ));
                }
                max_ts = max_ts.max(r.timestamp);
                Ok(())
            })
            .map_err(|e| e.with_position_offset(pos as u64))?;
        let batch_max = if log_append { now } else { max_ts };
        // Old clients get inner offsets of compressed batches wrong; Kafka rewrites such batches
        // rather than rejecting them (uncompressed batches keep their deltas, as in Kafka).
        let needs_rebuild =
            target_codec.is_some_and(|t| t != codec) || (!deltas_in_order && codec != CompressionType::None);
        if needs_rebuild || rebuilt {
            if !rebuilt {
                out.extend_from_slice(&records[..pos]);
                rebuilt = true;
            }
            let before = out.len();
            rebuild_batch(
                &batch,
                target_codec.unwrap_or(codec),
                config,
                counter,
                leader_epoch,
                log_append.then_some(now),
                &mut scratch,
                &mut out,
            )?;
            // A recompressed batch must still fit (Kafka's RecordTooLargeException after
            // recompression).
            let rebuilt_size = out.len() - before;
            if rebuilt_size > config.max_message_bytes as usize {
                return Err(Error::RecordBatchTooLarge { size: rebuilt_size, max: config.max_message_bytes as usize });
            }
        }
        if !rebuilt {
            let mut m = RecordBatchMut::new(&mut records[pos..pos + size])?;
            m.set_base_offset(counter);
            m.set_partition_leader_epoch(leader_epoch);
            let ts_type = if log_append { TimestampType::LogAppendTime } else { TimestampType::CreateTime };
            m.set_max_timestamp(ts_type, batch_max);
        }
        let last = counter + count - 1;
        if batch_max > a.max_timestamp {
            a.max_timestamp = batch_max;
            a.offset_of_max_timestamp = last;
        }
        a.last_offset = last;
        a.record_count += count as u64;
        a.batch_count += 1;
        counter += count;
        pos += size;
    }
    if rebuilt {
        *records = out;
    }
    a.valid_bytes = records.len() as u64;
    Ok(a)
}

/// Kafka's `LogValidator.validateBatch` for client batches; returns the record count.
fn validate_batch(batch: &RecordBatch<'_>, pos: usize) -> Result<i64> {
    let from_offsets = i64::from(batch.last_offset_delta()) + 1;
    let count = i64::from(batch.records_count());
    let at = |what: String| Error::invalid_record(format!("batch at position {pos}: {what}"));
    if from_offsets <= 0 {
        return Err(at(format!("invalid offset range: last offset delta {}", batch.last_offset_delta())));
    }
    if count <= 0 {
        return Err(at(format!("invalid reported count for record batch: {count}")));
    }
    if from_offsets != count {
        return Err(at(format!("inconsistent batch offset range ({from_offsets} offsets) and record count ({count})")));
    }
    if batch.is_control() {
        return Err(at("clients are not allowed to write control records".to_string()));
    }
    if batch.has_producer_id() && batch.base_sequence() < 0 && batch.base_sequence() != NO_SEQUENCE {
        return Err(at(format!("invalid sequence number {}", batch.base_sequence())));
    }
    if batch.has_producer_id() && batch.base_sequence() == NO_SEQUENCE {
        return Err(at("idempotent batch carries no sequence number".to_string()));
    }
    Ok(count)
}

/// The CreateTime timestamps a record may carry at `now` (inclusive): `message.timestamp.
/// before.max.ms` before it to `message.timestamp.after.max.ms` after it (KIP-937).
pub(crate) fn timestamp_bounds(now: i64, config: &LogConfig) -> (i64, i64) {
    (
        now.saturating_sub(config.message_timestamp_before_max_ms),
        now.saturating_add(config.message_timestamp_after_max_ms),
    )
}

/// The CreateTime bounds of `message.timestamp.before.max.ms` / `after.max.ms` (KIP-937).
pub(crate) fn check_timestamp(ts: i64, offset: i64, now: i64, config: &LogConfig) -> Result<()> {
    let (earliest, latest) = timestamp_bounds(now, config);
    if ts < earliest || ts > latest {
        return Err(Error::invalid_record(format!(
            "timestamp {ts} of message with offset {offset} is out of range: it must be within \
             [{earliest}, {latest}] (message.timestamp.before.max.ms = {}, message.timestamp.after.max.ms = {})",
            config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
        )));
    }
    Ok(())
}

/// Re-encodes `batch` with `codec`, offsets from `base_offset` (Kafka's recompression path).
#[allow(clippy::too_many_arguments)]
fn rebuild_batch(
    batch: &RecordBatch<'_>,
    codec: CompressionType,
    config: &LogConfig,
    base_offset: i64,
    leader_epoch: i32,
    log_append_time: Option<i64>,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let level = match codec {
        CompressionType::Gzip => Some(config.compression_gzip_level),
        CompressionType::Lz4 => Some(config.compression_lz4_level),
        CompressionType::Zstd => Some(config.compression_zstd_level),
        _ => None,
    };
    let mut builder = BatchBuilder::new(BatchHeader {
        base_offset,
        partition_leader_epoch: leader_epoch,
        compression: codec,
        compression_level: level,
        timestamp_type: if log_append_time.is_some() {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        },
        producer_id: batch.producer_id(),
        producer_epoch: batch.producer_epoch(),
        base_sequence: batch.base_sequence(),
        is_transactional: batch.is_transactional(),
        is_control: false,
        delete_horizon_ms: None,
    });
    let mut headers: Vec<Header<'_>> = Vec::new();
    // Offsets are assigned in order from `base_offset`, whatever deltas the producer wrote.
    batch.for_each_record(scratch, |r| {
        headers.clear();
        headers.extend(r.headers());
        builder.append_next(r.timestamp, r.key, r.value, &headers)
    })?;
    builder.build_into(out, None, log_append_time)
}
