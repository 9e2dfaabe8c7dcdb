//! The results of a log's appends, reads and retention, and of `decode_batches` and the
//! checkpoint readers, as frozen classes exported from `kafkalog` (see `results.rs`).

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::decode::OwnedRecord;
use super::results::py_result;

fn empty_tuple() -> Py<PyTuple> {
    Python::attach(|py| PyTuple::empty(py).unbind())
}

/// A path as Python spells it (`os.fsdecode`: undecodable bytes as surrogates).
pub(crate) fn path_str(py: Python<'_>, path: &Path) -> PyResult<Py<PyString>> {
    Ok(path.as_os_str().into_pyobject(py)?.cast_into::<PyString>()?.unbind())
}

py_result! { sequence
    /// What an append wrote (Kafka's LogAppendInfo).
    #[module = "kafkalog"]
    pub struct AppendInfo {
        first_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
        offset_of_max_timestamp: i64,
        log_append_time: i64,
        log_start_offset: i64,
        record_count: u64,
        batch_count: u32,
        valid_bytes: u64,
    }
}

impl From<&crate::log::log_validator::LogAppendInfo> for AppendInfo {
    fn from(i: &crate::log::log_validator::LogAppendInfo) -> Self {
        AppendInfo {
            first_offset: i.first_offset,
            last_offset: i.last_offset,
            max_timestamp: i.max_timestamp,
            offset_of_max_timestamp: i.offset_of_max_timestamp,
            log_append_time: i.log_append_time,
            log_start_offset: i.log_start_offset,
            record_count: i.record_count,
            batch_count: i.batch_count,
            valid_bytes: i.valid_bytes,
        }
    }
}

py_result! { sequence
    /// One segment of a log.
    #[module = "kafkalog"]
    pub struct SegmentInfo {
        base_offset: i64,
        size: u64,
        record_count: u64,
        /// Max timestamp of the first batch (Kafka's getFirstBatchTimestamp), -1 if none.
        first_batch_timestamp: i64,
        max_timestamp: i64,
        path: Py<PyString>,
    }
}

impl SegmentInfo {
    pub(crate) fn new(py: Python<'_>, s: &crate::log::unified_log::SegmentInfo) -> PyResult<Self> {
        Ok(SegmentInfo {
            base_offset: s.base_offset,
            size: s.size,
            record_count: s.record_count,
            first_batch_timestamp: s.first_batch_timestamp,
            max_timestamp: s.max_timestamp,
            path: path_str(py, &s.path)?,
        })
    }
}

py_result! { record
    /// A record read back from a log, as a Kafka consumer sees it.
    #[module = "kafkalog"]
    pub struct ConsumerRecord {
        topic: Py<PyString>,
        partition: i32,
        offset: i64,
        timestamp: i64,
        /// 0 = CreateTime, 1 = LogAppendTime, -1 = none (magic 0 records): Kafka's TimestampType
        /// ids.
        timestamp_type: i32,
        key: Option<Py<PyBytes>>,
        value: Option<Py<PyBytes>>,
        /// (str key, bytes-or-None value) pairs.
        headers: Py<PyTuple> = empty_tuple(),
    }
}

py_result! { sequence
    /// The result of UnifiedLog.read: raw whole batches and the records decoded from them
    /// (those at or after the requested offset; control records are left out), with the log's
    /// offsets as the read saw them.
    #[module = "kafkalog"]
    pub struct ReadResult {
        records_bytes: Py<PyBytes>,
        /// list[ConsumerRecord].
        records: Py<PyList>,
        high_watermark: i64,
        log_start_offset: i64,
        log_end_offset: i64,
        /// The offset after the last batch returned (the offset to read next).
        next_offset: i64,
        /// read_committed: list[AbortedTransaction], those overlapping the batches returned, as
        /// a Kafka fetch returns them; None for the other isolations.
        aborted_transactions: Option<Py<PyList>>,
    }
}

py_result! { sequence
    /// A result of offset_for_timestamp.
    #[module = "kafkalog"]
    pub struct TimestampAndOffset {
        timestamp: i64,
        offset: i64,
        leader_epoch: i32,
    }
}

py_result! { sequence
    /// A leader epoch and where it ends (Kafka's OffsetAndEpoch): the result of end_offset_for.
    #[module = "kafkalog"]
    pub struct OffsetAndEpoch {
        offset: i64,
        leader_epoch: i32,
    }
}

py_result! { sequence
    /// A segment retention deleted.
    #[module = "kafkalog"]
    pub struct DeletedSegment {
        base_offset: i64,
        /// The offset after the segment (the next segment's base, or the log end).
        next_offset: i64,
        size: u64,
        /// Its largest record timestamp, or the file's mtime (ms) when it has none.
        largest_timestamp: i64,
        /// Which check deleted it: "log_start_offset", "retention_bytes" or "retention_ms".
        reason: String,
    }
}

py_result! { sequence
    /// What one retention run did on one log (Kafka's deleteOldSegments).
    #[module = "kafkalog"]
    pub struct RetentionResult {
        /// list[DeletedSegment].
        deleted: Py<PyList>,
        /// One line per segment whose timestamps lie in the future (retention.ms cannot delete
        /// it).
        warnings: Py<PyList>,
        log_start_offset: i64,
    }
}

impl DeletedSegment {
    /// The engine's deleted (or to-be-deleted) segments as a Python list of these.
    pub(crate) fn list(py: Python<'_>, segments: &[crate::log::unified_log::DeletedSegment]) -> PyResult<Py<PyList>> {
        let deleted = segments.iter().map(|d| {
            Py::new(
                py,
                DeletedSegment {
                    base_offset: d.base_offset,
                    next_offset: d.next_offset,
                    size: d.size,
                    largest_timestamp: d.largest_timestamp,
                    reason: d.reason.name().to_string(),
                },
            )
        });
        Ok(PyList::new(py, deleted.collect::<PyResult<Vec<_>>>()?)?.unbind())
    }
}

impl RetentionResult {
    pub(crate) fn new(py: Python<'_>, r: &crate::log::unified_log::RetentionResult) -> PyResult<Self> {
        Ok(RetentionResult {
            deleted: DeletedSegment::list(py, &r.deleted)?,
            warnings: PyList::new(py, &r.warnings)?.unbind(),
            log_start_offset: r.log_start_offset,
        })
    }
}

py_result! { sequence
    /// One record of `decode_batches`, control records included.
    #[module = "kafkalog"]
    pub struct DecodedRecord {
        offset: i64,
        timestamp: i64,
        /// 0 = CreateTime, 1 = LogAppendTime, -1 = none (magic 0 records).
        timestamp_type: i32,
        key: Option<Py<PyBytes>>,
        value: Option<Py<PyBytes>>,
        /// list of (str key, bytes-or-None value) pairs.
        headers: Py<PyList>,
        /// Whether the record is a control record (a transaction marker).
        is_control: bool,
    }
}

fn bytes(py: Python<'_>, b: Option<&Vec<u8>>) -> Option<Py<PyBytes>> {
    b.map(|b| PyBytes::new(py, b).unbind())
}

fn header_pairs<'py>(
    py: Python<'py>,
    headers: &[(String, Option<Vec<u8>>)],
) -> PyResult<impl ExactSizeIterator<Item = Bound<'py, PyTuple>>> {
    let pairs: Vec<Bound<'py, PyTuple>> =
        headers.iter().map(|(k, v)| (k.as_str(), bytes(py, v.as_ref())).into_pyobject(py)).collect::<PyResult<_>>()?;
    Ok(pairs.into_iter())
}

impl DecodedRecord {
    pub(crate) fn new(py: Python<'_>, r: &OwnedRecord) -> PyResult<Self> {
        let (offset, timestamp, timestamp_type, key, value, headers, is_control) = r;
        Ok(DecodedRecord {
            offset: *offset,
            timestamp: *timestamp,
            timestamp_type: *timestamp_type,
            key: bytes(py, key.as_ref()),
            value: bytes(py, value.as_ref()),
            headers: PyList::new(py, header_pairs(py, headers)?)?.unbind(),
            is_control: *is_control,
        })
    }
}

impl ConsumerRecord {
    /// The record `r` of `topic`-`partition`.
    pub(crate) fn new(py: Python<'_>, topic: &Py<PyString>, partition: i32, r: &OwnedRecord) -> PyResult<Self> {
        let (offset, timestamp, timestamp_type, key, value, headers, _) = r;
        Ok(ConsumerRecord {
            topic: topic.clone_ref(py),
            partition,
            offset: *offset,
            timestamp: *timestamp,
            timestamp_type: *timestamp_type,
            key: bytes(py, key.as_ref()),
            value: bytes(py, value.as_ref()),
            headers: PyTuple::new(py, header_pairs(py, headers)?)?.unbind(),
        })
    }
}

py_result! { sequence
    /// One entry of a leader-epoch-checkpoint: the first offset of a leader epoch.
    #[module = "kafkalog"]
    pub struct EpochEntry {
        epoch: i32,
        start_offset: i64,
    }
}

py_result! { record
    /// An aborted transaction recorded in a segment's .txnindex (Kafka's AbortedTxn): the
    /// producer, the transaction's offsets up to its ABORT marker, and the last stable offset
    /// when it was aborted. A read_committed consumer drops the producer's records from
    /// first_offset to the marker.
    #[module = "kafkalog"]
    pub struct AbortedTransaction {
        producer_id: i64,
        /// The offset of the transaction's first record.
        first_offset: i64,
        /// The offset of its ABORT marker.
        last_offset: i64,
        /// The last stable offset when it was aborted.
        last_stable_offset: i64,
    }
}

impl From<&crate::index::transaction_index::AbortedTxn> for AbortedTransaction {
    fn from(t: &crate::index::transaction_index::AbortedTxn) -> Self {
        AbortedTransaction {
            producer_id: t.producer_id,
            first_offset: t.first_offset,
            last_offset: t.last_offset,
            last_stable_offset: t.last_stable_offset,
        }
    }
}

py_result! { record
    /// One producer of the partition (Kafka's ProducerStateEntry): its epoch, the last sequence
    /// and offset it wrote, its coordinator epoch, its open transaction and its last write's
    /// timestamp.
    #[module = "kafkalog"]
    pub struct ActiveProducer {
        producer_id: i64,
        producer_epoch: i16,
        /// The last sequence of its last batch (-1 if none is retained).
        last_sequence: i32,
        /// The last offset of its last batch (-1 if none is retained).
        last_offset: i64,
        /// The coordinator epoch of its last transaction marker (-1 if none).
        coordinator_epoch: i32,
        /// The first offset of its open transaction, None when none is open.
        current_txn_first_offset: Option<i64>,
        /// The timestamp of its last write (ms).
        last_timestamp: i64,
    }
}

impl From<&crate::log::unified_log::ActiveProducer> for ActiveProducer {
    fn from(p: &crate::log::unified_log::ActiveProducer) -> Self {
        ActiveProducer {
            producer_id: p.producer_id,
            producer_epoch: p.producer_epoch,
            last_sequence: p.last_sequence,
            last_offset: p.last_data_offset,
            coordinator_epoch: p.coordinator_epoch,
            current_txn_first_offset: p.current_txn_first_offset,
            last_timestamp: p.last_timestamp,
        }
    }
}

py_result! { record
    /// An open transaction: its producer and the offset of its first record.
    #[module = "kafkalog"]
    pub struct OngoingTransaction {
        producer_id: i64,
        first_offset: i64,
    }
}
