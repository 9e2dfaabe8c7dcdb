//! Criterion benchmark of append latency across segment rolls (issue 17, part 3): producer
//! batches (16 KiB of 100-byte records) appended as leader to a log with 1 MiB segments, 100
//! rolls per run, on the machine's disk (a temporary directory). Two ways to flush the rolled
//! segment, measured in the same run:
//!
//! - `background`: Kafka's way (`UnifiedLog.roll` schedules a `flush-log` task): the roll
//!   fsyncs nothing under the write lock; a `kafka-flush-log` thread flushes the old segment;
//! - `synchronous` (the baseline): the old segment, its indexes and the producer snapshot are
//!   fsynced inside the roll, under the write lock (kafkalog before this change).
//!
//! Criterion reports the time of one run (100 rolls); the bench then prints each append's
//! latency p50, p99 and max over every run it timed, and the same for the appends that rolled,
//! with the load average before and after (the machine may be shared). On a loaded machine an
//! append also waits for a CPU; the bench reads the appending thread's run-queue wait
//! (`/proc/thread-self/schedstat`) around each append and prints the figures a second time
//! with that wait taken out. Goal: p99 < 1 ms and max < 5 ms with the background flush.
//!
//! Each run writes a new log in its own temporary directory, and every run's directory is
//! deleted only when the bench ends: deleting a run's ~400 files right before the next run
//! would measure ext4's inode allocator instead of the log (for about five seconds after files
//! are deleted, each new inode skips every recently deleted one, reading their inode table
//! blocks: 0.3-0.5 ms per file created here, where an undisturbed create takes ~30 us). The
//! runs need about 120 MB of disk each.
//!
//! Run with `cargo bench --bench roll_bench` (or `make bench`).

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kafkalog::log::unified_log::{LogOpenOptions, RollFlushMode, UnifiedLog};
use kafkalog::record::compression::CompressionType;
use kafkalog::util::background::BackgroundScheduler;
use kafkalog::LogConfig;

#[path = "workload.rs"]
#[allow(dead_code)] // its config() (1 GiB segments) is not this bench's
mod workload;
use workload::producer_batches;

const SEGMENT_BYTES: usize = 1 << 20;
const ROLLS: usize = 100;

/// One timed append.
#[derive(Clone, Copy)]
struct Sample {
    /// Wall-clock time of the append (ns).
    wall: u64,
    /// Of that, the time the thread was runnable but waiting for a CPU (ns): the machine's
    /// load, not the append (`/proc/thread-self/schedstat`'s run delay).
    run_delay: u64,
    /// The append rolled the log.
    rolled: bool,
}

/// Every append timed in a mode.
type Samples = Arc<Mutex<Vec<Sample>>>;

fn config() -> LogConfig {
    LogConfig::from_props([("segment.bytes", &SEGMENT_BYTES.to_string()[..]), ("retention.ms", "-1")])
        .expect("valid config")
}

/// The runs' directories, deleted when the bench ends (see the module docs).
type RunDirs = Arc<Mutex<Vec<tempfile::TempDir>>>;

/// One run: appends until the log rolled `ROLLS` times, each append timed. Returns the time
/// spent in appends; the run's directory joins `dirs`.
fn run(batches: &[Vec<u8>], mode: RollFlushMode, samples: &Samples, dirs: &RunDirs) -> Duration {
    let dir = tempfile::tempdir().expect("temporary directory");
    // A LogManager lends its scheduler to its logs; a log with none flushes inside the roll.
    let scheduler = Arc::new(BackgroundScheduler::threaded("kafka-flush-log"));
    let options =
        LogOpenOptions { roll_flush: mode, flush_scheduler: Some(scheduler.clone()), ..LogOpenOptions::default() };
    let log = UnifiedLog::open(&dir.path().join("roll-0"), config(), options).expect("open log");
    let mut pending: Vec<Vec<u8>> = batches.to_vec();
    let mut timed = Vec::with_capacity(pending.len());
    let mut total = Duration::ZERO;
    for batch in &mut pending {
        let segments = log.number_of_segments();
        let delay_before = run_delay_ns();
        let start = Instant::now();
        log.append_as_leader(batch, 0).expect("append");
        let took = start.elapsed();
        let run_delay = run_delay_ns().saturating_sub(delay_before);
        total += took;
        let wall = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        timed.push(Sample { wall, run_delay, rolled: log.number_of_segments() > segments });
        if log.number_of_segments() > ROLLS {
            break;
        }
    }
    black_box(log.log_end_offset());
    log.close().expect("close");
    scheduler.shutdown();
    samples.lock().expect("samples").extend(timed);
    dirs.lock().expect("run directories").push(dir);
    total
}

fn bench_roll(c: &mut Criterion) {
    let (batches, _) = producer_batches(100, CompressionType::None, SEGMENT_BYTES * (ROLLS + 2));
    let modes = [("synchronous", RollFlushMode::Synchronous), ("background", RollFlushMode::Background)];
    let samples: Vec<Samples> = modes.iter().map(|_| Samples::default()).collect();
    let dirs = RunDirs::default();
    // Dirty data an earlier bench left behind is written back first (`make bench-kafka` runs
    // the cleaner's, which writes gigabytes, just before): its writeback stalled appends here
    // by 20 ms. `bench_recovery.py` starts each run after an `os.sync()` for the same reason.
    if let Err(e) = std::process::Command::new("sync").status() {
        println!("sync before the runs failed: {e}");
    }
    println!("load average before: {}", load_average());
    let mut group = c.benchmark_group("append_across_100_rolls");
    group.sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_secs(10));
    for ((name, mode), samples) in modes.iter().zip(&samples) {
        group.bench_function(*name, |bench| {
            bench.iter_custom(|iters| (0..iters).map(|_| run(&batches, *mode, samples, &dirs)).sum());
        });
    }
    group.finish();
    drop(std::mem::take(&mut *dirs.lock().expect("run directories")));
    for ((name, _), samples) in modes.iter().zip(&samples) {
        let samples = samples.lock().expect("samples");
        let pick = |rolled_only: bool, less_delay: bool| -> Vec<u64> {
            let samples = samples.iter().filter(|s| s.rolled || !rolled_only);
            samples.map(|s| if less_delay { s.wall.saturating_sub(s.run_delay) } else { s.wall }).collect()
        };
        println!(
            "{name:>12}: every append {}; appends that rolled {}",
            summary(pick(false, false)),
            summary(pick(true, false))
        );
        println!(
            "{:>12}  less the wait for a CPU: every append {}; appends that rolled {}",
            "",
            summary(pick(false, true)),
            summary(pick(true, true))
        );
    }
    println!("load average after: {}", load_average());
}

/// "p50 x ms, p99 y ms, max z ms (n appends)".
fn summary(mut ns: Vec<u64>) -> String {
    if ns.is_empty() {
        return "none".into();
    }
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize] as f64 / 1e6;
    format!("p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} appends)", at(0.5), at(0.99), at(1.0), ns.len())
}

/// The calling thread's total wait on a run queue (ns), 0 when the kernel does not say.
fn run_delay_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

criterion_group!(benches, bench_roll);
criterion_main!(benches);
