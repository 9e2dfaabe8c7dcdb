//! Python views of the log cleaner as the `LogManager` runs it: `kafkalog.CleanerStatus` (one
//! compacted partition's compaction picture), the gauges as a dict keyed by Kafka's metric
//! names, and `kafkalog.CleanOutcome` (one cleaner-loop iteration).

use std::fmt::Write as _;
use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::cleaner::CleanerStats;
use super::records::path_str;
use super::results::py_result;
use crate::cleaner::cleaner_status::CleanerPartitionStatus;
use crate::cleaner::log_cleaner::{CleanOutcome as CleanOutcome_, CleanStatus, CleanerMetrics};

py_result! { record_custom_repr
    /// The compaction picture of one compacted partition (LogManager.cleaner_status): a frozen
    /// snapshot.
    #[module = "kafkalog"]
    pub struct CleanerStatus {
        topic: String,
        partition: i32,
        log_dir: Py<PyString>,
        /// ``none``, ``in-progress``, ``aborted`` or ``paused(n)``.
        state: String,
        /// Who paused the partition, one entry per pause still to be resumed.
        pause_reasons: Vec<String>,
        cleanup_policy: String,
        log_start_offset: i64,
        log_end_offset: i64,
        /// Where the dirty section starts: the cleaner checkpoint, healed into the log.
        first_dirty_offset: i64,
        /// Where the cleanable section ends (a segment base).
        first_uncleanable_offset: i64,
        clean_bytes: u64,
        cleanable_bytes: u64,
        /// Bytes from the cleanable section's end to the log end.
        uncleanable_bytes: u64,
        /// cleanable / (clean + cleanable): Kafka's cleanable ratio.
        dirty_ratio: f64,
        min_cleanable_dirty_ratio: f64,
        /// How far past max.compaction.lag.ms the oldest dirty segment is (0 when not).
        max_compaction_delay_ms: i64,
        /// Records in the cleanable section's segments (exact per segment; an upper bound).
        records_to_clean: u64,
        /// ceil(records_to_clean / map_capacity): an upper bound, since duplicate keys share a
        /// slot.
        passes_needed: u64,
        /// Keys one pass of a cleaner thread's offset map holds.
        map_capacity: u64,
        last_clean_ms: Option<i64>,
        /// [first dirty offset, end offset) of the last clean.
        last_clean_range: Option<(i64, i64)>,
        /// The last clean's stats, if the partition was cleaned since start-up.
        last_clean_stats: Option<Py<CleanerStats>>,
        uncleanable_reason: Option<String>,
        uncleanable_since_ms: Option<i64>,
        /// Why the sections could not be computed (they are then 0).
        error: Option<String>,
    }
    impl {
        fn __repr__(&self) -> String {
            self.summary()
        }
    }
}

impl CleanerStatus {
    pub(crate) fn new(py: Python<'_>, s: CleanerPartitionStatus) -> PyResult<Self> {
        let stats = s.last_clean_stats.as_ref().map(|st| CleanerStats::py(py, st)).transpose()?;
        Ok(CleanerStatus {
            topic: s.topic_partition.topic,
            partition: s.topic_partition.partition,
            log_dir: path_str(py, &s.log_dir)?,
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
            last_clean_stats: stats,
            uncleanable_reason: s.uncleanable_reason,
            uncleanable_since_ms: s.uncleanable_since_ms,
            error: s.error,
        })
    }

    /// The `repr`: the partition, its state and sections, and what went wrong.
    fn summary(&self) -> String {
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

py_result! { sequence
    /// One iteration of a cleaner thread's loop (LogManager.run_cleaner_once): the partition
    /// chosen and how its clean ended.
    #[module = "kafkalog"]
    pub struct CleanOutcome {
        topic: String,
        partition: i32,
        /// The cleaner checkpoint the clean started from.
        first_dirty_offset: i64,
        /// The checkpoint it left (unchanged unless ``status`` is ``"cleaned"``).
        end_offset: i64,
        /// ``cleaned``, ``aborted`` (paused, truncated or closed meanwhile), ``offline`` (the log
        /// dir failed), ``uncleanable`` (the clean failed: the partition is skipped until
        /// retried) or ``panicked`` (a bug: uncleanable too, and a cleaner thread would have
        /// died).
        status: String,
        /// Why it was not cleaned.
        reason: Option<String>,
        /// Kafka's CleanerStats of the clean, when cleaned.
        stats: Option<Py<CleanerStats>>,
    }
}

impl CleanOutcome {
    pub(crate) fn new(py: Python<'_>, o: &CleanOutcome_) -> PyResult<Self> {
        let (status, reason, stats) = match &o.status {
            CleanStatus::Cleaned(s) => ("cleaned", None, Some(CleanerStats::py(py, s)?)),
            CleanStatus::Aborted => ("aborted", None, None),
            CleanStatus::Offline(r) => ("offline", Some(r.clone()), None),
            CleanStatus::Uncleanable(r) => ("uncleanable", Some(r.clone()), None),
            CleanStatus::Panicked(r) => ("panicked", Some(r.clone()), None),
        };
        let tp = &o.topic_partition;
        Ok(CleanOutcome {
            topic: tp.topic.clone(),
            partition: tp.partition,
            first_dirty_offset: o.first_dirty_offset,
            end_offset: o.end_offset,
            status: status.to_string(),
            reason,
            stats,
        })
    }
}
