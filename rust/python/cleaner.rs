//! Python views of the cleaner's results: `kafkalog.cleaner.CleanerStats`, `CleanPass` and
//! `CompactResult` (frozen dataclasses defined in Python, so Spark can pickle them) built from
//! the Rust structs, the options of an on-demand clean, and the offset maps on-demand cleans
//! reuse.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cleaner::{CleanerParams, CleanerStats, CompactResult, SkimpyOffsetMap, Throttler};
use crate::error::{Error, Result};

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

/// Offset maps of finished on-demand cleans (`UnifiedLog.compact_now`), kept for the next
/// one, as a cleaner thread keeps its map for life: the first touch of a fresh map's memory
/// (the kernel zeroing 128 MiB of pages, slower still in a VM) can cost as much as cleaning a
/// few hundred MB. At most [`MAX_IDLE_MAPS`] are kept (two concurrent cleans' worth).
static IDLE_MAPS: Mutex<Vec<SkimpyOffsetMap>> = Mutex::new(Vec::new());
const MAX_IDLE_MAPS: usize = 2;

/// An idle map of the size `memory` asks for, or a new one.
fn take_idle_map(memory: usize) -> Result<SkimpyOffsetMap> {
    let slots = memory.min(crate::cleaner::offset_map::MAX_MAP_BYTES) / crate::cleaner::offset_map::BYTES_PER_ENTRY;
    let mut idle = IDLE_MAPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(i) = idle.iter().position(|m| m.slots() == slots) {
        return Ok(idle.swap_remove(i));
    }
    drop(idle);
    SkimpyOffsetMap::new(memory)
}

/// Keeps `map` for the next on-demand clean (the newest maps win when too many are idle).
pub(crate) fn return_idle_map(map: SkimpyOffsetMap) {
    let mut idle = IDLE_MAPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    idle.push(map);
    if idle.len() > MAX_IDLE_MAPS {
        idle.remove(0);
    }
}

/// The sizes of an on-demand clean, checked with the broker keys' names and ranges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnDemandCleaner {
    pub dedupe_buffer_size: i64,
    pub load_factor: f64,
    pub io_buffer_size: i64,
    pub max_io_bytes_per_second: Option<f64>,
}

impl OnDemandCleaner {
    /// The limits of an on-demand clean, each error naming the broker key.
    pub(crate) fn check(&self) -> Result<()> {
        if self.dedupe_buffer_size < 1 {
            return Err(Error::invalid_config(
                "log.cleaner.dedupe.buffer.size",
                self.dedupe_buffer_size,
                "must be >= 1",
            ));
        }
        if self.load_factor.is_nan() || self.load_factor <= 0.0 || self.load_factor > 1.0 {
            return Err(Error::invalid_config(
                "log.cleaner.io.buffer.load.factor",
                self.load_factor,
                "must be in (0, 1]",
            ));
        }
        if self.io_buffer_size < 2 || self.io_buffer_size > i64::from(i32::MAX) {
            return Err(Error::invalid_config(
                "log.cleaner.io.buffer.size",
                self.io_buffer_size,
                "must be in [2, 2147483647]",
            ));
        }
        let rate = self.max_io_bytes_per_second.unwrap_or(f64::MAX);
        if rate.is_nan() || rate <= 0.0 {
            return Err(Error::invalid_config("log.cleaner.io.max.bytes.per.second", rate, "must be > 0"));
        }
        Ok(())
    }

    /// A cleaner with its own map, built on the calling (GIL-free) thread.
    pub(crate) fn build(self, clock: crate::util::clock::SharedClock) -> Result<crate::cleaner::Cleaner> {
        self.check()?;
        let rate = self.max_io_bytes_per_second.unwrap_or(f64::MAX);
        let map = take_idle_map(self.dedupe_buffer_size.min(i64::from(i32::MAX)) as usize)?;
        let params = CleanerParams {
            io_buffer_size: (self.io_buffer_size / 2) as usize,
            dedupe_buffer_load_factor: self.load_factor,
            ..CleanerParams::default()
        };
        let throttler = Arc::new(Throttler::new(rate, crate::cleaner::throttler::CHECK_INTERVAL));
        crate::cleaner::Cleaner::new(0, map, params, throttler, clock)
    }
}
