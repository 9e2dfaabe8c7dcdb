//! Cleaning one log (Kafka's `Cleaner`): pass 1 maps every key of the dirty section to its
//! latest offset; pass 2 recopies every segment below the map's end, grouped so that each
//! group fits one segment, keeping what [`super::filter`] says, into `.cleaned` segments that
//! replace the originals through the crash-safe swap. Offsets never change.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use super::cleaner_stats::CleanerStats;
use super::decision_mode::{DecisionMode, SlicedReport};
use super::filter::{CleanedTransactionMetadata, CleanerFilter, LastRecord};
use super::io_buffers::IoBuffers;
use super::log_to_clean::{calculate_cleanable_bytes, LogToClean};
use super::mapped_records::{MappedRecords, TRACKED_OFFSETS_PER_SLOT};
use super::md5_keys::hash_record_keys;
use super::offset_map::SkimpyOffsetMap;
use super::skip::{Run, SkipBounds};
use super::throttler::Throttler;
use crate::error::{Error, Result};
use crate::index::transaction_index::AbortedTxn;
use crate::log::unified_log::{CleaningGuard, UnifiedLog};
use crate::segment::log_segment::LogSegment;
use crate::util::clock::SharedClock;
use crate::util::progress::{Progress, ProgressSink};

/// Sizes and limits of one cleaner thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerParams {
    /// Read and write buffer size each (Kafka: `log.cleaner.io.buffer.size / threads / 2`).
    pub io_buffer_size: usize,
    /// Largest the buffers may grow for one batch (Kafka: broker `message.max.bytes`).
    pub max_io_buffer_size: usize,
    /// Share of the map's slots a pass may fill (`log.cleaner.io.buffer.load.factor`).
    pub dedupe_buffer_load_factor: f64,
    /// What a clean does when the dirty section holds more keys than the map
    /// (`log.cleaner.kafkalog.decision.mode`; Kafka's rounds by default).
    pub decision_mode: DecisionMode,
}

impl Default for CleanerParams {
    /// Kafka's defaults for one cleaner thread.
    fn default() -> Self {
        CleanerParams {
            io_buffer_size: 512 * 1024 / 2,
            max_io_buffer_size: 1024 * 1024 + 12,
            dedupe_buffer_load_factor: 0.9,
            decision_mode: DecisionMode::Rounds,
        }
    }
}

/// Cleans logs with one offset map. Mirrors Kafka's `Cleaner`. Not thread-safe: one per
/// cleaner thread (or per on-demand clean); its map and buffers are allocated once and reused.
pub struct Cleaner {
    pub(super) id: usize,
    pub(super) map: SkimpyOffsetMap,
    pub(super) params: CleanerParams,
    pub(super) throttler: Arc<Throttler>,
    clock: SharedClock,
    pub(super) bufs: IoBuffers,
    /// What pass 1 learned about the records it mapped (or the sliced passes about every
    /// keyed record), for pass 2.
    pub(super) mapped: MappedRecords,
    /// The `max.message.bytes` of the log whose map is being built (set by pass 1; the sliced
    /// decision passes read the same log).
    pub(super) max_message_bytes: usize,
    /// What the last clean's sliced decision passes did, if it ran them.
    pub(super) sliced: Option<SlicedReport>,
    /// Where each clean reports how far it is, and the rounds reported so far.
    progress: Option<ProgressSink>,
    round: u32,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner").field("id", &self.id).field("map", &self.map).finish_non_exhaustive()
    }
}

/// Everything one round of cleaning shares between its groups.
struct Round<'a> {
    log: &'a UnifiedLog,
    guard: &'a CleaningGuard<'a>,
    check: &'a dyn Fn() -> Result<()>,
    now: i64,
    upper_bound: i64,
    legacy_delete_horizon: i64,
    last_records: &'a HashMap<i64, LastRecord>,
    aborted: &'a [AbortedTxn],
    /// How far the rewrite may skip superseded batches unread (`None`: it reads them all).
    skip: Option<SkipBounds>,
}

impl Cleaner {
    /// A cleaner owning `map`. Fails if the map cannot hold even one key at the load factor.
    pub fn new(
        id: usize,
        map: SkimpyOffsetMap,
        params: CleanerParams,
        throttler: Arc<Throttler>,
        clock: SharedClock,
    ) -> Result<Self> {
        if (map.slots() as f64 * params.dedupe_buffer_load_factor) <= 1.0 {
            return Err(Error::invalid_config(
                "log.cleaner.dedupe.buffer.size",
                map.memory(),
                "the offset map is too small to fit even a single message, so log cleaning will never make progress; \
                 increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads",
            ));
        }
        let io = params.io_buffer_size.max(crate::record::batch::RECORD_BATCH_OVERHEAD);
        let bufs = IoBuffers::new(io, params.max_io_buffer_size);
        Ok(Cleaner {
            id,
            map,
            params,
            throttler,
            clock,
            bufs,
            mapped: MappedRecords::default(),
            max_message_bytes: 0,
            sliced: None,
            progress: None,
            round: 0,
        })
    }

    /// Reports each clean's progress to `sink` from now on (rounds counted from 1 again): an
    /// `indexing` phase over the dirty segments' bytes, then a `cleaning` phase over the bytes
    /// of the segments recopied, per round. Cancelling the sink stops a clean at its next
    /// chunk with `LogCleaningAborted`.
    pub fn set_progress(&mut self, sink: Option<ProgressSink>) {
        self.progress = sink;
        self.round = 0;
    }

    pub(super) fn report(&self, phase: &'static str, done: u64, total: u64) {
        if let Some(sink) = &self.progress {
            sink.report(&Progress { phase, done: done.min(total), total, unit: "bytes", round: self.round });
        }
    }

    /// The clock's time now.
    pub fn now_ms(&self) -> i64 {
        self.clock.milliseconds()
    }

    /// The id used in log lines.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The offset map.
    pub fn offset_map(&self) -> &SkimpyOffsetMap {
        &self.map
    }

    /// Gives the offset map back, for another cleaner to reuse.
    pub fn into_offset_map(self) -> SkimpyOffsetMap {
        self.map
    }

    /// What the last clean's sliced decision passes did (`None` if it ran none).
    pub fn sliced_report(&self) -> Option<SlicedReport> {
        self.sliced
    }

    /// Keys one pass can map: slots x load factor.
    pub fn map_capacity(&self) -> usize {
        (self.map.slots() as f64 * self.params.dedupe_buffer_load_factor) as usize
    }

    /// Cleans `to_clean` at the clock's time; returns the first offset not cleaned (the new
    /// checkpoint) and the stats. `check_done` is called at every chunk and may return an
    /// error (`Error::LogCleaningAborted`) to stop; a truncation or close of the log stops the
    /// clean the same way.
    pub fn clean(&mut self, to_clean: &LogToClean, check_done: &dyn Fn() -> Result<()>) -> Result<(i64, CleanerStats)> {
        let now = self.clock.milliseconds();
        self.do_clean(to_clean, now, check_done)
    }

    /// Cleans `to_clean` as if the time were `now` (Kafka's `doClean`).
    pub fn do_clean(
        &mut self,
        to_clean: &LogToClean,
        now: i64,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<(i64, CleanerStats)> {
        let log = &*to_clean.log;
        let guard = log.begin_cleaning()?;
        let partition = log.topic_partition().to_string();
        self.round += 1;
        let sink = self.progress.clone();
        let check = || -> Result<()> {
            check_done()?;
            if guard.abort_requested() || sink.as_ref().is_some_and(ProgressSink::is_cancelled) {
                return Err(Error::LogCleaningAborted { partition: partition.clone() });
            }
            Ok(())
        };
        log::info!("Cleaner {}: Beginning cleaning of log {partition}", self.id);
        let config = log.config();
        let legacy_delete_horizon = match log.log_segments(0, to_clean.first_dirty_offset).last() {
            Some(s) => last_modified_or_zero(s)? - config.delete_retention_ms,
            None => 0,
        };
        let mut stats = CleanerStats::new();
        // What Kafka's cleaner reads from the log's producer state
        // (`lastRecordsOfActiveProducers`) and its `.txnindex` files
        // (`collectAbortedTransactions`), taken once at the start of the clean. The aborted
        // transactions are collected over the whole log and narrowed to each segment read.
        let last_records = log.last_records_of_active_producers();
        let aborted = log.collect_aborted_transactions(log.log_start_offset(), log.log_end_offset())?;
        // The range was chosen below the last stable offset; a caller that named its own bound
        // (Kafka's `doClean` trusts it) is still held below an open transaction, at the base of
        // the segment holding its first offset, so no undecided record is ever compacted.
        let mut upper_bound = to_clean.first_uncleanable_offset;
        let first_open = log.ongoing_transactions().first().map(|&(_, first)| first);
        if let Some(unstable) = first_open.filter(|u| *u < upper_bound) {
            upper_bound = calculate_cleanable_bytes(log, to_clean.first_dirty_offset, unstable).0;
            log::info!(
                "Cleaner {}: {partition} has a transaction open since offset {unstable}: cleaning only below {upper_bound}",
                self.id
            );
            if upper_bound <= to_clean.first_dirty_offset {
                stats.all_done();
                return Ok((to_clean.first_dirty_offset, stats));
            }
        }
        let end_offset =
            self.map_dirty_section(log, to_clean.first_dirty_offset, upper_bound, &aborted, &mut stats, &check)?;
        stats.index_done();
        log::info!(
            "Cleaner {}: Cleaning log {partition} (offsets [{}, {end_offset}), discarding legacy tombstones prior to {legacy_delete_horizon})...",
            self.id,
            to_clean.first_dirty_offset
        );
        let groups = group_segments_by_size(
            &log.log_segments(0, end_offset),
            config.segment_size(),
            config.segment_index_bytes,
            upper_bound,
        )?;
        let round = Round {
            log,
            guard: &guard,
            check: &check,
            now,
            upper_bound,
            legacy_delete_horizon,
            last_records: &last_records,
            aborted: &aborted,
            skip: SkipBounds::new(&self.mapped, self.map.latest_offset(), upper_bound, &last_records),
        };
        let mut txn = CleanedTransactionMetadata::default();
        let size = |g: &Vec<Arc<LogSegment>>| g.iter().map(|s| s.size()).sum::<u64>();
        let (total, mut done) = (groups.iter().map(size).sum::<u64>(), 0);
        self.report("cleaning", 0, total);
        for group in &groups {
            self.clean_segments(&round, group, &mut stats, &mut txn)?;
            done += size(group);
            self.report("cleaning", done, total);
        }
        stats.buffer_utilization = self.map.utilization();
        stats.all_done();
        Ok((end_offset, stats))
    }

    /// Pass 1 (Kafka's `buildOffsetMap`): maps the keys of `[start, end)`, stopping when the
    /// map reaches its load factor. The map's latest offset then tells how far it got.
    pub(super) fn build_offset_map(
        &mut self,
        log: &UnifiedLog,
        start: i64,
        end: i64,
        aborted: &[AbortedTxn],
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<()> {
        // The table's size hint: the records of [start, end), at most the capacity. The last
        // dirty segment's records past `end` are put too (as Kafka does), so the hint may be
        // exceeded; the table then grows.
        let max_keys = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX).min(self.map_capacity());
        self.map.clear_for_keys(max_keys);
        self.mapped.clear(start, self.map.slots().saturating_mul(TRACKED_OFFSETS_PER_SLOT));
        let dirty = log.log_segments(start, end);
        log::info!(
            "Cleaner {}: Building offset map for log {} for {} segments in offset range [{start}, {end}).",
            self.id,
            log.topic_partition(),
            dirty.len()
        );
        let mut txn = CleanedTransactionMetadata::default();
        txn.add_aborted_transactions(&overlapping(aborted, start, end));
        self.max_message_bytes = log.config().max_message_bytes.max(0) as usize;
        let (total, mut done) = (dirty.iter().map(|s| s.size()).sum::<u64>(), 0);
        self.report("indexing", 0, total);
        for (i, segment) in dirty.iter().enumerate() {
            let next_start = dirty.get(i + 1).map_or(end, |s| s.base_offset());
            check()?;
            let full = self.map_segment(segment, start, next_start, &mut txn, stats, check)?;
            done += segment.size();
            // A full map ends the phase here: the next round maps the rest.
            self.report("indexing", if full { total } else { done }, total);
            if full {
                log::debug!(
                    "Offset map is full, {i} segments fully mapped, segment with base offset {} is partially mapped",
                    segment.base_offset()
                );
                break;
            }
        }
        Ok(())
    }

    /// Adds one segment's keys to the map (Kafka's `buildOffsetMapForSegment`); true if the map
    /// filled up.
    fn map_segment(
        &mut self,
        segment: &LogSegment,
        start: i64,
        next_segment_start: i64,
        txn: &mut CleanedTransactionMetadata,
        stats: &mut CleanerStats,
        check: &dyn Fn() -> Result<()>,
    ) -> Result<bool> {
        let position = u64::from(segment.offset_index()?.get()?.lookup(start).position);
        let max_desired = self.map_capacity();
        let mut full = false;
        self.scan_batches(segment, position, stats, check, |c, batch, scratch| {
            if batch.is_control() {
                txn.on_control_batch_read(batch, scratch)?;
                c.records_read += 1;
            } else if txn.on_batch_read(batch) {
                c.records_read += batch.record_count()?;
            } else {
                // Hash the batch's keys first (eight at a time) and prefetch their slots, then
                // insert: the map lookups then overlap instead of waiting on memory one by one.
                let mut records = Vec::new();
                batch.records_into(scratch, &mut records)?;
                let (map, mapped, bufs) = (&mut c.cleaner.map, &mut c.cleaner.mapped, &mut c.cleaner.bufs);
                let mut keys = Vec::new();
                hash_record_keys(&records, |r| r.offset >= start, &mut keys, &mut bufs.digests, &mut bufs.hashes);
                let hashes = &bufs.hashes;
                for (i, (r, hash)) in records.iter().zip(hashes.iter()).enumerate() {
                    map.prefetch_ahead(i, |j| hashes.get(j).and_then(Option::as_ref));
                    if let Some(h) = hash {
                        if map.size() >= max_desired {
                            full = true;
                            return Ok(false);
                        }
                        // (An offset below the one it replaces only appears in a damaged log;
                        // Kafka's rule then keeps both records, and so does the map.)
                        if let Some(old) = map.put_hash(h, r.offset)?.filter(|old| *old < r.offset) {
                            mapped.mark_superseded(old);
                        }
                        if r.value.is_some() {
                            mapped.mark_mapped(r.offset);
                        }
                    }
                    c.records_read += 1;
                }
            }
            if batch.last_offset() >= start {
                c.cleaner.map.update_latest_offset(batch.last_offset());
            }
            Ok(true)
        })?;
        if !full {
            // Offsets may have gaps (earlier cleans): the segment covers everything up to the next.
            self.map.update_latest_offset(next_segment_start - 1);
        }
        Ok(full)
    }

    /// Cleans one group of segments into one `.cleaned` segment and swaps it in (Kafka's
    /// `cleanSegments`).
    fn clean_segments(
        &mut self,
        round: &Round<'_>,
        group: &[Arc<LogSegment>],
        stats: &mut CleanerStats,
        txn: &mut CleanedTransactionMetadata,
    ) -> Result<()> {
        let log = round.log;
        let cleaned = Arc::new(log.create_new_cleaned_segment(group[0].base_offset())?);
        let built = self.fill_cleaned(round, group, &cleaned, stats, txn);
        if !matches!(built, Ok(Filled::Written)) {
            // Nothing was swapped: the `.cleaned` files are ours to remove.
            if let Err(d) = cleaned.delete_if_exists() {
                log::warn!("could not remove {}: {d}", cleaned.path().display());
            }
        }
        if built? == Filled::Unchanged {
            stats.segments_kept += 1;
            log::info!(
                "Cleaner {}: segment {} of log {} is unchanged by the clean: kept as it is",
                self.id,
                group[0].base_offset(),
                log.topic_partition()
            );
            return Ok(());
        }
        log::info!(
            "Cleaner {}: Swapping in cleaned segment {} for segment(s) {:?} in log {}",
            self.id,
            cleaned.base_offset(),
            group.iter().map(|s| s.base_offset()).collect::<Vec<_>>(),
            log.topic_partition()
        );
        log.replace_segments(round.guard, std::slice::from_ref(&cleaned), group)?;
        stats.segments_written += 1;
        Ok(())
    }

    /// Recopies every segment of `group` into `cleaned`, then finishes its files; or, for a
    /// group of one segment that the clean leaves exactly as it is, writes nothing (Kafka
    /// rewrites it anyway; kafkalog keeps the original, the same bytes).
    fn fill_cleaned(
        &mut self,
        round: &Round<'_>,
        group: &[Arc<LogSegment>],
        cleaned: &Arc<LogSegment>,
        stats: &mut CleanerStats,
        txn: &mut CleanedTransactionMetadata,
    ) -> Result<Filled> {
        let log = round.log;
        let mut output =
            CleanedOutput { segment: cleaned, writeback_from: 0, deferred: (group.len() == 1).then_some(0) };
        for (i, segment) in group.iter().enumerate() {
            let upper = match group.get(i + 1) {
                Some(next) => next.base_offset(),
                None => segment.read_next_offset()?,
            };
            txn.add_aborted_transactions(&overlapping(round.aborted, segment.base_offset(), upper));
            let retain_legacy_deletes = last_modified_or_zero(segment)? > round.legacy_delete_horizon;
            match self.clean_into(round, segment, retain_legacy_deletes, stats, txn, &mut output) {
                Err(Error::OffsetOverflow { base_offset, offset }) => {
                    log::info!(
                        "Cleaner {}: offset {offset} does not fit a segment at base {base_offset}: splitting {} and \
                         cleaning again",
                        self.id,
                        segment.path().display()
                    );
                    log.split_overflowed_segment(round.guard, segment)?;
                    return Err(Error::LogCleaningAborted { partition: log.topic_partition().to_string() });
                }
                other => other?,
            }
        }
        let aborted = txn.take_retained_aborted();
        if let Some(unwritten) = output.deferred {
            // The cleaned segment's `.txnindex` holds exactly the aborted transactions whose
            // markers stay; the original's may differ, so only a segment with neither is kept.
            let original_txn_index = std::fs::metadata(group[0].txn_index_path()).is_ok_and(|m| m.len() > 0);
            if aborted.is_empty() && !original_txn_index {
                return Ok(Filled::Unchanged);
            }
            let copied = self.bufs.copy_prefix(&group[0], cleaned, unwritten)?;
            stats.add_throttled(self.throttler.maybe_throttle(copied as f64));
        }
        // Kafka's `cleanedIndex.append`; `cleaned.flush()` below makes the entries durable.
        for t in &aborted {
            cleaned.update_txn_index(*t)?;
        }
        cleaned.on_become_inactive_segment()?;
        cleaned.flush()?;
        let last = group.last().expect("groups are never empty");
        let modified = UNIX_EPOCH + Duration::from_millis(last_modified_or_zero(last)?.max(0) as u64);
        cleaned.log().set_modified(modified)?;
        Ok(Filled::Written)
    }

    /// Filters one source segment into `output`'s segment chunk by chunk (Kafka's `cleanInto`).
    fn clean_into(
        &mut self,
        round: &Round<'_>,
        source: &LogSegment,
        retain_legacy_deletes: bool,
        stats: &mut CleanerStats,
        txn: &mut CleanedTransactionMetadata,
        output: &mut CleanedOutput<'_>,
    ) -> Result<()> {
        let dest = output.segment;
        let config = round.log.config();
        let max_message_bytes = config.max_message_bytes.max(0) as usize;
        let path = source.path();
        let mut filter = CleanerFilter {
            current_time: round.now,
            delete_retention_ms: config.delete_retention_ms,
            retain_legacy_deletes,
            last_records: round.last_records,
            upper_bound_offset: round.upper_bound,
            map: &mut self.map,
            mapped: &self.mapped,
            txn,
        };
        let size = source.size();
        let mut position = 0u64;
        // The next batch's offsets are this or more (the segment's base before any is read).
        let mut next = source.base_offset();
        let mut skips = round.skip.as_ref();
        while position < size {
            (round.check)()?;
            if let Some(bounds) = skips {
                match bounds.run_at(&self.mapped, source, position, next)? {
                    Run::Skip(skip) => {
                        if output.deferred.take().is_some() {
                            // The first change: what came before goes out as it was.
                            let copied = self.bufs.copy_prefix(source, dest, position)?;
                            stats.add_throttled(self.throttler.maybe_throttle(copied as f64));
                        }
                        stats.messages_read += skip.records;
                        stats.bytes_read += skip.to - position;
                        stats.bytes_skipped += skip.to - position;
                        (position, next) = (skip.to, skip.next);
                        continue;
                    }
                    Run::Distrusted => skips = None,
                    Run::None => {}
                }
            }
            let n = self.bufs.read_chunk(source, position, size)?;
            stats.add_throttled(self.throttler.maybe_throttle(n as f64));
            self.bufs.kept.clear();
            let bufs = &mut self.bufs;
            let result = filter
                .filter_to(&bufs.read[..n], &mut bufs.kept, &mut bufs.builder, &mut bufs.scratch, stats)
                .map_err(|e| e.in_file(&path, position))?;
            stats.messages_read += result.messages_read;
            stats.bytes_read += result.bytes_read as u64;
            stats.messages_written += result.messages_retained;
            stats.bytes_written += result.bytes_retained as u64;
            let chunk_start = position;
            position += result.bytes_read as u64;
            next = next.max(result.next_offset);
            if let Some(unwritten) = output.deferred {
                if result.batches_verbatim == result.batches_read {
                    output.deferred = Some(unwritten + result.bytes_read as u64);
                    bufs.kept.clear();
                } else {
                    // The first change: what came before goes out as it was, then this chunk.
                    output.deferred = None;
                    let copied = self.bufs.copy_prefix(source, dest, chunk_start)?;
                    stats.add_throttled(self.throttler.maybe_throttle(copied as f64));
                }
            }
            write_kept(&self.bufs, &self.throttler, n, (result.max_offset, result.messages_retained), output, stats)?;
            if n > 0 && result.bytes_read == 0 {
                if self.bufs.is_torn_tail(source, position, n) {
                    source.check_torn_tail(position)?;
                    if output.deferred.is_none() {
                        log::warn!(
                            "Cleaner {}: the cleaned segment {} leaves out the {} bytes after position {position} of \
                             {}, which do not form a complete record batch",
                            self.id,
                            dest.path().display(),
                            size - position,
                            path.display()
                        );
                    }
                    break;
                }
                self.bufs.grow_or_fail(source, position, max_message_bytes, n)?;
            }
        }
        self.bufs.restore();
        Ok(())
    }
}

/// Appends what the filter kept of the chunk in the read buffer (`n` bytes; the chunk's
/// largest offset and record count) to the cleaned segment, each run in one write: batches
/// kept as they were go straight from the read buffer.
fn write_kept(
    bufs: &IoBuffers,
    throttler: &Throttler,
    n: usize,
    (max_offset, records): (i64, u64),
    output: &mut CleanedOutput<'_>,
    stats: &mut CleanerStats,
) -> Result<()> {
    if bufs.kept.is_empty() {
        return Ok(());
    }
    let dest = output.segment;
    let mut count = records;
    for bytes in bufs.kept.slices(&bufs.read[..n]) {
        // The segment counts records per append; the chunk's count goes with its first run.
        dest.append(max_offset, bytes, std::mem::take(&mut count))?;
    }
    stats.add_throttled(throttler.maybe_throttle(bufs.kept.len() as f64));
    let written = dest.size();
    if written - output.writeback_from >= WRITEBACK_BYTES {
        dest.log().start_writeback(output.writeback_from, written);
        output.writeback_from = written;
    }
    Ok(())
}

/// How filling a `.cleaned` segment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filled {
    /// The cleaned segment is complete and flushed: swap it in.
    Written,
    /// The group's one segment is unchanged; nothing was written.
    Unchanged,
}

/// The `.cleaned` segment being written, and its state.
struct CleanedOutput<'a> {
    segment: &'a LogSegment,
    /// Where the next write-back hint starts.
    writeback_from: u64,
    /// For a group of one segment: the length of the source prefix that came out unchanged
    /// and is not written yet (`None` once something changed, or for a group of several).
    deferred: Option<u64>,
}

/// Bytes of a `.cleaned` segment written between two write-back hints: the disk writes the
/// segment while the cleaner fills it, instead of all at its fsync.
const WRITEBACK_BYTES: u64 = 8 << 20;

/// A segment's modification time, 0 when retention has meanwhile unlinked its file (Java's
/// `File.lastModified` of a missing file; the replace then skips the deleted segment).
fn last_modified_or_zero(segment: &LogSegment) -> Result<i64> {
    match segment.last_modified() {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(0),
        other => other,
    }
}

/// The aborted transactions overlapping `[start, end)` (Kafka's `collectAbortedTransactions`).
fn overlapping(aborted: &[AbortedTxn], start: i64, end: i64) -> Vec<AbortedTxn> {
    aborted.iter().filter(|t| t.last_offset >= start && t.first_offset < end).copied().collect()
}

/// Groups consecutive segments so that each group fits one segment (Kafka's
/// `groupSegmentsBySize`): total log bytes <= `max_size`, offset- and time-index bytes each <=
/// `max_index_size`, and offsets within `i32::MAX` of the group's base, estimated from the next
/// segment's base (or `first_uncleanable - 1` for the last). Empty segments always join.
pub fn group_segments_by_size(
    segments: &[Arc<LogSegment>],
    max_size: i32,
    max_index_size: i32,
    first_uncleanable: i64,
) -> Result<Vec<Vec<Arc<LogSegment>>>> {
    let max_size = i64::from(max_size);
    let max_index = i64::from(max_index_size);
    let index_sizes = |s: &LogSegment| -> Result<(i64, i64)> {
        Ok((s.offset_index()?.get()?.size_in_bytes() as i64, s.time_index()?.get()?.size_in_bytes() as i64))
    };
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let mut group = vec![segments[i].clone()];
        let mut log_size = segments[i].size() as i64;
        let (mut index_size, mut time_index_size) = index_sizes(&segments[i])?;
        i += 1;
        while i < segments.len() {
            let next = &segments[i];
            let (oi, ti) = index_sizes(next)?;
            let last_offset_estimate = match segments.get(i + 1) {
                Some(after) => after.base_offset() - 1,
                None => first_uncleanable - 1,
            };
            let fits = log_size + next.size() as i64 <= max_size
                && index_size + oi <= max_index
                && time_index_size + ti <= max_index
                && (next.size() == 0 || last_offset_estimate - group[0].base_offset() <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            log_size += next.size() as i64;
            index_size += oi;
            time_index_size += ti;
            group.push(next.clone());
            i += 1;
        }
        groups.push(group);
    }
    Ok(groups)
}
