//! Kafka's small text checkpoint files (`CheckpointFile`, `OffsetCheckpointFile`,
//! `LeaderEpochCheckpointFile`): a version line, an entry count line, then one entry per line,
//! written tmp + fsync + atomic rename + directory fsync.
//!
//! Files handled here: `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `replication-offset-checkpoint`, `cleaner-offset-checkpoint` (entries `<topic> <partition>
//! <offset>`) and a partition's `leader-epoch-checkpoint` (entries `<epoch> <start offset>`).
//! Thread-safety: stateless functions; callers serialise writes to one file.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::file_names::{
    TopicPartition, CLEANER_OFFSET_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE,
};
use crate::util::file::atomic_write;

/// The only version Kafka writes for these files.
const CURRENT_VERSION: i32 = 0;

/// One line of a leader epoch checkpoint (Kafka's `EpochEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// Leader epoch.
    pub epoch: i32,
    /// First offset written in that epoch.
    pub start_offset: i64,
}

pub(crate) fn malformed(path: &Path, line: usize, what: impl std::fmt::Display) -> Error {
    Error::illegal_state(format!("malformed checkpoint file {} at line {line}: {what}", path.display()))
}

/// Reads a checkpoint's entry lines after checking the version and count (Kafka's
/// `CheckpointReadBuffer.read`). An empty file has no entries; a missing file is an I/O error.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "read checkpoint", e))?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let Some((_, version)) = lines.next() else { return Ok(Vec::new()) };
    let version: i32 = version.trim().parse().map_err(|_| malformed(path, 1, format!("version {version:?}")))?;
    if version != CURRENT_VERSION {
        return Err(malformed(path, 1, format!("unrecognised version {version} (expected {CURRENT_VERSION})")));
    }
    let (_, count) = lines.next().ok_or_else(|| malformed(path, 2, "missing entry count"))?;
    let count: usize = count.trim().parse().map_err(|_| malformed(path, 2, format!("entry count {count:?}")))?;
    let entries: Vec<(usize, String)> = lines.map(|(n, l)| (n, l.to_string())).collect();
    if entries.len() != count {
        return Err(malformed(path, 2, format!("says {count} entries but {} follow", entries.len())));
    }
    Ok(entries)
}

/// Writes a checkpoint's version, count and entry lines atomically (Kafka's
/// `CheckpointFile.write`).
pub(crate) fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = format!("{CURRENT_VERSION}\n{}\n", lines.len());
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    atomic_write(path, text.as_bytes())
}

/// Reads an offset checkpoint (`OffsetCheckpointFile.read`): `(topic-partition, offset)` pairs.
pub fn read_offset_checkpoint(path: &Path) -> Result<Vec<(TopicPartition, i64)>> {
    read_lines(path)?
        .into_iter()
        .map(|(n, line)| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [topic, partition, offset] = fields[..] else {
                return Err(malformed(path, n, format!("expected `<topic> <partition> <offset>`, found {line:?}")));
            };
            let partition = partition.parse().map_err(|_| malformed(path, n, format!("partition {partition:?}")))?;
            let offset = offset.parse().map_err(|_| malformed(path, n, format!("offset {offset:?}")))?;
            Ok((TopicPartition::new(topic, partition), offset))
        })
        .collect()
}

/// Writes an offset checkpoint atomically (`OffsetCheckpointFile.write`).
pub fn write_offset_checkpoint(path: &Path, entries: &[(TopicPartition, i64)]) -> Result<()> {
    let lines: Vec<String> = entries.iter().map(|(tp, o)| format!("{} {} {o}", tp.topic, tp.partition)).collect();
    write_lines(path, &lines)
}

/// Reads a partition's `leader-epoch-checkpoint` (`LeaderEpochCheckpointFile.read`).
pub fn read_leader_epoch_checkpoint(path: &Path) -> Result<Vec<EpochEntry>> {
    read_lines(path)?
        .into_iter()
        .map(|(n, line)| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [epoch, start] = fields[..] else {
                return Err(malformed(path, n, format!("expected `<epoch> <start offset>`, found {line:?}")));
            };
            let epoch = epoch.parse().map_err(|_| malformed(path, n, format!("epoch {epoch:?}")))?;
            let start_offset = start.parse().map_err(|_| malformed(path, n, format!("start offset {start:?}")))?;
            Ok(EpochEntry { epoch, start_offset })
        })
        .collect()
}

/// Writes a `leader-epoch-checkpoint` atomically.
pub fn write_leader_epoch_checkpoint(path: &Path, entries: &[EpochEntry]) -> Result<()> {
    let lines: Vec<String> = entries.iter().map(|e| format!("{} {}", e.epoch, e.start_offset)).collect();
    write_lines(path, &lines)
}

/// Reads an offset checkpoint of `dir`; a missing file is empty, and a corrupt or unreadable
/// one is reported and treated as empty (Kafka's start-up rule).
pub fn read_checkpoint_or_empty(dir: &Path, name: &str) -> HashMap<TopicPartition, i64> {
    let path = dir.join(name);
    if !path.exists() {
        return HashMap::new();
    }
    match read_offset_checkpoint(&path) {
        Ok(entries) => entries.into_iter().collect(),
        Err(e) => {
            let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
            log::warn!(
                "Error occurred while reading {name} file of directory {} ({bytes} bytes discarded): {e}. {}",
                dir.display(),
                discarded_checkpoint_consequence(name)
            );
            HashMap::new()
        }
    }
}

/// What reading a checkpoint as empty means, in Kafka's words where Kafka has them.
fn discarded_checkpoint_consequence(name: &str) -> &'static str {
    match name {
        RECOVERY_POINT_CHECKPOINT_FILE => {
            "Resetting the recovery checkpoint to 0 (after an unclean shutdown every segment is recovered)"
        }
        LOG_START_OFFSET_CHECKPOINT_FILE => "Resetting to the base offset of the first segment",
        CLEANER_OFFSET_CHECKPOINT_FILE => {
            "Resetting the first dirty offsets: the compacted logs are cleaned again from their log start offset"
        }
        _ => "Treating it as empty",
    }
}

/// Writes an offset checkpoint of `dir` (tmp + fsync + rename + directory fsync), sorted so
/// the file is stable.
pub fn write_checkpoint(dir: &Path, name: &str, entries: &[(TopicPartition, i64)]) -> Result<()> {
    let mut sorted = entries.to_vec();
    sorted.sort_by(|a, b| (&a.0.topic, a.0.partition).cmp(&(&b.0.topic, b.0.partition)));
    write_offset_checkpoint(&dir.join(name), &sorted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_checkpoints_round_trip_in_kafka_text_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECOVERY_POINT_CHECKPOINT_FILE);
        let entries = vec![(TopicPartition::new("orders", 0), 42), (TopicPartition::new("my-topic", 12), 0)];
        write_offset_checkpoint(&path, &entries).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n2\norders 0 42\nmy-topic 12 0\n");
        assert_eq!(read_offset_checkpoint(&path).unwrap(), entries);
        assert!(!dir.path().join("recovery-point-offset-checkpoint.tmp").exists());
    }

    #[test]
    fn any_whitespace_is_accepted_and_an_empty_file_has_no_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        std::fs::write(&path, "0\n1\norders\t3   7\n").unwrap();
        assert_eq!(read_offset_checkpoint(&path).unwrap(), vec![(TopicPartition::new("orders", 3), 7)]);
        std::fs::write(&path, "").unwrap();
        assert!(read_offset_checkpoint(&path).unwrap().is_empty());
    }

    #[test]
    fn malformed_checkpoints_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        for (text, needle) in [
            ("1\n0\n", "version 1"),
            ("0\n2\norders 0 1\n", "says 2 entries"),
            ("0\n1\norders x 1\n", "line 3"),
            ("0\n1\norders 0\n", "line 3"),
            ("zero\n", "line 1"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = read_offset_checkpoint(&path).unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains(&path.display().to_string()), "{text:?}: {err}");
        }
    }

    #[test]
    fn leader_epoch_checkpoints_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leader-epoch-checkpoint");
        let entries = vec![EpochEntry { epoch: 0, start_offset: 0 }, EpochEntry { epoch: 3, start_offset: 120 }];
        write_leader_epoch_checkpoint(&path, &entries).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n2\n0 0\n3 120\n");
        assert_eq!(read_leader_epoch_checkpoint(&path).unwrap(), entries);
    }

    #[test]
    fn corrupt_checkpoints_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RECOVERY_POINT_CHECKPOINT_FILE), "0\n2\nt 0 5\n").unwrap();
        assert!(read_checkpoint_or_empty(dir.path(), RECOVERY_POINT_CHECKPOINT_FILE).is_empty());
        write_checkpoint(dir.path(), RECOVERY_POINT_CHECKPOINT_FILE, &[(TopicPartition::new("t", 1), 7)]).unwrap();
        let back = read_checkpoint_or_empty(dir.path(), RECOVERY_POINT_CHECKPOINT_FILE);
        assert_eq!(back[&TopicPartition::new("t", 1)], 7);
    }
}
