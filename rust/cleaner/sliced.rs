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
//! Every decision pass is adaptive: it maps the keys of its slice over the whole dirty
//! section, and when the map reaches its load factor it halves the slice, drops the keys of the
//! upper half from the map (their records' marks are rewritten by the pass that later takes
//! that half: a record marked superseded has a later record of its key, and every record of a
//! key is marked again when its slice is mapped), leaves the upper half for a later pass, and
//! goes on. So no pass is thrown away. The first pass starts with the whole hash space: when
//! every key fits, it is Kafka's own single pass (`build_offset_map`) and the map stays for the
//! rewrite. When it had to halve, the keys it decided, over the share of the hash space it
//! kept, estimate the rest, which is cut into as many equal slices as the map's capacity needs.
//! Memory: the one offset map (`log.cleaner.dedupe.buffer.size`) plus three bits per offset of
//! the log below the cleanable end, capped at [`SLICED_OFFSETS_PER_SLOT`] offsets per map slot
//! or [`SLICED_MIN_TRACKED_OFFSETS`], whichever is more (beyond, rounds).
//!
//! Thread-safety: runs on the cleaner's thread, as part of its clean.

use super::cleaner::Cleaner;
use super::cleaner_stats::CleanerStats;
use super::decision_mode::{DecisionMode, SlicedReport};
use super::filter::CleanedTransactionMetadata;
use super::offset_map::KeyHash;
use super::segment_scan::KeyDigest;
use crate::error::{Error, Result};
use crate::index::transaction_index::AbortedTxn;
use crate::log::unified_log::UnifiedLog;
use crate::record::batch::MAGIC_V2;
use crate::segment::log_segment::LogSegment;

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

/// `n` slices of (nearly) equal width covering `range`, lowest first.
fn split_range(range: Slice, n: u64) -> Vec<Slice> {
    let width = u128::from(range.hi - range.lo) + 1;
    let n = u128::from(n.max(1)).min(width);
    let bound = |i: u128| u128::from(range.lo) + i * width / n;
    (0..n).map(|i| Slice { lo: bound(i) as u64, hi: (bound(i + 1) - 1) as u64 }).collect()
}

/// The number of slices for `estimated` keys with `capacity` keys a pass.
fn slice_count(estimated: u64, capacity: usize) -> u64 {
    estimated.div_ceil(capacity.max(1) as u64).max(1)
}

/// The whole hash space.
const WHOLE: Slice = Slice { lo: 0, hi: u64::MAX };

/// The number of equal slices that `rest` (a share of the hash space) needs, from `mapped` keys
/// found in `done`, for `capacity` keys a pass.
fn planned_slices(mapped: u64, done: Slice, rest: Slice, capacity: usize) -> (u64, u64) {
    let width = |s: Slice| u128::from(s.hi - s.lo) + 1;
    let estimated = (u128::from(mapped) * width(rest)).div_ceil(width(done)) as u64;
    (estimated, slice_count(estimated, capacity))
}

/// What a decision pass over the dirty section did.
enum SlicePass {
    /// Every key of the slice it ended with (which it may have halved, more than once) is
    /// decided; the halves it gave up are pending.
    Done(Slice),
    /// A legacy (magic < 2) batch and a full map: the clean goes in rounds.
    Legacy,
}

impl Cleaner {
    /// Pass 1 of a clean of `[start, end)` (what the rewrite decides ends at the returned
    /// offset): Kafka's `build_offset_map`, or in the sliced mode the adaptive decision passes,
    /// which fall back to Kafka's when the log cannot be decided in slices.
    pub(super) fn map_dirty_section(
        &mut self,
        log: &UnifiedLog,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<i64> {
        self.sliced = None;
        if self.params.decision_mode == DecisionMode::Sliced {
            if let Some(end) = self.decide_by_slices(log, start, end, aborted, stats, check)? {
                return Ok(end);
            }
            log::info!(
                "Cleaner {}: {} cannot be decided in hash slices: cleaning in rounds",
                self.id,
                log.topic_partition()
            );
        }
        self.build_offset_map(log, start, end, aborted, stats, check)?;
        Ok(self.map.latest_offset() + 1)
    }

    /// Decides the fate of every keyed record below `end` in adaptive hash-sliced passes and
    /// returns `end`: with the map holding every key of the dirty section when one pass did
    /// (Kafka's single pass), else empty with its latest offset at `end - 1`, the marks saying
    /// everything. `Ok(None)`: the log cannot be decided this way (see the module docs); the
    /// map and marks are then stale, and the caller cleans in rounds.
    pub(super) fn decide_by_slices(
        &mut self,
        log: &UnifiedLog,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<Option<i64>> {
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
        let dirty = log.log_segments(start, end);
        log::info!(
            "Cleaner {}: Building offset map for log {} for {} segments in offset range [{start}, {end}) in hash slices.",
            self.id,
            log.topic_partition(),
            dirty.len()
        );
        self.max_message_bytes = log.config().max_message_bytes.max(0) as usize;
        self.mapped.clear(first, tracked);
        let mut pending = Vec::new();
        let mut report = SlicedReport { mark_bytes: (tracked as u64).div_ceil(64) * 8 * 3, ..SlicedReport::default() };
        let first_slice = match self.map_slice(&dirty, WHOLE, start, end, aborted, stats, check, &mut pending)? {
            SlicePass::Legacy => return Ok(None),
            SlicePass::Done(slice) => slice,
        };
        report.passes = 1;
        if first_slice == WHOLE {
            // Every key fitted: Kafka's single pass, whose map the rewrite reads.
            self.map.update_latest_offset(end - 1);
            return Ok(Some(end));
        }
        let clean: Vec<_> = all.iter().filter(|s| s.base_offset() < start).cloned().collect();
        if !self.look_up_slice(&clean, first_slice, start, stats, check)? {
            return Ok(None);
        }
        report.splits = pending.len() as u32;
        let rest = Slice { lo: first_slice.hi + 1, hi: u64::MAX };
        let (estimated, planned) = planned_slices(self.map.size() as u64, first_slice, rest, self.map_capacity());
        report.estimated_keys = estimated + self.map.size() as u64;
        report.planned = planned as u32 + 1;
        pending = split_range(rest, planned);
        pending.reverse();
        while let Some(slice) = pending.pop() {
            report.passes += 1;
            let before = pending.len();
            let done = match self.map_slice(&dirty, slice, start, end, aborted, stats, check, &mut pending)? {
                SlicePass::Legacy => return Ok(None),
                SlicePass::Done(done) => done,
            };
            report.splits += (pending.len() - before) as u32;
            if !self.look_up_slice(&clean, done, start, stats, check)? {
                return Ok(None);
            }
        }
        self.map.clear();
        self.map.update_latest_offset(end - 1);
        self.log_sliced(log, start, end, &report);
        self.sliced = Some(report);
        Ok(Some(end))
    }

    fn log_sliced(&self, log: &UnifiedLog, start: i64, end: i64, report: &SlicedReport) {
        let bytes_per_key = (self.map.memory() as u64 + report.mark_bytes) as f64 / report.estimated_keys.max(1) as f64;
        log::info!(
            "Cleaner {}: {}: [{start}, {end}) holds more keys than the map: decided every key in {} hash-sliced \
             passes ({} planned for ~{} keys, {} halved; {} bytes of marks, {bytes_per_key:.1} bytes per key with \
             the map): one rewrite",
            self.id,
            log.topic_partition(),
            report.passes,
            report.planned,
            report.estimated_keys,
            report.splits,
            report.mark_bytes
        );
    }

    /// Maps the keys of `slice` in the dirty segments `[start, end)` (as `build_offset_map`
    /// does, aborted data skipped), marking each record's fate. When the map fills, the slice
    /// is halved, the upper half's keys leave the map and the half goes on `pending`.
    #[allow(clippy::too_many_arguments)]
    fn map_slice(
        &mut self,
        dirty: &[std::sync::Arc<LogSegment>],
        mut slice: Slice,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
        pending: &mut Vec<Slice>,
    ) -> Result<SlicePass> {
        // The dense layout: more slots, the same capacity (Kafka's). Every offset this pass
        // puts lies in [start, end), within the marks' range from the log's first offset; a
        // range too long for it falls back to the 24-byte slots.
        let (first, _) = self.mapped.range();
        self.map.clear_dense(first, end);
        let capacity = self.map_capacity();
        let mut txn = CleanedTransactionMetadata::default();
        txn.add_aborted_transactions(
            &aborted.iter().filter(|t| t.last_offset >= start && t.first_offset < end).copied().collect::<Vec<_>>(),
        );
        let mut legacy = false;
        let (total, mut done) = (dirty.iter().map(|s| s.size()).sum::<u64>(), 0);
        self.report("indexing", 0, total);
        for segment in dirty {
            let from = u64::from(segment.offset_index()?.get()?.lookup(start).position);
            let mut stopped = false;
            self.scan_batches(segment, from, stats, check, |c, batch, scratch| {
                legacy |= batch.magic() < MAGIC_V2;
                if batch.is_control() {
                    txn.on_control_batch_read(batch, scratch)?;
                    return Ok(true);
                }
                if txn.on_batch_read(batch) {
                    return Ok(true);
                }
                let mut mine = c.key_digests(batch, scratch, |o| o >= start && o < end)?;
                mine.retain(|k| slice.contains(&k.hash));
                for (i, k) in mine.iter().enumerate() {
                    // The map is far bigger than the cache: each insert would otherwise wait
                    // on memory.
                    c.cleaner.map.prefetch_ahead(i, |j| mine.get(j).map(|k| &k.hash));
                    while c.cleaner.map.size() >= capacity {
                        if legacy {
                            stopped = true;
                            return Ok(false);
                        }
                        let (low, high) =
                            slice.split().ok_or_else(|| Error::illegal_state("a one-key slice overflowed"))?;
                        pending.push(high);
                        slice = low;
                        c.cleaner.map.retain(|h| low.contains(h));
                    }
                    if !slice.contains(&k.hash) {
                        continue;
                    }
                    if let Some(old) = c.cleaner.map.put_hash(&k.hash, k.offset)?.filter(|old| *old < k.offset) {
                        c.cleaner.mapped.mark_superseded(old);
                    }
                    c.cleaner.mark(k);
                }
                c.give_back(mine);
                Ok(true)
            })?;
            if stopped {
                return Ok(SlicePass::Legacy);
            }
            done += segment.size();
            self.report("indexing", done, total);
        }
        if legacy && slice != WHOLE {
            return Ok(SlicePass::Legacy);
        }
        Ok(SlicePass::Done(slice))
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
                let mut mine = c.key_digests(batch, scratch, |o| o < start)?;
                mine.retain(|k| slice.contains(&k.hash));
                for (i, k) in mine.iter().enumerate() {
                    c.cleaner.map.prefetch_ahead(i, |j| mine.get(j).map(|k| &k.hash));
                    if c.cleaner.map.get_hash(&k.hash) > k.offset {
                        c.cleaner.mapped.mark_superseded(k.offset);
                    }
                    c.cleaner.mark(k);
                }
                c.give_back(mine);
                Ok(true)
            })?;
            if !modern {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Marks a keyed record as decided.
    fn mark(&mut self, k: &KeyDigest) {
        if k.has_value {
            self.mapped.mark_mapped(k.offset);
        } else {
            self.mapped.mark_decided(k.offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_their_range_once() {
        let ranges = [WHOLE, Slice { lo: 1 << 63, hi: u64::MAX }, Slice { lo: 10, hi: 12 }, Slice { lo: 7, hi: 7 }];
        for range in ranges {
            for n in [1u64, 2, 3, 7, 1000] {
                let s = split_range(range, n);
                assert_eq!(s.len() as u128, u128::from(n).min(u128::from(range.hi - range.lo) + 1));
                assert_eq!((s[0].lo, s[s.len() - 1].hi), (range.lo, range.hi));
                for w in s.windows(2) {
                    assert!(w[0].lo <= w[0].hi);
                    assert_eq!(w[0].hi + 1, w[1].lo);
                }
            }
        }
        let (a, b) = WHOLE.split().unwrap();
        assert_eq!((a.lo, a.hi + 1, b.hi), (0, b.lo, u64::MAX));
        assert_eq!(Slice { lo: 5, hi: 5 }.split(), None);
        let mut h = [0u8; 16];
        h[4..12].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(split_range(WHOLE, 3)[2].contains(&h) && !split_range(WHOLE, 3)[1].contains(&h));
    }

    #[test]
    fn slice_count_from_the_estimate() {
        assert_eq!(slice_count(10, 100), 1);
        assert_eq!(slice_count(1000, 100), 10);
        assert_eq!(slice_count(1001, 100), 11);
        // 5 M keys in the lower half: about 5 M more in the upper half, one more pass.
        let (low, high) = WHOLE.split().unwrap();
        assert_eq!(planned_slices(5_000_000, low, high, 5_033_164), (5_000_000, 1));
        let quarter = low.split().unwrap().0;
        let rest = Slice { lo: quarter.hi + 1, hi: u64::MAX };
        assert_eq!(planned_slices(4_000_000, quarter, rest, 5_033_164), (12_000_000, 3));
    }
}
