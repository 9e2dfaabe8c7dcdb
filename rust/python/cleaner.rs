//! The cleaner's results as Python sees them: `kafkalog.CleanerStats` (its fields are the
//! engine's list, `cleaner_stats_fields!`, written once), `CleanPass`, `CompactResult` and
//! `DirtyCompactResult`, frozen classes that pickle (Spark ships them back to the driver).

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::results::py_result;
use crate::cleaner;
use crate::cleaner::cleaner_stats::cleaner_stats_fields;

const MB: f64 = 1024.0 * 1024.0;

macro_rules! py_cleaner_stats {
    ($( $(#[doc = $doc:literal])* $field:ident: $ty:ty ),* $(,)?) => {
        py_result! { record
            /// Counters and times of one clean (Kafka's CleanerStats), plus tombstone and copy
            /// counts Kafka does not report.
            #[module = "kafkalog"]
            pub struct CleanerStats {
                $( $(#[doc = $doc])* $field: $ty = Default::default(), )*
            }
            impl {
                /// The fields' names, in order (the Spark compact schema takes its stats columns'
                /// types from them).
                #[classattr]
                #[pyo3(name = "FIELDS")]
                fn fields(py: Python<'_>) -> PyResult<Py<PyTuple>> {
                    Ok(PyTuple::new(py, Self::FIELD_NAMES)?.unbind())
                }

                /// Share of bytes removed (Kafka's "% size reduction" / 100).
                #[getter]
                fn size_reduction(&self) -> f64 {
                    if self.bytes_read == 0 {
                        0.0
                    } else {
                        1.0 - self.bytes_written as f64 / self.bytes_read as f64
                    }
                }

                /// MB (MiB) recopied per second of the clean.
                #[getter]
                fn read_mb_per_sec(&self) -> f64 {
                    if self.elapsed_secs > 0.0 {
                        self.bytes_read as f64 / MB / self.elapsed_secs
                    } else {
                        0.0
                    }
                }
            }
        }

        impl From<&cleaner::CleanerStats> for CleanerStats {
            fn from(s: &cleaner::CleanerStats) -> Self {
                CleanerStats { $( $field: s.$field, )* }
            }
        }
    };
}
cleaner_stats_fields!(py_cleaner_stats);

impl CleanerStats {
    pub(crate) fn py(py: Python<'_>, s: &cleaner::CleanerStats) -> PyResult<Py<CleanerStats>> {
        Py::new(py, CleanerStats::from(s))
    }
}

fn default_stats() -> Py<CleanerStats> {
    Python::attach(|py| Py::new(py, CleanerStats::from(&cleaner::CleanerStats::default())))
        .expect("allocating an empty CleanerStats")
}

fn empty_list() -> Py<PyList> {
    Python::attach(|py| PyList::empty(py).unbind())
}

py_result! { record
    /// One pass: the map was built over ``[first_dirty_offset, end_offset)``.
    #[module = "kafkalog"]
    pub struct CleanPass {
        first_dirty_offset: i64,
        end_offset: i64,
        stats: Py<CleanerStats>,
        /// Kafka's INFO block for this clean, as the broker logs it.
        summary: String,
    }
}

py_result! { record
    /// The result of cleaning a log's whole cleanable range.
    #[module = "kafkalog"]
    pub struct CompactResult {
        /// list[CleanPass].
        passes: Py<PyList> = empty_list(),
        first_dirty_offset: i64 = 0,
        first_uncleanable_offset: i64 = 0,
        /// The new cleaner checkpoint: the first offset not cleaned.
        end_offset: i64 = 0,
        /// All passes together.
        stats: Py<CleanerStats> = default_stats(),
    }
}

impl CompactResult {
    /// `result` for Python; `name` and `thread_id` label the summary lines (Kafka's INFO block)
    /// of each pass.
    pub(crate) fn new(py: Python<'_>, r: &cleaner::CompactResult, thread_id: usize, name: &str) -> PyResult<Self> {
        let passes = r.passes.iter().map(|p| {
            let pass = CleanPass {
                first_dirty_offset: p.first_dirty_offset,
                end_offset: p.end_offset,
                stats: CleanerStats::py(py, &p.stats)?,
                summary: p.stats.summary(thread_id, name, p.first_dirty_offset, p.end_offset),
            };
            Py::new(py, pass)
        });
        Ok(CompactResult {
            passes: PyList::new(py, passes.collect::<PyResult<Vec<_>>>()?)?.unbind(),
            first_dirty_offset: r.first_dirty_offset,
            first_uncleanable_offset: r.first_uncleanable_offset,
            end_offset: r.end_offset,
            stats: CleanerStats::py(py, &r.stats)?,
        })
    }
}

py_result! { record
    /// What `UnifiedLog.compact_dirty` did: the partition's `cleaner-offset-checkpoint` entry
    /// read, the dirty section, the clean or why there was none, and the entry written back.
    #[module = "kafkalog"]
    pub struct DirtyCompactResult {
        /// The entry before the clean (None: no file or no entry).
        checkpoint: Option<i64> = None,
        /// Where the dirty section started (the entry healed into the log's range).
        first_dirty_offset: i64 = 0,
        /// Where the cleanable range ended.
        first_uncleanable_offset: i64 = 0,
        /// Cleanable bytes over clean + cleanable bytes (Kafka's dirty ratio).
        cleanable_ratio: f64 = 0.0,
        /// The clean, when one ran.
        result: Option<Py<CompactResult>> = None,
        /// Why no clean ran: starts with "delete policy", "nothing dirty" or "below
        /// min.cleanable.dirty.ratio".
        skipped: Option<String> = None,
        /// The entry written back, when one was.
        checkpoint_written: Option<i64> = None,
        /// Why the entry could not be written (the clean stands; the next starts from the old entry).
        checkpoint_error: Option<String> = None,
    }
}

impl DirtyCompactResult {
    /// `outcome` for Python; `name` labels the passes' summaries.
    pub(crate) fn new(py: Python<'_>, outcome: &cleaner::DirtyClean, name: &str) -> PyResult<Self> {
        let result = match &outcome.result {
            Some(r) => Some(Py::new(py, CompactResult::new(py, r, 0, name)?)?),
            None => None,
        };
        Ok(DirtyCompactResult {
            checkpoint: outcome.checkpoint,
            first_dirty_offset: outcome.first_dirty_offset,
            first_uncleanable_offset: outcome.first_uncleanable_offset,
            cleanable_ratio: outcome.cleanable_ratio,
            result,
            skipped: outcome.skipped.as_ref().map(ToString::to_string),
            checkpoint_written: outcome.checkpoint_written,
            checkpoint_error: outcome.checkpoint_error.as_ref().map(ToString::to_string),
        })
    }
}
