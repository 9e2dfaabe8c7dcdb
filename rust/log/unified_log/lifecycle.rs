//! Opening and closing a log (Kafka's `UnifiedLog.create` with `LogLoader.load`, and
//! `UnifiedLog.close`): the partition directory locked, loaded (recovered when it must be), the
//! leader epoch cache, topic id and producer state brought in line; at close, everything
//! flushed, a producer snapshot at the log end, the segments trimmed, and a standalone log's
//! clean close recorded (`clean_close.rs`).
//!
//! Thread-safety: `open` builds a log no other thread sees yet; `close` runs under the write
//! lock.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::{arguments, clean_close, epochs, producers, roll_flush, LogOpenOptions, Offsets, UnifiedLog};
use crate::checkpoint::partition_metadata::PartitionMetadataFile;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{TopicPartition, CLEAN_CLOSE_FILE, LEADER_EPOCH_CHECKPOINT_FILE};
use crate::log::leader_epoch_cache::{EpochEntry, LeaderEpochFileCache};
use crate::log::log_loader::{Listing, LoadParams, Loaded};

impl UnifiedLog {
    /// Opens the partition directory `dir`, whose name must be `<topic>-<partition>`
    /// (`InvalidArgument` otherwise; a path that is not a directory is an `ENOTDIR` I/O error
    /// saying what it is), creating it when missing if the open is writable and
    /// `options.create` (the default).
    #[allow(clippy::needless_pass_by_value)]
    pub fn open(dir: &Path, config: LogConfig, options: LogOpenOptions) -> Result<Self> {
        config.validate()?;
        let (topic_partition, exists) = arguments::partition_dir(dir, options.read_only, options.create)?;
        if !options.read_only && options.create && !exists {
            crate::util::file::create_dir_all(dir)?;
        }
        // A directory removed after the check fails here (opening it for the lock), without
        // creating anything.
        let dir_lock = if options.read_only { None } else { Some(crate::util::file::DirLock::try_lock(dir)?) };
        // The open's files are opened relative to the locked directory (`util::file::open`).
        let scope = dir_lock.as_ref().map(|lock| lock.scope(dir));
        // A writable open lists the directory once, under its lock: the clean-close record, the
        // leader epoch checkpoint and the loader's segment files are looked up in that listing.
        let mut listing = dir_lock.as_ref().map(|lock| Listing::read_locked(dir, lock)).transpose()?;
        // A standalone log's clean close stands for a clean shutdown; any writable open removes
        // the record before it changes anything (`unified_log/clean_close.rs`).
        let clean_close = match listing.as_mut() {
            Some(listing) if listing.contains(CLEAN_CLOSE_FILE) => {
                listing.forget(CLEAN_CLOSE_FILE);
                clean_close::take(dir, listing.names())?
            }
            _ => None,
        };
        let clean_close = clean_close.filter(|_| options.standalone_clean_close);
        let mut options = options;
        options.had_clean_shutdown |= clean_close.is_some();
        let (mut loaded, mut epochs) = Self::load(dir, &config, &topic_partition, &options, listing)?;
        let mut load = loaded.result;
        if let Some(close) = clean_close.filter(|c| c.log_end_offset != load.log_end_offset) {
            log::warn!(
                "{}: the log end offset is {}, not the {} its clean close recorded; recovering it as after a crash",
                dir.display(),
                load.log_end_offset,
                close.log_end_offset
            );
            drop(loaded);
            options.had_clean_shutdown = false;
            // The first load may have changed the directory: it is listed again.
            (loaded, epochs) = Self::load(dir, &config, &topic_partition, &options, None)?;
            load = loaded.result;
        }
        let local = loaded.local;
        let known_producer_state = match (loaded.producer_state, loaded.listed_snapshots) {
            (Some(psm), _) => producers::KnownProducerState::Recovered(Box::new(psm)),
            (None, Some(snapshots)) => producers::KnownProducerState::Listed(snapshots),
            (None, None) => producers::KnownProducerState::Unknown,
        };
        let (epoch_cache, stored_epochs) = epochs;
        let leader_epoch_cache = epochs::finish_load(epoch_cache, &stored_epochs, dir, options.read_only)?;
        let metadata_file = PartitionMetadataFile::new(dir);
        let topic_id = match metadata_file.read() {
            // A malformed file loses the topic id, not the data: Kafka takes the whole log dir
            // offline (IOException); kafkalog loads the log without an id and says so.
            Err(e @ (Error::IllegalState { .. } | Error::InvalidConfig { .. })) if !options.read_only => {
                log::warn!("ignoring {e}; the log of {topic_partition} has no topic id until one is assigned");
                None
            }
            other => other?,
        };
        let now = options.clock.milliseconds();
        let producer_state =
            producers::open_producer_state(dir, &topic_partition, &local, &load, &options, now, known_producer_state)?;
        let offsets = Offsets {
            log_start: load.log_start_offset,
            high_watermark: load.log_end_offset,
            log_end: load.log_end_offset,
            log_end_position: load.log_end_position,
            recovery_point: load.recovery_point,
            truncations: 0,
        };
        drop(scope);
        let log_dir = dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let offsets = Arc::new(RwLock::new(offsets));
        let last_flush_ms = Arc::new(AtomicI64::new(now));
        let roll_flush = roll_flush::RollFlush::new(roll_flush::RollFlushParts {
            mode: options.roll_flush,
            dir: dir.to_path_buf(),
            log_dir: log_dir.clone(),
            segments: local.shared_segments(),
            offsets: offsets.clone(),
            last_flush_ms: last_flush_ms.clone(),
            clock: options.clock.clone(),
            failure_channel: options.log_dir_failure_channel.clone(),
            scheduler: options.flush_scheduler.clone(),
        });
        Ok(UnifiedLog {
            local,
            topic_partition,
            config: RwLock::new(Arc::new(config)),
            write_lock: Mutex::new(()),
            offsets,
            hw_follows_leo: AtomicBool::new(true),
            last_flush_ms,
            unflushed_messages: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            metadata_file,
            topic_id: Mutex::new(topic_id),
            load_result: load,
            dir_lock: Mutex::new(dir_lock),
            cleaning: Mutex::new(()),
            cleaning_abort: std::sync::atomic::AtomicU32::new(0),
            truncated_to: Mutex::new(None),
            leader_epoch_cache,
            producer_state: Mutex::new(producer_state),
            first_unstable: AtomicI64::new(producers::NO_UNSTABLE_OFFSET),
            failure_channel: options.log_dir_failure_channel,
            log_dir,
            roll_flush,
            standalone_clean_close: options.standalone_clean_close,
        }
        .with_first_unstable_offset_published())
    }

    /// Loads the segments of `dir` (Kafka's `LogLoader`) with the leader epoch cache read from
    /// its checkpoint; returns the log, what loading found, and the cache with the entries the
    /// checkpoint held.
    #[allow(clippy::type_complexity)]
    fn load(
        dir: &Path,
        config: &LogConfig,
        topic_partition: &TopicPartition,
        options: &LogOpenOptions,
        listing: Option<Listing>,
    ) -> Result<(Loaded, (LeaderEpochFileCache, Vec<EpochEntry>))> {
        let progress = options.progress.clone();
        let progress_fn = progress.as_ref().map(|p| move |n: usize| (p.0)(n));
        let checkpoint_listed = listing.as_ref().map(|l| l.contains(LEADER_EPOCH_CHECKPOINT_FILE));
        let (epoch_cache, stored_epochs) = epochs::load_cache(dir, topic_partition, checkpoint_listed)?;
        let params = LoadParams {
            config,
            read_only: options.read_only,
            had_clean_shutdown: options.had_clean_shutdown,
            recovery_point: options.recovery_point,
            log_start_offset: options.log_start_offset,
            progress: progress_fn.as_ref().map(|f| f as &(dyn Fn(usize) + Sync)),
            leader_epoch_cache: Some(&epoch_cache),
            producer_state: Some(crate::log::log_loader::RecoveryProducerState {
                topic_partition,
                max_transaction_timeout_ms: options.max_transaction_timeout_ms,
                config: options.producer_state,
            }),
        };
        let loaded = crate::log::log_loader::load(dir, &params, options.clock.clone(), listing)?;
        Ok((loaded, (epoch_cache, stored_epochs)))
    }

    fn with_first_unstable_offset_published(self) -> Self {
        self.on_high_watermark_updated();
        self
    }

    /// Flushes, trims the active segment's indexes and closes the log. Later calls fail with
    /// `LogClosed`; closing twice is harmless.
    pub fn close(&self) -> Result<()> {
        let _clean = self.stop_cleaning();
        self.handle_io(self.close_inner())
    }

    fn close_inner(&self) -> Result<()> {
        let _guard = self.write_lock.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if self.read_only() {
            return Ok(());
        }
        // A running background flush finishes first; this close then flushes everything.
        self.roll_flush.close();
        let result =
            self.roll_flush.check_failed().and_then(|()| self.flush_locked(self.log_end_offset())).and_then(|()| {
                // Kafka's close: a snapshot at the log end, so the next open replays nothing.
                let mut psm = self.producer_state.lock();
                psm.update_map_end_offset(self.log_end_offset());
                psm.take_snapshot(true)?;
                drop(psm);
                for s in self.local.segments().values() {
                    s.close()?;
                }
                self.local.delete_due_files(false)?;
                self.record_clean_close()
            });
        // The next writer may open the directory even if the final flush failed.
        self.dir_lock.lock().take();
        result
    }

    /// After a close flushed everything: a standalone log records it, so that its next open
    /// skips recovery (`unified_log/clean_close.rs`).
    fn record_clean_close(&self) -> Result<()> {
        if !self.standalone_clean_close {
            return Ok(());
        }
        let Some(active) = self.local.segments().last_segment() else { return Ok(()) };
        let close = clean_close::CleanClose {
            active_base_offset: active.base_offset(),
            active_size: active.size(),
            log_end_offset: self.log_end_offset(),
        };
        clean_close::write(self.local.dir(), &close)
    }
}
