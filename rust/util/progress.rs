//! Progress of a long operation (a clean, a retention run over many logs), reported to a
//! caller's sink. No Kafka counterpart: Kafka's only progress reports are its recovery gauges
//! (`remainingLogsToRecover`, `remainingSegmentsToRecover`).
//!
//! The engine calls [`ProgressSink::report`] where it stands (a cleaner thread may hold a log's
//! cleaning guard then), so a sink must only record the report and return: the Python bindings
//! keep the latest report of each phase in a mailbox that the caller's thread reads. A sink
//! can also be cancelled; the operation then stops at its next check (a clean with
//! `LogCleaningAborted`, leaving the segments it has not swapped in unchanged).
//!
//! Thread-safety: `ProgressSink` is `Send + Sync`; reports and cancellation from any thread.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One report: how far the current phase of an operation is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// What is being done: `indexing` / `cleaning` (a clean's two passes over the log),
    /// `retention`, ...
    pub phase: &'static str,
    /// Units done in this phase; never decreases within a phase.
    pub done: u64,
    /// Units in this phase; the phase's last report has `done == total`.
    pub total: u64,
    /// What `done` and `total` count: `bytes`, `logs`, ...
    pub unit: &'static str,
    /// The round the phase belongs to, from 1: a clean whose offset map fills up runs again
    /// from where it stopped, each round an `indexing` then a `cleaning` phase.
    pub round: u32,
}

/// Where an operation reports its progress, and how its caller cancels it.
#[derive(Clone)]
pub struct ProgressSink {
    report: Arc<dyn Fn(&Progress) + Send + Sync>,
    cancelled: Arc<AtomicBool>,
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink").field("cancelled", &self.is_cancelled()).finish_non_exhaustive()
    }
}

impl ProgressSink {
    /// A sink calling `report` with every report (it must not block or take engine locks).
    pub fn new(report: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        ProgressSink { report: Arc::new(report), cancelled: Arc::new(AtomicBool::new(false)) }
    }

    /// Hands `progress` to the sink.
    pub fn report(&self, progress: &Progress) {
        (self.report)(progress);
    }

    /// Asks the operation to stop at its next check.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether the caller asked the operation to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn reports_reach_the_sink_and_cancellation_is_shared_by_clones() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let sink = ProgressSink::new(move |p: &Progress| s.lock().push(p.done));
        let clone = sink.clone();
        let p = Progress { phase: "cleaning", done: 3, total: 4, unit: "bytes", round: 1 };
        clone.report(&p);
        assert_eq!(*seen.lock(), vec![3]);
        assert!(!sink.is_cancelled());
        clone.cancel();
        assert!(sink.is_cancelled());
        assert!(format!("{sink:?}").contains("cancelled: true"));
    }
}
