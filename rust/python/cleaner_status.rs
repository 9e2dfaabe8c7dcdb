//! Python views of the log cleaner as the `LogManager` runs it: `kafkalog.CleanerStatus` (one
//! compacted partition's compaction picture), the gauges as a dict keyed by Kafka's metric
//! names, and the outcome of one cleaner-loop iteration.

use std::fmt::Write as _;
use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::cleaner::stats_to_py;
use crate::cleaner::cleaner_status::CleanerPartitionStatus;
use crate::cleaner::log_cleaner::{CleanOutcome, CleanStatus, CleanerMetrics};

/// The compaction status of one compacted partition (see `LogManager.cleaner_status`): a
/// frozen snapshot, safe to share between threads.
#[pyclass(frozen, name = "CleanerStatus", module = "kafkalog._native")]
pub struct PyCleanerStatus {
    #[pyo3(get)]
    topic: String,
    #[pyo3(get)]
    partition: i32,
    #[pyo3(get)]
    log_dir: String,
    #[pyo3(get)]
    state: String,
    #[pyo3(get)]
    pause_reasons: Vec<String>,
    #[pyo3(get)]
    cleanup_policy: String,
    #[pyo3(get)]
    log_start_offset: i64,
    #[pyo3(get)]
    log_end_offset: i64,
    #[pyo3(get)]
    first_dirty_offset: i64,
    #[pyo3(get)]
    first_uncleanable_offset: i64,
    #[pyo3(get)]
    clean_bytes: u64,
    #[pyo3(get)]
    cleanable_bytes: u64,
    #[pyo3(get)]
    uncleanable_bytes: u64,
    #[pyo3(get)]
    dirty_ratio: f64,
    #[pyo3(get)]
    min_cleanable_dirty_ratio: f64,
    #[pyo3(get)]
    max_compaction_delay_ms: i64,
    #[pyo3(get)]
    records_to_clean: u64,
    #[pyo3(get)]
    passes_needed: u64,
    #[pyo3(get)]
    map_capacity: u64,
    #[pyo3(get)]
    last_clean_ms: Option<i64>,
    #[pyo3(get)]
    last_clean_range: Option<(i64, i64)>,
    stats: Option<Py<PyAny>>,
    #[pyo3(get)]
    uncleanable_reason: Option<String>,
    #[pyo3(get)]
    uncleanable_since_ms: Option<i64>,
    #[pyo3(get)]
    error: Option<String>,
}

impl PyCleanerStatus {
    pub(crate) fn new(py: Python<'_>, s: CleanerPartitionStatus) -> PyResult<Self> {
        let stats = s.last_clean_stats.as_ref().map(|st| stats_to_py(py, st).map(Bound::unbind)).transpose()?;
        Ok(PyCleanerStatus {
            topic: s.topic_partition.topic,
            partition: s.topic_partition.partition,
            log_dir: s.log_dir.to_string_lossy().into_owned(),
            state: s.state,
            pause_reasons: s.pause_reasons,
            cleanup_policy: s.cleanup_policy,
            log_start_offset: s.log_start_offset,
            log_end_offset: s.log_end_offset,
            first_dirty_offset: s.first_dirty_offset,
            first_uncleanable_offset: s.first_uncleanable_offset,
            clean_bytes: s.clean_bytes,
            cleanable_bytes: s.cleanable_bytes,
            uncleanable_bytes: s.uncleanable_bytes,
            dirty_ratio: s.dirty_ratio,
            min_cleanable_dirty_ratio: s.min_cleanable_dirty_ratio,
            max_compaction_delay_ms: s.max_compaction_delay_ms,
            records_to_clean: s.records_to_clean,
            passes_needed: s.passes_needed,
            map_capacity: s.map_capacity,
            last_clean_ms: s.last_clean_ms,
            last_clean_range: s.last_clean_range,
            stats,
            uncleanable_reason: s.uncleanable_reason,
            uncleanable_since_ms: s.uncleanable_since_ms,
            error: s.error,
        })
    }
}

#[pymethods]
impl PyCleanerStatus {
    /// The last clean's `kafkalog.CleanerStats`, if the partition was cleaned since start-up.
    #[getter]
    fn last_clean_stats(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.stats.as_ref().map(|s| s.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        let mut out = format!(
            "CleanerStatus({}-{}, state={}, dirty_ratio={:.3}, dirty=[{}, {}), clean_bytes={}, cleanable_bytes={}, \
             passes_needed={}",
            self.topic,
            self.partition,
            self.state,
            self.dirty_ratio,
            self.first_dirty_offset,
            self.first_uncleanable_offset,
            self.clean_bytes,
            self.cleanable_bytes,
            self.passes_needed
        );
        if let Some(ms) = self.last_clean_ms {
            let _ = write!(out, ", last_clean_ms={ms}");
        }
        if let Some(reason) = &self.uncleanable_reason {
            let _ = write!(out, ", uncleanable_reason={reason:?}");
        }
        if let Some(error) = &self.error {
            let _ = write!(out, ", error={error:?}");
        }
        out.push(')');
        out
    }
}

/// The gauges keyed by Kafka's names; the per-dir ones also as
/// `<name>,logDirectory=<dir>` (the tag Kafka's MBean carries).
pub(crate) fn metrics_to_py<'py>(py: Python<'py>, m: &CleanerMetrics) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("max-dirty-percent", m.max_dirty_percent)?;
    d.set_item("max-buffer-utilization-percent", m.max_buffer_utilization_percent)?;
    d.set_item("cleaner-recopy-percent", m.cleaner_recopy_percent)?;
    d.set_item("max-clean-time-secs", m.max_clean_time_secs)?;
    d.set_item("max-compaction-delay-secs", m.max_compaction_delay_secs)?;
    d.set_item("DeadThreadCount", m.dead_thread_count)?;
    d.set_item("dead-thread-restarts", m.dead_thread_restarts)?;
    d.set_item("time-since-last-run-ms", m.time_since_last_run_ms)?;
    d.set_item("uncleanable-partitions-count", m.uncleanable_partitions_count.values().sum::<usize>())?;
    d.set_item("uncleanable-bytes", m.uncleanable_bytes.values().sum::<u64>())?;
    let tag = |name: &str, dir: &Path| format!("{name},logDirectory={}", dir.display());
    for (dir, n) in &m.uncleanable_partitions_count {
        d.set_item(tag("uncleanable-partitions-count", dir), n)?;
    }
    for (dir, n) in &m.uncleanable_bytes {
        d.set_item(tag("uncleanable-bytes", dir), n)?;
    }
    d.set_item("threads", m.threads)?;
    Ok(d)
}

/// (topic, partition, first_dirty_offset, end_offset, status, reason, stats) of one iteration.
pub(crate) type PyOutcome = (String, i32, i64, i64, &'static str, Option<String>, Option<Py<PyAny>>);

pub(crate) fn outcome_to_py(py: Python<'_>, o: &CleanOutcome) -> PyResult<PyOutcome> {
    let (status, reason, stats) = match &o.status {
        CleanStatus::Cleaned(s) => ("cleaned", None, Some(stats_to_py(py, s)?.unbind())),
        CleanStatus::Aborted => ("aborted", None, None),
        CleanStatus::Offline(r) => ("offline", Some(r.clone()), None),
        CleanStatus::Uncleanable(r) => ("uncleanable", Some(r.clone()), None),
        CleanStatus::Panicked(r) => ("panicked", Some(r.clone()), None),
    };
    let tp = &o.topic_partition;
    Ok((tp.topic.clone(), tp.partition, o.first_dirty_offset, o.end_offset, status, reason, stats))
}
