//! Injectable time (Kafka's `Time`): the system clock in production, a manual clock in tests,
//! so roll, retention, horizon and throttling logic is tested without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time (Kafka's `Time`). Implementations are thread-safe.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn milliseconds(&self) -> i64;

    /// A monotonic reading in nanoseconds, for measuring intervals (`Time.nanoseconds`).
    /// Only differences between two readings mean anything.
    fn nanoseconds(&self) -> i64 {
        self.milliseconds().saturating_mul(1_000_000)
    }

    /// Waits `duration` (`Time.sleep`): the operating system's sleep, or, for a manual clock,
    /// moving the clock forward at once.
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn milliseconds(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
    }

    fn nanoseconds(&self) -> i64 {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(Instant::now);
        i64::try_from(origin.elapsed().as_nanos()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to, or when something sleeps on it (Kafka's `MockTime`).
/// Thread-safe.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ns: AtomicI64,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock { now_ns: AtomicI64::new(now_ms.saturating_mul(1_000_000)) })
    }
    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.now_ns.fetch_add(ms.saturating_mul(1_000_000), Ordering::SeqCst);
    }
    /// Sets the clock.
    pub fn set(&self, now_ms: i64) {
        self.now_ns.store(now_ms.saturating_mul(1_000_000), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn milliseconds(&self) -> i64 {
        self.now_ns.load(Ordering::SeqCst).div_euclid(1_000_000)
    }

    fn nanoseconds(&self) -> i64 {
        self.now_ns.load(Ordering::SeqCst)
    }

    /// Moves the clock forward by `duration` and returns at once, as `MockTime.sleep` does.
    fn sleep(&self, duration: Duration) {
        let ns = i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX);
        self.now_ns.fetch_add(ns, Ordering::SeqCst);
    }
}

/// The shared clock handle passed around the crate.
pub type SharedClock = Arc<dyn Clock>;

/// The system clock as a shared handle.
pub fn system_clock() -> SharedClock {
    Arc::new(SystemClock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_when_slept_on() {
        let clock = ManualClock::new(1_000);
        clock.sleep(Duration::from_micros(1_500));
        assert_eq!(clock.milliseconds(), 1_001);
        assert_eq!(clock.nanoseconds(), 1_001_500_000);
        clock.advance(9);
        assert_eq!(clock.milliseconds(), 1_010);
    }

    #[test]
    fn the_system_clock_is_monotonic() {
        let a = SystemClock.nanoseconds();
        let b = SystemClock.nanoseconds();
        assert!(b >= a);
    }
}
