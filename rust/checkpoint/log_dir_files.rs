//! The small files at the top of a log directory: `.kafka_cleanshutdown` (Kafka's
//! `CleanShutdownFileHandler`) and `meta.properties` (Kafka's `MetaProperties`, KRaft form).
//! Thread-safety: stateless functions.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};

/// Name of the clean-shutdown marker.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// Name of the log dir's identity file.
pub const META_PROPERTIES_FILE: &str = "meta.properties";

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
}
