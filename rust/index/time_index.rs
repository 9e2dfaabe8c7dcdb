//! The time index (`<base offset>.timeindex`): Kafka's `TimeIndex`.
//!
//! A sparse map from timestamps to offsets. Each 12-byte entry is a big-endian `int64`
//! timestamp, then a big-endian `int32` offset relative to the segment's base offset. Entry
//! `(T, O)` means: the largest timestamp among the records before or at offset `O` is `T`.
//! Timestamps strictly increase; offsets never decrease.

use std::path::{Path, PathBuf};

use super::{common_index_api, read_i32, read_i64, AbstractIndex, Bound, PreparedIndex};
use crate::error::{Error, Result};

const ENTRY_SIZE: usize = 12;

/// Kafka's `RecordBatch.NO_TIMESTAMP`.
const NO_TIMESTAMP: i64 = -1;

/// A timestamp and an offset (Kafka's `TimestampOffset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimestampOffset {
    /// Milliseconds since the epoch, or -1 (no timestamp).
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// A segment's time index (mirrors Kafka's `TimeIndex` and `AbstractIndex`).
///
/// The last slot is reserved for the entry written at roll or close (`skip_full_check`), so
/// the index is full one entry early. Not thread-safe; the owning `LogSegment` serialises
/// access. Lookups take `&self`.
#[derive(Debug)]
pub struct TimeIndex {
    inner: AbstractIndex,
    /// The last entry, or `(-1, base_offset)` when empty.
    last_entry: TimestampOffset,
}

impl TimeIndex {
    /// Bytes per entry.
    pub const ENTRY_SIZE: usize = ENTRY_SIZE;

    /// Opens `path` read-write, creating it if missing. A new file is preallocated to
    /// `max_index_size` rounded down to a multiple of 12 and has no entries; an existing file
    /// keeps its length and is assumed trimmed (entries = length / 12), as in Kafka.
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

    /// Opens `path` for reading only, without mapping it (see `OffsetIndex::open_read_only`).
    /// Entries are the longest prefix Kafka's `maybe_append` could have written after
    /// `(-1, base_offset)`: timestamps strictly increasing, offsets >= base and never
    /// decreasing. A missing file gives an empty index. Writes fail with `IllegalState`.
    ///
    /// # Errors
    /// `Io` if the file exists but cannot be read.
    pub fn open_read_only(path: impl Into<PathBuf>, base_offset: i64) -> Result<Self> {
        let mut last = (NO_TIMESTAMP, 0i32);
        let accept = move |entry: &[u8]| {
            let (timestamp, relative) = (read_i64(entry, 0), read_i32(entry, 8));
            let ok = timestamp > last.0 && relative >= last.1;
            if ok {
                last = (timestamp, relative);
            }
            ok
        };
        let inner = AbstractIndex::open_read_only(path.into(), base_offset, ENTRY_SIZE, accept)?;
        Ok(Self::with_inner(inner))
    }

    /// The index over `inner`, its entries as the file holds them (`index::lazy` builds one
    /// from a file created ahead).
    pub(super) fn with_inner(inner: AbstractIndex) -> Self {
        let last_entry = TimestampOffset { timestamp: NO_TIMESTAMP, offset: inner.base_offset() };
        let mut index = TimeIndex { inner, last_entry };
        index.truncate_to_entries(index.inner.entries());
        index
    }

    #[inline]
    fn timestamp_at(buf: &[u8], n: usize) -> i64 {
        read_i64(buf, n * ENTRY_SIZE)
    }

    #[inline]
    fn offset_at(&self, buf: &[u8], n: usize) -> i64 {
        self.inner.base_offset() + i64::from(read_i32(buf, n * ENTRY_SIZE + 8))
    }

    #[inline]
    fn parse_entry(&self, n: usize) -> TimestampOffset {
        let buf = self.inner.bytes();
        TimestampOffset { timestamp: Self::timestamp_at(buf, n), offset: self.offset_at(buf, n) }
    }

    /// The entry with the largest timestamp <= `target_timestamp`, or `(-1, base_offset)` if
    /// there is none (Kafka's `lookup`).
    #[must_use]
    pub fn lookup(&self, target_timestamp: i64) -> TimestampOffset {
        let buf = self.inner.bytes();
        let slot = self.inner.search(target_timestamp, Bound::LargestLower, |n| Self::timestamp_at(buf, n));
        match slot {
            Some(n) => self.parse_entry(n),
            None => TimestampOffset { timestamp: NO_TIMESTAMP, offset: self.inner.base_offset() },
        }
    }

    /// Entry `n` (Kafka's `entry`).
    ///
    /// # Errors
    /// `IllegalState` if `n >= entries()`.
    pub fn entry(&self, n: usize) -> Result<TimestampOffset> {
        if n < self.inner.entries() {
            Ok(self.parse_entry(n))
        } else {
            Err(self.inner.no_such_entry(n))
        }
    }

    /// The last entry, or `(-1, base_offset)` when empty.
    #[must_use]
    pub fn last_entry(&self) -> TimestampOffset {
        self.last_entry
    }

    /// Kafka's `maybeAppend`: appends `(timestamp, offset)` if `timestamp` is larger than the
    /// last entry's (on an empty index, larger than -1); an equal timestamp is ignored, which
    /// lets roll and close repeat the last entry. `skip_full_check` lets the roll/close entry
    /// use the reserved last slot.
    ///
    /// # Errors
    /// `IllegalState` if read-only, full (unless `skip_full_check`; a truly full file always
    /// fails) or `timestamp` < the last timestamp; `InvalidOffset` if `offset` < the last
    /// offset; `OffsetOverflow` if `offset - base_offset` is outside `[0, i32::MAX]`.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64, skip_full_check: bool) -> Result<()> {
        self.inner.check_writable()?;
        if !skip_full_check && self.is_full() {
            return Err(self.inner.full());
        }
        let (entries, last) = (self.inner.entries(), self.last_entry);
        if entries != 0 && offset < last.offset {
            return Err(Error::invalid_offset(format!(
                "attempt to append offset {offset} to slot {entries} of {}, smaller than the last \
                 offset appended ({})",
                self.inner.path().display(),
                last.offset
            )));
        }
        if entries != 0 && timestamp < last.timestamp {
            return Err(Error::illegal_state(format!(
                "attempt to append timestamp {timestamp} to slot {entries} of {}, smaller than \
                 the last timestamp appended ({})",
                self.inner.path().display(),
                last.timestamp
            )));
        }
        if timestamp > last.timestamp {
            let relative = self.inner.relative_offset(offset)?;
            let mut entry = [0u8; ENTRY_SIZE];
            entry[..8].copy_from_slice(&timestamp.to_be_bytes());
            entry[8..].copy_from_slice(&relative.to_be_bytes());
            self.inner.push_entry(&entry)?;
            self.last_entry = TimestampOffset { timestamp, offset };
        }
        Ok(())
    }

    /// Removes every entry whose offset is >= `offset` (Kafka's `truncateTo`, searching by the
    /// entries' offsets). The file keeps its length. As in Kafka, when several entries share
    /// the offset `offset`, the search stops at the first one it probes, so earlier entries
    /// with that offset may survive.
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
        self.last_entry = TimestampOffset { timestamp: NO_TIMESTAMP, offset: self.inner.base_offset() };
        result
    }

    fn truncate_to_entries(&mut self, entries: usize) {
        self.inner.truncate_to_entries(entries);
        let entries = self.inner.entries();
        self.last_entry = if entries == 0 {
            TimestampOffset { timestamp: NO_TIMESTAMP, offset: self.inner.base_offset() }
        } else {
            self.parse_entry(entries - 1)
        };
    }

    /// Whether only the reserved last slot (or none) is free: `entries >= max_entries - 1`.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.inner.entries() + 1 >= self.inner.max_entries()
    }

    /// Kafka's `sanityCheck`: the last timestamp must not be below the first, the last offset
    /// must not be below the base offset, and the file length must be a multiple of 12.
    ///
    /// # Errors
    /// `CorruptIndex` naming the file and the failed rule.
    pub fn sanity_check(&self) -> Result<()> {
        let last = self.last_entry;
        if self.inner.entries() != 0 {
            let first_timestamp = Self::timestamp_at(self.inner.bytes(), 0);
            if last.timestamp < first_timestamp {
                return Err(self.inner.corrupt(format!(
                    "has {} entries but the last timestamp {} is less than the first timestamp \
                     {first_timestamp}",
                    self.inner.entries(),
                    last.timestamp
                )));
            }
            if last.offset < self.inner.base_offset() {
                return Err(self.inner.corrupt(format!(
                    "has {} entries but the last offset {} is less than the base offset {}",
                    self.inner.entries(),
                    last.offset,
                    self.inner.base_offset()
                )));
            }
        }
        self.inner.check_length()
    }

    common_index_api!();
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use tempfile::TempDir;

    use super::{TimeIndex, TimestampOffset};
    use crate::error::Error;

    fn illegal<T>(result: crate::error::Result<T>) -> bool {
        matches!(result.err(), Some(Error::IllegalState { .. }))
    }

    fn invalid_offset<T>(result: crate::error::Result<T>) -> bool {
        matches!(result.err(), Some(Error::InvalidOffset { .. }))
    }

    fn corrupt_index<T>(result: crate::error::Result<T>) -> bool {
        matches!(result.err(), Some(Error::CorruptIndex { .. }))
    }

    /// The file's bytes as lowercase hex.
    fn hex(path: &std::path::Path) -> String {
        let bytes = std::fs::read(path).unwrap();
        bytes.iter().fold(String::new(), |mut hex, b| {
            write!(hex, "{b:02x}").unwrap();
            hex
        })
    }

    const BASE: i64 = 45;
    const MAX_ENTRIES: usize = 30;

    fn ts(timestamp: i64, offset: i64) -> TimestampOffset {
        TimestampOffset { timestamp, offset }
    }

    fn fresh(dir: &TempDir) -> TimeIndex {
        let path = dir.path().join("00000000000000000045.timeindex");
        TimeIndex::open(path, BASE, MAX_ENTRIES * 12).unwrap()
    }

    fn append_entries(idx: &mut TimeIndex, n: i64) {
        for i in 1..=n {
            idx.maybe_append(i * 10, i * 10 + BASE, false).unwrap();
        }
    }

    #[test]
    fn test_look_up() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        assert_eq!(idx.lookup(100), ts(-1, BASE), "empty time index");
        append_entries(&mut idx, MAX_ENTRIES as i64 - 1);
        assert_eq!(idx.lookup(9), ts(-1, BASE), "before the earliest entry");
        assert_eq!(idx.lookup(25), ts(20, 65), "between two entries");
        assert_eq!(idx.lookup(30), ts(30, 75), "exact timestamp");
        assert_eq!(idx.lookup(i64::MAX), ts(290, 335));
    }

    #[test]
    fn lookups_past_the_warm_section_match_a_model() {
        let dir = TempDir::new().unwrap();
        let mut idx = TimeIndex::open(dir.path().join("big.timeindex"), 0, 2000 * 12).unwrap();
        // 682 warm entries: 1999 entries put most of them in the cold section.
        for i in 0..1999 {
            idx.maybe_append(1000 + 3 * i, 2 * i, false).unwrap();
        }
        for target in 990..1000 + 3 * 1999 + 5 {
            let want = if target < 1000 {
                ts(-1, 0)
            } else {
                let i = ((target - 1000) / 3).min(1998);
                ts(1000 + 3 * i, 2 * i)
            };
            assert_eq!(idx.lookup(target), want, "target {target}");
        }
    }

    #[test]
    fn test_entry_and_entry_overflow() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        assert!(illegal(idx.entry(0)));
        append_entries(&mut idx, MAX_ENTRIES as i64 - 1);
        assert_eq!(idx.entry(0).unwrap(), ts(10, 55));
        assert_eq!(idx.entry(1).unwrap(), ts(20, 65));
        assert_eq!(idx.entry(2).unwrap(), ts(30, 75));
        assert_eq!(idx.entry(3).unwrap(), ts(40, 85));
        assert!(illegal(idx.entry(MAX_ENTRIES - 1)));
    }

    #[test]
    fn test_truncate() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        append_entries(&mut idx, MAX_ENTRIES as i64 - 1);
        idx.truncate().unwrap();
        assert_eq!(idx.entries(), 0);
        append_entries(&mut idx, MAX_ENTRIES as i64 - 1);
        idx.truncate_to(10 + BASE).unwrap();
        assert_eq!(idx.entries(), 0);
        append_entries(&mut idx, 5);
        idx.truncate_to(BASE + 31).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (3, ts(30, BASE + 30)));
        idx.truncate_to(BASE + 30).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (2, ts(20, BASE + 20)), "exact: dropped");
        idx.truncate_to(BASE + 1000).unwrap();
        assert_eq!(idx.entries(), 2, "past the end changes nothing");
    }

    #[test]
    fn truncate_searches_by_offset_with_repeated_offsets() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        for (t, o) in [(10, 50), (20, 60), (30, 60), (40, 60), (50, 70)] {
            idx.maybe_append(t, o, false).unwrap();
        }
        idx.truncate_to(65).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (4, ts(40, 60)));
        idx.truncate_to(60).unwrap();
        // Kafka's search stops at the first entry with offset 60 it probes (slot 2), so
        // (20, 60) survives: bug-for-bug with TimeIndex.truncateTo.
        assert_eq!((idx.entries(), idx.last_entry()), (2, ts(20, 60)));
        idx.truncate_to(60).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (1, ts(10, 50)));
    }

    #[test]
    fn test_append() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        append_entries(&mut idx, MAX_ENTRIES as i64 - 1);
        assert!(illegal(idx.maybe_append(10_000, 1000, false)));
        let below_last = (MAX_ENTRIES as i64 - 2) * 10;
        assert!(invalid_offset(idx.maybe_append(10_000, below_last, true)));
        idx.maybe_append(10_000, 1000, true).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (MAX_ENTRIES, ts(10_000, 1000)));
        // No slot is left, even with skip_full_check.
        let err = idx.maybe_append(10_001, 1001, true).unwrap_err();
        assert!(matches!(&err, Error::IllegalState { reason } if reason.contains(".timeindex")));
    }

    #[test]
    fn maybe_append_monotonic_rules() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        idx.maybe_append(-1, BASE, false).unwrap();
        assert_eq!(idx.entries(), 0, "no timestamp (-1) is never indexed");
        idx.maybe_append(0, BASE, false).unwrap();
        idx.maybe_append(100, BASE + 5, false).unwrap();
        idx.maybe_append(100, BASE + 9, false).unwrap();
        assert_eq!((idx.entries(), idx.last_entry()), (2, ts(100, BASE + 5)), "equal ts: ignored");
        assert!(invalid_offset(idx.maybe_append(200, BASE + 4, false)));
        assert!(illegal(idx.maybe_append(99, BASE + 6, false)));
        idx.maybe_append(101, BASE + 5, false).unwrap();
        let too_far = BASE + i64::from(i32::MAX) + 1;
        let overflow = idx.maybe_append(102, too_far, false).unwrap_err();
        assert!(matches!(overflow, Error::OffsetOverflow { .. }));
        assert_eq!(idx.entries(), 3);
    }

    #[test]
    fn test_sanity_check() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        idx.sanity_check().unwrap();
        append_entries(&mut idx, 5);
        idx.sanity_check().unwrap();
        let path = idx.path().to_path_buf();
        idx.close().unwrap();
        let reopened = TimeIndex::open(&path, BASE, MAX_ENTRIES * 12).unwrap();
        reopened.sanity_check().unwrap();

        let file = |name: &str, entries: &[(i64, i32)], extra: usize| {
            let mut bytes: Vec<u8> = Vec::new();
            for (t, r) in entries {
                bytes.extend_from_slice(&t.to_be_bytes());
                bytes.extend_from_slice(&r.to_be_bytes());
            }
            bytes.resize(bytes.len() + extra, 0);
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            TimeIndex::open(path, BASE, 0).unwrap()
        };
        let corrupt = |idx: TimeIndex| corrupt_index(idx.sanity_check());
        assert!(corrupt(file("offset", &[(10, 0), (20, -1)], 0)), "last offset < base");
        assert!(corrupt(file("timestamp", &[(10, 0), (5, 1)], 0)), "last ts < first");
        assert!(corrupt(file("length", &[(10, 0), (20, 1)], 1)), "length % 12");
        file("good", &[(10, 0), (20, 1)], 0).sanity_check().unwrap();
    }

    #[test]
    fn test_is_full() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        assert!(!idx.is_full());
        append_entries(&mut idx, MAX_ENTRIES as i64 - 2);
        assert!(!idx.is_full());
        idx.maybe_append(290, 335, false).unwrap();
        assert!(idx.is_full(), "the last slot is reserved");
        assert_eq!(idx.entries(), MAX_ENTRIES - 1);
    }

    #[test]
    fn test_resize() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        assert!(!idx.resize(MAX_ENTRIES * TimeIndex::ENTRY_SIZE).unwrap());
        assert!(idx.resize(MAX_ENTRIES / 2 * TimeIndex::ENTRY_SIZE).unwrap());
        assert_eq!(idx.max_entries(), MAX_ENTRIES / 2);
        assert!(idx.resize(MAX_ENTRIES * 2 * TimeIndex::ENTRY_SIZE).unwrap());
        assert_eq!(idx.max_entries(), MAX_ENTRIES * 2);
        append_entries(&mut idx, 3);
        idx.trim_to_valid_size().unwrap();
        assert_eq!((idx.file_len(), idx.last_entry()), (36, ts(30, BASE + 30)));
        idx.reset().unwrap();
        let state = (idx.entries(), idx.file_len(), idx.last_entry());
        assert_eq!(state, (0, 360, ts(-1, BASE)));
    }

    #[test]
    fn test_entry_size_parse_entry_and_last_entry() {
        assert_eq!(TimeIndex::ENTRY_SIZE, 12);
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        assert_eq!(idx.last_entry(), ts(-1, BASE));
        idx.maybe_append(1, 1 + BASE, false).unwrap();
        assert_eq!(idx.last_entry(), ts(1, BASE + 1));
        assert_eq!(idx.entry(0).unwrap(), ts(1, BASE + 1));
        assert_eq!(idx.size_in_bytes(), 12);
    }

    #[test]
    fn on_disk_bytes_are_big_endian() {
        let dir = TempDir::new().unwrap();
        let mut idx = TimeIndex::open(dir.path().join("a.timeindex"), 7, 120).unwrap();
        idx.maybe_append(0x0102_0304_0506_0708, 7 + 0x090A_0B0C, false).unwrap();
        let path = idx.path().to_path_buf();
        idx.close().unwrap();
        assert_eq!(hex(&path), "0102030405060708090a0b0c");
    }

    #[test]
    fn preallocation_rounds_down_to_whole_entries() {
        let dir = TempDir::new().unwrap();
        let idx = TimeIndex::open(dir.path().join("a.timeindex"), 0, 1001).unwrap();
        assert_eq!((idx.file_len(), idx.max_entries()), (996, 83));
        assert_eq!(std::fs::metadata(idx.path()).unwrap().len(), 996);
        assert!(illegal(TimeIndex::open(dir.path().join("b"), 0, 11)));
    }

    #[test]
    fn read_only_open_of_a_preallocated_file_finds_the_live_entries() {
        let dir = TempDir::new().unwrap();
        let mut idx = fresh(&dir);
        let path = idx.path().to_path_buf();
        assert_eq!(TimeIndex::open_read_only(&path, BASE).unwrap().entries(), 0);
        idx.maybe_append(0, BASE, false).unwrap();
        idx.maybe_append(5, BASE + 3, false).unwrap();
        idx.maybe_append(9, BASE + 3, false).unwrap();
        idx.maybe_append(12, BASE + 8, false).unwrap();
        idx.truncate_to(BASE + 8).unwrap();
        let mut ro = TimeIndex::open_read_only(&path, BASE).unwrap();
        // The dropped slot was zeroed, which ends the scan.
        assert_eq!((ro.entries(), ro.last_entry()), (3, ts(9, BASE + 3)));
        assert_eq!(ro.lookup(7), ts(5, BASE + 3));
        assert_eq!(ro.lookup(0), ts(0, BASE), "a real (0, base) first entry is kept");
        ro.sanity_check().unwrap();
        assert!(illegal(ro.maybe_append(20, BASE + 9, true)));
        assert!(illegal(ro.truncate_to(BASE + 3)) && illegal(ro.truncate()));
        assert_eq!(ro.entries(), 3);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Append(i64, i64),
        TruncateTo(i64),
        Lookup(i64),
    }

    fn op_strategy() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0i64..4, 1i64..6).prop_map(|(t, o)| Op::Append(t, o)),
            1 => (0i64..200).prop_map(Op::TruncateTo),
            3 => (-2i64..100).prop_map(Op::Lookup),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 64, ..crate::util::proptest_config() })]
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(op_strategy(), 1..100)) {
            let dir = TempDir::new().unwrap();
            let path = dir.path().join("p.timeindex");
            let mut idx = TimeIndex::open(&path, 0, 41 * 12).unwrap();
            // Strictly increasing offsets, so truncation has one right answer.
            let mut model: Vec<(i64, i64)> = Vec::new();
            let mut next_offset = 0;
            for op in ops {
                match op {
                    Op::Append(dt, doff) => {
                        let last_ts = model.last().map_or(-1, |e| e.0);
                        let t = last_ts + dt;
                        next_offset = next_offset.max(model.last().map_or(0, |e| e.1)) + doff;
                        let result = idx.maybe_append(t, next_offset, false);
                        if model.len() == 40 {
                            proptest::prop_assert!(result.is_err());
                        } else {
                            result.unwrap();
                            if t > last_ts {
                                model.push((t, next_offset));
                            }
                        }
                    }
                    Op::TruncateTo(o) => {
                        idx.truncate_to(o).unwrap();
                        model.retain(|e| e.1 < o);
                    }
                    Op::Lookup(t) => {
                        let want = model.iter().rev().find(|e| e.0 <= t).map_or(ts(-1, 0), |e| ts(e.0, e.1));
                        proptest::prop_assert_eq!(idx.lookup(t), want);
                    }
                }
                proptest::prop_assert_eq!(idx.entries(), model.len());
                let last = model.last().map_or(ts(-1, 0), |e| ts(e.0, e.1));
                proptest::prop_assert_eq!(idx.last_entry(), last);
            }
            let ro = TimeIndex::open_read_only(&path, 0).unwrap();
            let live = if model.first() == Some(&(0, 0)) && model.len() == 1 { 0 } else { model.len() };
            proptest::prop_assert_eq!(ro.entries(), live);
        }
    }
}
