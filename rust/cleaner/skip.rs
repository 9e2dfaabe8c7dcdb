//! Runs of superseded batches the rewrite drops without reading them (kafkalog's addition;
//! Kafka's `cleanInto` reads and filters every batch).
//!
//! The passes mark every record they see replaced by a later record of its key
//! ([`MappedRecords`]); the rewrite drops such a record, and a batch of nothing else. Where
//! the marks say that every offset from the rewrite's position up to some offset `q` is
//! superseded, the source segment's offset index gives the last indexed batch at or below
//! `q` (its entries are a batch's last offset and position): every batch before it holds only
//! offsets of `[next, q)`, so the rewrite jumps there, after checking the batch's header
//! against the entry (an entry it cannot trust makes it read the rest of that segment). The
//! skipped records count as read; their bytes are not read, so not throttled either.
//!
//! Skips are bounded so that every batch Kafka's rules keep, or read for their side effects,
//! is still read: none in a range holding transactional, control or legacy batches, or
//! offsets that do not grow along a segment ([`MappedRecords::forbid_skips`]); none past an
//! active producer's last data batch or the batch ending at the cleaning bound (both kept as
//! empty batches); none past the map's latest offset (beyond which records are kept).
//!
//! Thread-safety: plain data of the one cleaning thread.

use std::collections::HashMap;

use super::filter::LastRecord;
use super::mapped_records::MappedRecords;
use crate::error::Result;
use crate::record::batch::MAGIC_V2;
use crate::segment::log_segment::LogSegment;

/// Skips shorter than this are not worth an index lookup and a header read.
const MIN_SKIP_BYTES: u64 = 64 * 1024;

/// How far a rewrite may skip (see the module docs).
#[derive(Debug)]
pub(super) struct SkipBounds {
    /// No skipped offset reaches this one.
    limit: i64,
    /// The active producers' last data offsets, ascending: no skip passes one.
    producer_last: Vec<i64>,
}

impl SkipBounds {
    /// The bounds of a rewrite after passes that left `mapped` and a map whose latest offset
    /// is `map_latest`, cleaning below `upper_bound`; `None` when the passes forbade skips.
    pub(super) fn new(
        mapped: &MappedRecords,
        map_latest: i64,
        upper_bound: i64,
        last_records: &HashMap<i64, LastRecord>,
    ) -> Option<Self> {
        if !mapped.skips_allowed() {
            return None;
        }
        let mut producer_last: Vec<i64> = last_records.values().filter_map(|r| r.last_data_offset).collect();
        producer_last.sort_unstable();
        Some(SkipBounds { limit: map_latest.saturating_add(1).min(upper_bound - 1), producer_last })
    }

    /// The bound for a run starting at `next`.
    fn limit_from(&self, next: i64) -> i64 {
        let i = self.producer_last.partition_point(|&o| o < next);
        self.producer_last.get(i).map_or(self.limit, |&o| o.min(self.limit))
    }
}

/// A run of batches to drop unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Skip {
    /// The position to read on from.
    pub(super) to: u64,
    /// The first offset of the batch at `to`.
    pub(super) next: i64,
    /// Records skipped: every offset of the run holds one.
    pub(super) records: u64,
}

/// What [`SkipBounds::run_at`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// Skip to the batch named.
    Skip(Skip),
    /// Nothing worth skipping here: read on.
    None,
    /// The segment's offset index named a position where no batch of the run's offsets
    /// starts: read the rest of the segment without skipping (it was warned about once).
    Distrusted,
}

impl SkipBounds {
    /// The run of superseded batches starting at `position` of `source` (at a batch boundary,
    /// where the next batch's offsets are `next` or more), if there is one worth skipping.
    ///
    /// The index entry found must lead to a v2 batch whose offsets lie in `[next, q]` and end
    /// at or below the entry's offset: Kafka 4 indexes a batch by its own last offset, Kafka
    /// before 4.0 by the last offset of the append it came in (KAFKA-806). With offsets that
    /// only grow along the segment, every batch skipped then holds offsets of `[next, q)`
    /// only. Anything else (a stale or damaged entry, bytes that are not a batch header) is
    /// distrusted: the rewrite reads on, as it would without the index.
    pub(super) fn run_at(&self, mapped: &MappedRecords, source: &LogSegment, position: u64, next: i64) -> Result<Run> {
        let q = mapped.first_not_superseded(next, self.limit_from(next));
        if q <= next {
            return Ok(Run::None);
        }
        let entry = source.offset_index()?.get()?.lookup(q);
        let to = u64::from(entry.position);
        if to < position.saturating_add(MIN_SKIP_BYTES) {
            return Ok(Run::None);
        }
        let header = match source.log().read_header(to, source.size()) {
            Ok(Some(h)) => Ok(h),
            Ok(None) => Err("no complete batch header".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let fits = |h: &crate::segment::file_records::BatchHeaderInfo| {
            h.magic == MAGIC_V2
                && next <= h.base_offset
                && h.base_offset <= h.last_offset
                && h.last_offset <= entry.offset
        };
        match header {
            Ok(h) if fits(&h) => {
                Ok(Run::Skip(Skip { to, next: h.base_offset, records: (h.base_offset - next) as u64 }))
            }
            found => {
                let found = match found {
                    Ok(h) => format!("a batch of offsets [{}, {}]", h.base_offset, h.last_offset),
                    Err(e) => e,
                };
                log::warn!(
                    "the offset index of {} names offset {} at position {to}, where it finds {found}: the cleaner \
                     reads the rest of the segment without skipping",
                    source.path().display(),
                    entry.offset,
                );
                Ok(Run::Distrusted)
            }
        }
    }
}
