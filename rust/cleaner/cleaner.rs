//! Cleaning one log (Kafka's `Cleaner`).

use std::sync::Arc;

use super::cleaner_stats::CleanerStats;
use super::log_to_clean::LogToClean;
use super::offset_map::SkimpyOffsetMap;
use super::throttler::Throttler;
use crate::error::{Error, Result};
use crate::log::unified_log::UnifiedLog;
use crate::util::clock::SharedClock;

/// Sizes and limits of one cleaner thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerParams {
    /// Read and write buffer size each (Kafka: `log.cleaner.io.buffer.size / threads / 2`).
    pub io_buffer_size: usize,
    /// Largest the buffers may grow for one batch (Kafka: broker `message.max.bytes`).
    pub max_io_buffer_size: usize,
    /// Share of the map's slots a pass may fill (`log.cleaner.io.buffer.load.factor`).
    pub dedupe_buffer_load_factor: f64,
    /// Producers whose last batch is older than this are no longer active
    /// (`producer.id.expiration.ms`, default one day).
    pub producer_id_expiration_ms: i64,
}

/// Cleans logs with one offset map. Mirrors Kafka's `Cleaner`. Not thread-safe: one per
/// cleaner thread.
pub struct Cleaner {
    id: usize,
    map: SkimpyOffsetMap,
    params: CleanerParams,
    throttler: Arc<Throttler>,
    clock: SharedClock,
}

impl Cleaner {
    /// A cleaner owning `map`.
    pub fn new(id: usize, map: SkimpyOffsetMap, params: CleanerParams, throttler: Arc<Throttler>, clock: SharedClock) -> Result<Self> {
        Ok(Cleaner { id, map, params, throttler, clock })
    }
    /// The id used in log lines.
    pub fn id(&self) -> usize {
        self.id
    }
    /// The offset map.
    pub fn offset_map(&self) -> &SkimpyOffsetMap {
        &self.map
    }
    /// Cleans `to_clean` at the clock's time; returns the first offset not cleaned (the new
    /// checkpoint) and the stats. `check_done` is called at every chunk and may return
    /// `Error::LogCleaningAborted` to stop.
    pub fn clean(&mut self, to_clean: &LogToClean, check_done: &dyn Fn() -> Result<()>) -> Result<(i64, CleanerStats)> {
        let now = self.clock.milliseconds();
        self.do_clean(to_clean, now, check_done)
    }
    /// Cleans `to_clean` as if the time were `now`.
    pub fn do_clean(&mut self, to_clean: &LogToClean, now: i64, check_done: &dyn Fn() -> Result<()>) -> Result<(i64, CleanerStats)> {
        let _ = (to_clean, now, check_done, &self.map, &self.params, &self.throttler);
        Err(Error::illegal_state("not yet"))
    }
}

/// What `compact_log` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompactOptions {
    /// Start of the dirty section (the checkpoint); `None` = the log start.
    pub first_dirty_offset: Option<i64>,
    /// The time to clean at (tombstone horizons, compaction lags); `None` = the clock's.
    pub now_ms: Option<i64>,
}

/// One pass of a clean.
#[derive(Debug, Clone)]
pub struct CleanPass {
    /// Dirty section start.
    pub first_dirty_offset: i64,
    /// First offset not cleaned by this pass.
    pub end_offset: i64,
    /// Stats.
    pub stats: CleanerStats,
}

/// The result of cleaning a log's whole cleanable range.
#[derive(Debug, Clone)]
pub struct CompactResult {
    /// The passes run (empty when there was nothing to clean).
    pub passes: Vec<CleanPass>,
    /// Where the dirty section started.
    pub first_dirty_offset: i64,
    /// The cleanable range ended here.
    pub first_uncleanable_offset: i64,
    /// The new checkpoint: the first offset not cleaned.
    pub end_offset: i64,
    /// All passes' counters together.
    pub stats: CleanerStats,
}

/// Cleans the whole cleanable range of `log` (from the checkpoint to the first uncleanable
/// offset) with `cleaner`, in as many passes as its map needs.
pub fn compact_log(
    cleaner: &mut Cleaner,
    log: &Arc<UnifiedLog>,
    options: &CompactOptions,
    check_done: &dyn Fn() -> Result<()>,
) -> Result<CompactResult> {
    let _ = (cleaner, log, options, check_done);
    Err(Error::illegal_state("not yet"))
}
