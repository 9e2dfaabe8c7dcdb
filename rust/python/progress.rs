//! Progress callbacks for long calls (`compact_now`, `run_retention`): the call runs on a
//! worker thread with the GIL released, the engine reports into a mailbox (a short mutex,
//! never Python), and the calling thread, holding the GIL and no engine lock, hands the
//! reports to the Python callback, as `LogManager` start-up delivers its recovery progress.
//!
//! Reports are coalesced (only the latest of a phase waits) and delivered at most every
//! [`MIN_INTERVAL`], except that the last report of every phase is always delivered. An
//! exception raised by the callback (or a signal such as Ctrl-C while waiting) cancels the
//! operation (`ProgressSink::cancel`: a clean stops at its next chunk and leaves the segments
//! it has not swapped in unchanged; retention stops before its next log); the call waits for
//! the worker to finish, so nothing is left locked or half-swapped, then raises that exception.
//! No further callback is made after it raised.
//!
//! Thread-safety: the mailbox is shared by the worker and the calling thread behind a mutex.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use pyo3::prelude::*;

use super::errors::{run, to_py_err};
use super::results::py_result;
use crate::error::Error;
use crate::util::progress::{self, ProgressSink};

/// Least time between two deliveries of the same phase.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

py_result! { sequence
    /// How far a long call is (the `on_progress` callbacks of `compact_now`, `run_retention`
    /// and `to_arrow`): `done` of `total` `unit`s of its current `phase`; `done` never
    /// decreases within a phase, and the phase's last report has `done == total`.
    #[module = "kafkalog"]
    pub struct Progress {
        /// `indexing` / `cleaning` (a clean's two passes), `retention`, `reading`.
        phase: String,
        done: u64,
        total: u64,
        /// `bytes`, `logs`, `offsets`.
        unit: String,
        /// The round, from 1: a clean whose offset map fills runs again from where it stopped.
        round: u32 = 1,
    }
}

impl Progress {
    fn from_engine(p: &progress::Progress) -> Self {
        Progress { phase: p.phase.to_string(), done: p.done, total: p.total, unit: p.unit.to_string(), round: p.round }
    }
}

#[derive(Default)]
struct Mailbox {
    reports: VecDeque<progress::Progress>,
    done: bool,
}

type Shared = Arc<(Mutex<Mailbox>, Condvar)>;

/// A sink keeping the latest report of each phase in `mailbox`.
fn sink_into(mailbox: &Shared) -> ProgressSink {
    let mailbox = mailbox.clone();
    ProgressSink::new(move |p: &progress::Progress| {
        {
            let mut b = mailbox.0.lock();
            match b.reports.back_mut() {
                Some(last) if last.phase == p.phase && last.round == p.round => *last = p.clone(),
                _ => b.reports.push_back(p.clone()),
            }
        }
        mailbox.1.notify_all();
    })
}

/// Runs `f` as `errors::run` does; with a `callback`, on a worker thread whose progress reports
/// the calling thread delivers (see the module docs).
pub(crate) fn run_with_progress<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(Option<ProgressSink>) -> crate::error::Result<T> + Send,
{
    let Some(callback) = callback else { return run(py, move || f(None)) };
    let mailbox: Shared = Arc::new((Mutex::new(Mailbox::default()), Condvar::new()));
    let sink = sink_into(&mailbox);
    let mut failure: Option<PyErr> = None;
    let joined = std::thread::scope(|scope| {
        let (worker_sink, done) = (sink.clone(), mailbox.clone());
        let worker = std::thread::Builder::new().name("kafkalog-progress-call".into()).spawn_scoped(scope, move || {
            let r = f(Some(worker_sink));
            done.0.lock().done = true;
            done.1.notify_all();
            r
        });
        let worker = match worker {
            Ok(w) => w,
            Err(e) => return Ok(Err(Error::io(std::path::Path::new("progress"), "start a worker thread", e))),
        };
        let mut last: Option<Instant> = None;
        loop {
            let (reports, finished) = py.detach(|| wait_for_reports(&mailbox, last));
            if failure.is_none() {
                failure = deliver(py, &callback, &reports).err().or_else(|| py.check_signals().err());
                if failure.is_some() {
                    sink.cancel();
                }
                last = Some(Instant::now());
            }
            if finished {
                break;
            }
        }
        py.detach(|| worker.join())
    });
    super::logging::flush(py)?; // the worker's log events reach Python's handlers first
    let result = joined.map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("a kafkalog worker thread panicked"))?;
    if let Some(e) = failure {
        return Err(e);
    }
    result.map_err(|e| to_py_err(py, e))
}

/// Waits until reports are due (`MIN_INTERVAL` after the last delivery) or the call finished;
/// returns the reports waiting and whether it finished. Wakes at least every `MIN_INTERVAL` so
/// the caller can check for signals.
fn wait_for_reports(mailbox: &Shared, last: Option<Instant>) -> (Vec<progress::Progress>, bool) {
    let mut b = mailbox.0.lock();
    loop {
        if b.done {
            break;
        }
        let due = last.map_or(Duration::ZERO, |t| MIN_INTERVAL.saturating_sub(t.elapsed()));
        if !b.reports.is_empty() && due.is_zero() {
            break;
        }
        let timed_out = mailbox.1.wait_for(&mut b, if due.is_zero() { MIN_INTERVAL } else { due }).timed_out();
        if timed_out && b.reports.is_empty() {
            break; // let the caller check for signals
        }
    }
    (b.reports.drain(..).collect(), b.done)
}

fn deliver(py: Python<'_>, callback: &Py<PyAny>, reports: &[progress::Progress]) -> PyResult<()> {
    for r in reports {
        callback.call1(py, (Progress::from_engine(r),))?;
    }
    Ok(())
}
