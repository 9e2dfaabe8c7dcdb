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
use crate::log::file_names::{
    offset_from_file_name, DELETED_FILE_SUFFIX, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX,
};
use crate::segment::log_segment::LogSegment;
use crate::segment::log_segments::LogSegments;
use crate::util::clock::SharedClock;

/// Files renamed `.deleted` and when they may be unlinked.
#[derive(Debug, Default)]
struct PendingDeletes {
    due: Vec<(i64, Arc<LogSegment>)>,
}

/// One partition directory's segments. Mirrors Kafka's `LocalLog`.
#[derive(Debug)]
pub struct LocalLog {
    dir: PathBuf,
    segments: LogSegments,
    clock: SharedClock,
    read_only: bool,
    pending: Mutex<PendingDeletes>,
}

/// What loading found (the part of Kafka's `LoadedLogOffsets` this layer computes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadResult {
    /// Offset after the last complete batch.
    pub log_end_offset: i64,
    /// Position in the active segment where the last complete batch ends.
    pub log_end_position: u64,
    /// Segments whose indexes were rebuilt.
    pub segments_recovered: usize,
    /// Bytes cut from torn or corrupt tails.
    pub bytes_truncated: u64,
}

impl LocalLog {
    /// Loads the segments of `dir`. A writable load deletes leftover `*.deleted` files and
    /// orphan index files, rebuilds a segment whose offset index is missing, and recovers the
    /// segments from `recover_from` on (re-validating batches and rebuilding indexes). A
    /// read-only load changes nothing and treats a torn tail as the end of the log.
    pub fn load(
        dir: &Path,
        config: &LogConfig,
        clock: SharedClock,
        read_only: bool,
        recover_from: Option<i64>,
    ) -> Result<(Self, LoadResult)> {
        let log = LocalLog {
            dir: dir.to_path_buf(),
            segments: LogSegments::new(),
            clock,
            read_only,
            pending: Mutex::new(PendingDeletes::default()),
        };
        let mut result =
            LoadResult { log_end_offset: 0, log_end_position: 0, segments_recovered: 0, bytes_truncated: 0 };
        let mut bases = Vec::new();
        let mut index_files = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, "list directory", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if !read_only && name.ends_with(DELETED_FILE_SUFFIX) {
                crate::util::file::delete_if_exists(&path)?;
                continue;
            }
            let Some(base) = offset_from_file_name(&name) else { continue };
            if name.ends_with(LOG_FILE_SUFFIX) && name.len() == 20 + LOG_FILE_SUFFIX.len() {
                bases.push(base);
            } else if name.ends_with(INDEX_FILE_SUFFIX) || name.ends_with(TIME_INDEX_FILE_SUFFIX) {
                index_files.push((base, path));
            }
        }
        bases.sort_unstable();
        if !read_only {
            for (base, path) in index_files {
                if bases.binary_search(&base).is_err() {
                    log::warn!("deleting index file {} that has no log file", path.display());
                    crate::util::file::delete_if_exists(&path)?;
                }
            }
        }
        // Recovery starts at the segment holding the recovery point (Kafka's `recoverLog`).
        let recover_start = recover_from.map(|rp| bases.iter().rev().find(|b| **b <= rp).copied().unwrap_or(i64::MIN));
        let mut truncated_at = None;
        for &base in &bases {
            if truncated_at.is_some() {
                // Bytes were cut from an earlier segment: later segments hold unflushed data that
                // no longer follows on, and are deleted (Kafka's rule).
                let segment = LogSegment::open(dir, base, config, log.clock.clone(), "", false, false)?;
                log::warn!("deleting segment {} after a truncated segment", segment.path().display());
                segment.delete_if_exists()?;
                continue;
            }
            let mut segment = LogSegment::open(dir, base, config, log.clock.clone(), "", false, read_only)?;
            // Kafka's LogSegment.open gives every segment, loaded or new, its own roll jitter.
            segment.set_rolling_jitter_ms(random_jitter(config));
            let missing_index = !crate::log::file_names::offset_index_file(dir, base).exists();
            let recover = !read_only && (missing_index || recover_start.is_some_and(|start| base >= start));
            if recover {
                // Kafka's LogLoader.recoverLog: offsets that go backwards (InvalidOffsetException)
                // leave the segment emptied rather than the log unopenable.
                let truncated = match segment.recover() {
                    Err(Error::InvalidOffset { reason }) => {
                        log::warn!(
                            "invalid offset while recovering {}: {reason}; truncating the segment to empty",
                            segment.path().display()
                        );
                        segment.truncate_to(base)?
                    }
                    other => other?,
                };
                result.segments_recovered += 1;
                result.bytes_truncated += truncated;
                // Only the recovery of unflushed segments cuts the log short (Kafka's
                // recoverLog); a segment rebuilt for a missing index keeps its successors.
                if truncated > 0 && recover_start.is_some_and(|start| base >= start) {
                    truncated_at = Some(base);
                }
            }
            log.segments.add(Arc::new(segment));
        }
        if let Some(active) = log.segments.last_segment() {
            (result.log_end_offset, result.log_end_position) = active.read_next_offset_and_end()?;
            if read_only {
                active.end_read_only_view_at(result.log_end_position)?;
            } else {
                active.resize_indexes(config.segment_index_bytes as usize)?;
            }
        }
        Ok((log, result))
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The segments.
    pub fn segments(&self) -> &LogSegments {
        &self.segments
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
    /// base is replaced, as Kafka does.
    pub fn roll(&self, new_offset: i64, config: &LogConfig) -> Result<Arc<LogSegment>> {
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
        let segment = self.create_segment(new_offset, config)?;
        self.segments.add(segment.clone());
        Ok(segment)
    }

    /// Creates the files of a new, empty segment (not yet in the map).
    fn create_segment(&self, base_offset: i64, config: &LogConfig) -> Result<Arc<LogSegment>> {
        let mut segment =
            LogSegment::open(&self.dir, base_offset, config, self.clock.clone(), "", config.preallocate, false)?;
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
        let segment = self.create_segment(new_offset, config)?;
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

    /// Queues segments already renamed `.deleted` for unlinking after `file.delete.delay.ms`.
    fn schedule_deletion(&self, segments: &[Arc<LogSegment>], config: &LogConfig) -> Result<()> {
        let due = self.clock.milliseconds().saturating_add(config.file_delete_delay_ms);
        self.pending.lock().due.extend(segments.iter().map(|s| (due, s.clone())));
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
        for (_, s) in ready {
            s.delete_if_exists()?;
        }
        Ok(())
    }
}

/// Kafka's per-segment roll jitter: uniform in [0, min(segment.jitter.ms, segment.ms)).
fn random_jitter(config: &LogConfig) -> i64 {
    let bound = config.segment_jitter_ms.min(config.segment_ms);
    if bound <= 0 {
        return 0;
    }
    let r = u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes"));
    (r % bound as u64) as i64
}
