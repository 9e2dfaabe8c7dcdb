//! The cleaner's I/O throttle (`log.cleaner.io.max.bytes.per.second`) on a real clean, timed on
//! a manual clock: the throttle's sleeps move that clock, so the clean's throttled duration is
//! exact and no test waits on the wall clock.
//!
//! Kafka's `Throttler` checks its rate only after each 300 ms window, so a clean shorter than
//! that is never slowed; kafkalog's holds the rate however short the clean.

use std::sync::Arc;

use kafkalog::cleaner::throttler::CHECK_INTERVAL;
use kafkalog::cleaner::{Cleaner, CleanerParams, CleanerStats, LogToClean, SkimpyOffsetMap, Throttler};
use kafkalog::record::CompressionType;
use kafkalog::util::clock::{Clock, ManualClock};
use kafkalog::UnifiedLog;

use crate::common::cleaner::{compact_config, open_shared};
use crate::common::{batch, Fixture, RecSpec, T0};

const RATE: f64 = 1_000_000.0;

/// 1.2 MB of keyed records (1,200 of about 1 KB; each key written three times), in segments of
/// 256 KiB, the last one rolled so all of it is cleanable.
fn log_of_1_2_mb(fx: &Fixture) -> Arc<UnifiedLog> {
    let log = open_shared(fx, &compact_config(&[("internal.segment.bytes", "262144")]));
    let value = vec![b'v'; 960];
    for chunk in 0..120 {
        let keys: Vec<Vec<u8>> = (0..10).map(|i| format!("key-{}", (chunk * 10 + i) % 400).into_bytes()).collect();
        let specs: Vec<RecSpec<'_>> = keys.iter().map(|k| (Some(&k[..]), Some(&value[..]), T0)).collect();
        let mut b = batch(0, CompressionType::None, &specs);
        log.append_as_leader(&mut b, 0).expect("append");
    }
    log.roll().expect("roll");
    let size: u64 = log.segments().iter().map(|s| s.size()).sum();
    assert!((1_150_000..1_260_000).contains(&size), "{size}");
    log
}

fn clean(fx: &Fixture, log: &Arc<UnifiedLog>, throttler: Arc<Throttler>) -> CleanerStats {
    let params = CleanerParams { io_buffer_size: 64 * 1024, ..CleanerParams::default() };
    let map = SkimpyOffsetMap::new(1 << 20).expect("map");
    let mut cleaner = Cleaner::new(0, map, params, throttler, fx.shared_clock()).expect("cleaner");
    let to_clean = LogToClean::new(log.clone(), 0, log.active_segment().expect("active").base_offset(), false);
    cleaner.do_clean(&to_clean, T0, &|| Ok(())).expect("clean").1
}

#[test]
fn a_short_clean_takes_its_bytes_over_the_rate() {
    let fx = Fixture::new();
    let log = log_of_1_2_mb(&fx);
    let size: u64 = log.segments().iter().map(|s| s.size()).sum();
    let time = ManualClock::new(0);
    let throttler = Arc::new(Throttler::with_clock(RATE, CHECK_INTERVAL, time.clone()));
    let stats = clean(&fx, &log, throttler.clone());
    let took_ms = time.nanoseconds() as f64 / 1e6;
    // What Kafka's throttle counts: pass 1 reads the dirty section, pass 2 reads it again,
    // except the runs of superseded batches it skips unread, and writes what it keeps. Each
    // read chunk is counted once, so the clean's I/O lies between those reads plus what was
    // written, and those reads plus a whole write.
    let read = 2 * size - stats.bytes_skipped;
    let floor_ms = (read + stats.bytes_written) as f64 / RATE * 1e3;
    let ceiling_ms = (read + size) as f64 / RATE * 1e3;
    assert!(took_ms >= floor_ms - 1.0 && took_ms <= ceiling_ms + 1.0, "{took_ms} ms, {floor_ms}..{ceiling_ms}");
    // Each key is written three times in turn, so runs of the first two rounds are skipped.
    assert!(stats.bytes_skipped > 0 && stats.bytes_skipped < size, "{}", stats.bytes_skipped);
    // The 1.2 MB log is read once whole at 1 MB/s: over 1.2 s, where Kafka's throttle, on a
    // clean this fast, would sleep not at all.
    assert!(took_ms > 1_150.0 + (size - stats.bytes_skipped) as f64 / RATE * 1e3, "{took_ms}");
    assert_eq!(throttler.total_sleep().as_nanos() as i64, time.nanoseconds());
    assert_eq!(stats.throttled_ms, (time.nanoseconds() / 1_000_000) as u64);
    assert!(stats.messages_written < stats.messages_read, "the clean dropped superseded records");
}

#[test]
fn an_unthrottled_clean_never_sleeps() {
    let fx = Fixture::new();
    let log = log_of_1_2_mb(&fx);
    let time = ManualClock::new(0);
    let stats = clean(&fx, &log, Arc::new(Throttler::with_clock(f64::MAX, CHECK_INTERVAL, time.clone())));
    assert_eq!(time.nanoseconds(), 0);
    assert_eq!(stats.throttled_ms, 0);
}
