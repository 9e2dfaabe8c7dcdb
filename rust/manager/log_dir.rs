//! One entry of `log.dirs` as the `LogManager` sees it: its `.lock`, `meta.properties`, the
//! clean-shutdown marker and the offset checkpoints at its top level (Kafka keeps these in
//! `LogManager`'s per-dir maps and `CleanShutdownFileHandler`).
//!
//! Thread-safety: owned by the `LogManager`'s state lock; the file helpers are stateless.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::checkpoint::checkpoint_file::{read_offset_checkpoint, write_offset_checkpoint};
use crate::checkpoint::log_dir_files::{read_properties, CLEAN_SHUTDOWN_FILE, META_PROPERTIES_FILE};
use crate::checkpoint::partition_metadata::TopicId;
use crate::error::{Error, Result};
use crate::log::file_names::TopicPartition;
use crate::util::file::FileLock;

/// `recovery-point-offset-checkpoint`.
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// `log-start-offset-checkpoint`.
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// `replication-offset-checkpoint` (high watermarks; Kafka's `ReplicaManager` writes it).
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// `cleaner-offset-checkpoint` (first dirty offsets; the log cleaner writes it).
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// The lock file Kafka holds while it runs.
pub const LOCK_FILE: &str = ".lock";

/// A log dir.
#[derive(Debug)]
pub struct LogDir {
    /// The directory.
    pub path: PathBuf,
    /// The lock, held while the dir is online.
    pub lock: Option<FileLock>,
    /// Whether the dir is serving.
    pub online: bool,
    /// New partitions are not placed here (KIP-1066's cordoned log dirs).
    pub cordoned: bool,
    /// The first error that took the dir offline.
    pub offline_reason: Option<String>,
    /// `directory.id` from `meta.properties`.
    pub directory_id: Option<TopicId>,
    /// The dir held `.kafka_cleanshutdown` at start-up.
    pub had_clean_shutdown: bool,
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

/// Checks for the clean-shutdown marker and removes it, as Kafka does at start-up (a crash
/// while loading must count as unclean). Returns whether it was there.
pub fn take_clean_shutdown_marker(dir: &Path) -> Result<bool> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    if !path.exists() {
        return Ok(false);
    }
    match crate::checkpoint::log_dir_files::read_clean_shutdown(&path) {
        Ok(epoch) => log::info!("found a clean shutdown marker in {} (broker epoch {epoch})", dir.display()),
        Err(e) => log::warn!("clean shutdown marker {} is unreadable ({e}); it still counts", path.display()),
    }
    crate::util::file::delete_if_exists(&path)?;
    crate::util::file::fsync_dir(dir)?;
    Ok(true)
}

/// The identity of a log dir (Kafka's `MetaProperties`, KRaft form, version 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// `cluster.id`.
    pub cluster_id: String,
    /// `node.id`.
    pub node_id: i32,
    /// `directory.id`.
    pub directory_id: TopicId,
}

/// Reads `meta.properties` (version 1 requires `cluster.id` and `node.id`; `directory.id` is
/// optional in older files). `None` when the file is missing.
pub fn read_meta_properties(dir: &Path) -> Result<Option<(BTreeMap<String, String>, MetaProperties)>> {
    let path = dir.join(META_PROPERTIES_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let props = read_properties(&path)?;
    let bad = |why: String| Error::illegal_state(format!("{}: {why}", path.display()));
    match props.get("version").map(String::as_str) {
        Some("1") => {}
        Some("0") => return Err(bad("version 0 (ZooKeeper mode) is not supported by Kafka 4.x".into())),
        Some(v) => return Err(bad(format!("unknown version {v:?}"))),
        None => return Err(bad("no version".into())),
    }
    let cluster_id = props.get("cluster.id").cloned().ok_or_else(|| bad("no cluster.id".into()))?;
    let node_id = props
        .get("node.id")
        .ok_or_else(|| bad("no node.id".into()))?
        .parse()
        .map_err(|_| bad(format!("node.id {:?} is not an int", props["node.id"])))?;
    let directory_id = match props.get("directory.id") {
        Some(id) => TopicId::parse(id).map_err(|e| bad(format!("directory.id: {e}")))?,
        None => TopicId::random(),
    };
    Ok(Some((props, MetaProperties { cluster_id, node_id, directory_id })))
}

/// Writes `meta.properties` in the form `kafka-storage format` writes it (Java's
/// `Properties.store`: an empty comment line, a date line, then the keys), atomically.
pub fn write_meta_properties(dir: &Path, meta: &MetaProperties, now_ms: i64) -> Result<()> {
    let text = format!(
        "#\n#{}\nnode.id={}\ndirectory.id={}\nversion=1\ncluster.id={}\n",
        java_date(now_ms),
        meta.node_id,
        meta.directory_id,
        meta.cluster_id
    );
    crate::util::file::atomic_write(&dir.join(META_PROPERTIES_FILE), text.as_bytes())
}

/// `java.util.Date.toString()` in UTC: `Sun Nov 22 13:00:00 UTC 2026`.
fn java_date(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {day:02} {:02}:{:02}:{:02} UTC {year}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_dates() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date(1_795_352_400_000), "Sun Nov 22 13:00:00 UTC 2026");
    }

    #[test]
    fn meta_properties_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaProperties { cluster_id: "abc".into(), node_id: 3, directory_id: TopicId::random() };
        write_meta_properties(dir.path(), &meta, 0).unwrap();
        let (_, back) = read_meta_properties(dir.path()).unwrap().unwrap();
        assert_eq!(back, meta);
        std::fs::write(dir.path().join(META_PROPERTIES_FILE), "version=0\nbroker.id=1\n").unwrap();
        let err = read_meta_properties(dir.path()).unwrap_err().to_string();
        assert!(err.contains("meta.properties") && err.contains("version 0"), "{err}");
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
