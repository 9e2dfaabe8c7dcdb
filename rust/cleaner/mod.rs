//! Log compaction (`cleanup.policy=compact`), mirroring Kafka's `LogCleaner`,
//! `LogCleanerManager`, `Cleaner` and `SkimpyOffsetMap`:
//! - [`offset_map`]: the key-hash -> offset map built in pass 1;
//! - [`md5_keys`]: the MD5 of many keys at once, through [`md5x16_avx512`], [`md5x24_avx2`] or [`md5x8`], whose
//!   shared constants and padding are in [`md5_block`];
//! - [`mapped_records`]: which records pass 1 put and saw superseded, so pass 2 skips them;
//!   `skip`: runs of superseded batches pass 2 drops without reading them;
//! - [`cleaner`]: cleaning one log (pass 1 builds the map over the dirty section, pass 2
//!   recopies every segment below the map's end into `.cleaned` segments and swaps them in);
//! - [`compact`]: a log's whole cleanable range, pass after pass (`compact_log`);
//! - [`compactor`]: on-demand compaction with a `CleanerConfig`'s sizes and a pool of idle maps;
//! - [`dirty_clean`]: an on-demand clean of the dirty section only, from and to the log dir's
//!   `cleaner-offset-checkpoint`, skipped (with the reason) when Kafka's cleaner would skip it;
//! - [`filter`]: the per-batch and per-record retention rules (`MemoryRecords.filterTo` with the
//!   cleaner's `RecordFilter`);
//! - [`log_to_clean`]: a log's clean / cleanable / uncleanable byte accounting;
//! - [`cleaner_stats`], [`throttler`]: the stats of one clean and the shared I/O throttle;
//! - [`log_cleaner_manager`]: per-partition cleaning states, the filthiest log, the
//!   `cleaner-offset-checkpoint` files, uncleanable partitions (Kafka's `LogCleanerManager`);
//! - [`log_cleaner`]: the cleaner threads, on-demand compaction, the gauges (`LogCleaner`);
//! - [`cleaner_status`]: the per-partition compaction picture;
//! - [`last_clean`]: the last clean of each partition, kept on disk (`kafkalog-last-clean`);
//! - [`inspection`]: a read-only look at one log through the cleaner's rules (sections, whether
//!   it would be cleaned and why not, tombstones and their horizons), for tools.

#[allow(clippy::module_inception)] // Kafka names the class Cleaner inside its cleaner package.
pub mod cleaner;
pub mod cleaner_stats;
pub mod cleaner_status;
pub mod compact;
pub mod compactor;
pub mod decision_mode;
pub mod dirty_clean;
pub mod filter;
pub mod inspection;
mod io_buffers;
pub mod last_clean;
pub mod log_cleaner;
pub mod log_cleaner_manager;
pub mod log_to_clean;
pub mod mapped_records;
pub mod md5_block;
pub mod md5_keys;
#[cfg(target_arch = "x86_64")]
pub mod md5x16_avx512;
#[cfg(target_arch = "x86_64")]
pub mod md5x24_avx2;
pub mod md5x8;
pub mod offset_map;
mod segment_scan;
mod skip;
pub mod sliced;
pub mod throttler;

pub use cleaner::{group_segments_by_size, Cleaner, CleanerParams};
pub use cleaner_stats::CleanerStats;
pub use cleaner_status::{CleanerPartitionStatus, StatusFilter};
pub use compact::{compact_log, CleanPass, CompactOptions, CompactResult};
pub use compactor::{Compactor, OffsetMapPool};
pub use decision_mode::{DecisionMode, SlicedReport};
pub use dirty_clean::{compact_dirty, DirtyClean, SkipReason};
pub use log_cleaner::{CleanOutcome, CleanStatus, CleanerMetrics, LogCleaner, LogCleanerContext};
pub use log_cleaner_manager::{LogCleanerManager, LogCleaningState, PreCleanStats};
pub use log_to_clean::LogToClean;
pub use offset_map::SkimpyOffsetMap;
pub use throttler::Throttler;
