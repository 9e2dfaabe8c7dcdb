//! A segment's offset and time indexes rebuilt in memory by recovery, then written to their
//! files once, at their final size (Kafka's `LogSegment.recover` appends to the mapped indexes
//! it has just reset to full size, then trims them: a map, a resize, a trim and their `munmap`s
//! per index and segment).
//!
//! [`IndexRebuild`] takes the same appends, in the same order, with the same checks and errors
//! as [`OffsetIndex::append`](super::OffsetIndex::append) and
//! [`TimeIndex::maybe_append`](super::TimeIndex::maybe_append) on an index reset to
//! `max_index_size`, so the bytes written are the bytes those would leave after
//! `trimToValidSize`.
//!
//! Thread-safety: a plain value owned by one recovery.

use std::path::{Path, PathBuf};

use super::offset_index::OffsetIndex;
use super::time_index::{TimeIndex, TimestampOffset};
use crate::error::{Error, Result};

/// The offset and time index entries of one segment being recovered. Mirrors the appends of
/// Kafka's `LogSegment.recover` (no Kafka class of its own).
#[derive(Debug)]
pub struct IndexRebuild {
    base_offset: i64,
    offset_path: PathBuf,
    time_path: PathBuf,
    offset_bytes: Vec<u8>,
    time_bytes: Vec<u8>,
    max_offset_entries: usize,
    max_time_entries: usize,
    /// The last offset entry's offset (the base offset when empty).
    last_offset: i64,
    /// The last time entry, or `(-1, base_offset)` when empty.
    last_time: TimestampOffset,
}

impl IndexRebuild {
    /// Empty indexes for the segment at `base_offset`, with room for `max_index_size` bytes of
    /// entries each (`segment.index.bytes`, as `reset` gives them); the paths are for errors.
    #[must_use]
    pub fn new(base_offset: i64, max_index_size: usize, offset_path: PathBuf, time_path: PathBuf) -> Self {
        IndexRebuild {
            base_offset,
            offset_path,
            time_path,
            offset_bytes: Vec::new(),
            time_bytes: Vec::new(),
            max_offset_entries: max_index_size / OffsetIndex::ENTRY_SIZE,
            max_time_entries: max_index_size / TimeIndex::ENTRY_SIZE,
            last_offset: base_offset,
            last_time: TimestampOffset { timestamp: -1, offset: base_offset },
        }
    }

    fn relative(&self, offset: i64) -> Result<i32> {
        offset
            .checked_sub(self.base_offset)
            .and_then(|r| i32::try_from(r).ok())
            .filter(|r| *r >= 0)
            .ok_or(Error::OffsetOverflow { base_offset: self.base_offset, offset })
    }

    fn full(path: &Path, entries: usize, max: usize) -> Error {
        Error::illegal_state(format!(
            "attempt to append to a full index {} ({entries} of {max} entries)",
            path.display()
        ))
    }

    /// `OffsetIndex::append(offset, position)`.
    ///
    /// # Errors
    /// As `OffsetIndex::append`: `IllegalState` when full or the position exceeds `i32::MAX`,
    /// `InvalidOffset` when `offset` does not grow, `OffsetOverflow` when it does not fit.
    pub fn append_offset(&mut self, offset: i64, position: u64) -> Result<()> {
        let entries = self.offset_bytes.len() / OffsetIndex::ENTRY_SIZE;
        if entries >= self.max_offset_entries {
            return Err(Self::full(&self.offset_path, entries, self.max_offset_entries));
        }
        if entries != 0 && offset <= self.last_offset {
            return Err(Error::invalid_offset(format!(
                "attempt to append offset {offset} to slot {entries} of {}, no larger than the last offset \
                 appended ({})",
                self.offset_path.display(),
                self.last_offset
            )));
        }
        let relative = self.relative(offset)?;
        let position = i32::try_from(position).map_err(|_| {
            Error::illegal_state(format!(
                "position {position} for offset {offset} in {} does not fit in an int32",
                self.offset_path.display()
            ))
        })?;
        self.offset_bytes.extend_from_slice(&relative.to_be_bytes());
        self.offset_bytes.extend_from_slice(&position.to_be_bytes());
        self.last_offset = offset;
        Ok(())
    }

    /// `TimeIndex::maybe_append(timestamp, offset, skip_full_check)`.
    ///
    /// # Errors
    /// As `TimeIndex::maybe_append`.
    pub fn maybe_append_time(&mut self, timestamp: i64, offset: i64, skip_full_check: bool) -> Result<()> {
        let entries = self.time_bytes.len() / TimeIndex::ENTRY_SIZE;
        // The time index keeps its last slot for the entry of roll and close.
        if !skip_full_check && entries + 1 >= self.max_time_entries {
            return Err(Self::full(&self.time_path, entries, self.max_time_entries));
        }
        let last = self.last_time;
        if entries != 0 && offset < last.offset {
            return Err(Error::invalid_offset(format!(
                "attempt to append offset {offset} to slot {entries} of {}, smaller than the last offset appended \
                 ({})",
                self.time_path.display(),
                last.offset
            )));
        }
        if entries != 0 && timestamp < last.timestamp {
            return Err(Error::illegal_state(format!(
                "attempt to append timestamp {timestamp} to slot {entries} of {}, smaller than the last timestamp \
                 appended ({})",
                self.time_path.display(),
                last.timestamp
            )));
        }
        if timestamp > last.timestamp {
            if entries >= self.max_time_entries {
                return Err(Self::full(&self.time_path, entries, self.max_time_entries));
            }
            let relative = self.relative(offset)?;
            self.time_bytes.extend_from_slice(&timestamp.to_be_bytes());
            self.time_bytes.extend_from_slice(&relative.to_be_bytes());
            self.last_time = TimestampOffset { timestamp, offset };
        }
        Ok(())
    }

    /// The offset index file's bytes.
    #[must_use]
    pub fn offset_index_bytes(&self) -> &[u8] {
        &self.offset_bytes
    }

    /// The time index file's bytes.
    #[must_use]
    pub fn time_index_bytes(&self) -> &[u8] {
        &self.time_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::IndexRebuild;
    use crate::index::{OffsetIndex, TimeIndex};

    /// The same appends through the mapped indexes (reset, appends, final entry, trim) and
    /// through the rebuild leave the same bytes, and fail the same way when full.
    #[test]
    fn rebuild_writes_the_bytes_the_mapped_indexes_leave() {
        let dir = tempfile::tempdir().unwrap();
        let (op, tp) = (dir.path().join("0.index"), dir.path().join("0.timeindex"));
        for max in [8 * 12, 4096, 1 << 20] {
            std::fs::remove_file(&op).ok();
            std::fs::remove_file(&tp).ok();
            let mut oi = OffsetIndex::open(&op, 100, max).unwrap();
            let mut ti = TimeIndex::open(&tp, 100, max).unwrap();
            let mut rb = IndexRebuild::new(100, max, op.clone(), tp.clone());
            let mut ts = 1_000;
            for i in 0..200i64 {
                ts += (i * 7) % 3; // repeated timestamps are skipped by both
                let (a, b) = (oi.append(100 + i * 3, (i * 50) as u32), rb.append_offset(100 + i * 3, (i * 50) as u64));
                assert_eq!(a.is_ok(), b.is_ok(), "offset append {i}, max {max}: {a:?} vs {b:?}");
                let (a, b) = (ti.maybe_append(ts, 100 + i * 3, false), rb.maybe_append_time(ts, 100 + i * 3, false));
                assert_eq!(a.is_ok(), b.is_ok(), "time append {i}, max {max}: {a:?} vs {b:?}");
                if let (Err(a), Err(b)) = (&a, &b) {
                    assert_eq!(a.to_string(), b.to_string());
                }
            }
            ti.maybe_append(ts + 5, 700, true).unwrap();
            rb.maybe_append_time(ts + 5, 700, true).unwrap();
            oi.trim_to_valid_size().unwrap();
            ti.trim_to_valid_size().unwrap();
            drop((oi, ti));
            assert_eq!(std::fs::read(&op).unwrap(), rb.offset_index_bytes(), "max {max}");
            assert_eq!(std::fs::read(&tp).unwrap(), rb.time_index_bytes(), "max {max}");
        }
    }
}
