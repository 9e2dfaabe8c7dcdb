//! `partition.metadata` (Kafka's `PartitionMetadataFile`): the topic id of a partition
//! directory, two lines `version: 0` and `topic_id: <base64url uuid>`, no trailing newline.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::error::{Error, Result};
use crate::file_names::PARTITION_METADATA_FILE;
use crate::util::file::atomic_write;

/// A Kafka topic id: 16 bytes, shown as URL-safe base64 without padding (Kafka's `Uuid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// A random id (never the all-zero id, which Kafka reserves).
    pub fn random() -> Self {
        loop {
            let id = TopicId(*uuid::Uuid::new_v4().as_bytes());
            if id.0 != [0; 16] {
                return id;
            }
        }
    }

    /// Parses Kafka's 22-character form.
    pub fn parse(s: &str) -> Result<Self> {
        let bytes = URL_SAFE_NO_PAD
            .decode(s.trim())
            .map_err(|e| Error::illegal_state(format!("invalid topic id {s:?}: {e}")))?;
        let arr: [u8; 16] =
            bytes.try_into().map_err(|_| Error::illegal_state(format!("invalid topic id {s:?}: not 16 bytes")))?;
        if arr == [0; 16] {
            return Err(Error::illegal_state(format!("invalid topic id {s:?}: the zero id is reserved")));
        }
        Ok(TopicId(arr))
    }
}

impl std::fmt::Display for TopicId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&URL_SAFE_NO_PAD.encode(self.0))
    }
}

/// The `partition.metadata` file of one partition directory.
#[derive(Debug, Clone)]
pub struct PartitionMetadataFile {
    path: PathBuf,
}

impl PartitionMetadataFile {
    /// The file in `dir`.
    pub fn new(dir: &Path) -> Self {
        PartitionMetadataFile { path: dir.join(PARTITION_METADATA_FILE) }
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists.
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Writes the topic id (tmp + fsync + rename + directory fsync).
    pub fn write(&self, topic_id: TopicId) -> Result<()> {
        atomic_write(&self.path, format!("version: 0\ntopic_id: {topic_id}").as_bytes())
    }

    /// Reads the topic id; `Ok(None)` when the file does not exist.
    pub fn read(&self) -> Result<Option<TopicId>> {
        let read = crate::util::file::read_small_file(&self.path).and_then(|bytes| {
            String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        });
        let text = match read {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&self.path, "read", e)),
        };
        let bad = |why: &str| Error::illegal_state(format!("malformed {}: {why}", self.path.display()));
        let mut lines = text.lines();
        let version = lines.next().and_then(|l| field(l, "version")).ok_or_else(|| bad("missing version line"))?;
        let version: i32 = version.parse().map_err(|_| bad("version is not a number"))?;
        if version < 0 {
            return Err(bad("negative version"));
        }
        let id = lines.next().and_then(|l| field(l, "topic_id")).ok_or_else(|| bad("missing topic_id line"))?;
        TopicId::parse(id).map(Some).map_err(|e| bad(&e.to_string()))
    }
}

/// The value of a `key: value` line (Kafka splits on `:\s+`).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (k, v) = line.split_once(':')?;
    (k.trim() == key && v.starts_with(char::is_whitespace)).then(|| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_kafka_format() {
        let dir = tempfile::tempdir().unwrap();
        let f = PartitionMetadataFile::new(dir.path());
        assert_eq!(f.read().unwrap(), None);
        let id = TopicId::parse("AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
        f.write(id).unwrap();
        assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(f.read().unwrap(), Some(id));
        assert!(TopicId::parse("AAAAAAAAAAAAAAAAAAAAAA").is_err(), "zero id is reserved");
        std::fs::write(f.path(), "version: 0\ntopic_id: nonsense").unwrap();
        assert!(f.read().is_err());
        assert_eq!(TopicId::random().to_string().len(), 22);
    }
}
