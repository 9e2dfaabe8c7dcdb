//! kafkalog's Rust integration tests, in one binary (each extra test binary costs a slow link).
//!
//! - `segment`: Kafka's `LogSegmentTest` against `LogSegment`;
//! - `arguments`: hostile offsets, paths and names refused before anything changes;
//! - `unified_log`: the `UnifiedLogTest` selection that applies without producer state;
//! - `read_only` and `recovery`: opening a live or crashed partition directory;
//! - `clean_close`: a standalone log's clean close recorded, trusted or not at the next open;
//! - `leader_epoch`: Kafka's `LeaderEpochFileCacheTest`, and the epoch cases of `UnifiedLogTest`,
//!   `LogLoaderTest` and `LogSegmentTest`;
//! - `load_io`: the loader's listing through the directory lock, and reads that leave access times alone;
//! - `log_loader`: Kafka's `LogLoaderTest` (leftovers, indexes, corruption, `.cleaned` / `.swap`, splits);
//! - `retention`: `delete_old_segments` (Kafka's `UnifiedLogTest` retention cases);
//! - `read_committed`: `read_committed` fetches and scans against Kafka's consumer rules;
//! - `model`: a model-based property test of `UnifiedLog` against an in-memory log;
//! - `fuzz`: `fuzz_*` targets for the batch decoder and log loading (`make fuzz` runs them long);
//! - `fault`: disk failures (EIO, ENOSPC, failed fsync) through the fault-injection seam;
//! - `log_manager`: several log dirs, restarts, the scheduler, a failing dir;
//! - `roll_flush` and `roll_reserve`: the flush after a roll in the background, and the next
//!   roll's files created ahead by it;
//! - `dirty_clean`: on-demand cleans of the dirty section, kept in `cleaner-offset-checkpoint`;
//! - `log_cleaner_manager`: the cleaner's partition states and checkpoints (Kafka's
//!   `LogCleanerManagerTest`);
//! - `cleaner_pass_two`: pass 2 using what pass 1 learned (whole batches kept or dropped undecoded);
//! - `cleaner_skip`: pass 2 skipping runs of superseded batches unread, against a rewrite reading them;
//! - `cleaner_sliced`: the hash-sliced decision mode against Kafka's rounds run to convergence;
//! - `cleaner_threads`: the cleaner threads and the `LogManager`'s use of them (the cleaner
//!   cases of `LogManagerTest`, dead threads, reconfiguration, status, on-demand compaction);
//! - `log_cleaner_conformance`: the rest of section 10's `LogCleanerTest` list (transactions
//!   across segments and passes, empty-batch retention, last sequences, large and corrupt
//!   batches, zero-index grouping, offset overflow split, KAFKA-4298 message sets).

mod active_index;
mod arguments;
mod clean_close;
mod cleaner_pass_two;
mod cleaner_skip;
mod cleaner_sliced;
mod cleaner_threads;
mod common;
mod dirty_clean;
mod fault;
mod fuzz;
mod leader_epoch;
mod load_io;
mod log_cleaner;
mod log_cleaner_conformance;
mod log_cleaner_manager;
mod log_loader;
mod log_manager;
mod model;
mod producer_state;
mod read_committed;
mod reopen;
mod retention;
mod roll_flush;
mod roll_reserve;
mod segment;
mod startup_lock;
mod throttle;
mod txn_index;
mod unified_log;
mod verify;
