//! The leader epoch cache of one partition (Kafka's `LeaderEpochFileCache`): for each leader
//! epoch, the first offset written in it, kept in memory and persisted to the partition's
//! `leader-epoch-checkpoint` (Kafka's `LeaderEpochCheckpointFile` format: version 0, the entry
//! count, then `<epoch> <start offset>` lines; written tmp + fsync + rename + dir fsync by
//! `checkpoint/checkpoint_file.rs`).
//!
//! Epochs and start offsets strictly increase from entry to entry. A new entry that conflicts
//! with the latest ones (an older epoch, or a start offset below theirs) removes them first, as
//! Kafka's `assign` does: the cache follows the log, it does not judge it. `UnifiedLog` refuses
//! a leader append in an epoch older than the latest before it gets here.
//!
//! Kafka flushes truncations in the background and lets the loader repair a stale file;
//! kafkalog writes every change before the call returns, so the file never lags the cache.
//!
//! Thread-safety: `Send + Sync`. Readers take a read lock on the entries; changes (and their
//! checkpoint writes) are serialised by a writer mutex and publish the new entries under a
//! short write lock, so a reader never waits on the file write.

use std::path::{Path, PathBuf};

use parking_lot::{Mutex, RwLock};

pub use crate::checkpoint::checkpoint_file::EpochEntry;
use crate::checkpoint::checkpoint_file::{read_leader_epoch_checkpoint, write_leader_epoch_checkpoint};
use crate::error::{Error, Result};
use crate::file_names::{TopicPartition, LEADER_EPOCH_CHECKPOINT_FILE};

/// Kafka's `OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`.
pub const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's `OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One partition's leader epoch cache. Mirrors Kafka's `LeaderEpochFileCache`.
#[derive(Debug)]
pub struct LeaderEpochFileCache {
    topic_partition: TopicPartition,
    /// The `leader-epoch-checkpoint` file; `None` for a cache that never writes (a read-only
    /// log's).
    checkpoint: Option<PathBuf>,
    /// In epoch order, which is also start-offset order.
    entries: RwLock<Vec<EpochEntry>>,
    /// Held across a change and its checkpoint write.
    writer: Mutex<()>,
}

impl LeaderEpochFileCache {
    /// The cache of the partition directory `dir`, read from its `leader-epoch-checkpoint` (a
    /// missing file is an empty cache; a malformed one is an error naming the file and line),
    /// and the entries as the file held them. The cache writes nothing until
    /// [`Self::with_checkpoint`] gives it its file: loading and recovery change it in memory,
    /// and the opener writes the outcome once, if it differs from the file.
    pub fn load(dir: &Path, topic_partition: TopicPartition) -> Result<(Self, Vec<EpochEntry>)> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let stored = match std::fs::metadata(&path) {
            Ok(_) => read_leader_epoch_checkpoint(&path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&path, "stat checkpoint", e)),
        };
        let cache = LeaderEpochFileCache::new(topic_partition, None);
        // Kafka's constructor assigns each stored entry in turn (without writing).
        let mut entries = Vec::with_capacity(stored.len());
        for (i, entry) in stored.iter().enumerate() {
            if entry.epoch < 0 || entry.start_offset < 0 {
                return Err(Error::illegal_state(format!(
                    "malformed checkpoint file {} at line {}: epoch {} and start offset {} must not be negative",
                    path.display(),
                    i + 3,
                    entry.epoch,
                    entry.start_offset
                )));
            }
            cache.assign_to(&mut entries, *entry);
        }
        *cache.entries.write() = entries;
        Ok((cache, stored))
    }

    /// This cache, writing `checkpoint` on every change from now on.
    #[must_use]
    pub fn with_checkpoint(mut self, checkpoint: PathBuf) -> Self {
        self.checkpoint = Some(checkpoint);
        self
    }

    /// An empty cache that writes `checkpoint` (or nothing) on every change.
    pub fn new(topic_partition: TopicPartition, checkpoint: Option<PathBuf>) -> Self {
        LeaderEpochFileCache { topic_partition, checkpoint, entries: RwLock::new(Vec::new()), writer: Mutex::new(()) }
    }

    /// The checkpoint file this cache writes, if it writes one.
    pub fn checkpoint_path(&self) -> Option<&Path> {
        self.checkpoint.as_deref()
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's `assign`) and writes the
    /// checkpoint if that changed anything. The latest epoch again, at or after its start, is
    /// nothing new. Entries with an epoch at or above `epoch`, or a start offset at or above
    /// `start_offset`, are removed first (with a warning unless it is only the latest entry at
    /// the same offset), so epochs and offsets keep increasing. A negative epoch or offset is
    /// `InvalidArgument` (Kafka's `IllegalArgumentException`). Returns whether the cache changed.
    pub fn assign(&self, epoch: i32, start_offset: i64) -> Result<bool> {
        self.assign_all(&[EpochEntry { epoch, start_offset }])
    }

    /// Assigns each entry in turn and writes the checkpoint once if any changed the cache
    /// (Kafka's `assign(List)`).
    pub fn assign_all(&self, new_entries: &[EpochEntry]) -> Result<bool> {
        for e in new_entries {
            check_entry(e)?;
        }
        if !new_entries.iter().any(|e| is_update_needed(&self.entries.read(), e)) {
            return Ok(false); // the common case: no lock, no write
        }
        self.change(|this, entries| {
            let mut changed = false;
            for e in new_entries {
                changed |= this.assign_to(entries, *e);
            }
            changed
        })
    }

    /// Kafka's private `assign(EpochEntry)` with `maybeTruncateNonMonotonicEntries`.
    fn assign_to(&self, entries: &mut Vec<EpochEntry>, entry: EpochEntry) -> bool {
        if !is_update_needed(entries, &entry) {
            return false;
        }
        let keep = entries.iter().rposition(|e| e.epoch < entry.epoch && e.start_offset < entry.start_offset);
        let removed = entries.split_off(keep.map_or(0, |k| k + 1));
        entries.push(entry);
        if removed.len() > 1 || removed.first().is_some_and(|r| r.start_offset != entry.start_offset) {
            log::warn!(
                "[LeaderEpochCache {}] New epoch entry {} caused truncation of conflicting entries {}. Cache now \
                 contains {} entries.",
                self.topic_partition,
                show(&entry),
                show_all(&removed),
                entries.len()
            );
        } else {
            log::debug!(
                "[LeaderEpochCache {}] Appended new epoch entry {}. Cache now contains {} entries.",
                self.topic_partition,
                show(&entry),
                entries.len()
            );
        }
        true
    }

    /// Runs `f` on a copy of the entries under the writer lock; if it reports a change and the
    /// entries differ, writes the checkpoint and publishes the copy. The file is written before
    /// readers see the new entries, so a failed write leaves the cache as it was.
    fn change<F>(&self, f: F) -> Result<bool>
    where
        F: FnOnce(&Self, &mut Vec<EpochEntry>) -> bool,
    {
        let _w = self.writer.lock();
        let original = self.entries.read().clone();
        let mut entries = original.clone();
        if !f(self, &mut entries) || entries == original {
            return Ok(false);
        }
        self.write_file(&entries)?;
        *self.entries.write() = entries;
        Ok(true)
    }

    fn write_file(&self, entries: &[EpochEntry]) -> Result<()> {
        match &self.checkpoint {
            Some(path) => write_leader_epoch_checkpoint(path, entries),
            None => Ok(()),
        }
    }

    /// Writes the current entries to the checkpoint (after changes made in memory).
    pub fn flush(&self) -> Result<()> {
        let _w = self.writer.lock();
        let entries = self.entries.read().clone();
        self.write_file(&entries)
    }

    /// Whether the cache holds any entry.
    pub fn non_empty(&self) -> bool {
        !self.entries.read().is_empty()
    }

    /// The entry of the latest epoch.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.read().last().copied()
    }

    /// The latest epoch (Kafka's `latestEpoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// The epoch before the latest one (Kafka's `previousEpoch()`).
    pub fn previous_epoch(&self) -> Option<i32> {
        let entries = self.entries.read();
        entries.len().checked_sub(2).map(|i| entries[i].epoch)
    }

    /// The earliest entry.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.read().first().copied()
    }

    /// The largest cached epoch below `epoch` (Kafka's `previousEpoch(int)`).
    pub fn previous_epoch_of(&self, epoch: i32) -> Option<i32> {
        self.previous_entry(epoch).map(|e| e.epoch)
    }

    /// The entry of the largest cached epoch below `epoch` (Kafka's `previousEntry`).
    pub fn previous_entry(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries.read().iter().rev().find(|e| e.epoch < epoch).copied()
    }

    /// The smallest cached epoch above `epoch` (Kafka's `nextEpoch`).
    pub fn next_epoch(&self, epoch: i32) -> Option<i32> {
        self.entries.read().iter().find(|e| e.epoch > epoch).map(|e| e.epoch)
    }

    /// The entry of `epoch`, if cached (Kafka's `epochEntry`).
    pub fn epoch_entry(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries.read().iter().find(|e| e.epoch == epoch).copied()
    }

    /// All entries, in order (Kafka's `epochEntries`).
    pub fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.entries.read().clone()
    }

    /// Kafka's `endOffsetFor`: the largest epoch at or below `requested_epoch` and the end of
    /// that epoch, which is the start of the next cached epoch, or `log_end_offset` when
    /// `requested_epoch` is the latest. A requested epoch below every cached one gives itself
    /// and the first cached start offset. `UNDEFINED_EPOCH` asked, or an epoch above the latest,
    /// or an empty cache give (`UNDEFINED_EPOCH`, `UNDEFINED_EPOCH_OFFSET`).
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        let entries = self.entries.read();
        let result = if requested_epoch == UNDEFINED_EPOCH {
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        } else if entries.last().is_some_and(|l| l.epoch == requested_epoch) {
            (requested_epoch, log_end_offset)
        } else {
            match entries.iter().position(|e| e.epoch > requested_epoch) {
                None => (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET),
                Some(0) => (requested_epoch, entries[0].start_offset),
                Some(i) => (entries[i - 1].epoch, entries[i].start_offset),
            }
        };
        log::trace!(
            "[LeaderEpochCache {}] Processed end offset request for epoch {requested_epoch} and returning epoch {} \
             with end offset {} from epoch cache of size {}",
            self.topic_partition,
            result.0,
            result.1,
            entries.len()
        );
        result
    }

    /// Removes every entry starting at or after `end_offset` (Kafka's
    /// `truncateFromEndAsyncFlush`, written before returning). A negative `end_offset`
    /// (`UNDEFINED_EPOCH_OFFSET`) changes nothing. Returns whether the cache changed.
    pub fn truncate_from_end(&self, end_offset: i64) -> Result<bool> {
        self.change(|this, entries| {
            let removed = truncate_from_end(entries, end_offset);
            if !removed.is_empty() {
                log::debug!(
                    "[LeaderEpochCache {}] Cleared entries {} from epoch cache after truncating to end offset \
                     {end_offset}, leaving {} entries in the cache.",
                    this.topic_partition,
                    show_all(&removed),
                    entries.len()
                );
            }
            !removed.is_empty()
        })
    }

    /// Removes the entries that start at or before `start_offset` and puts the last of them
    /// back starting at `start_offset` (Kafka's `truncateFromStartAsyncFlush`, written before
    /// returning): the epoch of the new log start keeps its entry, moved up to it. Returns
    /// whether the cache changed.
    pub fn truncate_from_start(&self, start_offset: i64) -> Result<bool> {
        self.change(|this, entries| {
            let removed = truncate_from_start(entries, start_offset);
            if let Some(first) = entries.first().filter(|_| !removed.is_empty()) {
                log::debug!(
                    "[LeaderEpochCache {}] Cleared entries {} and rewrote first entry {} after truncating to start \
                     offset {start_offset}, leaving {} in the cache.",
                    this.topic_partition,
                    show_all(&removed),
                    show(first),
                    entries.len()
                );
            }
            !removed.is_empty()
        })
    }

    /// The epoch of the record at `offset` (Kafka's `epochForOffset`): that of the last entry
    /// starting at or before it; `None` before the first entry.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        self.entries.read().iter().take_while(|e| e.start_offset <= offset).last().map(|e| e.epoch)
    }

    /// The entries covering `[start_offset, end_offset)` (Kafka's `epochEntriesInRange`), the
    /// first moved up to `start_offset`; the cache is unchanged.
    pub fn epoch_entries_in_range(&self, start_offset: i64, end_offset: i64) -> Vec<EpochEntry> {
        let mut copy = self.entries.read().clone();
        if start_offset >= 0 {
            truncate_from_start(&mut copy, start_offset);
        }
        truncate_from_end(&mut copy, end_offset);
        copy
    }

    /// Removes every entry and writes the empty checkpoint (Kafka's `clearAndFlush`).
    pub fn clear_and_flush(&self) -> Result<()> {
        let _w = self.writer.lock();
        self.write_file(&[])?;
        self.entries.write().clear();
        Ok(())
    }

    /// Removes every entry without writing (Kafka's `clear`, used when the partition's files
    /// are deleted anyway).
    pub fn clear(&self) {
        let _w = self.writer.lock();
        self.entries.write().clear();
    }
}

/// Kafka's `isUpdateNeeded`: anything but the latest epoch again at or after its start.
fn is_update_needed(entries: &[EpochEntry], entry: &EpochEntry) -> bool {
    entries.last().is_none_or(|l| entry.epoch != l.epoch || entry.start_offset < l.start_offset)
}

fn check_entry(entry: &EpochEntry) -> Result<()> {
    if entry.epoch < 0 || entry.start_offset < 0 {
        return Err(Error::invalid_argument(
            "leader epoch entry",
            show(entry),
            "the epoch must be in [0, 2147483647] and the start offset in [0, 9223372036854775807]",
        ));
    }
    Ok(())
}

/// Kafka's static `truncateFromEnd`: the removed entries, latest first.
fn truncate_from_end(entries: &mut Vec<EpochEntry>, end_offset: i64) -> Vec<EpochEntry> {
    if end_offset < 0 || entries.last().is_none_or(|l| l.start_offset < end_offset) {
        return Vec::new();
    }
    let keep = entries.iter().rposition(|e| e.start_offset < end_offset).map_or(0, |k| k + 1);
    let mut removed = entries.split_off(keep);
    removed.reverse();
    removed
}

/// Kafka's static `truncateFromStart`: the removed entries, earliest first; the last of them is
/// put back starting at `start_offset`.
fn truncate_from_start(entries: &mut Vec<EpochEntry>, start_offset: i64) -> Vec<EpochEntry> {
    let n = entries.iter().take_while(|e| e.start_offset <= start_offset).count();
    let removed: Vec<EpochEntry> = entries.drain(..n).collect();
    if let Some(last) = removed.last() {
        entries.insert(0, EpochEntry { epoch: last.epoch, start_offset });
    }
    removed
}

/// Kafka's `EpochEntry.toString`.
fn show(e: &EpochEntry) -> String {
    format!("EpochEntry(epoch={}, startOffset={})", e.epoch, e.start_offset)
}

fn show_all(entries: &[EpochEntry]) -> String {
    let shown: Vec<String> = entries.iter().map(show).collect();
    format!("[{}]", shown.join(", "))
}
