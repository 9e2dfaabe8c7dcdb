//! Every on-disk name in one place (Kafka's `LogFileUtils` and the name helpers of `LocalLog`):
//! 20-digit segment base names, file suffixes, and partition directory names.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Segment data file.
pub const LOG_FILE_SUFFIX: &str = ".log";
/// Offset index.
pub const INDEX_FILE_SUFFIX: &str = ".index";
/// Time index.
pub const TIME_INDEX_FILE_SUFFIX: &str = ".timeindex";
/// Aborted-transaction index.
pub const TXN_INDEX_FILE_SUFFIX: &str = ".txnindex";
/// Producer state snapshot.
pub const PRODUCER_SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";
/// Appended to a file awaiting asynchronous deletion.
pub const DELETED_FILE_SUFFIX: &str = ".deleted";
/// Appended to a segment being built by the cleaner.
pub const CLEANED_FILE_SUFFIX: &str = ".cleaned";
/// Appended to a segment ready to replace older ones.
pub const SWAP_FILE_SUFFIX: &str = ".swap";
/// Temporary file written before an atomic rename.
pub const TMP_FILE_SUFFIX: &str = ".tmp";
/// Partition directory awaiting deletion.
pub const DELETE_DIR_SUFFIX: &str = "-delete";
/// Partition directory being moved to another log dir.
pub const FUTURE_DIR_SUFFIX: &str = "-future";
/// Partition directory no longer assigned to this broker (KRaft).
pub const STRAY_DIR_SUFFIX: &str = "-stray";
/// Topic id file in a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// Leader epoch cache file in a partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// The 20-digit, zero-padded name Kafka gives a segment with `offset` (`filenamePrefixFromOffset`).
pub fn filename_prefix_from_offset(offset: i64) -> String {
    format!("{offset:020}")
}

/// `<dir>/<20 digits>.log`
pub fn log_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{}{LOG_FILE_SUFFIX}", filename_prefix_from_offset(offset)))
}
/// `<dir>/<20 digits>.index`
pub fn offset_index_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{}{INDEX_FILE_SUFFIX}", filename_prefix_from_offset(offset)))
}
/// `<dir>/<20 digits>.timeindex`
pub fn time_index_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{}{TIME_INDEX_FILE_SUFFIX}", filename_prefix_from_offset(offset)))
}
/// `<dir>/<20 digits>.txnindex`
pub fn transaction_index_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{}{TXN_INDEX_FILE_SUFFIX}", filename_prefix_from_offset(offset)))
}
/// `<dir>/<20 digits>.snapshot`
pub fn producer_snapshot_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{}{PRODUCER_SNAPSHOT_FILE_SUFFIX}", filename_prefix_from_offset(offset)))
}

/// `path` with `suffix` appended to its file name (e.g. `.deleted`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The base offset in a segment file name: the digits before the first `.` (`offsetFromFileName`).
pub fn offset_from_file_name(name: &str) -> Option<i64> {
    let digits = name.split('.').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A partition directory name split into topic and partition (`LocalLog.parseTopicPartitionName`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic-partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition { topic: topic.into(), partition }
    }
    /// `<topic>-<partition>`, the directory name.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Parses a partition directory (`orders-0`, or `orders-0.<uuid32>-delete|-future|-stray`).
/// The partition is the text after the last `-` of the base name.
pub fn parse_topic_partition_name(dir: &Path) -> Result<TopicPartition> {
    let name =
        dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| bad_dir_name(dir, "the directory has no UTF-8 name"))?;
    let base = [DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .map_or(Some(name), |stripped| stripped.rfind('.').map(|dot| &stripped[..dot]))
        .ok_or_else(|| bad_dir_name(dir, "a suffixed directory name must contain `.<uuid>`"))?;
    let dash = base.rfind('-').ok_or_else(|| bad_dir_name(dir, "expected <topic>-<partition>"))?;
    let (topic, partition) = (&base[..dash], &base[dash + 1..]);
    if topic.is_empty() {
        return Err(bad_dir_name(dir, "the topic is empty"));
    }
    let partition: i32 = partition
        .parse()
        .ok()
        .filter(|p: &i32| *p >= 0 && !partition.starts_with('+'))
        .ok_or_else(|| bad_dir_name(dir, "the partition is not a non-negative integer"))?;
    Ok(TopicPartition::new(topic, partition))
}

fn bad_dir_name(dir: &Path, why: &str) -> Error {
    Error::illegal_state(format!(
        "found directory {}, '{}' is not in the form of topic-partition or \
         topic-partition.uniqueId-delete (if marked for deletion): {why}",
        dir.display(),
        dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_twenty_digits() {
        let dir = Path::new("/d/orders-0");
        assert_eq!(log_file(dir, 368_769), Path::new("/d/orders-0/00000000000000368769.log"));
        assert_eq!(offset_index_file(dir, 0), Path::new("/d/orders-0/00000000000000000000.index"));
        assert_eq!(time_index_file(dir, i64::MAX), Path::new("/d/orders-0/09223372036854775807.timeindex"));
        assert_eq!(
            with_suffix(&log_file(dir, 5), DELETED_FILE_SUFFIX),
            Path::new("/d/orders-0/00000000000000000005.log.deleted")
        );
    }

    #[test]
    fn offsets_parse_from_names() {
        assert_eq!(offset_from_file_name("00000000000000368769.log"), Some(368_769));
        assert_eq!(offset_from_file_name("00000000000000000010.log.swap"), Some(10));
        assert_eq!(offset_from_file_name("leader-epoch-checkpoint"), None);
        assert_eq!(offset_from_file_name(".log"), None);
    }

    #[test]
    fn partition_dirs_parse() {
        let p = |s: &str| parse_topic_partition_name(Path::new(s));
        assert_eq!(p("/x/orders-0").unwrap(), TopicPartition::new("orders", 0));
        assert_eq!(p("my-topic-12").unwrap(), TopicPartition::new("my-topic", 12));
        assert_eq!(
            p("my.topic-3.0123456789abcdef0123456789abcdef-delete").unwrap(),
            TopicPartition::new("my.topic", 3)
        );
        assert_eq!(p("t-1.abc-future").unwrap(), TopicPartition::new("t", 1));
        for bad in ["orders", "-1", "orders-x", "orders-1-delete", "orders-+1"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
