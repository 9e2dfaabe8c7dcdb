//! Rebuilding a partition's producer state from its segments (Kafka's static
//! `UnifiedLog.rebuildProducerState`), shared by the log's open and truncation and by the
//! loader's segment recovery, which rebuilds a fresh manager up to each segment it recovers.

use super::manager::ProducerStateManager;
use crate::error::Result;
use crate::record::records::AnyBatch;
use crate::segment::log_segments::LogSegments;

/// How the log's producer state is rebuilt when it opens (Kafka's `UnifiedLog.rebuildProducerState`).
pub struct RebuildParams {
    /// The log start offset.
    pub log_start_offset: i64,
    /// The log end offset: the state is rebuilt up to it.
    pub last_offset: i64,
    /// The directory had a clean-shutdown marker.
    pub reload_from_clean_shutdown: bool,
    /// Read-only opens rebuild in memory from the log start and never touch a snapshot.
    pub read_only: bool,
    /// The current time (ms), for expiring producers loaded from a snapshot.
    pub now: i64,
}

/// Kafka's `UnifiedLog.rebuildProducerState`. After a clean shutdown with no snapshot (a log
/// written without producer state, or by an older broker) the scan is skipped and empty
/// snapshots are taken at the last two segment bases and the log end. Otherwise the state is
/// loaded from the latest readable snapshot at or below the log end (snapshots past it or at
/// or below the log start are deleted, a corrupt one is deleted and the next older one used),
/// the batches after it are replayed, a snapshot is taken at the last two segment bases passed
/// and at the log end. A read-only open replays from the log start and writes nothing.
pub fn rebuild_producer_state(psm: &mut ProducerStateManager, segments: &LogSegments, p: &RebuildParams) -> Result<()> {
    log::info!(
        "[UnifiedLog partition={}] Loading producer state till offset {} with message format version 2",
        psm.topic_partition(),
        p.last_offset
    );
    if p.read_only {
        psm.update_map_end_offset(p.log_start_offset);
        replay_segments(psm, segments, p.log_start_offset, p.last_offset, &[])?;
        psm.update_map_end_offset(p.last_offset);
        return Ok(());
    }
    let offsets_to_snapshot: Vec<i64> = match segments.last_segment() {
        Some(last) => {
            let mut v: Vec<i64> =
                segments.lower_segment(last.base_offset()).map(|s| s.base_offset()).into_iter().collect();
            v.push(last.base_offset());
            v.push(p.last_offset);
            v
        }
        None => vec![p.last_offset],
    };
    if psm.latest_snapshot_offset().is_none() && p.reload_from_clean_shutdown {
        for offset in offsets_to_snapshot {
            psm.update_map_end_offset(offset);
            psm.take_snapshot(true)?;
        }
        return Ok(());
    }
    log::info!("Reloading from producer snapshot and rebuilding producer state from offset {}", p.last_offset);
    let empty_before = psm.is_empty() && psm.map_end_offset() >= p.last_offset;
    psm.truncate_and_reload(p.log_start_offset, p.last_offset, p.now)?;
    if p.last_offset > psm.map_end_offset() && !empty_before {
        let from = psm.map_end_offset();
        replay_segments(psm, segments, from, p.last_offset, &offsets_to_snapshot)?;
    }
    psm.update_map_end_offset(p.last_offset);
    psm.take_snapshot(true)?;
    Ok(())
}

/// Replays the batches of `[from, to)` into `psm` as a follower's (Kafka's
/// `loadProducersFromRecords` per segment), taking a snapshot at each segment base in
/// `snapshot_at` it starts from.
fn replay_segments(
    psm: &mut ProducerStateManager,
    segments: &LogSegments,
    from: i64,
    to: i64,
    snapshot_at: &[i64],
) -> Result<()> {
    let mut buf = Vec::new();
    for segment in segments.covering(from, to) {
        let start = segment.base_offset().max(psm.map_end_offset()).max(from);
        psm.update_map_end_offset(start);
        if snapshot_at.contains(&segment.base_offset()) {
            psm.take_snapshot(true)?;
        }
        let Some(first) = segment.translate_offset(start, 0)? else { continue };
        let max_position = segment.translate_offset(to, first.position)?.map_or(segment.size(), |h| h.position);
        let path = segment.path();
        segment.log().for_each_batch(first.position, max_position, &mut buf, |position, batch| {
            let AnyBatch::V2(batch) = batch else { return Ok(true) };
            if batch.base_offset() >= to {
                return Ok(false);
            }
            psm.update_from_recovered_batch(&batch, |_, _| Ok(())).map_err(|e| e.in_file(&path, position))?;
            Ok(true)
        })?;
    }
    Ok(())
}
