//! Read-only checks of one partition directory for `kafkalog verify`: every segment and its
//! indexes (`segment::verify`), the files an interrupted operation leaves (`.deleted`,
//! `.cleaned`, `.swap`, `.tmp`, orphan indexes), the producer snapshots (version and CRC, by the
//! loader's own reader; strays and those past the log end, which the loader deletes),
//! `leader-epoch-checkpoint` (the cache's own reader and rules) and `partition.metadata`.
//! Nothing is written, locked or logged.
//!
//! No Kafka class (Kafka has no such tool; its `LogLoader` repairs instead of reporting).
//!
//! Thread-safety: stateless; safe on a directory another process writes (files that vanish
//! during the check, as retention deletes them, are skipped).

use std::path::{Path, PathBuf};

use super::leader_epoch_cache::LeaderEpochFileCache;
use super::producer_state::snapshot::{list_snapshot_files, read_snapshot};
use crate::checkpoint::partition_metadata::PartitionMetadataFile;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::{
    offset_from_file_name, CLEANED_FILE_SUFFIX, INDEX_FILE_SUFFIX, LEADER_EPOCH_CHECKPOINT_FILE, LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TMP_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX,
};
use crate::segment::log_segment::LogSegment;
use crate::segment::verify::{check_segment, Finding, SegmentPlace};
use crate::util::clock::system_clock;

/// What checking one partition directory found.
#[derive(Debug, Clone, Default)]
pub struct PartitionCheck {
    /// The partition directory.
    pub dir: PathBuf,
    /// Findings, in the order checked.
    pub findings: Vec<Finding>,
    /// The segments' base offsets, in order.
    pub segment_bases: Vec<i64>,
    /// Offset after the last valid batch of the last segment.
    pub log_end_offset: i64,
    /// The base offset of the first segment with a problem in its `.log` or index files:
    /// recovery from there (as after an unclean shutdown with that recovery point) repairs it.
    pub first_damaged_segment: Option<i64>,
    /// The topic id `partition.metadata` holds, when it can be read.
    pub topic_id: Option<String>,
}

/// Checks the partition directory `dir`. `live`: another process holds it, so the active
/// segment's incomplete tail is an append in progress. `.deleted` files are notes: they wait for
/// `file.delete.delay.ms`, and the next load deletes them. `recovery_point`: the log dir's
/// checkpointed recovery point of the partition when the dir has no clean-shutdown marker (the
/// segments from the one holding it on are recovered by the next load).
pub fn verify_partition(dir: &Path, live: bool, recovery_point: Option<i64>) -> Result<PartitionCheck> {
    let mut out = PartitionCheck { dir: dir.to_path_buf(), ..PartitionCheck::default() };
    let names = list_names(dir)?;
    let bases: Vec<i64> = names.iter().filter_map(|n| segment_base(n, LOG_FILE_SUFFIX)).collect();
    check_leftovers(dir, &names, &bases, &mut out);
    let config = LogConfig::default();
    for (i, &base) in bases.iter().enumerate() {
        let next_base = bases.get(i + 1).copied();
        let segment = match LogSegment::open(dir, base, &config, system_clock(), "", false, true) {
            Ok(s) => s,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let recovered_at_load = recovery_point.is_some_and(|rp| next_base.is_none_or(|next| next > rp));
        let place = SegmentPlace { next_base, active: next_base.is_none(), live, recovered_at_load };
        let check = match check_segment(&segment, place) {
            Ok(c) => c,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if check.has_problems() && out.first_damaged_segment.is_none() {
            out.first_damaged_segment = Some(base);
        }
        out.segment_bases.push(base);
        out.log_end_offset = check.next_offset;
        out.findings.extend(check.findings);
    }
    check_snapshots(dir, &out.segment_bases.clone(), &mut out)?;
    check_leader_epochs(dir, &mut out);
    check_partition_metadata(dir, &mut out);
    Ok(out)
}

/// Whether another process holds `dir` (a partition directory): a writer's `flock` on it, or a
/// `LogManager`'s or broker's `.lock` on its log dir. Tested without taking either lock
/// (`/proc/locks` and `F_OFD_GETLK`).
pub fn is_live(dir: &Path) -> bool {
    let lock_file = dir.parent().map(|d| d.join(crate::file_names::LOCK_FILE));
    let dir_locked = crate::util::lock_holder::holder_pid(dir).is_some();
    dir_locked
        || lock_file.is_some_and(|f| {
            matches!(crate::util::file::FileLock::probe(&f), Ok(crate::util::file::LockState::Held { .. }))
        })
}

/// `partition.metadata`: read by the log's own reader, and of version 0, the only one Kafka
/// reads (`PartitionMetadataReadBuffer` refuses any other).
fn check_partition_metadata(dir: &Path, out: &mut PartitionCheck) {
    let metadata = PartitionMetadataFile::new(dir);
    let why = match metadata.read() {
        Ok(Some(id)) => {
            let text = std::fs::read_to_string(metadata.path()).unwrap_or_default();
            let version = text.lines().next().and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string());
            if version.as_deref() == Some("0") {
                out.topic_id = Some(id.to_string());
                return;
            }
            format!(
                "unrecognized version {} of {} (Kafka reads version 0 only)",
                version.unwrap_or_default(),
                metadata.path().display()
            )
        }
        Ok(None) => return,
        Err(e) => e.to_string(),
    };
    out.findings.push(Finding::problem(
        metadata.path(),
        None,
        format!(
        "{why}: the topic id cannot be read (Kafka takes the log dir offline; the broker writes the file again when \
         it leads or follows the partition)"
    ),
    ));
}

/// The names of the regular files of `dir`, sorted.
fn list_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
        let entry = entry.map_err(|e| Error::io(dir, "list directory", e))?;
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort_unstable();
    Ok(names)
}

/// The base offset of `<20 digits><suffix>`.
fn segment_base(name: &str, suffix: &str) -> Option<i64> {
    (name.len() == 20 + suffix.len() && name.ends_with(suffix)).then(|| offset_from_file_name(name)).flatten()
}

/// Files an interrupted operation left, which the loader deletes, rolls back or completes, and
/// index files without a `.log` file (deleted at load).
fn check_leftovers(dir: &Path, names: &[String], bases: &[i64], out: &mut PartitionCheck) {
    for name in names {
        let path = dir.join(name);
        let message = if super::log_loader::is_deleted_file(name) {
            // Not part of the log: a deletion waits file.delete.delay.ms (a clean shutdown
            // leaves the wait unfinished), and the next load deletes what is left.
            out.findings.push(Finding::note(
                &path,
                None,
                "awaits deletion (file.delete.delay.ms); the next load deletes it",
            ));
            continue;
        } else if name.ends_with(CLEANED_FILE_SUFFIX) {
            "left by an interrupted clean or split: recovery deletes it and keeps the segments it was replacing"
        } else if name.ends_with(SWAP_FILE_SUFFIX) {
            "left by an interrupted segment replace: recovery completes the replace (or rolls it back when a \
             .cleaned file is left too)"
        } else if name.ends_with(TMP_FILE_SUFFIX) {
            "left by an interrupted atomic write: recovery deletes it"
        } else if [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX]
            .iter()
            .filter_map(|s| segment_base(name, s))
            .any(|b| bases.binary_search(&b).is_err())
        {
            "an index file with no .log file (an orphan): recovery deletes it"
        } else {
            continue;
        };
        out.findings.push(Finding::problem(&path, None, message));
    }
}

/// Producer snapshots: each readable (version, schema, CRC: the loader's reader), none past the
/// log end, and none that the loader's `removeStraySnapshots` would delete (one at neither a
/// segment's base offset nor the latest).
fn check_snapshots(dir: &Path, bases: &[i64], out: &mut PartitionCheck) -> Result<()> {
    let mut snapshots = list_snapshot_files(dir)?;
    snapshots.sort_by_key(|s| s.offset);
    let latest = snapshots.last().map(|s| s.offset);
    for snapshot in &snapshots {
        let path = snapshot.file();
        let problem = match read_snapshot(path) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e @ Error::CorruptSnapshot { .. }) => {
                Some(format!("{e}: the loader deletes a corrupt snapshot and rebuilds the producer state from the log"))
            }
            Err(e) => return Err(e),
            Ok(_) if snapshot.offset > out.log_end_offset => Some(format!(
                "the snapshot is at offset {}, past the log end offset {}: recovery deletes it",
                snapshot.offset, out.log_end_offset
            )),
            Ok(_) if bases.binary_search(&snapshot.offset).is_err() && Some(snapshot.offset) != latest => {
                Some(format!(
                "a stray snapshot at offset {}, neither a segment's base offset nor the latest: recovery deletes it",
                snapshot.offset
            ))
            }
            Ok(_) => None,
        };
        if let Some(message) = problem {
            out.findings.push(Finding::problem(path, None, message));
        }
    }
    Ok(())
}

/// `leader-epoch-checkpoint`: readable by the cache's loader (version, count, entries, no
/// negative epoch or offset), epochs and start offsets increasing, none past the log end (the
/// loader truncates those).
fn check_leader_epochs(dir: &Path, out: &mut PartitionCheck) {
    let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    // The partition only names the cache in messages.
    let tp =
        crate::file_names::parse_dir_name(dir).unwrap_or_else(|_| crate::file_names::TopicPartition::new("unknown", 0));
    let stored = match LeaderEpochFileCache::load(dir, tp) {
        Ok((_, stored)) => stored,
        Err(e) => {
            out.findings.push(Finding::problem(
                &path,
                None,
                format!("{e}: the log cannot be opened until it is repaired"),
            ));
            return;
        }
    };
    for pair in stored.windows(2) {
        if pair[1].epoch <= pair[0].epoch || pair[1].start_offset < pair[0].start_offset {
            out.findings.push(Finding::problem(
                &path,
                None,
                format!(
                    "entry (epoch {}, start offset {}) does not follow (epoch {}, start offset {}): epochs and start \
                 offsets increase; the loader drops the entries it supersedes",
                    pair[1].epoch, pair[1].start_offset, pair[0].epoch, pair[0].start_offset
                ),
            ));
            return;
        }
    }
    if let Some(e) = stored.iter().find(|e| e.start_offset > out.log_end_offset) {
        out.findings.push(Finding::problem(
            &path,
            None,
            format!(
                "epoch {} starts at offset {}, past the log end offset {}: recovery truncates the cache there",
                e.epoch, e.start_offset, out.log_end_offset
            ),
        ));
    }
}
