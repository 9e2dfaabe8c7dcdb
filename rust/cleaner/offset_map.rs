//! The cleaner's key -> offset map (Kafka's `SkimpyOffsetMap`): an open-addressing hash table
//! of MD5 digests of keys, 24 bytes per slot (16-byte digest, then the offset as a big-endian
//! int64), the same slot count and the same empty-slot rule (all 24 bytes zero) as Kafka's, so
//! it holds exactly the keys Kafka's would and says the same for every lookup. Two keys with
//! the same MD5 count as one key, as in Kafka. (The sliced decision passes use a denser layout
//! of the same memory, below.)
//!
//! The probe order differs, which changes nothing a caller can see but the speed: Kafka probes
//! 13 windows of the digest (13 random memory reads), then linearly; at the 0.9 load factor a
//! lookup of an absent key, the common case when pass 2 recopies the clean section, then
//! reads about ten random slots. kafkalog probes linearly from the home slot in Robin Hood
//! order (an entry further from its home takes the slot of one nearer its own), so a search
//! stops at the first entry nearer its home than the key would be: a few adjacent slots, one
//! cache miss.
//!
//! The table a pass uses can be smaller than the map ([`SkimpyOffsetMap::clear_for_keys`]):
//! a pass expecting at most N keys (its dirty range's records) probes a table of 2N slots at
//! the start of the map's memory, never more than the map's slots, and doubles it if more
//! come (the entries are copied out and put again: a heap copy of up to 3/4 of the table,
//! beside the map, only when a pass puts more than 1.5 times its hint). The map's
//! capacity (what the load factor allows a pass to put) is still the map's, as Kafka's, and the
//! answers do not depend on the table's size: only the speed does. Otherwise a pass's keys
//! land all over the 128 MiB default map, whatever their number, and a fresh map faults in
//! and zeroes all of it: on the 2-core VM, 0.34 s of the 0.47 s a fresh process took to clean
//! a 227,000-record partition, whose table now takes 11 MB.
//!
//! The sliced decision passes ([`super::sliced`], kafkalog's own) lay the same memory out
//! denser ([`SkimpyOffsetMap::clear_dense`]): 20-byte slots holding the digest and the offset
//! as a 32-bit distance from the log's first offset, plus one (so no stored entry is all zero).
//! The capacity a pass fills to stays Kafka's (its `slots` x load factor), so the passes, their
//! slices and every answer are the same; only the table has a fifth more slots, and at Kafka's
//! 0.9 load factor of its own slots it is 0.75 full: shorter Robin Hood runs, fewer cache
//! misses per put. `bench_cleaner.py`'s 10 M-key scenario (three passes, one rewrite) took
//! 3.34-3.49 s against 3.70-4.12 s with 24-byte slots, in alternating runs on the 2-core VM.
//!
//! Thread-safety: not thread-safe; each cleaner thread owns one map and reuses it for every
//! clean.

#![allow(unsafe_code)] // see the SAFETY comments; lib.rs lists every module that needs it

use md5::{Digest, Md5};
use memmap2::{Advice, MmapMut, MmapOptions};

use crate::error::{Error, Result};

/// Bytes of an MD5 digest.
pub const HASH_SIZE: usize = 16;
/// Bytes per slot: digest then offset.
pub const BYTES_PER_ENTRY: usize = HASH_SIZE + 8;
/// Bytes per slot of a dense table ([`SkimpyOffsetMap::clear_dense`]): digest then the
/// offset's distance from the table's base offset, plus one, as a big-endian u32.
pub const DENSE_BYTES_PER_ENTRY: usize = HASH_SIZE + 4;

/// How many keys ahead of their lookups the cleaner prefetches map slots
/// ([`SkimpyOffsetMap::prefetch_ahead`]): enough misses in flight to hide memory latency, few
/// enough not to overflow the CPU's miss buffers.
pub const PREFETCH_AHEAD: usize = 16;
/// The largest map Kafka allocates per cleaner thread (`Int.MaxValue` bytes).
pub const MAX_MAP_BYTES: usize = i32::MAX as usize;
/// The fewest slots a table sized by [`SkimpyOffsetMap::clear_for_keys`] has (96 KiB).
pub const MIN_TABLE_SLOTS: usize = 4096;
/// A table smaller than the map doubles when its entries reach this share of its slots.
pub const GROW_AT_PERCENT: usize = 75;

/// A key's MD5 digest.
pub type KeyHash = [u8; HASH_SIZE];

/// MD5 of `key` (no salt, as Kafka).
#[inline]
pub fn hash_key(key: &[u8]) -> KeyHash {
    Md5::digest(key).into()
}

/// Kafka's dedupe map. Mirrors `SkimpyOffsetMap`.
pub struct SkimpyOffsetMap {
    /// Anonymous zeroed memory, with transparent huge pages requested: probes land at random
    /// slots, and 2 MiB pages keep them from missing the TLB as well as the cache.
    bytes: MmapMut,
    /// The map's slots (Kafka's `slots`: its capacity).
    slots: usize,
    /// The slots this pass probes, the first of `bytes`: `slots`, fewer after
    /// [`SkimpyOffsetMap::clear_for_keys`], about 1.2 times `slots` (20-byte slots) after
    /// [`SkimpyOffsetMap::clear_dense`]. Every byte past them is zero.
    table_slots: usize,
    /// Bytes per slot of this pass's table: [`BYTES_PER_ENTRY`], or [`DENSE_BYTES_PER_ENTRY`]
    /// after [`SkimpyOffsetMap::clear_dense`].
    stride: usize,
    /// A dense table's offsets are stored as `offset - base + 1`.
    base: i64,
    entries: usize,
    latest_offset: i64,
    /// Lookups and probes, for the collision rate (Kafka keeps these for debugging).
    lookups: u64,
    probes: u64,
}

impl std::fmt::Debug for SkimpyOffsetMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkimpyOffsetMap")
            .field("slots", &self.slots)
            .field("table_slots", &self.table_slots)
            .field("entries", &self.entries)
            .field("latest_offset", &self.latest_offset)
            .finish_non_exhaustive()
    }
}

impl SkimpyOffsetMap {
    /// A map over `memory` bytes (capped at [`MAX_MAP_BYTES`]); it holds `memory / 24` slots.
    /// The memory is allocated zeroed once, here.
    pub fn new(memory: usize) -> Result<Self> {
        let memory = memory.min(MAX_MAP_BYTES);
        let slots = memory / BYTES_PER_ENTRY;
        if slots == 0 {
            return Err(Error::InvalidConfig {
                key: "log.cleaner.dedupe.buffer.size".into(),
                value: memory.to_string(),
                reason: format!("the offset map needs at least {BYTES_PER_ENTRY} bytes per cleaner thread"),
            });
        }
        let bytes = MmapOptions::new().len(slots * BYTES_PER_ENTRY).map_anon().map_err(|e| Error::InvalidConfig {
            key: "log.cleaner.dedupe.buffer.size".into(),
            value: memory.to_string(),
            reason: format!("cannot allocate the offset map: {e}"),
        })?;
        #[cfg(target_os = "linux")]
        if let Err(e) = bytes.advise(Advice::HugePage) {
            log::debug!("offset map: transparent huge pages unavailable: {e}");
        }
        Ok(SkimpyOffsetMap {
            bytes,
            slots,
            table_slots: slots,
            stride: BYTES_PER_ENTRY,
            base: 0,
            entries: 0,
            latest_offset: -1,
            lookups: 0,
            probes: 0,
        })
    }

    /// Number of slots (the map's capacity, whatever table this pass probes).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Number of slots this pass probes (see [`SkimpyOffsetMap::clear_for_keys`] and
    /// [`SkimpyOffsetMap::clear_dense`]).
    pub fn table_slots(&self) -> usize {
        self.table_slots
    }

    /// Number of distinct key hashes stored.
    pub fn size(&self) -> usize {
        self.entries
    }

    /// Bytes of memory the map holds.
    pub fn memory(&self) -> usize {
        self.bytes.len()
    }

    /// `size / slots`.
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.slots as f64
    }

    /// The offset of the last `put` (or [`SkimpyOffsetMap::update_latest_offset`]), -1 after a
    /// clear.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Sets the latest offset without storing a key (Kafka advances it over offset gaps).
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = offset;
    }

    /// Average probes per lookup so far.
    pub fn collision_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            (self.probes - self.lookups) as f64 / self.lookups as f64
        }
    }

    /// Empties the map (zeroes the memory its last table used); the next pass probes every slot.
    pub fn clear(&mut self) {
        self.clear_for_keys(usize::MAX);
    }

    /// Empties the map for a pass that expects to put at most `max_keys` distinct keys: it then
    /// probes a table of `2 * max_keys` slots (at least [`MIN_TABLE_SLOTS`], at most the map's),
    /// so a small pass touches and zeroes only that much memory. A table that fills past
    /// [`GROW_AT_PERCENT`] anyway doubles (up to the map's slots); the capacity callers stop at
    /// (slots x load factor) is unchanged.
    pub fn clear_for_keys(&mut self, max_keys: usize) {
        self.empty_table();
        self.table_slots = max_keys.saturating_mul(2).max(MIN_TABLE_SLOTS).min(self.slots);
        (self.stride, self.base) = (BYTES_PER_ENTRY, 0);
    }

    /// Empties the map for a pass whose offsets all lie in `[base, end)` and lays the memory
    /// out in [`DENSE_BYTES_PER_ENTRY`]-byte slots (see the module docs): more slots than the
    /// map's `slots`, whose capacity callers still stop at. Returns false, and clears to the
    /// full 24-byte table instead, when the range is too long for 32-bit distances. The
    /// layout lasts until the next clear: every clean starts with one, so a map handed back
    /// to a pool after a sliced clean serves the next clean as a fresh one.
    pub fn clear_dense(&mut self, base: i64, end: i64) -> bool {
        if !(0..i64::from(u32::MAX)).contains(&end.saturating_sub(base)) {
            self.clear();
            return false;
        }
        self.empty_table();
        self.table_slots = self.bytes.len() / DENSE_BYTES_PER_ENTRY;
        (self.stride, self.base) = (DENSE_BYTES_PER_ENTRY, base);
        true
    }

    /// Zeroes the memory the last table used (if it stored anything) and resets the counts.
    fn empty_table(&mut self) {
        if self.entries > 0 || self.latest_offset != -1 {
            self.bytes[..self.table_slots * self.stride].fill(0);
        }
        self.entries = 0;
        self.latest_offset = -1;
        self.lookups = 0;
        self.probes = 0;
    }

    /// The bytes after the digest that store `offset` in this table (the first `stride - 16`).
    /// A dense table refuses an offset its 32 bits cannot hold: below its base, or
    /// `u32::MAX - 1` or more past it (the cleaner puts none: its offsets lie in the range
    /// [`SkimpyOffsetMap::clear_dense`] was given).
    #[inline]
    fn encode_offset(&self, offset: i64) -> Result<[u8; 8]> {
        if self.stride == BYTES_PER_ENTRY {
            return Ok(offset.to_be_bytes());
        }
        let distance = (offset.checked_sub(self.base))
            .and_then(|d| d.checked_add(1))
            .and_then(|d| u32::try_from(d).ok())
            .filter(|&d| d != 0)
            .ok_or_else(|| {
                Error::illegal_state(format!(
                    "offset {offset} is outside the dense offset map's range from {}",
                    self.base
                ))
            })?;
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&distance.to_be_bytes());
        Ok(out)
    }

    /// The offset stored in a slot (its bytes after the digest).
    #[inline]
    fn decode_offset(&self, slot: &[u8]) -> i64 {
        let tail = &slot[HASH_SIZE..];
        if self.stride == BYTES_PER_ENTRY {
            i64::from_be_bytes(tail.try_into().expect("8 bytes"))
        } else {
            self.base + i64::from(u32::from_be_bytes(tail.try_into().expect("4 bytes"))) - 1
        }
    }

    /// Stores `offset` for `key`.
    pub fn put(&mut self, key: &[u8], offset: i64) -> Result<()> {
        self.put_hash(&hash_key(key), offset).map(|_| ())
    }

    /// Stores `offset` for a key with digest `hash`; returns the offset it replaced, if the
    /// key was there. Fails when every slot is taken (Kafka throws there too; the cleaner
    /// stops filling at the load factor long before).
    pub fn put_hash(&mut self, hash: &KeyHash, offset: i64) -> Result<Option<i64>> {
        if self.table_slots < self.slots && self.entries * 100 >= self.table_slots * GROW_AT_PERCENT {
            self.grow();
        }
        if self.entries >= self.table_slots {
            return Err(Error::illegal_state(format!(
                "attempted to add a new entry to a full offset map ({} slots)",
                self.table_slots
            )));
        }
        let encoded = self.encode_offset(offset)?;
        self.lookups += 1;
        self.latest_offset = offset;
        self.probes += 1;
        // The common cases first, with fixed-size copies: the home slot is empty, or holds
        // this key.
        let index = self.home(hash);
        let home = self.slot(index);
        let old = if is_empty(home) {
            None
        } else if home[..HASH_SIZE] == hash[..] {
            Some(self.decode_offset(home))
        } else {
            return Ok(self.put_probing(hash, encoded, index));
        };
        let slot = self.slot_mut(index);
        slot[..HASH_SIZE].copy_from_slice(hash);
        store_offset(slot, encoded);
        if old.is_none() {
            self.entries += 1;
        }
        Ok(old)
    }

    /// The rest of [`SkimpyOffsetMap::put_hash`] when the home slot `index` holds another
    /// key: Robin Hood probing from there.
    #[inline(never)]
    fn put_probing(&mut self, hash: &KeyHash, encoded: [u8; 8], mut index: usize) -> Option<i64> {
        let stride = self.stride;
        let mut carried = [0u8; BYTES_PER_ENTRY];
        carried[..HASH_SIZE].copy_from_slice(hash);
        carried[HASH_SIZE..stride].copy_from_slice(&encoded[..stride - HASH_SIZE]);
        let mut distance = 0usize;
        let mut displaced = false;
        loop {
            let slot = self.slot(index);
            if is_empty(slot) {
                self.slot_mut(index).copy_from_slice(&carried[..stride]);
                self.entries += 1;
                return None;
            }
            // Only the key being put can already be here: a displaced entry is unique.
            if !displaced && slot[..HASH_SIZE] == carried[..HASH_SIZE] {
                let old = self.decode_offset(slot);
                store_offset(self.slot_mut(index), encoded);
                return Some(old);
            }
            let theirs = self.distance(index);
            if theirs < distance {
                // Robin Hood: the entry nearer its home gives up its slot and moves on. The
                // key being put was not further along (it would have been found before a
                // slot holding an entry nearer its home).
                let slot = self.slot_mut(index);
                let mut evicted = [0u8; BYTES_PER_ENTRY];
                evicted[..stride].copy_from_slice(slot);
                slot.copy_from_slice(&carried[..stride]);
                carried = evicted;
                distance = theirs;
                displaced = true;
            }
            index = if index + 1 == self.table_slots { 0 } else { index + 1 };
            distance += 1;
            self.probes += 1;
        }
    }

    /// Before the lookup or insert of entry `i` of a run of keys (`hash_at(j)` gives entry
    /// `j`'s hash, None for an entry without one, or past the end): prefetches the slot of the
    /// entry [`PREFETCH_AHEAD`] further on, and at the first entry those of the first
    /// [`PREFETCH_AHEAD`] too, so that each access finds its slot in cache (pass 1 and the
    /// sliced decision passes walk a batch's keys this way).
    #[inline]
    pub fn prefetch_ahead<'h>(&self, i: usize, hash_at: impl Fn(usize) -> Option<&'h KeyHash>) {
        if i == 0 {
            (0..PREFETCH_AHEAD).filter_map(&hash_at).for_each(|h| self.prefetch(h));
        }
        if let Some(h) = hash_at(i + PREFETCH_AHEAD) {
            self.prefetch(h);
        }
    }

    /// Asks the CPU to start loading the slots a lookup of `hash` reads first, so that a
    /// later `put_hash` or `get_hash` finds them in cache (the cleaner hashes a batch's keys,
    /// prefetches, then looks them up).
    #[inline]
    pub fn prefetch(&self, hash: &KeyHash) {
        let pos = self.home(hash) * self.stride;
        let slot = &self.bytes[pos..pos + self.stride];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `_mm_prefetch` is only a hint: it never faults and reads nothing into the
        // program; the pointers are into the live mapping (bounds-checked just above).
        unsafe {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(slot.as_ptr().cast());
            // A slot may run into the next cache line (one in three of the 20-byte ones).
            if pos / 64 != (pos + self.stride - 1) / 64 {
                _mm_prefetch::<_MM_HINT_T0>(slot[self.stride - 1..].as_ptr().cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// The offset stored for `key`, or -1.
    pub fn get(&mut self, key: &[u8]) -> i64 {
        self.get_hash(&hash_key(key))
    }

    /// The offset stored for a key with digest `hash`, or -1. A search ends at the key, at an
    /// empty slot, at an entry nearer its home than the key would be there (Robin Hood order),
    /// or after every slot (a full map).
    pub fn get_hash(&mut self, hash: &KeyHash) -> i64 {
        self.lookups += 1;
        let mut index = self.home(hash);
        for distance in 0..self.table_slots {
            self.probes += 1;
            let slot = self.slot(index);
            if &slot[..HASH_SIZE] == hash {
                return self.decode_offset(slot);
            }
            if slot.iter().all(|&b| b == 0) || self.distance(index) < distance {
                return -1;
            }
            index = if index + 1 == self.table_slots { 0 } else { index + 1 };
        }
        -1
    }

    /// Removes every entry whose digest `keep` refuses, and returns how many were removed.
    /// The survivors keep their Robin Hood order: in one sweep from an empty slot, each moves
    /// back to its home or just after the survivor before it, whichever is later (every slot
    /// from its home to where it lands stays taken, and homes still rise along each run).
    pub fn retain(&mut self, mut keep: impl FnMut(&KeyHash) -> bool) -> usize {
        let slots = self.table_slots;
        let Some(empty) = (0..slots).find(|&i| self.slot(i).iter().all(|&b| b == 0)) else {
            return self.retain_by_reinserting(keep);
        };
        let before = self.entries;
        // Positions counted from the slot after `empty` (no run of entries crosses it).
        let base = empty + 1;
        let unwrap = |i: usize, slots: usize| if i >= base { i - base } else { i + slots - base };
        let mut next_free = 0usize;
        for j in 0..slots {
            let index = (base + j) % slots;
            let slot = self.slot(index);
            if slot.iter().all(|&b| b == 0) {
                continue;
            }
            let hash: KeyHash = slot[..HASH_SIZE].try_into().expect("16 bytes");
            if !keep(&hash) {
                self.slot_mut(index).fill(0);
                self.entries -= 1;
                continue;
            }
            let target = unwrap(self.home(&hash), slots).max(next_free);
            if target != j {
                let stride = self.stride;
                let mut entry = [0u8; BYTES_PER_ENTRY];
                entry[..stride].copy_from_slice(self.slot(index));
                self.slot_mut((base + target) % slots).copy_from_slice(&entry[..stride]);
                self.slot_mut(index).fill(0);
            }
            next_free = target + 1;
        }
        before - self.entries
    }

    /// [`SkimpyOffsetMap::retain`] for a map without an empty slot: the survivors are put
    /// again into the emptied map.
    fn retain_by_reinserting(&mut self, keep: impl FnMut(&KeyHash) -> bool) -> usize {
        let before = self.entries;
        let latest = self.latest_offset;
        let survivors = self.take_entries(keep);
        for (hash, offset) in &survivors {
            // Fewer entries than slots went out: each finds a slot.
            let _ = self.put_hash(hash, *offset);
        }
        self.latest_offset = latest;
        before - self.entries
    }

    /// Doubles the table (up to the map's slots) and puts its entries again, keeping the
    /// latest offset and the probe counts.
    fn grow(&mut self) {
        let (latest, lookups, probes) = (self.latest_offset, self.lookups, self.probes);
        let old = self.take_entries(|_| true);
        self.table_slots = self.table_slots.saturating_mul(2).min(self.slots);
        for (hash, offset) in &old {
            let _ = self.put_hash(hash, *offset);
        }
        (self.latest_offset, self.lookups, self.probes) = (latest, lookups, probes);
    }

    /// The table's entries that `keep` accepts, in slot order; the table is left empty.
    fn take_entries(&mut self, mut keep: impl FnMut(&KeyHash) -> bool) -> Vec<(KeyHash, i64)> {
        let taken = (0..self.table_slots)
            .map(|i| self.slot(i))
            .filter(|slot| slot.iter().any(|&b| b != 0))
            .map(|slot| {
                let hash: KeyHash = slot[..HASH_SIZE].try_into().expect("16 bytes");
                (hash, self.decode_offset(slot))
            })
            .filter(|(hash, _)| keep(hash))
            .collect();
        self.bytes[..self.table_slots * self.stride].fill(0);
        self.entries = 0;
        taken
    }

    fn slot(&self, index: usize) -> &[u8] {
        &self.bytes[index * self.stride..(index + 1) * self.stride]
    }

    fn slot_mut(&mut self, index: usize) -> &mut [u8] {
        let stride = self.stride;
        &mut self.bytes[index * stride..(index + 1) * stride]
    }

    /// The home slot of a digest: its first four bytes scaled to the slot count (a multiply,
    /// not a division).
    #[inline]
    fn home(&self, hash: &KeyHash) -> usize {
        let window = u32::from_be_bytes(hash[..4].try_into().expect("4 bytes"));
        ((u64::from(window) * self.table_slots as u64) >> 32) as usize
    }

    /// How far the entry in slot `index` sits from its home slot (forward, wrapping).
    #[inline]
    fn distance(&self, index: usize) -> usize {
        let slot = self.slot(index);
        let home = self.home(slot[..HASH_SIZE].try_into().expect("16 bytes"));
        if index >= home {
            index - home
        } else {
            index + self.table_slots - home
        }
    }
}

/// Writes the stored form of an offset (`encoded`, from `encode_offset`) after the digest of
/// `slot`, a 24- or 20-byte slot, with fixed-size copies.
#[inline]
fn store_offset(slot: &mut [u8], encoded: [u8; 8]) {
    if slot.len() == BYTES_PER_ENTRY {
        slot[HASH_SIZE..].copy_from_slice(&encoded);
    } else {
        slot[HASH_SIZE..DENSE_BYTES_PER_ENTRY].copy_from_slice(&encoded[..4]);
    }
}

/// Whether a slot is empty (all zero; no stored entry is). Word-wide, where a byte loop would
/// wait on each byte of a slot just loaded from memory.
#[inline]
fn is_empty(slot: &[u8]) -> bool {
    let (hash, offset) = slot.split_at(HASH_SIZE);
    u128::from_ne_bytes(hash.try_into().expect("16 bytes")) == 0 && offset.iter().fold(0, |a, &b| a | b) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_put_get_and_overwrite() {
        let mut m = SkimpyOffsetMap::new(4096).unwrap();
        for i in 0..100i64 {
            m.put(format!("k{i}").as_bytes(), i).unwrap();
        }
        assert_eq!(m.size(), 100);
        for i in 0..100i64 {
            assert_eq!(m.get(format!("k{i}").as_bytes()), i);
        }
        m.put(b"k5", 500).unwrap();
        assert_eq!(m.size(), 100);
        assert_eq!(m.get(b"k5"), 500);
        assert_eq!(m.latest_offset(), 500);
        assert_eq!(m.get(b"absent"), -1);
    }

    /// A xorshift64 generator from `seed` (fixed seeds: the same cases every run).
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Random puts (repeating keys) and lookups against a `HashMap`, up to a full map, for
    /// slot counts from 1 (every probe wraps) to thousands.
    #[test]
    fn robin_hood_order_answers_like_a_hash_map() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
        for slots in [1usize, 2, 3, 7, 64, 1000, 4099] {
            let mut m = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
            let mut model = std::collections::HashMap::new();
            let universe = (slots * 2) as u64;
            let mut offset = 0i64;
            while m.size() < slots {
                let key = (next() % universe).to_be_bytes();
                offset += 1;
                let replaced = m.put(&key, offset).map(|()| model.insert(key, offset));
                assert!(replaced.is_ok());
                assert_eq!(m.size(), model.len(), "{slots} slots");
                if next().is_multiple_of(slots as u64 / 8 + 1) {
                    for k in 0..universe {
                        let k = k.to_be_bytes();
                        assert_eq!(m.get(&k), model.get(&k).copied().unwrap_or(-1), "{slots} slots");
                    }
                }
            }
            for k in 0..universe {
                let k = k.to_be_bytes();
                assert_eq!(m.get(&k), model.get(&k).copied().unwrap_or(-1), "full map of {slots} slots");
            }
            let (k, v) = model.iter().next().map(|(k, v)| (*k, *v)).unwrap();
            assert!(m.put_hash(&hash_key(&k), v).is_err(), "a full map refuses every put");
        }
    }

    /// Removing entries (none, some, all) from maps of every fill, full ones included, leaves
    /// a map that answers like a `HashMap` with the same entries removed, and takes new puts.
    #[test]
    fn retain_answers_like_a_hash_map() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        for slots in [1usize, 2, 3, 7, 64, 1000, 4099] {
            for fill in [slots / 2, slots * 9 / 10, slots].map(|f| f.max(1)) {
                for modulus in [1u8, 2, 3, 255] {
                    let mut m = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
                    let mut model = std::collections::HashMap::new();
                    let mut offset = 0i64;
                    while m.size() < fill {
                        let key = next().to_be_bytes();
                        offset += 1;
                        m.put(&key, offset).unwrap();
                        model.insert(hash_key(&key), offset);
                    }
                    let keep = |h: &KeyHash| modulus != 1 && !h[15].is_multiple_of(modulus);
                    let removed = m.retain(keep);
                    let before = model.len();
                    model.retain(|h, _| keep(h));
                    assert_eq!((removed, m.size()), (before - model.len(), model.len()), "{slots} slots");
                    assert_eq!(m.latest_offset(), offset);
                    for (h, o) in &model {
                        assert_eq!(m.get_hash(h), *o, "{slots} slots, fill {fill}, modulus {modulus}");
                    }
                    for _ in 0..100 {
                        assert_eq!(m.get_hash(&hash_key(&next().to_be_bytes())), -1);
                    }
                    while m.size() < slots {
                        let key = next().to_be_bytes();
                        offset += 1;
                        m.put(&key, offset).unwrap();
                        model.insert(hash_key(&key), offset);
                    }
                    for (h, o) in &model {
                        assert_eq!(m.get_hash(h), *o, "refilled: {slots} slots, fill {fill}, modulus {modulus}");
                    }
                }
            }
        }
    }

    #[test]
    fn get_terminates_when_full() {
        let mut m = SkimpyOffsetMap::new(BYTES_PER_ENTRY * 4).unwrap();
        for i in 0..4i64 {
            m.put(&i.to_be_bytes(), i).unwrap();
        }
        assert!(m.put(b"one more", 9).is_err());
        assert_eq!(m.get(b"never stored"), -1);
    }

    #[test]
    fn clear_resets_everything() {
        let mut m = SkimpyOffsetMap::new(4096).unwrap();
        m.put(b"a", 7).unwrap();
        m.clear();
        assert_eq!((m.size(), m.latest_offset(), m.get(b"a")), (0, -1, -1));
        assert!(m.bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn a_table_sized_for_few_keys_touches_only_its_slots_and_grows_past_them() {
        let slots = 40_000;
        let mut m = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
        m.clear_for_keys(100);
        assert_eq!((m.slots(), m.table_slots()), (slots, MIN_TABLE_SLOTS));
        let mut model = std::collections::HashMap::new();
        let mut next = xorshift(0xD1B5_4A32_D192_ED03u64);
        // Ten times the hint: the table doubles (at 75%) until it holds them all.
        for offset in 0..30_000i64 {
            let key = (next() % 20_000).to_be_bytes();
            let replaced = m.put_hash(&hash_key(&key), offset).unwrap();
            assert_eq!(replaced, model.insert(key, offset));
            if offset == 2_000 {
                assert_eq!(m.table_slots(), MIN_TABLE_SLOTS, "below 75% of the first table");
                let used = MIN_TABLE_SLOTS * BYTES_PER_ENTRY;
                assert!(m.bytes[used..].iter().all(|&b| b == 0), "nothing written past the table");
            }
        }
        assert!(m.table_slots() > MIN_TABLE_SLOTS && m.table_slots() <= slots);
        assert!(m.size() * 100 < m.table_slots() * GROW_AT_PERCENT);
        assert_eq!(
            (m.size(), m.latest_offset(), m.utilization()),
            (model.len(), 29_999, model.len() as f64 / slots as f64)
        );
        for k in 0..20_000u64 {
            let k = k.to_be_bytes();
            assert_eq!(m.get(&k), model.get(&k).copied().unwrap_or(-1));
        }
        // The next pass, sized small again, sees none of it; nor does a full-table pass.
        m.clear_for_keys(10);
        assert_eq!((m.table_slots(), m.size(), m.latest_offset()), (MIN_TABLE_SLOTS, 0, -1));
        assert!(m.bytes.iter().all(|&b| b == 0));
        m.put(b"only", 1).unwrap();
        m.clear();
        assert_eq!(m.table_slots(), slots);
        assert!((0..20_000u64).all(|k| m.get(&k.to_be_bytes()) == -1) && m.get(b"only") == -1);
    }

    #[test]
    fn a_small_table_still_refuses_only_at_the_maps_slots() {
        let slots = 3 * MIN_TABLE_SLOTS;
        let mut m = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
        m.clear_for_keys(1);
        for i in 0..slots as u64 {
            m.put(&i.to_be_bytes(), i as i64).unwrap();
        }
        assert_eq!((m.size(), m.table_slots()), (slots, slots));
        assert!(m.put(b"one more", 9).is_err());
        assert!((0..slots as u64).all(|i| m.get(&i.to_be_bytes()) == i as i64));
        m.clear_for_keys(usize::MAX);
        assert_eq!(m.table_slots(), slots);
    }

    /// The dense layout (the sliced passes') answers like a `HashMap` through puts, repeated
    /// keys, lookups, a retain and a full table, with offsets over its whole 32-bit range; it
    /// has a fifth more slots than the map, and leaves no trace for the next 24-byte pass.
    #[test]
    fn a_dense_table_answers_like_a_hash_map() {
        let mut next = xorshift(0x6A09_E667_F3BC_C908u64);
        for slots in [1usize, 5, 64, 1000, 4099] {
            let mut m = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
            let base = 7_000_000_000i64;
            assert!(m.clear_dense(base, base + i64::from(u32::MAX) - 1));
            let table = slots * BYTES_PER_ENTRY / DENSE_BYTES_PER_ENTRY;
            assert_eq!((m.slots(), m.table_slots()), (slots, table));
            let mut model = std::collections::HashMap::new();
            let universe = (table * 2) as u64;
            let (mut i, mut retained) = (0u64, false);
            while m.size() < table {
                // The range's ends, then anywhere in it.
                let offset = match i {
                    0 => base,
                    1 => base + i64::from(u32::MAX) - 2,
                    _ => base + (next() % u64::from(u32::MAX - 1)) as i64,
                };
                i += 1;
                let key = (next() % universe).to_be_bytes();
                assert_eq!(m.put_hash(&hash_key(&key), offset).unwrap(), model.insert(key, offset), "{slots} slots");
                if !retained && m.size() == table / 2 {
                    retained = true;
                    let keep = |h: &KeyHash| !h[15].is_multiple_of(3);
                    m.retain(keep);
                    model.retain(|k, _| keep(&hash_key(k)));
                    assert_eq!(m.size(), model.len());
                }
            }
            for k in 0..universe {
                let k = k.to_be_bytes();
                assert_eq!(m.get(&k), model.get(&k).copied().unwrap_or(-1), "{slots} slots");
            }
            assert!(m.put(b"one more", base).is_err(), "a full dense table refuses a put");
            m.clear_for_keys(10);
            assert!(m.bytes.iter().all(|&b| b == 0), "{slots} slots: the next pass starts from zeroes");
            m.put(b"k", -5).unwrap();
            assert_eq!((m.get(b"k"), m.table_slots()), (-5, MIN_TABLE_SLOTS.min(slots)));
        }
    }

    /// A dense table refuses an offset outside the range it was cleared for (an error, not a
    /// wrong answer), and a range too long for 32-bit distances gets the 24-byte table.
    #[test]
    fn a_dense_table_refuses_offsets_outside_its_range() {
        let mut m = SkimpyOffsetMap::new(100 * BYTES_PER_ENTRY).unwrap();
        assert!(m.clear_dense(1000, 2000));
        for offset in [999, 1000 + i64::from(u32::MAX), i64::MIN, i64::MAX] {
            let err = m.put(b"k", offset).unwrap_err().to_string();
            assert!(err.contains(&format!("offset {offset} is outside")), "{err}");
        }
        assert_eq!((m.size(), m.latest_offset()), (0, -1));
        m.put(b"k", 1000 + i64::from(u32::MAX) - 1).unwrap();
        assert_eq!(m.get(b"k"), 1000 + i64::from(u32::MAX) - 1);
        assert!(!m.clear_dense(0, i64::from(u32::MAX)));
        assert_eq!((m.table_slots(), m.size()), (100, 0));
        m.put(b"far", i64::MAX).unwrap();
        assert_eq!(m.get(b"far"), i64::MAX);
    }

    #[test]
    fn md5_matches_known_vector() {
        // RFC 1321 test suite: MD5("abc").
        let h = hash_key(b"abc");
        assert_eq!(h[..4], [0x90, 0x01, 0x50, 0x98]);
    }
}
