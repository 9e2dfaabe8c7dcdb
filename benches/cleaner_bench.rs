//! Benchmarks of log compaction (criterion):
//!
//! - `offset_map/md5`: MD5 of a 13-byte key with the `md-5` crate (longer keys go this way);
//! - `offset_map/md5_keys`: 64 such keys through `md5_keys` (sixteen at a time with AVX-512);
//! - `offset_map/put_get`: 1 M distinct keys put into, then looked up in, a 128 MiB
//!   `SkimpyOffsetMap` (hashing included), one key at a time;
//! - `clean/<keys>`: one cleaner thread compacting a copy of a log of `<keys>` distinct keys,
//!   each written twice (the second time in random order) with 100-byte values in ~16 KiB
//!   uncompressed batches, 128 MiB map, beside the floor of reading the same `.log` bytes.
//!   Throughput is in bytes of log read by the clean (Kafka's "MB of log processed").
//!
//! The fixture log is written once per run (`KAFKALOG_BENCH_KEYS`, default 1,000,000 keys,
//! about 250 MB) in the system temp dir; each iteration copies it (outside the clock), cleans
//! the copy with `compact_log` and checks the result kept exactly one record per key, so the
//! bench cannot silently time a clean that did nothing. Warm page cache: these are CPU figures.
//! The side-by-side comparison with Kafka's own cleaner is `benches/bench_cleaner.py --kafka`.
//!
//! Run with `cargo bench --bench cleaner_bench` (part of `make bench`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, SamplingMode, Throughput};
use kafkalog::cleaner::offset_map::hash_key;
use kafkalog::cleaner::{compact_log, Cleaner, CleanerParams, CompactOptions, SkimpyOffsetMap, Throttler};
use kafkalog::record::builder::{BatchBuilder, BatchHeader};
use kafkalog::util::clock::system_clock;
use kafkalog::{LogConfig, LogOpenOptions, UnifiedLog};

const MAP_BYTES: usize = 128 * 1024 * 1024;
const VALUE: [u8; 100] = [b'v'; 100];

fn keys() -> usize {
    std::env::var("KAFKALOG_BENCH_KEYS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn config() -> LogConfig {
    LogConfig::from_props([("cleanup.policy", "compact")]).expect("valid config")
}

/// A tiny xorshift generator (no dependency, same sequence every run).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Writes the fixture: every key once in order, then every key again in random order.
fn write_fixture(dir: &Path, keys: usize) -> u64 {
    let _ = std::fs::remove_dir_all(dir);
    let log = UnifiedLog::open(dir, config(), LogOpenOptions::default()).expect("open fixture");
    let mut order: Vec<usize> = (0..keys).collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in (1..keys).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut builder = BatchBuilder::new(BatchHeader::default());
    let now = system_clock().milliseconds();
    for key in (0..keys).chain(order) {
        if builder.estimated_size() > 16 * 1024 {
            let mut batch = builder.build().expect("batch");
            log.append_as_leader(&mut batch, 0).expect("append");
            builder.reset(BatchHeader::default());
        }
        builder.append_next(now, Some(format!("key-{key:09}").as_bytes()), Some(&VALUE), &[]).expect("record");
    }
    let mut batch = builder.build().expect("batch");
    log.append_as_leader(&mut batch, 0).expect("append");
    log.roll().expect("roll");
    let size = log.size_in_bytes();
    log.close().expect("close");
    size
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

fn new_cleaner() -> Cleaner {
    let map = SkimpyOffsetMap::new(MAP_BYTES).expect("map");
    let throttler = Arc::new(Throttler::new(f64::MAX, Duration::from_millis(300)));
    Cleaner::new(0, map, CleanerParams::default(), throttler, system_clock()).expect("cleaner")
}

fn bench_offset_map(c: &mut Criterion) {
    let mut g = c.benchmark_group("offset_map");
    g.throughput(Throughput::Elements(1));
    g.bench_function("md5", |b| b.iter(|| hash_key(black_box(b"key-000123456"))));
    let many: Vec<&[u8]> = vec![b"key-000123456"; 64];
    let mut out = Vec::new();
    g.throughput(Throughput::Elements(64));
    g.bench_function("md5_keys", |b| b.iter(|| kafkalog::cleaner::md5_keys::md5_keys(black_box(&many), &mut out)));
    g.sample_size(10);
    let n = 1_000_000usize;
    let keys: Vec<Vec<u8>> = (0..n).map(|k| format!("key-{k:09}").into_bytes()).collect();
    let mut map = SkimpyOffsetMap::new(MAP_BYTES).expect("map");
    g.throughput(Throughput::Elements(2 * n as u64));
    g.bench_function("put_get", |b| {
        b.iter(|| {
            map.clear();
            for (i, k) in keys.iter().enumerate() {
                map.put(k, i as i64).expect("put");
            }
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(map.get(k), i as i64);
            }
        });
    });
    g.finish();
}

fn bench_clean(c: &mut Criterion) {
    let keys = keys();
    let root = std::env::temp_dir().join(format!("kafkalog-cleaner-bench-{}", std::process::id()));
    let fixture: PathBuf = root.join("fixture").join("bench-0");
    let work: PathBuf = root.join("work").join("bench-0");
    let size = write_fixture(&fixture, keys);
    let mut g = c.benchmark_group("clean");
    g.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(30));
    g.throughput(Throughput::Bytes(size));
    let mut cleaner = new_cleaner();
    g.bench_function(format!("{keys}_keys"), |b| {
        b.iter_batched(
            || {
                copy_dir(&fixture, &work);
                Arc::new(UnifiedLog::open(&work, config(), LogOpenOptions::default()).expect("open copy"))
            },
            |log| {
                let r = compact_log(&mut cleaner, &log, &CompactOptions::default(), &|| Ok(())).expect("clean");
                assert_eq!(r.stats.messages_written, keys as u64, "one record per key must remain");
                log.close().expect("close");
            },
            BatchSize::PerIteration,
        );
    });
    g.bench_function(format!("{keys}_keys_read_floor"), |b| {
        let files: Vec<PathBuf> = std::fs::read_dir(&fixture)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        b.iter(|| {
            let mut total = 0usize;
            for f in &files {
                total += std::fs::read(f).expect("read").len();
            }
            black_box(total)
        });
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&root);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_offset_map(&mut c);
    bench_clean(&mut c);
    c.final_summary();
}
