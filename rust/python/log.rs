//! The `_native.UnifiedLog` handle: a frozen Python class around `Arc<UnifiedLog>`. Every call
//! that touches the disk releases the GIL through `errors::run`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::arrow::{read_columns, ArrowColumns};
use super::cleaner::{CompactResult, DirtyCompactResult};
use super::decode;
use super::errors::{run, to_py_err};
use super::records::{
    AbortedTransaction, ActiveProducer, AppendInfo, ConsumerRecord, EpochEntry, OffsetAndEpoch, OngoingTransaction,
    ReadResult, RetentionResult, SegmentInfo, TimestampAndOffset,
};
use crate::checkpoint::partition_metadata::TopicId;
use crate::cleaner::{compact_dirty, CompactOptions, Compactor};
use crate::config::CleanerConfig;
use crate::config::LogConfig;
use crate::error::Error;
use crate::index::transaction_index::AbortedTxn;
use crate::log::producer_state::ProducerStateManagerConfig;
use crate::log::unified_log::{CommittedFilter, FetchIsolation, LogOpenOptions, UnifiedLog};
use crate::record::compression::CompressionType;
use crate::record::producer_batches::ProducerBatches;
use crate::util::clock::SystemClock;

/// A fetch isolation by its Python name (Kafka's `isolation.level` values, and `log_end` for
/// what a follower reads); `InvalidArgument` for a name that is none of them.
fn parse_isolation(isolation: &str) -> crate::error::Result<FetchIsolation> {
    match isolation {
        "read_uncommitted" | "high_watermark" => Ok(FetchIsolation::HighWatermark),
        "log_end" => Ok(FetchIsolation::LogEnd),
        "read_committed" => Ok(FetchIsolation::TxnCommitted),
        other => Err(Error::invalid_argument(
            "isolation",
            format!("{other:?}"),
            "must be one of 'read_uncommitted' (or its alias 'high_watermark'), 'log_end' or 'read_committed'",
        )),
    }
}

/// A record codec by its Kafka name (`compression.type`'s values, without `producer`).
pub(crate) fn parse_compression(compression: &str) -> crate::error::Result<CompressionType> {
    CompressionType::from_name(compression).ok_or_else(|| {
        Error::invalid_argument(
            "compression",
            format!("{compression:?}"),
            "must be one of none, gzip, snappy, lz4, zstd",
        )
    })
}

/// (key, value, headers, timestamp) as Python passes a record in.
type PyRecordTuple =
    (Option<PyBackedBytes>, Option<PyBackedBytes>, Vec<(PyBackedBytes, Option<PyBackedBytes>)>, Option<i64>);

/// One record handed in from Python.
struct InRecord {
    key: Option<PyBackedBytes>,
    value: Option<PyBackedBytes>,
    headers: Vec<(PyBackedBytes, Option<PyBackedBytes>)>,
    timestamp: Option<i64>,
}

/// Native handle of one partition log (`kafkalog.UnifiedLog` wraps it).
#[pyclass(frozen, name = "UnifiedLog", module = "kafkalog._native")]
pub struct PyUnifiedLog {
    inner: Arc<UnifiedLog>,
    /// Owned by a `LogManager`: `close` leaves it open (the manager closes it).
    managed: bool,
}

impl PyUnifiedLog {
    /// A handle on a log a `LogManager` owns.
    pub(crate) fn new_managed(inner: Arc<UnifiedLog>) -> Self {
        PyUnifiedLog { inner, managed: true }
    }

    /// The engine's log (for the bindings' module functions).
    pub(crate) fn inner(&self) -> &Arc<UnifiedLog> {
        &self.inner
    }
}

#[pymethods]
impl PyUnifiedLog {
    /// Opens a partition directory. `config` maps Kafka topic config keys to string values;
    /// `create=False` refuses a missing directory instead of creating it. The two broker
    /// settings of the producer state (`producer.id.expiration.ms`,
    /// `transaction.max.timeout.ms`) are checked by the Python layer.
    #[staticmethod]
    #[pyo3(signature = (path, config, read_only, create=true, producer_id_expiration_ms=86_400_000, transaction_max_timeout_ms=900_000))]
    #[allow(clippy::needless_pass_by_value)]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        config: Vec<(String, String)>,
        read_only: bool,
        create: bool,
        producer_id_expiration_ms: i32,
        transaction_max_timeout_ms: i32,
    ) -> PyResult<Self> {
        let config = LogConfig::from_props(config.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| to_py_err(py, e))?;
        let options = LogOpenOptions {
            read_only,
            create,
            clock: Arc::new(SystemClock),
            producer_state: ProducerStateManagerConfig { producer_id_expiration_ms, ..Default::default() },
            max_transaction_timeout_ms: transaction_max_timeout_ms,
            standalone_clean_close: true,
            ..LogOpenOptions::default()
        };
        let log = run(py, || UnifiedLog::open(&path, config, options))?;
        Ok(PyUnifiedLog { inner: Arc::new(log), managed: false })
    }

    /// Checks an isolation name as `read` and `read_columns` parse it (for callers that may not
    /// read at all).
    #[staticmethod]
    fn check_isolation(py: Python<'_>, isolation: &str) -> PyResult<()> {
        parse_isolation(isolation).map(|_| ()).map_err(|e| to_py_err(py, e))
    }

    /// Builds batches of at most `batch_size` bytes from (key, value, headers, timestamp)
    /// tuples and appends them as the leader.
    #[pyo3(signature = (records, compression, leader_epoch, batch_size, now_ms))]
    fn append_records(
        &self,
        py: Python<'_>,
        records: Vec<PyRecordTuple>,
        compression: &str,
        leader_epoch: i32,
        batch_size: usize,
        now_ms: i64,
    ) -> PyResult<AppendInfo> {
        let codec = parse_compression(compression).map_err(|e| to_py_err(py, e))?;
        let records: Vec<InRecord> = records
            .into_iter()
            .map(|(key, value, headers, timestamp)| InRecord { key, value, headers, timestamp })
            .collect();
        let log = self.inner.clone();
        let info = run(py, move || {
            let mut buf = encode_batches(&records, codec, batch_size, now_ms)?;
            log.append_as_leader(&mut buf, leader_epoch)
        })?;
        Ok(AppendInfo::from(&info))
    }

    /// Builds batches of at most `batch_size` bytes from Arrow record batches, each given as its
    /// `__arrow_c_array__` capsules (Spark's Kafka sink columns), and appends them as the
    /// leader: the same batches `append_records` builds from the same rows. Read in place, with
    /// the GIL released (`arrow_append.rs`).
    #[pyo3(signature = (batches, compression, leader_epoch, batch_size, now_ms))]
    #[allow(clippy::needless_pass_by_value)]
    fn append_arrow(
        &self,
        py: Python<'_>,
        batches: Vec<super::arrow_append::CapsulePair<'_>>,
        compression: &str,
        leader_epoch: i32,
        batch_size: usize,
        now_ms: i64,
    ) -> PyResult<AppendInfo> {
        let codec = parse_compression(compression).map_err(|e| to_py_err(py, e))?;
        super::arrow_append::append_arrow(py, &self.inner, &batches, codec, leader_epoch, batch_size, now_ms)
    }

    /// Appends raw v2 batches as a producer sends them.
    fn append_batch(&self, py: Python<'_>, raw: PyBackedBytes, leader_epoch: i32) -> PyResult<AppendInfo> {
        let log = self.inner.clone();
        let info = run(py, move || {
            let mut buf = raw.to_vec();
            log.append_as_leader(&mut buf, leader_epoch)
        })?;
        Ok(AppendInfo::from(&info))
    }

    /// Appends raw batches whose offsets are already assigned (as a follower).
    fn append_as_follower(&self, py: Python<'_>, raw: PyBackedBytes) -> PyResult<AppendInfo> {
        let log = self.inner.clone();
        let info = run(py, move || log.append_as_follower(&raw))?;
        Ok(AppendInfo::from(&info))
    }

    /// Kafka-style read: the raw bytes of whole batches, the data records at or after `offset`
    /// decoded from them, the offset after the last batch, and the log's offsets when the read
    /// ran. `read_committed` stops at the last stable offset, returns the aborted transactions
    /// overlapping the batches, and leaves aborted and control records out of `records` (the
    /// bytes stay as a fetch returns them). Decoding runs off the GIL.
    fn read(
        &self,
        py: Python<'_>,
        offset: i64,
        max_bytes: u64,
        isolation: &str,
        min_one_message: bool,
    ) -> PyResult<ReadResult> {
        let isolation = parse_isolation(isolation).map_err(|e| to_py_err(py, e))?;
        let log = self.inner.clone();
        let (info, decoded) = run(py, move || {
            let info = log.read(offset, max_bytes, isolation, min_one_message)?;
            let mut filter = info.aborted_transactions.as_ref().map(|a| CommittedFilter::new(a.iter().copied()));
            let decoded =
                decode::decode(&info.records, false, offset, false, filter.as_mut()).map_err(|e| {
                    match &info.source {
                        Some((file, position)) => e.in_file(file, *position),
                        None => e,
                    }
                })?;
            Ok((info, decoded))
        })?;
        let tp = self.inner.topic_partition();
        let topic = PyString::new(py, &tp.topic).unbind();
        let records = decoded
            .records
            .iter()
            .map(|r| Py::new(py, ConsumerRecord::new(py, &topic, tp.partition, r)?))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(ReadResult {
            records_bytes: PyBytes::new(py, &info.records).unbind(),
            records: PyList::new(py, records)?.unbind(),
            high_watermark: info.high_watermark,
            log_start_offset: info.log_start_offset,
            log_end_offset: info.log_end_offset,
            next_offset: decoded.next_offset.unwrap_or(offset),
            aborted_transactions: aborted_list(py, info.aborted_transactions.as_deref())?,
        })
    }

    /// Decodes `[start, end)` into Arrow-layout column buffers, stopping after about
    /// `max_bytes` of key/value data, with the offset to read next. Control records are left
    /// out, and with `read_committed` (which stops at the last stable offset) the records of
    /// aborted transactions too.
    fn read_columns(
        &self,
        py: Python<'_>,
        start: i64,
        end: i64,
        isolation: &str,
        max_bytes: usize,
    ) -> PyResult<ArrowColumns> {
        let isolation = parse_isolation(isolation).map_err(|e| to_py_err(py, e))?;
        // Arrow's binary columns use int32 offsets: a chunk stops well before 2 GiB of data.
        let max_bytes = max_bytes.min(1 << 30);
        let log = self.inner.clone();
        let (mut cols, next) = run(py, move || read_columns(&log, start, end, isolation, max_bytes))?;
        ArrowColumns::new(py, &mut cols, next)
    }

    /// The offset reads of `isolation` stop at: the high watermark (`read_uncommitted`), the
    /// last stable offset (`read_committed`) or the log end (`log_end`); what a Kafka consumer
    /// of that isolation level gets from `endOffsets`.
    fn end_offset(&self, py: Python<'_>, isolation: &str) -> PyResult<i64> {
        let isolation = parse_isolation(isolation).map_err(|e| to_py_err(py, e))?;
        Ok(self.inner.fetch_upper_bound(isolation))
    }

    #[getter]
    fn log_start_offset(&self) -> i64 {
        self.inner.log_start_offset()
    }
    #[getter]
    fn high_watermark(&self) -> i64 {
        self.inner.high_watermark()
    }
    #[getter]
    fn log_end_offset(&self) -> i64 {
        self.inner.log_end_offset()
    }
    #[getter]
    fn recovery_point(&self) -> i64 {
        self.inner.recovery_point()
    }
    #[getter]
    fn topic(&self) -> String {
        self.inner.topic_partition().topic.clone()
    }
    #[getter]
    fn partition(&self) -> i32 {
        self.inner.topic_partition().partition
    }
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.dir().to_path_buf()
    }
    #[getter]
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    #[getter]
    fn size_in_bytes(&self) -> u64 {
        self.inner.size_in_bytes()
    }

    /// The leader epoch cache's entries, in order (in memory: no I/O).
    fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.inner
            .epoch_entries()
            .into_iter()
            .map(|e| EpochEntry { epoch: e.epoch, start_offset: e.start_offset })
            .collect()
    }
    /// The latest leader epoch, None when none is known.
    #[getter]
    fn latest_epoch(&self) -> Option<i32> {
        self.inner.latest_epoch()
    }
    /// Kafka's endOffsetForEpoch; None when undefined.
    fn end_offset_for(&self, leader_epoch: i32) -> Option<OffsetAndEpoch> {
        self.inner
            .end_offset_for_epoch(leader_epoch)
            .map(|r| OffsetAndEpoch { offset: r.offset, leader_epoch: r.leader_epoch })
    }

    /// The log's configuration: every key with its value as Kafka prints it, in Kafka's order.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        props_dict(py, self.inner.config().to_props())
    }

    /// Base offset, size, record count, first-batch and max timestamps and path of each segment.
    fn segments(&self, py: Python<'_>) -> PyResult<Vec<SegmentInfo>> {
        let log = self.inner.clone();
        let infos = run(py, move || log.segment_infos())?;
        infos.iter().map(|s| SegmentInfo::new(py, s)).collect()
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let log = self.inner.clone();
        run(py, move || log.flush())
    }

    fn roll(&self, py: Python<'_>) -> PyResult<i64> {
        let log = self.inner.clone();
        run(py, move || log.roll())
    }

    fn truncate_to(&self, py: Python<'_>, offset: i64) -> PyResult<bool> {
        let log = self.inner.clone();
        run(py, move || log.truncate_to(offset))
    }

    fn truncate_fully_and_start_at(&self, py: Python<'_>, offset: i64) -> PyResult<()> {
        let log = self.inner.clone();
        run(py, move || log.truncate_fully_and_start_at(offset))
    }

    fn delete_records(&self, py: Python<'_>, offset: i64) -> PyResult<i64> {
        let log = self.inner.clone();
        run(py, move || log.delete_records(offset))
    }

    fn set_high_watermark(&self, py: Python<'_>, offset: i64) -> PyResult<i64> {
        self.inner.set_high_watermark(offset).map_err(|e| to_py_err(py, e))
    }

    /// The first record at or after `timestamp` (or a special lookup), or None.
    fn offset_for_timestamp(&self, py: Python<'_>, timestamp: i64) -> PyResult<Option<TimestampAndOffset>> {
        let log = self.inner.clone();
        let found = run(py, move || log.offset_for_timestamp(timestamp))?;
        Ok(found.map(|t| TimestampAndOffset { timestamp: t.timestamp, offset: t.offset, leader_epoch: t.leader_epoch }))
    }

    /// The aborted transactions of the `.txnindex` files that overlap `[start, end)`.
    fn aborted_transactions(&self, py: Python<'_>, start: i64, end: i64) -> PyResult<Vec<AbortedTransaction>> {
        let log = self.inner.clone();
        let found = run(py, move || log.aborted_transactions(start, end))?;
        Ok(found.iter().map(AbortedTransaction::from).collect())
    }

    /// The producers the log knows, by producer id (in memory: no I/O).
    fn active_producers(&self) -> Vec<ActiveProducer> {
        self.inner.active_producers().iter().map(ActiveProducer::from).collect()
    }
    /// Kafka's removeExpiredProducers at `time_ms` (in memory, but it waits for the log's
    /// write lock, so the GIL is released).
    fn remove_expired_producers(&self, py: Python<'_>, time_ms: i64) -> PyResult<()> {
        let log = self.inner.clone();
        run(py, move || {
            log.remove_expired_producers(time_ms);
            Ok(())
        })
    }
    /// The open transactions, by first offset (in memory: no I/O).
    fn ongoing_transactions(&self) -> Vec<OngoingTransaction> {
        let open = self.inner.ongoing_transactions();
        open.into_iter().map(|(producer_id, first_offset)| OngoingTransaction { producer_id, first_offset }).collect()
    }
    /// Kafka's lastStableOffset.
    #[getter]
    fn last_stable_offset(&self) -> i64 {
        self.inner.last_stable_offset()
    }
    /// Kafka's firstUnstableOffset, None when every offset is stable.
    #[getter]
    fn first_unstable_offset(&self) -> Option<i64> {
        self.inner.first_unstable_offset()
    }
    /// Writes a transaction coordinator's COMMIT or ABORT marker for the producer.
    #[pyo3(signature = (producer_id, producer_epoch, commit, coordinator_epoch, transaction_version))]
    fn append_txn_marker(
        &self,
        py: Python<'_>,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        transaction_version: Option<i16>,
    ) -> PyResult<AppendInfo> {
        let log = self.inner.clone();
        let info = run(py, move || {
            log.append_txn_marker(producer_id, producer_epoch, commit, coordinator_epoch, transaction_version)
        })?;
        Ok(AppendInfo::from(&info))
    }

    /// The topic id in `partition.metadata`, or None.
    fn topic_id(&self) -> Option<String> {
        self.inner.topic_id().map(|t| t.to_string())
    }

    /// Records a topic id (Kafka's 22-character base64 form); a different stored id is an error.
    fn assign_topic_id(&self, py: Python<'_>, topic_id: &str) -> PyResult<()> {
        let id = parse_topic_id(topic_id).map_err(|e| to_py_err(py, e))?;
        let log = self.inner.clone();
        run(py, move || log.assign_topic_id(id))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.managed {
            return Ok(());
        }
        let log = self.inner.clone();
        run(py, move || log.close())
    }

    /// Whether a `LogManager` owns this log.
    #[getter]
    fn managed(&self) -> bool {
        self.managed
    }

    /// Runs retention now (Kafka's `deleteOldSegments`).
    fn delete_old_segments(&self, py: Python<'_>, cap_future_timestamps: bool) -> PyResult<RetentionResult> {
        let log = self.inner.clone();
        let options = crate::log::unified_log::RetentionOptions { cap_future_timestamps };
        let result = run(py, move || log.delete_old_segments_with(options))?;
        RetentionResult::new(py, &result)
    }

    /// Unlinks `.deleted` files whose delay has passed.
    fn delete_due_files(&self, py: Python<'_>) -> PyResult<()> {
        let log = self.inner.clone();
        run(py, move || log.delete_due_files())
    }

    /// Cleans the whole cleanable range now, in as many passes as the map needs. A log whose
    /// `cleanup.policy` lacks `compact` is refused unless `ignore_cleanup_policy`, as
    /// `LogManager.compact_now` refuses it.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second, first_dirty_offset, time_ms, ignore_cleanup_policy, progress=None, sliced_decisions=false))]
    fn compact_now(
        &self,
        py: Python<'_>,
        dedupe_buffer_size: i64,
        load_factor: f64,
        io_buffer_size: i64,
        max_io_bytes_per_second: Option<f64>,
        first_dirty_offset: Option<i64>,
        time_ms: Option<i64>,
        ignore_cleanup_policy: bool,
        progress: Option<Py<PyAny>>,
        sliced_decisions: bool,
    ) -> PyResult<CompactResult> {
        let sizes = (dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second);
        let compactor = on_demand_compactor(py, sizes, sliced_decisions)?;
        let options = CompactOptions { first_dirty_offset, now_ms: time_ms };
        let log = self.inner.clone();
        let result = super::progress::run_with_progress(py, progress, move |sink| {
            compactor.compact_with_progress(&log, &options, ignore_cleanup_policy, sink)
        })?;
        CompactResult::new(py, &result, 0, &self.inner.topic_partition().to_string())
    }

    /// Cleans the dirty section only, from and to the log dir's `cleaner-offset-checkpoint`
    /// (`cleaner::dirty_clean`), or says why not.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second, time_ms, progress=None))]
    fn compact_dirty(
        &self,
        py: Python<'_>,
        dedupe_buffer_size: i64,
        load_factor: f64,
        io_buffer_size: i64,
        max_io_bytes_per_second: Option<f64>,
        time_ms: Option<i64>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<DirtyCompactResult> {
        let sizes = (dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second);
        let compactor = on_demand_compactor(py, sizes, false)?;
        let log = self.inner.clone();
        let outcome = super::progress::run_with_progress(py, progress, move |sink| {
            compact_dirty(&compactor, &log, time_ms, sink)
        })?;
        DirtyCompactResult::new(py, &outcome, &self.inner.topic_partition().to_string())
    }
}

/// A compactor with an on-demand clean's sizes (`log.cleaner.*`: dedupe buffer, load factor,
/// I/O buffer, rate; checked when it cleans) and `log.cleaner.kafkalog.sliced.decisions`.
fn on_demand_compactor(
    py: Python<'_>,
    (dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second): (i64, f64, i64, Option<f64>),
    sliced_decisions: bool,
) -> PyResult<Compactor> {
    let io_buffer_size = i32::try_from(io_buffer_size).map_err(|_| {
        let rule = crate::cleaner::compactor::IO_BUFFER_SIZE_RANGE;
        to_py_err(py, Error::invalid_config("log.cleaner.io.buffer.size", io_buffer_size, rule))
    })?;
    let config = CleanerConfig {
        dedupe_buffer_size,
        dedupe_buffer_load_factor: load_factor,
        io_buffer_size,
        max_io_bytes_per_second: max_io_bytes_per_second.unwrap_or(f64::MAX),
        sliced_decisions,
        ..CleanerConfig::default()
    };
    Ok(Compactor::new(config, Arc::new(SystemClock)))
}

/// A read's aborted transactions as a Python list, or None when the read returns none.
fn aborted_list(py: Python<'_>, aborted: Option<&[AbortedTxn]>) -> PyResult<Option<Py<PyList>>> {
    let Some(aborted) = aborted else { return Ok(None) };
    let items = aborted.iter().map(|t| Py::new(py, AbortedTransaction::from(t))).collect::<PyResult<Vec<_>>>()?;
    Ok(Some(PyList::new(py, items)?.unbind()))
}

/// A topic id given by the caller, in Kafka's 22-character form.
pub(crate) fn parse_topic_id(topic_id: &str) -> crate::error::Result<TopicId> {
    TopicId::parse(topic_id).map_err(|e| {
        Error::invalid_argument(
            "topic_id",
            format!("{topic_id:?}"),
            format!("must be a topic id in Kafka's 22-character URL-safe base64 form ({e})"),
        )
    })
}

/// Encodes records into v2 batches of at most `batch_size` uncompressed bytes each (as a
/// producer with `batch.size` would). Offsets start at 0; the log assigns the real ones.
fn encode_batches(
    records: &[InRecord],
    codec: CompressionType,
    batch_size: usize,
    now_ms: i64,
) -> crate::error::Result<Vec<u8>> {
    let mut batches = ProducerBatches::new(codec, batch_size, now_ms);
    let mut headers = Vec::new();
    for r in records {
        headers.clear();
        headers.extend(r.headers.iter().map(|(k, v)| (&k[..], v.as_deref())));
        batches.push(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers)?;
    }
    batches.finish()
}

/// Key/value strings as a dict, in their order.
pub(crate) fn props_dict<K: AsRef<str>>(py: Python<'_>, props: Vec<(K, String)>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in props {
        d.set_item(k.as_ref(), v)?;
    }
    Ok(d)
}
