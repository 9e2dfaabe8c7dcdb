//! Kafka's sparse segment indexes: the offset index (`.index`) and the time index
//! (`.timeindex`), byte-compatible with Kafka 4.x, and their lazy wrapper ([`lazy`]); and the
//! truncation of a segment's transaction index (`.txnindex`, [`transaction_index`]).
//!
//! [`OffsetIndex`] mirrors `OffsetIndex.java`, [`TimeIndex`] mirrors `TimeIndex.java`, and the
//! shared state in this file mirrors `AbstractIndex.java`. Both indexes are memory-mapped
//! read-write when opened by the log's owner, and read into memory when opened read-only
//! (`mmap.rs`, which holds this module's only `unsafe` code). All integers on disk are big-endian.
//!
//! Thread-safety: not thread-safe for mutation (`&mut self`); the owning `LogSegment`
//! serialises access. Lookups take `&self` and may run concurrently with each other.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::module_name_repetitions
)]

pub mod lazy;
mod mmap;
pub mod offset_index;
pub mod rebuild;
pub(crate) mod sanity;
pub mod time_index;
pub mod transaction_index;

pub use offset_index::{OffsetIndex, OffsetPosition};
pub use time_index::{TimeIndex, TimestampOffset};

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::util::fault::{check, FaultOp};
use mmap::IndexStorage;

/// Bytes at the end of an index that lookups search first (Kafka's warm section): 8 KiB, which
/// keeps the pages that most lookups touch resident. See `AbstractIndex.warmEntries`.
const WARM_SECTION_BYTES: usize = 8192;

/// Which slot a search returns when the target falls between two entries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Bound {
    /// The last entry whose key is <= target (none if every key is larger).
    LargestLower,
    /// The first entry whose key is >= target (none if every key is smaller).
    SmallestUpper,
}

/// Kafka's `indexSlotRangeFor`: a binary search over `entries` sorted keys that looks in the
/// last `warm_entries + 1` entries first, so recent lookups touch only the warm pages.
#[inline]
pub(crate) fn search_slot(
    entries: usize,
    warm_entries: usize,
    target: i64,
    bound: Bound,
    key: impl Fn(usize) -> i64,
) -> Option<usize> {
    if entries == 0 {
        return None;
    }
    let first_hot = (entries - 1).saturating_sub(warm_entries);
    if key(first_hot) < target {
        return binary_search(entries, first_hot, entries - 1, target, bound, &key);
    }
    if key(0) > target {
        return match bound {
            Bound::LargestLower => None,
            Bound::SmallestUpper => Some(0),
        };
    }
    binary_search(entries, 0, first_hot, target, bound, &key)
}

/// Kafka's `binarySearch` over slots `[begin, end]`: an exact match returns its slot, else the
/// lower bound `lo` or the upper bound `lo + 1`.
///
/// Kept bug-for-bug: slot `begin` is never compared for equality, so an upper-bound search
/// whose target equals the first entry's key returns slot 1 (or none with one entry) instead of
/// slot 0. Only `fetch_upper_bound_offset` searches for an upper bound, and a later entry there
/// is a looser but still valid bound.
#[inline]
fn binary_search(
    entries: usize,
    begin: usize,
    end: usize,
    target: i64,
    bound: Bound,
    key: &impl Fn(usize) -> i64,
) -> Option<usize> {
    let (mut lo, mut hi) = (begin, end);
    while lo < hi {
        let mid = (lo + hi + 1) >> 1;
        match key(mid).cmp(&target) {
            Ordering::Greater => hi = mid - 1,
            Ordering::Less => lo = mid,
            Ordering::Equal => return Some(mid),
        }
    }
    match bound {
        Bound::LargestLower => Some(lo),
        Bound::SmallestUpper if lo == entries - 1 => None,
        Bound::SmallestUpper => Some(lo + 1),
    }
}

/// Big-endian `int32` at byte `at`.
#[inline]
pub(crate) fn read_i32(buf: &[u8], at: usize) -> i32 {
    let bytes: [u8; 4] = buf[at..at + 4].try_into().expect("a 4-byte slice");
    i32::from_be_bytes(bytes)
}

/// Big-endian unsigned `int32` at byte `at`.
#[inline]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> u32 {
    let bytes: [u8; 4] = buf[at..at + 4].try_into().expect("a 4-byte slice");
    u32::from_be_bytes(bytes)
}

/// Big-endian `int64` at byte `at`.
#[inline]
pub(crate) fn read_i64(buf: &[u8], at: usize) -> i64 {
    let bytes: [u8; 8] = buf[at..at + 8].try_into().expect("an 8-byte slice");
    i64::from_be_bytes(bytes)
}

/// An index file a recovery left holding its rebuilt entries at full size, not yet mapped
/// (`AbstractIndex::prepare_holding`): what its first use maps. A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreparedIndex {
    /// The live entries at the file's start.
    entries: usize,
    /// Their bytes: the file's length once trimmed (Kafka's `trimToValidSize`).
    valid_len: u64,
    /// The file's length.
    len: u64,
}

impl PreparedIndex {
    /// The length of the file trimmed to its entries.
    pub fn valid_len(&self) -> u64 {
        self.valid_len
    }
}

/// The state both indexes share (Kafka's `AbstractIndex`): the file, its storage and the entry
/// count. Invariant: `entries <= max_entries` and `max_entries * entry_size <= storage.len()`.
pub(crate) struct AbstractIndex {
    path: PathBuf,
    base_offset: i64,
    max_index_size: usize,
    entry_size: usize,
    /// Entries in Kafka's warm section: 8192 / entry size.
    warm_entries: usize,
    storage: IndexStorage,
    entries: usize,
    max_entries: usize,
}

impl std::fmt::Debug for AbstractIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbstractIndex")
            .field("path", &self.path)
            .field("base_offset", &self.base_offset)
            .field("entries", &self.entries)
            .field("max_entries", &self.max_entries)
            .field("read_only", &!self.storage.is_mapped())
            .finish_non_exhaustive()
    }
}

impl AbstractIndex {
    /// Opens (creating and preallocating if missing) and maps `path` read-write. An existing
    /// file is assumed trimmed: entries = length / entry size. With `resize_to`, an existing
    /// file is then resized as [`Self::resize`] would (when its entries fit), in the same open.
    /// A missing file is created from `reserved` when given (`IndexStorage::open_mapped`).
    pub(crate) fn open(
        path: PathBuf,
        base_offset: i64,
        max_index_size: usize,
        entry_size: usize,
        resize_to: Option<usize>,
        reserved: Option<crate::util::unnamed_file::UnnamedFile>,
    ) -> Result<Self> {
        let resize_to = resize_to.map(|size| size / entry_size * entry_size);
        let (storage, old_len) = IndexStorage::open_mapped(&path, max_index_size, entry_size, resize_to, reserved)?;
        let max_entries = storage.len() / entry_size;
        let entries = old_len.map_or(0, |len| (len as usize / entry_size).min(max_entries));
        Ok(Self::with_storage(path, base_offset, max_index_size, entry_size, storage, entries))
    }

    /// An index over `storage` (mapped, read-write) holding `entries` entries.
    fn with_storage(
        path: PathBuf,
        base_offset: i64,
        max_index_size: usize,
        entry_size: usize,
        storage: IndexStorage,
        entries: usize,
    ) -> Self {
        AbstractIndex {
            path,
            base_offset,
            max_index_size,
            entry_size,
            warm_entries: WARM_SECTION_BYTES / entry_size,
            max_entries: storage.len() / entry_size,
            storage,
            entries,
        }
    }

    /// Makes the file at `path` hold exactly `entries` (whole entries rebuilt in memory) and
    /// be `max_index_size` long, unmapped (`IndexStorage::prepare_holding`), for
    /// [`Self::open_prepared`] at the index's first use. `IllegalState` when they do not fit.
    pub(crate) fn prepare_holding(
        path: &Path,
        max_index_size: usize,
        entry_size: usize,
        entries: &[u8],
    ) -> Result<PreparedIndex> {
        let max_entries = max_index_size / entry_size;
        if !entries.len().is_multiple_of(entry_size) || entries.len() / entry_size > max_entries || max_entries == 0 {
            return Err(Error::illegal_state(format!(
                "{} bytes of entries do not fit index {} of at most {max_index_size} bytes",
                entries.len(),
                path.display()
            )));
        }
        let len = IndexStorage::prepare_holding(path, max_index_size, entry_size, entries)?;
        Ok(PreparedIndex { entries: entries.len() / entry_size, valid_len: entries.len() as u64, len })
    }

    /// Opens and maps the file [`Self::prepare_holding`] prepared, with its entries.
    pub(crate) fn open_prepared(
        path: PathBuf,
        base_offset: i64,
        max_index_size: usize,
        entry_size: usize,
        prepared: PreparedIndex,
    ) -> Result<Self> {
        let storage = IndexStorage::open_mapped_prepared(&path, prepared.len)?;
        Ok(Self::with_storage(path, base_offset, max_index_size, entry_size, storage, prepared.entries))
    }

    /// Reads the valid prefix of `path` (entries `accept` takes, in order) into memory. An entry
    /// of all zeros alone is dropped: it is the preallocated tail of an empty active index.
    pub(crate) fn open_read_only(
        path: PathBuf,
        base_offset: i64,
        entry_size: usize,
        accept: impl FnMut(&[u8]) -> bool,
    ) -> Result<Self> {
        let mut storage = IndexStorage::read_snapshot(&path, entry_size, accept)?;
        if storage.len() == entry_size && storage.bytes().iter().all(|&b| b == 0) {
            storage.trim(&path, 0)?;
        }
        let entries = storage.len() / entry_size;
        Ok(AbstractIndex {
            path,
            base_offset,
            max_index_size: 0,
            entry_size,
            warm_entries: WARM_SECTION_BYTES / entry_size,
            storage,
            entries,
            max_entries: entries,
        })
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    #[inline]
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    #[inline]
    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }

    #[inline]
    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn max_index_size(&self) -> usize {
        self.max_index_size
    }

    pub(crate) fn file_len(&self) -> usize {
        self.storage.len()
    }

    pub(crate) fn size_in_bytes(&self) -> usize {
        self.entries * self.entry_size
    }

    /// Kafka's warm-section search over this index's entries.
    #[inline]
    pub(crate) fn search(&self, target: i64, bound: Bound, key: impl Fn(usize) -> i64) -> Option<usize> {
        search_slot(self.entries, self.warm_entries, target, bound, key)
    }

    /// `offset - base_offset` if it lies in `[0, i32::MAX]`.
    pub(crate) fn relative_offset(&self, offset: i64) -> Result<i32> {
        offset
            .checked_sub(self.base_offset)
            .and_then(|rel| i32::try_from(rel).ok())
            .filter(|rel| *rel >= 0)
            .ok_or(Error::OffsetOverflow { base_offset: self.base_offset, offset })
    }

    /// Fails with `IllegalState` naming the file unless the index is mapped read-write.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.storage.is_mapped() {
            Ok(())
        } else {
            Err(mmap::read_only(&self.path))
        }
    }

    /// Error for `entry(n)` with `n >= entries`.
    pub(crate) fn no_such_entry(&self, n: usize) -> Error {
        Error::illegal_state(format!(
            "attempt to fetch entry {n} from index {}, which has {} entries",
            self.path.display(),
            self.entries
        ))
    }

    /// Error for an append to a full index.
    pub(crate) fn full(&self) -> Error {
        Error::illegal_state(format!(
            "attempt to append to a full index {} ({} of {} entries)",
            self.path.display(),
            self.entries,
            self.max_entries
        ))
    }

    /// A `CorruptIndex` error for this file.
    pub(crate) fn corrupt(&self, reason: String) -> Error {
        Error::CorruptIndex { file: self.path.clone(), reason }
    }

    /// Kafka's length check: the file length must be a multiple of the entry size.
    pub(crate) fn check_length(&self) -> Result<()> {
        let len = self.storage.len();
        if len.is_multiple_of(self.entry_size) {
            Ok(())
        } else {
            Err(self.corrupt(format!(
                "found {len} bytes, which is not a multiple of the {}-byte entry size",
                self.entry_size
            )))
        }
    }

    /// Writes `entry` into the next free slot.
    pub(crate) fn push_entry(&mut self, entry: &[u8]) -> Result<()> {
        debug_assert_eq!(entry.len(), self.entry_size);
        if self.entries >= self.max_entries {
            self.check_writable()?;
            return Err(self.full());
        }
        self.storage.write_at(&self.path, self.entries * self.entry_size, entry)?;
        self.entries += 1;
        Ok(())
    }

    /// Forgets entries past the first `entries`. The file keeps its length, as in Kafka, but
    /// the dropped slots of a mapped file are zeroed, so a read-only reader scanning the file
    /// (which has no entry count) cannot take stale entries for live ones.
    pub(crate) fn truncate_to_entries(&mut self, entries: usize) {
        let entries = entries.min(self.entries);
        self.storage.zero(entries * self.entry_size, self.entries * self.entry_size);
        self.entries = entries;
    }

    /// Kafka's `reset`: forgets every entry and gives the file its full size again, without
    /// zeroing the old slots (a preallocated index left by a crash is 10 MiB; zeroing it cost
    /// recovery a page fault per 4 KiB). Until the index is trimmed or overwritten, the file may
    /// hold stale bytes past the live entries; recovery trims it when done.
    pub(crate) fn reset_to_empty(&mut self) -> Result<()> {
        self.check_writable()?;
        self.entries = 0;
        let rounded = self.max_index_size() / self.entry_size * self.entry_size;
        if rounded == self.storage.len() {
            return Ok(());
        }
        let result = self.storage.resize(&self.path, rounded);
        self.after_storage_change();
        result
    }

    /// Kafka's `resize`: the file's new length is `new_size` rounded down to whole entries.
    /// Returns false if the length is already that. Refuses to drop live entries.
    pub(crate) fn resize(&mut self, new_size: usize) -> Result<bool> {
        self.check_writable()?;
        let rounded = new_size / self.entry_size * self.entry_size;
        if rounded == self.storage.len() {
            return Ok(false);
        }
        if rounded < self.size_in_bytes() {
            return Err(Error::illegal_state(format!(
                "cannot resize index {} to {rounded} bytes: it holds {} entries ({} bytes)",
                self.path.display(),
                self.entries,
                self.size_in_bytes()
            )));
        }
        let resized = self.storage.resize(&self.path, rounded);
        self.after_storage_change();
        resized.map(|()| true)
    }

    /// Kafka's `trimToValidSize`: shortens the file to the live entries.
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<()> {
        self.check_writable()?;
        let trimmed = self.storage.trim(&self.path, self.size_in_bytes());
        self.after_storage_change();
        trimmed
    }

    /// Restores the invariants after the storage changed length (or failed to).
    fn after_storage_change(&mut self) {
        self.max_entries = self.storage.len() / self.entry_size;
        self.entries = self.entries.min(self.max_entries);
    }

    pub(crate) fn flush(&self) -> Result<()> {
        self.storage.flush(&self.path)
    }

    /// Renames the file; the index keeps working under the new name.
    pub(crate) fn rename_to(&mut self, new_path: PathBuf) -> Result<()> {
        crate::util::file::rename(&self.path, &new_path)?;
        self.path = new_path;
        Ok(())
    }

    /// Points the index at a file of the same name in `parent_dir` (after the directory moved).
    pub(crate) fn update_parent_dir(&mut self, parent_dir: &Path) {
        if let Some(name) = self.path.file_name() {
            self.path = parent_dir.join(name);
        }
    }

    /// Unmaps (the index is then empty and read-only) and deletes the file if it exists.
    pub(crate) fn delete_if_exists(&mut self) -> Result<bool> {
        self.storage.release();
        self.after_storage_change();
        match check(&self.path, FaultOp::Delete).and_then(|()| std::fs::remove_file(&self.path)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&self.path, "delete index", e)),
        }
    }
}

/// The methods both index types forward to their [`AbstractIndex`], with the same docs.
macro_rules! common_index_api {
    () => {
        /// Number of live entries.
        #[must_use]
        pub fn entries(&self) -> usize {
            self.inner.entries()
        }

        /// Number of entries the file has room for (its length / entry size).
        #[must_use]
        pub fn max_entries(&self) -> usize {
            self.inner.max_entries()
        }

        /// The segment's base offset; entries store offsets relative to it.
        #[must_use]
        pub fn base_offset(&self) -> i64 {
            self.inner.base_offset()
        }

        /// The index file's path.
        #[must_use]
        pub fn path(&self) -> &std::path::Path {
            self.inner.path()
        }

        /// The size given at open; [`Self::reset`] grows the file back to it (0 when read-only).
        #[must_use]
        pub fn max_index_size(&self) -> usize {
            self.inner.max_index_size()
        }

        /// Bytes held by live entries (`entries * entry size`; Kafka's `sizeInBytes`).
        #[must_use]
        pub fn size_in_bytes(&self) -> usize {
            self.inner.size_in_bytes()
        }

        /// The file's length as mapped (Kafka's `length`); for a read-only index, the bytes read.
        #[must_use]
        pub fn file_len(&self) -> usize {
            self.inner.file_len()
        }

        /// Whether `offset - base_offset` fits in an `int32` (Kafka's `canAppendOffset`).
        #[must_use]
        pub fn can_append_offset(&self, offset: i64) -> bool {
            self.inner.relative_offset(offset).is_ok()
        }

        /// Kafka's `resize`: sets the file length to `new_max_size` rounded down to whole
        /// entries (unmap, `set_len`, map again). Returns false if the length was already that.
        ///
        /// # Errors
        /// `IllegalState` on a read-only index or if live entries would not fit; `Io` on failure.
        pub fn resize(&mut self, new_max_size: usize) -> crate::error::Result<bool> {
            let resized = self.inner.resize(new_max_size);
            self.truncate_to_entries(self.inner.entries());
            resized
        }

        /// Kafka's `trimToValidSize`: shortens the file to its live entries (at roll and close).
        ///
        /// # Errors
        /// `IllegalState` on a read-only index; `Io` if the file cannot be resized.
        pub fn trim_to_valid_size(&mut self) -> crate::error::Result<()> {
            let trimmed = self.inner.trim_to_valid_size();
            self.truncate_to_entries(self.inner.entries());
            trimmed
        }

        /// Writes the mapped pages to disk (`msync`); a no-op when read-only.
        ///
        /// # Errors
        /// `Io` if `msync` fails.
        pub fn flush(&self) -> crate::error::Result<()> {
            self.inner.flush()
        }

        /// Renames the index file to `new_path`.
        ///
        /// # Errors
        /// `Io` if the rename fails (the index then keeps its old path).
        pub fn rename_to(&mut self, new_path: impl Into<std::path::PathBuf>) -> crate::error::Result<()> {
            self.inner.rename_to(new_path.into())
        }

        /// Points the index at the same file name under `parent_dir` (the directory was renamed).
        pub fn update_parent_dir(&mut self, parent_dir: &std::path::Path) {
            self.inner.update_parent_dir(parent_dir);
        }

        /// Unmaps the index and deletes its file; returns whether a file was deleted. The index
        /// is empty and read-only afterwards.
        ///
        /// # Errors
        /// `Io` if the file exists but cannot be deleted.
        pub fn delete_if_exists(&mut self) -> crate::error::Result<bool> {
            let deleted = self.inner.delete_if_exists();
            self.truncate_to_entries(0);
            deleted
        }

        /// Kafka's `close`: trims the file to its live entries and flushes it. Dropping an index
        /// trims nothing. Closing a read-only index does nothing.
        ///
        /// # Errors
        /// `Io` if trimming or flushing fails.
        pub fn close(mut self) -> crate::error::Result<()> {
            if self.inner.check_writable().is_err() {
                return Ok(());
            }
            self.inner.trim_to_valid_size()?;
            self.inner.flush()
        }
    };
}
pub(crate) use common_index_api;

#[cfg(test)]
mod tests {
    use super::{search_slot, Bound, OffsetIndex, TimeIndex};

    #[test]
    fn indexes_can_be_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<OffsetIndex>();
        send_sync::<TimeIndex>();
    }

    /// The answers Kafka's search gives on strictly increasing keys, including its quirk: an
    /// upper-bound search for exactly the first key skips slot 0 (see `binary_search`).
    fn model(keys: &[i64], target: i64, bound: Bound) -> Option<usize> {
        match bound {
            Bound::LargestLower => keys.iter().rposition(|&k| k <= target),
            Bound::SmallestUpper if keys.first() == Some(&target) => (keys.len() > 1).then_some(1),
            Bound::SmallestUpper => keys.iter().position(|&k| k >= target),
        }
    }

    #[test]
    fn warm_section_search_matches_a_linear_scan() {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for entries in [0usize, 1, 2, 3, 5, 8, 9, 10, 17, 64, 100, 1025, 3000] {
            let mut keys = Vec::with_capacity(entries);
            let mut key = 10i64;
            for _ in 0..entries {
                key += 1 + (next() % 5) as i64;
                keys.push(key);
            }
            for warm in [0usize, 1, 3, 7, 1024] {
                let last = keys.last().copied().unwrap_or(10);
                for target in 0..=last + 3 {
                    for bound in [Bound::LargestLower, Bound::SmallestUpper] {
                        let got = search_slot(entries, warm, target, bound, |n| keys[n]);
                        assert_eq!(
                            got,
                            model(&keys, target, bound),
                            "entries {entries}, warm {warm}, target {target}, {bound:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn search_touches_only_the_warm_section_for_recent_targets() {
        let keys: Vec<i64> = (0..10_000).map(|n| n * 2).collect();
        let touched = std::cell::Cell::new(usize::MAX);
        let key = |n: usize| {
            touched.set(touched.get().min(n));
            keys[n]
        };
        let warm = 8192 / 8;
        let first_hot = keys.len() - 1 - warm;
        assert_eq!(search_slot(keys.len(), warm, 19_991, Bound::LargestLower, key), Some(9995));
        assert_eq!(touched.get(), first_hot, "a warm lookup must not read below the warm section");
    }
}
