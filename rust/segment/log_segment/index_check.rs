//! The sanity check of a segment's indexes, left by the loader to their first use.
//!
//! After a clean shutdown, the loader opens no index file of an inactive segment
//! (`log/log_loader.rs`, `IndexCheck::AtFirstUse`): Kafka's loader does not check them either.
//! kafkalog checks them once, when the segment first needs an index (a lookup, a read, a
//! truncation, the cleaner), with the checks the loader runs (`index::sanity`). A damaged index
//! (its length not a whole number of entries, a negative last entry, a preallocated tail of
//! zeros, a missing file) is rebuilt there from the segment's data, both indexes, with a warning
//! naming the files, as the loader would have rebuilt it at start-up. The data is not touched:
//! the rebuilt indexes cover the segment's valid batches, and a read of damaged data past them
//! fails as it would have.
//!
//! Thread-safety: the first users of a segment's indexes wait for one check; afterwards the
//! cost is one atomic load per index access. The check takes its mutex before any index lock,
//! and never takes the segment's other locks, so a caller may hold the segment state's lock.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::{IndexWrite, LogSegment};
use crate::error::Result;
use crate::index::sanity::{offset_index_problem, time_index_problem};

/// Whether the loader left the index check to the first use, and the lock its first users
/// take. No Kafka class: Kafka never checks an inactive segment's indexes after a clean
/// shutdown.
#[derive(Debug, Default)]
pub(super) struct FirstUseCheck {
    pending: AtomicBool,
    running: Mutex<()>,
}

impl FirstUseCheck {
    /// The indexes are known good (rebuilt, or checked).
    pub(super) fn done(&self) {
        self.pending.store(false, Ordering::Release);
    }
}

impl LogSegment {
    /// Leaves the sanity check of both indexes to their first use (the loader, for an inactive
    /// segment after a clean shutdown). Nothing is read until then.
    pub fn check_indexes_at_first_use(&self) {
        if !self.read_only {
            self.index_check.pending.store(true, Ordering::Release);
        }
    }

    /// Whether the indexes still await the check left to their first use.
    pub fn index_check_pending(&self) -> bool {
        self.index_check.pending.load(Ordering::Acquire)
    }

    /// Runs the check left to the first use, if it is still pending: the first caller checks
    /// (and rebuilds damaged indexes), concurrent callers wait for it. An I/O error during a
    /// rebuild is returned and the check stays pending.
    pub(super) fn check_indexes_if_pending(&self) -> Result<()> {
        if !self.index_check.pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let _running = self.index_check.running.lock();
        if !self.index_check.pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let max_index_size = self.offset_index.max_index_size();
        let problem = offset_index_problem(&self.offset_index.path(), true)
            .or_else(|| time_index_problem(&self.time_index.path(), true, max_index_size));
        if let Some(problem) = problem {
            problem.warn(&self.path(), "rebuilding index files from the segment's data at their first use");
            let scan = self.scan_valid_prefix(None)?;
            // Replaced through a `.tmp` file: nothing recovers this segment again after a crash.
            self.write_rebuilt_indexes(&scan.rebuilt, IndexWrite::Atomic)?;
        }
        self.index_check.done();
        Ok(())
    }
}
