//! Pass 2's use of what pass 1 learned (`cleaner::mapped_records`): records pass 1 mapped are
//! not looked up again, whole batches all of whose records are latest are copied verbatim
//! without decoding, and whole batches all of whose records were superseded go (or stay empty
//! when they are a producer's last batch). The results must be exactly Kafka's rule: these
//! tests check byte-for-byte what is kept, around every case that must fall back to the map
//! (tombstones, unkeyed records, the clean section, a map that fills mid-batch).

use std::sync::Arc;

use kafkalog::cleaner::{compact_log, Cleaner, CleanerParams, CompactOptions, LogToClean};
use kafkalog::record::records::{AnyBatch, BatchIter};
use kafkalog::record::{BatchBuilder, BatchHeader, CompressionType};
use kafkalog::{LogConfig, UnifiedLog};

use crate::common::cleaner::{compact_config, new_cleaner};
use crate::common::{batch, config, decode, Fixture, RecSpec, T0};

/// A compacted topic whose tombstones may go one second after a clean.
fn short_retention_config() -> LogConfig {
    compact_config(&[("delete.retention.ms", "1000")])
}

/// A cleaner with Kafka's default parameters but 64 KiB buffers and a `map_bytes`-byte map.
fn default_cleaner(fx: &Fixture, map_bytes: usize) -> Cleaner {
    new_cleaner(fx, map_bytes, CleanerParams { io_buffer_size: 64 * 1024, ..CleanerParams::default() })
}

/// Appends `records` as one batch at the log end (as a follower); returns the batch's bytes.
fn append_pairs(log: &UnifiedLog, records: &[(Option<&str>, Option<&str>)]) -> Vec<u8> {
    let specs: Vec<RecSpec<'_>> =
        records.iter().map(|(k, v)| (k.map(str::as_bytes), v.map(str::as_bytes), T0)).collect();
    let bytes = batch(log.log_end_offset(), CompressionType::None, &specs);
    log.append_as_follower(&bytes).expect("append");
    bytes
}

/// Every batch of the log's segments below `end`: (bytes, decoded records as (offset, key, value)).
type Row = (i64, Option<String>, Option<String>);
fn batches_below(log: &UnifiedLog, end: i64) -> Vec<(Vec<u8>, Vec<Row>)> {
    let mut out = Vec::new();
    for segment in log.log_segments(0, end) {
        let bytes = std::fs::read(segment.path()).expect("read segment");
        for item in BatchIter::new(&bytes) {
            let (_, b) = item.expect("valid batch");
            let rows = decode(b.bytes())
                .into_iter()
                .map(|r| {
                    let s = |v: Option<Vec<u8>>| v.map(|v| String::from_utf8(v).expect("utf-8"));
                    (r.offset, s(r.key), s(r.value))
                })
                .collect();
            out.push((b.bytes().to_vec(), rows));
        }
    }
    out
}

fn row(offset: i64, key: &str, value: Option<&str>) -> Row {
    (offset, Some(key.to_string()), value.map(str::to_string))
}

/// Whole batches: B1 all superseded by B2 (dropped), B2 all latest (verbatim, same bytes),
/// B3 with a tombstone and a key B4 supersedes (rebuilt, horizon stamped), B4 with an
/// unkeyed record (rebuilt without it), B5 only a tombstone, the latest of its key (rebuilt
/// with its horizon, never copied as it was).
#[test]
fn whole_batches_are_kept_or_dropped_and_the_rest_follows_the_map() {
    let fx = Fixture::new();
    let log = Arc::new(fx.open(&short_retention_config()));
    append_pairs(&log, &[(Some("a"), Some("1")), (Some("b"), Some("1")), (Some("c"), Some("1"))]);
    let b2 = append_pairs(&log, &[(Some("a"), Some("2")), (Some("b"), Some("2")), (Some("c"), Some("2"))]);
    append_pairs(&log, &[(Some("d"), Some("1")), (Some("e"), None), (Some("f"), Some("1"))]);
    append_pairs(&log, &[(Some("d"), Some("2")), (None, Some("x")), (Some("g"), Some("1"))]);
    let b5 = append_pairs(&log, &[(Some("h"), None)]);
    log.roll().expect("roll");
    let end = log.log_end_offset();
    let mut cleaner = default_cleaner(&fx, 1 << 20);
    let (next, stats) = cleaner.do_clean(&LogToClean::new(log.clone(), 0, end, false), T0, &|| Ok(())).expect("clean");
    assert_eq!(next, end);
    let after = batches_below(&log, end);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[0].0, b2, "the all-latest batch is copied byte for byte");
    assert_eq!(after[1].1, vec![row(7, "e", None), row(8, "f", Some("1"))]);
    let rebuilt = BatchIter::new(&after[1].0).next().unwrap().unwrap().1;
    let AnyBatch::V2(rebuilt) = rebuilt else { panic!("v2") };
    assert_eq!(rebuilt.delete_horizon_ms(), Some(T0 + 1000), "the tombstone's batch gets its horizon");
    assert_eq!(after[2].1, vec![row(9, "d", Some("2")), row(11, "g", Some("1"))]);
    assert_ne!(after[3].0, b5);
    assert_eq!(after[3].1, vec![row(12, "h", None)]);
    let AnyBatch::V2(b5) = BatchIter::new(&after[3].0).next().unwrap().unwrap().1 else { panic!("v2") };
    assert_eq!(b5.delete_horizon_ms(), Some(T0 + 1000));
    assert_eq!(stats.batches_copied_verbatim, 1);
    assert_eq!(stats.invalid_messages_read, 1, "the unkeyed record");
    assert_eq!((stats.messages_read, stats.messages_written), (13, 8));
    assert_eq!((stats.tombstones_retained, stats.tombstones_removed), (2, 0));

    // A second clean: B2 and B3 are now the clean section, looked up in the new map.
    append_pairs(&log, &[(Some("b"), Some("3")), (Some("e"), Some("2"))]);
    log.roll().expect("roll");
    let end2 = log.log_end_offset();
    cleaner.do_clean(&LogToClean::new(log.clone(), end, end2, false), T0, &|| Ok(())).expect("second clean");
    let rows: Vec<Row> = batches_below(&log, end2).into_iter().flat_map(|b| b.1).collect();
    assert_eq!(
        rows,
        vec![
            row(3, "a", Some("2")),
            row(5, "c", Some("2")),
            row(8, "f", Some("1")),
            row(9, "d", Some("2")),
            row(11, "g", Some("1")),
            row(12, "h", None),
            row(13, "b", Some("3")),
            row(14, "e", Some("2")),
        ]
    );
}

/// A producer's last batch whose records were all superseded stays as its 61-byte empty
/// header (Kafka keeps it so the producer's sequence survives), without being decoded.
#[test]
fn a_producers_fully_superseded_last_batch_stays_empty() {
    let fx = Fixture::new();
    let log = Arc::new(fx.open(&short_retention_config()));
    let header =
        BatchHeader { base_offset: 0, producer_id: 7, producer_epoch: 3, base_sequence: 40, ..BatchHeader::default() };
    let mut b = BatchBuilder::new(header);
    b.append_next(T0, Some(b"a"), Some(b"1"), &[]).unwrap();
    b.append_next(T0, Some(b"b"), Some(b"1"), &[]).unwrap();
    log.append_as_follower(&b.build().unwrap()).expect("append");
    append_pairs(&log, &[(Some("b"), Some("2")), (Some("a"), Some("2"))]);
    log.roll().expect("roll");
    let end = log.log_end_offset();
    default_cleaner(&fx, 1 << 20)
        .do_clean(&LogToClean::new(log.clone(), 0, end, false), T0, &|| Ok(()))
        .expect("clean");
    let after = batches_below(&log, end);
    assert_eq!(after.len(), 2);
    assert_eq!(after[0].0.len(), 61, "an empty batch header");
    let AnyBatch::V2(empty) = BatchIter::new(&after[0].0).next().unwrap().unwrap().1 else { panic!("v2") };
    assert_eq!((empty.base_offset(), empty.last_offset(), empty.records_count()), (0, 1, 0));
    assert_eq!((empty.producer_id(), empty.producer_epoch(), empty.base_sequence()), (7, 3, 40));
    assert_eq!(after[1].1, vec![row(2, "b", Some("2")), row(3, "a", Some("2"))]);
}

/// A map that fills part-way through batches, many passes: the result equals one clean with
/// a map big enough for everything (the records past a pass's latest offset are kept, even
/// when pass 1 already saw them superseded).
#[test]
fn tiny_maps_that_fill_mid_batch_give_the_same_log() {
    let keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6"];
    let write = |log: &UnifiedLog| {
        for round in 0..6 {
            let value = round.to_string();
            let records: Vec<(Option<&str>, Option<&str>)> =
                (0..5).map(|i| (Some(keys[(round * 3 + i) % keys.len()]), Some(value.as_str()))).collect();
            append_pairs(log, &records);
        }
        log.roll().expect("roll");
    };
    let mut results = Vec::new();
    for map_slots in [3usize, 4, 6, 1 << 15] {
        let fx = Fixture::new();
        let log = Arc::new(fx.open(&short_retention_config()));
        write(&log);
        let end = log.log_end_offset();
        let mut c = default_cleaner(&fx, map_slots * kafkalog::cleaner::offset_map::BYTES_PER_ENTRY);
        let options = CompactOptions { first_dirty_offset: Some(0), now_ms: Some(T0) };
        let result = compact_log(&mut c, &log, &options, &|| Ok(())).expect("compact");
        assert!(map_slots > 100 || result.passes.len() > 1, "{map_slots} slots: {} passes", result.passes.len());
        let rows: Vec<Row> = batches_below(&log, end).into_iter().flat_map(|b| b.1).collect();
        results.push((map_slots, rows));
    }
    for (slots, rows) in &results[..results.len() - 1] {
        assert_eq!(rows, &results[results.len() - 1].1, "{slots}-slot map");
    }
    assert_eq!(results[0].1.len(), keys.len());
}

/// A segment the clean leaves exactly as it is stays in place (same file, same bytes), no
/// `.cleaned` file is left, and the next segment, which does change, is rewritten: its
/// unchanged prefix is written out when the first change comes.
#[test]
fn an_unchanged_segment_is_kept_and_a_changed_one_rewritten() {
    let fx = Fixture::new();
    let cfg = config(&[
        ("cleanup.policy", "compact"),
        ("file.delete.delay.ms", "0"),
        ("internal.segment.bytes", "600"),
        ("segment.index.bytes", "80"), // groups of one segment
    ]);
    let log = Arc::new(fx.open(&cfg));
    // Segment 0: keys a.. that nothing supersedes. Then segments whose last batch is
    // superseded by the final batch.
    let mut n = 0;
    while log.number_of_segments() < 3 {
        let key = format!("key-{n:03}");
        append_pairs(&log, &[(Some(&key), Some("v"))]);
        n += 1;
    }
    let second_base = log.segments()[1].base_offset();
    let third_base = log.segments()[2].base_offset();
    let superseded = format!("key-{:03}", third_base - 1); // the second segment's last record
    append_pairs(&log, &[(Some(&superseded), Some("w"))]);
    log.roll().expect("roll");
    let end = log.log_end_offset();
    let before: Vec<(std::path::PathBuf, Vec<u8>, std::time::SystemTime)> = log
        .log_segments(0, end)
        .iter()
        .map(|s| (s.path(), std::fs::read(s.path()).unwrap(), std::fs::metadata(s.path()).unwrap().modified().unwrap()))
        .collect();
    let (_, stats) = default_cleaner(&fx, 1 << 20)
        .do_clean(&LogToClean::new(log.clone(), 0, end, false), T0, &|| Ok(()))
        .expect("clean");
    let after: Vec<(std::path::PathBuf, Vec<u8>)> =
        log.log_segments(0, end).iter().map(|s| (s.path(), std::fs::read(s.path()).unwrap())).collect();
    assert_eq!(after[0], (before[0].0.clone(), before[0].1.clone()), "segment 0 untouched");
    assert_eq!(std::fs::metadata(&after[0].0).unwrap().modified().unwrap(), before[0].2);
    let second = after.iter().find(|(p, _)| *p == before[1].0).expect("second segment");
    assert_eq!(second.1.len(), before[1].1.len() - (before[1].1.len() / (third_base - second_base) as usize));
    assert!(before[1].1.starts_with(&second.1), "the unchanged prefix, then nothing (the last batch went)");
    assert!(stats.segments_kept >= 1 && stats.segments_written >= 1, "{stats:?}");
    assert_eq!(stats.segments_kept + stats.segments_written, log.log_segments(0, end).len() as u64);
    let leftovers = crate::common::files_with_suffix(&fx.dir, ".cleaned");
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let rows: Vec<Row> = batches_below(&log, end).into_iter().flat_map(|b| b.1).collect();
    assert_eq!(rows.len() as i64, end - 1, "one record superseded");
    assert_eq!(rows.last().unwrap(), &row(end - 1, &superseded, Some("w")));
}
