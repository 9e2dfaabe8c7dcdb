//! Where logs report that their log directory failed (Kafka's `LogDirFailureChannel`). A log
//! that hits an I/O error reports its log dir here and fails the call with `KafkaStorage`; the
//! `LogManager` takes the reported dirs and takes them offline (closes their logs, drops their
//! checkpoints, stops placing partitions there).
//!
//! Thread-safety: shared (`Arc`) by every log of a `LogManager`; all methods take `&self`.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// Offline log dirs, and the ones reported but not yet handled.
#[derive(Debug, Default)]
pub struct LogDirFailureChannel {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    offline: HashSet<PathBuf>,
    queue: VecDeque<(PathBuf, String)>,
}

impl LogDirFailureChannel {
    /// A channel with no failed dirs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports `log_dir` as failed (once; later reports of the same dir are ignored).
    pub fn maybe_add_offline_log_dir(&self, log_dir: &Path, reason: &str) {
        let mut state = self.state.lock();
        if state.offline.insert(log_dir.to_path_buf()) {
            log::error!("log dir {} failed: {reason}", log_dir.display());
            state.queue.push_back((log_dir.to_path_buf(), reason.to_string()));
        }
    }

    /// Whether `log_dir` has been reported.
    pub fn has_offline_log_dir(&self, log_dir: &Path) -> bool {
        self.state.lock().offline.contains(log_dir)
    }

    /// The dirs reported since the last call, with the first error of each.
    pub fn take_offline_log_dirs(&self) -> Vec<(PathBuf, String)> {
        self.state.lock().queue.drain(..).collect()
    }
}
