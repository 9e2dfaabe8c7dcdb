//! The segments of one partition directory and the operations on them (Kafka's `LocalLog`):
//! loading, rolling, truncation, and segment deletion by rename to `.deleted` then delayed
//! unlink.
//!
//! Thread-safety: readers may call the `&self` lookups concurrently; mutating calls (roll,
//! truncate, delete) must be serialised by the owning `UnifiedLog`'s write lock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{
    log_file, offset_index_file, time_index_file, transaction_index_file, CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
};
use crate::index::transaction_index::AbortedTxn;
use crate::segment::log_segment::LogSegment;
use crate::segment::log_segments::LogSegments;
use crate::segment::reserved_files::ReservedSegmentFiles;
use crate::util::clock::SharedClock;

/// Something renamed `.deleted`, waiting to be unlinked.
#[derive(Debug)]
enum Pending {
    Segment(Arc<LogSegment>),
    File(PathBuf),
}

/// Files renamed `.deleted` and when they may be unlinked.
#[derive(Debug, Default)]
struct PendingDeletes {
    due: Vec<(i64, Pending)>,
}

/// One partition directory's segments. Mirrors Kafka's `LocalLog`.
#[derive(Debug)]
pub struct LocalLog {
    dir: PathBuf,
    segments: Arc<LogSegments>,
    clock: SharedClock,
    read_only: bool,
    pending: Mutex<PendingDeletes>,
}

impl LocalLog {
    /// An empty log over `dir`; `log_loader::load` fills it.
    pub fn new(dir: &Path, clock: SharedClock, read_only: bool) -> Self {
        LocalLog {
            dir: dir.to_path_buf(),
            segments: Arc::new(LogSegments::new()),
            clock,
            read_only,
            pending: Mutex::new(PendingDeletes::default()),
        }
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The segments.
    pub fn segments(&self) -> &LogSegments {
        &self.segments
    }
    /// The segments, shared with a background task (the flush after a roll) that outlives a
    /// borrow of the log.
    pub fn shared_segments(&self) -> Arc<LogSegments> {
        self.segments.clone()
    }
    /// Whether opened read-only.
    pub fn read_only(&self) -> bool {
        self.read_only
    }
    /// The clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Creates a new active segment at `new_offset` (Kafka's `LocalLog.roll`). The previous
    /// active segment becomes inactive (indexes trimmed). An empty active segment at the same
    /// base is replaced, as Kafka does. The new segment's files are `reserved` ones, created
    /// ahead, when given (`LogSegment::create_reserved`).
    pub fn roll(
        &self,
        new_offset: i64,
        config: &LogConfig,
        reserved: Option<ReservedSegmentFiles>,
    ) -> Result<Arc<LogSegment>> {
        if let Some(existing) = self.segments.get(new_offset) {
            if existing.size() == 0 && self.segments.last_segment().is_some_and(|l| l.base_offset() == new_offset) {
                log::warn!(
                    "trying to roll a new log segment with start offset {new_offset} while it already exists \
                     and is empty; replacing it in {}",
                    self.dir.display()
                );
                self.segments.remove(new_offset);
                existing.delete_if_exists()?;
            } else {
                return Err(Error::illegal_state(format!(
                    "trying to roll a new log segment for {} with start offset {new_offset} \
                     =max(provided offset, log end offset) while it already exists",
                    self.dir.display()
                )));
            }
        }
        if let Some(active) = self.segments.last_segment() {
            if active.base_offset() > new_offset {
                return Err(Error::illegal_state(format!(
                    "cannot roll {} to offset {new_offset}: the active segment starts at {}",
                    self.dir.display(),
                    active.base_offset()
                )));
            }
            active.on_become_inactive_segment()?;
        }
        self.delete_leftover_files(new_offset)?;
        let segment = self.create_segment(new_offset, config, reserved)?;
        self.segments.add(segment.clone());
        Ok(segment)
    }

    /// Kafka's roll: files of the new segment's name that are already there (no segment of the
    /// log holds them) are deleted first, with a warning, so the new segment starts empty.
    fn delete_leftover_files(&self, base_offset: i64) -> Result<()> {
        let leftovers = [log_file, offset_index_file, time_index_file, transaction_index_file]
            .map(|name| name(&self.dir, base_offset))
            .into_iter()
            .filter(|p| p.exists());
        for file in leftovers {
            log::warn!("newly rolled segment file {} already exists; deleting it first", file.display());
            crate::util::file::delete_if_exists(&file)?;
        }
        Ok(())
    }

    /// Creates the files of a new, empty segment (not yet in the map), from `reserved` files
    /// created ahead when given.
    fn create_segment(
        &self,
        base_offset: i64,
        config: &LogConfig,
        reserved: Option<ReservedSegmentFiles>,
    ) -> Result<Arc<LogSegment>> {
        let clock = self.clock.clone();
        let mut segment = match reserved {
            Some(files) => LogSegment::create_reserved(&self.dir, base_offset, config, clock, files)?,
            None => LogSegment::open(&self.dir, base_offset, config, clock, "", config.preallocate, false)?,
        };
        segment.set_rolling_jitter_ms(random_jitter(config));
        Ok(Arc::new(segment))
    }

    /// Replaces every segment with one empty segment at `new_offset` (Kafka's
    /// `truncateFullyAndStartAt` / `createAndDeleteSegment`). The new segment enters the map
    /// before the old ones leave it, so a concurrent reader always finds a segment; an old
    /// segment at the same base is renamed `.deleted` first so the new files can take its name.
    pub fn truncate_fully_and_start_at(&self, new_offset: i64, config: &LogConfig) -> Result<()> {
        let (same_base, others): (Vec<_>, Vec<_>) =
            self.segments.values().into_iter().partition(|s| s.base_offset() == new_offset);
        for s in &same_base {
            s.change_file_suffixes("", DELETED_FILE_SUFFIX)?;
        }
        let segment = self.create_segment(new_offset, config, None)?;
        self.segments.add(segment);
        self.remove_and_delete_segments(&others, config)?;
        self.schedule_deletion(&same_base, config)
    }

    /// Removes `segments` from the map and schedules their files for deletion: they are renamed
    /// `.deleted` now and unlinked after `file.delete.delay.ms` (Kafka's `removeAndDeleteSegments`
    /// with async delete).
    pub fn remove_and_delete_segments(&self, segments: &[Arc<LogSegment>], config: &LogConfig) -> Result<()> {
        for s in segments {
            self.segments.remove(s.base_offset());
        }
        for s in segments {
            s.change_file_suffixes("", DELETED_FILE_SUFFIX)?;
        }
        self.schedule_deletion(segments, config)
    }

    /// Replaces `old` segments with `new` ones built under the `.cleaned` suffix, so that a
    /// crash at any step leaves a directory `LogLoader` can finish or roll back (Kafka's
    /// `LocalLog.replaceSegments`):
    /// 1. new segments renamed `.cleaned` -> `.swap` in descending offset order, then installed
    ///    in the map while the old ones leave it, in one step;
    /// 2. old segments renamed `.deleted`, to be unlinked after `file.delete.delay.ms`;
    /// 3. new segments renamed `.swap` -> live in ascending order;
    /// 4. the directory is fsynced.
    pub fn replace_segments(&self, new: &[Arc<LogSegment>], old: &[Arc<LogSegment>], config: &LogConfig) -> Result<()> {
        let mut new: Vec<_> = new.to_vec();
        new.sort_by_key(|s| s.base_offset());
        let mut old: Vec<_> = old.iter().filter(|s| self.segments.contains(s.base_offset())).cloned().collect();
        old.sort_by_key(|s| s.base_offset());
        for s in new.iter().rev() {
            s.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)?;
        }
        // The map changes in one step (Kafka adds the new segments, then removes the old ones:
        // a reader in between would find a new segment followed by old ones it overlaps).
        let old_bases: Vec<i64> = old.iter().map(|s| s.base_offset()).collect();
        self.segments.replace(&new, &old_bases);
        for s in &old {
            s.change_file_suffixes("", DELETED_FILE_SUFFIX)?;
        }
        for s in &new {
            s.change_file_suffixes(SWAP_FILE_SUFFIX, "")?;
        }
        crate::util::file::fsync_dir(&self.dir)?;
        self.schedule_deletion(&old, config)
    }

    /// The aborted transactions that overlap `[fetch_offset, upper_bound_offset)`, read from the
    /// `.txnindex` of the segment holding `base_offset` and of the segments after it, until one
    /// segment's search is complete: an entry's last stable offset reached the upper bound
    /// (Kafka's `LocalLog.collectAbortedTransactions(logStartOffset, baseOffset,
    /// upperBoundOffset)`, whose fetch offset is the log start offset). Empty when no segment
    /// holds `base_offset`.
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and position of an entry of an unknown version; `Io`.
    pub fn collect_aborted_transactions(
        &self,
        fetch_offset: i64,
        base_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTxn>> {
        let mut aborted = Vec::new();
        let mut segment = self.segments.floor_segment(base_offset);
        while let Some(s) = segment {
            let result = s.collect_aborted_txns(fetch_offset, upper_bound_offset)?;
            aborted.extend(result.aborted_transactions);
            if result.is_complete {
                break;
            }
            segment = self.segments.higher_segment(s.base_offset());
        }
        Ok(aborted)
    }

    /// Queues segments already renamed `.deleted` for unlinking after `file.delete.delay.ms`.
    fn schedule_deletion(&self, segments: &[Arc<LogSegment>], config: &LogConfig) -> Result<()> {
        let due = self.clock.milliseconds().saturating_add(config.file_delete_delay_ms);
        self.pending.lock().due.extend(segments.iter().map(|s| (due, Pending::Segment(s.clone()))));
        self.delete_due_files(false)
    }

    /// Queues files already renamed `.deleted` (the producer snapshots of deleted segments,
    /// which producer state renames: `removeAndMarkSnapshotForDeletion`) for unlinking after
    /// `file.delete.delay.ms` (Kafka's `deleteProducerSnapshots` with async delete).
    pub fn schedule_file_deletion(&self, files: Vec<std::path::PathBuf>, config: &LogConfig) -> Result<()> {
        let due = self.clock.milliseconds().saturating_add(config.file_delete_delay_ms);
        self.pending.lock().due.extend(files.into_iter().map(|f| (due, Pending::File(f))));
        self.delete_due_files(false)
    }

    /// Unlinks `.deleted` files whose delay has passed (all of them when `all`).
    pub fn delete_due_files(&self, all: bool) -> Result<()> {
        let now = self.clock.milliseconds();
        let ready: Vec<_> = {
            let mut p = self.pending.lock();
            let (ready, keep): (Vec<_>, Vec<_>) = p.due.drain(..).partition(|(t, _)| all || *t <= now);
            p.due = keep;
            ready
        };
        for (_, pending) in ready {
            match pending {
                Pending::Segment(s) => {
                    log::info!(
                        "Deleting segment files {} (base offset {}, {} bytes)",
                        s.path().display(),
                        s.base_offset(),
                        s.size()
                    );
                    s.delete_if_exists()?;
                }
                Pending::File(path) => {
                    crate::util::file::delete_if_exists(&path)?;
                }
            }
        }
        Ok(())
    }
}

/// Kafka's per-segment roll jitter: uniform in [0, min(segment.jitter.ms, segment.ms)).
pub(crate) fn random_jitter(config: &LogConfig) -> i64 {
    let bound = config.segment_jitter_ms.min(config.segment_ms);
    if bound <= 0 {
        return 0;
    }
    let r = u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes"));
    (r % bound as u64) as i64
}
