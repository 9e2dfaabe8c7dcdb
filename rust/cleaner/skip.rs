//! Runs of superseded batches the rewrite drops without reading them (kafkalog's addition;
//! Kafka's `cleanInto` reads and filters every batch).
//!
//! The passes mark every record they see replaced by a later record of its key
//! ([`MappedRecords`]); the rewrite drops such a record, and a batch of nothing else. Where
//! the marks say that every offset from the rewrite's position up to some offset `q` is
//! superseded, the source segment's offset index gives the last indexed batch at or below
//! `q` (its entries are a batch's last offset and position): every batch before it holds only
//! offsets of `[next, q)`, so the rewrite jumps there, after checking that the batch's header
//! is the one the entry names. The skipped records count as read.
//!
//! Skips are bounded so that every batch Kafka's rules keep, or read for their side effects,
//! is still read: none in a range holding transactional, control or legacy batches
//! ([`MappedRecords::forbid_skips`]); none past an active producer's last data batch or the
//! batch ending at the cleaning bound (both kept as empty batches); none past the map's latest
//! offset (beyond which records are kept).
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

impl SkipBounds {
    /// The run of superseded batches starting at `position` of `source` (at a batch boundary,
    /// where the next batch's offsets are `next` or more), if there is one worth skipping.
    pub(super) fn run_at(
        &self,
        mapped: &MappedRecords,
        source: &LogSegment,
        position: u64,
        next: i64,
    ) -> Result<Option<Skip>> {
        let q = mapped.first_not_superseded(next, self.limit_from(next));
        if q <= next {
            return Ok(None);
        }
        let entry = source.offset_index()?.get()?.lookup(q);
        let to = u64::from(entry.position);
        if to < position.saturating_add(MIN_SKIP_BYTES) {
            return Ok(None);
        }
        let Some(header) = source.log().read_header(to, source.size())? else { return Ok(None) };
        let fits = header.magic == MAGIC_V2
            && header.last_offset == entry.offset
            && header.base_offset >= next
            && header.base_offset <= q;
        if !fits {
            log::warn!(
                "the offset index of {} names offset {} at position {to}, where the batch holds [{}, {}]: the cleaner \
                 reads on without skipping",
                source.path().display(),
                entry.offset,
                header.base_offset,
                header.last_offset
            );
            return Ok(None);
        }
        Ok(Some(Skip { to, next: header.base_offset, records: (header.base_offset - next) as u64 }))
    }
}
