//! Splitting a segment whose offsets do not fit one segment (Kafka's
//! `LocalLog.splitOverflowedSegment`). Logs cleaned before KAFKA-6264 can hold batches more than
//! `i32::MAX` offsets past their segment's base offset; such a segment cannot be indexed, so it
//! is rewritten as several segments, each starting at the base offset of its first batch,
//! through the crash-safe replace (`.cleaned` -> `.swap` -> live). Each part keeps the
//! `.txnindex` entries of the ABORT markers it holds.
//!
//! Thread-safety: runs under the log's write lock (or during loading, before anyone else sees
//! the log).

use std::sync::Arc;

use super::local_log::LocalLog;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::CLEANED_FILE_SUFFIX;
use crate::segment::log_segment::LogSegment;

/// Rewrites `segment` as as many segments as its offsets need and installs them in its place.
/// Copies batches up to the first invalid one (a bad CRC, or offsets no segment can hold);
/// returns the bytes left behind.
pub fn split_overflowed_segment(segment: &Arc<LogSegment>, config: &LogConfig, local: &LocalLog) -> Result<u64> {
    let mut parts: Vec<Arc<LogSegment>> = Vec::new();
    let mut valid: u64 = 0;
    let mut last_copied = i64::MIN;
    let mut buf = Vec::new();
    let size = segment.size();
    let scan = segment.log().for_each_batch(0, size, &mut buf, |position, batch| {
        if position != valid || batch.ensure_valid().is_err() {
            return Ok(false);
        }
        let base = batch.base_offset()?;
        let last = batch.last_offset();
        if last < base || last == i64::MAX || last.checked_sub(base).is_none_or(|d| d > i64::from(i32::MAX)) {
            // The base offset is outside the CRC: a damaged one makes the batch invalid here.
            return Ok(false);
        }
        if base < segment.base_offset() || base <= last_copied {
            log::warn!(
                "batch at position {position} of {} starts at offset {base}, below the offsets before it; \
                 the segment ends there",
                segment.path().display()
            );
            return Ok(false);
        }
        let fits = parts.last().is_some_and(|p| p.can_convert_to_relative_offset(batch.last_offset()));
        if !fits {
            let part =
                LogSegment::open(local.dir(), base, config, local.clock().clone(), CLEANED_FILE_SUFFIX, false, false)?;
            parts.push(Arc::new(part));
        }
        let part = parts.last().expect("pushed above");
        part.append(batch.last_offset(), batch.bytes(), batch.record_count()?)?;
        valid += batch.size_in_bytes() as u64;
        last_copied = batch.last_offset();
        Ok(true)
    });
    match scan {
        Ok(_) | Err(Error::CorruptRecord { .. }) => {}
        Err(e) => {
            for p in &parts {
                p.delete_if_exists()?;
            }
            return Err(e);
        }
    }
    warn_invalid_tail(segment, valid, size, parts.is_empty());
    if parts.is_empty() {
        // Nothing valid to keep: an empty segment at the old base takes its place.
        return segment.truncate_to(segment.base_offset());
    }
    carry_aborted_txns(segment, &parts, last_copied)?;
    // As Kafka does for every part: indexes trimmed with the final time-index entry, as a
    // rolled segment has them, and the old segment's modification time, which retention uses
    // for data without timestamps.
    let mtime = std::fs::metadata(segment.path())
        .and_then(|m| m.modified())
        .map_err(|e| Error::io(segment.path(), "stat", e))?;
    for p in &parts {
        p.on_become_inactive_segment()?;
        p.flush()?;
        p.log().set_modified(mtime)?;
    }
    log::info!(
        "Replacing overflowed segment {} with {} split segments at base offsets {:?}",
        segment.path().display(),
        parts.len(),
        parts.iter().map(|p| p.base_offset()).collect::<Vec<_>>()
    );
    local.replace_segments(&parts, std::slice::from_ref(segment), config)?;
    Ok(size - valid)
}

/// Gives each part the `.txnindex` entries of the old segment whose ABORT marker it now holds
/// (the part with the highest base at or below the marker's offset); entries whose marker was
/// in the bytes left behind go with them. Kafka's split copies only the `.log` bytes, leaving
/// the parts' transaction indexes empty until a recovery rebuilds them, so a `read_committed`
/// read in between would return aborted records; kafkalog keeps them.
fn carry_aborted_txns(segment: &LogSegment, parts: &[Arc<LogSegment>], last_copied: i64) -> Result<()> {
    let entries = segment.txn_index().all_aborted_txns()?;
    for entry in entries.into_iter().filter(|e| e.last_offset <= last_copied) {
        if let Some(part) = parts.iter().rev().find(|p| p.base_offset() <= entry.last_offset) {
            part.update_txn_index(entry)?;
        }
    }
    Ok(())
}

/// The warning for the bytes a split leaves behind (from `valid` to `size`), if any.
fn warn_invalid_tail(segment: &LogSegment, valid: u64, size: u64, nothing_valid: bool) {
    if nothing_valid {
        log::warn!(
            "Found invalid messages in log segment {} at byte offset 0 while splitting it: no valid batch. \
             Truncating the segment from {size} to 0 bytes ({size} bytes discarded)",
            segment.path().display()
        );
    } else if valid < size {
        log::warn!(
            "Found invalid messages in log segment {} at byte offset {valid} while splitting it. The split \
             segments end there ({} bytes discarded)",
            segment.path().display(),
            size - valid
        );
    }
}
