//! Kafka's `LogCleanerTest` and `OffsetMapTest` behaviours against `kafkalog::cleaner`: the
//! two-pass clean (`Cleaner::do_clean` on a `LogToClean`, as Kafka's tests call `doClean`),
//! offset-map progress with tiny maps, uncleanable sections, unkeyed records, tombstone
//! horizons, transactional data and markers found in the log (written here with
//! `BatchBuilder` / `write_end_txn_marker` and appended as a follower), segment grouping,
//! aborts, concurrent retention, crashes at every step of the swap (through the fault seam),
//! buffer growth, every codec and legacy (magic 0/1) batches.
//!
//! Time is explicit: every clean runs at a given "now"; nothing sleeps. Where a second thread
//! must act during a clean, the clean waits for it (`UnifiedLog::cleaning_abort_requested`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use kafkalog::cleaner::log_to_clean::cleanable_offsets;
use kafkalog::cleaner::offset_map::{hash_key, BYTES_PER_ENTRY, MIN_TABLE_SLOTS};
use kafkalog::cleaner::throttler::CHECK_INTERVAL;
use kafkalog::cleaner::{
    compact_log, group_segments_by_size, Cleaner, CleanerParams, CompactOptions, LogToClean, SkimpyOffsetMap, Throttler,
};
use kafkalog::error::Error;
use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::legacy::{write_legacy_compressed, write_legacy_entry};
use kafkalog::record::{BatchHeader, CompressionType};
use kafkalog::segment::log_segment::LogSegment;
use kafkalog::util::fault::{inject, FaultOp};
use kafkalog::{LogConfig, UnifiedLog};

use crate::common::cleaner::{
    active_base, all_batches, big_cleaner, compact_config, do_clean, keys_in_log, last_offsets_per_batch, new_cleaner,
    open_shared, put, put_batch, put_int, put_marker, segment_batches, BatchView, Row,
};
use crate::common::{batch, files_with_suffix, segment_file_name, Fixture, RecSpec, T0};

const DAY_MS: i64 = 86_400_000;

// -- helpers (the shared ones are in `common::cleaner`) --------------------------------------------

/// A cleaner whose map has `map_bytes` bytes (24 per slot) filled to `load_factor`, and whose
/// buffers start at `io` bytes and may grow to the broker's default limit for a large batch.
fn growing_cleaner(fx: &Fixture, map_bytes: usize, load_factor: f64, io: usize) -> Cleaner {
    let params =
        CleanerParams { io_buffer_size: io, dedupe_buffer_load_factor: load_factor, ..CleanerParams::default() };
    new_cleaner(fx, map_bytes, params)
}

/// A transactional batch of `producer_id` (epoch 0) with keys `keys`, values = keys.
fn put_txn(log: &UnifiedLog, producer_id: i64, sequence: i32, keys: &[i64]) -> (i64, i64) {
    let strings: Vec<String> = keys.iter().map(i64::to_string).collect();
    let specs: Vec<RecSpec<'_>> = strings.iter().map(|s| (Some(s.as_bytes()), Some(s.as_bytes()), T0)).collect();
    let header = BatchHeader {
        producer_id,
        producer_epoch: 0,
        base_sequence: sequence,
        is_transactional: true,
        ..BatchHeader::default()
    };
    put_batch(log, header, &specs)
}

/// An idempotent (non-transactional) one-record batch of `producer_id`.
fn put_idempotent(log: &UnifiedLog, producer_id: i64, sequence: i32, key: i64, value: i64) -> i64 {
    let (k, v) = (key.to_string(), value.to_string());
    let header = BatchHeader { producer_id, producer_epoch: 0, base_sequence: sequence, ..BatchHeader::default() };
    put_batch(log, header, &[(Some(k.as_bytes()), Some(v.as_bytes()), T0)]).0
}

/// Offsets of every record (data and control) in the log.
fn record_offsets(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log).iter().flat_map(|b| b.records.iter().map(|r| r.0)).collect()
}

/// Offsets of the data records only.
fn data_offsets(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log).iter().filter(|b| !b.control).flat_map(|b| b.records.iter().map(|r| r.0)).collect()
}

/// Every data record as (offset, key, value).
type Kv = (i64, Option<Vec<u8>>, Option<Vec<u8>>);
fn records(log: &UnifiedLog) -> Vec<Kv> {
    all_batches(log)
        .into_iter()
        .filter(|b| !b.control)
        .flat_map(|b| b.records.into_iter().map(|r| (r.0, r.2, r.3)))
        .collect()
}

/// The latest record of every key among `recs` (the result of a perfect clean without
/// tombstone removal), in offset order.
fn latest_per_key(recs: &[Kv]) -> Vec<Kv> {
    let mut last: BTreeMap<Vec<u8>, &Kv> = BTreeMap::new();
    for r in recs {
        last.insert(r.1.clone().expect("keyed"), r);
    }
    let mut out: Vec<Kv> = last.into_values().cloned().collect();
    out.sort_by_key(|r| r.0);
    out
}

fn segment_bytes(log: &UnifiedLog) -> Vec<(i64, Vec<u8>)> {
    log.segments().iter().map(|s| (s.base_offset(), std::fs::read(s.path()).expect("read segment"))).collect()
}

/// Leftover `.cleaned` or `.swap` files.
fn temp_files(dir: &Path) -> Vec<String> {
    let mut out = files_with_suffix(dir, ".cleaned");
    out.extend(files_with_suffix(dir, ".swap"));
    out
}

// -- LogCleanerTest: basic cleaning ----------------------------------------------------------------

/// testCleanSegments: the keys overwritten later disappear from the older segments; the others
/// survive in order at their offsets.
#[test]
fn clean_segments() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..60 {
        put_int(&log, i, i);
    }
    let overwritten = [3, 7, 11, 20, 42];
    for k in overwritten {
        put_int(&log, k, 1000 + k);
    }
    log.roll().unwrap();
    let before = records(&log);
    assert!(log.number_of_segments() >= 4, "several segments");
    let mut cleaner = big_cleaner(&fx);
    let (end, _) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(end, active_base(&log));
    let mut want: Vec<i64> = (0..60).filter(|k| !overwritten.contains(k)).collect();
    want.extend(overwritten);
    assert_eq!(keys_in_log(&log), want);
    assert_eq!(records(&log), latest_per_key(&before), "offsets and values are kept");
}

/// testCleaningWithDeletes: tombstoned keys lose every value; the tombstones themselves stay
/// (with a delete horizon) through the first clean.
#[test]
fn cleaning_with_deletes() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "1024"), ("delete.retention.ms", "1000")]);
    let log = open_shared(&fx, &cfg);
    while log.number_of_segments() < 2 {
        put_int(&log, log.log_end_offset(), log.log_end_offset());
    }
    let leo = log.log_end_offset();
    for k in (0..leo).step_by(2) {
        put(&log, Some(k.to_string().as_bytes()), None, T0);
    }
    while log.number_of_segments() < 4 {
        put_int(&log, log.log_end_offset(), 0);
    }
    let mut cleaner = big_cleaner(&fx);
    let (_, stats) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    let keys = keys_in_log(&log);
    assert!((0..leo).step_by(2).all(|k| !keys.contains(&k)), "no deleted key keeps a value: {keys:?}");
    assert!((1..leo).step_by(2).all(|k| keys.contains(&k)));
    let tombstones: Vec<BatchView> =
        all_batches(&log).into_iter().filter(|b| b.records.iter().any(|r| r.3.is_none())).collect();
    assert_eq!(tombstones.len() as i64, (leo + 1) / 2, "every tombstone survives its first clean");
    assert!(tombstones.iter().all(|b| b.horizon == Some(T0 + 1000)));
    assert_eq!(stats.tombstones_retained as i64, (leo + 1) / 2);
    // At the horizon they go.
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0 + 1000).unwrap();
    assert!(all_batches(&log).iter().all(|b| b.records.iter().all(|r| r.3.is_some())));
}

/// testLogCleanerStats: the read/written counters match the segments recopied.
#[test]
fn log_cleaner_stats() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..80 {
        put_int(&log, i % 25, i);
    }
    log.roll().unwrap();
    let uncleanable = active_base(&log);
    let segments = log.log_segments(0, uncleanable);
    let bytes_before: u64 = segments.iter().map(|s| s.size()).sum();
    let mut cleaner = big_cleaner(&fx);
    let (end, stats) = do_clean(&mut cleaner, &log, 0, uncleanable, T0).unwrap();
    assert_eq!(end, uncleanable);
    let bytes_after: u64 = log.log_segments(0, uncleanable).iter().map(|s| s.size()).sum();
    assert_eq!(stats.bytes_read, bytes_before);
    assert_eq!(stats.map_bytes_read, bytes_before);
    assert_eq!(stats.messages_read, 80);
    assert_eq!(stats.map_messages_read, 80);
    assert_eq!(stats.messages_written, 25);
    assert_eq!(stats.bytes_written, bytes_after);
    assert_eq!(stats.invalid_messages_read, 0);
    assert_eq!((stats.segments_written + stats.segments_kept) as usize, log.log_segments(0, uncleanable).len());
    assert_eq!(cleaner.offset_map().size(), 25);
    assert!((stats.buffer_utilization - 25.0 / cleaner.offset_map().slots() as f64).abs() < 1e-12);
    assert_eq!(keys_in_log(&log), (0..25).map(|k| (55 + k) % 25).collect::<Vec<_>>());
}

/// testPartialSegmentClean: a map that holds one key still makes progress, one key per clean.
#[test]
fn partial_segment_clean() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for (k, v) in [(0, 0), (1, 1), (0, 0), (1, 1), (0, 0)] {
        put_int(&log, k, v);
    }
    log.roll().unwrap();
    // 2 slots x 0.75 = 1 key per pass.
    let mut cleaner = growing_cleaner(&fx, 2 * BYTES_PER_ENTRY, 0.75, 64 * 1024);
    assert_eq!(cleaner.map_capacity(), 1);
    let (end, _) = do_clean(&mut cleaner, &log, 2, active_base(&log), T0).unwrap();
    assert_eq!((end, keys_in_log(&log), record_offsets(&log)), (3, vec![1, 0, 1, 0], vec![1, 2, 3, 4]));
    let (end, _) = do_clean(&mut cleaner, &log, 3, active_base(&log), T0).unwrap();
    assert_eq!((end, keys_in_log(&log), record_offsets(&log)), (4, vec![0, 1, 0], vec![2, 3, 4]));
    let (end, _) = do_clean(&mut cleaner, &log, 4, active_base(&log), T0).unwrap();
    assert_eq!((end, keys_in_log(&log), record_offsets(&log)), (5, vec![1, 0], vec![3, 4]));
}

/// The same through `compact_log`: a map of one key per pass reaches the result a large map
/// reaches in one pass.
#[test]
fn compact_log_with_a_one_key_map_matches_a_large_map() {
    let results: Vec<_> = [(2 * BYTES_PER_ENTRY, 0.75), (1 << 20, 0.9)]
        .into_iter()
        .map(|(bytes, lf)| {
            let fx = Fixture::new();
            let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "700")]));
            for i in 0..70 {
                put_int(&log, (i * 7) % 9, i);
            }
            log.roll().unwrap();
            let mut cleaner = growing_cleaner(&fx, bytes, lf, 1024);
            let options = CompactOptions { first_dirty_offset: None, now_ms: Some(T0) };
            let result = compact_log(&mut cleaner, &log, &options, &|| Ok(())).unwrap();
            assert_eq!(result.end_offset, 70);
            (records(&log), result.passes.len())
        })
        .collect();
    assert_eq!(results[0].0, results[1].0);
    assert_eq!(results[1].1, 1);
    assert!(results[0].1 >= 9, "one key per pass: {} passes", results[0].1);
}

/// testCleaningWithUncleanableSection: the segment holding the first uncleanable offset and
/// every later one stay byte for byte; the cleanable ones shrink.
#[test]
fn cleaning_with_uncleanable_section() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    let n = 10;
    while log.number_of_segments() <= 2 {
        put_int(&log, log.log_end_offset() % n, log.log_end_offset());
    }
    let first_uncleanable = log.log_end_offset() + 1;
    while log.number_of_segments() < 6 {
        put_int(&log, log.log_end_offset() % n, log.log_end_offset());
    }
    let before = segment_bytes(&log);
    let counts_before: Vec<usize> = log.segments().iter().map(|s| segment_batches(s).len()).collect();
    assert!(counts_before[..counts_before.len() - 1].iter().all(|c| *c as i64 > n), "each segment has duplicates");
    let mut cleaner = big_cleaner(&fx);
    let (end, _) = do_clean(&mut cleaner, &log, 0, first_uncleanable, T0).unwrap();
    let aligned = log.segments()[2].base_offset();
    assert_eq!(end, aligned, "the cleanable range ends at the base of the segment holding the uncleanable offset");
    let after = segment_bytes(&log);
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if i < 2 {
            assert!(a.1.len() < b.1.len(), "cleanable segment {i} shrank");
        } else {
            assert_eq!(a, b, "uncleanable segment {i} untouched");
        }
    }
}

/// testLogToClean / testLogToCleanWithUncleanableSection: clean, cleanable and total bytes.
#[test]
fn log_to_clean_accounting() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "100")]));
    for _ in 0..6 {
        put(&log, Some(b"1"), Some(&[0u8; 25]), T0);
    }
    assert_eq!(log.number_of_segments(), 6);
    let active = active_base(&log);
    let all = LogToClean::new(log.clone(), active, active, false);
    assert_eq!(all.total_bytes, log.size_in_bytes() - log.active_segment().unwrap().size());
    let segs = log.segments();
    let with_uncleanable = LogToClean::new(log.clone(), segs[2].base_offset(), segs[4].base_offset(), false);
    let size = |r: std::ops::Range<usize>| segs[r].iter().map(|s| s.size()).sum::<u64>();
    assert_eq!(with_uncleanable.clean_bytes, size(0..2));
    assert_eq!(with_uncleanable.cleanable_bytes, size(2..4));
    assert_eq!(with_uncleanable.total_bytes, size(0..4));
    assert_eq!(with_uncleanable.first_uncleanable_offset, segs[4].base_offset());
    let ratio = size(2..4) as f64 / size(0..4) as f64;
    assert!((with_uncleanable.cleanable_ratio - ratio).abs() < 1e-12);
}

/// testCleaningWithUnkeyedMessages: unkeyed records are dropped and counted invalid.
#[test]
fn cleaning_with_unkeyed_messages() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    while log.number_of_segments() < 2 {
        let o = log.log_end_offset().to_string();
        put(&log, None, Some(o.as_bytes()), T0);
    }
    let unkeyed = log.log_end_offset();
    let size_with_unkeyed = log.size_in_bytes();
    while log.number_of_segments() < 3 {
        put_int(&log, log.log_end_offset(), log.log_end_offset());
    }
    let expected_size = log.size_in_bytes() - size_with_unkeyed;
    let mut cleaner = big_cleaner(&fx);
    let (_, stats) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert!(records(&log).iter().all(|r| r.1.is_some()), "only keyed records remain");
    assert_eq!(log.size_in_bytes(), expected_size);
    assert_eq!(stats.invalid_messages_read as i64, unkeyed);
}

/// testCleanSegmentsWithAbort: a clean told to stop fails with LogCleaningAborted, removes its
/// `.cleaned` files and leaves the log as it was.
#[test]
fn clean_segments_with_abort() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..100 {
        put_int(&log, i % 10, i);
    }
    log.roll().unwrap();
    let before = segment_bytes(&log);
    let mut cleaner = big_cleaner(&fx);
    let calls = AtomicUsize::new(0);
    let dir = fx.dir.clone();
    let check = || -> kafkalog::Result<()> {
        // Abort once pass 2 has created its first `.cleaned` segment.
        calls.fetch_add(1, Ordering::SeqCst);
        if !files_with_suffix(&dir, ".log.cleaned").is_empty() {
            return Err(Error::LogCleaningAborted { partition: "topic-0".into() });
        }
        Ok(())
    };
    let to_clean = LogToClean::new(log.clone(), 0, active_base(&log), false);
    let err = cleaner.do_clean(&to_clean, T0, &check).expect_err("aborted");
    assert!(matches!(err, Error::LogCleaningAborted { .. }), "{err:?}");
    assert!(calls.load(Ordering::SeqCst) > 1);
    assert_eq!(temp_files(&fx.dir), Vec::<String>::new());
    assert_eq!(segment_bytes(&log), before);
}

/// A truncation while a clean runs stops the clean (LogCleaningAborted), no `.cleaned` file
/// stays, and the truncation then applies to the untouched log.
#[test]
fn truncation_during_a_clean_aborts_it() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..100 {
        put_int(&log, i % 10, i);
    }
    log.roll().unwrap();
    let before = records(&log);
    let mut cleaner = big_cleaner(&fx);
    let started = AtomicBool::new(false);
    let truncator: std::sync::Mutex<Option<std::thread::JoinHandle<bool>>> = std::sync::Mutex::new(None);
    let check = || -> kafkalog::Result<()> {
        if !started.swap(true, Ordering::SeqCst) {
            let log = log.clone();
            let truncating = log.clone();
            *truncator.lock().unwrap() =
                Some(std::thread::spawn(move || truncating.truncate_to(50).expect("truncate")));
            // The truncation raises its abort request, then waits for the clean: hold the clean
            // here until the request is up (the deadline is only a hang guard).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
            while !log.cleaning_abort_requested() {
                assert!(std::time::Instant::now() < deadline, "the truncation never asked the clean to stop");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        Ok(())
    };
    let to_clean = LogToClean::new(log.clone(), 0, active_base(&log), false);
    let err = cleaner.do_clean(&to_clean, T0, &check).expect_err("the truncation aborts the clean");
    assert!(matches!(err, Error::LogCleaningAborted { .. }), "{err:?}");
    let handle = truncator.lock().unwrap().take().expect("truncator started");
    assert!(handle.join().unwrap());
    assert_eq!(temp_files(&fx.dir), Vec::<String>::new());
    assert_eq!(records(&log), before[..50].to_vec(), "the truncation applied to the unchanged log");
    assert_eq!(log.take_truncation(), Some(50));
}

/// testCleanSegmentsRetainingLastEmptyBatch: when every record of the round is removed, the
/// batch ending at the round's upper bound stays as an empty batch keeping its offsets.
#[test]
fn clean_segments_retaining_last_empty_batch() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "1024"), ("delete.retention.ms", "100")]);
    let log = open_shared(&fx, &cfg);
    while log.number_of_segments() < 4 {
        put(&log, Some(log.log_end_offset().to_string().as_bytes()), None, T0);
    }
    let upper = active_base(&log);
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, upper, T0).unwrap();
    assert_eq!(
        data_offsets(&log).iter().filter(|o| **o < upper).count() as i64,
        upper,
        "tombstones survive their first clean"
    );
    do_clean(&mut cleaner, &log, 0, upper, T0 + 100).unwrap();
    let batches: Vec<BatchView> = all_batches(&log).into_iter().filter(|b| b.base < upper).collect();
    assert_eq!(batches.len(), 1, "only one batch is retained: {batches:?}");
    assert_eq!((batches[0].last, batches[0].records.len()), (upper - 1, 0), "the last batch, empty");
    let cleaned_bytes: u64 = log.log_segments(0, upper).iter().map(|s| s.size()).sum();
    assert_eq!(cleaned_bytes, 61, "one 61-byte empty batch header");
}

// -- grouping --------------------------------------------------------------------------------------

fn assert_in_order(groups: &[Vec<Arc<LogSegment>>]) {
    let bases: Vec<i64> = groups.iter().flatten().map(|s| s.base_offset()).collect();
    assert!(bases.windows(2).all(|w| w[0] < w[1]), "groups out of order: {bases:?}");
}

/// testSegmentGrouping: size and index-size limits.
#[test]
fn segment_grouping() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "300"), ("index.interval.bytes", "1")]));
    while log.number_of_segments() < 10 {
        put(&log, Some(b"hello"), Some(b"hello"), T0);
    }
    let segments = log.log_segments(0, log.log_end_offset());
    let leo = log.log_end_offset();
    let groups = group_segments_by_size(&segments, i32::MAX, i32::MAX, leo).unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].len(), segments.len());
    let groups = group_segments_by_size(&segments, 1, i32::MAX, leo).unwrap();
    assert!(groups.iter().all(|g| g.len() == 1) && groups.len() == segments.len());
    let groups = group_segments_by_size(&segments, i32::MAX, 1, leo).unwrap();
    assert!(groups.iter().all(|g| g.len() == 1) && groups.len() == segments.len());
    let group_size = 3;
    let log_size = segments[..group_size].iter().map(|s| s.size()).sum::<u64>() as i32 + 1;
    let groups = group_segments_by_size(&segments, log_size, i32::MAX, leo).unwrap();
    assert_in_order(&groups);
    assert!(groups[..groups.len() - 1].iter().all(|g| g.len() == group_size), "grouped by log size");
    let index_size =
        segments[..group_size].iter().map(|s| s.offset_index().unwrap().get().unwrap().size_in_bytes()).sum::<usize>()
            as i32
            + 1;
    let time_index_size: usize =
        segments[..group_size].iter().map(|s| s.time_index().unwrap().get().unwrap().size_in_bytes()).sum();
    assert!((time_index_size as i32) < index_size, "same timestamps: the time index stays small");
    let groups = group_segments_by_size(&segments, i32::MAX, index_size, leo).unwrap();
    assert_in_order(&groups);
    assert!(groups[..groups.len() - 1].iter().all(|g| g.len() == group_size), "grouped by index size");
}

/// testSegmentGroupingWithSparseOffsets: a group never spans more than `i32::MAX` offsets.
#[test]
fn segment_grouping_with_sparse_offsets() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "400")]));
    // Fill the first segment so that the next batch rolls.
    while log.segments()[0].size() + 2 * 75 <= 400 {
        put(&log, Some(b"hello"), Some(b"hello"), T0);
    }
    put(&log, Some(b"hello"), Some(b"hello"), T0);
    assert_eq!(log.number_of_segments(), 1);
    // The next offset is i32::MAX - 1: it rolls into a second segment based there.
    log.append_as_follower(&batch(
        i64::from(i32::MAX) - 1,
        CompressionType::None,
        &[(Some(b"hello"), Some(b"hello"), T0)],
    ))
    .unwrap();
    assert_eq!(active_base(&log), i64::from(i32::MAX) - 1);
    put(&log, Some(b"hello"), Some(b"hello"), T0);
    assert_eq!(log.log_end_offset(), i64::from(i32::MAX) + 1);
    let groups =
        group_segments_by_size(&log.log_segments(0, i64::MAX), i32::MAX, i32::MAX, log.log_end_offset()).unwrap();
    assert_eq!(groups.len(), 1, "the last offset is exactly i32::MAX from the first base");
    put(&log, Some(b"hello"), Some(b"hello"), T0);
    let groups =
        group_segments_by_size(&log.log_segments(0, i64::MAX), i32::MAX, i32::MAX, log.log_end_offset()).unwrap();
    assert_eq!(groups.len(), 2);
    assert_in_order(&groups);
    while log.number_of_segments() < 4 {
        put(&log, Some(b"hello"), Some(b"hello"), T0);
    }
    let segments = log.log_segments(0, i64::MAX);
    let groups = group_segments_by_size(&segments, i32::MAX, i32::MAX, log.log_end_offset()).unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].len(), 1, "the first segment stays alone");
    for g in &groups {
        let last = g.last().unwrap().read_next_offset().unwrap() - 1;
        assert!(last - g[0].base_offset() <= i64::from(i32::MAX));
    }
    assert_in_order(&groups);
}

/// testSegmentGroupingWithSparseOffsetsAndEmptySegments: non-empty segments spaced i32::MAX + 1
/// apart never group; once cleaned empty they do, and a clean merges them.
#[test]
fn segment_grouping_with_sparse_offsets_and_empty_segments() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    let span = i64::from(i32::MAX) + 1;
    for i in 0..3 {
        put(&log, Some(b"key"), Some(b"val"), T0);
        // The last offset of segment i: its relative offset is exactly i32::MAX.
        log.append_as_follower(&batch((i + 1) * span - 1, CompressionType::None, &[(Some(b"key"), Some(b"val"), T0)]))
            .unwrap();
        assert_eq!(log.number_of_segments() as i64, i + 1);
    }
    put(&log, Some(b"key"), Some(b"val"), T0);
    assert_eq!(log.number_of_segments(), 4);
    let first_uncleanable = log.log_end_offset() - 1;
    let groups =
        group_segments_by_size(&log.log_segments(0, first_uncleanable), i32::MAX, i32::MAX, first_uncleanable).unwrap();
    assert_eq!(groups.len(), 3, "non-empty segments this far apart never share a group");
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, first_uncleanable, T0).unwrap();
    assert_eq!(log.number_of_segments(), 4);
    assert_eq!(log.segments()[0].size(), 0);
    let groups =
        group_segments_by_size(&log.log_segments(0, first_uncleanable), i32::MAX, i32::MAX, first_uncleanable).unwrap();
    assert_eq!(groups.len(), 2, "the two empty segments group together");
    do_clean(&mut cleaner, &log, 0, first_uncleanable, T0).unwrap();
    assert_eq!(log.number_of_segments(), 3);
    assert_eq!(records(&log).len(), 2, "the last record below the bound and the active one");
}

// -- the offset map --------------------------------------------------------------------------------

/// testBuildOffsetMap: a clean over [start, end) maps exactly the keys there; the end offset
/// is `end`; every record of the range is read once.
#[test]
fn build_offset_map() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..500 {
        put_int(&log, i, i);
    }
    log.roll().unwrap();
    let segs: Vec<i64> = log.segments().iter().map(|s| s.base_offset()).collect();
    let mut cleaner = big_cleaner(&fx);
    for (start, end) in [(0, segs[1]), (segs[1], segs[3]), (segs[3], 500)] {
        let (got_end, stats) = do_clean(&mut cleaner, &log, start, end, T0).unwrap();
        assert_eq!(got_end, end, "the end offset is the end of the range");
        assert_eq!(cleaner.offset_map().size() as i64, end - start);
        // A range of a few hundred records probes the smallest table, not the map's 43,690 slots.
        assert_eq!(cleaner.offset_map().table_slots(), MIN_TABLE_SLOTS);
        assert!(MIN_TABLE_SLOTS < cleaner.offset_map().slots());
        assert_eq!(cleaner.offset_map().latest_offset(), end - 1);
        assert_eq!(stats.map_messages_read as i64, end - start);
    }
    assert_eq!(keys_in_log(&log), (0..500).collect::<Vec<_>>(), "unique keys: nothing removed");
}

/// testBuildPartialOffsetMap: a map that fills stops mid-range, at the record that did not fit.
#[test]
fn build_partial_offset_map() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..10 {
        put_int(&log, i, i);
    }
    log.roll().unwrap();
    // 4 slots x 0.75: three keys per pass.
    let mut cleaner = growing_cleaner(&fx, 4 * BYTES_PER_ENTRY, 0.75, 64 * 1024);
    let (end, stats) = do_clean(&mut cleaner, &log, 2, active_base(&log), T0).unwrap();
    assert_eq!(end, 5, "keys 2, 3, 4 mapped");
    assert_eq!(cleaner.offset_map().size(), 3);
    assert_eq!(cleaner.offset_map().latest_offset(), 4);
    // Records 0 and 1 are read too (the scan starts at the index entry below offset 2) and
    // counted, as Kafka counts them; record 5 did not fit.
    assert_eq!(stats.map_messages_read, 5);
    // Several records per batch: the map fills mid-batch.
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    let values: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    let specs: Vec<RecSpec<'_>> = values.iter().map(|v| (Some(v.as_bytes()), Some(v.as_bytes()), T0)).collect();
    log.append_as_follower(&batch(0, CompressionType::Lz4, &specs)).unwrap();
    log.roll().unwrap();
    let mut cleaner = growing_cleaner(&fx, 4 * BYTES_PER_ENTRY, 0.75, 64 * 1024);
    let (end, _) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(end, 3, "stopped inside the batch");
    assert_eq!(keys_in_log(&log), (0..10).collect::<Vec<_>>());
}

/// OffsetMapTest.testBasicValidation at several sizes, plus testUpdateLatestOffset /
/// testLatestOffset / testUtilization.
#[test]
fn offset_map_basic_validation() {
    for items in [10usize, 100, 1000, 5000] {
        let slots = items * 2;
        let mut map = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
        assert_eq!(map.slots(), slots);
        for i in 0..items {
            map.put(i.to_string().as_bytes(), i as i64).unwrap();
            assert_eq!(map.latest_offset(), i as i64);
        }
        for i in 0..items {
            assert_eq!(map.get(i.to_string().as_bytes()), i as i64, "key {i} of {items}");
        }
        assert_eq!(map.size(), items);
        assert!((map.utilization() - 0.5).abs() < 1e-12);
        assert_eq!(map.get(b"absent"), -1);
        // Overwrites keep the size and move the latest offset.
        map.put(b"3", 99_999).unwrap();
        assert_eq!((map.size(), map.get(b"3"), map.latest_offset()), (items, 99_999, 99_999));
        map.update_latest_offset(12);
        assert_eq!(map.latest_offset(), 12);
        assert_eq!(map.get(b"3"), 99_999, "updating the latest offset stores nothing");
    }
}

/// OffsetMapTest.testClear and testGetWhenFull: a full map answers lookups of absent keys
/// (every probe position is taken, so only the attempt limit ends the search).
#[test]
fn offset_map_clear_and_get_when_full() {
    let mut map = SkimpyOffsetMap::new(4000).unwrap();
    for i in 0..10 {
        map.put(i.to_string().as_bytes(), i).unwrap();
    }
    map.clear();
    assert_eq!((map.size(), map.latest_offset(), map.utilization()), (0, -1, 0.0));
    for i in 0..10 {
        assert_eq!(map.get(i.to_string().as_bytes()), -1);
    }
    for slots in [1usize, 7, 64] {
        let mut map = SkimpyOffsetMap::new(slots * BYTES_PER_ENTRY).unwrap();
        let mut i = 0u64;
        while map.size() < slots {
            map.put(&i.to_be_bytes(), i as i64).unwrap();
            i += 1;
        }
        assert!((map.utilization() - 1.0).abs() < 1e-12);
        // Kafka's put refuses any put once every slot is taken, even of a key already there.
        assert!(map.put(b"one too many", 1).is_err());
        assert!(map.put(&0u64.to_be_bytes(), 42).is_err());
        assert_eq!(map.get(b"never put"), -1, "terminates on a full map of {slots} slots");
        assert_eq!(map.get(&0u64.to_be_bytes()), 0);
    }
    assert!(SkimpyOffsetMap::new(BYTES_PER_ENTRY - 1).is_err());
    assert_eq!(hash_key(b"").len(), 16);
}

/// A cleaner needs at least one usable slot at its load factor.
#[test]
fn cleaner_refuses_a_map_too_small_for_one_key() {
    let fx = Fixture::new();
    let params = CleanerParams { dedupe_buffer_load_factor: 0.5, ..CleanerParams::default() };
    let throttler = Arc::new(Throttler::new(f64::MAX, CHECK_INTERVAL));
    let map = SkimpyOffsetMap::new(2 * BYTES_PER_ENTRY).unwrap();
    let err = Cleaner::new(0, map, params, throttler, fx.shared_clock()).expect_err("1 slot x 0.5 <= 1");
    assert!(matches!(&err, Error::InvalidConfig { key, .. } if key == "log.cleaner.dedupe.buffer.size"), "{err:?}");
}

// -- tombstones, gaps, preallocation -----------------------------------------------------------------

/// testCleanTombstone: a tombstone with an ancient record timestamp gets horizon = clean time
/// + delete.retention.ms, survives cleans before it and goes at it.
#[test]
fn clean_tombstone_with_an_old_timestamp() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "86400000")]));
    put(&log, Some(b"0"), Some(b"0"), 1);
    put(&log, Some(b"0"), None, 2);
    put(&log, Some(b"1"), Some(b"1"), 3);
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    let now = T0;
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    let tomb: Vec<BatchView> =
        all_batches(&log).into_iter().filter(|b| b.records.iter().any(|r| r.3.is_none())).collect();
    assert_eq!(tomb.len(), 1);
    assert_eq!(tomb[0].horizon, Some(now + DAY_MS));
    assert_eq!(tomb[0].records[0].1, 2, "the record keeps its timestamp under the horizon");
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + DAY_MS - 1).unwrap();
    assert_eq!(record_offsets(&log), vec![1, 2]);
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + DAY_MS).unwrap();
    assert_eq!(record_offsets(&log), vec![2]);
}

/// testCleaningBeyondMissingOffsets: the end offset passes offset gaps at segment ends.
#[test]
fn cleaning_beyond_missing_offsets() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    for i in 0..10 {
        put_int(&log, i, i);
    }
    // Offsets 10 and 11 never exist: a follower batch at 12 in a new segment.
    log.roll().unwrap();
    log.append_as_follower(&batch(12, CompressionType::None, &[(Some(b"1015"), Some(b"1015"), T0)])).unwrap();
    log.roll().unwrap();
    put_int(&log, 1016, 1016);
    let mut cleaner = big_cleaner(&fx);
    let (end, _) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(end, active_base(&log), "cleaning point passes the gap");

    // A gap at the end of a segment, made by an earlier clean removing its last record: the
    // segments are too big to share a group, so the gap stays.
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "300")]));
    for (k, v) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        put_int(&log, k, v);
    }
    log.roll().unwrap();
    put_int(&log, 4, 4);
    put_int(&log, 5, 5);
    log.roll().unwrap();
    put_int(&log, 6, 6);
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(log.segments()[1].base_offset(), 4, "no merge");
    assert_eq!(data_offsets(&log), vec![0, 1, 2, 4, 5, 6]);
    let (end, _) = do_clean(&mut cleaner, &log, 0, 4, T0).unwrap();
    assert_eq!(end, 4, "the first segment's last batch ends at 2, its range at 3");
}

/// testSizeTrimmedForPreallocatedAndCompactedTopic: cleaned segments of a preallocated log are
/// trimmed to their data.
#[test]
fn size_trimmed_for_preallocated_and_compacted_topic() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "4096"), ("preallocate", "true")]);
    let log = open_shared(&fx, &cfg);
    for i in 0..30 {
        put_int(&log, i % 5, i);
    }
    log.roll().unwrap();
    for i in 0..5 {
        put_int(&log, i, 100 + i);
    }
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    for s in log.log_segments(0, active_base(&log)) {
        let on_disk = std::fs::metadata(s.path()).unwrap().len();
        assert!(on_disk < 4096, "segment {} is {on_disk} bytes on disk", s.base_offset());
        assert_eq!(on_disk, s.size());
    }
}

/// testCleanSegmentsWithConcurrentSegmentDeletion: retention deletes old segments while a clean
/// is writing their replacement; the clean finishes without error and the log stays readable.
fn concurrent_segment_deletion(file_delete_delay_ms: &str) {
    let fx = Fixture::new();
    let cfg = compact_config(&[
        ("internal.segment.bytes", "1024"),
        ("cleanup.policy", "compact,delete"),
        ("file.delete.delay.ms", file_delete_delay_ms),
    ]);
    let log = open_shared(&fx, &cfg);
    while log.number_of_segments() < 3 {
        put_int(&log, 0, log.log_end_offset());
        log.roll().unwrap();
    }
    let active = active_base(&log);
    let mut cleaner = big_cleaner(&fx);
    let done = AtomicBool::new(false);
    let dir = fx.dir.clone();
    {
        let check = || -> kafkalog::Result<()> {
            if !files_with_suffix(&dir, ".log.cleaned").is_empty() && !done.swap(true, Ordering::SeqCst) {
                log.delete_records(active).unwrap();
                let deleted = log.delete_old_segments().unwrap();
                assert_eq!(deleted.deleted.len(), 2, "retention deleted both old segments");
            }
            Ok(())
        };
        let to_clean = LogToClean::new(log.clone(), 0, active, false);
        cleaner.do_clean(&to_clean, T0, &check).expect("the clean tolerates the concurrent deletion");
    }
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(temp_files(&fx.dir), Vec::<String>::new());
    assert_eq!(log.log_start_offset(), active);
    // Whatever the replace put back below the log start is not served and goes with the next
    // retention run.
    assert!(matches!(
        log.read(0, 1 << 20, kafkalog::FetchIsolation::LogEnd, true),
        Err(Error::OffsetOutOfRange { .. })
    ));
    log.delete_old_segments().unwrap();
    assert_eq!(log.number_of_segments(), 1, "only the active segment is left");
    log.close().unwrap();
    let reopened = fx.open(&cfg);
    assert_eq!(reopened.number_of_segments(), 1);
    assert_eq!(temp_files(&fx.dir), Vec::<String>::new());
}

#[test]
fn clean_segments_with_concurrent_segment_deletion() {
    concurrent_segment_deletion("60000");
}

#[test]
fn clean_segments_with_concurrent_segment_deletion_and_no_delete_delay() {
    concurrent_segment_deletion("0");
}

// -- crashes at each step of the swap ----------------------------------------------------------------

/// testRecoveryAfterCrash: a failure at each step of a clean's swap, then the log is dropped
/// without closing (a crash) and reopened: it reads exactly as before or as after the clean,
/// with no `.cleaned` / `.swap` files left.
#[test]
fn recovery_after_crash_at_each_step_of_the_swap() {
    let cfg = compact_config(&[("internal.segment.bytes", "4096"), ("delete.retention.ms", "1000")]);
    let build = |fx: &Fixture| {
        let log = open_shared(fx, &cfg);
        for s in 0..4 {
            for i in 0..6 {
                let o = s * 6 + i;
                let value = o.to_string();
                put(&log, Some((o % 5).to_string().as_bytes()), (o % 9 != 8).then_some(value.as_bytes()), T0 + o);
            }
            log.roll().unwrap();
        }
        put_int(&log, 0, 999);
        log
    };
    let reference = Fixture::new();
    let log = build(&reference);
    let before = records(&log);
    do_clean(&mut big_cleaner(&reference), &log, 0, 24, T0).unwrap();
    let after = records(&log);
    assert_ne!(before, after);
    let steps: Vec<(FaultOp, String)> = vec![
        (FaultOp::Open, segment_file_name(0, ".log.cleaned")),
        (FaultOp::Write, segment_file_name(0, ".log.cleaned")),
        (FaultOp::Fsync, segment_file_name(0, ".log.cleaned")),
        (FaultOp::Rename, segment_file_name(0, ".log.cleaned")),
        (FaultOp::Rename, segment_file_name(0, ".timeindex.cleaned")),
        (FaultOp::Rename, segment_file_name(0, ".log")),
        (FaultOp::Rename, segment_file_name(12, ".log")),
        (FaultOp::Rename, segment_file_name(18, ".index")),
        (FaultOp::Rename, segment_file_name(0, ".log.swap")),
        (FaultOp::Rename, segment_file_name(0, ".timeindex.swap")),
        (FaultOp::Delete, segment_file_name(6, ".log.deleted")),
    ];
    for (op, file) in steps {
        let fx = Fixture::new();
        let log = build(&fx);
        {
            let _fault = inject(&fx.dir.join(&file), op, libc::EIO, Some(1));
            let err = do_clean(&mut big_cleaner(&fx), &log, 0, 24, T0).expect_err("the step fails");
            assert!(err.to_string().contains(&file), "{op} {file}: {err}");
        }
        drop(log);
        let options = LogOpenOptions { had_clean_shutdown: false, ..fx.options() };
        let reopened = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
        assert_eq!(temp_files(&fx.dir), Vec::<String>::new(), "{op} {file}");
        let got = records(&reopened);
        assert!(got == before || got == after, "{op} {file}: neither before nor after: {got:?}");
    }
}

/// The log a failed swap leaves open: still open, not reopened.
fn half_swapped(fx: &Fixture, cfg: &LogConfig, fail: &str) -> (Arc<UnifiedLog>, Vec<Kv>, Vec<Kv>) {
    let build = |fx: &Fixture| {
        let log = open_shared(fx, cfg);
        for i in 0..24 {
            put_int(&log, i % 5, i);
            if i % 6 == 5 {
                log.roll().unwrap();
            }
        }
        put_int(&log, 0, 999);
        log
    };
    let reference = Fixture::new();
    let log = build(&reference);
    let before = records(&log);
    do_clean(&mut big_cleaner(&reference), &log, 0, 24, T0).unwrap();
    let after = records(&log);
    let log = build(fx);
    {
        let _fault = inject(&fx.dir.join(fail), FaultOp::Rename, libc::EIO, Some(1));
        do_clean(&mut big_cleaner(fx), &log, 0, 24, T0).expect_err("the rename fails");
    }
    (log, before, after)
}

/// A clean retried on the still-open log after its swap failed half-way must not lose the
/// cleaned records.
#[test]
fn retried_clean_after_a_failed_swap_loses_nothing() {
    let cfg = compact_config(&[("internal.segment.bytes", "4096")]);
    for fail in [segment_file_name(0, ".log.swap"), segment_file_name(0, ".log"), segment_file_name(6, ".log")] {
        let fx = Fixture::new();
        let (log, before, after) = half_swapped(&fx, &cfg, &fail);
        let _ = do_clean(&mut big_cleaner(&fx), &log, 0, 24, T0);
        log.close().unwrap();
        drop(log);
        let reopened = fx.open(&cfg);
        let got = records(&reopened);
        assert!(got == before || got == after, "{fail}: lost records, left with {got:?}");
    }
}

/// After a swap failed between installing the cleaned segment and removing the old ones, the
/// still-open log must serve the records as before or as after (or refuse to serve), never
/// report corruption of sound files.
#[test]
fn open_log_after_a_half_done_swap_reads_before_or_after() {
    let cfg = compact_config(&[("internal.segment.bytes", "4096")]);
    let fx = Fixture::new();
    let (log, before, after) = half_swapped(&fx, &cfg, &segment_file_name(0, ".log"));
    let got = crate::common::scan_all(&log, 0).map(|recs| {
        recs.into_iter()
            .filter(|r| r.value.is_some() || r.key.is_some())
            .map(|r| (r.offset, r.key, r.value))
            .collect::<Vec<Kv>>()
    });
    match got {
        Ok(got) => assert!(got == before || got == after, "a mix: {got:?}"),
        // The log closed itself when the swap failed (a reopen finishes or rolls it back).
        Err(kafkalog::Error::LogClosed { .. }) => {}
        Err(e) => panic!("reads fail with something other than a refusal: {e}"),
    }
}

// -- buffers, codecs, legacy batches ---------------------------------------------------------------

/// A batch far larger than the I/O buffer: the buffers grow (pass 1 and pass 2) and the clean
/// succeeds, in one pass.
#[test]
fn batch_larger_than_the_io_buffer() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("max.message.bytes", "2000")]));
    let big = vec![7u8; 50_000];
    put(&log, Some(b"a"), Some(&big), T0);
    put(&log, Some(b"b"), Some(b"small"), T0);
    put(&log, Some(b"a"), Some(&big[..30_000]), T0);
    log.roll().unwrap();
    let mut cleaner = growing_cleaner(&fx, 1 << 16, 0.9, 64);
    let (end, stats) = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(end, 3);
    assert_eq!(data_offsets(&log), vec![1, 2]);
    assert_eq!(records(&log)[1].2.as_ref().map(Vec::len), Some(30_000));
    assert_eq!(stats.messages_read, 3);
}

/// A batch whose declared size runs past the end of its segment: with the read buffer at
/// max.message.bytes the clean fails with CorruptRecord naming the file and the position.
#[test]
fn corrupt_batch_size_names_file_and_position() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("max.message.bytes", "1000")]);
    let log = open_shared(&fx, &cfg);
    for i in 0..5 {
        put_int(&log, i, i);
    }
    log.roll().unwrap();
    put_int(&log, 9, 9);
    let second_last = {
        let s = &log.segments()[0];
        let mut positions = Vec::new();
        s.log()
            .for_each_batch(0, s.size(), &mut Vec::new(), |p, _| {
                positions.push(p);
                Ok(true)
            })
            .unwrap();
        positions[3]
    };
    log.close().unwrap();
    // Declare a 5000-byte batch at the fourth batch's position.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(fx.dir.join(segment_file_name(0, ".log"))).unwrap();
        f.write_all_at(&(5000i32 - 12).to_be_bytes(), second_last + 8).unwrap();
    }
    let options = LogOpenOptions { had_clean_shutdown: true, recovery_point: Some(7), ..fx.options() };
    let log = Arc::new(UnifiedLog::open(&fx.dir, cfg, options).unwrap());
    let mut cleaner = growing_cleaner(&fx, 1 << 16, 0.9, 1000);
    let err = do_clean(&mut cleaner, &log, 0, active_base(&log), T0).expect_err("corrupt size");
    let message = err.to_string();
    let path = fx.dir.join(segment_file_name(0, ".log")).display().to_string();
    assert!(matches!(err, Error::CorruptRecord { .. }), "{err:?}");
    assert!(message.contains(&path) && message.contains(&second_last.to_string()), "{message}");
}

/// Every codec: batches that lose records are rebuilt with their own codec and read back.
#[test]
fn every_codec_is_kept() {
    for codec in [
        CompressionType::None,
        CompressionType::Gzip,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ] {
        let fx = Fixture::new();
        let log = open_shared(&fx, &compact_config(&[]));
        let keys: Vec<String> = (0..20).map(|i| (i % 6).to_string()).collect();
        let values: Vec<String> = (0..20).map(|i| format!("value-{i}")).collect();
        for chunk in 0..4 {
            let specs: Vec<RecSpec<'_>> = (chunk * 5..chunk * 5 + 5)
                .map(|i| (Some(keys[i].as_bytes()), Some(values[i].as_bytes()), T0 + i as i64))
                .collect();
            log.append_as_follower(&batch(log.log_end_offset(), codec, &specs)).unwrap();
        }
        log.roll().unwrap();
        let before = records(&log);
        do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0).unwrap();
        assert_eq!(records(&log), latest_per_key(&before), "{codec:?}");
        for b in all_batches(&log) {
            assert_eq!(b.codec, codec);
            assert!(b.records.iter().all(|r| r.1 == T0 + r.0), "timestamps kept");
        }
    }
}

/// Legacy (magic 0 and 1) batches in the log are cleaned into v2 batches, as Kafka does; a
/// compressed wrapper keeps its codec; magic 0 records get no timestamp (-1).
#[test]
fn legacy_batches_are_cleaned_into_v2() {
    use kafkalog::record::TimestampType::CreateTime;
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    let mut raw = Vec::new();
    write_legacy_entry(&mut raw, 0, 0, -1, CreateTime, Some(b"a"), Some(b"a0")).unwrap();
    write_legacy_entry(&mut raw, 1, 1, T0 + 1, CreateTime, Some(b"b"), Some(b"b1")).unwrap();
    write_legacy_compressed(
        &mut raw,
        1,
        CompressionType::Gzip,
        CreateTime,
        &[(2, T0 + 2, Some(b"a"), Some(b"a2")), (3, T0 + 3, Some(b"c"), Some(b"c3")), (4, T0 + 4, Some(b"b"), None)],
    )
    .unwrap();
    write_legacy_compressed(
        &mut raw,
        0,
        CompressionType::Snappy,
        CreateTime,
        &[(5, -1, Some(b"d"), Some(b"d5")), (6, -1, Some(b"c"), Some(b"c6"))],
    )
    .unwrap();
    log.append_as_follower(&raw).unwrap();
    log.roll().unwrap();
    put(&log, Some(b"z"), Some(b"z"), T0);
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    let batches = all_batches(&log);
    let cleaned: Vec<&BatchView> = batches.iter().filter(|b| b.base < 7).collect();
    assert!(cleaned.iter().all(|b| b.magic == 2), "{cleaned:?}");
    let got: Vec<Row> = cleaned.iter().flat_map(|b| b.records.clone()).collect();
    assert_eq!(
        got,
        vec![
            (2, T0 + 2, Some(b"a".to_vec()), Some(b"a2".to_vec())),
            (4, T0 + 4, Some(b"b".to_vec()), None),
            (5, -1, Some(b"d".to_vec()), Some(b"d5".to_vec())),
            (6, -1, Some(b"c".to_vec()), Some(b"c6".to_vec())),
        ]
    );
    let codecs: Vec<CompressionType> = cleaned.iter().filter(|b| !b.records.is_empty()).map(|b| b.codec).collect();
    assert_eq!(codecs, vec![CompressionType::Gzip, CompressionType::Snappy]);
    // A legacy tombstone has no horizon of its own; the v2 batch it became gets one next time.
    assert!(cleaned.iter().all(|b| b.horizon.is_none()));
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0).unwrap();
    let tomb = all_batches(&log).into_iter().find(|b| b.records.iter().any(|r| r.3.is_none())).unwrap();
    assert_eq!(tomb.horizon, Some(T0 + log.config().delete_retention_ms));
}

// -- transactional data and markers found in the log ---------------------------------------------

/// testBasicTransactionAwareCleaning: aborted data goes whatever its key; committed data
/// follows the key rules; the markers stay while their data does.
#[test]
fn basic_transaction_aware_cleaning() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    put_txn(&log, 1, 0, &[1, 2]); // 0, 1
    put_txn(&log, 2, 0, &[2, 3]); // 2, 3
    put_txn(&log, 1, 2, &[3, 4]); // 4, 5
    put_marker(&log, 1, ControlRecordType::Abort); // 6
    put_marker(&log, 2, ControlRecordType::Commit); // 7
    put_txn(&log, 1, 4, &[2]); // 8
    put_marker(&log, 1, ControlRecordType::Commit); // 9
    log.roll().unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0 + 1000).unwrap();
    assert_eq!(keys_in_log(&log), vec![3, 2]);
    assert_eq!(record_offsets(&log), vec![3, 6, 7, 8, 9]);
}

/// testCommitMarkerRemoval: once its data is gone, a COMMIT marker is stamped with a horizon
/// by one clean, kept by cleans before the horizon and removed by the first clean after it.
#[test]
fn commit_marker_removal() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "1000")]));
    put_txn(&log, 1, 0, &[1]); // 0
    put_marker(&log, 1, ControlRecordType::Commit); // 1
    put_int(&log, 1, 11); // 2 supersedes 0
    put_int(&log, 5, 5); // 3
    log.roll().unwrap();
    // Long after the producer's last write, Kafka's periodic expiry check has run: the producer
    // is no longer active (producer.id.expiration.ms), so its last batch need not stay.
    let now = T0 + 2 * DAY_MS;
    log.remove_expired_producers(now);
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    assert_eq!(record_offsets(&log), vec![1, 2, 3], "data of the transaction seen in this pass: marker kept");
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    let marker = all_batches(&log).into_iter().find(|b| b.control).expect("marker still there");
    assert_eq!(marker.horizon, Some(now + 1000), "no data left: the marker gets a horizon");
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + 999).unwrap();
    assert_eq!(record_offsets(&log), vec![1, 2, 3]);
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + 1000).unwrap();
    assert_eq!(record_offsets(&log), vec![2, 3]);
}

/// testAbortMarkerRemoval: aborted data goes in the first clean (the marker stays, its
/// transaction still seen); then the marker gets a horizon and goes after it.
#[test]
fn abort_marker_removal() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "1000")]));
    put_txn(&log, 1, 0, &[1, 2]); // 0, 1
    put_marker(&log, 1, ControlRecordType::Abort); // 2
    put_int(&log, 3, 3); // 3
    put_int(&log, 4, 4); // 4
    log.roll().unwrap();
    // As in commit_marker_removal: the producer has expired, its last batch need not stay.
    let now = T0 + 2 * DAY_MS;
    log.remove_expired_producers(now);
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    assert_eq!(record_offsets(&log), vec![2, 3, 4], "aborted data removed, its marker kept");
    // The cleaned segment's transaction index keeps the aborted transaction (34-byte entry:
    // version, producer id, first offset, last offset, last stable offset).
    let index =
        std::fs::read(fx.dir.join(segment_file_name(0, ".txnindex"))).expect("a .txnindex for the cleaned segment");
    assert_eq!(index.len(), 34);
    let long = |at: usize| i64::from_be_bytes(index[at..at + 8].try_into().unwrap());
    assert_eq!((&index[..2], long(2), long(10), long(18), long(26)), (&[0u8, 0][..], 1, 0, 2, 3));
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    assert_eq!(all_batches(&log)[0].horizon, Some(now + 1000));
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + 1000).unwrap();
    assert_eq!(record_offsets(&log), vec![3, 4]);
    let index = std::fs::read(fx.dir.join(segment_file_name(0, ".txnindex"))).unwrap_or_default();
    assert!(index.is_empty(), "marker gone: no aborted transaction left in the index");
}

/// The aborted transactions come from the log's `.txnindex`, as Kafka's cleaner collects them
/// (`collectAbortedTransactions`), not from the batches left: an active producer's aborted
/// transaction whose first batch a clean removed (only its last batch stays, empty) keeps its
/// entry as the append wrote it, first offset included, through every later clean; and the
/// clean reads the producer's last batch from the log's producer state.
#[test]
fn aborted_transaction_entry_survives_cleans_that_removed_its_first_batch() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "1000")]));
    put_txn(&log, 1, 0, &[1]); // 0
    put_txn(&log, 1, 1, &[2]); // 1: the producer's last data batch
    put_marker(&log, 1, ControlRecordType::Abort); // 2
    put_int(&log, 3, 3); // 3
    log.roll().unwrap();
    let entry = (1, 0, 2, 3);
    let entries = |log: &UnifiedLog| -> Vec<(i64, i64, i64, i64)> {
        let all = log.aborted_transactions(0, log.log_end_offset()).unwrap();
        all.iter().map(|t| (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)).collect()
    };
    assert_eq!(entries(&log), vec![entry], "the append wrote the entry");
    let mut cleaner = big_cleaner(&fx);
    for (i, now) in [T0 + 10, T0 + 20, T0 + 30].into_iter().enumerate() {
        do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
        assert_eq!(record_offsets(&log), vec![2, 3], "clean {i}: the aborted data is gone");
        assert_eq!(last_offsets_per_batch(&log), vec![1, 2, 3], "clean {i}: the producer's last batch stays, empty");
        assert_eq!(entries(&log), vec![entry], "clean {i}: the entry is Kafka's, first offset 0");
    }
}

/// A crash at each step of a swap whose old and new segments both carry a `.txnindex` (an
/// aborted transaction of a still-active producer: its last batch stays empty, so its marker
/// and index entry stay too): the reopened log reads as before or after, keeps the index entry,
/// and leaves no `.cleaned` / `.swap` file.
#[test]
fn recovery_after_crash_with_transaction_indexes() {
    let cfg = compact_config(&[("internal.segment.bytes", "4096")]);
    let build = |fx: &Fixture| {
        let log = open_shared(fx, &cfg);
        put_txn(&log, 1, 0, &[1, 2]); // 0, 1
        put_marker(&log, 1, ControlRecordType::Abort); // 2
        for i in 3..9 {
            put_int(&log, i % 4, i);
        }
        log.roll().unwrap();
        for i in 9..15 {
            put_int(&log, i % 4, i);
        }
        log.roll().unwrap();
        let mut cleaner = big_cleaner(fx);
        do_clean(&mut cleaner, &log, 0, active_base(&log), T0 + 1000).unwrap();
        assert!(fx.dir.join(segment_file_name(0, ".txnindex")).exists(), "the first clean wrote the index");
        for i in 15..21 {
            put_int(&log, i % 4, i);
        }
        log.roll().unwrap();
        put_int(&log, 0, 99);
        log
    };
    let reference = Fixture::new();
    let log = build(&reference);
    let before = records(&log);
    let upper = active_base(&log);
    do_clean(&mut big_cleaner(&reference), &log, 0, upper, T0 + 1000).unwrap();
    let after = records(&log);
    let index_after = std::fs::read(reference.dir.join(segment_file_name(0, ".txnindex"))).unwrap();
    assert_eq!(index_after.len(), 34);
    assert_ne!(before, after);
    let steps = [
        (FaultOp::Rename, segment_file_name(0, ".txnindex.cleaned")),
        (FaultOp::Rename, segment_file_name(0, ".txnindex")),
        (FaultOp::Rename, segment_file_name(0, ".txnindex.swap")),
        (FaultOp::Rename, segment_file_name(0, ".log.swap")),
        (FaultOp::Write, segment_file_name(0, ".txnindex.cleaned")),
    ];
    for (op, file) in steps {
        let fx = Fixture::new();
        let log = build(&fx);
        {
            let _fault = inject(&fx.dir.join(&file), op, libc::EIO, Some(1));
            let err = do_clean(&mut big_cleaner(&fx), &log, 0, upper, T0 + 1000).expect_err("the step fails");
            assert!(err.to_string().contains(&file), "{op} {file}: {err}");
        }
        drop(log);
        let options = LogOpenOptions { had_clean_shutdown: false, ..fx.options() };
        let reopened = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
        assert_eq!(temp_files(&fx.dir), Vec::<String>::new(), "{op} {file}");
        let got = records(&reopened);
        assert!(got == before || got == after, "{op} {file}: neither before nor after: {got:?}");
        let index = std::fs::read(fx.dir.join(segment_file_name(0, ".txnindex"))).expect("the index survives");
        assert_eq!(index, index_after, "{op} {file}: the aborted transaction stays indexed");
    }
}

/// testUndecidedTransactionalDataNotCleanable: an open transaction bounds the clean at the
/// segment holding its first offset; that segment and the later ones stay as they are.
#[test]
fn undecided_transactional_data_is_not_cleanable() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    for i in 0..5 {
        put_int(&log, i % 2, i);
    }
    log.roll().unwrap();
    put_int(&log, 0, 5); // 5
    put_txn(&log, 7, 0, &[1]); // 6: never committed nor aborted
    put_int(&log, 1, 7); // 7
    log.roll().unwrap();
    put_int(&log, 0, 8); // 8
    log.roll().unwrap();
    let untouched = segment_bytes(&log)[1..].to_vec();
    let mut cleaner = big_cleaner(&fx);
    let options = CompactOptions { first_dirty_offset: None, now_ms: Some(T0 + 1000) };
    let result = compact_log(&mut cleaner, &log, &options, &|| Ok(())).unwrap();
    assert_eq!((result.first_uncleanable_offset, result.end_offset), (5, 5), "bounded by the open transaction");
    assert_eq!(data_offsets(&log), vec![3, 4, 5, 6, 7, 8]);
    assert_eq!(segment_bytes(&log)[1..].to_vec(), untouched);
}

/// testLogCleanerRetainsProducerLastSequence: the last batch of every active producer stays,
/// empty if need be, keeping its offsets and sequence.
#[test]
fn log_cleaner_retains_producer_last_sequence() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    put_int(&log, 0, 0); // 0
    put_idempotent(&log, 1, 0, 0, 1); // 1
    put_idempotent(&log, 2, 0, 0, 2); // 2
    put_idempotent(&log, 3, 0, 0, 3); // 3
    put_idempotent(&log, 2, 1, 1, 1); // 4
    log.roll().unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0 + 1000).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![1, 3, 4]);
    let batches = all_batches(&log);
    assert_eq!((batches[0].producer_id, batches[0].base_sequence, batches[0].records.len()), (1, 0, 0));
    assert_eq!(keys_in_log(&log), vec![0, 1]);
    assert_eq!(record_offsets(&log), vec![3, 4]);
}

/// testLogCleanerRetainsLastSequenceEvenIfTransactionAborted: an aborted batch that is its
/// producer's last stays as an empty batch.
#[test]
fn log_cleaner_retains_last_sequence_even_if_transaction_aborted() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[]));
    put_txn(&log, 1, 0, &[0]); // 0
    put_marker(&log, 1, ControlRecordType::Abort); // 1
    put_int(&log, 2, 2); // 2
    log.roll().unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0 + 1000).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1, 2]);
    let batches = all_batches(&log);
    assert!(batches[0].records.is_empty() && batches[0].transactional && batches[0].producer_id == 1);
    assert_eq!(record_offsets(&log), vec![1, 2]);
}

/// testCleanEmptyControlBatch: a log holding an empty control batch cleans without error and
/// the empty batch can go.
#[test]
fn clean_empty_control_batch() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "1000")]));
    put_marker(&log, 1, ControlRecordType::Commit); // 0: a marker with no data
    put_int(&log, 2, 2); // 1
    put_int(&log, 3, 3); // 2
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    let now = T0 + 1000;
    do_clean(&mut cleaner, &log, 0, active_base(&log), now).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1, 2]);
    do_clean(&mut cleaner, &log, 0, active_base(&log), now + 1000).unwrap();
    let batches = all_batches(&log);
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1, 2], "the producer's last batch stays");
    assert!(batches[0].control && batches[0].records.is_empty(), "kept as an empty control batch");
    for t in [now + 2000, now + 3 * DAY_MS] {
        // Kafka's periodic expiry check: by the second time the producer has expired.
        log.remove_expired_producers(t);
        do_clean(&mut cleaner, &log, 0, active_base(&log), t).unwrap();
        assert_eq!(keys_in_log(&log), vec![2, 3]);
    }
    assert_eq!(last_offsets_per_batch(&log), vec![1, 2], "an empty control batch is removable");
}

// -- compact_log / cleanable offsets -----------------------------------------------------------------

/// `compact_log` from a checkpoint: the cleanable range is [checkpoint, active base), and a
/// second call with the returned checkpoint and nothing new cleans nothing.
#[test]
fn compact_log_from_the_checkpoint() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    for i in 0..50 {
        put_int(&log, i % 7, i);
    }
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    let options = CompactOptions { first_dirty_offset: None, now_ms: Some(T0) };
    let first = compact_log(&mut cleaner, &log, &options, &|| Ok(())).unwrap();
    assert_eq!((first.first_dirty_offset, first.end_offset), (0, 50));
    let again = CompactOptions { first_dirty_offset: Some(first.end_offset), now_ms: Some(T0) };
    let second = compact_log(&mut cleaner, &log, &again, &|| Ok(())).unwrap();
    assert!(second.passes.is_empty());
    assert_eq!(second.end_offset, 50);
    // A checkpoint beyond the log end is reset to the log start.
    let offsets = cleanable_offsets(&log, Some(10_000), T0).unwrap();
    assert_eq!((offsets.first_dirty_offset, offsets.force_update_checkpoint), (0, true));
}

/// A client batch of `producer_id` (epoch 0) from `sequence`, one record per key (key = value),
/// appended as leader; returns the offsets the log answers (Kafka's
/// `appendIdempotentAsLeader`).
fn leader_idempotent(log: &UnifiedLog, producer_id: i64, sequence: i32, keys: &[i64]) -> (i64, i64) {
    let header = BatchHeader { producer_id, producer_epoch: 0, base_sequence: sequence, ..BatchHeader::default() };
    let mut b = kafkalog::record::builder::BatchBuilder::new(header);
    for k in keys {
        let s = k.to_string();
        b.append_next(T0, Some(s.as_bytes()), Some(s.as_bytes()), &[]).unwrap();
    }
    let info = log.append_as_leader(&mut b.build().unwrap(), 0).unwrap();
    (info.first_offset, info.last_offset)
}

/// testDuplicateCheckAfterCleaning: after cleaning (and a reload), the retained last batch of
/// each producer still answers a retried append with the original offsets and writes nothing.
#[test]
fn duplicate_check_after_cleaning() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "2048")]);
    let mut log = open_shared(&fx, &cfg);
    leader_idempotent(&log, 1, 0, &[1, 2, 3]);
    leader_idempotent(&log, 2, 0, &[3, 1, 4]);
    leader_idempotent(&log, 3, 0, &[1, 4]);
    log.roll().unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![2, 5, 7]);
    assert_eq!(data_offsets(&log), vec![1, 3, 6, 7]);
    let reload = |log: &Arc<UnifiedLog>| {
        log.close().unwrap();
        let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
        Arc::new(UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap())
    };
    log = reload(&log);
    let end = log.log_end_offset();
    assert_eq!(leader_idempotent(&log, 1, 0, &[1, 2, 3]), (0, 2));
    assert_eq!(leader_idempotent(&log, 3, 0, &[1, 4]), (6, 7));
    assert_eq!(leader_idempotent(&log, 2, 0, &[3, 1, 4]), (3, 5));
    assert_eq!(log.log_end_offset(), end, "duplicates write nothing");
    leader_idempotent(&log, 4, 0, &[2]);
    log.roll().unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), T0).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![2, 5, 7, 8]);
    assert_eq!(data_offsets(&log), vec![3, 6, 7, 8]);
    log = reload(&log);
    assert_eq!(leader_idempotent(&log, 1, 0, &[1, 2, 3]), (0, 2), "producer 1's emptied batch still answers");
}
