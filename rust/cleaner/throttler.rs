//! The I/O throttle shared by every cleaner thread (Kafka's `Throttler`,
//! `log.cleaner.io.max.bytes.per.second`).
//!
//! Kafka measures the rate over windows of 300 ms and sleeps only when a window has ended, so a
//! clean that finishes within its first window is never slowed. This throttle keeps a virtual
//! "paid until" time instead: every call reserves `bytes / rate` of it, and a caller sleeps
//! until its reservation falls due. A clean of N bytes therefore takes at least N / rate,
//! however short it is. Time spent doing I/O between two calls counts towards the rate, as in
//! Kafka's windows, but at most [`CHECK_INTERVAL`] of it, so an idle throttle grants no burst.
//!
//! Thread-safety: `Send + Sync`. Reservations are made under a short lock and the sleep happens
//! outside it; because each thread sleeps until its own reservation, all cleaner threads
//! together stay under the limit, as they do in Kafka (which sleeps under its lock).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::util::clock::{system_clock, SharedClock};

/// Kafka's check interval for the cleaner throttler; here the most I/O time between two calls
/// that is credited to the rate.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(300);

/// Debts shorter than this are carried to the next call rather than slept (a sleep this short
/// would cost more than it saves); they are still owed.
const MIN_SLEEP_NS: i64 = 1_000_000;

#[derive(Debug)]
struct Reservations {
    /// Monotonic time (the clock's nanoseconds) by which every byte counted so far has been
    /// paid for at the desired rate.
    paid_until_ns: i64,
    /// When the latest call returns (or returned): calls closer together than the check
    /// interval belong to one stretch of I/O.
    last_return_ns: Option<i64>,
}

/// Limits the combined byte rate of the cleaner threads. Mirrors Kafka's `Throttler`.
pub struct Throttler {
    /// The limit in bytes per second, as `f64` bits (reconfigurable while threads run).
    desired_rate_bits: AtomicU64,
    check_interval_ns: i64,
    clock: SharedClock,
    reservations: Mutex<Reservations>,
    /// Total time callers have slept, for tests and metrics.
    slept_ns: AtomicU64,
}

impl std::fmt::Debug for Throttler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttler").field("desired_rate_per_sec", &self.desired_rate_per_sec()).finish_non_exhaustive()
    }
}

impl Throttler {
    /// A throttler at `desired_rate_per_sec` (`f64::MAX` means unthrottled) on the system clock.
    pub fn new(desired_rate_per_sec: f64, check_interval: Duration) -> Self {
        Self::with_clock(desired_rate_per_sec, check_interval, system_clock())
    }

    /// A throttler that reads and sleeps on `clock` (a manual clock makes its sleeps instant
    /// and exact, for tests).
    pub fn with_clock(desired_rate_per_sec: f64, check_interval: Duration, clock: SharedClock) -> Self {
        Throttler {
            desired_rate_bits: AtomicU64::new(desired_rate_per_sec.to_bits()),
            check_interval_ns: i64::try_from(check_interval.as_nanos()).unwrap_or(i64::MAX),
            clock,
            reservations: Mutex::new(Reservations { paid_until_ns: i64::MIN, last_return_ns: None }),
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

    /// Counts `observed` bytes (just read or written) and sleeps until they are paid for at
    /// the desired rate; returns how long it slept.
    pub fn maybe_throttle(&self, observed: f64) -> Duration {
        let desired = self.desired_rate_per_sec();
        if desired >= f64::MAX || observed.is_nan() || observed <= 0.0 {
            return Duration::ZERO;
        }
        // The float-to-int cast saturates: an absurd debt sleeps "forever", as Kafka's would.
        let cost_ns = (observed / desired * 1e9).ceil() as i64;
        let (now, wake) = {
            let mut r = self.reservations.lock();
            let now = self.clock.nanoseconds();
            let active = r.last_return_ns.is_some_and(|t| now.saturating_sub(t) <= self.check_interval_ns);
            // I/O since the previous call counts, up to one check interval; an idle gap none.
            let credit_from = if active { now.saturating_sub(self.check_interval_ns) } else { now };
            r.paid_until_ns = r.paid_until_ns.max(credit_from).saturating_add(cost_ns);
            let wake = if r.paid_until_ns.saturating_sub(now) >= MIN_SLEEP_NS { r.paid_until_ns } else { now };
            r.last_return_ns = Some(wake);
            (now, wake)
        };
        if wake <= now {
            return Duration::ZERO;
        }
        let d = Duration::from_nanos(u64::try_from(wake - now).unwrap_or(u64::MAX));
        self.clock.sleep(d);
        self.slept_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::{Clock, ManualClock};
    use std::sync::Arc;

    fn manual() -> (Arc<ManualClock>, Throttler) {
        let clock = ManualClock::new(1_700_000_000_000);
        let t = Throttler::with_clock(1_000_000.0, CHECK_INTERVAL, clock.clone());
        (clock, t)
    }

    #[test]
    fn unthrottled_never_sleeps() {
        let clock = ManualClock::new(0);
        let t = Throttler::with_clock(f64::MAX, CHECK_INTERVAL, clock.clone());
        for _ in 0..1000 {
            t.maybe_throttle(1e9);
        }
        assert_eq!(t.total_sleep(), Duration::ZERO);
        assert_eq!(clock.nanoseconds(), 0);
    }

    #[test]
    fn a_short_burst_is_slowed_to_the_rate() {
        // 1.2 MB in chunks far shorter than Kafka's 300 ms window, with no time passing between
        // them: Kafka's throttler would never sleep; this one takes 1.2 s.
        let (clock, t) = manual();
        let start = clock.nanoseconds();
        for _ in 0..12 {
            t.maybe_throttle(100_000.0);
        }
        assert_eq!(clock.nanoseconds() - start, 1_200_000_000);
        assert_eq!(t.total_sleep(), Duration::from_millis(1_200));
    }

    #[test]
    fn one_call_pays_its_whole_debt() {
        let (clock, t) = manual();
        let start = clock.nanoseconds();
        t.maybe_throttle(1_200_000.0);
        assert_eq!(clock.nanoseconds() - start, 1_200_000_000);
    }

    #[test]
    fn io_time_between_calls_counts_but_idle_time_does_not() {
        let (clock, t) = manual();
        t.maybe_throttle(100_000.0); // 100 ms
        clock.advance(100); // the next chunk's I/O took 100 ms: it is paid for already
        t.maybe_throttle(100_000.0);
        assert_eq!(t.total_sleep(), Duration::from_millis(100));
        clock.advance(60_000); // idle for a minute: no credit for the next burst
        let before = clock.nanoseconds();
        t.maybe_throttle(500_000.0);
        assert_eq!(clock.nanoseconds() - before, 500_000_000);
    }

    #[test]
    fn slow_io_never_sleeps() {
        let (clock, t) = manual();
        t.maybe_throttle(1_000.0); // 1 ms at 1 MB/s, the first call pays it
        for _ in 0..100 {
            clock.advance(10); // 10 ms per 1 KB: 100 KB/s, well under the limit
            t.maybe_throttle(1_000.0);
        }
        assert_eq!(t.total_sleep(), Duration::from_millis(1));
    }

    #[test]
    fn debts_below_a_millisecond_are_carried_not_forgotten() {
        let (clock, t) = manual();
        let start = clock.nanoseconds();
        for _ in 0..1_000 {
            t.maybe_throttle(100.0); // 0.1 ms each
        }
        let took = clock.nanoseconds() - start;
        assert!((99_000_000..=100_000_000).contains(&took), "{took}");
    }

    /// A clock that never moves and remembers the latest time anyone slept until.
    #[derive(Debug, Default)]
    struct FrozenClock {
        latest_wake_ns: std::sync::atomic::AtomicI64,
    }

    impl Clock for FrozenClock {
        fn milliseconds(&self) -> i64 {
            0
        }
        fn nanoseconds(&self) -> i64 {
            0
        }
        fn sleep(&self, duration: Duration) {
            self.latest_wake_ns.fetch_max(duration.as_nanos() as i64, Ordering::SeqCst);
        }
    }

    #[test]
    fn threads_share_the_limit() {
        let clock = Arc::new(FrozenClock::default());
        let t = Arc::new(Throttler::with_clock(1_000_000.0, CHECK_INTERVAL, clock.clone()));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        t.maybe_throttle(50_000.0);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // 2 MB at 1 MB/s, whatever the interleaving: the last caller waits until 2 s.
        assert_eq!(clock.latest_wake_ns.load(Ordering::SeqCst), 2_000_000_000);
    }

    #[test]
    fn a_lower_rate_applies_to_the_next_call() {
        let (clock, t) = manual();
        t.update_desired_rate_per_sec(500_000.0);
        let start = clock.nanoseconds();
        t.maybe_throttle(100_000.0);
        assert_eq!(clock.nanoseconds() - start, 200_000_000);
    }
}
