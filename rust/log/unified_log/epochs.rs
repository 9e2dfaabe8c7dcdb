//! `UnifiedLog`'s use of its leader epoch cache (Kafka's `UnifiedLog.leaderEpochCache`,
//! `maybeAssignEpochStartOffset`, `latestEpoch`, `endOffsetForEpoch`): the cache is read at
//! open and brought in line with the loaded log, appends assign the epochs stamped on their
//! batches, and truncations and log-start moves follow in `unified_log.rs` and `retention.rs`.
//!
//! Thread-safety: changes run under the log's write lock; the read-side accessors take only
//! the cache's own read lock.

use std::path::Path;

use super::UnifiedLog;
use crate::error::{Error, Result};
use crate::file_names::{TopicPartition, LEADER_EPOCH_CHECKPOINT_FILE};
use crate::log::leader_epoch_cache::{EpochEntry, LeaderEpochFileCache, UNDEFINED_EPOCH_OFFSET};
use crate::record::records::BatchIter;

/// A leader epoch and an offset (Kafka's `OffsetAndEpoch`): the answer of
/// [`UnifiedLog::end_offset_for_epoch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAndEpoch {
    /// The end offset of `leader_epoch`: the start of the next epoch, or the log end offset.
    pub offset: i64,
    /// The largest cached epoch at or below the one asked for.
    pub leader_epoch: i32,
}

/// Reads the partition's `leader-epoch-checkpoint` for a load (the cache writes nothing yet).
/// `listed`: whether the open's listing of `dir` holds the checkpoint (`None`: not listed).
pub(super) fn load_cache(
    dir: &Path,
    topic_partition: &TopicPartition,
    listed: Option<bool>,
) -> Result<(LeaderEpochFileCache, Vec<EpochEntry>)> {
    if listed == Some(false) {
        return Ok((LeaderEpochFileCache::new(topic_partition.clone(), None), Vec::new()));
    }
    LeaderEpochFileCache::load(dir, topic_partition.clone())
}

/// After the load: a writable log's cache writes its checkpoint from now on, and once now if
/// loading changed it (recovered epochs, entries past the log end or before the log start). A
/// read-only log's cache never writes.
pub(super) fn finish_load(
    cache: LeaderEpochFileCache,
    stored: &[EpochEntry],
    dir: &Path,
    read_only: bool,
) -> Result<LeaderEpochFileCache> {
    if read_only {
        return Ok(cache);
    }
    let cache = cache.with_checkpoint(dir.join(LEADER_EPOCH_CHECKPOINT_FILE));
    if cache.epoch_entries() != stored {
        cache.flush()?;
    }
    Ok(cache)
}

impl UnifiedLog {
    /// The partition's leader epoch cache (Kafka's `leaderEpochCache`).
    pub fn leader_epoch_cache(&self) -> &LeaderEpochFileCache {
        &self.leader_epoch_cache
    }

    /// The cached leader epochs and their start offsets, in order.
    pub fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.leader_epoch_cache.epoch_entries()
    }

    /// The latest leader epoch of the log (Kafka's `latestEpoch`), `None` when none is known.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.leader_epoch_cache.latest_epoch()
    }

    /// Kafka's `endOffsetForEpoch`: the largest cached epoch at or below `leader_epoch` and
    /// where it ends (see [`LeaderEpochFileCache::end_offset_for`]); `None` when that is
    /// undefined (an empty cache, `leader_epoch` -1 or above the latest epoch).
    pub fn end_offset_for_epoch(&self, leader_epoch: i32) -> Option<OffsetAndEpoch> {
        let (epoch, offset) = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset());
        (offset != UNDEFINED_EPOCH_OFFSET).then_some(OffsetAndEpoch { offset, leader_epoch: epoch })
    }

    /// Records that `leader_epoch` starts at `start_offset` (Kafka's
    /// `maybeAssignEpochStartOffset`, which a new leader calls with its log end offset). A
    /// negative epoch or offset is `InvalidArgument`.
    pub fn maybe_assign_epoch_start_offset(&self, leader_epoch: i32, start_offset: i64) -> Result<()> {
        self.check_writable()?;
        let _guard = self.write_lock.lock();
        self.handle_io(self.leader_epoch_cache.assign(leader_epoch, start_offset).map(|_| ()))
    }

    /// A leader appends in the latest epoch or a newer one: an older epoch is a stale leader
    /// (Kafka's `FencedLeaderEpochException`). -1 (no leader epoch) is not checked.
    pub(super) fn check_leader_epoch_current(&self, leader_epoch: i32) -> Result<()> {
        match self.leader_epoch_cache.latest_epoch() {
            Some(latest) if leader_epoch >= 0 && leader_epoch < latest => Err(Error::FencedLeaderEpoch {
                partition: self.topic_partition.to_string(),
                leader_epoch,
                latest_epoch: latest,
            }),
            _ => Ok(()),
        }
    }

    /// Kafka's step of `UnifiedLog.append` after validation: each v2 batch's partition leader
    /// epoch (when it has one, >= 0) starts at the batch's base offset unless already known;
    /// a legacy (magic 0/1) batch clears the cache, so leader election falls back to the high
    /// watermark.
    pub(super) fn assign_epochs_of(&self, records: &[u8]) -> Result<()> {
        for item in BatchIter::new(records) {
            let (_, batch) = item?;
            if batch.magic() >= 2 {
                let epoch = batch.partition_leader_epoch();
                if epoch >= 0 {
                    self.leader_epoch_cache.assign(epoch, batch.base_offset()?)?;
                }
            } else if self.leader_epoch_cache.non_empty() {
                log::warn!(
                    "Clearing leader epoch cache of {} after unexpected append with message format v{}",
                    self.topic_partition,
                    batch.magic()
                );
                self.leader_epoch_cache.clear_and_flush()?;
            }
        }
        Ok(())
    }
}
