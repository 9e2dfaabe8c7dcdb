//! One segment of a partition's log (Kafka's `LogSegment`): the `.log` data file plus its
//! lazily mapped `.index` and `.timeindex`, and its `.txnindex` (created on the first aborted
//! transaction; see `log_segment/txn.rs`).
//!
//! Thread-safety: safe for concurrent readers while one writer appends. The owner (the log)
//! serialises appends, truncation, recovery, roll and renames under its write lock.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::UNIX_EPOCH;

use parking_lot::{Mutex, RwLock};

use super::file_records::{BatchHeaderInfo, FileRecords};
use super::reserved_files::ReservedSegmentFiles;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{log_file, offset_index_file, time_index_file, transaction_index_file, with_suffix};
use crate::index::lazy::LazyIndex;
use crate::index::offset_index::{OffsetIndex, OffsetPosition};
use crate::index::time_index::{TimeIndex, TimestampOffset};
use crate::index::transaction_index::{AbortedTxn, TransactionIndex};
use crate::record::records::{AnyBatch, BatchIter};
use crate::util::clock::SharedClock;

/// Bytes of one fetch from a segment: a position and length in the `.log` file, ending at a
/// batch boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSlice {
    /// Start position in the file.
    pub position: u64,
    /// Number of bytes.
    pub size: u64,
}

/// A record found by timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAndOffset {
    /// The record's timestamp.
    pub timestamp: i64,
    /// The record's offset.
    pub offset: i64,
    /// Leader epoch of its batch (-1 if unknown).
    pub leader_epoch: i32,
}

/// What an append needs to decide whether to roll first (Kafka's `RollParams`).
#[derive(Debug, Clone, Copy)]
pub struct RollParams {
    /// segment.ms (or the compaction lag bound) for this log.
    pub max_segment_ms: i64,
    /// segment.bytes.
    pub max_segment_bytes: u64,
    /// Max timestamp among the incoming batches.
    pub max_timestamp_in_messages: i64,
    /// Last offset among the incoming batches.
    pub max_offset_in_messages: i64,
    /// Size of the incoming bytes.
    pub messages_size: u64,
    /// Now, in ms.
    pub now: i64,
}

#[derive(Debug)]
struct SegmentState {
    /// Max timestamp seen and the offset of its batch; `None` until loaded from the time index.
    max_timestamp_so_far: Option<TimestampOffset>,
    bytes_since_last_index_entry: u64,
    /// The first batch's max timestamp, used for time-based rolling.
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    /// Records in the segment, when known.
    record_count: Option<u64>,
    /// The offset after the last batch and its end position, as the last recovery left them
    /// (`take_recovered_end`).
    recovered_end: Option<(i64, u64)>,
}

/// The logger of a segment's warnings, its submodules' included (Python's
/// `kafkalog.segment.log_segment`).
const LOG_TARGET: &str = module_path!();

mod inactive;
mod index_check;
mod recover;
mod roll;
mod txn;

use index_check::FirstUseCheck;
pub use roll::IncomingBatch;

/// What recovery shows producer state for each valid v2 batch (Kafka's `updateProducerState`
/// in `LogSegment.recover`): the aborted transaction the batch completes, if any, with the
/// last stable offset then, for the `.txnindex`.
pub type RecoveredBatchFn<'a> = dyn FnMut(&AnyBatch<'_>) -> Result<Option<AbortedTxn>> + 'a;

/// One segment. Mirrors Kafka's `LogSegment`.
#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log: FileRecords,
    offset_index: LazyIndex<OffsetIndex>,
    time_index: LazyIndex<TimeIndex>,
    /// The `.txnindex`: read under the read lock, written under the write lock.
    txn_index: RwLock<TransactionIndex>,
    index_interval_bytes: u64,
    rolling_jitter_ms: i64,
    read_only: bool,
    clock: SharedClock,
    state: Mutex<SegmentState>,
    /// Whether a lookup already warned that an offset index entry does not match the data.
    index_mismatch_reported: AtomicBool,
    /// Recovery wrote the index files (`LazyIndex::rewrite`) and nothing fsynced them yet: the
    /// next flush does, mapped or not.
    indexes_unsynced: AtomicBool,
    /// Where a scan last found no complete batch, and what is there (`check_torn_tail`): the
    /// reason the batch is damaged, or `None` for a torn tail.
    torn_tail_verdict: Mutex<Option<(u64, Option<String>)>>,
    /// The segment became inactive and its indexes are not yet trimmed to their entries (the
    /// next flush does; `log_segment/inactive.rs`).
    trim_pending: Mutex<bool>,
    /// The sanity check of both indexes that the loader left to their first use
    /// (`log_segment/index_check.rs`).
    index_check: FirstUseCheck,
}

impl LogSegment {
    /// Opens (or, when writable, creates) the segment at `base_offset` in `dir`. `file_suffix`
    /// is appended to every file name (e.g. `.cleaned`), empty for a live segment.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        clock: SharedClock,
        file_suffix: &str,
        preallocate: bool,
        read_only: bool,
    ) -> Result<Self> {
        let log_path = with_suffix(&log_file(dir, base_offset), file_suffix);
        let prealloc = (preallocate && !read_only).then_some(config.init_file_size() as u64);
        let log = FileRecords::open(log_path, !read_only, prealloc)?;
        let max_index = config.segment_index_bytes as usize;
        let offset_index = LazyIndex::new(
            with_suffix(&offset_index_file(dir, base_offset), file_suffix),
            base_offset,
            max_index,
            read_only,
        );
        let time_index = LazyIndex::new(
            with_suffix(&time_index_file(dir, base_offset), file_suffix),
            base_offset,
            max_index,
            read_only,
        );
        let txn_path = with_suffix(&transaction_index_file(dir, base_offset), file_suffix);
        Ok(Self::from_parts(base_offset, log, offset_index, time_index, txn_path, config, clock, read_only))
    }

    /// Creates the new live segment at `base_offset` in `dir` (the roll's [`Self::open`], with
    /// `config.preallocate`) from `reserved`, files created ahead of the roll: they are named
    /// as the segment's `.log` now and as its indexes on their first use, instead of files
    /// being created (`segment::reserved_files`).
    pub fn create_reserved(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        clock: SharedClock,
        reserved: ReservedSegmentFiles,
    ) -> Result<Self> {
        let prealloc = config.preallocate.then_some(config.init_file_size() as u64);
        let log = FileRecords::open_reserved(log_file(dir, base_offset), reserved.log, prealloc)?;
        let max_index = config.segment_index_bytes as usize;
        let offset_index =
            LazyIndex::new_reserved(offset_index_file(dir, base_offset), base_offset, max_index, reserved.offset_index);
        let time_index =
            LazyIndex::new_reserved(time_index_file(dir, base_offset), base_offset, max_index, reserved.time_index);
        let txn_path = transaction_index_file(dir, base_offset);
        Ok(Self::from_parts(base_offset, log, offset_index, time_index, txn_path, config, clock, false))
    }

    /// A segment over its opened files.
    #[allow(clippy::too_many_arguments)] // the parts of one struct, each named at the call
    fn from_parts(
        base_offset: i64,
        log: FileRecords,
        offset_index: LazyIndex<OffsetIndex>,
        time_index: LazyIndex<TimeIndex>,
        txn_path: PathBuf,
        config: &LogConfig,
        clock: SharedClock,
        read_only: bool,
    ) -> Self {
        let txn_index = TransactionIndex::new(base_offset, txn_path, !read_only);
        let now = clock.milliseconds();
        LogSegment {
            base_offset,
            log,
            offset_index,
            time_index,
            txn_index: RwLock::new(txn_index),
            index_interval_bytes: config.index_interval_bytes as u64,
            rolling_jitter_ms: 0,
            read_only,
            clock,
            state: Mutex::new(SegmentState {
                max_timestamp_so_far: None,
                bytes_since_last_index_entry: 0,
                rolling_based_timestamp: None,
                created_ms: now,
                record_count: None,
                recovered_end: None,
            }),
            index_mismatch_reported: AtomicBool::new(false),
            indexes_unsynced: AtomicBool::new(false),
            torn_tail_verdict: Mutex::new(None),
            trim_pending: Mutex::new(false),
            index_check: FirstUseCheck::default(),
        }
    }

    /// Sets the random jitter subtracted from segment.ms for this segment.
    pub fn set_rolling_jitter_ms(&mut self, jitter: i64) {
        self.rolling_jitter_ms = jitter;
    }

    /// First offset this segment may hold.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    /// Size of the `.log` data.
    pub fn size(&self) -> u64 {
        self.log.size()
    }
    /// The `.log` file.
    pub fn log(&self) -> &FileRecords {
        &self.log
    }
    /// Path of the `.log` file.
    pub fn path(&self) -> PathBuf {
        self.log.path()
    }
    /// The offset index (mapped on first use).
    /// The offset index, its sanity check done if the loader left it to this first use
    /// (`log_segment/index_check.rs`).
    pub fn offset_index(&self) -> Result<&LazyIndex<OffsetIndex>> {
        self.check_indexes_if_pending()?;
        Ok(&self.offset_index)
    }
    /// The time index (mapped on first use).
    /// The time index, its sanity check done if the loader left it to this first use.
    pub fn time_index(&self) -> Result<&LazyIndex<TimeIndex>> {
        self.check_indexes_if_pending()?;
        Ok(&self.time_index)
    }

    fn ensure_offset_in_range(&self, offset: i64) -> Result<()> {
        let rel = offset.checked_sub(self.base_offset).unwrap_or(-1);
        if rel < 0 || rel > i64::from(i32::MAX) {
            return Err(Error::OffsetOverflow { base_offset: self.base_offset, offset });
        }
        Ok(())
    }

    /// Whether `offset` can be stored in this segment (relative offset fits an int32).
    pub fn can_convert_to_relative_offset(&self, offset: i64) -> bool {
        self.ensure_offset_in_range(offset).is_ok()
    }

    /// Max timestamp seen so far and its offset (loaded from the time index on first use).
    pub fn max_timestamp_so_far(&self) -> Result<TimestampOffset> {
        // A rebuild at first use scans the segment: not under the state's lock.
        self.check_indexes_if_pending()?;
        let mut st = self.state.lock();
        self.max_timestamp_locked(&mut st)
    }

    fn max_timestamp_locked(&self, st: &mut SegmentState) -> Result<TimestampOffset> {
        if let Some(t) = st.max_timestamp_so_far {
            return Ok(t);
        }
        let last = self.time_index()?.get()?.last_entry();
        st.max_timestamp_so_far = Some(last);
        Ok(last)
    }

    /// Appends `records`: one or more complete batches whose offsets the caller has assigned,
    /// the last ending at `largest_offset`, holding `record_count` records. Mirrors Kafka 4.x's
    /// `LogSegment.append`: for each batch the max timestamp is updated, and an index entry
    /// (batch last offset, batch position) is added once more than `index.interval.bytes` have
    /// gone by since the previous one (so the first batch of a segment is never indexed).
    pub fn append(&self, largest_offset: i64, records: &[u8], record_count: u64) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.ensure_offset_in_range(largest_offset)?;
        let start = self.log.size();
        self.log.append(records)?;
        let mut st = self.state.lock();
        let mut max = self.max_timestamp_locked(&mut st)?;
        let mut position = start;
        for item in BatchIter::new(records) {
            let (_, batch) = item?;
            if batch.max_timestamp() > max.timestamp {
                max = TimestampOffset { timestamp: batch.max_timestamp(), offset: batch.last_offset() };
                st.max_timestamp_so_far = Some(max);
            }
            if st.bytes_since_last_index_entry > self.index_interval_bytes {
                self.offset_index()?.get_mut()?.append(batch.last_offset(), position as u32)?;
                self.time_index()?.get_mut()?.maybe_append(max.timestamp, max.offset, false)?;
                st.bytes_since_last_index_entry = 0;
            }
            let size = batch.size_in_bytes() as u64;
            position += size;
            st.bytes_since_last_index_entry += size;
        }
        if start == 0 {
            st.record_count = Some(0);
            st.rolling_based_timestamp = Some(first_batch_max_timestamp(records));
        }
        if let Some(c) = st.record_count.as_mut() {
            *c += record_count;
        }
        Ok(())
    }

    /// Finds the batch containing `offset` at or after `start_position` (`translateOffset`):
    /// an index lookup, then a forward scan of batch headers.
    ///
    /// Kafka trusts the index entry; kafkalog checks it against the batch header it reads
    /// there anyway. An entry that points past the data, at bytes that are not a batch, or at
    /// a batch starting after the offset the entry names would make the scan pass over
    /// records, so the lookup then scans from the start of the segment and warns (once per
    /// segment). Recovery rebuilds such an index when it rescans the segment.
    pub fn translate_offset(&self, offset: i64, start_position: u64) -> Result<Option<BatchHeaderInfo>> {
        let mapping = self.offset_index()?.get()?.lookup(offset);
        let from = start_position.max(u64::from(mapping.position));
        if from == u64::from(mapping.position) && mapping.position > 0 {
            if let Some(reason) = self.index_entry_mismatch(mapping) {
                self.report_index_mismatch(mapping, &reason);
                return self.search(offset, start_position);
            }
        }
        self.search(offset, from)
    }

    fn search(&self, offset: i64, from: u64) -> Result<Option<BatchHeaderInfo>> {
        let (found, end) = self.log.search_for_offset_with_size(offset, from)?;
        if found.is_none() && end.torn_tail {
            self.check_torn_tail(end.position)?;
        }
        Ok(found)
    }

    /// Decides what the bytes from `position` (where a scan found no complete batch) to the end
    /// of the data are. If the data goes on after them (the offset index points at batches
    /// after `position`, or the batch's CRC matches a shorter length ending where another batch
    /// starts: see `torn_tail`), the batch there has a damaged length: `CorruptRecord`.
    /// Otherwise they are a torn tail: a cut file, or a torn write below the recovery point,
    /// which recovery would have cut from a segment it rescans. Every read path (fetches,
    /// scans, the cleaner) then treats the segment as ending at `position` and goes on with the
    /// next one, as Kafka's reads do; the first time is logged. The verdict is kept: a segment
    /// with a torn tail is not appended to.
    pub fn check_torn_tail(&self, position: u64) -> Result<()> {
        let cached = self.torn_tail_verdict.lock().as_ref().filter(|(at, _)| *at == position).map(|(_, v)| v.clone());
        let verdict = if let Some(v) = cached {
            v
        } else {
            let v = self.damaged_length(position)?;
            *self.torn_tail_verdict.lock() = Some((position, v.clone()));
            v
        };
        if let Some(reason) = verdict {
            return Err(Error::corrupt(position, reason).in_file(&self.path(), 0));
        }
        self.log.report_torn_tail(position, self.log.size());
        Ok(())
    }

    /// Why the batch at `position`, whose length runs past the end of the data, is a damaged
    /// batch rather than a torn tail; `None` for a torn tail.
    pub(crate) fn damaged_length(&self, position: u64) -> Result<Option<String>> {
        let size = self.log.size();
        let index = self.offset_index()?.get()?;
        let entries = index.entries();
        let first_after =
            partition_point(entries, |n| index.entry(n).map_or(true, |e| u64::from(e.position) <= position));
        if let Some(after) = (first_after < entries).then(|| index.entry(first_after)).transpose()? {
            if u64::from(after.position) < size {
                return Ok(Some(format!(
                    "the record batch here runs past the end of the segment (size {size}), but the offset index \
                     has an entry for offset {} at position {} after it: the batch's length is damaged",
                    after.offset, after.position
                )));
            }
        }
        Ok(super::torn_tail::crc_length(&self.log, position)?.map(|length| {
            format!(
                "the record batch here runs past the end of the segment (size {size}), but its CRC matches a \
                 batch of {length} bytes: the batch's length is damaged"
            )
        }))
    }

    /// Why the batch at `entry`'s position contradicts the entry, if it does. An entry names
    /// the last offset of the batches appended at its position, so the batch found there
    /// cannot start after it.
    fn index_entry_mismatch(&self, entry: OffsetPosition) -> Option<String> {
        let size = self.log.size();
        if u64::from(entry.position) >= size {
            return Some(format!("it points past the end of the data (size {size})"));
        }
        match self.log.read_header(u64::from(entry.position), size) {
            Ok(Some(h)) if h.base_offset > entry.offset => {
                Some(format!("the record batch there starts at offset {}", h.base_offset))
            }
            Ok(Some(_)) => None,
            Ok(None) => Some("no complete record batch starts there".to_string()),
            Err(e) => Some(format!("the bytes there are not a record batch header ({e})")),
        }
    }

    fn report_index_mismatch(&self, entry: OffsetPosition, reason: &str) {
        if !self.index_mismatch_reported.swap(true, Ordering::Relaxed) {
            let index = self.offset_index.path();
            log::warn!(
                "Found a corrupted index file {} corresponding to log file {}: the entry for offset {} at \
                 position {} does not match the data ({reason}); lookups in this segment scan it from its start",
                index.display(),
                self.path().display(),
                entry.offset,
                entry.position
            );
        }
    }

    /// The bytes to return for a fetch at `start_offset` (`LogSegment.read`): at most `max_size`
    /// bytes ending at a batch boundary at or before `max_position`, but at least the first batch
    /// when `min_one_message`. `None` when `start_offset` is beyond this segment.
    pub fn read(
        &self,
        start_offset: i64,
        max_size: u64,
        max_position: u64,
        min_one_message: bool,
    ) -> Result<Option<FetchSlice>> {
        let Some(first) = self.translate_offset(start_offset, 0)? else { return Ok(None) };
        let start = first.position;
        if start >= max_position {
            return Ok(Some(FetchSlice { position: start, size: 0 }));
        }
        let budget = if min_one_message { max_size.max(u64::from(first.size)) } else { max_size };
        let limit = max_position.min(start.saturating_add(budget));
        // End at the last batch boundary within the limit.
        let mut end = start;
        self.log.for_each_header(start, limit, |h| {
            end = h.position + u64::from(h.size);
            Ok(true)
        })?;
        Ok(Some(FetchSlice { position: start, size: end - start }))
    }

    /// Offset after the last complete batch (`readNextOffset`), or the base offset when empty.
    /// Bytes after the last complete batch (a torn tail, which recovery cuts from the segments
    /// it rescans) are skipped and reported, as every read skips them.
    pub fn read_next_offset(&self) -> Result<i64> {
        let (next, end) = self.scan_to_end()?;
        if end.torn_tail {
            self.check_torn_tail(end.position)?;
        }
        Ok(next)
    }

    /// Offset after the last complete batch and the position where that batch ends. A writable
    /// segment with a torn tail is an error (recovery should have cut it; the loader recovers
    /// the active segment on it); a read-only segment of a live log simply ends at its last
    /// complete batch.
    pub fn read_next_offset_and_end(&self) -> Result<(i64, u64)> {
        let size = self.log.size();
        let (next, end) = self.scan_to_end()?;
        if end.torn_tail && !self.read_only {
            return Err(Error::corrupt(
                end.position,
                format!("incomplete record batch at the end of the segment (size {size})"),
            )
            .in_file(&self.path(), 0));
        }
        Ok((next, end.position))
    }

    /// What [`Self::read_next_offset_and_end`] would return, as the segment's last recovery
    /// found it, without a lookup in the offset index (which would map it); taken once. `None`
    /// when the segment was not recovered or its size changed since.
    pub fn take_recovered_end(&self) -> Option<(i64, u64)> {
        self.state.lock().recovered_end.take().filter(|&(_, end)| end == self.log.size())
    }

    /// Scans the headers after the last index entry: the offset after the last complete batch
    /// and how the scan ended.
    fn scan_to_end(&self) -> Result<(i64, super::file_records::ScanEnd)> {
        let size = self.log.size();
        let start = u64::from(self.offset_index()?.get()?.lookup(i64::MAX).position);
        let start = if start < size { start } else { 0 };
        let mut next = self.base_offset;
        let scan = self.log.for_each_header(start, size, |h| {
            next = h.next_offset();
            Ok(true)
        });
        let end = match scan {
            Ok(end) => end,
            // A preallocated file of a live log ends in zeros: its size field reads as 0.
            Err(Error::CorruptRecord { .. }) if self.read_only => {
                let mut pos = start;
                let mut ok_next = self.base_offset;
                while let Ok(Some(h)) = self.log.read_header(pos, size) {
                    ok_next = h.next_offset();
                    pos += u64::from(h.size);
                }
                next = ok_next;
                super::file_records::ScanEnd { position: pos, torn_tail: true }
            }
            Err(e) => return Err(e),
        };
        Ok((next, end))
    }

    /// For the read-only view of a live log's active segment: ends the view at `end` (where the
    /// last complete batch ends) and loads the max timestamp from the time index and the batches
    /// after its last entry, since the writer appends the final time-index entry only at roll or
    /// close (Kafka's `loadLargestTimestamp`). A no-op on a writable segment.
    pub fn end_read_only_view_at(&self, end: u64) -> Result<()> {
        if !self.read_only {
            return Ok(());
        }
        self.log.limit_read_only_size(end);
        self.reload_largest_timestamp()
    }

    /// The first record with timestamp >= `timestamp` and offset >= `starting_offset`
    /// (`findOffsetByTimestamp`).
    pub fn find_offset_by_timestamp(&self, timestamp: i64, starting_offset: i64) -> Result<Option<TimestampAndOffset>> {
        let indexed = self.time_index()?.get()?.lookup(timestamp);
        let position = self.offset_index()?.get()?.lookup(indexed.offset.max(starting_offset)).position;
        let mut found = None;
        let mut scratch = Vec::new();
        let mut buf = Vec::new();
        self.log.for_each_batch(u64::from(position), self.log.size(), &mut buf, |_, batch| {
            if batch.max_timestamp() >= timestamp {
                let epoch = batch.partition_leader_epoch();
                batch.for_each_record(&mut scratch, |r| {
                    if found.is_none() && r.timestamp >= timestamp && r.offset >= starting_offset {
                        found =
                            Some(TimestampAndOffset { timestamp: r.timestamp, offset: r.offset, leader_epoch: epoch });
                    }
                    Ok(())
                })?;
            }
            Ok(found.is_none())
        })?;
        Ok(found)
    }

    /// Truncates everything at or above `offset` (`LogSegment.truncateTo`); returns the bytes
    /// removed. The indexes are resized to full size, as this segment becomes the active one.
    pub fn truncate_to(&self, offset: i64) -> Result<u64> {
        let mapping = if offset <= self.base_offset { None } else { self.translate_offset(offset, 0)? };
        self.truncate_indexes(offset)?;
        self.txn_index.write().truncate_to(offset)?;
        // As in Kafka, an empty segment restarts its creation time even when nothing was cut.
        let truncated = match mapping {
            // Truncating to the base offset empties the segment whatever offsets it holds.
            _ if offset <= self.base_offset => self.log.truncate_to(0)?,
            Some(mapping) => self.log.truncate_to(mapping.position)?,
            None => 0,
        };
        let mut st = self.state.lock();
        if self.log.size() == 0 {
            st.created_ms = self.clock.milliseconds();
            st.rolling_based_timestamp = None;
        }
        st.bytes_since_last_index_entry = 0;
        st.record_count = None;
        st.max_timestamp_so_far = None;
        drop(st);
        self.reload_largest_timestamp()?;
        Ok(truncated)
    }

    /// Recomputes the max timestamp from the time index's last entry and the batches after it
    /// (`loadLargestTimestamp`).
    fn reload_largest_timestamp(&self) -> Result<()> {
        let last = self.time_index()?.get()?.last_entry();
        let position = self.offset_index()?.get()?.lookup(last.offset).position;
        let (ts, off) = self.log.largest_timestamp_after(u64::from(position))?;
        let max = if ts > last.timestamp { TimestampOffset { timestamp: ts, offset: off } } else { last };
        self.state.lock().max_timestamp_so_far = Some(max);
        Ok(())
    }

    /// Kafka's `shouldRoll`: the segment is full, too old, an index is full, or the incoming
    /// offsets cannot be stored relative to the base offset.
    pub fn should_roll(&self, p: &RollParams) -> Result<bool> {
        let size = self.size();
        let reached_time_limit = size > 0
            && self.time_waited_for_roll(p.now, p.max_timestamp_in_messages)?
                > p.max_segment_ms - self.rolling_jitter_ms;
        let index_full = self.offset_index()?.get()?.is_full() || self.time_index()?.get()?.is_full();
        Ok(size > p.max_segment_bytes.saturating_sub(p.messages_size)
            || reached_time_limit
            || index_full
            || !self.can_convert_to_relative_offset(p.max_offset_in_messages))
    }

    /// Time this segment has been open for the roll decision: measured from the first batch's
    /// timestamp when there is one, else from its creation (`timeWaitedForRoll`).
    pub fn time_waited_for_roll(&self, now: i64, message_timestamp: i64) -> Result<i64> {
        let first = self.first_batch_timestamp()?;
        let st = self.state.lock();
        Ok(match first {
            Some(ts) if ts >= 0 => message_timestamp - ts,
            _ => now - st.created_ms,
        })
    }

    /// Max timestamp of the first batch (`getFirstBatchTimestamp`), loaded on first use.
    pub fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        if let Some(ts) = self.state.lock().rolling_based_timestamp {
            return Ok(Some(ts));
        }
        let first = self.log.read_header(0, self.log.size())?;
        let ts = match first {
            None => None,
            Some(h) if h.magic >= 2 => Some(h.max_timestamp),
            Some(h) => {
                let mut out = None;
                let mut buf = Vec::new();
                self.log.for_each_batch(h.position, h.position + u64::from(h.size), &mut buf, |_, b| {
                    out = Some(b.max_timestamp());
                    Ok(false)
                })?;
                out
            }
        };
        if ts.is_some() {
            self.state.lock().rolling_based_timestamp = ts;
        }
        Ok(ts)
    }

    /// Exact number of records in the segment (counted once by a header scan, then kept).
    pub fn record_count(&self) -> Result<u64> {
        if let Some(c) = self.state.lock().record_count {
            return Ok(c);
        }
        let mut count = 0u64;
        let mut legacy = false;
        self.log.for_each_header(0, self.log.size(), |h| {
            if h.records_count >= 0 {
                count += h.records_count as u64;
            } else {
                legacy = true;
            }
            Ok(!legacy)
        })?;
        if legacy {
            count = 0;
            let mut buf = Vec::new();
            self.log.for_each_batch(0, self.log.size(), &mut buf, |_, b| {
                count += b.record_count()?;
                Ok(true)
            })?;
        }
        self.state.lock().record_count = Some(count);
        Ok(count)
    }

    /// The largest record timestamp, or the file's modification time when the segment has no
    /// timestamps (`largestTimestamp`).
    pub fn largest_timestamp(&self) -> Result<i64> {
        let max = self.max_timestamp_so_far()?;
        if max.timestamp >= 0 {
            return Ok(max.timestamp);
        }
        self.last_modified()
    }

    /// Modification time of the `.log` file, in ms.
    pub fn last_modified(&self) -> Result<i64> {
        let path = self.path();
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, "stat", e))?;
        let mtime = meta.modified().map_err(|e| Error::io(&path, "stat", e))?;
        Ok(mtime.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64))
    }

    /// Renames every file from `old_suffix` to `new_suffix` (`changeFileSuffixes`).
    pub fn change_file_suffixes(&self, old_suffix: &str, new_suffix: &str) -> Result<()> {
        self.without_index_check(|| self.change_file_suffixes_now(old_suffix, new_suffix))
    }

    fn change_file_suffixes_now(&self, old_suffix: &str, new_suffix: &str) -> Result<()> {
        let rename = |p: PathBuf| -> PathBuf {
            let s = p.to_string_lossy().to_string();
            let base = s.strip_suffix(old_suffix).unwrap_or(&s).to_string();
            PathBuf::from(base + new_suffix)
        };
        self.log.rename_to(&rename(self.log.path()))?;
        let dir = self.path().parent().map(Path::to_path_buf).unwrap_or_default();
        self.offset_index.rename_to(&with_suffix(&offset_index_file(&dir, self.base_offset), new_suffix))?;
        self.time_index.rename_to(&with_suffix(&time_index_file(&dir, self.base_offset), new_suffix))?;
        // The `.txnindex` is renamed only if it exists (Kafka's `TransactionIndex.renameTo`).
        let mut txn = self.txn_index.write();
        let renamed = rename(txn.path().to_path_buf());
        txn.rename_to(renamed)
    }

    /// Deletes the segment's files; a check of its indexes left to their first use is
    /// dropped (there is nothing left to check).
    pub fn delete_if_exists(&self) -> Result<()> {
        self.without_index_check(|| {
            crate::util::file::delete_if_exists(&self.path())?;
            self.offset_index.delete_if_exists()?;
            self.time_index.delete_if_exists()?;
            self.txn_index.write().delete_if_exists()?;
            self.index_check.done();
            Ok(())
        })
    }
}

/// How recovery writes the index files it rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexWrite {
    /// Through a `.tmp` file renamed over each index: a crash leaves the old file or the new
    /// one. For a segment recovered because an index was missing or damaged, which nothing
    /// else would make the next load recover again.
    Atomic,
    /// As `Atomic`, with the files and the directory fsynced: for the indexes rebuilt at their
    /// first use (`log_segment/index_check.rs`), of a segment below the recovery point that no
    /// flush covers.
    AtomicDurable,
    /// Truncated and written in place: for a segment at or past the recovery point, which the
    /// next load recovers again after a crash whatever its index files hold.
    InPlace,
    /// As `InPlace`, for the active segment: the index files are left at their full size
    /// (`segment.index.bytes`), ready for appends and mapped at their first use
    /// (`LazyIndex::rewrite_mapped`), instead of being cut to their entries and extended again
    /// when the log opens.
    InPlaceActive,
}

/// Max timestamp of the first v2 batch in `records` (-1 for legacy data).
fn first_batch_max_timestamp(records: &[u8]) -> i64 {
    if records.len() >= 43 && records[16] >= 2 {
        crate::record::batch::be_i64(records, 35)
    } else {
        -1
    }
}

/// The first `n` in `0..len` for which `pred(n)` is false, `pred` being true then false over
/// the range (`slice::partition_point` for an indexed sequence).
fn partition_point(len: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
