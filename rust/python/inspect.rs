//! A read-only look at one log for tools (`kafkalog stats`): the cleaner's sections and choice
//! (`cleaner::inspection`), each segment's tombstones and their delete horizons, and what
//! retention would delete (`UnifiedLog::retention_plan`); the last cleans a log dir records
//! (`cleaner::last_clean`). Module functions over a
//! `_native.UnifiedLog` handle; they read only, so they work on a read-only open of a live
//! log. Glue only; results are frozen classes (`py_result!`).

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::cleaner::CleanerStats;
use super::errors::run;
use super::log::PyUnifiedLog;
use super::records::DeletedSegment;
use super::results::py_result;
use crate::cleaner::inspection;
use crate::cleaner::last_clean::read_last_cleans;
use crate::log::unified_log::RetentionOptions;

py_result! { record
    /// The cleaner's view of one log (`UnifiedLog.cleaner_sections`): its sections from the log
    /// dir's cleaner-offset-checkpoint, what ends the cleanable range, and whether Kafka's
    /// cleaner would clean it now.
    #[module = "kafkalog"]
    pub struct CleanableSections {
        /// The partition's cleaner-offset-checkpoint entry (the last clean's end), or None.
        checkpoint: Option<i64>,
        /// Where the dirty section starts (the entry healed into the log's range).
        first_dirty_offset: i64,
        /// Where the cleanable section ends (a segment base).
        first_uncleanable_offset: i64,
        /// What ends it: "active segment", "last stable offset" or "min.compaction.lag.ms".
        uncleanable_bound: String,
        clean_bytes: u64,
        cleanable_bytes: u64,
        uncleanable_bytes: u64,
        /// cleanable / (clean + cleanable): Kafka's dirty ratio.
        dirty_ratio: f64,
        /// How far past max.compaction.lag.ms the oldest dirty segment is (ms; 0 when not).
        max_compaction_delay_ms: i64,
        /// When max.compaction.lag.ms forces a clean (ms), None when it never does.
        max_compaction_lag_due_ms: Option<i64>,
        /// (base offset, ms when it becomes cleanable) of the segment min.compaction.lag.ms
        /// holds back, or None.
        lag_held_segment: Option<(i64, i64)>,
        /// Records in the cleanable section's segments (an upper bound of those to clean).
        records_to_clean: u64,
        /// Why Kafka's cleaner would not clean the log now ("delete policy: ...", "nothing
        /// dirty: ...", "below min.cleanable.dirty.ratio: ..."), None when it would.
        skipped: Option<String>,
    }
}

py_result! { record
    /// The tombstones of one segment and their delete horizons (`UnifiedLog.tombstones`).
    #[module = "kafkalog"]
    pub struct SegmentTombstones {
        base_offset: i64,
        /// Records with a null value in the segment's data batches.
        tombstones: u64,
        /// Of those, in batches a clean stamped with a delete horizon.
        with_horizon: u64,
        /// Of those, whose horizon has passed (the next clean removes them).
        past_horizon: u64,
        /// The earliest horizon still ahead (ms), or None.
        next_horizon_ms: Option<i64>,
        /// The latest horizon in the segment (ms), or None.
        last_horizon_ms: Option<i64>,
    }
}

py_result! { record
    /// What retention would delete now, without deleting (`UnifiedLog.retention_plan`).
    #[module = "kafkalog"]
    pub struct RetentionPlan {
        /// list[DeletedSegment]: what the run would delete, oldest first, with the reason.
        would_delete: Py<PyList>,
        /// The run's future-timestamp warnings.
        warnings: Py<PyList>,
        /// The log start offset after the run.
        log_start_offset: i64,
        /// (base offset, ms) of the next segment retention.ms deletes and from when, or None.
        next_expiry: Option<(i64, i64)>,
    }
}

py_result! { record
    /// The last clean of one partition, as its log dir's kafkalog-last-clean records it
    /// (`kafkalog._native.last_cleans`).
    #[module = "kafkalog"]
    pub struct LastClean {
        topic: String,
        partition: i32,
        /// When it finished (ms since the epoch).
        time_ms: i64,
        /// [first_dirty_offset, end_offset): the dirty range it cleaned; end_offset is the
        /// cleaner-offset-checkpoint entry it left.
        first_dirty_offset: i64,
        end_offset: i64,
        /// "log-cleaner" (a LogManager's cleaner) or "on-demand" (compact_dirty: kafkalog
        /// compact, the Spark compact job).
        by: String,
        stats: Py<CleanerStats>,
    }
}

/// The last cleans `log_dir`'s kafkalog-last-clean records, by topic and partition; empty
/// when it has none. Reads only.
///
/// # Errors
/// `OSError` naming the file when it cannot be read; `KafkaLogError` naming the file and line
/// when it is malformed.
#[pyfunction]
pub fn last_cleans(py: Python<'_>, log_dir: std::path::PathBuf) -> PyResult<Vec<LastClean>> {
    let cleans = run(py, move || read_last_cleans(&log_dir))?;
    cleans
        .into_iter()
        .map(|(tp, c)| {
            Ok(LastClean {
                topic: tp.topic,
                partition: tp.partition,
                time_ms: c.time_ms,
                first_dirty_offset: c.first_dirty_offset,
                end_offset: c.end_offset,
                by: c.by.name().to_string(),
                stats: CleanerStats::py(py, &c.stats)?,
            })
        })
        .collect()
}

/// The cleaner's sections of `log` at `time_ms`, from its log dir's cleaner-offset-checkpoint
/// (read, never written).
#[pyfunction]
pub fn cleaner_sections(py: Python<'_>, log: &PyUnifiedLog, time_ms: i64) -> PyResult<CleanableSections> {
    let log = log.inner().clone();
    let s = run(py, move || inspection::cleanable_sections(&log, time_ms))?;
    Ok(CleanableSections {
        checkpoint: s.checkpoint,
        first_dirty_offset: s.first_dirty_offset,
        first_uncleanable_offset: s.first_uncleanable_offset,
        uncleanable_bound: s.bound.name().to_string(),
        clean_bytes: s.clean_bytes,
        cleanable_bytes: s.cleanable_bytes,
        uncleanable_bytes: s.uncleanable_bytes,
        dirty_ratio: s.dirty_ratio,
        max_compaction_delay_ms: s.max_compaction_delay_ms,
        max_compaction_lag_due_ms: s.max_compaction_lag_due_ms,
        lag_held_segment: s.lag_held_segment,
        records_to_clean: s.records_to_clean,
        skipped: s.skip.map(|r| r.to_string()),
    })
}

/// Each segment's tombstones and their horizons at `time_ms` (reads every data batch).
#[pyfunction]
pub fn tombstones(py: Python<'_>, log: &PyUnifiedLog, time_ms: i64) -> PyResult<Vec<SegmentTombstones>> {
    let log = log.inner().clone();
    let census = run(py, move || inspection::tombstone_census(&log, time_ms))?;
    Ok(census
        .into_iter()
        .map(|t| SegmentTombstones {
            base_offset: t.base_offset,
            tombstones: t.tombstones,
            with_horizon: t.with_horizon,
            past_horizon: t.past_horizon,
            next_horizon_ms: t.next_horizon_ms,
            last_horizon_ms: t.last_horizon_ms,
        })
        .collect())
}

/// What retention would delete at `time_ms` with the log start at `log_start_offset` (or
/// above), without deleting.
#[pyfunction]
pub fn retention_plan(
    py: Python<'_>,
    log: &PyUnifiedLog,
    time_ms: i64,
    log_start_offset: i64,
    cap_future_timestamps: bool,
) -> PyResult<RetentionPlan> {
    let log = log.inner().clone();
    let options = RetentionOptions { cap_future_timestamps };
    let plan = run(py, move || log.retention_plan(time_ms, log_start_offset, options))?;
    Ok(RetentionPlan {
        would_delete: DeletedSegment::list(py, &plan.would_delete)?,
        warnings: PyList::new(py, &plan.warnings)?.unbind(),
        log_start_offset: plan.log_start_offset,
        next_expiry: plan.next_expiry,
    })
}
