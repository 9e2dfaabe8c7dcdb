//! One segment read batch by batch for the cleaner's map-building passes (Kafka's
//! `buildOffsetMapForSegment` read loop): chunked reads through the shared I/O buffers and the
//! throttle, a torn tail skipped, a batch bigger than the buffer read by growing it up to
//! `max.message.bytes`, and each batch handed to a visitor. Pass 1 (`Cleaner::map_segment`)
//! and the sliced decision passes (`sliced`) use it.
//!
//! Thread-safety: runs on the cleaning thread, on the `Cleaner` it borrows mutably.

use super::cleaner::Cleaner;
use super::cleaner_stats::CleanerStats;
use super::md5_keys::md5_keys;
use super::offset_map::KeyHash;
use crate::error::Result;
use crate::record::default_record::Record;
use crate::record::records::{AnyBatch, BatchIter};
use crate::segment::log_segment::LogSegment;

impl Cleaner {
    /// Reads `segment` from `position` chunk by chunk (throttled, torn tails and big batches
    /// handled as pass 1 does), calling `visit` with each complete batch until it returns
    /// false.
    pub(super) fn scan_batches(
        &mut self,
        segment: &LogSegment,
        mut position: u64,
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
        mut visit: impl FnMut(&mut ScanCtx<'_>, &AnyBatch<'_>, &mut Vec<u8>) -> Result<bool>,
    ) -> Result<()> {
        let size = segment.size();
        let path = segment.path();
        let max_message_bytes = self.max_message_bytes;
        // Where the next batch's offsets start in a log whose offsets only grow.
        let mut next_offset = segment.base_offset();
        while position < size {
            check()?;
            let n = self.bufs.read_chunk(segment, position, size)?;
            stats.add_throttled(self.throttler.maybe_throttle(n as f64));
            let read = std::mem::take(&mut self.bufs.read);
            let mut scratch = std::mem::take(&mut self.bufs.scratch);
            let mut go_on = true;
            let mut iter = BatchIter::new(&read[..n]);
            let mut failed = None;
            {
                let mut ctx = ScanCtx { cleaner: self, records_read: 0 };
                for item in iter.by_ref() {
                    let visited = item.and_then(|(at, batch)| {
                        // The rewrite may skip superseded batches unread only in a range of plain
                        // v2 batches whose offsets grow along the log (see `skip.rs`).
                        let out_of_order = match &batch {
                            AnyBatch::V2(b) => b.base_offset() < next_offset,
                            AnyBatch::Legacy(_) => true,
                        };
                        if out_of_order || batch.is_transactional() || batch.is_control() {
                            ctx.cleaner.mapped.forbid_skips();
                        }
                        next_offset = next_offset.max(batch.next_offset());
                        visit(&mut ctx, &batch, &mut scratch).map_err(|e| e.with_position_offset(at as u64))
                    });
                    match visited {
                        Ok(true) => {}
                        Ok(false) => {
                            go_on = false;
                            break;
                        }
                        Err(e) => {
                            failed = Some(e.in_file(&path, position));
                            break;
                        }
                    }
                }
                stats.map_messages_read += ctx.records_read;
            }
            let valid = iter.position() as u64;
            self.bufs.read = read;
            self.bufs.scratch = scratch;
            if let Some(e) = failed {
                return Err(e);
            }
            if !go_on {
                break;
            }
            position += valid;
            stats.map_bytes_read += valid;
            if valid == 0 {
                if self.bufs.is_torn_tail(segment, position, n) {
                    segment.check_torn_tail(position)?;
                    break;
                }
                self.bufs.grow_or_fail(segment, position, max_message_bytes, n)?;
            }
        }
        self.bufs.restore();
        Ok(())
    }
}

/// What a batch visitor of [`Cleaner::scan_batches`] may use.
pub(super) struct ScanCtx<'c> {
    pub(super) cleaner: &'c mut Cleaner,
    /// Records decoded so far (for `map_messages_read`).
    pub(super) records_read: u64,
}

/// A keyed record of a batch, with its key's MD5 digest: what the decision passes need.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyDigest {
    pub(super) offset: i64,
    pub(super) has_value: bool,
    pub(super) hash: KeyHash,
}

impl ScanCtx<'_> {
    /// The keyed records of `batch` whose offsets `wanted` selects, with their digests (hashed
    /// many at a time), in a vector the caller hands back with
    /// [`ScanCtx::give_back`]. Every record is decoded (and checked) as pass 1 decodes it, but
    /// nothing is allocated per batch.
    pub(super) fn key_digests(
        &mut self,
        batch: &AnyBatch<'_>,
        scratch: &mut Vec<u8>,
        wanted: impl Fn(i64) -> bool,
    ) -> Result<Vec<KeyDigest>> {
        let bufs = &mut self.cleaner.bufs;
        let mut out = std::mem::take(&mut bufs.key_digests);
        out.clear();
        let mut keys = recycle(std::mem::take(&mut bufs.keys));
        let mut read = 0u64;
        // An uncompressed batch takes the fast walk; one it gives up on is decoded the general
        // way from the start (which reports what is wrong with it).
        let fast = batch.try_for_each_record_fast(|r| {
            read += 1;
            push_key(&mut keys, &mut out, &wanted, &r);
        });
        if !fast {
            read = 0;
            keys.clear();
            out.clear();
            batch.for_each_record(scratch, |r| {
                read += 1;
                push_key(&mut keys, &mut out, &wanted, &r);
                Ok(())
            })?;
        }
        self.records_read += read;
        md5_keys(&keys, &mut bufs.digests);
        for (k, h) in out.iter_mut().zip(&bufs.digests) {
            k.hash = *h;
        }
        bufs.keys = recycle(keys);
        Ok(out)
    }

    /// Returns the vector [`ScanCtx::key_digests`] lent, for the next batch.
    pub(super) fn give_back(&mut self, digests: Vec<KeyDigest>) {
        self.cleaner.bufs.key_digests = digests;
    }
}

/// Records `r`'s key (when it has one and `wanted` takes its offset) for hashing.
#[inline]
fn push_key<'k>(keys: &mut Vec<&'k [u8]>, out: &mut Vec<KeyDigest>, wanted: &impl Fn(i64) -> bool, r: &Record<'k>) {
    if let Some(key) = r.key.filter(|_| wanted(r.offset)) {
        keys.push(key);
        out.push(KeyDigest { offset: r.offset, has_value: r.value.is_some(), hash: [0; 16] });
    }
}

/// An empty vector of key slices of any lifetime, on the allocation of `v` (emptied): the
/// in-place collect reuses it, as the element types have the same layout.
fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter().map(|_| &[][..]).collect()
}

#[cfg(test)]
mod tests {
    use super::recycle;

    #[test]
    fn recycle_keeps_the_allocation_and_empties() {
        let data = [1u8, 2, 3];
        let mut v: Vec<&[u8]> = Vec::with_capacity(64);
        v.extend([&data[..1], &data[1..]]);
        let cap = v.capacity();
        let w: Vec<&[u8]> = recycle(v);
        assert!(w.is_empty());
        assert_eq!(w.capacity(), cap);
    }
}
