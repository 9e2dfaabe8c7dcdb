//! Appends from Arrow data and Kafka's partitioner over an Arrow key column, read in place
//! through Arrow's C data interface (`arrow_c.rs`): no Python object per record, and the GIL
//! released for all the per-row work and the append.
//!
//! Thread-safety: plain functions; the imported arrays stay on the calling thread, their
//! views are read with the GIL released.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::arrow_c::ImportedArray;
use super::buffer::OwnedBuffer;
use super::errors::run;
use super::records::AppendInfo;
use crate::log::unified_log::UnifiedLog;
use crate::record::arrow::column::Column;
use crate::record::arrow::sink_columns::{partitions_for_keys as partition_keys, SinkColumns, SinkTarget};
use crate::record::arrow::sink_records::SinkRecords;
use crate::record::compression::CompressionType;
use crate::record::planned_batches::BatchPlanner;
use crate::record::producer_batches::{BatchLimit, ProducerBatches};

/// An `__arrow_c_array__` pair: the schema capsule and the array capsule.
pub(crate) type CapsulePair<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>);

fn import(pairs: &[CapsulePair<'_>]) -> PyResult<Vec<ImportedArray>> {
    pairs.iter().map(|(schema, array)| ImportedArray::from_capsules(schema, array)).collect()
}

/// The largest batch `log` accepts from a producer: `max.message.bytes`, or the segment size
/// when smaller (Kafka's `UnifiedLog.append` refuses a batch bigger than a segment).
fn batch_limit(log: &UnifiedLog) -> BatchLimit {
    let config = log.config();
    let (max_message, segment) = (config.max_message_bytes.max(0) as usize, config.segment_size().max(0) as usize);
    let segment_key = if config.internal_segment_bytes.is_some() { "internal.segment.bytes" } else { "segment.bytes" };
    let describe = if max_message <= segment {
        format!("max.message.bytes={max_message}")
    } else {
        format!("the segment size ({segment_key}={segment}, below max.message.bytes={max_message})")
    };
    BatchLimit { bytes: max_message.min(segment), describe }
}

/// Builds producer batches from Arrow record batches (Spark's Kafka sink columns, see
/// `record::arrow::sink_columns`) and appends them as the leader, as `append_records` does with
/// tuples: the same rows give the same bytes. Every row is checked before anything is written.
/// Uncompressed rows are planned, then encoded and written a chunk at a time by the log's
/// trusted leader append (`UnifiedLog::append_planned_as_leader`); compressed ones are built
/// whole (a batch's size is known only once compressed) and appended as a client's.
pub(crate) fn append_arrow(
    py: Python<'_>,
    log: &Arc<UnifiedLog>,
    batches: &[CapsulePair<'_>],
    codec: CompressionType,
    leader_epoch: i32,
    batch_size: usize,
    now_ms: i64,
) -> PyResult<AppendInfo> {
    let imported = import(batches)?;
    let imported = &imported;
    let log = log.clone();
    let info = run(py, move || {
        let columns = imported.iter().map(ImportedArray::column).collect::<crate::error::Result<Vec<Column<'_>>>>()?;
        let sinks = columns.iter().map(SinkColumns::new).collect::<crate::error::Result<Vec<_>>>()?;
        let tp = log.topic_partition();
        let target = SinkTarget { topic: &tp.topic, partition: tp.partition, compacted: log.config().compact() };
        if codec == CompressionType::None {
            // Every row checked and every batch sized first; the log then encodes and writes
            // them a chunk at a time (no buffer of the whole append, no second pass).
            let planner = BatchPlanner::new(batch_size, now_ms).with_limit(batch_limit(&log));
            let mut records = SinkRecords::plan(&sinks, &target, planner, now_ms)?;
            return log.append_planned_as_leader(&mut records, leader_epoch);
        }
        let mut out = ProducerBatches::new(codec, batch_size, now_ms).with_limit(batch_limit(&log));
        out.reserve(columns.iter().map(|c| estimated_bytes(c)).sum());
        let mut headers = Vec::new();
        for sink in &sinks {
            sink.encode(&target, &mut out, &mut headers)?;
        }
        let mut buf = out.finish()?;
        log.append_as_leader(&mut buf, leader_epoch)
    })?;
    Ok(AppendInfo::from(&info))
}

/// About how many bytes the records of a batch encode to: its rows' key and value bytes, plus
/// a few per row.
fn estimated_bytes(batch: &Column<'_>) -> usize {
    let data = |name: &str| match batch.field(name) {
        Some(Column::Binary { column, .. }) if !column.is_empty() => column.data_bytes(),
        _ => 0,
    };
    data("key") + data("value") + batch.len() * 8
}

/// The partition of each row of a key column (Arrow arrays of Spark's key types, in order) as
/// Kafka's default partitioner picks it: `toPositive(murmur2(key)) % num_partitions`; null keys
/// round-robin from `round_robin_start`. Returns `len` native-order int32 values.
#[pyfunction]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn partitions_for_keys(
    py: Python<'_>,
    chunks: Vec<CapsulePair<'_>>,
    num_partitions: i32,
    round_robin_start: u64,
) -> PyResult<OwnedBuffer> {
    let imported = import(&chunks)?;
    let imported = &imported;
    let partitions = run(py, move || {
        let mut out = Vec::new();
        let mut turn = round_robin_start;
        for chunk in imported {
            turn = partition_keys(&chunk.column()?, num_partitions, turn, &mut out)?;
        }
        Ok(out.iter().flat_map(|p| p.to_ne_bytes()).collect::<Vec<u8>>())
    })?;
    Ok(OwnedBuffer::new(partitions))
}
