//! The small files at the top of a log directory: `.kafka_cleanshutdown` (Kafka's
//! `CleanShutdownFileHandler`) and `meta.properties` (Kafka's `MetaProperties`, KRaft form),
//! read and written as the `LogManager` does at start-up and close.
//! Thread-safety: stateless functions.

use std::collections::BTreeMap;
use std::path::Path;

use crate::checkpoint::partition_metadata::TopicId;
use crate::error::{Error, Result};
use crate::file_names::{CLEAN_SHUTDOWN_FILE, META_PROPERTIES_FILE};

/// Reads the broker epoch from a `.kafka_cleanshutdown` file, whose content Kafka writes as
/// `{"version":0,"brokerEpoch":<long>}`. Unknown fields are ignored, as Kafka's reader does.
pub fn read_clean_shutdown(path: &Path) -> Result<i64> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "read clean shutdown file", e))?;
    let bad = |why: &str| Error::illegal_state(format!("malformed {}: {why} in {text:?}", path.display()));
    let body =
        text.trim().strip_prefix('{').and_then(|t| t.strip_suffix('}')).ok_or_else(|| bad("not a JSON object"))?;
    for field in body.split(',') {
        let (key, value) = field.split_once(':').ok_or_else(|| bad("a field without ':'"))?;
        if key.trim().trim_matches('"') == "brokerEpoch" {
            return value.trim().parse().map_err(|_| bad("brokerEpoch is not a number"));
        }
    }
    Err(bad("no brokerEpoch"))
}

/// Writes `.kafka_cleanshutdown` as Kafka does (version 0), fsynced.
pub fn write_clean_shutdown(path: &Path, broker_epoch: i64) -> Result<()> {
    crate::util::file::atomic_write(path, format!("{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}").as_bytes())
}

/// Reads a Java properties file such as `meta.properties`: `key=value` lines, `#` and `!`
/// comments, surrounding whitespace trimmed. (Escapes and line continuations, which Kafka never
/// writes in this file, are not interpreted.)
pub fn read_properties(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "read properties", e))?;
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (key, value) = line.split_once(['=', ':']).ok_or_else(|| {
            Error::illegal_state(format!("malformed {} at line {}: {line:?} has no '='", path.display(), n + 1))
        })?;
        out.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(out)
}

/// Checks for the clean-shutdown marker and removes it, as Kafka does at start-up (a crash
/// while loading must count as unclean). Returns whether it was there.
pub fn take_clean_shutdown_marker(dir: &Path) -> Result<bool> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    if !path.exists() {
        return Ok(false);
    }
    match read_clean_shutdown(&path) {
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
    fn clean_shutdown_marker_round_trips_in_kafka_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CLEAN_SHUTDOWN_FILE);
        write_clean_shutdown(&path, 1234).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"version":0,"brokerEpoch":1234}"#);
        assert_eq!(read_clean_shutdown(&path).unwrap(), 1234);
        std::fs::write(&path, r#"{ "brokerEpoch" : -1, "version": 0, "later": true }"#).unwrap();
        assert_eq!(read_clean_shutdown(&path).unwrap(), -1);
        std::fs::write(&path, "garbage").unwrap();
        assert!(read_clean_shutdown(&path).unwrap_err().to_string().contains(".kafka_cleanshutdown"));
    }

    #[test]
    fn meta_properties_parse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_PROPERTIES_FILE);
        std::fs::write(
            &path,
            "#\n#Sun Nov 22 10:00:00 UTC 2026\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\nversion=1\ncluster.id=abc\n",
        )
        .unwrap();
        let p = read_properties(&path).unwrap();
        assert_eq!(p["version"], "1");
        assert_eq!(p["node.id"], "1");
        assert_eq!(p["cluster.id"], "abc");
        assert_eq!(p.len(), 4);
    }

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
}
