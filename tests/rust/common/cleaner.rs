//! The cleaner tests' kit (`log_cleaner.rs`, `log_cleaner_conformance.rs`, `cleaner_pass_two.rs`,
//! `throttle.rs`): compacted configs, cleaners built as Kafka's `LogCleanerTest` builds them,
//! appends as a follower (any producer fields, markers), and a view of every batch a log holds
//! after a clean (Kafka's `keysInLog`, `offsetsInLog`, `lastOffsetsPerBatchInLog`).

use std::sync::Arc;

use kafkalog::cleaner::throttler::CHECK_INTERVAL;
use kafkalog::cleaner::{Cleaner, CleanerParams, CleanerStats, LogToClean, SkimpyOffsetMap, Throttler};
use kafkalog::record::builder::write_end_txn_marker;
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::records::AnyBatch;
use kafkalog::record::{BatchBuilder, BatchHeader, CompressionType};
use kafkalog::segment::log_segment::LogSegment;
use kafkalog::{LogConfig, UnifiedLog};

use super::{batch, config, Fixture, RecSpec, T0};

// -- configs and cleaners --------------------------------------------------------------------------

/// A compacted topic's config (`file.delete.delay.ms` 0, so replaced segments go at once) with
/// `props` on top.
pub fn compact_config(props: &[(&str, &str)]) -> LogConfig {
    let mut all = vec![("cleanup.policy", "compact"), ("file.delete.delay.ms", "0")];
    all.extend_from_slice(props);
    config(&all)
}

/// The log of the fixture's directory, opened read-write and shared (the cleaner takes an
/// `Arc`).
pub fn open_shared(fx: &Fixture, cfg: &LogConfig) -> Arc<UnifiedLog> {
    Arc::new(fx.open(cfg))
}

/// A cleaner with an offset map of `map_bytes` bytes (24 per slot) and `params`, never
/// throttled, on the fixture's clock.
pub fn new_cleaner(fx: &Fixture, map_bytes: usize, params: CleanerParams) -> Cleaner {
    let map = SkimpyOffsetMap::new(map_bytes).expect("map");
    Cleaner::new(0, map, params, Arc::new(Throttler::new(f64::MAX, CHECK_INTERVAL)), fx.shared_clock())
        .expect("cleaner")
}

/// Kafka's `LogCleanerTest.makeCleaner(capacity, maxMessageSize)`: read and write buffers of
/// `max_message_size` bytes that may not grow, a map filled to 0.75 of its slots.
pub fn make_cleaner(fx: &Fixture, map_bytes: usize, max_message_size: usize) -> Cleaner {
    let params = CleanerParams {
        io_buffer_size: max_message_size,
        max_io_buffer_size: max_message_size,
        dedupe_buffer_load_factor: 0.75,
        ..CleanerParams::default()
    };
    new_cleaner(fx, map_bytes, params)
}

/// Kafka's `makeCleaner(Int.MaxValue)`: a map that never fills in these tests, 64 KiB buffers.
pub fn big_cleaner(fx: &Fixture) -> Cleaner {
    make_cleaner(fx, 1 << 20, 64 * 1024)
}

/// Kafka's `cleaner.doClean(LogToClean(log, first_dirty, uncleanable), now)`.
pub fn do_clean(
    cleaner: &mut Cleaner,
    log: &Arc<UnifiedLog>,
    first_dirty: i64,
    uncleanable: i64,
    now: i64,
) -> kafkalog::Result<(i64, CleanerStats)> {
    let to_clean = LogToClean::new(log.clone(), first_dirty, uncleanable, false);
    cleaner.do_clean(&to_clean, now, &|| Ok(()))
}

/// The active segment's base offset: the end of what a clean may touch.
pub fn active_base(log: &UnifiedLog) -> i64 {
    log.active_segment().expect("active segment").base_offset()
}

// -- appends as a follower -------------------------------------------------------------------------

/// Appends one record at the log end as a follower (no validation: unkeyed records and old
/// timestamps go in a compacted topic too); returns its offset.
pub fn put(log: &UnifiedLog, key: Option<&[u8]>, value: Option<&[u8]>, timestamp: i64) -> i64 {
    let offset = log.log_end_offset();
    log.append_as_follower(&batch(offset, CompressionType::None, &[(key, value, timestamp)])).expect("append");
    offset
}

/// Appends `key = value` as a one-record batch, key and value decimal; returns its offset.
pub fn put_int(log: &UnifiedLog, key: i64, value: i64) -> i64 {
    put(log, Some(key.to_string().as_bytes()), Some(value.to_string().as_bytes()), T0)
}

/// One batch with `header`'s producer fields (its base offset is replaced by the log end)
/// appended as a follower; returns its (first, last) offsets.
pub fn put_batch(log: &UnifiedLog, header: BatchHeader, records: &[RecSpec<'_>]) -> (i64, i64) {
    let base = log.log_end_offset();
    let mut b = BatchBuilder::new(BatchHeader { base_offset: base, ..header });
    for (k, v, ts) in records {
        b.append_next(*ts, *k, *v, &[]).unwrap();
    }
    let bytes = b.build().unwrap();
    let info = log.append_as_follower(&bytes).unwrap();
    (info.first_offset, info.last_offset)
}

/// A COMMIT or ABORT marker of `producer_id` (epoch 0) at the log end; returns its offset.
pub fn put_marker(log: &UnifiedLog, producer_id: i64, marker: ControlRecordType) -> i64 {
    let offset = log.log_end_offset();
    let mut out = Vec::new();
    write_end_txn_marker(&mut out, offset, T0, 0, producer_id, 0, marker, 0).unwrap();
    log.append_as_follower(&out).unwrap();
    offset
}

// -- what the log holds ----------------------------------------------------------------------------

/// A decoded record: (offset, timestamp, key, value).
pub type Row = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// What one batch of a segment looks like after a clean.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchView {
    pub base: i64,
    pub last: i64,
    pub magic: u8,
    pub control: bool,
    pub transactional: bool,
    pub producer_id: i64,
    pub base_sequence: i32,
    pub codec: CompressionType,
    pub horizon: Option<i64>,
    /// (offset, timestamp, key, value)
    pub records: Vec<Row>,
}

/// Every batch of `segment`, each checked (`ensure_valid`) and decoded.
pub fn segment_batches(segment: &LogSegment) -> Vec<BatchView> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    segment
        .log()
        .for_each_batch(0, segment.size(), &mut buf, |_, b| {
            b.ensure_valid()?;
            let mut records = Vec::new();
            b.for_each_record(&mut scratch, |r| {
                records.push((r.offset, r.timestamp, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec)));
                Ok(())
            })?;
            let (producer_id, base_sequence, horizon) = match &b {
                AnyBatch::V2(v) => (v.producer_id(), v.base_sequence(), v.delete_horizon_ms()),
                AnyBatch::Legacy(_) => (-1, -1, None),
            };
            out.push(BatchView {
                base: b.base_offset()?,
                last: b.last_offset(),
                magic: b.magic(),
                control: b.is_control(),
                transactional: b.is_transactional(),
                producer_id,
                base_sequence,
                codec: b.compression_type()?,
                horizon,
                records,
            });
            Ok(true)
        })
        .expect("scan segment");
    out
}

/// Every batch of every segment of `log`, in offset order.
pub fn all_batches(log: &UnifiedLog) -> Vec<BatchView> {
    log.segments().iter().flat_map(|s| segment_batches(s)).collect()
}

/// Kafka's `keysInLog`: keys of the data records that have a value, as integers.
pub fn keys_in_log(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log)
        .iter()
        .filter(|b| !b.control)
        .flat_map(|b| b.records.iter())
        .filter(|r| r.3.is_some())
        .filter_map(|r| r.2.as_ref().map(|k| String::from_utf8_lossy(k).parse::<i64>().expect("integer key")))
        .collect()
}

/// Kafka's `offsetsInLog`: offsets of the records (data and control) with a key and a value.
pub fn offsets_in_log(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log)
        .iter()
        .flat_map(|b| b.records.iter())
        .filter(|r| r.2.is_some() && r.3.is_some())
        .map(|r| r.0)
        .collect()
}

/// Kafka's `lastOffsetsPerBatchInLog`.
pub fn last_offsets_per_batch(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log).iter().map(|b| b.last).collect()
}
