//! The I/O throttle shared by every cleaner thread (Kafka's `Throttler`,
//! `log.cleaner.io.max.bytes.per.second`): bytes are counted over windows of 300 ms, and a
//! caller that finds the rate above the limit sleeps long enough to bring it back down.
//!
//! Thread-safety: `Send + Sync`. The sleep happens under the throttler's lock, as in Kafka, so
//! all cleaner threads together stay under the limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Kafka's check interval for the cleaner throttler.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(300);

struct Window {
    start: Instant,
    observed: f64,
}

/// Limits the combined byte rate of the cleaner threads. Mirrors Kafka's `Throttler`.
pub struct Throttler {
    /// The limit in bytes per second, as `f64` bits (reconfigurable while threads run).
    desired_rate_bits: AtomicU64,
    check_interval: Duration,
    window: Mutex<Window>,
    /// Total time slept, for tests and metrics.
    slept_ns: AtomicU64,
}

impl std::fmt::Debug for Throttler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttler").field("desired_rate_per_sec", &self.desired_rate_per_sec()).finish_non_exhaustive()
    }
}

impl Throttler {
    /// A throttler at `desired_rate_per_sec` (`f64::MAX` means unthrottled).
    pub fn new(desired_rate_per_sec: f64, check_interval: Duration) -> Self {
        Throttler {
            desired_rate_bits: AtomicU64::new(desired_rate_per_sec.to_bits()),
            check_interval,
            window: Mutex::new(Window { start: Instant::now(), observed: 0.0 }),
            slept_ns: AtomicU64::new(0),
        }
    }

    /// The limit in bytes per second.
    pub fn desired_rate_per_sec(&self) -> f64 {
        f64::from_bits(self.desired_rate_bits.load(Ordering::Relaxed))
    }

    /// Changes the limit (a dynamic `log.cleaner.io.max.bytes.per.second` update).
    pub fn update_desired_rate_per_sec(&self, rate: f64) {
        self.desired_rate_bits.store(rate.to_bits(), Ordering::Relaxed);
    }

    /// Total time callers have slept.
    pub fn total_sleep(&self) -> Duration {
        Duration::from_nanos(self.slept_ns.load(Ordering::Relaxed))
    }

    /// Counts `observed` bytes and sleeps if the rate over the current window is above the
    /// limit.
    pub fn maybe_throttle(&self, observed: f64) {
        let desired = self.desired_rate_per_sec();
        if desired >= f64::MAX {
            return;
        }
        let mut w = self.window.lock();
        w.observed += observed;
        let elapsed = w.start.elapsed();
        if elapsed > self.check_interval && w.observed > 0.0 {
            let rate = w.observed / elapsed.as_secs_f64();
            if rate > desired {
                let desired_per_ms = desired / 1000.0;
                let sleep_ms = (w.observed / desired_per_ms - elapsed.as_millis() as f64).round();
                if sleep_ms > 0.0 {
                    let d = Duration::from_millis(sleep_ms as u64);
                    std::thread::sleep(d);
                    self.slept_ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
                }
            }
            w.start = Instant::now();
            w.observed = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unthrottled_never_sleeps() {
        let t = Throttler::new(f64::MAX, Duration::from_millis(1));
        for _ in 0..1000 {
            t.maybe_throttle(1e9);
        }
        assert_eq!(t.total_sleep(), Duration::ZERO);
    }

    #[test]
    fn sleeps_to_hold_the_rate() {
        let t = Throttler::new(1_000_000.0, Duration::from_millis(10));
        let start = Instant::now();
        // 100 KB at 1 MB/s takes at least ~100 ms.
        for _ in 0..10 {
            t.maybe_throttle(10_000.0);
            std::thread::sleep(Duration::from_millis(2));
        }
        t.maybe_throttle(0.0);
        std::thread::sleep(Duration::from_millis(11));
        t.maybe_throttle(1.0);
        assert!(start.elapsed() >= Duration::from_millis(80), "{:?}", start.elapsed());
        assert!(t.total_sleep() > Duration::ZERO);
    }
}
