//! The sanity check of a segment's indexes, left by the loader to their first use.
//!
//! After a clean shutdown, the loader opens no offset or time index file of an inactive
//! segment (`log/log_loader.rs`, `IndexCheck::AtFirstUse`): Kafka's loader does not check them
//! either. kafkalog checks them once, when the segment first needs an index (a lookup, a read,
//! a truncation, retention by time, the cleaner), with the checks the loader runs
//! (`index::sanity`). A damaged index (its length not a whole number of entries, a negative
//! last entry, a preallocated tail of zeros, a missing file) is rebuilt there from the
//! segment's data, both indexes, with a warning naming the files, and fsynced (no flush covers
//! a segment below the recovery point). The data is not touched: the rebuilt indexes cover the
//! segment's valid batches, and a read of damaged data past them fails as it would have. A
//! rebuild that fails leaves both indexes empty, so lookups scan the segment.
//!
//! Thread-safety: the first users of a segment's indexes wait for one check; afterwards the
//! cost is one atomic load per index access. The check takes its mutex before any index lock
//! and never takes the segment's other locks. A rename or delete of the segment's files takes
//! the same mutex, so a rebuild never writes under a name the segment has left.

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
    /// segment after a clean shutdown). Nothing is read until then. Only for a segment not yet
    /// shared: a thread holding an index guard relies on the check being over.
    pub(crate) fn check_indexes_at_first_use(&self) {
        if !self.read_only {
            self.index_check.pending.store(true, Ordering::Release);
        }
    }

    /// Whether the indexes still await the check left to their first use.
    pub fn index_check_pending(&self) -> bool {
        self.index_check.pending.load(Ordering::Acquire)
    }

    /// Runs the check left to the first use, if it is still pending: the first caller checks
    /// (and rebuilds damaged indexes), concurrent callers wait for it.
    ///
    /// A rebuild that fails (an I/O error, an offset too far from the base offset for one
    /// segment, more entries than `segment.index.bytes` holds) leaves both indexes empty
    /// instead, with a warning: lookups in the segment then scan it from its start. Only when
    /// even that cannot be written is the error returned, and the check stays pending.
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
            problem.warn(
                super::LOG_TARGET,
                &self.path(),
                "rebuilding index files from the segment's data at their first use",
            );
            // Replaced through `.tmp` files and fsynced: no flush covers this segment, and no
            // load recovers it again.
            let rebuilt = self
                .scan_valid_prefix(None)
                .and_then(|scan| self.write_rebuilt_indexes(&scan.rebuilt, IndexWrite::AtomicDurable));
            if let Err(e) = rebuilt {
                log::warn!(
                    target: super::LOG_TARGET,
                    "Could not rebuild the index files of log segment {} ({e}); they are left empty, and lookups \
                     in the segment scan it from its start",
                    self.path().display()
                );
                self.write_rebuilt_indexes(&self.empty_index_rebuild(), IndexWrite::AtomicDurable)?;
            }
        }
        self.index_check.done();
        Ok(())
    }

    /// Holds off the check left to the first use while the segment's files are renamed or
    /// deleted (`change_file_suffixes`, `delete_if_exists`), so that a rebuild never writes
    /// files under a name the segment just left. `f` runs with the check's lock held.
    pub(super) fn without_index_check<R>(&self, f: impl FnOnce() -> R) -> R {
        let _running = self.index_check.running.lock();
        f()
    }
}
