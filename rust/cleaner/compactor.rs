//! On-demand compaction of one log, outside the cleaner threads (`UnifiedLog.compact_now` in
//! Python): the sizes of the clean read from a [`CleanerConfig`] and checked with the broker
//! keys' names and ranges, the refusal of a log that is not compacted, and a process-wide pool
//! of idle offset maps that such cleans reuse.
//!
//! Kafka has no such class: its cleaner threads (`LogCleaner.CleanerThread`) each build one
//! `Cleaner` with its own `SkimpyOffsetMap` and keep both for life. A [`Compactor`] builds the
//! same `Cleaner` for one call, and the [`OffsetMapPool`] plays the part of the thread that
//! keeps its map.
//!
//! Thread-safety: a [`Compactor`] is a plain value (`Send + Sync`); each
//! [`Compactor::compact`] runs on the caller's thread with a cleaner of its own, so calls on
//! different logs run in parallel. The [`OffsetMapPool`] is `Sync`: one mutex, held only to
//! take or return a map, never while a map is allocated or a log is cleaned.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::cleaner::{Cleaner, CleanerParams};
use super::compact::{compact_log, CompactOptions, CompactResult};
use super::decision_mode::DecisionMode;
use super::offset_map::{SkimpyOffsetMap, BYTES_PER_ENTRY, MAX_MAP_BYTES};
use super::throttler::{Throttler, CHECK_INTERVAL};
use crate::config::CleanerConfig;
use crate::error::{Error, Result};
use crate::log::unified_log::{check_first_dirty_offset, UnifiedLog};
use crate::util::clock::SharedClock;
use crate::util::progress::ProgressSink;

/// How many idle maps the process-wide pool keeps: two concurrent on-demand cleans' worth.
pub const MAX_IDLE_MAPS: usize = 2;

/// The range of `log.cleaner.io.buffer.size` for an on-demand clean (half of it reads, half
/// writes, so it needs two bytes), as its refusal states it.
pub const IO_BUFFER_SIZE_RANGE: &str = "must be in [2, 2147483647]";

/// Offset maps of finished on-demand cleans, kept for the next one, as a cleaner thread keeps
/// its map for life: the first touch of a fresh map's memory (the kernel zeroing 128 MiB of
/// pages, slower still in a VM) can cost as much as cleaning a few hundred MB. Keeps at most
/// `max_idle` maps; when more come back, the oldest goes. `Sync`.
#[derive(Debug)]
pub struct OffsetMapPool {
    idle: Mutex<Vec<SkimpyOffsetMap>>,
    max_idle: usize,
}

static SHARED_POOL: LazyLock<Arc<OffsetMapPool>> = LazyLock::new(|| Arc::new(OffsetMapPool::new(MAX_IDLE_MAPS)));

impl OffsetMapPool {
    /// An empty pool keeping at most `max_idle` maps.
    pub fn new(max_idle: usize) -> Self {
        OffsetMapPool { idle: Mutex::new(Vec::new()), max_idle }
    }

    /// The pool of this process (at most [`MAX_IDLE_MAPS`] idle maps).
    pub fn shared() -> Arc<OffsetMapPool> {
        SHARED_POOL.clone()
    }

    /// An idle map of the size `memory` bytes give (as [`SkimpyOffsetMap::new`] sizes it), or a
    /// new one, allocated without holding the pool's lock.
    ///
    /// # Errors
    /// `InvalidConfig` (`log.cleaner.dedupe.buffer.size`) when `memory` holds no slot; an
    /// allocation failure.
    pub fn take(&self, memory: usize) -> Result<SkimpyOffsetMap> {
        let slots = memory.min(MAX_MAP_BYTES) / BYTES_PER_ENTRY;
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = idle.iter().position(|m| m.slots() == slots) {
            return Ok(idle.swap_remove(i));
        }
        drop(idle);
        SkimpyOffsetMap::new(memory)
    }

    /// Keeps `map` for a later [`OffsetMapPool::take`] (the newest maps win when too many are
    /// idle).
    pub fn give_back(&self, map: SkimpyOffsetMap) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.push(map);
        if idle.len() > self.max_idle {
            idle.remove(0);
        }
    }

    /// How many maps are idle now.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Cleans one log's whole cleanable range on demand, with the sizes of a [`CleanerConfig`]
/// (`log.cleaner.dedupe.buffer.size`, `log.cleaner.io.buffer.load.factor`,
/// `log.cleaner.io.buffer.size`, `log.cleaner.io.max.bytes.per.second`; the thread count and
/// the other keys are not used: the clean runs on the caller's thread with the whole buffer).
/// A plain value; see the module docs.
#[derive(Debug, Clone)]
pub struct Compactor {
    config: CleanerConfig,
    pool: Arc<OffsetMapPool>,
    clock: SharedClock,
}

impl Compactor {
    /// A compactor with `config`'s sizes that takes its maps from the process-wide pool.
    /// Nothing is checked or allocated until [`Compactor::compact`].
    pub fn new(config: CleanerConfig, clock: SharedClock) -> Self {
        Self::with_pool(config, clock, OffsetMapPool::shared())
    }

    /// As [`Compactor::new`], with maps from `pool`.
    pub fn with_pool(config: CleanerConfig, clock: SharedClock, pool: Arc<OffsetMapPool>) -> Self {
        Compactor { config, pool, clock }
    }

    /// Cleans the whole cleanable range of `log` now, in as many passes as the map needs (see
    /// [`compact_log`]), then keeps the map in the pool. Refused before anything changes: a log
    /// whose `cleanup.policy` lacks `compact` (unless `ignore_cleanup_policy`), a
    /// `first_dirty_offset` outside `[0, log end]`, sizes outside their keys' ranges.
    ///
    /// # Errors
    /// `InvalidConfig` naming `cleanup.policy` or the cleaner key; `InvalidArgument` naming
    /// `first_dirty_offset`; the clean's errors (`LogCleaningAborted` when the log is truncated
    /// or closed meanwhile).
    pub fn compact(
        &self,
        log: &Arc<UnifiedLog>,
        options: &CompactOptions,
        ignore_cleanup_policy: bool,
    ) -> Result<CompactResult> {
        self.compact_with_progress(log, options, ignore_cleanup_policy, None)
    }

    /// [`Compactor::compact`], reporting each round's progress to `progress` (see
    /// `Cleaner::set_progress`); cancelling it stops the clean with `LogCleaningAborted`.
    pub fn compact_with_progress(
        &self,
        log: &Arc<UnifiedLog>,
        options: &CompactOptions,
        ignore_cleanup_policy: bool,
        progress: Option<ProgressSink>,
    ) -> Result<CompactResult> {
        check_compactable(log, ignore_cleanup_policy)?;
        if let Some(offset) = options.first_dirty_offset {
            check_first_dirty_offset(log, offset)?;
        }
        let mut cleaner = self.cleaner()?;
        cleaner.set_progress(progress);
        let result = compact_log(&mut cleaner, log, options, &|| Ok(()));
        self.pool.give_back(cleaner.into_offset_map());
        result
    }

    /// The compactor clock's time, in milliseconds (a clean's default "now").
    pub fn now_ms(&self) -> i64 {
        self.clock.milliseconds()
    }

    /// A cleaner with the configured sizes and a map from the pool.
    ///
    /// # Errors
    /// `InvalidConfig` naming the key whose value is out of range (see [`check_sizes`]).
    pub fn cleaner(&self) -> Result<Cleaner> {
        let c = &self.config;
        check_sizes(c)?;
        let map = self.pool.take(usize::try_from(c.dedupe_buffer_size.min(i64::from(i32::MAX))).unwrap_or(0))?;
        let params = CleanerParams {
            io_buffer_size: usize::try_from(c.io_buffer_size / 2).unwrap_or(0),
            dedupe_buffer_load_factor: c.dedupe_buffer_load_factor,
            decision_mode: DecisionMode::of_config(c.sliced_decisions),
            ..CleanerParams::default()
        };
        let throttler = Arc::new(Throttler::new(c.max_io_bytes_per_second, CHECK_INTERVAL));
        Cleaner::new(0, map, params, throttler, self.clock.clone())
    }
}

/// The sizes an on-demand clean needs: a dedupe buffer of at least 1 byte (a map too small for
/// one slot is refused when allocated), a load factor in (0, 1], an I/O buffer in
/// [`IO_BUFFER_SIZE_RANGE`] and a positive rate. (A cleaner thread's start-up check,
/// [`CleanerConfig::validate`], asks more: over 1 MiB of buffer per thread.)
///
/// # Errors
/// `InvalidConfig` naming the first key out of range, its value and the rule.
pub fn check_sizes(c: &CleanerConfig) -> Result<()> {
    if c.dedupe_buffer_size < 1 {
        return Err(Error::invalid_config("log.cleaner.dedupe.buffer.size", c.dedupe_buffer_size, "must be >= 1"));
    }
    let load_factor = c.dedupe_buffer_load_factor;
    if load_factor.is_nan() || load_factor <= 0.0 || load_factor > 1.0 {
        return Err(Error::invalid_config("log.cleaner.io.buffer.load.factor", load_factor, "must be in (0, 1]"));
    }
    if c.io_buffer_size < 2 {
        return Err(Error::invalid_config("log.cleaner.io.buffer.size", c.io_buffer_size, IO_BUFFER_SIZE_RANGE));
    }
    let rate = c.max_io_bytes_per_second;
    if rate.is_nan() || rate <= 0.0 {
        return Err(Error::invalid_config("log.cleaner.io.max.bytes.per.second", rate, "must be > 0"));
    }
    Ok(())
}

/// An on-demand clean keeps only the latest record of each key and drops records without a
/// key: on a log whose `cleanup.policy` lacks `compact`, that loses data the topic keeps, so it
/// is refused (with `LogManager.compact_now`'s error) unless the caller insists.
fn check_compactable(log: &UnifiedLog, ignore_cleanup_policy: bool) -> Result<()> {
    let config = log.config();
    if config.compact() || ignore_cleanup_policy {
        return Ok(());
    }
    Err(Error::invalid_config(
        "cleanup.policy",
        config.cleanup_policy,
        format!(
            "partition {} is not compacted: compact_now needs cleanup.policy to contain compact (a clean keeps \
             only the latest record of each key and drops records without a key); open the log with \
             cleanup.policy=compact, or pass ignore_cleanup_policy=True to compact it anyway",
            log.topic_partition()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dedupe: i64, load_factor: f64, io: i32, rate: f64) -> CleanerConfig {
        CleanerConfig {
            dedupe_buffer_size: dedupe,
            dedupe_buffer_load_factor: load_factor,
            io_buffer_size: io,
            max_io_bytes_per_second: rate,
            ..CleanerConfig::default()
        }
    }

    fn refused_key(c: &CleanerConfig) -> String {
        match check_sizes(c) {
            Err(Error::InvalidConfig { key, .. }) => key,
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn sizes_at_their_bounds_pass() {
        check_sizes(&config(1, 1.0, 2, f64::MAX)).unwrap();
        check_sizes(&config(i64::MAX, f64::MIN_POSITIVE, i32::MAX, f64::INFINITY)).unwrap();
        check_sizes(&CleanerConfig::default()).unwrap();
    }

    #[test]
    fn each_size_out_of_range_is_refused_by_its_key() {
        let ok = (1 << 20, 0.9, 1024, f64::MAX);
        for dedupe in [0, -1, i64::MIN] {
            assert_eq!(refused_key(&config(dedupe, ok.1, ok.2, ok.3)), "log.cleaner.dedupe.buffer.size");
        }
        for lf in [0.0, -0.5, 1.000_001, f64::NAN, f64::INFINITY] {
            assert_eq!(refused_key(&config(ok.0, lf, ok.2, ok.3)), "log.cleaner.io.buffer.load.factor", "{lf}");
        }
        for io in [1, 0, -1, i32::MIN] {
            assert_eq!(refused_key(&config(ok.0, ok.1, io, ok.3)), "log.cleaner.io.buffer.size", "{io}");
        }
        for rate in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(refused_key(&config(ok.0, ok.1, ok.2, rate)), "log.cleaner.io.max.bytes.per.second", "{rate}");
        }
    }

    #[test]
    fn refusal_names_value_and_rule() {
        let err = check_sizes(&config(1 << 20, 0.9, 1, f64::MAX)).unwrap_err().to_string();
        assert!(
            err.contains("log.cleaner.io.buffer.size") && err.contains('1') && err.contains(IO_BUFFER_SIZE_RANGE),
            "{err}"
        );
    }

    #[test]
    fn the_cleaner_checks_sizes_before_taking_a_map() {
        let pool = Arc::new(OffsetMapPool::new(2));
        pool.give_back(SkimpyOffsetMap::new(100 * BYTES_PER_ENTRY).unwrap());
        let clock = crate::util::clock::system_clock();
        let bad = Compactor::with_pool(config(100 * BYTES_PER_ENTRY as i64, 0.0, 2, 1.0), clock.clone(), pool.clone());
        assert!(matches!(bad.cleaner(), Err(Error::InvalidConfig { .. })));
        assert_eq!(pool.idle_count(), 1, "a refused clean takes no map");
        let good = Compactor::with_pool(config(100 * BYTES_PER_ENTRY as i64, 0.5, 2, 1.0), clock, pool.clone());
        let cleaner = good.cleaner().unwrap();
        assert_eq!(pool.idle_count(), 0, "the idle map of that size was taken");
        assert_eq!(cleaner.map_capacity(), 50);
        pool.give_back(cleaner.into_offset_map());
        assert_eq!(pool.idle_count(), 1);
    }

    #[test]
    fn a_map_of_the_asked_size_is_reused() {
        let pool = OffsetMapPool::new(2);
        let map = pool.take(10 * BYTES_PER_ENTRY).unwrap();
        assert_eq!((map.slots(), pool.idle_count()), (10, 0));
        pool.give_back(map);
        // Any size with the same slot count reuses it; another size allocates its own.
        let again = pool.take(10 * BYTES_PER_ENTRY + BYTES_PER_ENTRY - 1).unwrap();
        assert_eq!((again.slots(), pool.idle_count()), (10, 0));
        pool.give_back(again);
        let other = pool.take(20 * BYTES_PER_ENTRY).unwrap();
        assert_eq!((other.slots(), pool.idle_count()), (20, 1));
    }

    #[test]
    fn the_pool_keeps_the_newest_maps() {
        let pool = OffsetMapPool::new(2);
        for slots in [1, 2, 3] {
            pool.give_back(SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap());
        }
        assert_eq!(pool.idle_count(), 2);
        // The oldest (1 slot) went: taking it allocates, the two newest are still idle.
        assert_eq!(pool.take(BYTES_PER_ENTRY).unwrap().slots(), 1);
        assert_eq!(pool.idle_count(), 2);
        assert_eq!(pool.take(3 * BYTES_PER_ENTRY).unwrap().slots(), 3);
        assert_eq!(pool.take(2 * BYTES_PER_ENTRY).unwrap().slots(), 2);
        assert_eq!(pool.idle_count(), 0);
    }

    #[test]
    fn a_map_without_a_slot_is_refused() {
        let pool = OffsetMapPool::new(2);
        assert!(matches!(pool.take(BYTES_PER_ENTRY - 1), Err(Error::InvalidConfig { .. })));
        assert_eq!(pool.idle_count(), 0);
    }

    #[test]
    fn the_shared_pool_is_one_per_process() {
        assert!(Arc::ptr_eq(&OffsetMapPool::shared(), &OffsetMapPool::shared()));
        assert_eq!(OffsetMapPool::shared().max_idle, MAX_IDLE_MAPS);
    }
}
