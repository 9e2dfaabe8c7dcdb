//! Periodic tasks of the `LogManager` (Kafka's `KafkaScheduler` running `kafka-log-retention`,
//! `kafka-log-flusher`, `kafka-recovery-point-checkpoint`, `kafka-log-start-offset-checkpoint`
//! and `kafka-delete-logs`). The task table is driven by `tick()`, which runs whatever is due by
//! the injected clock; in production one named thread (`kafka-scheduler-0`) calls it, and tests
//! with a manual clock call it themselves.
//!
//! Thread-safety: `Tasks` is guarded by the manager; `SchedulerThread` owns its thread and stops
//! it on `shutdown` or drop.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// One periodic task: first run at `start + initial_delay`, then every `period` ms.
#[derive(Debug, Clone)]
pub struct Task {
    /// Kafka's task name.
    pub name: &'static str,
    /// Next due time (ms).
    pub next_due: i64,
    /// Period (ms); `i64::MAX` runs once.
    pub period: i64,
}

/// The task table.
#[derive(Debug, Default)]
pub struct Tasks {
    tasks: Vec<Task>,
}

impl Tasks {
    /// Adds a task due at `now + initial_delay`.
    pub fn schedule(&mut self, name: &'static str, now: i64, initial_delay: i64, period: i64) {
        self.tasks.push(Task { name, next_due: now.saturating_add(initial_delay), period: period.max(1) });
    }

    /// Names of the tasks due at `now`, each rescheduled one period later.
    pub fn take_due(&mut self, now: i64) -> Vec<&'static str> {
        let mut due = Vec::new();
        for t in &mut self.tasks {
            if t.next_due <= now {
                due.push(t.name);
                t.next_due = now.saturating_add(t.period);
            }
        }
        due
    }

    /// Milliseconds until the next task is due (0 if one is due now).
    pub fn until_next(&self, now: i64) -> i64 {
        self.tasks.iter().map(|t| t.next_due.saturating_sub(now).max(0)).min().unwrap_or(i64::MAX)
    }
}

/// The background thread calling a tick function until shut down.
#[derive(Debug)]
pub struct SchedulerThread {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl SchedulerThread {
    /// Starts `kafka-scheduler-0`, which calls `tick` (returning the ms until the next due
    /// task) and sleeps until then (at most `max_sleep`), until `shutdown`.
    pub fn start<F>(max_sleep: Duration, tick: F) -> std::io::Result<Self>
    where
        F: Fn() -> i64 + Send + 'static,
    {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread_stop = stop.clone();
        let handle = std::thread::Builder::new().name("kafka-scheduler-0".into()).spawn(move || {
            let (lock, cv) = &*thread_stop;
            loop {
                let wait = tick();
                let mut stopped = lock.lock();
                if *stopped {
                    break;
                }
                let ms = u64::try_from(wait.max(1)).unwrap_or(u64::MAX);
                cv.wait_for(&mut stopped, Duration::from_millis(ms).min(max_sleep));
                if *stopped {
                    break;
                }
            }
        })?;
        Ok(SchedulerThread { stop, handle: Some(handle) })
    }

    /// Stops the thread and waits for it (a task in progress finishes first).
    pub fn shutdown(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock() = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for SchedulerThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_run_after_their_delay_then_every_period() {
        let mut t = Tasks::default();
        t.schedule("a", 1000, 30, 100);
        t.schedule("b", 1000, 30, i64::MAX);
        assert!(t.take_due(1029).is_empty());
        assert_eq!(t.until_next(1029), 1);
        assert_eq!(t.take_due(1030), vec!["a", "b"]);
        assert_eq!(t.take_due(1129), Vec::<&str>::new());
        assert_eq!(t.take_due(1130), vec!["a"]);
        assert_eq!(t.take_due(i64::MAX - 1), vec!["a"]);
    }
}
