//! Python views of the cleaner's results: `kafkalog.cleaner.CleanerStats`, `CleanPass` and
//! `CompactResult` (frozen dataclasses defined in Python, so Spark can pickle them) built from
//! the Rust structs.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cleaner::{CleanerStats, CompactResult};

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("kafkalog.cleaner")?.getattr(name)
}

/// `kafkalog.cleaner.CleanerStats` from `stats`.
pub(crate) fn stats_to_py<'py>(py: Python<'py>, s: &CleanerStats) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    d.set_item("bytes_read", s.bytes_read)?;
    d.set_item("bytes_written", s.bytes_written)?;
    d.set_item("map_bytes_read", s.map_bytes_read)?;
    d.set_item("map_messages_read", s.map_messages_read)?;
    d.set_item("messages_read", s.messages_read)?;
    d.set_item("invalid_messages_read", s.invalid_messages_read)?;
    d.set_item("messages_written", s.messages_written)?;
    d.set_item("buffer_utilization", s.buffer_utilization)?;
    d.set_item("elapsed_secs", s.elapsed_secs)?;
    d.set_item("elapsed_index_secs", s.elapsed_index_secs)?;
    d.set_item("tombstones_retained", s.tombstones_retained)?;
    d.set_item("tombstones_removed", s.tombstones_removed)?;
    d.set_item("batches_copied_verbatim", s.batches_copied_verbatim)?;
    d.set_item("segments_written", s.segments_written)?;
    d.set_item("segments_kept", s.segments_kept)?;
    d.set_item("throttled_ms", s.throttled_ms)?;
    class(py, "CleanerStats")?.call((), Some(&d))
}

/// `kafkalog.cleaner.CompactResult` from `result`; `name` and `thread_id` label the summary
/// lines (Kafka's INFO block) of each pass.
pub(crate) fn compact_result_to_py<'py>(
    py: Python<'py>,
    r: &CompactResult,
    thread_id: usize,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let pass_cls = class(py, "CleanPass")?;
    let mut passes = Vec::with_capacity(r.passes.len());
    for p in &r.passes {
        let summary = p.stats.summary(thread_id, name, p.first_dirty_offset, p.end_offset);
        passes.push(pass_cls.call1((p.first_dirty_offset, p.end_offset, stats_to_py(py, &p.stats)?, summary))?);
    }
    let d = PyDict::new(py);
    d.set_item("passes", passes)?;
    d.set_item("first_dirty_offset", r.first_dirty_offset)?;
    d.set_item("first_uncleanable_offset", r.first_uncleanable_offset)?;
    d.set_item("end_offset", r.end_offset)?;
    d.set_item("stats", stats_to_py(py, &r.stats)?)?;
    class(py, "CompactResult")?.call((), Some(&d))
}
