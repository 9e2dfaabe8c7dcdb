//! Criterion benchmarks of the log core, each beside a baseline measured in the same run:
//!
//! - append: producer batches (16 KiB of 100-byte or 1 KiB records, uncompressed and lz4)
//!   appended as leader (record validation, offset assignment, index maintenance, write into
//!   the page cache) and as raw batches with offsets assigned (follower path: CRC and framing
//!   checks, indexes, write) vs. the same bytes written to a plain file (the I/O ceiling);
//! - read: sequential scan of a log with CRC check and record decode vs. reading the same
//!   files' bytes only;
//! - lookup: offset lookups through the index plus forward scan, warm (hot index) and cold
//!   (a freshly opened segment: lazy map + first page touches), vs. a binary search over an
//!   in-memory array of the same entries.
//!
//! Run with `cargo bench --bench log_bench` (or `make bench`).

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use kafkalog::log::unified_log::{FetchIsolation, LogOpenOptions, UnifiedLog};
use kafkalog::record::compression::CompressionType;
use kafkalog::LogConfig;

const LOG_BYTES: usize = 64 << 20;

#[path = "workload.rs"]
mod workload;
use workload::{config, producer_batches};

fn bench_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    for (record_size, codec) in [
        (100, CompressionType::None),
        (1024, CompressionType::None),
        (100, CompressionType::Lz4),
        (1024, CompressionType::Lz4),
    ] {
        let (batches, records) = producer_batches(record_size, codec, 32 << 20);
        let bytes: u64 = batches.iter().map(|b| b.len() as u64).sum();
        let label = format!("{record_size}B/{}/{records}rec", codec.name());
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(BenchmarkId::new("kafkalog_append_as_leader", &label), |bench| {
            bench.iter_batched(
                || (tempfile::tempdir().unwrap(), batches.clone()),
                |(dir, mut batches)| {
                    let log =
                        UnifiedLog::open(&dir.path().join("bench-0"), config(), LogOpenOptions::default()).unwrap();
                    for b in &mut batches {
                        log.append_as_leader(b, 0).unwrap();
                    }
                    black_box(log.log_end_offset());
                    drop(log);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        // Raw batch append (a follower's path): offsets already assigned, CRC and framing
        // checked, no per-record validation.
        let mut follower_batches = batches.clone();
        let mut next = 0i64;
        for b in &mut follower_batches {
            let mut m = kafkalog::record::batch::RecordBatchMut::new(b).unwrap();
            m.set_base_offset(next);
            next = m.view().next_offset();
        }
        group.bench_function(BenchmarkId::new("kafkalog_append_as_follower", &label), |bench| {
            bench.iter_batched(
                || tempfile::tempdir().unwrap(),
                |dir| {
                    let log =
                        UnifiedLog::open(&dir.path().join("bench-0"), config(), LogOpenOptions::default()).unwrap();
                    for b in &follower_batches {
                        log.append_as_follower(b).unwrap();
                    }
                    black_box(log.log_end_offset());
                    drop(log);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        group.bench_function(BenchmarkId::new("baseline_file_write", &label), |bench| {
            bench.iter_batched(
                || (tempfile::tempdir().unwrap(), batches.clone()),
                |(dir, batches)| {
                    let mut f = std::fs::File::create(dir.path().join("plain.log")).unwrap();
                    for b in &batches {
                        f.write_all(b).unwrap();
                    }
                    dir
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

fn build_log(dir: &Path, record_size: usize, codec: CompressionType) -> (Arc<UnifiedLog>, u64, u64) {
    let cfg = LogConfig::from_props([("segment.bytes", "16777216"), ("retention.ms", "-1")]).unwrap();
    let log = UnifiedLog::open(&dir.join("read-0"), cfg, LogOpenOptions::default()).unwrap();
    let (batches, records) = producer_batches(record_size, codec, LOG_BYTES);
    for mut b in batches {
        log.append_as_leader(&mut b, 0).unwrap();
    }
    log.flush().unwrap();
    let size = log.size_in_bytes();
    (Arc::new(log), size, records)
}

fn bench_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    for (record_size, codec) in
        [(100, CompressionType::None), (1024, CompressionType::None), (1024, CompressionType::Lz4)]
    {
        let dir = tempfile::tempdir().unwrap();
        let (log, size, records) = build_log(dir.path(), record_size, codec);
        let label = format!("{record_size}B/{}/{records}rec", codec.name());
        group.throughput(Throughput::Bytes(size));
        group.bench_function(BenchmarkId::new("kafkalog_scan_crc_decode", &label), |bench| {
            let mut scratch = Vec::new();
            bench.iter(|| {
                let mut n = 0u64;
                let mut value_bytes = 0usize;
                log.scan(0, i64::MAX, FetchIsolation::LogEnd, |batch| {
                    batch.ensure_valid()?;
                    batch.for_each_record(&mut scratch, |r| {
                        n += 1;
                        value_bytes += r.value.map_or(0, <[u8]>::len);
                        Ok(())
                    })?;
                    Ok(true)
                })
                .unwrap();
                assert_eq!(n, records);
                black_box(value_bytes)
            });
        });
        group.bench_function(BenchmarkId::new("baseline_read_bytes", &label), |bench| {
            let segments = log.segments();
            let mut buf = vec![0u8; 1 << 20];
            bench.iter(|| {
                let mut total = 0u64;
                for s in &segments {
                    let mut pos = 0;
                    while pos < s.size() {
                        let n = s.log().read_at(pos, &mut buf).unwrap();
                        pos += n as u64;
                        total += n as u64;
                    }
                }
                black_box(total)
            });
        });
    }
    group.finish();
}

fn bench_lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lookup");
    group.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    let dir = tempfile::tempdir().unwrap();
    let (log, _, records) = build_log(dir.path(), 100, CompressionType::None);
    let segments = log.segments();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let targets: Vec<i64> = (0..1024).map(|_| (next() % records) as i64).collect();
    group.bench_function("warm_translate_offset", |bench| {
        let mut i = 0;
        bench.iter(|| {
            let t = targets[i % targets.len()];
            i += 1;
            let s = segments.iter().rev().find(|s| s.base_offset() <= t).unwrap();
            black_box(s.translate_offset(t, 0).unwrap())
        });
    });
    group.bench_function("cold_open_and_translate_offset", |bench| {
        let log_dir = log.dir().to_path_buf();
        let mut i = 0;
        bench.iter_batched(
            || {
                i += 1;
                targets[i % targets.len()]
            },
            |t| {
                let base = segments.iter().rev().find(|s| s.base_offset() <= t).unwrap().base_offset();
                let seg = kafkalog::segment::log_segment::LogSegment::open(
                    &log_dir,
                    base,
                    &config(),
                    kafkalog::util::clock::system_clock(),
                    "",
                    false,
                    true,
                )
                .unwrap();
                black_box(seg.translate_offset(t, 0).unwrap())
            },
            BatchSize::SmallInput,
        );
    });
    // Baseline: the same (offset, position) entries in a sorted in-memory array.
    let entries: Vec<(i64, u32)> = segments
        .iter()
        .flat_map(|s| {
            let idx = s.offset_index().unwrap().get().unwrap();
            (0..idx.entries()).map(|n| idx.entry(n).unwrap()).map(|e| (e.offset, e.position)).collect::<Vec<_>>()
        })
        .collect();
    group.bench_function("baseline_in_memory_binary_search", |bench| {
        let mut i = 0;
        bench.iter(|| {
            let t = targets[i % targets.len()];
            i += 1;
            let slot = entries.partition_point(|e| e.0 <= t);
            black_box(slot.checked_sub(1).map(|s| entries[s]))
        });
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_read, bench_lookup);
criterion_main!(benches);
