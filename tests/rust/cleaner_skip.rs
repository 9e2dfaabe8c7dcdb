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

/// An offset index entry naming the wrong batch is not trusted: the rewrite reads on from
/// where it was, warns, and the result is the same.
#[test]
fn an_index_entry_naming_another_batch_is_not_trusted() {
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
    // Every entry of the first segment's index now names the position of the entry before it
    // (positions stay in order, so the index still loads).
    let index = fx.dir.join(format!("{:020}.index", 0));
    let mut bytes = std::fs::read(&index).expect("index");
    let entries = bytes.len() / 8;
    assert!(entries > 20, "{entries}");
    for e in (1..entries).rev() {
        let previous: [u8; 4] = bytes[(e - 1) * 8 + 4..e * 8].try_into().unwrap();
        bytes[e * 8 + 4..e * 8 + 8].copy_from_slice(&previous);
    }
    std::fs::write(&index, &bytes).expect("write index");
    let log = Arc::new(fx.open(&cfg));
    let end = log.log_end_offset();
    let params = CleanerParams { io_buffer_size: 64 * 1024, ..CleanerParams::default() };
    let mut cleaner = new_cleaner(&fx, 1 << 20, params);
    let ((next, stats), lines) = capture_log(|| do_clean(&mut cleaner, &log, 0, end, T0).expect("clean"));
    assert_eq!(next, end);
    assert_eq!(stats.bytes_skipped, 0);
    assert!(lines.iter().any(|(_, l)| l.contains("reads on without skipping")), "{lines:?}");
    assert_eq!(all_batches(&log), good);
}
