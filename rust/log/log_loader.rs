//! Loading and crash recovery of one partition directory, in the order of Kafka's `LogLoader`
//! (`storage/.../internals/log/LogLoader.java`):
//!
//! 1. delete `*.deleted` files (and `*.tmp` files of interrupted atomic writes); drop `.swap` files at or above the smallest `.cleaned` offset,
//!    then every `.cleaned` file (an interrupted clean or split is rolled back);
//! 2. delete the files the remaining swaps supersede, then rename the swaps into place (an
//!    interrupted replace is completed);
//! 3. load the segments in offset order: orphan index files are deleted, a segment whose offset
//!    index is missing or fails a cheap sanity check is recovered, a missing time index comes
//!    back empty. After a clean shutdown, the sanity checks of every segment but the last wait
//!    for the segment's first use of an index (`IndexCheck::AtFirstUse`);
//! 4. after an unclean shutdown, recover every segment from the one holding the recovery point
//!    on; a truncation deletes every later segment;
//! 5. a log start offset past the log end wipes the log (Kafka's rule); an empty directory gets
//!    an empty segment at the log start offset. Stray producer snapshots and the producer state
//!    itself are the opening log's (`ProducerStateManager::remove_stray_snapshots`, then
//!    `rebuild_producer_state`), as Kafka's `LogLoader.load` ends.
//!
//! Segment recovery (3 and 4) rebuilds the segment's `.txnindex` with a fresh producer state
//! rebuilt up to the segment (Kafka's `recoverSegment`), snapshotting it at the segment's end;
//! a segment whose `.txnindex` fails its sanity check is recovered too.
//!
//! A read-only load writes nothing: it skips `.deleted` and `.cleaned` files, reads a pending
//! replace as if it had completed (the swap segments stand in for the ones they supersede), and
//! ends the log at the last complete batch.
//!
//! Thread-safety: a loader runs on one thread over a directory nobody else writes (the caller
//! holds the directory lock); loaders of different directories run in parallel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::leader_epoch_cache::LeaderEpochFileCache;
use super::local_log::LocalLog;
use super::producer_state::snapshot::SnapshotFile;
use super::producer_state::{ProducerStateManager, ProducerStateManagerConfig};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{
    offset_from_file_name, with_suffix, CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, DELETE_DIR_SUFFIX, INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX, PRODUCER_SNAPSHOT_FILE_SUFFIX, SWAP_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX,
};
use crate::index::sanity::{offset_index_problem, time_index_problem, IndexProblem};
use crate::segment::file_records::FileRecords;
use crate::segment::log_segment::LogSegment;
use crate::util::clock::SharedClock;
use crate::util::file::delete_if_exists;

mod recovery;
use recovery::{recover_alone, recover_unflushed};

/// What the caller knows about the directory before loading it.
#[derive(Clone, Copy)]
pub struct LoadParams<'a> {
    /// The topic configuration.
    pub config: &'a LogConfig,
    /// Write nothing, recover nothing.
    pub read_only: bool,
    /// The log dir had a `.kafka_cleanshutdown` marker: nothing past the recovery point needs
    /// recovery.
    pub had_clean_shutdown: bool,
    /// The `recovery-point-offset-checkpoint` entry. `None` (a standalone log without
    /// checkpoints) recovers the active segment only.
    pub recovery_point: Option<i64>,
    /// The `log-start-offset-checkpoint` entry, if any.
    pub log_start_offset: Option<i64>,
    /// Told, as recovery proceeds, how many segments of this log are left to recover.
    pub progress: Option<&'a (dyn Fn(usize) + Sync)>,
    /// The leader epoch cache read from the checkpoint, brought in line with the loaded log:
    /// recovered batches assign their epochs, entries past the log end or before the
    /// checkpointed log start go, a wiped log clears it (Kafka's `LogLoader` and
    /// `LogSegment.recover`). Loading changes it in memory only.
    pub leader_epoch_cache: Option<&'a LeaderEpochFileCache>,
    /// What a segment recovery builds its fresh producer state from, to rebuild the segment's
    /// `.txnindex` (Kafka's `LogLoader.recoverSegment`); `None` recovers without it.
    pub producer_state: Option<RecoveryProducerState<'a>>,
}

/// The settings of the fresh `ProducerStateManager` each segment recovery rebuilds up to the
/// segment's base offset and then feeds the recovered batches (a plain value).
#[derive(Clone, Copy)]
pub struct RecoveryProducerState<'a> {
    /// The partition.
    pub topic_partition: &'a crate::file_names::TopicPartition,
    /// `transaction.max.timeout.ms`.
    pub max_transaction_timeout_ms: i32,
    /// `producer.id.expiration.ms` and verification.
    pub config: ProducerStateManagerConfig,
}

/// What loading found and repaired (Kafka's `LoadedLogOffsets`, plus counts for operators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadResult {
    /// First readable offset: the checkpoint or the first segment's base, whichever is larger.
    pub log_start_offset: i64,
    /// Offsets below this are known to be on disk: the log end after a clean shutdown, else the
    /// checkpointed recovery point (never past the log end).
    pub recovery_point: i64,
    /// Offset after the last complete batch.
    pub log_end_offset: i64,
    /// Position in the active segment where the last complete batch ends.
    pub log_end_position: u64,
    /// Segments loaded.
    pub segments_loaded: usize,
    /// Segments whose batches were re-validated and indexes rebuilt.
    pub segments_recovered: usize,
    /// Bytes cut from torn or corrupt tails.
    pub bytes_truncated: u64,
    /// Segments deleted because an earlier one was truncated, or because the log start offset
    /// lay past the log end.
    pub segments_deleted: usize,
    /// `.swap` files renamed into place (an interrupted replace completed).
    pub swaps_completed: usize,
    /// `.cleaned` and `.swap` files dropped (an interrupted clean or split rolled back).
    pub temp_files_dropped: usize,
    /// Index files without a `.log` file, deleted.
    pub orphan_files_deleted: usize,
    /// Segments split because their offsets did not fit one segment (KAFKA-6264 logs).
    pub segments_split: usize,
    /// The log start checkpoint lay past the log end and every segment was deleted.
    pub log_start_wiped: bool,
}

/// A KRaft snapshot renamed for deletion (`Snapshots.DELETE_SUFFIX`), which the loader leaves alone.
const KRAFT_SNAPSHOT_DELETED_SUFFIX: &str = ".checkpoint.deleted";

/// What [`load`] hands back: the log, what loading found, and the producer state the recovery
/// past the recovery point ended with, when it is known to describe the directory's snapshots
/// (the log's own producer state starts from it instead of listing and reading them again).
pub struct Loaded {
    /// The segments.
    pub local: LocalLog,
    /// What loading found and repaired.
    pub result: LoadResult,
    /// The producer state at the log end, with the snapshots on disk, if the load built one.
    pub producer_state: Option<ProducerStateManager>,
    /// The producer snapshots on disk, when the load's listing still shows them (a writable
    /// load that recovered nothing).
    pub listed_snapshots: Option<BTreeMap<i64, SnapshotFile>>,
}

/// Loads `dir` (see the module doc). Mirrors Kafka's `LogLoader.load`. `listing`: the
/// directory's files as the caller listed them under the directory's lock, just before (a
/// writable load lists them itself without it).
pub fn load(dir: &Path, params: &LoadParams<'_>, clock: SharedClock, listing: Option<Listing>) -> Result<Loaded> {
    let local = LocalLog::new(dir, clock, params.read_only);
    let mut result = LoadResult::default();
    // The directory is listed once; again only if finishing an interrupted replace changed it.
    let (bases, files) = if params.read_only {
        (read_only_bases(dir)?, Listing::default())
    } else {
        let mut files = match listing {
            Some(listing) => listing,
            None => Listing::read(dir)?,
        };
        if complete_or_roll_back_replace(dir, &files, &mut result)? {
            files = Listing::read(dir)?;
        }
        (remove_orphans(&files, &mut result)?, files)
    };
    let is_delete_dir = dir.file_name().is_some_and(|n| n.to_string_lossy().ends_with(DELETE_DIR_SUFFIX));
    let unflushed = !params.read_only && !params.had_clean_shutdown && !is_delete_dir;
    // Where step 4 starts: the segment holding the recovery point.
    let recovery_point = params.recovery_point.unwrap_or_else(|| bases.last().map_or(0, |(b, _)| *b));
    let unflushed_from = bases.iter().map(|(b, _)| *b).take_while(|b| *b <= recovery_point).last().unwrap_or(i64::MIN);
    let mut needs_recovery = Vec::new();
    let last_base = bases.last().map(|(base, _)| *base);
    for (base, suffix) in &bases {
        let listing = (!params.read_only).then_some(&files);
        // Step 4 rebuilds every index of these from the data: nothing to check first.
        let check = if unflushed && *base >= unflushed_from && params.producer_state.is_some() {
            IndexCheck::RecoveredLater
        } else if params.had_clean_shutdown && !params.read_only && Some(*base) != last_base {
            IndexCheck::AtFirstUse
        } else {
            IndexCheck::Now { last: Some(*base) == last_base }
        };
        if open_segment(dir, *base, suffix, check, params, &local, listing)? {
            needs_recovery.push(*base);
        }
    }
    result.segments_loaded = bases.len();
    for &base in &needs_recovery {
        if let Some(segment) = local.segments().get(base) {
            recover_alone(&segment, params, &local, &mut result)?;
        }
    }
    let mut producer_state = None;
    if unflushed {
        let recovery_point =
            params.recovery_point.unwrap_or_else(|| local.segments().last_segment().map_or(0, |s| s.base_offset()));
        // The listing still shows the snapshots unless a recovery above wrote some.
        let snapshots = needs_recovery.is_empty().then(|| files.snapshots());
        producer_state =
            recover_unflushed(dir, recovery_point, &needs_recovery, params, &local, &mut result, snapshots)?;
    }
    finish(dir, params, &local, &mut result)?;
    // Without a segment recovered, the listing still shows the snapshots.
    let listed_snapshots = (!params.read_only && result.segments_recovered == 0).then(|| files.snapshots());
    Ok(Loaded { local, result, producer_state, listed_snapshots })
}

/// Steps 1 and 2 over the listing `files`: `.deleted` files go; an interrupted clean or split (a
/// `.cleaned` file exists) is rolled back; an interrupted replace (only `.swap` files) is
/// completed. Returns whether anything in the directory changed.
fn complete_or_roll_back_replace(dir: &Path, files: &Listing, result: &mut LoadResult) -> Result<bool> {
    let mut changed = false;
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    for name in &files.names {
        // The path is built only for the names acted on (most are live files).
        let path = || dir.join(name);
        if is_deleted_file(name) {
            let path = path();
            log::info!("Deleting stray temporary file {}", path.display());
            delete_if_exists(&path)?;
            changed = true;
        } else if name.ends_with(crate::file_names::TMP_FILE_SUFFIX) {
            // The temporary file of an atomic write a crash interrupted (`partition.metadata`,
            // `leader-epoch-checkpoint`); the real file is intact. Kafka leaves these behind.
            let path = path();
            log::info!("deleting {}, left by an interrupted write", path.display());
            delete_if_exists(&path)?;
            changed = true;
        } else if name.ends_with(CLEANED_FILE_SUFFIX) {
            cleaned.push((offset_from_file_name(name), path()));
        } else if name.ends_with(SWAP_FILE_SUFFIX) {
            swaps.push((offset_from_file_name(name), name.clone(), path()));
        }
    }
    let min_cleaned = cleaned.iter().filter_map(|(o, _)| *o).min().unwrap_or(i64::MAX);
    let (swaps, dropped): (Vec<_>, Vec<_>) =
        swaps.into_iter().partition(|(offset, _, _)| offset.is_some_and(|o| o < min_cleaned));
    roll_back(&dropped, &cleaned, min_cleaned, result)?;
    // The range the remaining swap segments cover: [smallest base, largest next offset).
    let mut min_swap = i64::MAX;
    let mut max_swap = i64::MIN;
    for (offset, name, path) in &swaps {
        if name.ends_with(&format!("{LOG_FILE_SUFFIX}{SWAP_FILE_SUFFIX}")) {
            let base = offset.unwrap_or(0);
            min_swap = min_swap.min(base);
            max_swap = max_swap.max(next_offset_of_file(path, base)?);
        }
    }
    if min_swap < max_swap {
        delete_superseded(files, min_swap, max_swap)?;
    }
    for (_, name, path) in &swaps {
        let target = dir.join(name.strip_suffix(SWAP_FILE_SUFFIX).unwrap_or(name));
        log::info!("Recovering file {} by renaming from {SWAP_FILE_SUFFIX} files.", path.display());
        crate::util::file::rename(path, &target)?;
        result.swaps_completed += 1;
    }
    if !swaps.is_empty() {
        crate::util::file::fsync_dir(dir)?;
    }
    Ok(changed || !dropped.is_empty() || !cleaned.is_empty() || !swaps.is_empty())
}

/// Rolls back an interrupted clean or split: deletes the `.swap` files at or above the smallest
/// `.cleaned` offset (`dropped`) and every `.cleaned` file.
fn roll_back(
    dropped: &[(Option<i64>, String, PathBuf)],
    cleaned: &[(Option<i64>, PathBuf)],
    min_cleaned: i64,
    result: &mut LoadResult,
) -> Result<()> {
    for (_, _, path) in dropped {
        log::warn!(
            "Deleting invalid swap file {} ({} bytes) minCleanedFileOffset: {min_cleaned}: an interrupted split \
             is rolled back, the segment it was splitting is kept",
            path.display(),
            file_len(path)
        );
        delete_if_exists(path)?;
        result.temp_files_dropped += 1;
    }
    for (_, path) in cleaned {
        log::warn!(
            "Deleting stray .cleaned file {} ({} bytes): an interrupted clean or split is rolled back, \
             the segments it was replacing are kept",
            path.display(),
            file_len(path)
        );
        delete_if_exists(path)?;
        result.temp_files_dropped += 1;
    }
    Ok(())
}

/// Deletes the live files (of the listing `files`) whose offsets the remaining `.swap` segments
/// cover, `[min_swap, max_swap)`: the segments an interrupted replace was replacing.
fn delete_superseded(files: &Listing, min_swap: i64, max_swap: i64) -> Result<()> {
    // Live files only: the temporary ones are gone already.
    let live = files.names.iter().filter(|name| {
        ![SWAP_FILE_SUFFIX, CLEANED_FILE_SUFFIX, crate::file_names::TMP_FILE_SUFFIX].iter().any(|s| name.ends_with(s))
            && !is_deleted_file(name)
    });
    for name in live {
        let path = &files.dir.join(name);
        if offset_from_file_name(name).is_some_and(|o| o >= min_swap && o < max_swap) {
            log::warn!(
                "Deleting segment files {} ({} bytes) that is compacted but has not been deleted yet: \
                 the .swap segments of an interrupted replace hold offsets {min_swap} to {}",
                path.display(),
                file_len(path),
                max_swap - 1
            );
            delete_if_exists(path)?;
        }
    }
    Ok(())
}

/// A file awaiting deletion (KRaft snapshots marked for deletion are the metadata log's to
/// recover: Kafka's `Snapshots.DELETE_SUFFIX`).
pub(crate) fn is_deleted_file(name: &str) -> bool {
    name.ends_with(DELETED_FILE_SUFFIX) && !name.ends_with(KRAFT_SNAPSHOT_DELETED_SUFFIX)
}

/// Offset after the last complete batch of a `.log` file, read without side effects.
fn next_offset_of_file(path: &Path, base: i64) -> Result<i64> {
    let file = FileRecords::open(path.to_path_buf(), false, None)?;
    let mut next = base;
    let _ = file.for_each_header(0, file.size(), |h| {
        next = h.next_offset();
        Ok(true)
    });
    Ok(next)
}

/// Step 3, first half: deletes index files and snapshots' siblings without a `.log` file and
/// returns the segment bases in order.
fn remove_orphans(files: &Listing, result: &mut LoadResult) -> Result<Vec<(i64, &'static str)>> {
    let mut bases: Vec<i64> = files
        .names
        .iter()
        .filter(|name| is_segment_file(name, LOG_FILE_SUFFIX))
        .filter_map(|name| offset_from_file_name(name))
        .collect();
    bases.sort_unstable();
    for name in &files.names {
        let is_index = [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX]
            .iter()
            .any(|suffix| is_segment_file(name, suffix));
        if let (true, Some(base)) = (is_index, offset_from_file_name(name)) {
            if bases.binary_search(&base).is_err() {
                let path = &files.dir.join(name);
                log::warn!(
                    "Found an orphaned index file {}, with no corresponding log file; deleting it ({} bytes)",
                    path.display(),
                    file_len(path)
                );
                delete_if_exists(path)?;
                result.orphan_files_deleted += 1;
            }
        }
    }
    Ok(bases.into_iter().map(|b| (b, "")).collect())
}

/// The segments a read-only reader sees: what a writable load would leave. Live segments, with
/// the pending `.swap` segments below the smallest `.cleaned` offset standing in for the live
/// ones they supersede (the others would be dropped). Nothing is deleted or renamed.
fn read_only_bases(dir: &Path) -> Result<Vec<(i64, &'static str)>> {
    let files = Listing::read(dir)?;
    let min_cleaned = files
        .names
        .iter()
        .filter(|n| n.ends_with(CLEANED_FILE_SUFFIX))
        .filter_map(|n| offset_from_file_name(n))
        .min()
        .unwrap_or(i64::MAX);
    let swap_log = format!("{LOG_FILE_SUFFIX}{SWAP_FILE_SUFFIX}");
    let mut map: BTreeMap<i64, &'static str> = files
        .names
        .iter()
        .filter(|name| is_segment_file(name, LOG_FILE_SUFFIX))
        .filter_map(|name| offset_from_file_name(name).map(|b| (b, "")))
        .collect();
    for name in &files.names {
        let Some(base) = offset_from_file_name(name).filter(|b| name.ends_with(&swap_log) && *b < min_cleaned) else {
            continue;
        };
        let next = next_offset_of_file(&dir.join(name), base)?;
        map.retain(|b, _| *b < base || *b >= next);
        map.insert(base, SWAP_FILE_SUFFIX);
    }
    Ok(map.into_iter().collect())
}

/// What [`open_segment`] checks of a segment's indexes.
#[derive(Clone, Copy)]
enum IndexCheck {
    /// Step 4 recovers the segment and rebuilds all three indexes: nothing to check first
    /// (Kafka's loader, too, leaves their contents to the recovery of the segments past the
    /// recovery point).
    RecoveredLater,
    /// Sanity checks; `last`: the last segment, whose indexes may be untrimmed.
    Now { last: bool },
    /// An inactive segment after a clean shutdown: its indexes are checked at their first use,
    /// and rebuilt from the segment's data there if damaged
    /// (`segment/log_segment/index_check.rs`), so a start-up opens no offset or time index file of
    /// a segment it does not read. Kafka's loader never checks them ("we will recover the segments above
    /// the recovery point in recoverLog() in any case"); a missing offset index (known from the
    /// listing) still makes the loader recover the segment.
    AtFirstUse,
}

/// Step 3, second half: opens one segment and adds it to the log. Returns whether it must be
/// recovered now: its offset index is missing or implausible, or (all but the `last` segment,
/// whose preallocated indexes a crash leaves untrimmed and which is recovered after one anyway)
/// an index ends with a tail of zeros. A missing time index comes back empty (Kafka's
/// `sanityCheck(timeIndexFileNewlyCreated)`), rebuilt only if the segment is recovered later.
///
/// `listing` (a writable load's, sorted by name) tells which index files exist, instead of a
/// `stat` or a failed open per file; `check` says whether the indexes are checked now.
fn open_segment(
    dir: &Path,
    base: i64,
    suffix: &str,
    check: IndexCheck,
    params: &LoadParams<'_>,
    local: &LocalLog,
    listing: Option<&Listing>,
) -> Result<bool> {
    let (recovered_later, check_now, last) = match check {
        IndexCheck::RecoveredLater => (true, false, false),
        IndexCheck::Now { last } => (false, true, last),
        IndexCheck::AtFirstUse => (false, false, false),
    };
    let index_path = || with_suffix(&crate::file_names::offset_index_file(dir, base), suffix);
    let time_index_path = || with_suffix(&crate::file_names::time_index_file(dir, base), suffix);
    // The listing's names, looked up by name (no path built or parsed).
    let exists = |path: &dyn Fn() -> PathBuf, file_suffix: &str| match listing {
        Some(files) => files.contains(&(crate::file_names::segment_file_name(base, file_suffix) + suffix)),
        None => path().exists(),
    };
    let time_index_new = !exists(&time_index_path, TIME_INDEX_FILE_SUFFIX);
    let index_problem = if params.read_only || recovered_later {
        None
    } else if !exists(&index_path, INDEX_FILE_SUFFIX) {
        Some(IndexProblem::Missing)
    } else if check_now {
        let max_index_size = params.config.segment_index_bytes.max(0) as usize;
        offset_index_problem(&index_path(), !last).or_else(|| {
            (!time_index_new).then(|| time_index_problem(&time_index_path(), !last, max_index_size)).flatten()
        })
    } else {
        None
    };
    let mut segment =
        LogSegment::open(dir, base, params.config, local.clock().clone(), suffix, false, params.read_only)?;
    let txn_missing = listing.is_some() && !exists(&|| segment.txn_index_path(), TXN_INDEX_FILE_SUFFIX);
    if txn_missing {
        segment.txn_index_known_missing();
    }
    // Kafka's LogSegment.sanityCheck also checks the .txnindex: a damaged one is rebuilt by
    // recovering the segment.
    let index_problem = match index_problem {
        None if !params.read_only && !recovered_later && !txn_missing => match segment.sanity_check_txn_index() {
            Err(e @ Error::CorruptIndex { .. }) => Some(IndexProblem::Corrupt(e.to_string())),
            other => other.map(|()| None)?,
        },
        other => other,
    };
    segment.set_rolling_jitter_ms(super::local_log::random_jitter(params.config));
    let recover = if let Some(problem) = index_problem {
        problem.warn(module_path!(), &segment.path(), "recovering segment and rebuilding index files");
        true
    } else {
        if time_index_new && !params.read_only && !recovered_later {
            log::info!(
                "Could not find time index file {}; it starts empty (timestamp lookups scan the segment)",
                time_index_path().display()
            );
            // Kafka's `timeIndex().resize(0)`: an empty file, left unmapped.
            segment.time_index()?.create_empty_if_missing()?;
        }
        if !check_now && !recovered_later {
            segment.check_indexes_at_first_use();
        }
        false
    };
    local.segments().add(Arc::new(segment));
    Ok(recover)
}

/// Step 5: the log end, the log start rules, an empty log's first segment, stray snapshots,
/// and full-size indexes for the active segment.
fn finish(dir: &Path, params: &LoadParams<'_>, local: &LocalLog, result: &mut LoadResult) -> Result<()> {
    let checkpoint_start = params.log_start_offset.unwrap_or(0);
    if let Some(active) = local.segments().last_segment() {
        // The active segment's indexes open at full size now, before reading its end looks its
        // offset index up (one open and map each, not a map at the file's size and a remap).
        if !params.read_only {
            active.resize_indexes(params.config.segment_index_bytes as usize)?;
        }
        // A recovered active segment's end is known from its recovery's scan: its offset index
        // (prepared at full size, `LazyIndex::rewrite_mapped`) stays unmapped until first used.
        let end = active.take_recovered_end().map_or_else(|| active.read_next_offset_and_end(), Ok);
        (result.log_end_offset, result.log_end_position) = match end {
            // A torn tail although the dir was shut down cleanly (the file was damaged since):
            // Kafka would end the log at the last complete batch without looking; kafkalog
            // recovers the segment so the damage is cut and counted.
            Err(Error::CorruptRecord { .. }) if !params.read_only => {
                log::warn!(
                    "{} ends in an incomplete batch although the log was shut down cleanly; recovering it",
                    active.path().display()
                );
                recover_alone(&active, params, local, result)?;
                let active = local.segments().last_segment().unwrap_or(active);
                active.read_next_offset_and_end()?
            }
            other => other?,
        };
        if !params.read_only && result.log_end_offset < checkpoint_start {
            let all = local.segments().values();
            log::warn!(
                "Deleting all segments of {} because logEndOffset ({}) is smaller than logStartOffset \
                 {checkpoint_start}. This could happen if segment files were deleted from the file system. \
                 Deleted: {}",
                dir.display(),
                result.log_end_offset,
                describe_segments(&all)
            );
            result.segments_deleted += all.len();
            result.log_start_wiped = true;
            local.remove_and_delete_segments(&all, params.config)?;
            if let Some(cache) = params.leader_epoch_cache {
                cache.clear_and_flush()?;
            }
        }
    }
    if local.segments().is_empty() {
        result.log_end_offset = checkpoint_start;
        result.log_end_position = 0;
        if !params.read_only {
            local.roll(checkpoint_start, params.config, None)?;
        }
    }
    let first_base = local.segments().first_segment().map_or(checkpoint_start, |s| s.base_offset());
    result.log_start_offset = first_base.max(checkpoint_start);
    if let Some(active) = local.segments().last_segment() {
        if params.read_only {
            active.end_read_only_view_at(result.log_end_position)?;
        } else {
            active.resize_indexes(params.config.segment_index_bytes as usize)?;
        }
    }
    if let Some(cache) = params.leader_epoch_cache {
        // Kafka's LogLoader.load: entries past the recovered log end go, and the earliest
        // entry follows the checkpointed log start.
        cache.truncate_from_end(result.log_end_offset)?;
        cache.truncate_from_start(checkpoint_start)?;
    }
    result.recovery_point = if params.had_clean_shutdown {
        result.log_end_offset
    } else {
        let rp =
            params.recovery_point.unwrap_or_else(|| local.segments().last_segment().map_or(0, |s| s.base_offset()));
        rp.min(result.log_end_offset).max(result.log_start_offset.min(result.log_end_offset))
    };
    Ok(())
}

/// A file's length in bytes (0 if it cannot be read), for the warnings.
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// `<file> (<n> bytes), ...; <total> bytes in all`, for the warnings that delete segments.
fn describe_segments(segments: &[Arc<LogSegment>]) -> String {
    let files: Vec<String> = segments.iter().map(|s| format!("{} ({} bytes)", s.path().display(), s.size())).collect();
    let total: u64 = segments.iter().map(|s| s.size()).sum();
    format!("{}; {total} bytes in all", files.join(", "))
}

/// `<20 digits><suffix>` exactly.
fn is_segment_file(name: &str, suffix: &str) -> bool {
    name.len() == 20 + suffix.len() && name.ends_with(suffix) && offset_from_file_name(name).is_some()
}

/// The regular files of a partition directory, listed once by a writable open under the
/// directory's lock (nobody else changes the directory meanwhile): the open and its load look
/// files up here instead of a `stat` or a failed open each. A plain value, owned by one open.
#[derive(Debug, Default)]
pub struct Listing {
    dir: PathBuf,
    /// File names, sorted.
    names: Vec<String>,
}

impl Listing {
    /// Lists the regular files of `dir`.
    ///
    /// # Errors
    /// `Io` naming `dir` when it cannot be listed.
    pub fn read(dir: &Path) -> Result<Self> {
        Ok(Self::sorted(dir, crate::util::file::list_files(dir)?))
    }

    /// [`Self::read`] through the lock the caller holds on `dir` (`DirLock::list_files`, which
    /// reads the lock's own descriptor).
    ///
    /// # Errors
    /// `Io` naming `dir` when it cannot be listed.
    pub fn read_locked(dir: &Path, lock: &crate::util::file::DirLock) -> Result<Self> {
        Ok(Self::sorted(dir, lock.list_files(dir)?))
    }

    fn sorted(dir: &Path, mut names: Vec<String>) -> Self {
        names.sort_unstable();
        Listing { dir: dir.to_path_buf(), names }
    }

    /// Whether the listing holds a file named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.names.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
    }

    /// The file names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Drops `name` from the listing (the caller deleted the file).
    pub fn forget(&mut self, name: &str) {
        if let Ok(i) = self.names.binary_search_by(|n| n.as_str().cmp(name)) {
            self.names.remove(i);
        }
    }

    /// The producer snapshots listed (`<offset>.snapshot`), as `ProducerStateManager` lists them.
    fn snapshots(&self) -> BTreeMap<i64, SnapshotFile> {
        self.names
            .iter()
            .filter(|n| n.ends_with(PRODUCER_SNAPSHOT_FILE_SUFFIX))
            .filter_map(|n| offset_from_file_name(n).map(|o| (o, SnapshotFile::new(self.dir.join(n), o))))
            .collect()
    }
}
