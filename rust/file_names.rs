//! Every on-disk name in one place (Kafka's `LogFileUtils`, the name helpers of `LocalLog`, and
//! the file names of `LogManager`, `CheckpointFile` users and `CleanShutdownFileHandler`):
//! 20-digit segment base names, file suffixes, the files at the top of a log dir (checkpoints,
//! `.lock`, `meta.properties`, `.kafka_cleanshutdown`), partition directory names (plain and
//! `.<uuid>-delete|-future|-stray`), and Kafka's topic-name rules (`Topic.validate`).
//!
//! The crate's lowest layer beside `error`, the one module it imports: every other layer takes
//! its names from here. Pure functions and constants; safe to call from any thread.

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
/// Per-partition recovery points, at the top of a log dir (`LogManager`'s
/// `RecoveryPointCheckpointFile`).
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// Per-partition log start offsets (`LogManager`'s `LogStartOffsetCheckpointFile`).
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// Per-partition high watermarks (Kafka's `ReplicaManager` writes it).
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// Per-partition first dirty offsets (the log cleaner's `LogCleanerManager` writes it).
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// The last clean of each partition and its stats, beside `cleaner-offset-checkpoint`
/// (kafkalog's own file; Kafka keeps these in the cleaner's memory, and ignores the file).
pub const LAST_CLEAN_FILE: &str = "kafkalog-last-clean";
/// A standalone log's clean close, in its partition directory (kafkalog's own file: a log
/// opened alone skips recovery after it; Kafka's loader ignores it). See
/// `log::unified_log::clean_close`.
pub const CLEAN_CLOSE_FILE: &str = "kafkalog-clean-close";
/// The file a running `LogManager` (or Kafka broker) holds locked in each log dir
/// (`LogManager.LockFileName`).
pub const LOCK_FILE: &str = ".lock";
/// The identity of a log dir (`MetaPropertiesEnsemble.META_PROPERTIES_NAME`).
pub const META_PROPERTIES_FILE: &str = "meta.properties";
/// The clean-shutdown marker of a log dir (`CleanShutdownFileHandler`).
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// The files at the top of a log dir that are written by atomic replace (a `.tmp` beside, then a
/// rename), so a crash may leave their `.tmp` behind.
pub const LOG_DIR_ATOMIC_FILES: [&str; 7] = [
    RECOVERY_POINT_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LAST_CLEAN_FILE,
    META_PROPERTIES_FILE,
    CLEAN_SHUTDOWN_FILE,
];
/// The suffixes of one segment's files, `.log` first: a segment is these files with one base
/// name (the `.txnindex` only when the segment has aborted transactions).
pub const SEGMENT_FILE_SUFFIXES: [&str; 4] =
    [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX];
/// Longest legal topic name, in UTF-16 units as Java counts (Kafka's `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;
/// Longest name `LocalLog` gives a `-delete` or `-stray` directory (a common file-name limit).
pub const MAX_DIR_NAME_LENGTH: usize = 255;

/// The 20-digit, zero-padded name Kafka gives a segment with `offset` (`filenamePrefixFromOffset`).
pub fn filename_prefix_from_offset(offset: i64) -> String {
    match digits(offset) {
        Some(d) => String::from_utf8_lossy(&d).into_owned(),
        None => format!("{offset:020}"),
    }
}

/// `offset`'s 20 zero-padded ASCII digits, without the formatting machinery (the loader builds
/// five names per segment); None for a negative offset, which no segment has.
#[inline]
fn digits(offset: i64) -> Option<[u8; 20]> {
    let mut v = u64::try_from(offset).ok()?;
    let mut out = [b'0'; 20];
    let mut i = out.len();
    while v > 0 {
        i -= 1;
        out[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    Some(out)
}

/// `dir.join(<20 digits><suffix>)` in one allocation.
fn segment_file(dir: &Path, offset: i64, suffix: &str) -> PathBuf {
    let Some(d) = digits(offset) else { return dir.join(format!("{offset:020}{suffix}")) };
    let dir = dir.as_os_str();
    let mut path = std::ffi::OsString::with_capacity(dir.len() + 1 + d.len() + suffix.len());
    path.push(dir);
    if !dir.is_empty() && !dir.as_encoded_bytes().ends_with(b"/") {
        path.push("/");
    }
    path.push(std::str::from_utf8(&d).unwrap_or_default());
    path.push(suffix);
    PathBuf::from(path)
}

/// `<20 digits><suffix>`, the name alone (`offset` not negative).
pub fn segment_file_name(offset: i64, suffix: &str) -> String {
    let Some(d) = digits(offset) else { return format!("{offset:020}{suffix}") };
    let mut name = String::with_capacity(d.len() + suffix.len());
    name.push_str(std::str::from_utf8(&d).unwrap_or_default());
    name.push_str(suffix);
    name
}

/// `<dir>/<20 digits>.log`
pub fn log_file(dir: &Path, offset: i64) -> PathBuf {
    segment_file(dir, offset, LOG_FILE_SUFFIX)
}
/// `<dir>/<20 digits>.index`
pub fn offset_index_file(dir: &Path, offset: i64) -> PathBuf {
    segment_file(dir, offset, INDEX_FILE_SUFFIX)
}
/// `<dir>/<20 digits>.timeindex`
pub fn time_index_file(dir: &Path, offset: i64) -> PathBuf {
    segment_file(dir, offset, TIME_INDEX_FILE_SUFFIX)
}
/// `<dir>/<20 digits>.txnindex`
pub fn transaction_index_file(dir: &Path, offset: i64) -> PathBuf {
    segment_file(dir, offset, TXN_INDEX_FILE_SUFFIX)
}
/// `<dir>/<20 digits>.snapshot`
pub fn producer_snapshot_file(dir: &Path, offset: i64) -> PathBuf {
    segment_file(dir, offset, PRODUCER_SNAPSHOT_FILE_SUFFIX)
}

/// `path` with `suffix` appended to its file name (e.g. `.deleted`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The base offset in a segment file name: the digits before the first `.` (`offsetFromFileName`).
pub fn offset_from_file_name(name: &str) -> Option<i64> {
    // Kafka's names: 20 digits, then the suffix (a loader parses every name of every partition).
    let bytes = name.as_bytes();
    if bytes.len() >= 20 && bytes.get(20).is_none_or(|&b| b == b'.') && bytes[..20].iter().all(u8::is_ascii_digit) {
        return bytes[..20].iter().try_fold(0i64, |v, &b| v.checked_mul(10)?.checked_add(i64::from(b - b'0')));
    }
    let digits = name.split('.').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A partition directory name split into topic and partition (`LocalLog.parseTopicPartitionName`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// Checks `topic` against Kafka's rules (`org.apache.kafka.common.internals.Topic.validate`):
/// not empty, not `.` or `..`, at most 249 characters, only ASCII alphanumerics, `.`, `_` and
/// `-`. The error (Kafka's `InvalidTopicException`) carries Kafka's message.
pub fn validate_topic_name(topic: &str) -> Result<()> {
    let reason = if topic.is_empty() {
        "the empty string is not allowed".to_string()
    } else if topic == "." || topic == ".." {
        format!("'{topic}' is not allowed")
    } else if topic.encode_utf16().count() > MAX_TOPIC_NAME_LENGTH {
        format!("the length of '{topic}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}")
    } else if !topic.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        format!("'{topic}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    } else {
        return Ok(());
    };
    Err(Error::InvalidTopic { topic: topic.to_string(), reason })
}

/// The bytes `-<partition>.<uuid>` and the longest suffix (`-delete`, `-future`, `-stray`) add to
/// a topic name.
const SUFFIXED_EXTRA: usize = 1 + 32 + 7;

/// Checks that the partition directory of `tp` can exist in a log dir whose file system allows
/// names of at most `name_max` bytes (`pathconf(_PC_NAME_MAX)`, 255 on Linux's file systems):
/// `<topic>-<partition>` itself, and the `-delete` / `-stray` names it may get later (capped at
/// [`MAX_DIR_NAME_LENGTH`] bytes, as Kafka caps them, so they fit wherever 255-byte names do).
/// Kafka checks only the topic (at most 249 characters) and leaves room for partitions up to
/// 99999 beside the longest one; a larger partition number there makes a name no file system
/// takes, which Kafka reports as a failed log dir. Here it is the caller's error
/// ([`Error::InvalidTopic`], naming the directory name, its length and the limit).
///
/// `-future` names (`<topic>-<partition>.<uuid>-future`, not capped by Kafka) are not checked:
/// kafkalog never creates them, and requiring room for one would refuse names that Kafka
/// accepts (a 249-character topic leaves none).
pub fn validate_partition_dir_name(tp: &TopicPartition, name_max: usize) -> Result<()> {
    let name = tp.dir_name();
    let later = MAX_DIR_NAME_LENGTH.min(name.len() + SUFFIXED_EXTRA);
    let problem = if name.len() > name_max {
        let digits = name_max.saturating_sub(tp.topic.len() + 1);
        let room = if digits > 0 {
            format!(
                "a topic of {} characters leaves room for a partition number of at most {digits} digits",
                tp.topic.len()
            )
        } else {
            format!("the topic alone is {} bytes", tp.topic.len())
        };
        format!(
            "the partition directory name '{name}' is {} bytes long, more than the {name_max} bytes the log \
             dir's file system allows in a name ({room})",
            name.len()
        )
    } else if later > name_max {
        format!(
            "the partition directory name '{name}' is {} bytes long: the log dir's file system allows \
             {name_max} bytes in a name, too few for the {later}-byte name the directory gets when the \
             partition is deleted (`.<uuid>-delete`)",
            name.len()
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidTopic { topic: tp.topic.clone(), reason: problem })
}

/// `<topic>-<partition>.<uuid>-delete`: the name a partition directory is renamed to when the
/// partition is deleted (`LocalLog.logDeleteDirName`). The topic is cut short so that the name
/// fits in [`MAX_DIR_NAME_LENGTH`] bytes. Each call draws a new random uuid.
pub fn log_delete_dir_name(tp: &TopicPartition) -> String {
    dir_name_with_suffix_capped_length(tp, DELETE_DIR_SUFFIX)
}

/// `<topic>-<partition>.<uuid>-stray`: the name of a partition directory no longer assigned to
/// this broker (`LocalLog.logStrayDirName`); capped like [`log_delete_dir_name`].
pub fn log_stray_dir_name(tp: &TopicPartition) -> String {
    dir_name_with_suffix_capped_length(tp, STRAY_DIR_SUFFIX)
}

/// `<topic>-<partition>.<uuid>-future`: the directory a partition is copied into while it
/// moves to another log dir (`LocalLog.logFutureDirName`). Not capped, as in Kafka.
pub fn log_future_dir_name(tp: &TopicPartition) -> String {
    format!("{}.{}{FUTURE_DIR_SUFFIX}", tp.dir_name(), unique_id())
}

/// Whether `dir`'s name ends with `-delete` (Kafka tests `getName.endsWith(DELETE_DIR_SUFFIX)`).
pub fn is_delete_dir(dir: impl AsRef<Path>) -> bool {
    name_ends_with(dir.as_ref(), DELETE_DIR_SUFFIX)
}

/// Whether `dir`'s name ends with `-future` (`UnifiedLog.isFutureDir`).
pub fn is_future_dir(dir: impl AsRef<Path>) -> bool {
    name_ends_with(dir.as_ref(), FUTURE_DIR_SUFFIX)
}

/// Whether `dir`'s name ends with `-stray` (Kafka tests `getName.endsWith(STRAY_DIR_SUFFIX)`).
pub fn is_stray_dir(dir: impl AsRef<Path>) -> bool {
    name_ends_with(dir.as_ref(), STRAY_DIR_SUFFIX)
}

fn name_ends_with(dir: &Path, suffix: &str) -> bool {
    dir.file_name().is_some_and(|n| n.as_encoded_bytes().ends_with(suffix.as_bytes()))
}

/// Kafka's `UUID.randomUUID().toString().replaceAll("-", "")`: 32 lower-case hex digits.
fn unique_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// `LocalLog.logDirNameWithSuffixCappedLength`: the topic keeps as many leading bytes as fit
/// beside `-<partition>.<uuid><suffix>` in [`MAX_DIR_NAME_LENGTH`] (Kafka counts UTF-16 units;
/// a legal topic is ASCII, where the two agree). A cut never splits a character.
fn dir_name_with_suffix_capped_length(tp: &TopicPartition, suffix: &str) -> String {
    let full_suffix = format!("-{}.{}{suffix}", tp.partition, unique_id());
    let mut end = tp.topic.len().min(MAX_DIR_NAME_LENGTH.saturating_sub(full_suffix.len()));
    while !tp.topic.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{full_suffix}", &tp.topic[..end])
}

/// Parses a partition directory (`orders-0`, or `orders-0.<uuid32>-delete|-future|-stray`).
/// The partition is the text after the last `-` of the base name.
pub fn parse_topic_partition_name(dir: &Path) -> Result<TopicPartition> {
    parse_dir_name(dir).map_err(|why| bad_dir_name(dir, why))
}

/// The topic-partition `dir`'s name gives, or why it gives none.
pub fn parse_dir_name(dir: &Path) -> std::result::Result<TopicPartition, &'static str> {
    let name = dir.file_name().and_then(|n| n.to_str()).ok_or("the directory has no UTF-8 name")?;
    let base = [DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .map_or(Some(name), |stripped| stripped.rfind('.').map(|dot| &stripped[..dot]))
        .ok_or("a suffixed directory name must contain `.<uuid>`")?;
    let dash = base.rfind('-').ok_or("expected <topic>-<partition>")?;
    let (topic, partition) = (&base[..dash], &base[dash + 1..]);
    if topic.is_empty() {
        return Err("the topic is empty");
    }
    let partition: i32 = partition
        .parse()
        .ok()
        .filter(|p: &i32| *p >= 0 && !partition.starts_with('+'))
        .ok_or("the partition is not a non-negative integer")?;
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
    fn segment_file_names_are_what_join_and_format_give() {
        let offsets = [0, 1, 9, 10, 99, 100, 28_440, 1 << 31, 10_i64.pow(18), i64::MAX, -1, i64::MIN];
        for dir in ["", "/", "d", "d/", "/tmp/logs/orders-0", "rel/x-3/"] {
            let dir = Path::new(dir);
            for offset in offsets {
                for (made, suffix) in [
                    (log_file(dir, offset), LOG_FILE_SUFFIX),
                    (offset_index_file(dir, offset), INDEX_FILE_SUFFIX),
                    (time_index_file(dir, offset), TIME_INDEX_FILE_SUFFIX),
                    (transaction_index_file(dir, offset), TXN_INDEX_FILE_SUFFIX),
                    (producer_snapshot_file(dir, offset), PRODUCER_SNAPSHOT_FILE_SUFFIX),
                ] {
                    assert_eq!(made, dir.join(format!("{offset:020}{suffix}")), "{dir:?} {offset}");
                }
                assert_eq!(filename_prefix_from_offset(offset), format!("{offset:020}"));
            }
        }
    }

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
        // The 20-digit fast path and the general rule agree.
        assert_eq!(offset_from_file_name("09223372036854775807.log"), Some(i64::MAX));
        assert_eq!(offset_from_file_name("09223372036854775808.log"), None);
        assert_eq!(offset_from_file_name("99999999999999999999.index"), None);
        assert_eq!(offset_from_file_name("00000000000000000012"), Some(12));
        assert_eq!(offset_from_file_name("000000000000000000123.log"), Some(123));
        assert_eq!(offset_from_file_name("0000000012.log.deleted"), Some(12));
        assert_eq!(offset_from_file_name("0000000000000000001x.log"), None);
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
        for bad in ["orders", "-1", "orders-x", "orders-1-delete", "orders-+1", "non_kafka_dir-delete"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    fn invalid_topic_reason(topic: &str) -> String {
        match validate_topic_name(topic) {
            Err(Error::InvalidTopic { topic: t, reason }) => {
                assert_eq!(t, topic);
                reason
            }
            other => panic!("{topic:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn topic_names_follow_kafkas_rules() {
        // TopicTest.shouldAcceptValidTopicNames / shouldThrowOnInvalidTopicNames.
        let longest = "x".repeat(MAX_TOPIC_NAME_LENGTH);
        for ok in ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "__consumer_offsets", longest.as_str()] {
            validate_topic_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        assert_eq!(invalid_topic_reason(""), "the empty string is not allowed");
        assert_eq!(invalid_topic_reason("."), "'.' is not allowed");
        assert_eq!(invalid_topic_reason(".."), "'..' is not allowed");
        let too_long = "x".repeat(MAX_TOPIC_NAME_LENGTH + 1);
        assert_eq!(
            invalid_topic_reason(&too_long),
            format!("the length of '{too_long}' is longer than the max allowed length 249")
        );
        for bad in ["foo:bar", "foo=bar", "foo bar", "foo\u{0}", "t\u{e9}", "ab/c", "\u{1F600}"] {
            assert!(invalid_topic_reason(bad).contains("other than ASCII alphanumerics, '.', '_' and '-'"), "{bad:?}");
        }
        let err = validate_topic_name("a b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        );
    }

    /// `<topic>-<partition>.<32 lower-case hex><suffix>` with the given topic part.
    fn assert_suffixed(name: &str, topic: &str, partition: i32, suffix: &str) {
        let rest = name.strip_prefix(&format!("{topic}-{partition}.")).unwrap_or_else(|| panic!("{name}"));
        let uuid = rest.strip_suffix(suffix).unwrap_or_else(|| panic!("{name}"));
        assert!(uuid.len() == 32 && uuid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "{name}");
        let parsed = parse_topic_partition_name(Path::new(name)).unwrap();
        assert_eq!(parsed, TopicPartition::new(topic, partition));
    }

    #[test]
    fn delete_stray_and_future_dir_names() {
        // LocalLogTest.testLogDeleteDirName.
        let name1 = log_delete_dir_name(&TopicPartition::new("foo", 3));
        assert!(name1.len() <= MAX_DIR_NAME_LENGTH);
        assert_suffixed(&name1, "foo", 3, DELETE_DIR_SUFFIX);
        assert!(is_delete_dir(&name1) && !is_future_dir(&name1) && !is_stray_dir(&name1));
        let name2 = log_delete_dir_name(&TopicPartition::new(format!("n{}", "o".repeat(248)), 5));
        assert_eq!(name2.len(), 255);
        assert_suffixed(&name2, &format!("n{}", "o".repeat(212)), 5, DELETE_DIR_SUFFIX);
        assert_ne!(log_delete_dir_name(&TopicPartition::new("foo", 3)), name1, "a new uuid each time");

        let stray = log_stray_dir_name(&TopicPartition::new("my.topic", 12));
        assert_suffixed(&stray, "my.topic", 12, STRAY_DIR_SUFFIX);
        assert!(is_stray_dir(Path::new("/data").join(&stray)) && !is_delete_dir(&stray));
        let long = TopicPartition::new("x".repeat(MAX_TOPIC_NAME_LENGTH), i32::MAX);
        let future = log_future_dir_name(&long);
        assert_eq!(future.len(), 249 + 1 + 10 + 1 + 32 + FUTURE_DIR_SUFFIX.len(), "future names are not capped");
        assert_suffixed(&future, &long.topic, i32::MAX, FUTURE_DIR_SUFFIX);
        assert!(is_future_dir(&future) && !is_future_dir("orders-0") && !is_delete_dir(""));
    }

    #[test]
    fn partition_dir_names_must_fit_the_file_system() {
        let longest = "a".repeat(MAX_TOPIC_NAME_LENGTH);
        // Kafka's longest topic leaves room for five digits in 255 bytes.
        validate_partition_dir_name(&TopicPartition::new(&longest, 99_999), 255).unwrap();
        let e = validate_partition_dir_name(&TopicPartition::new(&longest, 100_000), 255).unwrap_err();
        assert!(matches!(&e, Error::InvalidTopic { topic, .. } if *topic == longest), "{e:?}");
        let text = e.to_string();
        assert!(text.contains(&format!("'{longest}-100000' is 256 bytes long, more than the 255 bytes")), "{text}");
        assert!(text.contains("at most 5 digits"), "{text}");
        let e = validate_partition_dir_name(&TopicPartition::new(&longest, i32::MAX), 255).unwrap_err();
        assert!(e.to_string().contains("is 260 bytes long"), "{e}");
        validate_partition_dir_name(&TopicPartition::new("orders", i32::MAX), 255).unwrap();
        // A smaller limit must also leave room for the capped `-delete` name.
        validate_partition_dir_name(&TopicPartition::new("t".repeat(100), 0), 143).unwrap();
        let e = validate_partition_dir_name(&TopicPartition::new("t".repeat(110), 0), 143).unwrap_err();
        assert!(e.to_string().contains("too few for the 152-byte name"), "{e}");
        // Whatever fits in 255 bytes has deletable and stray names that fit too.
        for partition in [0, 9, 99_999] {
            let tp = TopicPartition::new(&longest, partition);
            validate_partition_dir_name(&tp, 255).unwrap();
            assert!(log_delete_dir_name(&tp).len() <= 255 && log_stray_dir_name(&tp).len() <= 255);
        }
    }

    #[test]
    fn overly_long_topics_get_deletable_names() {
        // LogManagerTest.testCreateAndDeleteOverlyLongTopic (a 253-character topic), and the
        // longest legal topic with the largest partition number.
        for (topic, partition) in [("x".repeat(253), 0), ("y".repeat(MAX_TOPIC_NAME_LENGTH), i32::MAX)] {
            for name in [
                log_delete_dir_name(&TopicPartition::new(&topic, partition)),
                log_stray_dir_name(&TopicPartition::new(&topic, partition)),
            ] {
                assert_eq!(name.len(), MAX_DIR_NAME_LENGTH, "{name}");
                let parsed = parse_topic_partition_name(Path::new(&name)).unwrap();
                assert_eq!(parsed.partition, partition);
                assert!(topic.starts_with(&parsed.topic) && parsed.topic.len() < topic.len());
            }
        }
        // Multi-byte characters (an invalid topic, but no panic): the cut keeps whole characters.
        let name = log_delete_dir_name(&TopicPartition::new("\u{e9}".repeat(200), 1));
        assert!(name.len() <= MAX_DIR_NAME_LENGTH && name.ends_with(DELETE_DIR_SUFFIX), "{name}");
        assert_eq!(parse_topic_partition_name(Path::new(&name)).unwrap().partition, 1);
    }
}
