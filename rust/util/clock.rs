//! Injectable time (Kafka's `Time`): the system clock in production, a manual clock in tests,
//! so roll, retention and horizon logic is tested without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock milliseconds. Implementations are thread-safe.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn milliseconds(&self) -> i64;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn milliseconds(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
    }
}

/// A clock that moves only when told to (Kafka's `MockTime`). Thread-safe.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock { now: AtomicI64::new(now_ms) })
    }
    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
    /// Sets the clock.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn milliseconds(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// The shared clock handle passed around the crate.
pub type SharedClock = Arc<dyn Clock>;

/// The system clock as a shared handle.
pub fn system_clock() -> SharedClock {
    Arc::new(SystemClock)
}
