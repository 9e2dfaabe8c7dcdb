//! Criterion benchmarks of `append_arrow`'s Rust core (what runs with the GIL released), on
//! Arrow columns built in memory: 1,000,000 rows of a 15-byte key and a 100-byte value, the
//! rows of `benches/bench_append_arrow.py`, uncompressed, `batch_size` 16384.
//!
//! - plan: every row checked and sized into batches (`SinkRecords::plan`), nothing encoded;
//! - plan_and_encode: the same, then every batch encoded in place into a reused 1 MiB buffer
//!   (no I/O): the engine's CPU work;
//! - append_planned: plan, then `UnifiedLog::append_planned_as_leader` into a fresh log (page
//!   cache, no flush), as `append_arrow` does;
//! - producer_batches_append_as_leader: the path `append_arrow` took before (the whole append
//!   built by `ProducerBatches`, then `append_as_leader`), as the baseline.
//!
//! Run with `cargo bench --bench append_arrow_bench`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kafkalog::log::unified_log::{LogOpenOptions, UnifiedLog};
use kafkalog::record::arrow::column::{BinaryColumn, Column, Field, Offsets};
use kafkalog::record::arrow::sink_columns::{SinkColumns, SinkTarget};
use kafkalog::record::arrow::sink_records::SinkRecords;
use kafkalog::record::builder::BatchHeader;
use kafkalog::record::compression::CompressionType;
use kafkalog::record::planned_batches::{BatchPlanner, PlannedRecords};
use kafkalog::record::producer_batches::ProducerBatches;
use kafkalog::LogConfig;

const ROWS: usize = 1_000_000;
const NOW: i64 = 1_700_000_000_000;
const TARGET: SinkTarget<'static> = SinkTarget { topic: "bench", partition: 0, compacted: false };

/// Arrow's binary layout of `rows`: int32 offsets (native order) and the data.
fn binary(rows: impl Iterator<Item = Vec<u8>>) -> (Vec<u8>, Vec<u8>) {
    let (mut offsets, mut data) = (0i32.to_ne_bytes().to_vec(), Vec::new());
    for r in rows {
        data.extend_from_slice(&r);
        offsets.extend_from_slice(&(data.len() as i32).to_ne_bytes());
    }
    (offsets, data)
}

/// A binary column over `buffers` (offsets, data) of `ROWS` rows.
fn column((offsets, data): &(Vec<u8>, Vec<u8>)) -> Column<'_> {
    Column::Binary {
        column: BinaryColumn::new(None, Offsets::I32(offsets), data, ROWS).unwrap(),
        utf8: false,
        large: false,
    }
}

fn config() -> LogConfig {
    LogConfig::from_props([("segment.bytes", "1073741824")]).unwrap()
}

fn bench(c: &mut Criterion) {
    let keys = binary((0..ROWS).map(|i| format!("customer-{:06}", i % 50_000).into_bytes()));
    let base = br#"{"status":"shipped","sku":"keyboard","qty":3,"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"#;
    let values = binary((0..ROWS).map(|i| [&base[..94], format!("{:06}", i % 1_000_000).as_bytes()].concat()));
    let fields = vec![
        Field { name: "key".into(), column: column(&keys) },
        Field { name: "value".into(), column: column(&values) },
    ];
    let batch = Column::structure(None, fields, ROWS).unwrap();
    let sinks = [SinkColumns::new(&batch).unwrap()];
    let payload = (keys.1.len() + values.1.len()) as u64;
    let planner = || BatchPlanner::new(16384, NOW);

    let mut group = c.benchmark_group("append_arrow");
    group.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Bytes(payload));
    group.bench_function("plan", |b| {
        b.iter(|| black_box(SinkRecords::plan(&sinks, &TARGET, planner(), NOW).unwrap().plan().bytes));
    });
    group.bench_function("plan_and_encode", |b| {
        let mut buf = Vec::with_capacity(2 << 20);
        b.iter(|| {
            let mut records = SinkRecords::plan(&sinks, &TARGET, planner(), NOW).unwrap();
            for _ in 0..records.plan().batches.len() {
                if buf.len() >= 1 << 20 {
                    buf.clear();
                }
                records.encode_next(&BatchHeader::default(), None, &mut buf).unwrap();
            }
            black_box(buf.len())
        });
    });
    group.bench_function("append_planned", |b| {
        b.iter_batched(
            || tempfile::tempdir().unwrap(),
            |dir| {
                let log = UnifiedLog::open(&dir.path().join("bench-0"), config(), LogOpenOptions::default()).unwrap();
                let mut records = SinkRecords::plan(&sinks, &TARGET, planner(), NOW).unwrap();
                black_box(log.append_planned_as_leader(&mut records, 0).unwrap());
                drop(log);
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("producer_batches_append_as_leader", |b| {
        b.iter_batched(
            || tempfile::tempdir().unwrap(),
            |dir| {
                let log = UnifiedLog::open(&dir.path().join("bench-0"), config(), LogOpenOptions::default()).unwrap();
                let mut out = ProducerBatches::new(CompressionType::None, 16384, NOW);
                sinks[0].encode(&TARGET, &mut out, &mut Vec::new()).unwrap();
                let mut bytes = out.finish().unwrap();
                black_box(log.append_as_leader(&mut bytes, 0).unwrap());
                drop(log);
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
