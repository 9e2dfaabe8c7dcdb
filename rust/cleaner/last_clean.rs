//! The last clean of each partition, kept on disk beside `cleaner-offset-checkpoint` in the
//! log dir's `kafkalog-last-clean` (no Kafka counterpart: Kafka logs a clean's stats and keeps
//! them in the cleaner's memory, so they are gone after a restart, and a tool reading the disk
//! never sees them). `kafkalog stats` reads the file; a `LogManager` reads it at start-up, so
//! its `cleaner_status` knows the last clean of every partition, not only those cleaned since.
//!
//! The file has the frame of Kafka's checkpoint files (a version line `0`, an entry count, one
//! line per entry), each entry being
//! `<topic> <partition> <time_ms> <first_dirty_offset> <end_offset> <by> <name>=<value>...`
//! with `by` one of [`CleanedBy`]'s names and the pairs the public counters of
//! [`CleanerStats`]. A counter this version does not know is skipped, so an older kafkalog
//! reads a newer one's file. Kafka's `LogManager` loads only the directories of a log dir, so a
//! broker ignores the file.
//!
//! Writers: a `LogManager`'s cleaner threads, holding the log dir's `.lock`
//! ([`write_last_cleans`], under the cleaner manager's lock), and on-demand cleans
//! (`compact_dirty`: `kafkalog compact`, the Spark compact job) with the locks on-demand
//! writers of `cleaner-offset-checkpoint` take ([`record_on_demand`]). Every write replaces the
//! file atomically (tmp + fsync + rename + directory fsync) and drops the entries of partitions
//! whose directory is gone.
//!
//! Thread-safety: plain data and stateless functions; see above for who serialises writers.

use std::collections::BTreeMap;
use std::path::Path;

use super::cleaner_stats::CleanerStats;
use crate::checkpoint::checkpoint_file::{malformed, read_lines, write_lines};
use crate::checkpoint::cleaner_checkpoint::{with_on_demand_locks, UPDATE_LOCK_TIMEOUT};
use crate::error::Result;
use crate::file_names::{TopicPartition, LAST_CLEAN_FILE};

/// Who ran a clean. A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanedBy {
    /// A `LogManager`'s cleaner (Kafka's `LogCleaner`): its threads, or its `compact_now`.
    LogCleaner,
    /// An on-demand clean of the dirty section (`compact_dirty`: `kafkalog compact`, the Spark
    /// compact job).
    OnDemand,
}

impl CleanedBy {
    /// The name in the file and in Python.
    pub fn name(self) -> &'static str {
        match self {
            CleanedBy::LogCleaner => "log-cleaner",
            CleanedBy::OnDemand => "on-demand",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [CleanedBy::LogCleaner, CleanedBy::OnDemand].into_iter().find(|b| b.name() == name)
    }
}

/// The last clean of a partition (no Kafka counterpart; Kafka only logs it). Plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct LastClean {
    /// When it finished (ms).
    pub time_ms: i64,
    /// Its dirty range start.
    pub first_dirty_offset: i64,
    /// The checkpoint it left.
    pub end_offset: i64,
    /// Who ran it.
    pub by: CleanedBy,
    /// What it did.
    pub stats: CleanerStats,
}

/// The last cleans recorded in `log_dir`'s `kafkalog-last-clean`, by partition; empty when
/// there is no file.
///
/// # Errors
/// `Io` naming the file when it cannot be read; `IllegalState` naming the file and line when
/// it is malformed.
pub fn read_last_cleans(log_dir: &Path) -> Result<BTreeMap<TopicPartition, LastClean>> {
    let path = log_dir.join(LAST_CLEAN_FILE);
    if !path.exists() {
        return Ok(BTreeMap::new());
    }
    let mut out = BTreeMap::new();
    for (n, line) in read_lines(&path)? {
        let bad = |what: String| malformed(&path, n, what);
        let mut fields = line.split_whitespace();
        let mut next = |what: &str| fields.next().ok_or_else(|| bad(format!("missing {what} in {line:?}")));
        let topic = next("topic")?.to_string();
        let number = |text: &str, what: &str| text.parse::<i64>().map_err(|_| bad(format!("{what} {text:?}")));
        let partition = next("partition")?;
        let partition =
            i32::try_from(number(partition, "partition")?).map_err(|_| bad(format!("partition {partition}")))?;
        let time_ms = number(next("time")?, "time")?;
        let first_dirty_offset = number(next("first dirty offset")?, "first dirty offset")?;
        let end_offset = number(next("end offset")?, "end offset")?;
        let by = next("cleaner")?;
        let by = CleanedBy::parse(by).ok_or_else(|| bad(format!("cleaner {by:?} (log-cleaner or on-demand)")))?;
        let mut stats = CleanerStats::default();
        for pair in fields {
            let (name, value) = pair.split_once('=').ok_or_else(|| bad(format!("counter {pair:?} (name=value)")))?;
            stats.set_named(name, value).map_err(bad)?;
        }
        let tp = TopicPartition::new(&topic, partition);
        out.insert(tp, LastClean { time_ms, first_dirty_offset, end_offset, by, stats });
    }
    Ok(out)
}

/// Replaces `log_dir`'s `kafkalog-last-clean` with `cleans`, atomically. The caller owns the
/// file (a `LogManager` holding the log dir) or holds the on-demand writers' locks.
///
/// # Errors
/// `Io` naming the file.
pub fn write_last_cleans(log_dir: &Path, cleans: &BTreeMap<TopicPartition, LastClean>) -> Result<()> {
    let lines: Vec<String> = cleans
        .iter()
        .map(|(tp, c)| {
            let mut line = format!(
                "{} {} {} {} {} {}",
                tp.topic,
                tp.partition,
                c.time_ms,
                c.first_dirty_offset,
                c.end_offset,
                c.by.name()
            );
            for (name, value) in c.stats.named_values() {
                line.push(' ');
                line.push_str(name);
                line.push('=');
                line.push_str(&value);
            }
            line
        })
        .collect();
    write_lines(&log_dir.join(LAST_CLEAN_FILE), &lines)
}

/// Records an on-demand clean of `tp` in `log_dir`'s file, keeping the other partitions'
/// entries (those whose directory still exists), under the locks of the module docs. A
/// malformed file is replaced (its entries are lost, with a warning).
///
/// # Errors
/// `LogDirLocked` when a `LogManager` or broker holds the log dir (it owns the file then);
/// `Io` naming the file.
pub fn record_on_demand(log_dir: &Path, tp: &TopicPartition, clean: LastClean) -> Result<()> {
    with_on_demand_locks(log_dir, UPDATE_LOCK_TIMEOUT, &|| {}, || {
        let mut cleans = read_last_cleans(log_dir).unwrap_or_else(|e| {
            log::warn!("{e}: the file is replaced and its other entries are lost");
            BTreeMap::new()
        });
        cleans.retain(|t, _| log_dir.join(t.dir_name()).is_dir());
        cleans.insert(tp.clone(), clean);
        write_last_cleans(log_dir, &cleans)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::file_names::LOCK_FILE;
    use crate::util::file::FileLock;

    fn clean(end: i64, by: CleanedBy) -> LastClean {
        let mut stats = CleanerStats::default();
        (stats.bytes_read, stats.messages_written, stats.buffer_utilization) = (1000, 3, 0.25);
        LastClean { time_ms: 1_700_000_000_000, first_dirty_offset: 5, end_offset: end, by, stats }
    }

    fn same(a: &LastClean, b: &LastClean) -> bool {
        a.time_ms == b.time_ms
            && a.first_dirty_offset == b.first_dirty_offset
            && a.end_offset == b.end_offset
            && a.by == b.by
            && a.stats.named_values() == b.stats.named_values()
    }

    #[test]
    fn written_cleans_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_last_cleans(dir.path()).unwrap().is_empty());
        let mut cleans = BTreeMap::new();
        cleans.insert(TopicPartition::new("users", 0), clean(10, CleanedBy::LogCleaner));
        cleans.insert(TopicPartition::new("users", 3), clean(20, CleanedBy::OnDemand));
        write_last_cleans(dir.path(), &cleans).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LAST_CLEAN_FILE)).unwrap();
        assert!(text.starts_with("0\n2\nusers 0 1700000000000 5 10 log-cleaner bytes_read=1000 "), "{text}");
        let back = read_last_cleans(dir.path()).unwrap();
        assert_eq!(back.len(), 2);
        for (tp, c) in &cleans {
            assert!(same(&back[tp], c), "{tp}: {:?}", back[tp]);
        }
    }

    #[test]
    fn unknown_counters_are_skipped_and_bad_lines_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LAST_CLEAN_FILE);
        std::fs::write(&path, "0\n1\nt 0 1 2 3 on-demand bytes_read=9 from_the_future=1\n").unwrap();
        let back = read_last_cleans(dir.path()).unwrap();
        assert_eq!(back[&TopicPartition::new("t", 0)].stats.bytes_read, 9);
        for (line, what) in [
            ("t 0 1 2 3 janitor", "cleaner \"janitor\""),
            ("t 0 1 2", "missing end offset"),
            ("t x 1 2 3 on-demand", "partition \"x\""),
            ("t 0 1 2 3 on-demand bytes_read=-4", "bytes_read=-4"),
        ] {
            std::fs::write(&path, format!("0\n1\n{line}\n")).unwrap();
            let err = read_last_cleans(dir.path()).unwrap_err().to_string();
            assert!(err.contains(LAST_CLEAN_FILE) && err.contains("line 3") && err.contains(what), "{err}");
        }
    }

    #[test]
    fn an_on_demand_record_keeps_live_partitions_and_respects_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, gone, new) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1), TopicPartition::new("t", 2));
        std::fs::create_dir(dir.path().join(kept.dir_name())).unwrap();
        std::fs::create_dir(dir.path().join(new.dir_name())).unwrap();
        let mut cleans = BTreeMap::new();
        cleans.insert(kept.clone(), clean(1, CleanedBy::LogCleaner));
        cleans.insert(gone.clone(), clean(1, CleanedBy::LogCleaner));
        write_last_cleans(dir.path(), &cleans).unwrap();
        record_on_demand(dir.path(), &new, clean(7, CleanedBy::OnDemand)).unwrap();
        let back = read_last_cleans(dir.path()).unwrap();
        assert_eq!(back.keys().cloned().collect::<Vec<_>>(), vec![kept.clone(), new.clone()]);
        assert_eq!(back[&new].end_offset, 7);

        let _manager = FileLock::try_lock(&dir.path().join(LOCK_FILE)).unwrap();
        let err = record_on_demand(dir.path(), &kept, clean(9, CleanedBy::OnDemand)).unwrap_err();
        assert!(matches!(err, Error::LogDirLocked { .. }), "{err:?}");
        assert_eq!(read_last_cleans(dir.path()).unwrap()[&kept].end_offset, 1);
    }
}
