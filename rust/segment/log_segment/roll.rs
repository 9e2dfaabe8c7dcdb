//! How many batches can go into a segment in one write: those before the first that
//! `should_roll` would roll for if they were appended one at a time. A writer of many batches
//! that appends that many in one call puts the bytes, index entries and rolls exactly where
//! appending them one by one would, with one write instead of one per batch.

use super::LogSegment;
use crate::error::Result;

/// A batch about to be appended, as the roll decision sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncomingBatch {
    pub size: u64,
    pub max_timestamp: i64,
    pub last_offset: i64,
}

impl LogSegment {
    /// How many leading `batches` would each pass [`LogSegment::should_roll`] (with
    /// `max_segment_bytes`, `max_segment_ms` and `now` as its `RollParams`) were they appended
    /// one at a time: before the `n`-th, the segment holds `n` more batches. Exact for the size,
    /// time and relative-offset conditions; for a full index it counts an entry per batch in
    /// each index (an append adds at most one), so it may stop early, never late.
    pub fn batches_before_roll(
        &self,
        max_segment_bytes: u64,
        max_segment_ms: i64,
        now: i64,
        batches: &[IncomingBatch],
    ) -> Result<usize> {
        let mut size = self.size();
        let mut rolling_timestamp = if size > 0 { self.first_batch_timestamp()? } else { None };
        let created_ms = self.state.lock().created_ms;
        let offset_room = {
            let index = self.offset_index()?.get()?;
            index.max_entries().saturating_sub(index.entries())
        };
        let time_room = {
            let index = self.time_index()?.get()?;
            index.max_entries().saturating_sub(index.entries() + 1)
        };
        for (n, b) in batches.iter().enumerate() {
            let waited = match rolling_timestamp {
                Some(ts) if ts >= 0 => b.max_timestamp - ts,
                _ => now - created_ms,
            };
            let reached_time_limit = size > 0 && waited > max_segment_ms - self.rolling_jitter_ms;
            let index_full = n >= offset_room || n >= time_room;
            if size > max_segment_bytes.saturating_sub(b.size)
                || reached_time_limit
                || index_full
                || !self.can_convert_to_relative_offset(b.last_offset)
            {
                return Ok(n);
            }
            if size == 0 {
                rolling_timestamp = Some(b.max_timestamp); // what `append` records for the first batch
            }
            size += b.size;
        }
        Ok(batches.len())
    }
}
