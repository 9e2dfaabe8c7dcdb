//! The offset index (`<base offset>.index`): Kafka's `OffsetIndex`.
//!
//! A sparse map from offsets to byte positions in the segment's `.log` file. Each 8-byte entry
//! is a big-endian `int32` offset relative to the segment's base offset, then a big-endian
//! `int32` physical position. Offsets and positions strictly increase.

use std::path::{Path, PathBuf};

use super::{common_index_api, read_i32, read_u32, AbstractIndex, Bound, PreparedIndex};
use crate::error::{Error, Result};

const ENTRY_SIZE: usize = 8;

/// An offset and the byte position in the `.log` file of a batch boundary at or before the
/// batch holding that offset (Kafka's `OffsetPosition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the segment's `.log` file.
    pub position: u32,
}

/// A segment's offset index (mirrors Kafka's `OffsetIndex` and `AbstractIndex`).
///
/// Opened read-write it maps the file; opened read-only it reads the file's valid entries into
/// memory. Not thread-safe; the owning `LogSegment` serialises access. Lookups take `&self`.
#[derive(Debug)]
pub struct OffsetIndex {
    inner: AbstractIndex,
    /// The last entry's offset, or the base offset when empty.
    last_offset: i64,
}

impl OffsetIndex {
    /// Bytes per entry.
    pub const ENTRY_SIZE: usize = ENTRY_SIZE;

    /// Opens `path` read-write, creating it if missing. A new file is preallocated to
    /// `max_index_size` rounded down to a multiple of 8 and has no entries; an existing file
    /// keeps its length and is assumed trimmed (entries = length / 8), as in Kafka.
    ///
    /// # Errors
    /// `IllegalState` if a new file could not hold one entry; `Io` if it cannot be opened or mapped.
    pub fn open(path: impl Into<PathBuf>, base_offset: i64, max_index_size: usize) -> Result<Self> {
        let inner = AbstractIndex::open(path.into(), base_offset, max_index_size, ENTRY_SIZE, None, None)?;
        Ok(Self::with_inner(inner))
    }

    /// [`Self::open`], then [`Self::resize`] to `size` in the same open (one open, `stat` and
    /// map; no unmap). A file whose entries would not fit at `size` keeps its length.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_resized(
        path: impl Into<PathBuf>,
        base_offset: i64,
        max_index_size: usize,
        size: usize,
    ) -> Result<Self> {
        let inner = AbstractIndex::open(path.into(), base_offset, max_index_size, ENTRY_SIZE, Some(size), None)?;
        Ok(Self::with_inner(inner))
    }

    /// Makes `path` hold exactly `entries`, an index rebuilt in memory, at `max_index_size`
    /// (see `AbstractIndex::prepare_holding`), unmapped: a recovered active segment's index,
    /// which [`Self::open_prepared`] maps at its first use.
    ///
    /// # Errors
    /// `IllegalState` when the entries do not fit; `Io` if a step fails.
    pub fn prepare_holding(path: &Path, max_index_size: usize, entries: &[u8]) -> Result<PreparedIndex> {
        AbstractIndex::prepare_holding(path, max_index_size, ENTRY_SIZE, entries)
    }

    /// Opens read-write, mapped, the file [`Self::prepare_holding`] prepared: ready for appends.
    ///
    /// # Errors
    /// `IllegalState` when the file's length changed since; `Io` if a step fails.
    pub fn open_prepared(
        path: PathBuf,
        base_offset: i64,
        max_index_size: usize,
        prepared: PreparedIndex,
    ) -> Result<Self> {
        let inner = AbstractIndex::open_prepared(path, base_offset, max_index_size, ENTRY_SIZE, prepared)?;
        Ok(Self::with_inner(inner))
    }

    /// Opens `path` for reading only, without mapping it: the file may be another process's
    /// active index, preallocated with zeros and shortened at any time. Entries are the longest
    /// prefix Kafka's `append` could have written: relative offsets >= 0, offsets and positions
    /// strictly increasing. A missing file gives an empty index. Writes fail with `IllegalState`.
    ///
    /// # Errors
    /// `Io` if the file exists but cannot be read.
    pub fn open_read_only(path: impl Into<PathBuf>, base_offset: i64) -> Result<Self> {
        let mut last: Option<(i32, u32)> = None;
        let accept = move |entry: &[u8]| {
            let (relative, position) = (read_i32(entry, 0), read_u32(entry, 4));
            let ok = relative >= 0 && last.is_none_or(|(r, p)| relative > r && position > p);
            if ok {
                last = Some((relative, position));
            }
            ok
        };
        let inner = AbstractIndex::open_read_only(path.into(), base_offset, ENTRY_SIZE, accept)?;
        Ok(Self::with_inner(inner))
    }

    /// The index over `inner`, its entries as the file holds them (`index::lazy` builds one
    /// from a file created ahead).
    pub(super) fn with_inner(inner: AbstractIndex) -> Self {
        let mut index = OffsetIndex { last_offset: inner.base_offset(), inner };
        index.truncate_to_entries(index.inner.entries());
        index
    }

    /// The offset stored in slot `n` (which must be < entries).
    #[inline]
    fn offset_at(&self, buf: &[u8], n: usize) -> i64 {
        self.inner.base_offset() + i64::from(read_i32(buf, n * ENTRY_SIZE))
    }

    #[inline]
    fn parse_entry(&self, n: usize) -> OffsetPosition {
        let buf = self.inner.bytes();
        OffsetPosition { offset: self.offset_at(buf, n), position: read_u32(buf, n * ENTRY_SIZE + 4) }
    }

    /// The entry with the largest offset <= `target_offset`, or `(base_offset, 0)` if there is
    /// none (Kafka's `lookup`).
    #[must_use]
    pub fn lookup(&self, target_offset: i64) -> OffsetPosition {
        let buf = self.inner.bytes();
        let slot = self.inner.search(target_offset, Bound::LargestLower, |n| self.offset_at(buf, n));
        match slot {
            Some(n) => self.parse_entry(n),
            None => OffsetPosition { offset: self.inner.base_offset(), position: 0 },
        }
    }

    /// The first entry whose position is >= `fetch.position + fetch_size`, or `None` if every
    /// entry lies before that (Kafka's `fetchUpperBoundOffset`). As in Kafka, a target equal to
    /// the first entry's position yields the second entry (or `None`), not the first.
    #[must_use]
    pub fn fetch_upper_bound_offset(&self, fetch: OffsetPosition, fetch_size: u32) -> Option<OffsetPosition> {
        let buf = self.inner.bytes();
        let target = i64::from(fetch.position) + i64::from(fetch_size);
        let position_at = |n: usize| i64::from(read_u32(buf, n * ENTRY_SIZE + 4));
        self.inner.search(target, Bound::SmallestUpper, position_at).map(|n| self.parse_entry(n))
    }

    /// Entry `n` (Kafka's `entry`).
    ///
    /// # Errors
    /// `IllegalState` if `n >= entries()`.
    pub fn entry(&self, n: usize) -> Result<OffsetPosition> {
        if n < self.inner.entries() {
            Ok(self.parse_entry(n))
        } else {
            Err(self.inner.no_such_entry(n))
        }
    }

    /// Appends `offset -> position` (Kafka's `append`).
    ///
    /// # Errors
    /// `IllegalState` if the index is read-only or full, or `position` exceeds `i32::MAX`;
    /// `InvalidOffset` unless the index is empty or `offset > last_offset()`; `OffsetOverflow`
    /// if `offset - base_offset` is outside `[0, i32::MAX]`.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        self.inner.check_writable()?;
        if self.is_full() {
            return Err(self.inner.full());
        }
        if self.inner.entries() != 0 && offset <= self.last_offset {
            return Err(Error::invalid_offset(format!(
                "attempt to append offset {offset} to slot {} of {}, no larger than the last \
                 offset appended ({})",
                self.inner.entries(),
                self.inner.path().display(),
                self.last_offset
            )));
        }
        let relative = self.inner.relative_offset(offset)?;
        let stored_position = i32::try_from(position).map_err(|_| {
            Error::illegal_state(format!(
                "position {position} for offset {offset} in {} does not fit in an int32",
                self.inner.path().display()
            ))
        })?;
        let mut entry = [0u8; ENTRY_SIZE];
        entry[..4].copy_from_slice(&relative.to_be_bytes());
        entry[4..].copy_from_slice(&stored_position.to_be_bytes());
        self.inner.push_entry(&entry)?;
        self.last_offset = offset;
        Ok(())
    }

    /// Removes every entry with offset >= `offset` (Kafka's `truncateTo`). The file keeps its
    /// length; later appends overwrite the dropped slots.
    ///
    /// # Errors
    /// `IllegalState` on a read-only index.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        self.inner.check_writable()?;
        let buf = self.inner.bytes();
        let slot = self.inner.search(offset, Bound::LargestLower, |n| self.offset_at(buf, n));
        let entries = match slot {
            None => 0,
            Some(n) if self.offset_at(buf, n) == offset => n,
            Some(n) => n + 1,
        };
        self.truncate_to_entries(entries);
        Ok(())
    }

    /// Removes every entry; the file keeps its length (Kafka's `truncate`).
    ///
    /// # Errors
    /// `IllegalState` on a read-only index.
    pub fn truncate(&mut self) -> Result<()> {
        self.inner.check_writable()?;
        self.truncate_to_entries(0);
        Ok(())
    }

    /// Removes every entry and grows the file back to the size given at open (Kafka's `reset`).
    ///
    /// # Errors
    /// `IllegalState` on a read-only index; `Io` if the file cannot be resized.
    pub fn reset(&mut self) -> Result<()> {
        let result = self.inner.reset_to_empty();
        self.last_offset = self.inner.base_offset();
        result
    }

    fn truncate_to_entries(&mut self, entries: usize) {
        self.inner.truncate_to_entries(entries);
        let entries = self.inner.entries();
        self.last_offset = if entries == 0 { self.inner.base_offset() } else { self.parse_entry(entries - 1).offset };
    }

    /// Whether every slot is used.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.inner.entries() >= self.inner.max_entries()
    }

    /// The last entry's offset, or the base offset when empty.
    #[must_use]
    pub fn last_offset(&self) -> i64 {
        self.last_offset
    }

    /// Kafka's `sanityCheck`: the last offset must not be below the base offset, and the file
    /// length must be a multiple of 8. A last offset equal to the base offset is valid.
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and the failed rule.
    pub fn sanity_check(&self) -> Result<()> {
        if self.inner.entries() != 0 && self.last_offset < self.inner.base_offset() {
            return Err(self.inner.corrupt(format!(
                "has {} entries but the last offset is {}, which is less than the base offset {}",
                self.inner.entries(),
                self.last_offset,
                self.inner.base_offset()
            )));
        }
        self.inner.check_length()
    }

    common_index_api!();
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;
    use std::path::Path;

    use proptest::prelude::*;
    use tempfile::TempDir;

    use super::{OffsetIndex, OffsetPosition};
    use crate::error::{Error, Result};

    const BASE: i64 = 45;

    fn op(offset: i64, position: u32) -> OffsetPosition {
        OffsetPosition { offset, position }
    }

    fn fresh(dir: &TempDir, base: i64, max_entries: usize) -> OffsetIndex {
        let path = dir.path().join("00000000000000000045.index");
        OffsetIndex::open(path, base, max_entries * 8).unwrap()
    }

    fn illegal<T>(result: Result<T>) -> bool {
        matches!(result.err(), Some(Error::IllegalState { .. }))
    }

    fn invalid_offset<T>(result: Result<T>) -> bool {
        matches!(result.err(), Some(Error::InvalidOffset { .. }))
    }

    fn overflow<T>(result: Result<T>, offset: i64) -> bool {
        matches!(result.err(), Some(Error::OffsetOverflow { base_offset: BASE, offset: o }) if o == offset)
    }

    /// The file's bytes as lowercase hex.
    fn hex(path: &Path) -> String {
        let bytes = std::fs::read(path).unwrap();
        bytes.iter().fold(String::new(), |mut hex, b| {
            write!(hex, "{b:02x}").unwrap();
            hex
        })
    }

    /// Kafka's randomLookupTest: random monotonic entries against a sorted map.
    fn random_lookups(max_entries: usize) {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, max_entries);
        assert_eq!(idx.lookup(92), op(BASE, 0), "not present: position 0");
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % 15 + 1
        };
        let (mut offset, mut position, mut model) = (BASE + 1, 0u32, BTreeMap::new());
        for _ in 0..idx.max_entries() {
            offset += next() as i64;
            position += next() as u32;
            idx.append(offset, position).unwrap();
            model.insert(offset, position);
        }
        for target in BASE - 2..offset + 3 {
            let floor = model.range(..=target).next_back();
            let want = floor.map_or(op(BASE, 0), |(&o, &p)| op(o, p));
            assert_eq!(idx.lookup(target), want, "target {target}");
        }
    }

    #[test]
    fn random_lookup_test() {
        random_lookups(30);
        random_lookups(3000); // past the 1024-entry warm section: both halves searched
    }

    #[test]
    fn lookup_extreme_cases() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        assert_eq!(idx.lookup(BASE), op(BASE, 0), "lookup on empty file");
        for i in 0..30 {
            idx.append(BASE + i + 1, i as u32).unwrap();
        }
        assert_eq!(idx.lookup(BASE), op(BASE, 0));
        assert_eq!(idx.lookup(BASE + 30), op(BASE + 30, 29));
        assert_eq!(idx.lookup(i64::MAX), op(BASE + 30, 29));
        assert_eq!(idx.lookup(i64::MIN), op(BASE, 0));
    }

    #[test]
    fn test_entry_and_entry_overflow() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        assert!(illegal(idx.entry(0)));
        for i in 0..30 {
            idx.append(BASE + i, i as u32).unwrap();
        }
        for i in 0..30 {
            assert_eq!(idx.entry(i).unwrap(), op(BASE + i as i64, i as u32));
        }
        assert!(illegal(idx.entry(30)));
    }

    #[test]
    fn append_too_many() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        for i in 0..30 {
            idx.append(BASE + i + 1, i as u32).unwrap();
        }
        assert!(idx.is_full());
        let err = idx.append(BASE + 31, 1).unwrap_err();
        assert!(matches!(&err, Error::IllegalState { reason } if reason.contains(".index")), "{err}");
    }

    #[test]
    fn append_out_of_order_and_out_of_range() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        let max = BASE + i64::from(i32::MAX);
        assert!(overflow(idx.append(BASE - 1, 0), 44));
        assert!(idx.can_append_offset(max) && !idx.can_append_offset(max + 1));
        assert!(overflow(idx.append(max + 1, 0), max + 1));
        assert!(illegal(idx.append(BASE, 1 << 31)), "position > i32::MAX");
        idx.append(51, 0).unwrap();
        assert!(invalid_offset(idx.append(50, 1)));
        assert!(invalid_offset(idx.append(51, 1)));
        idx.append(max, 7).unwrap();
        assert_eq!((idx.entries(), idx.lookup(i64::MAX)), (2, op(max, 7)));
    }

    #[test]
    fn test_fetch_upper_bound_offset() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        let entries = [(0, 0), (1, 10), (2, 23), (3, 37)].map(|(d, p)| op(BASE + d, p));
        let [first, second, third, fourth] = entries;
        assert_eq!(idx.fetch_upper_bound_offset(first, 5), None);
        for e in entries {
            idx.append(e.offset, e.position).unwrap();
        }
        assert_eq!(idx.fetch_upper_bound_offset(first, 5), Some(second));
        assert_eq!(idx.fetch_upper_bound_offset(first, 10), Some(second));
        assert_eq!(idx.fetch_upper_bound_offset(first, 23), Some(third));
        assert_eq!(idx.fetch_upper_bound_offset(first, 22), Some(third));
        assert_eq!(idx.fetch_upper_bound_offset(second, 24), Some(fourth));
        assert_eq!(idx.fetch_upper_bound_offset(fourth, 1), None);
        assert_eq!(idx.fetch_upper_bound_offset(first, 200), None);
        assert_eq!(idx.fetch_upper_bound_offset(second, 200), None);
        assert_eq!(idx.fetch_upper_bound_offset(op(0, u32::MAX), u32::MAX), None);
        // Kafka's quirk: a target equal to the first entry's position skips it.
        assert_eq!(idx.fetch_upper_bound_offset(first, 0), Some(second));
    }

    #[test]
    fn test_reopen() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 30);
        let path = idx.path().to_path_buf();
        idx.append(51, 0).unwrap();
        idx.append(52, 1).unwrap();
        idx.close().unwrap();
        let rw = OffsetIndex::open(&path, BASE, 30 * 8).unwrap();
        for mut reopened in [rw, OffsetIndex::open_read_only(&path, BASE).unwrap()] {
            assert_eq!((reopened.lookup(51), reopened.lookup(52)), (op(51, 0), op(52, 1)));
            assert_eq!((reopened.last_offset(), reopened.entries()), (52, 2));
            // A trimmed file is full (read-write) or read-only: either way IllegalState.
            assert!(illegal(reopened.append(53, 1)));
        }
    }

    #[test]
    fn truncate() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, 0, 10);
        idx.truncate().unwrap();
        for i in 1..10 {
            idx.append(i, i as u32).unwrap();
        }
        idx.truncate_to(12).unwrap();
        assert_eq!((idx.lookup(10), idx.last_offset()), (op(9, 9), 9), "past the end: unchanged");
        idx.append(10, 10).unwrap();
        idx.truncate_to(10).unwrap();
        assert_eq!((idx.lookup(10), idx.last_offset()), (op(9, 9), 9), "exact: drops that entry");
        idx.append(10, 10).unwrap();
        idx.truncate_to(9).unwrap();
        assert_eq!((idx.lookup(10), idx.last_offset()), (op(8, 8), 8), "drops the last entry");
        idx.append(9, 9).unwrap();
        idx.truncate_to(5).unwrap();
        assert_eq!((idx.lookup(10), idx.last_offset()), (op(4, 4), 4));
        idx.append(5, 5).unwrap();
        idx.truncate_to(-3).unwrap();
        assert_eq!((idx.entries(), idx.last_offset()), (0, 0), "below every entry: none left");
    }

    #[test]
    fn test_sanity_last_offset_equal_to_base_offset() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, 20, 10);
        idx.append(20, 0).unwrap();
        idx.sanity_check().unwrap();
    }

    #[test]
    fn sanity_check_finds_corruption() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("corrupt.index");
        std::fs::write(&path, [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 9]).unwrap();
        let idx = OffsetIndex::open(&path, 100, 80).unwrap();
        assert_eq!(idx.last_offset(), 99);
        assert!(matches!(idx.sanity_check(), Err(Error::CorruptIndex { file, .. }) if file == path));
        std::fs::write(&path, [0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 2]).unwrap();
        let idx = OffsetIndex::open(&path, 100, 80).unwrap();
        assert_eq!(idx.entries(), 1);
        assert!(matches!(idx.sanity_check(), Err(Error::CorruptIndex { .. })), "length % 8");
    }

    #[test]
    fn on_disk_bytes_are_big_endian() {
        let dir = TempDir::new().unwrap();
        let mut idx = OffsetIndex::open(dir.path().join("a.index"), 1000, 80).unwrap();
        idx.append(1000 + 0x0102, 0x0A0B_0C0D).unwrap();
        idx.append(1000 + 0x0001_0203, 0x7F00_0001).unwrap();
        let path = idx.path().to_path_buf();
        idx.close().unwrap();
        assert_eq!(hex(&path), "000001020a0b0c0d000102037f000001");
    }

    #[test]
    fn read_only_open_of_a_preallocated_file_finds_the_live_entries() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 100);
        let path = idx.path().to_path_buf();
        let ro = OffsetIndex::open_read_only(&path, BASE).unwrap();
        assert_eq!((ro.entries(), ro.lookup(50)), (0, op(BASE, 0)), "zero-filled: empty");
        for i in 0..3u32 {
            idx.append(BASE + 10 * i64::from(i), 100 * i).unwrap();
        }
        idx.flush().unwrap();
        drop(idx);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 800, "flush and drop never trim");
        let mut ro = OffsetIndex::open_read_only(&path, BASE).unwrap();
        assert_eq!((ro.entries(), ro.last_offset()), (3, BASE + 20));
        assert_eq!(ro.lookup(BASE + 15), op(BASE + 10, 100));
        assert_eq!(ro.lookup(BASE + 1000), op(BASE + 20, 200));
        ro.sanity_check().unwrap();
        let err = ro.append(BASE + 30, 300).unwrap_err();
        assert!(matches!(&err, Error::IllegalState { reason } if reason.contains(".index")), "{err}");
        assert!(illegal(ro.trim_to_valid_size()) && illegal(ro.resize(80)) && illegal(ro.reset()));
        ro.close().unwrap();
        let missing = dir.path().join("missing.index");
        assert_eq!(OffsetIndex::open_read_only(&missing, BASE).unwrap().entries(), 0);
        assert!(!missing.exists(), "a read-only open creates nothing");
        // Kafka's read-write open assumes a trimmed file: every slot counts.
        assert_eq!(OffsetIndex::open(&path, BASE, 4096).unwrap().entries(), 100);
    }

    #[test]
    fn preallocation_rounds_down_to_whole_entries() {
        let dir = TempDir::new().unwrap();
        let idx = OffsetIndex::open(dir.path().join("a.index"), 0, 1001).unwrap();
        assert_eq!((idx.file_len(), idx.max_entries(), idx.entries()), (1000, 125, 0));
        assert_eq!(std::fs::metadata(idx.path()).unwrap().len(), 1000);
        let small = dir.path().join("b.index");
        assert!(illegal(OffsetIndex::open(&small, 0, 7)));
        assert!(!small.exists(), "a failed create leaves no file behind");
    }

    #[test]
    fn resize_reset_trim_rename_delete() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir, BASE, 10);
        assert!(!idx.resize(80).unwrap());
        assert!(idx.resize(163).unwrap());
        assert_eq!((idx.max_entries(), idx.file_len()), (20, 160));
        for i in 0..5 {
            idx.append(BASE + i, i as u32 * 10).unwrap();
        }
        assert!(illegal(idx.resize(32)), "live entries must fit");
        idx.trim_to_valid_size().unwrap();
        assert_eq!((idx.file_len(), idx.size_in_bytes(), idx.max_entries()), (40, 40, 5));
        assert!(idx.is_full());
        assert_eq!(idx.lookup(BASE + 3), op(BASE + 3, 30), "entries survive the remap");
        let renamed = dir.path().join("renamed.index");
        idx.rename_to(&renamed).unwrap();
        assert_eq!(idx.path(), renamed.as_path());
        idx.reset().unwrap();
        assert_eq!((idx.entries(), idx.file_len(), idx.last_offset()), (0, 80, BASE));
        idx.append(BASE + 7, 0).unwrap();
        assert!(idx.delete_if_exists().unwrap());
        assert!(!renamed.exists() && !idx.delete_if_exists().unwrap());
        assert_eq!((idx.entries(), idx.lookup(BASE + 9)), (0, op(BASE, 0)));
        assert!(illegal(idx.append(BASE + 8, 1)));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Append(i64, u32),
        TruncateTo(i64),
        Lookup(i64),
        Fetch(u32, u32),
        Reopen,
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (1i64..20, 1u32..50).prop_map(|(d, p)| Op::Append(d, p)),
            1 => (0i64..400).prop_map(Op::TruncateTo),
            3 => (0i64..400).prop_map(Op::Lookup),
            2 => (0u32..3000, 0u32..500).prop_map(|(p, s)| Op::Fetch(p, s)),
            1 => Just(Op::Reopen),
        ]
    }

    /// Kafka's upper-bound answer on the model, quirk included.
    fn upper_bound(model: &[(i64, u32)], target: i64) -> Option<OffsetPosition> {
        let mut slot = model.iter().position(|&(_, q)| i64::from(q) >= target);
        if model.first().is_some_and(|&(_, q)| i64::from(q) == target) {
            slot = (model.len() > 1).then_some(1);
        }
        slot.map(|n| op(model[n].0, model[n].1))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..crate::util::proptest_config() })]
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(op_strategy(), 1..120)) {
            let dir = TempDir::new().unwrap();
            let path = dir.path().join("p.index");
            let mut idx = OffsetIndex::open(&path, 10, 40 * 8).unwrap();
            let mut model: Vec<(i64, u32)> = Vec::new();
            for step in ops {
                match step {
                    Op::Append(d, p) => {
                        let (o, pos) = model.last().map_or((9 + d, p), |&(o, q)| (o + d, q + p));
                        let result = idx.append(o, pos);
                        if model.len() == 40 {
                            prop_assert!(illegal(result));
                        } else {
                            result.unwrap();
                            model.push((o, pos));
                        }
                    }
                    Op::TruncateTo(t) => {
                        idx.truncate_to(t).unwrap();
                        model.retain(|&(o, _)| o < t);
                    }
                    Op::Lookup(t) => {
                        let floor = model.iter().rev().find(|&&(o, _)| o <= t);
                        prop_assert_eq!(idx.lookup(t), floor.map_or(op(10, 0), |&(o, p)| op(o, p)));
                    }
                    Op::Fetch(p, s) => {
                        let want = upper_bound(&model, i64::from(p) + i64::from(s));
                        prop_assert_eq!(idx.fetch_upper_bound_offset(op(0, p), s), want);
                    }
                    Op::Reopen => {
                        idx.close().unwrap();
                        idx = OffsetIndex::open(&path, 10, 40 * 8).unwrap();
                        idx.resize(40 * 8).unwrap();
                    }
                }
                prop_assert_eq!(idx.entries(), model.len());
                prop_assert_eq!(idx.last_offset(), model.last().map_or(10, |&(o, _)| o));
            }
            idx.flush().unwrap();
            // Dropped slots are zeroed, so a read-only reader sees exactly the live entries.
            let ro = OffsetIndex::open_read_only(&path, 10).unwrap();
            prop_assert_eq!(ro.entries(), model.len());
            for (n, &(o, p)) in model.iter().enumerate() {
                prop_assert_eq!(ro.entry(n).unwrap(), op(o, p));
            }
        }
    }
}
