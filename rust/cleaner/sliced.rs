//! Hash-sliced decision passes (kafkalog's; Kafka has no such mode): a log whose dirty section
//! holds more keys than the offset map is cleaned with one rewrite instead of one per round.
//!
//! Kafka's cleaner (and [`DecisionMode::Rounds`]) maps the dirty section from its start until
//! the map is full, recopies the whole log below that point, and leaves the rest to the next
//! round: K rounds cost K scans and K rewrites. [`DecisionMode::Sliced`] instead runs several
//! *decision* passes, each mapping only the keys whose digest falls in one slice of the hash
//! space, over the whole dirty section, and then looking the same slice's keys of the clean
//! section up. Each pass records every keyed record's fate in the per-offset marks of
//! [`super::mapped_records::MappedRecords`] (decided; superseded or not), over the whole log
//! below the cleanable end. One rewrite then applies every fate, with the map's latest offset
//! at the cleanable end, so the checkpoint ends where Kafka's last round ends.
//!
//! # Why the survivors are Kafka's, once its rounds converge
//! Round j maps the keys of its window `[e(j-1), e(j))` and removes a record of the log below
//! `e(j)` when its key has a later offset in that window. Over all rounds a record is removed
//! exactly when its key appears again later in `[first dirty, cleanable end)`, which is what
//! the slices decide (every key is in exactly one slice; each slice's map holds its keys'
//! last offsets). Aborted data is skipped by both maps alike and discarded by the same
//! rewrite rule; unkeyed records go in both. Tombstones and markers keep Kafka's horizon
//! rules, applied once at the clean's time:
//! - a tombstone or marker whose batch carries a horizon at or before `now` goes in the first
//!   round that recopies it, and in the one rewrite;
//! - one without a horizon is kept and stamped `now + delete.retention.ms`; a later round at
//!   the same time keeps it only while that is after `now`, so the sliced mode is used only
//!   when `delete.retention.ms > 0` (otherwise a second round would remove what the first
//!   stamped, and the clean falls back to rounds);
//! - legacy (magic < 2) tombstones are judged by the modification time of the last segment
//!   before each round's dirty start, which moves with the rounds: a log holding a legacy
//!   batch falls back to rounds too.
//!
//! What may differ from Kafka's converged rounds is only the delete-horizon *stamp* of some
//! batches, never a record: a round may stamp a batch whose tombstone a later round removes
//! (the batch keeps its other records and the stamp), and a round after the one that removed
//! a transaction's last data stamps its marker (as every later clean of Kafka's would). That
//! is why [`DecisionMode::Rounds`] stays the default: it gives Kafka's states byte for byte.
//!
//! # Slices and memory
//! The first pass is Kafka's own (`build_offset_map`); only when it fills does slicing start.
//! The number of slices is the dirty section's distinct keys, estimated by linear counting in
//! one read of it (a 2 MiB bitmap; past ~40 M keys, the first pass's keys extrapolated over the
//! section's offsets), divided by the map's capacity; a slice whose keys overflow the map is split in two
//! and each half scanned again (what a partial pass marked stays true: a record marked
//! superseded has a later record of its key). Memory: the one offset map
//! (`log.cleaner.dedupe.buffer.size`) plus three bits per offset of the log below the
//! cleanable end, capped at [`SLICED_OFFSETS_PER_SLOT`] offsets per map slot or
//! [`SLICED_MIN_TRACKED_OFFSETS`], whichever is more (beyond, rounds).
//!
//! Thread-safety: runs on the cleaner's thread, as part of its clean.

use super::cleaner::Cleaner;
use super::cleaner_stats::CleanerStats;
use super::decision_mode::{DecisionMode, SlicedReport};
use super::filter::CleanedTransactionMetadata;
use super::offset_map::KeyHash;
use crate::error::{Error, Result};
use crate::index::transaction_index::AbortedTxn;
use crate::log::unified_log::UnifiedLog;
use crate::record::batch::MAGIC_V2;
use crate::record::default_record::Record;
use crate::segment::log_segment::LogSegment;

/// Bits of the key-counting bitmap (2 MiB): accurate to well under 1% up to about 40 M
/// distinct keys; beyond, the first pass's fill point is extrapolated instead.
const COUNTING_BITS: usize = 1 << 24;

/// Keys ahead of their inserts whose slots are prefetched (as pass 1 does).
const PREFETCH_AHEAD: usize = 16;

/// Offsets the sliced marks may cover per slot of the offset map (3 bits each: 6 bytes per
/// 24-byte slot at most, a quarter on top of the map); a longer log is cleaned in rounds.
pub const SLICED_OFFSETS_PER_SLOT: usize = 16;

/// Offsets the sliced marks may always cover, however small the map (384 KiB of marks).
pub const SLICED_MIN_TRACKED_OFFSETS: usize = 1 << 20;

/// One slice of the hash space: digests whose bytes 4..12 (a big-endian u64; the map's home
/// slot uses bytes 0..4, so a slice still spreads over every slot) lie in `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slice {
    lo: u64,
    hi: u64,
}

impl Slice {
    fn contains(self, h: &KeyHash) -> bool {
        let v = u64::from_be_bytes(h[4..12].try_into().expect("8 bytes"));
        (self.lo..=self.hi).contains(&v)
    }

    /// The two halves, or `None` for a slice of one value.
    fn split(self) -> Option<(Slice, Slice)> {
        (self.lo < self.hi).then(|| {
            let mid = self.lo + (self.hi - self.lo) / 2;
            (Slice { lo: self.lo, hi: mid }, Slice { lo: mid + 1, hi: self.hi })
        })
    }
}

/// `n` slices of equal width covering the whole hash space, first slice first.
fn equal_slices(n: u64) -> Vec<Slice> {
    let n = u128::from(n.max(1));
    let bound = |i: u128| (i << 64) / n;
    (0..n).map(|i| Slice { lo: bound(i) as u64, hi: (bound(i + 1) - 1) as u64 }).collect()
}

/// The number of slices for `estimated` keys with `capacity` keys a pass.
fn slice_count(estimated: u64, capacity: usize) -> u64 {
    estimated.div_ceil(capacity.max(1) as u64).max(2)
}

/// How a slice's pass over the dirty section ended.
enum SlicePass {
    Complete,
    Overflow,
    Legacy,
}

impl Cleaner {
    /// Pass 1 of a clean of `[start, end)`: Kafka's `build_offset_map`, then, in the sliced
    /// mode when the map filled before `end`, the sliced decision passes. Returns the end of
    /// what the rewrite decides (the map's latest offset + 1).
    pub(super) fn map_dirty_section(
        &mut self,
        log: &UnifiedLog,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<i64> {
        self.build_offset_map(log, start, end, aborted, stats, check)?;
        let fill_end = self.map.latest_offset() + 1;
        self.sliced = None;
        if fill_end >= end || self.params.decision_mode != DecisionMode::Sliced {
            return Ok(fill_end);
        }
        let partition = log.topic_partition();
        let Some(report) = self.decide_by_slices(log, start, end, fill_end, aborted, stats, check)? else {
            log::info!("Cleaner {}: {partition} cannot be decided in hash slices: cleaning in rounds", self.id);
            self.build_offset_map(log, start, end, aborted, stats, check)?;
            return Ok(self.map.latest_offset() + 1);
        };
        let bytes_per_key = (self.map.memory() as u64 + report.mark_bytes) as f64 / report.estimated_keys.max(1) as f64;
        log::info!(
            "Cleaner {}: {partition}: the map filled at offset {fill_end} of [{start}, {end}); decided every key in {} \
             hash-sliced passes ({} planned for ~{} keys, {} split; {} bytes of marks, {bytes_per_key:.1} bytes per \
             key with the map): one rewrite",
            self.id,
            report.passes,
            report.planned,
            report.estimated_keys,
            report.splits,
            report.mark_bytes
        );
        self.sliced = Some(report);
        Ok(end)
    }

    /// After a first pass (`build_offset_map`) that filled the map at `fill_end`, decides the
    /// fate of every keyed record below `end` in hash slices and leaves the map empty with its
    /// latest offset at `end - 1`, for one rewrite. `Ok(None)`: the log cannot be decided this
    /// way (see the module docs); the map and marks are then stale, and the caller cleans in
    /// rounds.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decide_by_slices(
        &mut self,
        log: &UnifiedLog,
        start: i64,
        end: i64,
        fill_end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<Option<SlicedReport>> {
        if log.config().delete_retention_ms <= 0 {
            return Ok(None);
        }
        let all = log.log_segments(0, end);
        let Some(first) = all.first().map(|s| s.base_offset()) else { return Ok(None) };
        let tracked = usize::try_from(end - first).unwrap_or(usize::MAX);
        if tracked > self.map.slots().saturating_mul(SLICED_OFFSETS_PER_SLOT).max(SLICED_MIN_TRACKED_OFFSETS) {
            log::info!(
                "Cleaner {}: {} offsets below {end} are more than the sliced marks cover; cleaning in rounds",
                self.id,
                end - first
            );
            return Ok(None);
        }
        let capacity = self.map_capacity();
        let mapped = self.map.size() as u64;
        let seen = (fill_end - start).max(1) as u64;
        let extrapolated = mapped.saturating_mul((end - start) as u64) / seen;
        let dirty = log.log_segments(start, end);
        let estimated = match self.count_keys(&dirty, start, end, stats, check)? {
            Some(counted) => counted.max(mapped),
            None => extrapolated,
        };
        let mut pending = equal_slices(slice_count(estimated, capacity));
        pending.reverse();
        let mut report = SlicedReport {
            planned: pending.len() as u32,
            estimated_keys: estimated,
            mark_bytes: (tracked as u64).div_ceil(64) * 8 * 3,
            ..SlicedReport::default()
        };
        self.mapped.clear(first, tracked);
        let clean: Vec<_> = all.iter().filter(|s| s.base_offset() < start).cloned().collect();
        while let Some(slice) = pending.pop() {
            report.passes += 1;
            match self.map_slice(&dirty, slice, start, end, aborted, stats, check)? {
                SlicePass::Legacy => return Ok(None),
                SlicePass::Overflow => {
                    let (a, b) = slice.split().ok_or_else(|| Error::illegal_state("a one-key slice overflowed"))?;
                    report.splits += 1;
                    pending.push(b);
                    pending.push(a);
                }
                SlicePass::Complete => {
                    if !self.look_up_slice(&clean, slice, start, stats, check)? {
                        return Ok(None);
                    }
                }
            }
        }
        self.map.clear();
        self.map.update_latest_offset(end - 1);
        Ok(Some(report))
    }

    /// Maps the keys of `slice` in the dirty segments `[start, end)` (as `build_offset_map`
    /// does, aborted data skipped), marking each record's fate.
    #[allow(clippy::too_many_arguments)]
    fn map_slice(
        &mut self,
        dirty: &[std::sync::Arc<LogSegment>],
        slice: Slice,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<SlicePass> {
        self.map.clear();
        let capacity = self.map_capacity();
        let mut txn = CleanedTransactionMetadata::default();
        txn.add_aborted_transactions(
            &aborted.iter().filter(|t| t.last_offset >= start && t.first_offset < end).copied().collect::<Vec<_>>(),
        );
        for segment in dirty {
            let from = u64::from(segment.offset_index().get()?.lookup(start).position);
            let mut outcome = SlicePass::Complete;
            self.scan_batches(segment, from, stats, check, |c, batch, scratch| {
                if batch.magic() < MAGIC_V2 {
                    outcome = SlicePass::Legacy;
                    return Ok(false);
                }
                if batch.is_control() {
                    txn.on_control_batch_read(batch, scratch)?;
                    return Ok(true);
                }
                if txn.on_batch_read(batch) {
                    return Ok(true);
                }
                let mut records = Vec::new();
                batch.for_each_record(scratch, |r| {
                    records.push(r);
                    Ok(())
                })?;
                let mut mine = c.hashed(&records, |r| r.offset >= start && r.offset < end);
                mine.retain(|(_, h)| slice.contains(h));
                // Prefetch the slots ahead of the inserts, as pass 1 does: the map is far
                // bigger than the cache, and each insert would otherwise wait on memory.
                for (_, h) in mine.iter().take(PREFETCH_AHEAD) {
                    c.cleaner.map.prefetch(h);
                }
                for (i, (r, h)) in mine.iter().enumerate() {
                    if let Some((_, ahead)) = mine.get(i + PREFETCH_AHEAD) {
                        c.cleaner.map.prefetch(ahead);
                    }
                    if c.cleaner.map.size() >= capacity {
                        outcome = SlicePass::Overflow;
                        return Ok(false);
                    }
                    if let Some(old) = c.cleaner.map.put_hash(h, r.offset)?.filter(|old| *old < r.offset) {
                        c.cleaner.mapped.mark_superseded(old);
                    }
                    c.cleaner.mark(r);
                }
                Ok(true)
            })?;
            if !matches!(outcome, SlicePass::Complete) {
                return Ok(outcome);
            }
        }
        Ok(SlicePass::Complete)
    }

    /// Looks the keys of `slice` in the clean section (below `start`) up in the slice's map,
    /// marking each record's fate. False if a legacy batch was found.
    fn look_up_slice(
        &mut self,
        clean: &[std::sync::Arc<LogSegment>],
        slice: Slice,
        start: i64,
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<bool> {
        let mut modern = true;
        for segment in clean {
            self.scan_batches(segment, 0, stats, check, |c, batch, scratch| {
                if batch.magic() < MAGIC_V2 {
                    modern = false;
                    return Ok(false);
                }
                if batch.is_control() {
                    return Ok(true);
                }
                let mut records = Vec::new();
                batch.for_each_record(scratch, |r| {
                    records.push(r);
                    Ok(())
                })?;
                let mut mine = c.hashed(&records, |r| r.offset < start);
                mine.retain(|(_, h)| slice.contains(h));
                for (_, h) in mine.iter().take(PREFETCH_AHEAD) {
                    c.cleaner.map.prefetch(h);
                }
                for (i, (r, h)) in mine.iter().enumerate() {
                    if let Some((_, ahead)) = mine.get(i + PREFETCH_AHEAD) {
                        c.cleaner.map.prefetch(ahead);
                    }
                    if c.cleaner.map.get_hash(h) > r.offset {
                        c.cleaner.mapped.mark_superseded(r.offset);
                    }
                    c.cleaner.mark(r);
                }
                Ok(true)
            })?;
            if !modern {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Estimates the distinct keys of the dirty section by linear counting (each key's digest
    /// sets one bit of [`COUNTING_BITS`]; n = -m ln(share of bits still clear)), or `None` when
    /// the bitmap is too full to say (then the first pass's fill point is extrapolated). A key
    /// read only in aborted data counts too: the estimate may only be a little high.
    fn count_keys(
        &mut self,
        dirty: &[std::sync::Arc<LogSegment>],
        start: i64,
        end: i64,
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<Option<u64>> {
        let mut bits = vec![0u64; COUNTING_BITS / 64];
        for segment in dirty {
            let from = u64::from(segment.offset_index().get()?.lookup(start).position);
            self.scan_batches(segment, from, stats, check, |c, batch, scratch| {
                if batch.is_control() {
                    return Ok(true);
                }
                let mut records = Vec::new();
                batch.for_each_record(scratch, |r| {
                    records.push(r);
                    Ok(())
                })?;
                for (_, h) in c.hashed(&records, |r| r.offset >= start && r.offset < end) {
                    let bit = u64::from_be_bytes(h[8..16].try_into().expect("8 bytes")) as usize % COUNTING_BITS;
                    bits[bit / 64] |= 1 << (bit % 64);
                }
                Ok(true)
            })?;
        }
        let clear = bits.iter().map(|w| u64::from(w.count_zeros())).sum::<u64>();
        if clear < (COUNTING_BITS / 20) as u64 {
            return Ok(None);
        }
        let m = COUNTING_BITS as f64;
        Ok(Some((-m * (clear as f64 / m).ln()).ceil() as u64))
    }

    /// Marks a keyed record as decided.
    fn mark(&mut self, r: &Record<'_>) {
        if r.value.is_some() {
            self.mapped.mark_mapped(r.offset);
        } else {
            self.mapped.mark_decided(r.offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_hash_space_once() {
        for n in [1u64, 2, 3, 7, 1000] {
            let s = equal_slices(n);
            assert_eq!(s.len() as u64, n);
            assert_eq!((s[0].lo, s[s.len() - 1].hi), (0, u64::MAX));
            for w in s.windows(2) {
                assert_eq!(w[0].hi + 1, w[1].lo);
            }
            let (a, b) = s[0].split().unwrap();
            assert_eq!((a.lo, a.hi + 1, b.hi), (s[0].lo, b.lo, s[0].hi));
        }
        assert_eq!(Slice { lo: 5, hi: 5 }.split(), None);
        let mut h = [0u8; 16];
        h[4..12].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(equal_slices(3)[2].contains(&h) && !equal_slices(3)[1].contains(&h));
    }

    #[test]
    fn slice_count_from_the_estimate() {
        assert_eq!(slice_count(10, 100), 2);
        assert_eq!(slice_count(1000, 100), 10);
        assert_eq!(slice_count(1001, 100), 11);
    }
}
