//! The bulk-read path behind `to_arrow`: every batch of a range in order, within the bound of
//! a fetch isolation, each with whether a consumer of that isolation returns its records.
//!
//! Thread-safety: reads only, as `UnifiedLog::read`: a concurrent append is seen whole or not
//! at all.

use super::committed::CommittedFilter;
use super::{arguments, check_batch_in_segment, FetchIsolation, UnifiedLog};
use crate::error::Result;
use crate::record::records::AnyBatch;

impl UnifiedLog {
    /// Visits every batch overlapping `[start_offset, end_offset)` in order, within the bound of
    /// `isolation`, until `f` returns false. The range is cut to what the log holds (below the
    /// log start nothing is served); a negative `start_offset` or `end_offset` is refused
    /// (`InvalidArgument`). Control batches and (for `TxnCommitted`) aborted batches are visited
    /// too: [`UnifiedLog::scan_visible`] tells them apart.
    pub fn scan<F>(&self, start_offset: i64, end_offset: i64, isolation: FetchIsolation, mut f: F) -> Result<()>
    where
        F: FnMut(AnyBatch<'_>) -> Result<bool>,
    {
        self.handle_io(self.scan_inner(start_offset, end_offset, isolation, false, |b, _| f(b)))
    }

    /// [`UnifiedLog::scan`] that also tells `f` whether a consumer of `isolation` returns the
    /// batch's records: never for a control batch, and for `TxnCommitted` not for a batch of an
    /// aborted transaction (a [`CommittedFilter`] fed with the aborted transactions from
    /// `start_offset` on, collected segment by segment as the scan goes). The bulk-read path
    /// behind `to_arrow`.
    pub fn scan_visible<F>(&self, start_offset: i64, end_offset: i64, isolation: FetchIsolation, f: F) -> Result<()>
    where
        F: FnMut(AnyBatch<'_>, bool) -> Result<bool>,
    {
        self.handle_io(self.scan_inner(start_offset, end_offset, isolation, true, f))
    }

    fn scan_inner<F>(
        &self,
        start_offset: i64,
        end_offset: i64,
        isolation: FetchIsolation,
        visibility: bool,
        mut f: F,
    ) -> Result<()>
    where
        F: FnMut(AnyBatch<'_>, bool) -> Result<bool>,
    {
        self.check_open()?;
        arguments::check_range(start_offset, end_offset)?;
        let o = *self.offsets.read();
        let bound = self.bound_of(isolation, &o);
        let start = start_offset.max(o.log_start);
        let end = end_offset.min(bound);
        if start >= end {
            return Ok(());
        }
        let mut committed =
            (visibility && isolation == FetchIsolation::TxnCommitted).then(|| (CommittedFilter::default(), start));
        let (bound_base, bound_position) = self.position_of(bound, &o)?;
        let mut buf = Vec::new();
        for s in self.local.segments().covering(start, end) {
            let next_base =
                self.local.segments().higher_segment(s.base_offset()).map_or(o.log_end, |n| n.base_offset());
            let from = s.translate_offset(start, 0)?.map(|h| h.position);
            let Some(from) = from else { continue };
            if let Some((filter, collected)) = committed.as_mut() {
                // Every batch of this segment starts below `next_base` and `end`.
                self.collect_for_scan(filter, start, collected, next_base.min(end))?;
            }
            let to = if s.base_offset() == bound_base { bound_position } else { s.size() };
            let mut more = true;
            let path = s.path();
            let scan_end = s.log().for_each_batch(from, to, &mut buf, |position, batch| {
                // Kafka's consumers check every batch's CRC (check.crcs); so does every scan.
                batch.ensure_valid().map_err(|e| e.in_file(&path, position))?;
                check_batch_in_segment(&s, next_base, &batch, position)?;
                if batch.base_offset()? >= end {
                    more = false;
                    return Ok(false);
                }
                let visible = match committed.as_mut() {
                    Some((filter, _)) => filter.is_visible(&batch).map_err(|e| e.in_file(&path, position))?,
                    None => !batch.is_control(),
                };
                more = f(batch, visible)?;
                Ok(more)
            })?;
            if scan_end.torn_tail {
                // Bytes after the last complete batch of an older segment: skipped, as a fetch
                // skips them, unless the data goes on after them (a damaged batch).
                s.check_torn_tail(scan_end.position)?;
            }
            if !more || s.base_offset() >= bound_base {
                break;
            }
        }
        Ok(())
    }
}
