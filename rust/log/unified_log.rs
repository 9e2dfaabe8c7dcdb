//! One partition's log (Kafka's `UnifiedLog`): appends as leader or follower, reads with
//! Kafka's fetch semantics, the four offsets (log start, high watermark, log end, recovery
//! point), roll, flush, truncation, `deleteRecords`, timestamp lookup and `partition.metadata`.
//!
//! Thread-safety: `UnifiedLog` is `Send + Sync`. Appends, roll, truncation and flush serialise
//! on an internal write lock; reads run concurrently with them and see only complete appends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::leader_epoch_cache::LeaderEpochFileCache;
use super::local_log::LocalLog;
use super::log_dir_failure_channel::LogDirFailureChannel;
pub use super::log_loader::LoadResult;
use super::producer_state::{ProducerStateManager, ProducerStateManagerConfig};
use crate::checkpoint::partition_metadata::{PartitionMetadataFile, TopicId};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::index::transaction_index::AbortedTxn;
use crate::record::records::{AnyBatch, BatchIter};
use crate::segment::log_segment::{LogSegment, TimestampAndOffset};
use crate::util::background::BackgroundScheduler;
use crate::util::clock::{system_clock, SharedClock};

mod aborted_txns;
mod append;
mod append_planned;
mod arguments;
mod clean_close;
mod cleaning;
mod committed;
mod epochs;
mod lifecycle;
mod producers;
mod retention;
mod roll_flush;
mod scan;
pub use arguments::{check_first_dirty_offset, check_offset, MAX_OFFSET};
pub use cleaning::CleaningGuard;
pub use committed::CommittedFilter;
pub use epochs::OffsetAndEpoch;
pub use producers::ActiveProducer;
pub use retention::{DeletedSegment, RetentionOptions, RetentionPlan, RetentionReason, RetentionResult};
pub use roll_flush::RollFlushMode;

/// `ListOffsets` special timestamp: the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// `ListOffsets` special timestamp: the log end offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// `ListOffsets` special timestamp: the record with the largest timestamp.
pub const MAX_TIMESTAMP: i64 = -3;

/// How far a read may go (Kafka's `FetchIsolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// Up to the log end offset (what a follower replicates).
    LogEnd,
    /// Up to the high watermark (what a `read_uncommitted` consumer sees).
    HighWatermark,
    /// Up to the last stable offset, with the aborted transactions that overlap the records
    /// read (what a `read_committed` consumer sees; Kafka's `TXN_COMMITTED`).
    TxnCommitted,
}

/// Told how many segments of a log are left to recover while it loads.
#[derive(Clone)]
pub struct RecoveryProgressFn(pub Arc<dyn Fn(usize) + Send + Sync>);

impl std::fmt::Debug for RecoveryProgressFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecoveryProgressFn")
    }
}

/// Options for opening a log.
#[derive(Debug, Clone)]
pub struct LogOpenOptions {
    /// Open without a lock, write nothing, run no recovery (for analytics readers).
    pub read_only: bool,
    /// A writable open creates a missing partition directory (default `true`, as Kafka's
    /// `UnifiedLog` creates its dir). With `false` a missing directory is an `Error::Io`
    /// (`NotFound`) naming it and nothing is created: for callers that found the directory
    /// earlier and must not resurrect it if it was deleted since. A read-only open never creates.
    pub create: bool,
    /// The log dir had a clean-shutdown marker: no segment needs recovery.
    pub had_clean_shutdown: bool,
    /// Recover segments from the one holding this offset on (after an unclean shutdown).
    /// `None` recovers only the active segment (a standalone log has no recovery-point
    /// checkpoint; `LogManager` supplies one).
    pub recovery_point: Option<i64>,
    /// Log start offset from a checkpoint, if any.
    pub log_start_offset: Option<i64>,
    /// The clock used for roll, flush, retention and LogAppendTime decisions.
    pub clock: SharedClock,
    /// Where to report an I/O error (the log's log dir goes offline). Without one, I/O errors
    /// are returned as they are.
    pub log_dir_failure_channel: Option<Arc<LogDirFailureChannel>>,
    /// Recovery progress callback.
    pub progress: Option<RecoveryProgressFn>,
    /// `producer.id.expiration.ms` and `transaction.partition.verification.enable` for the
    /// log's producer state (Kafka's `ProducerStateManagerConfig`).
    pub producer_state: ProducerStateManagerConfig,
    /// `transaction.max.timeout.ms` (Kafka's default: 900000): how long a transaction may stay
    /// open before it counts as late.
    pub max_transaction_timeout_ms: i32,
    /// Where the flush after a roll runs (a `LogManager` lends its scheduler to its logs);
    /// `None`: inside the roll (a standalone log has no recovery point on disk, see
    /// `unified_log/roll_flush.rs`).
    pub flush_scheduler: Option<Arc<BackgroundScheduler>>,
    /// Whether a roll's flush runs in the background (Kafka's way, the default) or inside the
    /// roll (the baseline the roll bench measures).
    pub roll_flush: RollFlushMode,
    /// A log opened alone (no `LogManager`, so no clean-shutdown marker or recovery point on
    /// disk): `close` records the clean close in the partition directory, and an open that
    /// finds the record still true skips recovery (`unified_log/clean_close.rs`). Off for a
    /// managed log, whose manager keeps Kafka's log dir files instead. Any writable open
    /// removes a record it finds, before it changes anything.
    pub standalone_clean_close: bool,
}

/// Kafka's default `transaction.max.timeout.ms` (15 minutes).
pub const TRANSACTION_MAX_TIMEOUT_MS_DEFAULT: i32 = 900_000;

impl Default for LogOpenOptions {
    fn default() -> Self {
        LogOpenOptions {
            read_only: false,
            create: true,
            had_clean_shutdown: false,
            recovery_point: None,
            log_start_offset: None,
            clock: system_clock(),
            log_dir_failure_channel: None,
            progress: None,
            producer_state: ProducerStateManagerConfig::default(),
            max_transaction_timeout_ms: TRANSACTION_MAX_TIMEOUT_MS_DEFAULT,
            flush_scheduler: None,
            roll_flush: RollFlushMode::Background,
            standalone_clean_close: false,
        }
    }
}

/// The result of a read (Kafka's `FetchDataInfo`): whole batches starting with the one holding
/// `fetch_offset`. Unlike a Kafka fetch response, the bytes never end in a partial batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDataInfo {
    /// The offset asked for.
    pub fetch_offset: i64,
    /// The segment file the records come from and their position in it (for error messages).
    pub source: Option<(PathBuf, u64)>,
    /// Raw batches.
    pub records: Vec<u8>,
    /// The high watermark when the read ran.
    pub high_watermark: i64,
    /// The log start offset when the read ran.
    pub log_start_offset: i64,
    /// The log end offset when the read ran.
    pub log_end_offset: i64,
    /// For a `TxnCommitted` read, the aborted transactions that overlap the records read
    /// (Kafka's `FetchDataInfo.abortedTransactions`), in marker order per segment; `None` for
    /// the other isolations.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
}

/// Facts about one segment, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Base offset.
    pub base_offset: i64,
    /// Bytes in the `.log` file.
    pub size: u64,
    /// Records in the segment (exact).
    pub record_count: u64,
    /// Max timestamp of the first batch (Kafka's `getFirstBatchTimestamp`), -1 if none.
    pub first_batch_timestamp: i64,
    /// Largest record timestamp, -1 if none.
    pub max_timestamp: i64,
    /// Path of the `.log` file.
    pub path: PathBuf,
}

#[derive(Debug, Clone, Copy)]
struct Offsets {
    log_start: i64,
    high_watermark: i64,
    log_end: i64,
    /// Position in the active segment where the log end lies.
    log_end_position: u64,
    recovery_point: i64,
    /// Truncations so far: a background flush that saw another count when it started does not
    /// move the recovery point (offsets below its target may have been rewritten).
    truncations: u64,
}

/// A partition's log. Mirrors Kafka's `UnifiedLog` (with `LocalLog` beneath it).
#[derive(Debug)]
pub struct UnifiedLog {
    local: LocalLog,
    topic_partition: TopicPartition,
    config: RwLock<Arc<LogConfig>>,
    write_lock: Mutex<()>,
    offsets: Arc<RwLock<Offsets>>,
    hw_follows_leo: AtomicBool,
    last_flush_ms: Arc<AtomicI64>,
    unflushed_messages: AtomicU64,
    closed: AtomicBool,
    metadata_file: PartitionMetadataFile,
    topic_id: Mutex<Option<TopicId>>,
    load_result: LoadResult,
    /// The writer's lock on the directory (none for read-only opens); released at close.
    dir_lock: Mutex<Option<crate::util::file::DirLock>>,
    /// Where I/O errors are reported, and the log dir (parent of the partition dir).
    failure_channel: Option<Arc<LogDirFailureChannel>>,
    log_dir: PathBuf,
    /// Held by a clean for its whole run; truncation and close take it after asking the clean
    /// to stop, so they never race a segment replace (see `unified_log/cleaning.rs`).
    cleaning: Mutex<()>,
    /// Callers waiting for a running clean to stop.
    cleaning_abort: std::sync::atomic::AtomicU32,
    /// The lowest offset the log was truncated to since the cleaner last asked.
    truncated_to: Mutex<Option<i64>>,
    /// The leader epochs and their start offsets, persisted to `leader-epoch-checkpoint`
    /// (never written by a read-only log); see `unified_log/epochs.rs`.
    leader_epoch_cache: LeaderEpochFileCache,
    /// The partition's producers and transactions (Kafka's `ProducerStateManager`), changed
    /// only under `write_lock`; see `unified_log/producers.rs`.
    producer_state: Mutex<ProducerStateManager>,
    /// The first unstable offset as last published (-1: none), read lock-free by
    /// [`UnifiedLog::last_stable_offset`].
    first_unstable: AtomicI64,
    /// The flush after a roll, run in the background (see `unified_log/roll_flush.rs`).
    roll_flush: Arc<roll_flush::RollFlush>,
    /// `LogOpenOptions::standalone_clean_close`.
    standalone_clean_close: bool,
}

impl UnifiedLog {
    /// The partition directory.
    pub fn dir(&self) -> &Path {
        self.local.dir()
    }
    /// Topic and partition, from the directory name.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }
    /// The current configuration.
    pub fn config(&self) -> Arc<LogConfig> {
        self.config.read().clone()
    }
    /// Replaces the configuration (validated first).
    pub fn update_config(&self, config: LogConfig) -> Result<()> {
        config.validate()?;
        *self.config.write() = Arc::new(config);
        Ok(())
    }
    /// Whether the log was opened read-only.
    pub fn read_only(&self) -> bool {
        self.local.read_only()
    }
    /// What opening the log found and repaired.
    pub fn load_result(&self) -> LoadResult {
        self.load_result
    }
    /// First offset readable.
    pub fn log_start_offset(&self) -> i64 {
        self.offsets.read().log_start
    }
    /// Offsets below this are visible to consumers.
    pub fn high_watermark(&self) -> i64 {
        self.offsets.read().high_watermark
    }
    /// Offset the next record will get.
    pub fn log_end_offset(&self) -> i64 {
        self.offsets.read().log_end
    }
    /// Offsets below this are fsynced.
    pub fn recovery_point(&self) -> i64 {
        self.offsets.read().recovery_point
    }
    /// Number of segments.
    pub fn number_of_segments(&self) -> usize {
        self.local.segments().len()
    }
    /// Total bytes in the `.log` files.
    pub fn size_in_bytes(&self) -> u64 {
        self.local.segments().size_in_bytes()
    }
    /// The segments in offset order.
    pub fn segments(&self) -> Vec<Arc<LogSegment>> {
        self.local.segments().values()
    }
    /// The topic id from `partition.metadata`, if any.
    pub fn topic_id(&self) -> Option<TopicId> {
        *self.topic_id.lock()
    }

    fn check_open(&self) -> Result<()> {
        if let Some(channel) = &self.failure_channel {
            if channel.has_offline_log_dir(&self.log_dir) {
                return Err(Error::KafkaStorage {
                    path: self.log_dir.clone(),
                    reason: format!("the log of {} is unavailable while its log dir is offline", self.topic_partition),
                });
            }
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::LogClosed { path: self.dir().to_path_buf() });
        }
        Ok(())
    }

    /// Kafka's `maybeHandleIOException`: with a failure channel, an I/O error takes the log dir
    /// offline and becomes `KafkaStorage`.
    fn handle_io<T>(&self, result: Result<T>) -> Result<T> {
        match (result, &self.failure_channel) {
            (Err(e @ Error::Io { .. }), Some(channel)) => {
                let reason = e.to_string();
                channel.maybe_add_offline_log_dir(&self.log_dir, &reason);
                Err(Error::KafkaStorage { path: self.log_dir.clone(), reason })
            }
            (other, _) => other,
        }
    }

    /// Closes the files without flushing them, after the log dir failed (Kafka's
    /// `closeHandlers`). Every later call fails.
    pub fn close_handlers(&self) {
        self.closed.store(true, Ordering::Release);
        self.roll_flush.abandon();
        self.dir_lock.lock().take();
    }

    /// Unlinks segment and snapshot files renamed `.deleted` whose `file.delete.delay.ms` has
    /// passed (the `LogManager` scheduler calls this; appends do too).
    pub fn delete_due_files(&self) -> Result<()> {
        if self.read_only() || self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.handle_io(self.local.delete_due_files(false))
    }

    /// When the log was last flushed (ms, by the log's clock).
    pub fn last_flush_time(&self) -> i64 {
        self.last_flush_ms.load(Ordering::Acquire)
    }

    /// Runs this log's later roll flushes on `scheduler` (a `LogManager` lends its own to the
    /// logs it loads), instead of a thread of the log's own.
    pub fn set_flush_scheduler(&self, scheduler: Arc<BackgroundScheduler>) {
        self.roll_flush.use_scheduler(scheduler);
    }

    /// Whether the flush after a roll is queued or running (the recovery point has not yet
    /// caught up with the rolled segments).
    pub fn roll_flush_pending(&self) -> bool {
        self.roll_flush.pending()
    }

    /// Whether the next roll's files were created ahead by the flush after the last roll
    /// (`segment::reserved_files`; for tests and the roll bench).
    pub fn next_roll_files_reserved(&self) -> bool {
        self.roll_flush.has_reserve()
    }

    /// Waits for the flushes after earlier rolls (running the queued ones here when the
    /// scheduler is a manual one). Returns the failure of a background flush, if one failed.
    pub fn wait_for_roll_flush(&self) -> Result<()> {
        self.roll_flush.wait_idle();
        self.roll_flush.check_failed()
    }

    /// The log dir holding this log's partition directory.
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only() {
            return Err(Error::ReadOnly { path: self.dir().to_path_buf() });
        }
        self.roll_flush.check_failed()
    }

    /// Records `topic_id` in `partition.metadata`; a different id already there is an error
    /// (Kafka's `InconsistentTopicIdException`).
    pub fn assign_topic_id(&self, topic_id: TopicId) -> Result<()> {
        self.check_writable()?;
        let mut current = self.topic_id.lock();
        match *current {
            Some(existing) if existing != topic_id => Err(Error::InconsistentTopicId {
                path: self.metadata_file.path().to_path_buf(),
                stored: existing.to_string(),
                given: topic_id.to_string(),
            }),
            Some(_) if self.metadata_file.exists() => Ok(()),
            _ => {
                self.metadata_file.write(topic_id)?;
                *current = Some(topic_id);
                Ok(())
            }
        }
    }

    /// Starts a new active segment at the log end offset; returns its base offset.
    pub fn roll(&self) -> Result<i64> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        let mut psm = self.producer_state.lock();
        self.handle_io(self.roll_locked(None, &mut psm)).map(|s| s.base_offset())
    }

    fn roll_locked(
        &self,
        expected_next_offset: Option<i64>,
        psm: &mut ProducerStateManager,
    ) -> Result<Arc<LogSegment>> {
        let leo = self.log_end_offset();
        let new_offset = expected_next_offset.unwrap_or(0).max(leo);
        let config = self.config();
        // Files the last background flush created ahead, named now instead of created.
        let (segment_files, snapshot_file) =
            self.roll_flush.take_reserve().map(|reserve| (reserve.segment, reserve.producer_snapshot)).unzip();
        let segment = self.local.roll(new_offset, &config, segment_files)?;
        self.offsets.write().log_end_position = 0;
        // Kafka's roll: producer state is snapshotted at the new segment's base, so a reload
        // replays at most the active segment. The snapshot's fsync comes with the flush below.
        psm.update_map_end_offset(new_offset);
        psm.take_snapshot_into(false, snapshot_file)?;
        if self.roll_flush.in_background() {
            // Kafka's roll: the snapshot and everything below the new segment are fsynced by a
            // `flush-log` task, which then advances the recovery point.
            self.roll_flush.request(new_offset, new_offset);
        } else {
            psm.flush_snapshot(new_offset)?;
            self.flush_locked(new_offset)?;
        }
        Ok(segment)
    }

    /// Sets the high watermark (clamped to `[log start, log end]`); from then on it no longer
    /// follows the log end offset automatically. A negative `hw` is refused (`InvalidArgument`;
    /// Kafka: "High watermark offset should be non-negative").
    pub fn set_high_watermark(&self, hw: i64) -> Result<i64> {
        self.check_open()?;
        arguments::check_offset("offset", hw, format_args!("the high watermark of {}", self.topic_partition))?;
        self.hw_follows_leo.store(false, Ordering::Release);
        let high_watermark = {
            let mut o = self.offsets.write();
            o.high_watermark = hw.clamp(o.log_start, o.log_end);
            o.high_watermark
        };
        self.on_high_watermark_updated();
        Ok(high_watermark)
    }

    /// Raises the log start offset to `offset` (Kafka's `deleteRecords` /
    /// `maybeIncrementLogStartOffset`); never past the high watermark. Segments wholly below it
    /// will be removed by retention (a later issue); a standalone log keeps the new log start
    /// offset only while open (LogManager persists it in `log-start-offset-checkpoint`).
    /// A negative `offset` or one past the high watermark is `OffsetOutOfRange` (Kafka's
    /// `deleteRecordsOnLeader` and `maybeIncrementLogStartOffset`); one at or below the log
    /// start changes nothing. Returns the new log start offset.
    pub fn delete_records(&self, offset: i64) -> Result<i64> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        {
            let o = self.offsets.read();
            arguments::check_new_log_start(offset, o.log_start, o.high_watermark)?;
            // The recovery point follows the log start (Kafka's updateLogStartOffset): the rolled
            // segments it passes get the index trim their pending flush would have made
            // (`segment/log_segment/inactive.rs`), so no segment below it is left untrimmed.
            for s in self.local.segments().covering(o.recovery_point, offset) {
                self.handle_io(s.trim_indexes_if_pending())?;
            }
        }
        let raised = {
            let mut o = self.offsets.write();
            arguments::check_new_log_start(offset, o.log_start, o.high_watermark)?;
            let raised = offset > o.log_start;
            if raised {
                o.log_start = offset;
                o.recovery_point = o.recovery_point.max(offset);
            }
            raised
        };
        if raised {
            // Kafka's maybeIncrementLogStartOffset: the first epoch entry follows the log start,
            // and so does producer state.
            self.handle_io(self.leader_epoch_cache.truncate_from_start(offset))?;
            self.on_log_start_offset_incremented(offset);
        }
        Ok(self.log_start_offset())
    }

    /// Reads whole batches from `start_offset` (Kafka's `UnifiedLog.read`): at most `max_bytes`,
    /// but at least one batch when `min_one_message`; bounded by the log end or the high
    /// watermark; empty at the bound; `OffsetOutOfRange` outside `[log start, log end]`.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u64,
        isolation: FetchIsolation,
        min_one_message: bool,
    ) -> Result<FetchDataInfo> {
        self.handle_io(self.read_inner(start_offset, max_bytes, isolation, min_one_message))
    }

    fn read_inner(
        &self,
        start_offset: i64,
        max_bytes: u64,
        isolation: FetchIsolation,
        min_one_message: bool,
    ) -> Result<FetchDataInfo> {
        self.check_open()?;
        let o = *self.offsets.read();
        let mut info = FetchDataInfo {
            fetch_offset: start_offset,
            source: None,
            records: Vec::new(),
            high_watermark: o.high_watermark,
            log_start_offset: o.log_start,
            log_end_offset: o.log_end,
            aborted_transactions: None,
        };
        if start_offset < o.log_start || start_offset > o.log_end {
            return Err(Error::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: o.log_start,
                log_end_offset: o.log_end,
            });
        }
        let bound = self.bound_of(isolation, &o);
        if start_offset >= bound {
            return self.with_aborted_transactions(info, isolation);
        }
        let (bound_base, bound_position) = self.position_of(bound, &o)?;
        let mut segment = self.local.segments().floor_segment(start_offset);
        while let Some(s) = segment {
            let max_position = if s.base_offset() == bound_base { bound_position } else { s.size() };
            if let Some(slice) = s.read(start_offset, max_bytes, max_position, min_one_message)? {
                if slice.size > 0 {
                    s.log().read_into(slice.position, slice.size as usize, &mut info.records)?;
                    info.source = Some((s.path(), slice.position));
                    let next_base =
                        self.local.segments().higher_segment(s.base_offset()).map_or(o.log_end, |n| n.base_offset());
                    if let Some(item) = BatchIter::new(&info.records).next() {
                        let (_, first) = item.map_err(|e| e.in_file(&s.path(), slice.position))?;
                        check_batch_in_segment(&s, next_base, &first, slice.position)?;
                    }
                }
                return self.with_aborted_transactions(info, isolation);
            }
            if s.base_offset() >= bound_base {
                break;
            }
            segment = self.local.segments().higher_segment(s.base_offset());
        }
        self.with_aborted_transactions(info, isolation)
    }

    /// The segment base and byte position where `offset` (a batch boundary) lies.
    fn position_of(&self, offset: i64, o: &Offsets) -> Result<(i64, u64)> {
        let active = self.local.segments().last_segment().ok_or_else(|| Error::illegal_state("log has no segments"))?;
        if offset >= o.log_end {
            return Ok((active.base_offset(), o.log_end_position));
        }
        let s = self
            .local
            .segments()
            .floor_segment(offset)
            .ok_or_else(|| Error::illegal_state(format!("no segment holds offset {offset}")))?;
        let pos = s.translate_offset(offset, 0)?.map_or(s.size(), |h| h.position);
        Ok((s.base_offset(), pos))
    }

    /// Fsyncs everything up to the log end offset and advances the recovery point.
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        self.handle_io(self.flush_locked(self.log_end_offset()))
    }

    fn flush_locked(&self, offset: i64) -> Result<()> {
        let rp = self.recovery_point();
        if offset > rp {
            let segments = self.local.segments().covering(rp, offset);
            for s in &segments {
                s.flush()?;
            }
            // Kafka's LocalLog.flush: segments created since the recovery point also need their
            // directory entries made durable.
            if segments.iter().any(|s| s.base_offset() >= rp) {
                crate::util::file::fsync_dir(self.dir())?;
            }
            let mut o = self.offsets.write();
            o.recovery_point = o.recovery_point.max(offset);
        }
        self.unflushed_messages.store(0, Ordering::Release);
        self.last_flush_ms.store(self.local.clock().milliseconds(), Ordering::Release);
        Ok(())
    }

    /// Removes everything at or above `target` (Kafka's `truncateTo`). Returns whether anything
    /// was removed. A negative `target` is refused (`InvalidArgument`, Kafka's
    /// `IllegalArgumentException`) before anything changes.
    pub fn truncate_to(&self, target: i64) -> Result<bool> {
        // Checked before a running clean is stopped: a refused call changes nothing.
        arguments::check_truncation_offset(&self.topic_partition, target)?;
        let _clean = self.stop_cleaning();
        let truncated = self.handle_io(self.truncate_to_inner(target))?;
        if truncated {
            self.note_truncation(target);
        }
        Ok(truncated)
    }

    fn truncate_to_inner(&self, target: i64) -> Result<bool> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        let leo = self.log_end_offset();
        if target >= leo {
            // Kafka's truncateTo: an epoch a new leader assigned at the log end, with nothing
            // written in it, goes even though no record does.
            self.leader_epoch_cache.truncate_from_end(leo)?;
            return Ok(false);
        }
        let config = self.config();
        if self.local.segments().first_segment().is_some_and(|s| s.base_offset() > target) {
            self.truncate_fully_locked(target, &config)?;
            return Ok(true);
        }
        let doomed: Vec<_> = self.local.segments().values().into_iter().filter(|s| s.base_offset() > target).collect();
        self.local.remove_and_delete_segments(&doomed, &config)?;
        let active = self.local.segments().last_segment().ok_or_else(|| Error::illegal_state("log has no segments"))?;
        active.truncate_to(target)?;
        {
            let mut o = self.offsets.write();
            o.log_end = target;
            o.log_end_position = active.size();
            o.high_watermark = o.high_watermark.min(target);
            o.recovery_point = o.recovery_point.min(target);
            o.log_start = o.log_start.min(target);
            o.truncations += 1;
        }
        self.leader_epoch_cache.truncate_from_end(target)?;
        self.reload_producer_state_after_truncation()?;
        Ok(true)
    }

    /// Deletes every segment and starts an empty log at `new_offset` (Kafka's
    /// `truncateFullyAndStartAt`). A negative `new_offset` is refused (`InvalidArgument`) before
    /// anything changes; Kafka checks nothing here and fails only after deleting the segments.
    pub fn truncate_fully_and_start_at(&self, new_offset: i64) -> Result<()> {
        arguments::check_offset("offset", new_offset, format_args!("the new log start of {}", self.topic_partition))?;
        let _clean = self.stop_cleaning();
        self.handle_io(self.truncate_fully_inner(new_offset))?;
        self.note_truncation(new_offset);
        Ok(())
    }

    fn truncate_fully_inner(&self, new_offset: i64) -> Result<()> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        let config = self.config();
        self.truncate_fully_locked(new_offset, &config)
    }

    fn truncate_fully_locked(&self, new_offset: i64, config: &LogConfig) -> Result<()> {
        self.local.truncate_fully_and_start_at(new_offset, config)?;
        self.leader_epoch_cache.clear_and_flush()?;
        {
            let mut o = self.offsets.write();
            *o = Offsets {
                log_start: new_offset,
                high_watermark: new_offset,
                log_end: new_offset,
                log_end_position: 0,
                recovery_point: new_offset,
                truncations: o.truncations + 1,
            };
        }
        // Kafka's truncateFullyAndStartAt: every snapshot goes and the state starts empty.
        let mut psm = self.producer_state.lock();
        psm.truncate_fully_and_start_at(new_offset)?;
        self.publish_first_unstable_offset(&mut psm);
        Ok(())
    }

    /// Kafka's `fetchOffsetByTimestamp`: `EARLIEST_TIMESTAMP` (-2) gives the log start,
    /// `LATEST_TIMESTAMP` (-1) the log end, `MAX_TIMESTAMP` (-3) the record with the largest
    /// timestamp, and a timestamp >= 0 the first record at or after it. `None` when no record
    /// qualifies. Any other negative timestamp is refused (`InvalidArgument`).
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<TimestampAndOffset>> {
        self.handle_io(self.offset_for_timestamp_inner(timestamp))
    }

    fn offset_for_timestamp_inner(&self, timestamp: i64) -> Result<Option<TimestampAndOffset>> {
        self.check_open()?;
        arguments::check_timestamp_query(timestamp)?;
        let o = *self.offsets.read();
        match timestamp {
            EARLIEST_TIMESTAMP => {
                return Ok(Some(TimestampAndOffset { timestamp: -1, offset: o.log_start, leader_epoch: -1 }))
            }
            LATEST_TIMESTAMP => {
                return Ok(Some(TimestampAndOffset { timestamp: -1, offset: o.log_end, leader_epoch: -1 }))
            }
            MAX_TIMESTAMP => return self.max_timestamp_offset(o.log_start),
            _ => {}
        }
        for s in self.local.segments().values() {
            if s.largest_timestamp()? >= timestamp {
                if let Some(found) = s.find_offset_by_timestamp(timestamp, o.log_start)? {
                    if found.offset < o.log_end {
                        return Ok(Some(found));
                    }
                }
            }
        }
        Ok(None)
    }

    fn max_timestamp_offset(&self, log_start: i64) -> Result<Option<TimestampAndOffset>> {
        let mut best: Option<(i64, Arc<LogSegment>)> = None;
        for s in self.local.segments().values() {
            let ts = s.max_timestamp_so_far()?.timestamp;
            if ts >= 0 && best.as_ref().is_none_or(|(b, _)| ts > *b) {
                best = Some((ts, s));
            }
        }
        let Some((ts, s)) = best else { return Ok(None) };
        s.find_offset_by_timestamp(ts, log_start)
    }

    /// Facts about each segment.
    pub fn segment_infos(&self) -> Result<Vec<SegmentInfo>> {
        self.check_open()?;
        self.local
            .segments()
            .values()
            .into_iter()
            .map(|s| {
                Ok(SegmentInfo {
                    base_offset: s.base_offset(),
                    size: s.size(),
                    record_count: s.record_count()?,
                    first_batch_timestamp: s.first_batch_timestamp()?.unwrap_or(-1),
                    max_timestamp: s.max_timestamp_so_far()?.timestamp,
                    path: s.path(),
                })
            })
            .collect()
    }
}

/// A batch read from `segment` must hold offsets of that segment: at or above its base offset
/// and below the next segment's base (`next_base`). A damaged header (the base offset is outside
/// the CRC) would otherwise serve records under offsets they do not have.
fn check_batch_in_segment(segment: &LogSegment, next_base: i64, batch: &AnyBatch<'_>, position: u64) -> Result<()> {
    let base = batch.base_offset()?;
    let last = batch.last_offset();
    if base < segment.base_offset() || last >= next_base || last < base {
        return Err(Error::CorruptRecord {
            file: Some(segment.path()),
            position,
            reason: format!(
                "batch offsets [{base}, {last}] lie outside the segment's range [{}, {next_base})",
                segment.base_offset()
            ),
        });
    }
    Ok(())
}
