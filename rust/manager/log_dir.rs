//! One entry of `log.dirs` as the `LogManager` sees it: its path, the `.lock` it holds, whether
//! it serves, and its identity (Kafka keeps these in `LogManager`'s per-dir maps). The files at
//! its top are read and written by `checkpoint/`.
//!
//! Thread-safety: owned by the `LogManager`'s state lock.

use std::path::PathBuf;

use crate::checkpoint::partition_metadata::TopicId;
use crate::util::file::FileLock;

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
