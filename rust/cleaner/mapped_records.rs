//! What pass 1 learned about each record it put into the offset map, so that pass 2 need not
//! hash and look up those records again. kafkalog's addition; Kafka's cleaner hashes every
//! keyed record in both passes.
//!
//! Pass 1 visits the dirty range in offset order and puts every keyed record into the map; a
//! put that finds its key already there replaces an earlier record, which is then known to be
//! superseded. For a record pass 1 put, Kafka's pass-2 rule (`offset >= map.get(key)`, for an
//! offset not past the map's latest offset) therefore holds exactly when that record was never
//! superseded: the map only ever holds this pass's offsets, and a key's stored offset is the
//! last one put for it. Two bits per offset record this (mapped, superseded); pass 2 uses them
//! for offsets up to the map's latest offset and falls back to the map for everything else
//! (the clean section below the dirty range, unmapped records, offsets past the bits' cap).
//!
//! Only records with a value are marked mapped: a tombstone's fate also depends on its delete
//! horizon, which pass 2 decides record by record. A batch whose offsets are all mapped and
//! none superseded therefore holds no tombstone and no unkeyed record, and is kept whole
//! without being decoded; one whose offsets are all superseded is dropped (or kept empty)
//! likewise.
//!
//! Thread-safety: owned by one cleaner; not shared.

/// Offsets a pass tracks per slot of the offset map (2 bits each: one byte per 24-byte slot,
/// about 4% on top of the map). A pass maps at most the map's capacity of keys, but a key may
/// be written many times; past the cap, pass 2 looks records up in the map as Kafka does.
pub const TRACKED_OFFSETS_PER_SLOT: usize = 4;

/// Per-offset marks of one pass's mapped range (see the module docs).
#[derive(Debug, Default)]
pub struct MappedRecords {
    first: i64,
    cap: usize,
    mapped: Vec<u64>,
    superseded: Vec<u64>,
    /// Keyed records decided without a value (tombstones), marked only by the sliced
    /// decision passes ([`super::sliced`]), which decide every keyed record.
    decided: Vec<u64>,
    /// Whether the passes met a transactional (or control) batch, a legacy one, or offsets
    /// that do not grow along a segment, since the last clear: the rewrite then reads every
    /// batch (see `skip.rs`).
    skips_forbidden: bool,
}

/// What pass 1 knows of a batch's offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchFate {
    /// Every offset was mapped and is its key's latest: every record is kept.
    AllLatest,
    /// Every offset was mapped and then superseded: no record is kept.
    AllSuperseded,
    /// Anything else: decide record by record.
    Mixed,
}

impl MappedRecords {
    /// Forgets everything; the next pass's range starts at `first` and tracks at most `cap`
    /// offsets.
    pub fn clear(&mut self, first: i64, cap: usize) {
        self.first = first;
        self.cap = cap;
        self.mapped.clear();
        self.superseded.clear();
        self.decided.clear();
        self.skips_forbidden = false;
    }

    /// A pass met a batch whose records the rewrite must see even when all are superseded: a
    /// transactional or control batch (the transaction bookkeeping reads it), a legacy one, or
    /// one starting below the offsets before it (a damaged log, where runs of marks say nothing
    /// of the batches between two positions).
    pub fn forbid_skips(&mut self) {
        self.skips_forbidden = true;
    }

    /// Whether the rewrite may skip runs of superseded records unread.
    pub fn skips_allowed(&self) -> bool {
        !self.skips_forbidden
    }

    /// The first offset of `[from, limit)` not marked superseded (`limit` if all are; `from`
    /// when `from` is not tracked). Every record in `[from, returned)` has a later record of its
    /// key in the mapped range, so the rewrite drops it; an offset holding no record (a gap)
    /// is not marked, so the run stops there.
    pub fn first_not_superseded(&self, from: i64, limit: i64) -> i64 {
        let Some(lo) = self.index(from) else { return from };
        let end = usize::try_from(limit.saturating_sub(self.first)).unwrap_or(0).min(self.cap);
        let mut i = lo;
        while i < end {
            let Some(word) = self.superseded.get(i / 64) else { break };
            let free = !word >> (i % 64);
            if free != 0 {
                i += free.trailing_zeros() as usize;
                break;
            }
            i = (i / 64 + 1) * 64;
        }
        self.first + i.min(end.max(lo)) as i64
    }

    /// The first offset tracked and how many are.
    pub fn range(&self) -> (i64, usize) {
        (self.first, self.cap)
    }

    fn grow_to(&mut self, word: usize) {
        if word >= self.mapped.len() {
            self.mapped.resize(word + 1, 0);
            self.superseded.resize(word + 1, 0);
            self.decided.resize(word + 1, 0);
        }
    }

    /// Marks `offset` as decided by a pass that maps its key (a keyed record without a
    /// value): its fate is then known like a mapped record's, but its batch is never kept or
    /// dropped whole on the marks alone (a tombstone's horizon is decided record by record).
    pub fn mark_decided(&mut self, offset: i64) {
        if let Some(i) = self.index(offset) {
            self.grow_to(i / 64);
            self.decided[i / 64] |= 1 << (i % 64);
        }
    }

    fn index(&self, offset: i64) -> Option<usize> {
        let i = usize::try_from(offset.checked_sub(self.first)?).ok()?;
        (i < self.cap).then_some(i)
    }

    /// Marks `offset` as put into the map (a record with a key and a value).
    pub fn mark_mapped(&mut self, offset: i64) {
        if let Some(i) = self.index(offset) {
            let word = i / 64;
            self.grow_to(word);
            self.mapped[word] |= 1 << (i % 64);
        }
    }

    /// Marks `offset` as replaced in the map by a later record of the same key.
    pub fn mark_superseded(&mut self, offset: i64) {
        if let Some(i) = self.index(offset) {
            if let Some(w) = self.superseded.get_mut(i / 64) {
                *w |= 1 << (i % 64);
            }
        }
    }

    /// For a mapped offset: whether its record is still its key's latest. `None` when pass 1
    /// did not map it (look it up in the map).
    pub fn is_latest(&self, offset: i64) -> Option<bool> {
        let i = self.index(offset)?;
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if (self.mapped.get(word)? | self.decided[word]) & bit == 0 {
            return None;
        }
        Some(self.superseded[word] & bit == 0)
    }

    /// What pass 1 knows of every offset in `[base, last]`.
    pub fn batch_fate(&self, base: i64, last: i64) -> BatchFate {
        let (Some(lo), Some(hi)) = (self.index(base), self.index(last)) else {
            return BatchFate::Mixed;
        };
        if hi < lo || hi / 64 >= self.mapped.len() {
            return BatchFate::Mixed;
        }
        let (mut all_latest, mut all_superseded) = (true, true);
        for word in lo / 64..=hi / 64 {
            let from = if word == lo / 64 { lo % 64 } else { 0 };
            let to = if word == hi / 64 { hi % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - to)) & (u64::MAX << from);
            let (mapped, superseded) = (self.mapped[word] & mask, self.superseded[word] & mask);
            if mapped != mask {
                return BatchFate::Mixed;
            }
            all_latest &= superseded == 0;
            all_superseded &= superseded == mask;
            if !all_latest && !all_superseded {
                return BatchFate::Mixed;
            }
        }
        if all_latest {
            BatchFate::AllLatest
        } else {
            BatchFate::AllSuperseded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_fates() {
        let mut m = MappedRecords::default();
        m.clear(1000, 1 << 20);
        for o in 1000..1200 {
            m.mark_mapped(o);
        }
        for o in 1100..1150 {
            m.mark_superseded(o);
        }
        assert_eq!(m.is_latest(999), None);
        assert_eq!(m.is_latest(1000), Some(true));
        assert_eq!(m.is_latest(1100), Some(false));
        assert_eq!(m.is_latest(1200), None);
        assert_eq!(m.batch_fate(1000, 1099), BatchFate::AllLatest);
        assert_eq!(m.batch_fate(1100, 1149), BatchFate::AllSuperseded);
        assert_eq!(m.batch_fate(1101, 1101), BatchFate::AllSuperseded);
        assert_eq!(m.batch_fate(1090, 1110), BatchFate::Mixed);
        assert_eq!(m.batch_fate(1150, 1200), BatchFate::Mixed); // 1200 was not mapped
        assert_eq!(m.batch_fate(990, 1010), BatchFate::Mixed);
        m.clear(0, 1 << 20);
        m.mark_mapped(5);
        m.mark_mapped(7);
        assert_eq!(m.batch_fate(5, 7), BatchFate::Mixed); // 6 was not mapped (a tombstone)
        assert_eq!(m.is_latest(1000), None);
    }

    #[test]
    fn runs_of_superseded_offsets_end_at_the_first_other_one() {
        let mut m = MappedRecords::default();
        m.clear(1000, 1 << 20);
        for o in 1000..1300 {
            m.mark_mapped(o);
        }
        for o in (1000..1200).chain(1201..1290) {
            m.mark_superseded(o);
        }
        assert_eq!(m.first_not_superseded(1000, 2000), 1200);
        assert_eq!(m.first_not_superseded(1000, 1100), 1100);
        assert_eq!(m.first_not_superseded(1063, 1064), 1064);
        assert_eq!(m.first_not_superseded(1064, 1200), 1200);
        assert_eq!(m.first_not_superseded(1200, 2000), 1200);
        assert_eq!(m.first_not_superseded(1201, 2000), 1290);
        assert_eq!(m.first_not_superseded(1201, 1201), 1201);
        assert_eq!(m.first_not_superseded(1290, 1250), 1290);
        // Below the range, or past the words marked: nothing is known.
        assert_eq!(m.first_not_superseded(999, 2000), 999);
        assert_eq!(m.first_not_superseded(5000, 9000), 5000);
        // A run ending exactly at a word's end, and one running to the words' end.
        m.clear(0, 1 << 20);
        for o in 0..192 {
            m.mark_mapped(o);
            m.mark_superseded(o);
        }
        assert_eq!(m.first_not_superseded(0, 1000), 192);
        assert_eq!(m.first_not_superseded(10, 128), 128);
        assert!(m.skips_allowed());
        m.forbid_skips();
        assert!(!m.skips_allowed());
        m.clear(0, 1 << 20);
        assert!(m.skips_allowed());
        // The cap bounds a run.
        m.clear(0, 100);
        for o in 0..100 {
            m.mark_mapped(o);
            m.mark_superseded(o);
        }
        assert_eq!(m.first_not_superseded(0, 1000), 100);
    }

    #[test]
    fn offsets_past_the_cap_are_not_tracked() {
        let mut m = MappedRecords::default();
        m.clear(0, 1000);
        let far = 1000;
        m.mark_mapped(far);
        m.mark_superseded(far);
        assert_eq!(m.is_latest(far), None);
        assert_eq!(m.batch_fate(far - 1, far), BatchFate::Mixed);
    }
}
