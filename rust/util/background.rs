//! One-shot background tasks (Kafka's `KafkaScheduler.scheduleOnce` with no delay, which
//! `UnifiedLog.roll` uses for its `flush-log` task): jobs run in the order they were scheduled,
//! on one worker thread started by the first job, never at construction (so nothing starts a
//! thread at import, or at open).
//!
//! A *manual* scheduler starts no thread: its jobs wait until [`BackgroundScheduler::run_pending`]
//! runs them on the caller's thread. `LogManager` uses one when its scheduler thread is off
//! (tests on a manual clock), so the tests decide when a roll's flush happens.
//!
//! Thread-safety: `Send + Sync`; every method takes `&self`. [`BackgroundScheduler::shutdown`]
//! (and drop) runs the jobs still queued, then joins the worker; jobs scheduled after it run at
//! once on the caller's thread.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

/// A job: runs once, on the worker thread (or the thread calling `run_pending` / `shutdown`).
pub type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<(&'static str, Job)>,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The worker and the process it was started in (a forked child has no such thread).
struct Worker {
    handle: JoinHandle<()>,
    pid: u32,
}

/// Runs one-shot jobs in the background. Mirrors the part of Kafka's `KafkaScheduler` that
/// `scheduleOnce` uses; the periodic tasks of `LogManager` live in `manager::scheduler`.
pub struct BackgroundScheduler {
    thread_name: &'static str,
    manual: bool,
    shared: Arc<Shared>,
    worker: Mutex<Option<Worker>>,
}

impl std::fmt::Debug for BackgroundScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundScheduler")
            .field("thread_name", &self.thread_name)
            .field("manual", &self.manual)
            .field("queued", &self.shared.queue.lock().jobs.len())
            .field("worker_started", &self.worker.lock().is_some())
            .finish_non_exhaustive()
    }
}

impl BackgroundScheduler {
    /// A scheduler whose jobs run on a thread named `thread_name`, started by the first job.
    pub fn threaded(thread_name: &'static str) -> Self {
        BackgroundScheduler { thread_name, manual: false, shared: Arc::default(), worker: Mutex::new(None) }
    }

    /// A scheduler that runs its jobs only when [`BackgroundScheduler::run_pending`] is called.
    pub fn manual() -> Self {
        BackgroundScheduler { thread_name: "", manual: true, shared: Arc::default(), worker: Mutex::new(None) }
    }

    /// Whether jobs wait for [`BackgroundScheduler::run_pending`].
    pub fn is_manual(&self) -> bool {
        self.manual
    }

    /// Queues `job` (Kafka's task `name`, for the logs). After `shutdown`, or when no thread
    /// can be started, the job runs at once on the caller's thread.
    pub fn schedule_once(&self, name: &'static str, job: Job) {
        {
            let mut queue = self.shared.queue.lock();
            if !queue.stop {
                queue.jobs.push_back((name, job));
                self.shared.wake.notify_one();
                drop(queue);
                if !self.manual {
                    self.ensure_worker();
                }
                return;
            }
        }
        run_job(name, job);
    }

    /// Starts the worker unless one runs in this process. A worker that failed to start leaves
    /// its jobs to the caller: they run here, now.
    fn ensure_worker(&self) {
        let pid = std::process::id();
        let mut worker = self.worker.lock();
        if worker.as_ref().is_some_and(|w| w.pid == pid) {
            return;
        }
        // A worker recorded by another pid lived in the parent of this forked process.
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new().name(self.thread_name.into()).spawn(move || work(&shared));
        match spawned {
            Ok(handle) => *worker = Some(Worker { handle, pid }),
            Err(e) => {
                drop(worker);
                log::warn!("cannot start the {} thread ({e}); running its tasks on the caller", self.thread_name);
                self.run_pending();
            }
        }
    }

    /// Runs the queued jobs on the caller's thread, in order, including any they schedule;
    /// returns how many ran.
    pub fn run_pending(&self) -> usize {
        let mut ran = 0;
        while let Some((name, job)) = self.shared.queue.lock().jobs.pop_front() {
            run_job(name, job);
            ran += 1;
        }
        ran
    }

    /// Runs what is queued and stops the worker (waiting for it). Later jobs run at once on
    /// their caller's thread. Calling it twice is harmless.
    pub fn shutdown(&self) {
        self.shared.queue.lock().stop = true;
        self.shared.wake.notify_all();
        let worker = self.worker.lock().take();
        if let Some(w) = worker {
            if w.pid == std::process::id() && w.handle.thread().id() != std::thread::current().id() {
                let _ = w.handle.join();
            }
        }
        self.run_pending();
    }
}

impl Drop for BackgroundScheduler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The worker's loop: the next job, or a wait for one, until stopped with nothing queued.
fn work(shared: &Shared) {
    loop {
        let next = {
            let mut queue = shared.queue.lock();
            loop {
                if let Some(job) = queue.jobs.pop_front() {
                    break Some(job);
                }
                if queue.stop {
                    break None;
                }
                shared.wake.wait(&mut queue);
            }
        };
        let Some((name, job)) = next else { return };
        run_job(name, job);
    }
}

/// Runs one job; a panic is logged and does not end the worker.
fn run_job(name: &'static str, job: Job) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        log::error!("background task {name} panicked: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn manual_jobs_wait_for_run_pending_in_order() {
        let s = BackgroundScheduler::manual();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let seen = seen.clone();
            s.schedule_once("t", Box::new(move || seen.lock().push(i)));
        }
        assert!(seen.lock().is_empty(), "nothing runs before run_pending");
        assert!(s.worker.lock().is_none(), "a manual scheduler starts no thread");
        assert_eq!(s.run_pending(), 3);
        assert_eq!(*seen.lock(), vec![0, 1, 2]);
    }

    #[test]
    fn threaded_jobs_run_on_a_lazily_started_named_thread() {
        let s = BackgroundScheduler::threaded("test-flush");
        assert!(s.worker.lock().is_none(), "no thread before the first job");
        let (tx, rx) = mpsc::channel();
        s.schedule_once("t", Box::new(move || tx.send(std::thread::current().name().map(String::from)).unwrap()));
        assert_eq!(rx.recv().unwrap().as_deref(), Some("test-flush"));
        s.shutdown();
    }

    #[test]
    fn a_panicking_job_does_not_stop_later_ones_and_shutdown_runs_the_rest() {
        let s = BackgroundScheduler::manual();
        let ran = Arc::new(Mutex::new(0));
        s.schedule_once("boom", Box::new(|| panic!("boom")));
        let r = ran.clone();
        s.schedule_once("t", Box::new(move || *r.lock() += 1));
        s.shutdown();
        assert_eq!(*ran.lock(), 1, "shutdown ran the queued job after the panic");
        let r = ran.clone();
        s.schedule_once("late", Box::new(move || *r.lock() += 1));
        assert_eq!(*ran.lock(), 2, "after shutdown a job runs at once");
    }
}
