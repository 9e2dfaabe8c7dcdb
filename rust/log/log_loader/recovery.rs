//! Segment recovery for the loader (`log_loader.rs`, Kafka's `LogLoader.recoverSegment` and
//! `recoverLog`): one segment recovered (or split), with a producer state rebuilt up to it,
//! and the in-order recovery of every segment past the recovery point, which carries the
//! producer state from segment to segment and leaves the snapshots it would write again with
//! the same bytes as they are.
//!
//! Thread-safety: as the loader, one thread over a directory nobody else writes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::{describe_segments, LoadParams, LoadResult};
use crate::error::{Error, Result};
use crate::index::transaction_index::AbortedTxn;
use crate::log::leader_epoch_cache::LeaderEpochFileCache;
use crate::log::local_log::LocalLog;
use crate::log::producer_state::snapshot::SnapshotFile;
use crate::log::producer_state::{rebuild_producer_state, ProducerStateManager, RebuildParams};
use crate::record::records::AnyBatch;
use crate::segment::log_segment::{IndexWrite, LogSegment};

/// The `(epoch, base offset)` of each v2 batch recovered whose epoch differs from the one
/// before, in order.
type EpochStarts = Vec<(i32, i64)>;

/// What one segment's recovery leaves for the next, while the loader recovers the segments
/// past the recovery point in order (`recover_segment`).
#[derive(Default)]
struct RecoveryCarry {
    /// The producer state at the end of the last segment recovered.
    psm: Option<ProducerStateManager>,
    /// Snapshots past the first recovered segment that Kafka's first rebuild deletes, still on
    /// disk until a segment's snapshot reaches them (`ProducerStateManager::defer_snapshot_deletions`).
    deferred: BTreeMap<i64, SnapshotFile>,
    /// The snapshots on disk as the loader listed them, for the first manager the recovery
    /// builds (instead of listing the directory again); taken by it.
    listed: Option<BTreeMap<i64, SnapshotFile>>,
}

impl RecoveryCarry {
    /// Deletes the deferred snapshots the recovery did not reach.
    fn finish(&mut self) -> Result<()> {
        for s in std::mem::take(&mut self.deferred).values() {
            s.delete_if_exists()?;
        }
        Ok(())
    }
}

/// Recovers one segment on its own (no producer state carried in or out), writing its
/// indexes atomically: a segment recovered for a missing or damaged index, which nothing else
/// would make the next load recover again.
pub(super) fn recover_alone(
    segment: &Arc<LogSegment>,
    params: &LoadParams<'_>,
    local: &LocalLog,
    result: &mut LoadResult,
) -> Result<u64> {
    recover_or_split(segment, params, local, result, IndexWrite::Atomic, None)
}

/// Recovers one segment (Kafka's `recoverSegment`): offsets that go backwards leave it empty
/// rather than the log unopenable, and offsets too far from the base for one segment (logs
/// written before KAFKA-6264) split it. Returns the bytes truncated.
fn recover_or_split(
    segment: &Arc<LogSegment>,
    params: &LoadParams<'_>,
    local: &LocalLog,
    result: &mut LoadResult,
    write: IndexWrite,
    carry: Option<&mut RecoveryCarry>,
) -> Result<u64> {
    // A split replaces the segment with parts in [its base, the next segment's base).
    let next_base = local.segments().higher_segment(segment.base_offset()).map_or(i64::MAX, |s| s.base_offset());
    // The epochs of the batches recovered, when the scan saw them all (`assign_recovered_epochs`).
    let mut epochs = None;
    let outcome = match recover_segment(segment, params, local, write, carry) {
        Ok((truncated, seen)) => {
            epochs = seen;
            Ok(truncated)
        }
        Err(Error::OffsetOverflow { offset, .. }) => {
            log::warn!(
                "Caught segment overflow error: offset {offset} does not fit log segment {} (a log written \
                 before KAFKA-6264). Split segment and retry.",
                segment.path().display()
            );
            result.segments_split += 1;
            crate::log::splitter::split_overflowed_segment(segment, params.config, local)
        }
        Err(e) => Err(e),
    };
    let truncated = match outcome {
        Err(Error::InvalidOffset { reason }) => {
            let size = segment.size();
            log::warn!(
                "Found invalid offset during recovery of log segment {}: {reason}. Deleting the corrupt segment \
                 and creating an empty one with starting offset {} ({size} bytes discarded from byte offset 0)",
                segment.path().display(),
                segment.base_offset()
            );
            segment.truncate_to(segment.base_offset())?
        }
        other => other?,
    };
    result.segments_recovered += 1;
    result.bytes_truncated += truncated;
    if let Some(cache) = params.leader_epoch_cache {
        match epochs {
            Some(epochs) => assign_epochs(&epochs, cache)?,
            None => {
                for part in local.segments().values_range(segment.base_offset(), next_base) {
                    assign_recovered_epochs(&part, cache)?;
                }
            }
        }
    }
    Ok(truncated)
}

/// Recovers one segment (Kafka's `LogLoader.recoverSegment`): with producer state, a fresh
/// manager is rebuilt up to the segment's base offset (from the latest snapshot below it), the
/// segment's batches are replayed into it as they are validated, rebuilding the `.txnindex`,
/// and a snapshot is taken at the segment's end so the next recovery need not replay it again.
/// Returns the bytes truncated and, with producer state, the `(epoch, base offset)` of each v2
/// batch recovered whose epoch differs from the one before (for the leader epoch cache).
///
/// `carry` (the in-order recovery past the recovery point) holds the manager the previous
/// segment's recovery left: when it ends at this segment's base with its snapshot there, it
/// stands in for the fresh one, reloaded in memory from that snapshot's encoding
/// (`reload_from_own_snapshot`) instead of listing the directory and reading the file back;
/// the state and the snapshots written are the same. It also holds the snapshots whose
/// deletion is deferred (`RecoveryCarry::deferred`), so a snapshot the recovery would write
/// again with the same bytes stays as it is. The snapshot is not fsynced (Kafka fsyncs it): it
/// only saves replaying, a crash that damages it makes the next load delete it and replay from
/// an older one, and an fsync per segment would bound recovery to the disk's fsync rate.
fn recover_segment(
    segment: &LogSegment,
    params: &LoadParams<'_>,
    local: &LocalLog,
    write: IndexWrite,
    mut carry: Option<&mut RecoveryCarry>,
) -> Result<(u64, Option<EpochStarts>)> {
    let Some(setup) = params.producer_state.filter(|_| !params.read_only) else {
        return Ok((segment.recover()?, None));
    };
    let clock = local.clock().clone();
    let now = clock.milliseconds();
    let mut carried =
        carry.as_mut().and_then(|c| c.psm.take()).filter(|psm| psm.map_end_offset() == segment.base_offset());
    if let Some(psm) = carried.as_mut() {
        if !psm.reload_from_own_snapshot(now)? {
            carried = None;
        }
    }
    let mut psm = if let Some(psm) = carried {
        psm
    } else {
        let (tp, timeout) = (setup.topic_partition.clone(), setup.max_transaction_timeout_ms);
        match carry.as_mut().and_then(|c| c.listed.take()) {
            Some(listed) => {
                ProducerStateManager::with_snapshots(tp, local.dir(), timeout, setup.config, clock.clone(), listed)
            }
            None => ProducerStateManager::new(tp, local.dir(), timeout, setup.config, clock.clone())?,
        }
    };
    if let Some(c) = carry.as_mut() {
        psm.defer_snapshot_deletions(std::mem::take(&mut c.deferred));
    }
    let mut epochs = Vec::new();
    let outcome = replay_and_recover(&mut psm, segment, params, local, write, now, &mut epochs);
    let deferred = psm.finish_deferred_deletions(carry.is_some())?;
    let truncated = outcome?;
    if let Some(c) = carry {
        c.deferred = deferred;
        c.psm = Some(psm);
    }
    Ok((truncated, Some(epochs)))
}

/// The body of [`recover_segment`]: `psm` rebuilt up to the segment, the segment recovered
/// through it, its snapshot taken; `epochs` gets the epoch changes of the batches recovered.
fn replay_and_recover(
    psm: &mut ProducerStateManager,
    segment: &LogSegment,
    params: &LoadParams<'_>,
    local: &LocalLog,
    write: IndexWrite,
    now: i64,
    epochs: &mut Vec<(i32, i64)>,
) -> Result<u64> {
    let rebuild = RebuildParams {
        log_start_offset: params.log_start_offset.unwrap_or(0),
        last_offset: segment.base_offset(),
        reload_from_clean_shutdown: false,
        read_only: false,
        now,
    };
    rebuild_producer_state(psm, local.segments(), &rebuild)?;
    let truncated = segment.recover_rebuilding_txn_index(
        &mut |batch: &AnyBatch<'_>| {
            let AnyBatch::V2(batch) = batch else { return Ok(None) };
            let epoch = batch.partition_leader_epoch();
            if epoch >= 0 && epochs.last().is_none_or(|(last, _)| *last != epoch) {
                epochs.push((epoch, batch.base_offset()));
            }
            let mut aborted = None;
            psm.update_from_recovered_batch(batch, |txn, lso| {
                if txn.is_aborted {
                    aborted = Some(AbortedTxn::new(txn.producer_id, txn.first_offset, txn.last_offset, lso));
                }
                Ok(())
            })?;
            Ok(aborted)
        },
        write,
    )?;
    psm.take_snapshot(false)?;
    Ok(truncated)
}

/// What `LogSegment.recover` does to the leader epoch cache: each v2 batch with an epoch above
/// the cache's latest (or any epoch, when the cache is empty) starts that epoch. Read from the
/// headers of the segment just recovered (their CRCs were checked by the recovery).
fn assign_recovered_epochs(segment: &LogSegment, cache: &LeaderEpochFileCache) -> Result<()> {
    let log = segment.log();
    log.for_each_header(0, log.size(), |h| {
        let epoch = h.partition_leader_epoch;
        if h.magic >= 2 && epoch >= 0 && cache.latest_epoch().is_none_or(|latest| epoch > latest) {
            cache.assign(epoch, h.base_offset)?;
        }
        Ok(true)
    })?;
    Ok(())
}

/// [`assign_recovered_epochs`] from the epoch changes the recovery's scan collected (dropping
/// a batch whose epoch equals the one before changes nothing: it is not above the latest).
fn assign_epochs(epochs: &[(i32, i64)], cache: &LeaderEpochFileCache) -> Result<()> {
    for &(epoch, base_offset) in epochs {
        if cache.latest_epoch().is_none_or(|latest| epoch > latest) {
            cache.assign(epoch, base_offset)?;
        }
    }
    Ok(())
}

/// Step 4 (Kafka's `recoverLog` after an unclean shutdown): recovers the segments from the one
/// holding `recovery_point` on. Bytes cut from one segment mean the later ones hold data that
/// no longer follows on: they are deleted. The parts a split makes of a segment are not
/// "later" ones: only segments at or above the next segment's base offset go. Segments just
/// recovered for a missing index (`already`) are not recovered twice (Kafka does recover them
/// again, finding nothing more to cut).
///
/// `listed`: the snapshots in the directory, when the caller's listing still shows them. Returns
/// the producer state the last recovery left (at the log end, its snapshots those on disk),
/// if the recovery kept one.
pub(super) fn recover_unflushed(
    dir: &Path,
    recovery_point: i64,
    already: &[i64],
    params: &LoadParams<'_>,
    local: &LocalLog,
    result: &mut LoadResult,
    listed: Option<BTreeMap<i64, SnapshotFile>>,
) -> Result<Option<ProducerStateManager>> {
    let from = local.segments().floor_segment(recovery_point).map_or(i64::MIN, |s| s.base_offset());
    let mut pending: std::collections::VecDeque<_> = local.segments().values_range(from, i64::MAX).into();
    let total = pending.len();
    // The producer state each recovery leaves, for the next segment's (`recover_segment`).
    let mut carry = RecoveryCarry { listed, ..RecoveryCarry::default() };
    while let Some(segment) = pending.pop_front() {
        if let Some(progress) = params.progress {
            progress(pending.len() + 1);
        }
        if already.contains(&segment.base_offset()) {
            continue;
        }
        log::info!(
            "Recovering unflushed segment {}. {}/{total} segments recovered for {}.",
            segment.base_offset(),
            total - pending.len() - 1,
            dir.display()
        );
        let next_base = pending.front().map_or(i64::MAX, |s| s.base_offset());
        match recover_unflushed_segment(dir, &segment, next_base, params, local, result, &mut carry) {
            Ok(false) => {}
            Ok(true) => break,
            Err(e) => {
                // Best effort: what Kafka's first rebuild would have deleted goes.
                let _ = carry.finish();
                return Err(e);
            }
        }
    }
    carry.finish()?;
    if let Some(progress) = params.progress {
        progress(0);
    }
    Ok(carry.psm)
}

/// One segment of [`recover_unflushed`]; returns whether it was truncated (the segments from
/// `next_base` on are then deleted and the recovery stops).
fn recover_unflushed_segment(
    dir: &Path,
    segment: &Arc<LogSegment>,
    next_base: i64,
    params: &LoadParams<'_>,
    local: &LocalLog,
    result: &mut LoadResult,
    carry: &mut RecoveryCarry,
) -> Result<bool> {
    // At or past the recovery point: a crash before the next flush recovers it again.
    // The last segment is the active one: its indexes stay open at full size for appends.
    let write = if next_base == i64::MAX { IndexWrite::InPlaceActive } else { IndexWrite::InPlace };
    if recover_or_split(segment, params, local, result, write, Some(carry))? == 0 {
        return Ok(false);
    }
    let doomed = local.segments().values_range(next_base, i64::MAX);
    if !doomed.is_empty() {
        log::warn!(
            "Corruption found in segment {} of {}, truncating to offset {}: deleting the {} segments after it, {}",
            segment.base_offset(),
            dir.display(),
            segment.read_next_offset().unwrap_or(segment.base_offset()),
            doomed.len(),
            describe_segments(&doomed)
        );
        result.segments_deleted += doomed.len();
        local.remove_and_delete_segments(&doomed, params.config)?;
    }
    Ok(true)
}
