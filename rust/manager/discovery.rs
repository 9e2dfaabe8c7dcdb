//! Which directories hold partitions, decided once for every caller: `LogManager`'s loading,
//! the Spark data source and maintenance jobs (through `kafkalog.discover`), and the command
//! line.
//!
//! - A log dir's children ([`log_dir_children`]) are named as Kafka names them
//!   (`UnifiedLog.parseTopicPartitionName`): `<topic>-<partition>`, or
//!   `<topic>-<partition>.<uuid>-delete|-future|-stray` for a partition being deleted, moved
//!   in, or no longer assigned. `LogManager.loadLogs` takes every child and fails on a name
//!   that does not parse; the loading does the same with this listing.
//! - A path a user names ([`discover`]) is either one partition directory or a log dir
//!   holding them. A partition directory ([`is_partition_dir`]) has the name Kafka gives a live
//!   partition (a legal topic, a canonical partition number, no suffix) and either holds a
//!   segment (`<20 digits>.log`) or `partition.metadata`, or holds no directory named like a
//!   partition: so a log dir called `data-1` is still a log dir. Renamed directories
//!   (`-delete`, `-future`, `-stray`) and other folders are never discovered.
//!
//! Also the probe of a log dir's `.lock` ([`probe_log_dir_lock`]): whether a `LogManager` or a
//! Kafka broker holds it, without taking it.
//!
//! Thread-safety: stateless functions that read directories and never write.

use std::path::{Path, PathBuf};

use crate::checkpoint::cleaner_checkpoint::UPDATE_LOCK_TIMEOUT;
use crate::error::{Error, Result};
use crate::file_names::{
    parse_dir_name, parse_topic_partition_name, validate_topic_name, TopicPartition, DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX, LOCK_FILE, LOG_FILE_SUFFIX, PARTITION_METADATA_FILE, STRAY_DIR_SUFFIX,
};
use crate::util::file::{DirLock, FileLock, LockState};
use crate::util::lock_holder;

/// What a partition directory's name says it is (the suffix `LogManager.loadLogs` tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartitionDirKind {
    /// `<topic>-<partition>`: a live partition.
    Current,
    /// `...-future`: a partition being moved into this log dir (`UnifiedLog.isFutureDir`).
    Future,
    /// `...-delete`: a deleted partition awaiting removal.
    Delete,
    /// `...-stray`: a partition no longer assigned to this broker.
    Stray,
}

impl PartitionDirKind {
    /// The kind a directory name's suffix gives (Kafka tests `getName.endsWith(...)`).
    pub fn of_name(name: &str) -> Self {
        if name.ends_with(DELETE_DIR_SUFFIX) {
            PartitionDirKind::Delete
        } else if name.ends_with(FUTURE_DIR_SUFFIX) {
            PartitionDirKind::Future
        } else if name.ends_with(STRAY_DIR_SUFFIX) {
            PartitionDirKind::Stray
        } else {
            PartitionDirKind::Current
        }
    }
}

/// One subdirectory of a log dir, as `LogManager.loadLogs` sees it.
#[derive(Debug)]
pub struct LogDirChild {
    /// `<log dir>/<name>`.
    pub path: PathBuf,
    /// The topic-partition the name gives (Kafka's parse), or the error naming the directory.
    pub topic_partition: Result<TopicPartition>,
    /// What the name's suffix says.
    pub kind: PartitionDirKind,
    /// The entry is a symbolic link to a directory (the loading does not follow those).
    pub symlink: bool,
}

impl LogDirChild {
    /// The directory's own name.
    pub fn name(&self) -> &std::ffi::OsStr {
        self.path.file_name().unwrap_or_default()
    }
}

/// Every subdirectory of `log_dir` (and every symbolic link to one), with what its name says,
/// sorted by name.
///
/// # Errors
/// `Io` naming `log_dir` when it cannot be listed, or an entry that cannot be examined.
pub fn log_dir_children(log_dir: &Path) -> Result<Vec<LogDirChild>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(log_dir).map_err(|e| Error::io(log_dir, "list directory", e))? {
        let entry = entry.map_err(|e| Error::io(log_dir, "list directory", e))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(|e| Error::io(&path, "stat", e))?;
        let symlink = file_type.is_symlink();
        // A link to a directory counts as one; a dangling link is nothing.
        if !(file_type.is_dir() || symlink && std::fs::metadata(&path).is_ok_and(|m| m.is_dir())) {
            continue;
        }
        let name = entry.file_name();
        let kind = PartitionDirKind::of_name(&name.to_string_lossy());
        out.push(LogDirChild { topic_partition: parse_topic_partition_name(&path), path, kind, symlink });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// One discovered partition directory (Kafka's `TopicPartition` plus where it lives). A plain
/// value; ordered by topic, partition, then path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DiscoveredPartition {
    /// The topic and partition its name gives.
    pub topic_partition: TopicPartition,
    /// The partition directory, as found (the path given, or `<log dir>/<name>`).
    pub dir: PathBuf,
    /// Its log dir: the directory holding it, whose `.lock` a `LogManager` takes (`.` for a
    /// relative name without a parent).
    pub log_dir: PathBuf,
}

impl DiscoveredPartition {
    fn new(topic_partition: TopicPartition, dir: PathBuf) -> Self {
        let log_dir = match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        DiscoveredPartition { topic_partition, dir, log_dir }
    }
}

/// The live partition a directory name gives when it is the name Kafka gives that partition:
/// `<topic>-<partition>` with a legal topic (`Topic.validate`), the partition in decimal without
/// sign or leading zeros, and no `-delete` / `-future` / `-stray` suffix. `None` otherwise.
pub fn live_partition_name(name: &str) -> Option<TopicPartition> {
    let tp = parse_dir_name(Path::new(name)).ok()?;
    let canonical = PartitionDirKind::of_name(name) == PartitionDirKind::Current && tp.dir_name() == name;
    (canonical && validate_topic_name(&tp.topic).is_ok()).then_some(tp)
}

/// Whether `name` is a segment's data file, `<20 digits>.log`.
fn is_segment_file(name: &str) -> bool {
    name.strip_suffix(LOG_FILE_SUFFIX)
        .is_some_and(|digits| digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The partition `dir` is, if it is one (see the module docs): a live partition's name, and a
/// segment or `partition.metadata` inside, or no directory named like a partition inside.
///
/// # Errors
/// `Io` naming `dir` when a directory with a partition's name cannot be listed.
pub fn is_partition_dir(dir: &Path) -> Result<Option<TopicPartition>> {
    let Some(tp) = dir.file_name().and_then(|n| n.to_str()).and_then(live_partition_name) else {
        return Ok(None);
    };
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(None);
    }
    let mut holds_partitions = false;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
        let entry = entry.map_err(|e| Error::io(dir, "list directory", e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == PARTITION_METADATA_FILE || is_segment_file(name) {
            return Ok(Some(tp));
        }
        if !holds_partitions && live_partition_name(name).is_some() {
            holds_partitions = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        }
    }
    Ok((!holds_partitions).then_some(tp))
}

/// The partition directories directly inside `log_dir`, sorted by topic and partition.
///
/// # Errors
/// `Io` naming the directory that cannot be listed.
pub fn log_dir_partitions(log_dir: &Path) -> Result<Vec<DiscoveredPartition>> {
    let mut out = Vec::new();
    for child in log_dir_children(log_dir)? {
        if let Some(tp) = is_partition_dir(&child.path)? {
            out.push(DiscoveredPartition::new(tp, child.path));
        }
    }
    out.sort();
    Ok(out)
}

/// The partition directories `path` names: `path` itself when it is a partition directory,
/// else the partition directories inside it (none when it holds none).
///
/// # Errors
/// `Io` naming `path` when it does not exist (`NotFound`), is not a directory
/// (`NotADirectory`) or cannot be listed.
pub fn discover(path: &Path) -> Result<Vec<DiscoveredPartition>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "open directory", e))?;
    if !meta.is_dir() {
        let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
        return Err(Error::io(path, "open directory", e));
    }
    match is_partition_dir(path)? {
        Some(tp) => Ok(vec![DiscoveredPartition::new(tp, path.to_path_buf())]),
        None => log_dir_partitions(path),
    }
}

/// Who holds a log dir's `.lock`, as [`probe_log_dir_lock`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockProbe {
    /// The lock file, `<log dir>/.lock`.
    pub lock_file: PathBuf,
    /// Whether another open file holds a lock on it that conflicts with an exclusive one.
    pub held: bool,
    /// The holder's process id, when known (the lock's own for a broker's POSIX lock, else from
    /// `/proc`).
    pub pid: Option<u32>,
    /// The holder as an error message names it ("process 1234 (java ...)"), when known.
    pub holder: Option<String>,
}

/// Whether a `LogManager` or a Kafka broker holds `<log_dir>/.lock`: the same open-file
/// lock `LogManager` takes ([`crate::util::file::FileLock`]), tested without taking it and
/// without creating the file. A missing lock file or log dir is not held.
///
/// An on-demand clean updating the log dir's `cleaner-offset-checkpoint` holds `.lock` for a
/// moment too, always under the log dir's own `flock`
/// ([`crate::checkpoint::cleaner_checkpoint`]); the probe takes that `flock` first (waiting
/// as the updates do), so it never mistakes such an update for a `LogManager`.
///
/// # Errors
/// `Io` naming the lock file when it exists but cannot be opened or tested; `LogDirLocked`
/// if an update holds the log dir's `flock` past [`UPDATE_LOCK_TIMEOUT`].
pub fn probe_log_dir_lock(log_dir: &Path) -> Result<LockProbe> {
    probe_log_dir_lock_with(log_dir, &|| {})
}

/// [`probe_log_dir_lock`], calling `on_wait` once if it finds the log dir's `flock` held (a
/// test seam).
pub(crate) fn probe_log_dir_lock_with(log_dir: &Path, on_wait: &dyn Fn()) -> Result<LockProbe> {
    let _updates =
        if log_dir.is_dir() { Some(DirLock::lock_waiting(log_dir, UPDATE_LOCK_TIMEOUT, on_wait)?) } else { None };
    let lock_file = log_dir.join(LOCK_FILE);
    let (held, pid) = match FileLock::probe(&lock_file)? {
        LockState::Free => (false, None),
        LockState::Held { pid } => (true, pid.or_else(|| lock_holder::holder_pid(&lock_file))),
    };
    let holder = pid.map(lock_holder::describe_pid);
    Ok(LockProbe { lock_file, held, pid, holder })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[DiscoveredPartition]) -> Vec<String> {
        found.iter().map(|d| d.topic_partition.to_string()).collect()
    }

    fn partition(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("00000000000000000000.log"), b"").unwrap();
        dir.to_path_buf()
    }

    #[test]
    fn live_partition_names_are_the_names_kafka_gives() {
        assert_eq!(live_partition_name("orders-0"), Some(TopicPartition::new("orders", 0)));
        assert_eq!(live_partition_name("my-topic.v2_x-12"), Some(TopicPartition::new("my-topic.v2_x", 12)));
        assert_eq!(live_partition_name("orders--1"), Some(TopicPartition::new("orders-", 1)));
        assert_eq!(live_partition_name("__cluster_metadata-0"), Some(TopicPartition::new("__cluster_metadata", 0)));
        let longest = format!("{}-2147483647", "t".repeat(249));
        assert!(live_partition_name(&longest).is_some());
        for bad in [
            "orders",
            "orders-",
            "-0",
            "orders-x",
            "orders-01",
            "orders-+1",
            "orders-1-",
            "orders-2147483648",
            "a b-0",
            "..-0",
            "t\u{e9}-0",
            "orders-0.0123456789abcdef0123456789abcdef-delete",
            "orders-0.0123456789abcdef0123456789abcdef-future",
            "orders-0.0123456789abcdef0123456789abcdef-stray",
            "remote-log-index-cache",
        ] {
            assert_eq!(live_partition_name(bad), None, "{bad}");
        }
        assert_eq!(live_partition_name(&format!("{}-0", "t".repeat(250))), None);
    }

    #[test]
    fn kinds_follow_the_suffix() {
        assert_eq!(PartitionDirKind::of_name("a-0"), PartitionDirKind::Current);
        assert_eq!(PartitionDirKind::of_name("a-0.ab-delete"), PartitionDirKind::Delete);
        assert_eq!(PartitionDirKind::of_name("a-0.ab-future"), PartitionDirKind::Future);
        assert_eq!(PartitionDirKind::of_name("a-0.ab-stray"), PartitionDirKind::Stray);
    }

    #[test]
    fn a_log_dir_gives_its_live_partitions_sorted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for name in
            ["b-0", "a-10", "a-2", "a-2.0123456789abcdef0123456789abcdef-delete", "a-3.ab-future", "a-4.ab-stray"]
        {
            partition(&root.join(name));
        }
        std::fs::create_dir(root.join("empty-7")).unwrap(); // an empty partition, as Kafka loads it
        std::fs::create_dir(root.join("checkpoints")).unwrap();
        std::fs::create_dir(root.join("a-01")).unwrap();
        std::fs::write(root.join("c-0"), b"a file").unwrap();
        std::fs::write(root.join(".lock"), b"").unwrap();
        let found = discover(root).unwrap();
        assert_eq!(names(&found), ["a-2", "a-10", "b-0", "empty-7"]);
        assert!(found.iter().all(|d| d.log_dir == root && d.dir == root.join(d.topic_partition.dir_name())));
        assert_eq!(found, log_dir_partitions(root).unwrap());
    }

    #[test]
    fn a_partition_dir_gives_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = partition(&tmp.path().join("orders-3"));
        let found = discover(&dir).unwrap();
        assert_eq!(found, [DiscoveredPartition::new(TopicPartition::new("orders", 3), dir.clone())]);
        assert_eq!(found[0].log_dir, tmp.path());
        // partition.metadata alone, or nothing at all, also make a partition directory.
        let meta = tmp.path().join("meta-0");
        std::fs::create_dir(&meta).unwrap();
        std::fs::write(meta.join("partition.metadata"), b"version: 0\n").unwrap();
        assert_eq!(names(&discover(&meta).unwrap()), ["meta-0"]);
        let empty = tmp.path().join("empty-0");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(names(&discover(&empty).unwrap()), ["empty-0"]);
        // A relative name without a parent lives in ".".
        assert_eq!(DiscoveredPartition::new(TopicPartition::new("t", 0), "t-0".into()).log_dir, Path::new("."));
    }

    #[test]
    fn a_log_dir_named_like_a_partition_is_a_log_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data-1");
        partition(&data.join("users-0"));
        partition(&data.join("users-1"));
        assert_eq!(is_partition_dir(&data).unwrap(), None);
        assert_eq!(names(&discover(&data).unwrap()), ["users-0", "users-1"]);
        // From one level up it is not a partition either, and its partitions are not found.
        assert_eq!(names(&discover(tmp.path()).unwrap()), Vec::<String>::new());
    }

    #[test]
    fn renamed_partitions_and_other_folders_are_never_discovered() {
        let tmp = tempfile::tempdir().unwrap();
        let deleted = partition(&tmp.path().join("a-2.0123456789abcdef0123456789abcdef-delete"));
        // Named directly, it is a folder without partitions.
        assert!(discover(&deleted).unwrap().is_empty());
        let other = tmp.path().join("backup");
        partition(&other);
        assert!(discover(&other).unwrap().is_empty());
    }

    #[test]
    fn symlinked_partitions_are_followed_and_flagged() {
        let tmp = tempfile::tempdir().unwrap();
        let target = partition(&tmp.path().join("elsewhere").join("t-0"));
        let log_dir = tmp.path().join("logs");
        std::fs::create_dir(&log_dir).unwrap();
        std::os::unix::fs::symlink(&target, log_dir.join("t-0")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("missing"), log_dir.join("t-1")).unwrap();
        let children = log_dir_children(&log_dir).unwrap();
        assert_eq!(children.len(), 1);
        assert!(children[0].symlink && children[0].kind == PartitionDirKind::Current);
        assert_eq!(names(&discover(&log_dir).unwrap()), ["t-0"]);
    }

    #[test]
    fn log_dir_children_carry_kafkas_parse() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["a-01", "x-1.ab-delete", "weird"] {
            std::fs::create_dir(tmp.path().join(name)).unwrap();
        }
        let children = log_dir_children(tmp.path()).unwrap();
        let parsed: Vec<_> = children.iter().map(|c| (c.name().to_string_lossy().into_owned(), c.kind)).collect();
        assert_eq!(
            parsed,
            [
                ("a-01".to_string(), PartitionDirKind::Current),
                ("weird".to_string(), PartitionDirKind::Current),
                ("x-1.ab-delete".to_string(), PartitionDirKind::Delete),
            ]
        );
        assert_eq!(*children[0].topic_partition.as_ref().unwrap(), TopicPartition::new("a", 1));
        let err = children[1].topic_partition.as_ref().unwrap_err().to_string();
        assert!(err.contains("'weird' is not in the form of topic-partition"), "{err}");
        assert_eq!(*children[2].topic_partition.as_ref().unwrap(), TopicPartition::new("x", 1));
    }

    #[test]
    fn missing_paths_and_files_are_io_errors_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nowhere");
        match discover(&missing) {
            Err(Error::Io { path, source, .. }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        let file = tmp.path().join("t-0");
        std::fs::write(&file, b"").unwrap();
        match discover(&file) {
            Err(Error::Io { path, source, .. }) => {
                assert_eq!(path, file);
                assert_eq!(source.raw_os_error(), Some(libc::ENOTDIR));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_lock_probe_sees_the_log_managers_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let free = probe_log_dir_lock(tmp.path()).unwrap();
        assert_eq!(free, LockProbe { lock_file: tmp.path().join(".lock"), held: false, pid: None, holder: None });
        assert!(!tmp.path().join(".lock").exists(), "the probe creates nothing");
        let lock = FileLock::try_lock(&tmp.path().join(".lock")).unwrap();
        let held = probe_log_dir_lock(tmp.path()).unwrap();
        let me = std::process::id();
        assert!(held.held);
        assert_eq!(held.pid, Some(me));
        assert_eq!(held.holder.as_deref(), Some(format!("this process (pid {me})").as_str()));
        drop(lock);
        assert!(!probe_log_dir_lock(tmp.path()).unwrap().held);
        assert!(!probe_log_dir_lock(&tmp.path().join("missing")).unwrap().held);
    }

    /// An on-demand checkpoint update holds `.lock` only under the log dir's `flock`: the probe
    /// waits for that `flock` (the seam releases the update's locks, `.lock` first, as the
    /// update drops them) and then finds `.lock` free, instead of reporting the update as a
    /// `LogManager`.
    #[test]
    fn the_lock_probe_waits_out_an_on_demand_checkpoint_update() {
        let tmp = tempfile::tempdir().unwrap();
        let update = std::sync::Mutex::new(Some((
            DirLock::try_lock(tmp.path()).unwrap(),
            FileLock::try_lock(&tmp.path().join(LOCK_FILE)).unwrap(),
        )));
        let waited = std::cell::Cell::new(false);
        let release = || {
            waited.set(true);
            let (dir_lock, lock_file) = update.lock().unwrap().take().expect("released once");
            drop(lock_file);
            drop(dir_lock);
        };
        let probe = probe_log_dir_lock_with(tmp.path(), &release).unwrap();
        assert!(waited.get(), "the probe waited for the update's flock");
        assert!(!probe.held, "{probe:?}");
    }
}
