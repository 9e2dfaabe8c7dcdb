//! The first steps of `LogManager::open`, before any log loads (Kafka's
//! `createAndValidateLogDirs`, `lockLogDirs`, and the `meta.properties` checks of
//! `MetaPropertiesEnsemble`): each step takes a dir offline on an I/O error and fails the
//! start-up on a conflict (a lock held elsewhere, ids that disagree).
//!
//! Thread-safety: plain functions run by `LogManager::open` on its thread.

use std::collections::HashMap;
use std::path::PathBuf;

use super::log_dir::LogDir;
use crate::checkpoint::log_dir_files::{read_meta_properties, write_meta_properties, MetaProperties};
use crate::checkpoint::partition_metadata::TopicId;
use crate::config::LogManagerConfig;
use crate::error::{Error, Result};
use crate::file_names::{LOCK_FILE, META_PROPERTIES_FILE};
use crate::log::log_dir_failure_channel::LogDirFailureChannel;

/// Kafka's `createAndValidateLogDirs`: missing dirs are created; a dir that cannot be created,
/// is not a directory or cannot be read goes offline.
pub(super) fn create_and_validate_log_dirs(config: &LogManagerConfig, channel: &LogDirFailureChannel) -> Vec<LogDir> {
    config
        .log_dirs()
        .iter()
        .map(|path| {
            let mut dir = LogDir {
                path: path.clone(),
                lock: None,
                online: true,
                cordoned: config.cordoned_log_dirs().contains(path),
                offline_reason: None,
                directory_id: None,
                had_clean_shutdown: false,
            };
            let problem = if path.exists() {
                match std::fs::read_dir(path) {
                    Ok(_) => None,
                    Err(_) if !path.is_dir() => Some(format!(
                        "{} is not a readable log directory: it is a {}, not a directory",
                        path.display(),
                        if path.is_file() { "regular file" } else { "special file" }
                    )),
                    Err(e) => Some(format!("{} is not a readable log directory: {e}", path.display())),
                }
            } else {
                log::info!("log directory {} not found, creating it", path.display());
                crate::util::file::create_dir_all(path)
                    .err()
                    .map(|e| format!("failed to create data directory {}: {e}", path.display()))
            };
            if let Some(reason) = problem {
                channel.maybe_add_offline_log_dir(path, &reason);
                dir.online = false;
                dir.offline_reason = Some(reason);
            }
            dir
        })
        .collect()
}

/// Takes every online dir's `.lock`; a lock held elsewhere fails the start-up (Kafka's
/// `lockLogDirs`), an I/O error takes the dir offline.
pub(super) fn lock_log_dirs(dirs: &mut [LogDir], channel: &LogDirFailureChannel) -> Result<()> {
    for dir in dirs.iter_mut().filter(|d| d.online) {
        match crate::util::file::FileLock::try_lock(&dir.path.join(LOCK_FILE)) {
            Ok(lock) => dir.lock = Some(lock),
            Err(e @ Error::LogDirLocked { .. }) => return Err(e),
            Err(e) => {
                channel.maybe_add_offline_log_dir(&dir.path, &e.to_string());
                dir.online = false;
                dir.offline_reason = Some(e.to_string());
            }
        }
    }
    Ok(())
}

/// Reads each dir's `meta.properties` and checks them against each other and the config (one
/// cluster id, the configured node id, unique directory ids). A dir without one is formatted
/// (Kafka needs `kafka-storage format`; kafkalog does it for you). A dir whose file cannot be
/// read or parsed goes offline, as in Kafka.
pub(super) fn check_meta_properties(
    dirs: &mut [LogDir],
    config: &LogManagerConfig,
    now_ms: i64,
    channel: &LogDirFailureChannel,
) -> Result<()> {
    let mut cluster_id = config.cluster_id.clone();
    let mut seen_ids: HashMap<TopicId, PathBuf> = HashMap::new();
    let mut missing = Vec::new();
    for (i, dir) in dirs.iter_mut().enumerate().filter(|(_, d)| d.online) {
        match read_meta_properties(&dir.path) {
            Ok(Some((_, meta))) => {
                let file = dir.path.join(META_PROPERTIES_FILE);
                match &cluster_id {
                    Some(expected) if *expected != meta.cluster_id => {
                        return Err(Error::illegal_state(format!(
                            "invalid cluster.id in {}: expected {expected}, but read {}",
                            file.display(),
                            meta.cluster_id
                        )))
                    }
                    _ => cluster_id = Some(meta.cluster_id.clone()),
                }
                if meta.node_id != config.node_id {
                    return Err(Error::illegal_state(format!(
                        "stored node id {} in {} doesn't match node.id {}",
                        meta.node_id,
                        file.display(),
                        config.node_id
                    )));
                }
                if let Some(other) = seen_ids.insert(meta.directory_id, dir.path.clone()) {
                    return Err(Error::illegal_state(format!(
                        "duplicate directory id {} found: it is the id of {} and of {}",
                        meta.directory_id,
                        other.display(),
                        dir.path.display()
                    )));
                }
                dir.directory_id = Some(meta.directory_id);
            }
            Ok(None) => missing.push(i),
            Err(e) => {
                let reason = format!("unreadable meta.properties: {e}");
                channel.maybe_add_offline_log_dir(&dir.path, &reason);
                dir.online = false;
                dir.offline_reason = Some(reason);
            }
        }
    }
    let cluster_id = cluster_id.unwrap_or_else(|| TopicId::random().to_string());
    for i in missing {
        let dir = &mut dirs[i];
        let mut id = TopicId::random();
        while seen_ids.contains_key(&id) {
            id = TopicId::random();
        }
        let meta = MetaProperties { cluster_id: cluster_id.clone(), node_id: config.node_id, directory_id: id };
        match write_meta_properties(&dir.path, &meta, now_ms) {
            Ok(()) => {
                seen_ids.insert(id, dir.path.clone());
                dir.directory_id = Some(id);
            }
            Err(e) => {
                channel.maybe_add_offline_log_dir(&dir.path, &e.to_string());
                dir.online = false;
                dir.offline_reason = Some(e.to_string());
            }
        }
    }
    Ok(())
}
