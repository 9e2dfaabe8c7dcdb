//! Pass 2 skipping runs of superseded batches unread (`cleaner::skip`): the cleaned log must be
//! exactly the one a rewrite reading every batch gives. Each test cleans two logs holding the
//! same records, one of which ends with a committed transaction: a transactional batch in the
//! dirty range makes the rewrite read every batch, so the batches below the transaction are the
//! reference for the other log's, byte for byte.

use std::sync::Arc;

use kafkalog::cleaner::{CleanerParams, CleanerStats};
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::{BatchHeader, CompressionType};
use kafkalog::UnifiedLog;

use crate::common::cleaner::{all_batches, compact_config, do_clean, new_cleaner, put_batch, put_marker, BatchView};
use crate::common::{batch, capture_log, Fixture, RecSpec, T0};

const KEYS: usize = 600;
const PER_BATCH: usize = 40;

/// Round `round` of every key (a different order each round), values of 200 bytes, batches of
/// 40 records (about 9 KB): with Kafka's 4 KiB index interval, most batches are indexed.
fn write_round(log: &UnifiedLog, round: usize) {
    let value = [b'a' + round as u8; 200];
    let keys: Vec<String> = (0..KEYS).map(|i| format!("key-{:04}", (i * 7 + round * 131) % KEYS)).collect();
    for chunk in keys.chunks(PER_BATCH) {
        let specs: Vec<RecSpec<'_>> = chunk.iter().map(|k| (Some(k.as_bytes()), Some(&value[..]), T0)).collect();
        log.append_as_follower(&batch(log.log_end_offset(), CompressionType::None, &specs)).expect("append");
    }
}

/// A committed transaction of one new key at the log end; returns its first offset.
fn commit_a_transaction(log: &UnifiedLog) -> i64 {
    let header = BatchHeader {
        producer_id: 77,
        producer_epoch: 0,
        base_sequence: 0,
        is_transactional: true,
        ..BatchHeader::default()
    };
    let (first, _) = put_batch(log, header, &[(Some(b"txn-key"), Some(b"v"), T0)]);
    put_marker(log, 77, ControlRecordType::Commit);
    first
}

/// One log cleaned: its batches after the clean, the clean's stats, its bytes before.
type Cleaned = (Vec<BatchView>, CleanerStats, u64);

/// Writes with `write` into a fresh log, then again into a second one followed by a committed
/// transaction; cleans both wholly. Returns the two, and where the transaction starts.
fn clean_both(write: impl Fn(&UnifiedLog)) -> (Cleaned, Cleaned, i64) {
    let params = CleanerParams { io_buffer_size: 64 * 1024, ..CleanerParams::default() };
    let mut txn_start = 0;
    let mut cleaned = Vec::new();
    for with_txn in [false, true] {
        let fx = Fixture::new();
        let log = Arc::new(fx.open(&compact_config(&[])));
        write(&log);
        if with_txn {
            txn_start = commit_a_transaction(&log);
        }
        log.roll().expect("roll");
        let end = log.log_end_offset();
        let size = log.segments().iter().map(|s| s.size()).sum();
        let mut cleaner = new_cleaner(&fx, 1 << 20, params);
        let (next, stats) = do_clean(&mut cleaner, &log, 0, end, T0).expect("clean");
        assert_eq!(next, end);
        cleaned.push((all_batches(&log), stats, size));
    }
    let reference = cleaned.pop().expect("two cleans");
    (cleaned.pop().expect("two cleans"), reference, txn_start)
}

/// The batches below `offset`.
fn below(batches: &[BatchView], offset: i64) -> Vec<BatchView> {
    batches.iter().filter(|b| b.last < offset).cloned().collect()
}

#[test]
fn runs_of_superseded_batches_are_skipped_with_the_result_of_reading_them() {
    let ((skipped, stats, size), (reference, read_all, _), txn) = clean_both(|log| {
        for round in 0..3 {
            write_round(log, round);
        }
    });
    assert!(stats.bytes_skipped > 100_000, "{stats:?}");
    assert_eq!(read_all.bytes_skipped, 0, "a transactional batch in range: every batch is read");
    assert_eq!(skipped, below(&reference, txn));
    // The skipped records count as read, as if read.
    assert_eq!(stats.messages_read, (3 * KEYS) as u64);
    assert_eq!(read_all.messages_read, stats.messages_read + 2);
    assert_eq!((stats.bytes_read, stats.messages_written), (size, KEYS as u64));
    // What survives: the last round, whole.
    let rows: Vec<_> = skipped.iter().flat_map(|b| b.records.iter().map(|r| r.0)).collect();
    assert_eq!(rows, (2 * KEYS as i64..3 * KEYS as i64).collect::<Vec<_>>());
}

/// An idempotent producer's last batch amid a superseded run stays as an empty batch (Kafka
/// keeps it for the producer's sequence): the run is skipped up to it, and on after it.
#[test]
fn a_skip_stops_before_a_producers_last_batch() {
    let ((skipped, stats, _), (reference, ..), txn) = clean_both(|log| {
        write_round(log, 0);
        let header = BatchHeader { producer_id: 9, producer_epoch: 2, base_sequence: 5, ..BatchHeader::default() };
        let old: &[u8] = b"old";
        put_batch(log, header, &[(Some(&b"key-0001"[..]), Some(old), T0), (Some(&b"key-0002"[..]), Some(old), T0)]);
        write_round(log, 1);
        write_round(log, 2);
        write_round(log, 3);
    });
    assert!(stats.bytes_skipped > 100_000, "{stats:?}");
    assert_eq!(skipped, below(&reference, txn));
    let empty: Vec<_> = skipped.iter().filter(|b| b.records.is_empty()).collect();
    assert_eq!(empty.len(), 1, "{empty:?}");
    assert_eq!((empty[0].producer_id, empty[0].base, empty[0].last), (9, KEYS as i64, KEYS as i64 + 1));
}

/// Three rounds of every key in a fresh log whose first segment's offset index `edit` then
/// changes (entries of 8 bytes: relative offset, position; the log is reopened after a clean
/// shutdown, so the index is not rebuilt), cleaned wholly. Returns the clean's stats, the
/// warnings it logged, and the log's batches, with those of the same log cleaned untouched.
fn clean_with_edited_index(edit: impl Fn(&mut [u8])) -> (CleanerStats, Vec<String>, Vec<BatchView>, Vec<BatchView>) {
    let ((good, ..), ..) = clean_both(|log| {
        for round in 0..3 {
            write_round(log, round);
        }
    });
    let fx = Fixture::new();
    let cfg = compact_config(&[]);
    {
        let log = fx.open(&cfg);
        for round in 0..3 {
            write_round(&log, round);
        }
        log.roll().expect("roll");
        log.close().expect("close");
    }
    let index = fx.dir.join(format!("{:020}.index", 0));
    let mut bytes = std::fs::read(&index).expect("index");
    assert!(bytes.len() / 8 > 20, "{} entries", bytes.len() / 8);
    edit(&mut bytes);
    std::fs::write(&index, &bytes).expect("write index");
    let log = Arc::new(fx.open(&cfg));
    let end = log.log_end_offset();
    let params = CleanerParams { io_buffer_size: 64 * 1024, ..CleanerParams::default() };
    let mut cleaner = new_cleaner(&fx, 1 << 20, params);
    let ((next, stats), lines) = capture_log(|| do_clean(&mut cleaner, &log, 0, end, T0).expect("clean"));
    assert_eq!(next, end);
    let warnings = lines.into_iter().filter(|(level, _)| *level == ::log::Level::Warn).map(|(_, l)| l).collect();
    (stats, warnings, all_batches(&log), good)
}

/// Applies `f` to each entry (relative offset, position) of an offset index's bytes.
fn each_entry(bytes: &mut [u8], f: impl Fn(usize, u32, u32, &[u8]) -> (u32, u32)) {
    let original = bytes.to_vec();
    for (e, entry) in bytes.chunks_exact_mut(8).enumerate() {
        let relative = u32::from_be_bytes(entry[..4].try_into().unwrap());
        let position = u32::from_be_bytes(entry[4..].try_into().unwrap());
        let (relative, position) = f(e, relative, position, &original);
        entry[..4].copy_from_slice(&relative.to_be_bytes());
        entry[4..].copy_from_slice(&position.to_be_bytes());
    }
}

/// What a clean that distrusted its index shows: nothing skipped, one warning for the segment,
/// and the log a clean reading every batch leaves.
fn assert_read_on_without_skipping(
    stats: &CleanerStats,
    warnings: &[String],
    cleaned: &[BatchView],
    good: &[BatchView],
) {
    assert_eq!(stats.bytes_skipped, 0);
    assert_eq!(warnings.iter().filter(|l| l.contains("without skipping")).count(), 1, "{warnings:?}");
    assert_eq!(cleaned, good);
}

/// Index entries naming a later batch than their offset's (skipping there would drop records
/// not superseded) are not trusted: the rewrite warns once and reads the segment on, and the
/// result is the same.
#[test]
fn an_index_entry_naming_a_later_batch_is_not_trusted() {
    let (stats, warnings, cleaned, good) = clean_with_edited_index(|bytes| {
        let last = bytes.len() / 8 - 1;
        each_entry(bytes, |e, relative, position, original| {
            let later = original[(e + 1).min(last) * 8 + 4..(e + 1).min(last) * 8 + 8].try_into().unwrap();
            (relative, if e < last { u32::from_be_bytes(later) } else { position })
        });
    });
    assert_read_on_without_skipping(&stats, &warnings, &cleaned, &good);
}

/// Index entries naming positions inside batches (no batch header there) are not trusted
/// either, and the clean goes on: it must not fail on bytes the index points it to. (The last
/// entry stays: finding the segment's end reads there, skips or not.)
#[test]
fn an_index_entry_naming_no_batch_is_not_trusted() {
    let (stats, warnings, cleaned, good) = clean_with_edited_index(|bytes| {
        let last = bytes.len() / 8 - 1;
        each_entry(bytes, |e, relative, position, _| (relative, if e < last { position + 4 } else { position }));
    });
    assert_read_on_without_skipping(&stats, &warnings, &cleaned, &good);
}

/// Kafka before 4.0 indexed an append of several batches by the append's last offset and its
/// first batch's position (KAFKA-806): entries whose offset lies past their batch's last
/// offset. The batch named still starts the run's end, so the skips go on, without a warning.
#[test]
fn index_entries_of_kafka_before_4_still_allow_skips() {
    let (stats, warnings, cleaned, good) = clean_with_edited_index(|bytes| {
        each_entry(bytes, |_, relative, position, _| (relative + (PER_BATCH / 2) as u32, position));
    });
    assert!(stats.bytes_skipped > 100_000, "{stats:?}");
    assert!(warnings.iter().all(|l| !l.contains("without skipping")), "{warnings:?}");
    assert_eq!(cleaned, good);
}
