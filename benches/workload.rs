//! The benchmark workload shared by `benches/log_bench.rs`, `benches/recovery_bench.rs` and
//! `benches/bench_workload.rs` (included with `#[path]`): producer-style batches and the log
//! configuration every side uses.

use kafkalog::record::builder::{BatchBuilder, BatchHeader};
use kafkalog::record::compression::CompressionType;
use kafkalog::LogConfig;

/// A producer's `batch.size`.
pub const BATCH_BYTES: usize = 16 * 1024;

/// One 1 GiB segment (no roll), no retention, everything else Kafka's defaults.
pub fn config() -> LogConfig {
    LogConfig::from_props([("segment.bytes", "1073741824"), ("retention.ms", "-1")]).expect("valid config")
}

/// Producer-style batches of `record_size`-byte values (keys 16 bytes), about 16 KiB each,
/// `total` bytes in all; returns them and the record count.
#[allow(dead_code)] // benches/bench_workload.rs calls producer_batches_of
pub fn producer_batches(record_size: usize, codec: CompressionType, total: usize) -> (Vec<Vec<u8>>, u64) {
    producer_batches_of(record_size, codec, total, 0)
}

/// The batches of [`producer_batches`] as `producers` idempotent producers send them (0: no
/// producer id): batch `i` comes from producer id `1000 + i % producers`, epoch 0, its base
/// sequence the count of records that producer sent before it.
pub fn producer_batches_of(
    record_size: usize,
    codec: CompressionType,
    total: usize,
    producers: usize,
) -> (Vec<Vec<u8>>, u64) {
    let mut sequences = vec![0i32; producers.max(1)];
    let mut batches = Vec::new();
    let mut records = 0u64;
    let mut value = vec![0u8; record_size];
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut produced = 0;
    while produced < total {
        let mut header = BatchHeader { compression: codec, ..BatchHeader::default() };
        let producer = batches.len() % sequences.len();
        if producers > 0 {
            header.producer_id = 1000 + producer as i64;
            header.producer_epoch = 0;
            header.base_sequence = sequences[producer];
        }
        let mut b = BatchBuilder::new(header);
        let mut i = 0u64;
        while b.estimated_size() + record_size + 32 < BATCH_BYTES {
            // Semi-compressible values: JSON-like text with random digits.
            for chunk in value.chunks_mut(8) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let digits = format!("\"v\":{:04}", seed % 10_000);
                let n = chunk.len().min(digits.len());
                chunk[..n].copy_from_slice(&digits.as_bytes()[..n]);
            }
            let key = format!("customer-{:07}", (seed >> 8) % 1_000_000);
            b.append_next(1_700_000_000_000 + i as i64, Some(key.as_bytes()), Some(&value), &[]).unwrap();
            i += 1;
        }
        records += i;
        sequences[producer] += i32::try_from(i).expect("records per batch fit an i32");
        let batch = b.build().unwrap();
        produced += batch.len();
        batches.push(batch);
    }
    (batches, records)
}
