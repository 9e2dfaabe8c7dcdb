//! The cleaner's key -> offset map (Kafka's `SkimpyOffsetMap`): an open-addressing hash table
//! of MD5 digests of keys, 24 bytes per slot (16-byte digest, then the offset as a big-endian
//! int64), with Kafka's probe sequence. Two keys with the same MD5 count as one key, as in
//! Kafka.
//!
//! Thread-safety: not thread-safe; each cleaner thread owns one map and reuses it for every
//! clean.

use md5::{Digest, Md5};
use memmap2::{Advice, MmapMut, MmapOptions};

use crate::error::{Error, Result};

/// Bytes of an MD5 digest.
pub const HASH_SIZE: usize = 16;
/// Bytes per slot: digest then offset.
pub const BYTES_PER_ENTRY: usize = HASH_SIZE + 8;
/// The largest map Kafka allocates per cleaner thread (`Int.MaxValue` bytes).
pub const MAX_MAP_BYTES: usize = i32::MAX as usize;

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
    slots: usize,
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
        Ok(SkimpyOffsetMap { bytes, slots, entries: 0, latest_offset: -1, lookups: 0, probes: 0 })
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots
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

    /// Empties the map (zeroes its memory).
    pub fn clear(&mut self) {
        if self.entries > 0 || self.latest_offset != -1 {
            self.bytes.fill(0);
        }
        self.entries = 0;
        self.latest_offset = -1;
        self.lookups = 0;
        self.probes = 0;
    }

    /// Stores `offset` for `key`.
    pub fn put(&mut self, key: &[u8], offset: i64) -> Result<()> {
        self.put_hash(&hash_key(key), offset).map(|_| ())
    }

    /// Stores `offset` for a key with digest `hash`; returns the offset it replaced, if the
    /// key was there. Fails when every slot is taken (Kafka throws there too; the cleaner
    /// stops filling at the load factor long before).
    pub fn put_hash(&mut self, hash: &KeyHash, offset: i64) -> Result<Option<i64>> {
        if self.entries >= self.slots {
            return Err(Error::illegal_state(format!(
                "attempted to add a new entry to a full offset map ({} slots)",
                self.slots
            )));
        }
        self.lookups += 1;
        let mut attempt = 0usize;
        let replaced = loop {
            let pos = self.position_of(hash, attempt);
            self.probes += 1;
            let slot = &mut self.bytes[pos..pos + BYTES_PER_ENTRY];
            if slot.iter().all(|&b| b == 0) {
                slot[..HASH_SIZE].copy_from_slice(hash);
                slot[HASH_SIZE..].copy_from_slice(&offset.to_be_bytes());
                self.entries += 1;
                break None;
            }
            if &slot[..HASH_SIZE] == hash {
                let old = i64::from_be_bytes(slot[HASH_SIZE..].try_into().expect("8 bytes"));
                slot[HASH_SIZE..].copy_from_slice(&offset.to_be_bytes());
                break Some(old);
            }
            attempt += 1;
        };
        self.latest_offset = offset;
        Ok(replaced)
    }

    /// Asks the CPU to start loading the slot `hash` probes first, so that a later `put_hash`
    /// or `get_hash` finds it in cache (the cleaner hashes a batch's keys, prefetches, then
    /// looks them up).
    #[inline]
    pub fn prefetch(&self, hash: &KeyHash) {
        let pos = self.position_of(hash, 0);
        let slot = &self.bytes[pos..pos + BYTES_PER_ENTRY];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `_mm_prefetch` is only a hint: it never faults and reads nothing into the
        // program; the pointer is into the live mapping (bounds-checked just above).
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(slot.as_ptr().cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// The offset stored for `key`, or -1.
    pub fn get(&mut self, key: &[u8]) -> i64 {
        self.get_hash(&hash_key(key))
    }

    /// The offset stored for a key with digest `hash`, or -1. Gives up after `slots + 12`
    /// probes, so a lookup in a full map ends.
    pub fn get_hash(&mut self, hash: &KeyHash) -> i64 {
        self.lookups += 1;
        for attempt in 0..self.slots + 12 {
            let pos = self.position_of(hash, attempt);
            self.probes += 1;
            let slot = &self.bytes[pos..pos + BYTES_PER_ENTRY];
            if &slot[..HASH_SIZE] == hash {
                return i64::from_be_bytes(slot[HASH_SIZE..].try_into().expect("8 bytes"));
            }
            if slot.iter().all(|&b| b == 0) {
                return -1;
            }
        }
        -1
    }

    /// Byte position of the slot for probe `attempt`: the int32 at `min(attempt, 12)` in the
    /// digest plus `max(0, attempt - 12)` (wrapping), `abs` (with `abs(i32::MIN) = 0`) modulo
    /// the slot count.
    #[inline]
    fn position_of(&self, hash: &KeyHash, attempt: usize) -> usize {
        let at = attempt.min(HASH_SIZE - 4);
        let window = i32::from_be_bytes(hash[at..at + 4].try_into().expect("4 bytes"));
        let probe = window.wrapping_add(attempt.saturating_sub(HASH_SIZE - 4) as i32);
        let abs = if probe == i32::MIN { 0 } else { probe.unsigned_abs() as usize };
        (abs % self.slots) * BYTES_PER_ENTRY
    }
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
    fn md5_matches_known_vector() {
        // RFC 1321 test suite: MD5("abc").
        let h = hash_key(b"abc");
        assert_eq!(h[..4], [0x90, 0x01, 0x50, 0x98]);
    }
}
