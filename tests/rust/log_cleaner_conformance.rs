//! The `LogCleanerTest` behaviours of section 10 that `log_cleaner.rs` does not cover: the
//! transactional cases (transactions spanning segments, marker retention with empty batches,
//! sequence reuse, several passes over aborted transactions, data keys equal to marker keys),
//! the producer's last sequence across cleanings and a reload, buffers growing to batches
//! larger than the I/O buffer or the topic limit (and a corrupt header found there), grouping
//! after loading an empty index, a sparse offset map, a segment whose offsets overflow (split,
//! then cleaned) and KAFKA-4298 message sets (legacy wrappers whose inner messages have
//! another magic).
//!
//! Kafka's tests call `buildOffsetMap` / `cleanSegments` with a fake offset map and clean at
//! `Long.MaxValue`-like times. Here every clean is a `Cleaner::do_clean` over a real map, so
//! "pretend these keys are superseded" becomes "append newer values for these keys". The
//! cleaner reads the log's producer state and `.txnindex` files as Kafka's does, so a producer
//! stays active (its last batch kept) until `remove_expired_producers` runs, as Kafka's
//! periodic expiry check would; `delete.retention.ms` is short so that a second clean can pass
//! a delete horizon.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kafkalog::cleaner::offset_map::BYTES_PER_ENTRY;
use kafkalog::cleaner::{group_segments_by_size, Cleaner};
use kafkalog::error::Error;
use kafkalog::index::transaction_index::AbortedTxn;
use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::record::builder::{write_end_txn_marker, BatchBuilder};
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::legacy::write_legacy_entry;
use kafkalog::record::{BatchHeader, CompressionType, TimestampType};
use kafkalog::{LogConfig, UnifiedLog};

use crate::common::cleaner::{
    active_base, all_batches, big_cleaner, compact_config, do_clean, keys_in_log, last_offsets_per_batch, make_cleaner,
    offsets_in_log, open_shared, put, put_batch, put_int, put_marker, segment_batches,
};
use crate::common::{batch, capture_log, decode, files_with_suffix, lines_at, segment_file_name, Fixture, RecSpec, T0};

const MAX: i64 = i32::MAX as i64;

// -- helpers (the shared ones are in `common::cleaner`; Kafka's producer appenders) --------------

/// Kafka's `runTwoPassClean`: a clean at `now`, then one past the delete horizon it stamped.
fn two_pass_clean(cleaner: &mut Cleaner, log: &Arc<UnifiedLog>, first_dirty: i64, now: i64) -> i64 {
    let upper = active_base(log);
    do_clean(cleaner, log, first_dirty, upper, now).unwrap();
    let retention = log.config().delete_retention_ms;
    do_clean(cleaner, log, first_dirty, upper, now + retention + 1).unwrap().0
}

/// Kafka's `appendIdempotentAsLeader` / `appendTransactionalAsLeader`: each call appends one
/// batch of the producer (epoch 0) with key = value = each key, its sequence continuing from
/// the previous call's.
struct Producer {
    id: i64,
    sequence: i32,
    transactional: bool,
}

impl Producer {
    fn idempotent(id: i64) -> Self {
        Producer { id, sequence: 0, transactional: false }
    }

    fn transactional(id: i64) -> Self {
        Producer { id, sequence: 0, transactional: true }
    }

    /// Appends the batch; returns its (first, last) offsets.
    fn append(&mut self, log: &UnifiedLog, keys: &[i64]) -> (i64, i64) {
        let strings: Vec<String> = keys.iter().map(i64::to_string).collect();
        let specs: Vec<RecSpec<'_>> = strings.iter().map(|s| (Some(s.as_bytes()), Some(s.as_bytes()), T0)).collect();
        let header = BatchHeader {
            base_offset: log.log_end_offset(),
            producer_id: self.id,
            producer_epoch: 0,
            base_sequence: self.sequence,
            is_transactional: self.transactional,
            ..BatchHeader::default()
        };
        self.sequence += keys.len() as i32;
        put_batch(log, header, &specs)
    }
}

fn commit(log: &UnifiedLog, producer_id: i64) -> i64 {
    put_marker(log, producer_id, ControlRecordType::Commit)
}

fn abort(log: &UnifiedLog, producer_id: i64) -> i64 {
    put_marker(log, producer_id, ControlRecordType::Abort)
}

/// Kafka's `batchBaseOffsetsInLog`.
fn batch_bases(log: &UnifiedLog) -> Vec<i64> {
    all_batches(log).iter().map(|b| b.base).collect()
}

/// Kafka's `lastSequencesInLog`: each producer's last sequence among its data batches.
fn last_sequences(log: &UnifiedLog) -> BTreeMap<i64, i32> {
    all_batches(log)
        .iter()
        .filter(|b| !b.control && b.producer_id >= 0)
        .map(|b| (b.producer_id, b.base_sequence + (b.last - b.base) as i32))
        .collect()
}

/// The aborted transactions of every `.txnindex` under `dir`, as (producer id, first offset,
/// last offset, last stable offset) (Kafka's `collectAbortedTransactions(0, LEO)` without the
/// entries Kafka writes on append, which kafkalog does not).
fn aborted_in_index(dir: &Path) -> Vec<(i64, i64, i64, i64)> {
    let mut out = Vec::new();
    for file in files_with_suffix(dir, ".txnindex") {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        assert_eq!(bytes.len() % 34, 0);
        for e in bytes.chunks(34) {
            let long = |at: usize| i64::from_be_bytes(e[at..at + 8].try_into().unwrap());
            assert_eq!(&e[..2], &[0, 0], "version 0");
            out.push((long(2), long(10), long(18), long(26)));
        }
    }
    out
}

/// Clean times: within a second of the data, so every producer is still active.
const NOW: i64 = T0 + 1000;

/// A compacted log with small segments and a one-second `delete.retention.ms`.
fn txn_config(segment_bytes: &str) -> LogConfig {
    compact_config(&[("internal.segment.bytes", segment_bytes), ("delete.retention.ms", "1000")])
}

// -- producer state through the clean ----------------------------------------------------------

/// testDuplicateCheckAfterCleaning, the cleaner's half: each producer's last batch keeps its
/// offsets and last sequence (emptied if need be), through the clean and a reload, and again
/// after a second clean. Kafka then appends the same batches again and checks they are
/// recognised as duplicates (same offsets returned); that half is not applicable: kafkalog has
/// no ProducerStateManager, so `append_as_leader` does no sequence or duplicate check (a
/// producer state rebuilt from these batch headers would find exactly these sequences).
#[test]
fn duplicate_check_after_cleaning_keeps_last_sequences() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "2048")]);
    let mut log = open_shared(&fx, &cfg);
    let (mut p1, mut p2, mut p3, mut p4) =
        (Producer::idempotent(1), Producer::idempotent(2), Producer::idempotent(3), Producer::idempotent(4));
    p1.append(&log, &[1, 2, 3]); // 0..2
    p2.append(&log, &[3, 1, 4]); // 3..5
    p3.append(&log, &[1, 4]); // 6, 7
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    let check = |log: &UnifiedLog| {
        assert_eq!(last_offsets_per_batch(log), vec![2, 5, 7]);
        assert_eq!(last_sequences(log), BTreeMap::from([(1, 2), (2, 2), (3, 1)]));
        assert_eq!(keys_in_log(log), vec![2, 3, 1, 4]);
        assert_eq!(offsets_in_log(log), vec![1, 3, 6, 7]);
    };
    check(&log);
    log.close().unwrap();
    drop(log);
    log = open_shared(&fx, &cfg);
    check(&log);

    p4.append(&log, &[2]); // 8
    log.roll().unwrap();
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(last_sequences(&log), BTreeMap::from([(1, 2), (2, 2), (3, 1), (4, 0)]));
    assert_eq!(last_offsets_per_batch(&log), vec![2, 5, 7, 8]);
    assert_eq!(keys_in_log(&log), vec![3, 1, 4, 2]);
    assert_eq!(offsets_in_log(&log), vec![3, 6, 7, 8]);
    let first = &all_batches(&log)[0];
    assert_eq!((first.producer_id, first.base_sequence, first.base, first.last, first.records.len()), (1, 0, 0, 2, 0));
    log.close().unwrap();
    drop(log);
    let log = open_shared(&fx, &cfg);
    assert_eq!(last_sequences(&log), BTreeMap::from([(1, 2), (2, 2), (3, 1), (4, 0)]));
}

// -- transactions ------------------------------------------------------------------------------

/// testMultiPassSegmentCleaningWithAbortedTransactions: a map of three keys needs three passes
/// over one segment; the aborted data goes in the first, its markers stay (and stay indexed)
/// while the pass still reads their data, lose their index entries once no data is left, and
/// go once their delete horizon has passed.
#[test]
fn multi_pass_segment_cleaning_with_aborted_transactions() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("delete.retention.ms", "50000")]);
    let log = open_shared(&fx, &cfg);
    let (mut p1, mut p2) = (Producer::transactional(1), Producer::transactional(2));
    p1.append(&log, &[1, 2]); // [0, 1]
    p2.append(&log, &[2, 3]); // [2, 3]
    p1.append(&log, &[3, 4]); // [4, 5]
    commit(&log, 1); // 6
    commit(&log, 2); // 7
    p1.append(&log, &[2, 3]); // [8, 9]
    abort(&log, 1); // 10
    p2.append(&log, &[4, 5]); // [11, 12]
    p1.append(&log, &[5, 6]); // [13, 14]
    commit(&log, 1); // 15
    abort(&log, 2); // 16
    p2.append(&log, &[6, 7]); // [17, 18]
    commit(&log, 2); // 19
    log.roll().unwrap();
    assert_eq!(log.log_end_offset(), 20);

    // Kafka's FakeOffsetMap(4) with load factor 0.75: three keys per pass.
    let mut cleaner = make_cleaner(&fx, 4 * BYTES_PER_ENTRY, 64 * 1024);
    assert_eq!(cleaner.map_capacity(), 3);
    let mut dirty = 0;
    let mut clean = |now: i64| {
        dirty = do_clean(&mut cleaner, &log, dirty, active_base(&log), now).unwrap().0;
        dirty
    };

    assert_eq!(clean(T0), 4);
    assert_eq!(batch_bases(&log), vec![0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]);
    assert_eq!(offsets_in_log(&log), vec![0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]);
    assert_eq!(aborted_in_index(&fx.dir), vec![(1, 8, 10, 11), (2, 11, 16, 17)]);

    assert_eq!(clean(T0), 14);
    assert_eq!(batch_bases(&log), vec![0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]);
    assert_eq!(offsets_in_log(&log), vec![0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]);
    assert_eq!(aborted_in_index(&fx.dir), vec![], "no aborted data left: nothing to index");

    assert_eq!(clean(T0 + 50_000), 20);
    assert_eq!(batch_bases(&log), vec![0, 2, 4, 6, 7, 13, 15, 17, 19]);
    assert_eq!(offsets_in_log(&log), vec![0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]);
    assert_eq!(aborted_in_index(&fx.dir), vec![]);
}

/// testCleanWithTransactionsSpanningSegments: transactions whose data is in one segment and
/// whose markers are in the next; a clean of the first segment alone already knows which
/// were aborted, and a second clean (bounded by two new open transactions) finishes the job.
#[test]
fn clean_with_transactions_spanning_segments() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    let (mut p1, mut p2, mut p3) = (Producer::transactional(1), Producer::transactional(2), Producer::transactional(3));
    p1.append(&log, &[1, 2]);
    p3.append(&log, &[2, 3]);
    p2.append(&log, &[3, 4]);
    log.roll().unwrap();
    p2.append(&log, &[5, 6]);
    p3.append(&log, &[6, 7]);
    p1.append(&log, &[7, 8]);
    abort(&log, 2);
    p3.append(&log, &[8, 9]);
    commit(&log, 3);
    p1.append(&log, &[9, 10]);
    abort(&log, 1);
    let mut cleaner = big_cleaner(&fx);
    let (dirty, _) = do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(dirty, 6, "only the first segment was cleanable");
    assert_eq!(keys_in_log(&log), vec![2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]);
    log.roll().unwrap();
    p2.append(&log, &[11]);
    p1.append(&log, &[12]);
    do_clean(&mut cleaner, &log, dirty, active_base(&log), NOW).unwrap();
    assert_eq!(keys_in_log(&log), vec![2, 3, 6, 7, 8, 9, 11, 12]);
}

/// testCommitMarkerRetentionWithEmptyBatch: a producer's last batch stays as an empty batch
/// (and with it the COMMIT marker of its transaction) until the producer writes again; then the
/// empty batch goes, and the marker goes two cleans later (a horizon, then past it).
#[test]
fn commit_marker_retention_with_empty_batch() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &txn_config("256"));
    let (mut p1, mut p2) = (Producer::transactional(1), Producer::transactional(2));
    p1.append(&log, &[2, 3]); // 0, 1
    log.roll().unwrap();
    p2.append(&log, &[2, 3]); // 2, 3
    commit(&log, 2); // 4
    log.roll().unwrap();
    put_int(&log, 2, 2); // 5
    put_int(&log, 3, 3); // 6
    commit(&log, 1); // 7
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);

    let dirty = do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap().0;
    assert_eq!(keys_in_log(&log), vec![2, 3]);
    assert_eq!(offsets_in_log(&log), vec![4, 5, 6, 7]);
    assert_eq!(last_offsets_per_batch(&log), vec![1, 3, 4, 5, 6, 7]);

    // Cleaned again (from the log start: a clean of an empty dirty range recopies nothing),
    // the empty batches stay: they hold their producers' last sequences.
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!((dirty, offsets_in_log(&log)), (8, vec![4, 5, 6, 7]));
    assert_eq!(last_offsets_per_batch(&log), vec![1, 3, 4, 5, 6, 7]);

    p2.append(&log, &[1]); // 8
    commit(&log, 2); // 9
    log.roll().unwrap();
    do_clean(&mut cleaner, &log, dirty, active_base(&log), NOW).unwrap();
    assert_eq!(keys_in_log(&log), vec![2, 3, 1]);
    assert_eq!(offsets_in_log(&log), vec![4, 5, 6, 7, 8, 9]);
    assert_eq!(last_offsets_per_batch(&log), vec![1, 4, 5, 6, 7, 8, 9]);
    let marker = all_batches(&log).into_iter().find(|b| b.base == 4).unwrap();
    assert_eq!(marker.horizon, None, "its transaction's (empty) batch was read in this clean");

    two_pass_clean(&mut cleaner, &log, 0, NOW);
    assert_eq!(keys_in_log(&log), vec![2, 3, 1]);
    assert_eq!(offsets_in_log(&log), vec![5, 6, 7, 8, 9]);
    assert_eq!(last_offsets_per_batch(&log), vec![1, 5, 6, 7, 8, 9]);
}

/// testCommittedTransactionSpanningSegments: data in one segment, its COMMIT in the next: both
/// stay through two cleans (the data is the producer's last batch, the marker has data).
#[test]
fn committed_transaction_spanning_segments() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &txn_config("128"));
    Producer::transactional(1).append(&log, &[1]);
    log.roll().unwrap();
    commit(&log, 1);
    log.roll().unwrap();
    two_pass_clean(&mut big_cleaner(&fx), &log, 0, NOW);
    assert_eq!(offsets_in_log(&log), vec![0, 1]);
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1]);
}

/// testAbortedTransactionSpanningSegments: aborted data in one segment, its ABORT in the next:
/// the data batch stays empty (the producer's last), the marker stays (its data was read),
/// however late the clean.
#[test]
fn aborted_transaction_spanning_segments() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &txn_config("128"));
    Producer::transactional(1).append(&log, &[1]);
    log.roll().unwrap();
    abort(&log, 1);
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(offsets_in_log(&log), vec![1]);
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1]);
    // Kafka cleans at Long.MaxValue here; any time within the producer's activity shows it.
    do_clean(&mut cleaner, &log, 0, active_base(&log), T0 + 3_600_000).unwrap();
    assert_eq!(offsets_in_log(&log), vec![1]);
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1]);
    assert_eq!(aborted_in_index(&fx.dir), vec![(1, 0, 1, 2)]);
}

/// testDeletedBatchesWithNoMessagesRead: with 100-byte buffers (one batch per read), aborted
/// data is dropped whole, the ABORT marker stays for one clean, gets a horizon in the next and
/// goes in the one after.
#[test]
fn deleted_batches_with_no_messages_read() {
    let fx = Fixture::new();
    let cfg = compact_config(&[
        ("max.message.bytes", "100"),
        ("internal.segment.bytes", "1000"),
        ("delete.retention.ms", "1000"),
    ]);
    let log = open_shared(&fx, &cfg);
    let mut p = Producer::transactional(1);
    p.append(&log, &[1]); // 0
    abort(&log, 1); // 1
    p.append(&log, &[2]); // 2
    p.append(&log, &[2]); // 3
    commit(&log, 1); // 4
    log.roll().unwrap();
    let mut cleaner = make_cleaner(&fx, 1 << 20, 100);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(keys_in_log(&log), vec![2]);
    assert_eq!(offsets_in_log(&log), vec![1, 3, 4]);
    two_pass_clean(&mut cleaner, &log, 0, NOW);
    assert_eq!(keys_in_log(&log), vec![2]);
    assert_eq!(offsets_in_log(&log), vec![3, 4]);
}

/// testEmptyBatchRemovalWithSequenceReuse: two transactions of one producer both starting at
/// sequence 0 (as the group coordinator writes them): the older data batch goes, the newer
/// stays empty as the producer's last; the older COMMIT then gets a horizon and goes.
#[test]
fn empty_batch_removal_with_sequence_reuse() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &txn_config("2048"));
    Producer::transactional(1).append(&log, &[1]); // 0, sequence 0
    commit(&log, 1); // 1
    Producer::transactional(1).append(&log, &[2]); // 2, sequence 0 again
    commit(&log, 1); // 3
    put_int(&log, 1, 1); // 4
    put_int(&log, 2, 1); // 5
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(offsets_in_log(&log), vec![1, 3, 4, 5]);
    assert_eq!(last_offsets_per_batch(&log), vec![1, 2, 3, 4, 5]);
    two_pass_clean(&mut cleaner, &log, 0, NOW);
    assert_eq!(offsets_in_log(&log), vec![3, 4, 5]);
    assert_eq!(last_offsets_per_batch(&log), vec![2, 3, 4, 5]);
}

/// testAbortMarkerRetentionWithEmptyBatch: the aborted batch stays empty (the producer's last)
/// and its ABORT marker and index entry stay with it; once the producer writes again the empty
/// batch goes, the marker stays one more clean (it read the empty batch), then gets a horizon
/// and goes, and the index entry with it.
///
/// Kafka's test appends the producer's next batch as an open transaction and cleans past it
/// through `doClean`, which trusts its caller's bound; kafkalog's `do_clean` itself stops at
/// the first open transaction (there is no producer state to give the manager the last stable
/// offset), so here that transaction is shown not to be cleaned, then committed; the COMMIT
/// (offset 4) stays throughout.
#[test]
fn abort_marker_retention_with_empty_batch() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &txn_config("256"));
    let mut p = Producer::transactional(1);
    p.append(&log, &[2, 3]); // 0, 1
    abort(&log, 1); // 2
    log.roll().unwrap();
    let indexed = vec![(1, 0, 2, 3)];
    let mut cleaner = big_cleaner(&fx);

    let dirty = do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap().0;
    assert_eq!(aborted_in_index(&fx.dir), indexed);
    assert_eq!(keys_in_log(&log), Vec::<i64>::new());
    assert_eq!(offsets_in_log(&log), vec![2], "the abort marker is retained");
    assert_eq!(last_offsets_per_batch(&log), vec![1, 2], "the empty batch is retained");

    two_pass_clean(&mut cleaner, &log, 0, NOW);
    assert_eq!(aborted_in_index(&fx.dir), indexed);
    assert_eq!(offsets_in_log(&log), vec![2]);
    assert_eq!(last_offsets_per_batch(&log), vec![1, 2]);

    p.append(&log, &[1]); // 3, an open transaction
    log.roll().unwrap();
    let (end, _) = do_clean(&mut cleaner, &log, dirty, active_base(&log), NOW).unwrap();
    assert_eq!(end, dirty, "nothing at or past the open transaction is cleaned");
    assert_eq!(last_offsets_per_batch(&log), vec![1, 2, 3]);
    commit(&log, 1); // 4
    log.roll().unwrap();

    do_clean(&mut cleaner, &log, dirty, active_base(&log), NOW).unwrap();
    assert_eq!(aborted_in_index(&fx.dir), indexed, "the marker read the empty batch: still indexed");
    assert_eq!(keys_in_log(&log), vec![1]);
    assert_eq!(offsets_in_log(&log), vec![2, 3, 4], "the abort marker is not gone yet");
    assert_eq!(last_offsets_per_batch(&log), vec![2, 3, 4], "the empty batch is gone");

    two_pass_clean(&mut cleaner, &log, 0, NOW);
    assert_eq!(keys_in_log(&log), vec![1]);
    assert_eq!(offsets_in_log(&log), vec![3, 4], "the abort marker is gone");
    assert_eq!(last_offsets_per_batch(&log), vec![3, 4]);
    assert_eq!(aborted_in_index(&fx.dir), vec![], "no aborted transaction is kept in the index");
}

/// testCleaningWithKeysConflictingWithTxnMarkerKeys: a data record whose key is the bytes of a
/// COMMIT marker's key does not make the cleaner drop or confuse the real marker.
#[test]
fn cleaning_with_keys_conflicting_with_txn_marker_keys() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("internal.segment.bytes", "1024")]));
    Producer::transactional(1).append(&log, &[1]); // 0
    commit(&log, 1); // 1
                     // Key = the COMMIT control record key: version 0, type 1.
    let marker_key = [0u8, 0, 0, 1];
    let header = BatchHeader { producer_id: 2, producer_epoch: 0, is_transactional: true, ..BatchHeader::default() };
    put_batch(&log, header, &[(Some(&marker_key), Some(b"foo"), T0)]); // 2
    commit(&log, 2); // 3
    log.roll().unwrap();
    assert_eq!(offsets_in_log(&log), vec![0, 1, 2, 3]);
    let mut cleaner = make_cleaner(&fx, 10 * BYTES_PER_ENTRY, 64 * 1024);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(last_offsets_per_batch(&log), vec![0, 1, 2, 3]);
    assert_eq!(offsets_in_log(&log), vec![0, 1, 2, 3]);
}

// -- buffers -----------------------------------------------------------------------------------

/// A log of `n`-byte records (key = offset) filling two segments of 16 records, written with
/// max.message.bytes = 2n.
fn log_of_large_messages(fx: &Fixture, n: usize) -> (Arc<UnifiedLog>, LogConfig) {
    let seg = (n * 16).to_string();
    let max = (n * 2).to_string();
    let cfg = compact_config(&[("internal.segment.bytes", &seg), ("max.message.bytes", &max)]);
    let log = open_shared(fx, &cfg);
    let big = vec![0u8; n];
    while log.number_of_segments() < 2 {
        put(&log, Some(log.log_end_offset().to_string().as_bytes()), Some(&big), T0);
    }
    assert_eq!(keys_in_log(&log), (0..log.log_end_offset()).collect::<Vec<_>>());
    (log, cfg)
}

/// Newer small values for keys 1, 3, 5, 7, 9 (Kafka's test puts them in its fake map).
fn supersede_odd_keys(log: &UnifiedLog) {
    for k in [1, 3, 5, 7, 9] {
        put_int(log, k, k);
    }
    log.roll().unwrap();
}

/// testLargeMessage: records of 64 KiB, under the topic's max.message.bytes, with 1 KiB
/// cleaner buffers: the buffers grow and the superseded keys go.
#[test]
fn large_message() {
    let fx = Fixture::new();
    let (log, _) = log_of_large_messages(&fx, 64 * 1024);
    let first_segment_keys: Vec<i64> = segment_batches(&log.segments()[0])
        .iter()
        .flat_map(|b| b.records.iter().map(|r| String::from_utf8_lossy(r.2.as_ref().unwrap()).parse().unwrap()))
        .collect();
    supersede_odd_keys(&log);
    let mut cleaner = make_cleaner(&fx, 1 << 20, 1024);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    let remaining: Vec<i64> = segment_batches(&log.segments()[0])
        .iter()
        .flat_map(|b| b.records.iter().map(|r| String::from_utf8_lossy(r.2.as_ref().unwrap()).parse().unwrap()))
        .collect();
    let want: Vec<i64> = first_segment_keys.into_iter().filter(|k| ![1, 3, 5, 7, 9].contains(k)).collect();
    assert_eq!(remaining, want);
}

/// testMessageLargerThanMaxMessageSize: the same after the topic's max.message.bytes was
/// lowered below the records' size: the buffers grow past it to the batch's size.
#[test]
fn message_larger_than_max_message_size() {
    let fx = Fixture::new();
    let n = 64 * 1024;
    let (log, _) = log_of_large_messages(&fx, n);
    let seg = (n * 16).to_string();
    let half = (n / 2).to_string();
    log.update_config(compact_config(&[("internal.segment.bytes", &seg), ("max.message.bytes", &half)])).unwrap();
    supersede_odd_keys(&log);
    let mut cleaner = make_cleaner(&fx, 1 << 20, 1024);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    let keys = keys_in_log(&log);
    let leo_before = keys.iter().filter(|k| **k >= 10).count();
    assert!(leo_before > 0);
    let old: Vec<i64> = keys[..keys.len() - 5].to_vec();
    assert!(old.iter().all(|k| ![1, 3, 5, 7, 9].contains(k)), "{old:?}");
    assert_eq!(&keys[keys.len() - 5..], &[1, 3, 5, 7, 9]);
}

/// testMessageLargerThanMaxMessageSizeWithCorruptHeader: a batch larger than the topic's limit
/// whose magic byte is damaged: once the buffers reach the limit, the clean fails with
/// CorruptRecord instead of growing further.
#[test]
fn message_larger_than_max_message_size_with_corrupt_header() {
    let fx = Fixture::new();
    let n = 64 * 1024;
    let (log, _) = log_of_large_messages(&fx, n);
    let seg = (n * 16).to_string();
    let half = (n / 2).to_string();
    log.update_config(compact_config(&[("internal.segment.bytes", &seg), ("max.message.bytes", &half)])).unwrap();
    supersede_odd_keys(&log);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(fx.dir.join(segment_file_name(0, ".log"))).unwrap();
        f.write_all_at(&[0xff], 16).unwrap();
    }
    let before: Vec<Vec<u8>> = log.segments().iter().map(|s| std::fs::read(s.path()).unwrap()).collect();
    let mut cleaner = make_cleaner(&fx, 1 << 20, 1024);
    let (result, lines) = capture_log(|| do_clean(&mut cleaner, &log, 0, active_base(&log), NOW));
    let err = result.expect_err("corrupt magic");
    assert!(matches!(err, Error::CorruptRecord { .. }), "{err:?}");
    assert!(err.to_string().contains("Invalid magic found in record: -1"), "{err}");
    let grown: Vec<&str> = lines_at(&lines, ::log::Level::Info).into_iter().filter(|l| l.contains("Growing")).collect();
    assert!(grown.last().is_some_and(|l| l.ends_with(&format!("to {half} bytes."))), "{grown:?}");
    let after: Vec<Vec<u8>> = log.segments().iter().map(|s| std::fs::read(s.path()).unwrap()).collect();
    assert_eq!(before, after, "nothing replaced");
    assert_eq!(files_with_suffix(&fx.dir, ".cleaned"), Vec::<String>::new());
}

// -- grouping and the offset map ---------------------------------------------------------------

/// testSegmentGroupingFollowingLoadOfZeroIndex: a segment whose offset index is empty (every
/// batch below index.interval.bytes) and whose offsets span more than `i32::MAX` from the
/// first segment's base: after a reload (an empty index file) grouping still splits there.
#[test]
fn segment_grouping_following_load_of_zero_index() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "400"), ("index.interval.bytes", "400")]);
    let log = open_shared(&fx, &cfg);
    put(&log, Some(b"hello"), Some(b"hello"), T0); // 0
    put(&log, Some(b"hello"), Some(b"hello"), T0); // 1
    log.roll().unwrap();
    for offset in [MAX / 2, MAX + 1] {
        log.append_as_follower(&batch(offset, CompressionType::None, &[(Some(b"hello"), Some(b"hello"), T0)])).unwrap();
    }
    log.close().unwrap();
    drop(log);
    let log = open_shared(&fx, &cfg);
    assert_eq!(log.number_of_segments(), 2);
    assert!(log.log_end_offset() - 1 - log.log_start_offset() > MAX);
    let last = log.segments().last().unwrap().clone();
    assert_eq!(last.offset_index().unwrap().get().unwrap().last_offset(), last.base_offset(), "an empty index");
    let groups = group_segments_by_size(&log.segments(), i32::MAX, i32::MAX, log.log_end_offset()).unwrap();
    assert_eq!(groups.len(), 2);
    for g in &groups {
        let span = g.last().unwrap().read_next_offset().unwrap() - 1 - g[0].base_offset();
        assert!(span <= MAX, "a group spans {span} offsets");
    }
    let bases: Vec<i64> = groups.iter().flatten().map(|s| s.base_offset()).collect();
    assert!(bases.windows(2).all(|w| w[0] < w[1]));
}

/// testBuildOffsetMapFakeLarge: two records seven million offsets apart in tiny segments (with
/// tiny indexes): the map holds both keys and ends at the second offset.
#[test]
fn build_offset_map_fake_large() {
    let fx = Fixture::new();
    let cfg = compact_config(&[("internal.segment.bytes", "120"), ("segment.index.bytes", "120")]);
    let log = open_shared(&fx, &cfg);
    let end = 7_206_178;
    for (key, offset) in [(0i64, 0i64), (1, end)] {
        let k = key.to_string();
        log.append_as_follower(&batch(offset, CompressionType::None, &[(Some(k.as_bytes()), Some(k.as_bytes()), T0)]))
            .unwrap();
    }
    log.roll().unwrap();
    let mut cleaner = big_cleaner(&fx);
    let (got_end, stats) = do_clean(&mut cleaner, &log, 0, end + 1, NOW).unwrap();
    assert_eq!(got_end, end + 1);
    assert_eq!(stats.map_messages_read, 2);
    assert_eq!(keys_in_log(&log), vec![0, 1]);
    let mut map = cleaner.into_offset_map();
    assert_eq!((map.latest_offset(), map.size()), (end, 2));
    assert_eq!((map.get(b"0"), map.get(b"1")), (0, end));
}

// -- offset overflow ---------------------------------------------------------------------------

/// Kafka's `LogTestUtils.initializeLogDirWithOverflowedSegment`: three segments written
/// directly (empty index files, so loading does not recover them), of which the second holds
/// offsets more than `i32::MAX` past its base. Every record has key = value = its offset.
fn write_log_dir_with_overflowed_segment(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let sample = |base: i64| -> Vec<u8> {
        let mut out = Vec::new();
        for offsets in [vec![base], vec![base + 1, base + 2], vec![base + MAX - 1]] {
            let strings: Vec<String> = offsets.iter().map(i64::to_string).collect();
            let specs: Vec<RecSpec<'_>> =
                strings.iter().map(|s| (Some(s.as_bytes()), Some(s.as_bytes()), T0)).collect();
            out.extend(batch(offsets[0], CompressionType::None, &specs));
        }
        out
    };
    let mut segments = vec![(0, sample(0))];
    let mut overflowed = sample(MAX);
    overflowed.extend(sample(2 * MAX));
    segments.push((MAX, overflowed));
    segments.push((3 * MAX, sample(3 * MAX)));
    for (base, bytes) in segments {
        std::fs::write(dir.join(segment_file_name(base, ".log")), bytes).unwrap();
        std::fs::write(dir.join(segment_file_name(base, ".index")), b"").unwrap();
        std::fs::write(dir.join(segment_file_name(base, ".timeindex")), b"").unwrap();
    }
}

/// Kafka's `LogTestUtils.hasOffsetOverflow`.
fn has_offset_overflow(log: &UnifiedLog) -> bool {
    log.segments().iter().any(|s| {
        let base = s.base_offset();
        segment_batches(s).iter().any(|b| b.last > base + MAX || b.base < base)
    })
}

/// testSegmentWithOffsetOverflow: a clean reaching a segment whose offsets overflow splits it
/// (one more segment, no record lost, no overflow left) and aborts; the next clean completes.
/// Kafka feeds a fake map saying every other key is superseded; here newer values of those
/// keys are appended after the old segments.
#[test]
fn segment_with_offset_overflow() {
    let fx = Fixture::new();
    write_log_dir_with_overflowed_segment(&fx.dir);
    let cfg = compact_config(&[("index.interval.bytes", "1"), ("file.delete.delay.ms", "1000")]);
    let options = LogOpenOptions { had_clean_shutdown: true, recovery_point: Some(i64::MAX), ..fx.options() };
    let log = Arc::new(UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap());
    assert!(has_offset_overflow(&log), "loaded without being split");
    let all_keys = keys_in_log(&log);
    assert_eq!(all_keys.len(), 16);
    // Supersede every other key, in a segment of its own after the old ones.
    log.roll().unwrap();
    let superseded: Vec<i64> = all_keys.iter().skip(1).step_by(2).copied().collect();
    for k in &superseded {
        put(&log, Some(k.to_string().as_bytes()), Some(b"newer"), T0);
    }
    log.roll().unwrap();
    let segments_before = log.number_of_segments();
    // The records of the overflowed segment, by offset (their keys are their offsets).
    let in_overflowed = |log: &UnifiedLog| -> Vec<i64> {
        all_batches(log)
            .iter()
            .flat_map(|b| b.records.iter().map(|r| r.0))
            .filter(|o| (MAX..3 * MAX).contains(o))
            .collect()
    };
    let overflowed = in_overflowed(&log);
    assert_eq!(overflowed.len(), 8);

    let mut cleaner = big_cleaner(&fx);
    let err = do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).expect_err("the split aborts the clean");
    assert!(matches!(err, Error::LogCleaningAborted { .. }), "{err:?}");
    assert_eq!(log.number_of_segments(), segments_before + 1, "the overflowed segment was split in two");
    assert!(!has_offset_overflow(&log));
    assert_eq!(in_overflowed(&log), overflowed, "the split keeps every record");
    assert_eq!(files_with_suffix(&fx.dir, ".cleaned"), Vec::<String>::new());
    assert_eq!(files_with_suffix(&fx.dir, ".swap"), Vec::<String>::new());

    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    let mut want: Vec<i64> = all_keys.iter().step_by(2).copied().collect();
    want.extend(&superseded);
    assert_eq!(keys_in_log(&log), want);
    assert!(!has_offset_overflow(&log));
    log.close().unwrap();
    drop(log);
    let reopened = fx.open(&cfg);
    assert_eq!(keys_in_log(&reopened), want);
}

/// A split carries the `.txnindex` entries: an overflowed segment holding two aborted
/// transactions, one in each part it splits into. Each part keeps the entry of the ABORT
/// marker it holds, so the aborted records stay hidden from `read_committed` between the split
/// and the clean that removes them (Kafka's split leaves the parts' indexes empty until a
/// recovery), and the next clean removes the aborted data.
#[test]
fn split_of_an_overflowed_segment_keeps_its_aborted_transactions() {
    let fx = Fixture::new();
    let far = MAX + 10;
    let txn_batch = |base: i64, pid: i64, key: &str| -> Vec<u8> {
        let header = BatchHeader {
            base_offset: base,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
            is_transactional: true,
            ..BatchHeader::default()
        };
        let mut b = BatchBuilder::new(header);
        b.append_next(T0, Some(key.as_bytes()), Some(b"aborted"), &[]).unwrap();
        b.build().unwrap()
    };
    let abort = |offset: i64, pid: i64| -> Vec<u8> {
        let mut out = Vec::new();
        write_end_txn_marker(&mut out, offset, T0, 0, pid, 0, ControlRecordType::Abort, 0).unwrap();
        out
    };
    let plain = |base: i64, key: &str| batch(base, CompressionType::None, &[(Some(key.as_bytes()), Some(b"kept"), T0)]);
    let mut overflowed = Vec::new();
    for part in [
        txn_batch(0, 7, "1"),
        abort(1, 7),
        plain(2, "2"),
        txn_batch(far, 8, "3"),
        abort(far + 1, 8),
        plain(far + 2, "4"),
    ] {
        overflowed.extend(part);
    }
    let entries = [AbortedTxn::new(7, 0, 1, 2), AbortedTxn::new(8, far, far + 1, far + 2)];
    let index: Vec<u8> = entries.iter().flat_map(AbortedTxn::to_bytes).collect();
    std::fs::create_dir_all(&fx.dir).unwrap();
    for (base, log_bytes, txn) in [(0, overflowed, index), (far + 3, plain(far + 3, "5"), Vec::new())] {
        std::fs::write(fx.dir.join(segment_file_name(base, ".log")), log_bytes).unwrap();
        std::fs::write(fx.dir.join(segment_file_name(base, ".index")), b"").unwrap();
        std::fs::write(fx.dir.join(segment_file_name(base, ".timeindex")), b"").unwrap();
        if !txn.is_empty() {
            std::fs::write(fx.dir.join(segment_file_name(base, ".txnindex")), txn).unwrap();
        }
    }
    let cfg = compact_config(&[("file.delete.delay.ms", "1000")]);
    let options = LogOpenOptions { had_clean_shutdown: true, recovery_point: Some(i64::MAX), ..fx.options() };
    let log = Arc::new(UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap());
    assert!(has_offset_overflow(&log), "loaded without being split");
    let aborted = |log: &UnifiedLog| log.aborted_transactions(0, log.log_end_offset()).unwrap();
    assert_eq!(aborted(&log), entries);

    let mut cleaner = big_cleaner(&fx);
    let err = do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).expect_err("the split aborts the clean");
    assert!(matches!(err, Error::LogCleaningAborted { .. }), "{err:?}");
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![0, far, far + 3]);
    assert_eq!(aborted(&log), entries, "every aborted transaction is still indexed");
    for (base, entry) in [(0, entries[0]), (far, entries[1])] {
        let bytes = std::fs::read(fx.dir.join(segment_file_name(base, ".txnindex"))).unwrap();
        assert_eq!(bytes, entry.to_bytes(), "part {base} holds the entry of its marker");
    }

    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    assert_eq!(keys_in_log(&log), vec![2, 4, 5], "the aborted records are gone");
    log.close().unwrap();
    drop(log);
    let reopened = fx.open(&cfg);
    assert_eq!(aborted(&reopened), entries, "the markers stay (their data was seen by this clean)");
}

// -- KAFKA-4298 --------------------------------------------------------------------------------

/// Kafka's `invalidCleanedMessage`: what cleaners before KAFKA-4298 could write, a magic 1
/// compressed wrapper (offset = its last inner offset) whose inner messages are magic 0 (no
/// timestamp), with relative inner offsets 0, 1, ... as magic 1 has. Key = the given key, value
/// = the record's absolute offset.
fn invalid_cleaned_message(first_offset: i64, keys: &[i64], codec: CompressionType) -> Vec<u8> {
    use std::io::Write;
    let mut inner = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let (key, value) = (k.to_string(), (first_offset + i as i64).to_string());
        write_legacy_entry(
            &mut inner,
            0,
            i as i64,
            -1,
            TimestampType::CreateTime,
            Some(key.as_bytes()),
            Some(value.as_bytes()),
        )
        .unwrap();
    }
    let compressed = match codec {
        CompressionType::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&inner).unwrap();
            gz.finish().unwrap()
        }
        other => panic!("no writer for {other:?} here"),
    };
    // The wrapper: offset, size, then crc, magic 1, attributes (codec), timestamp, null key,
    // value.
    let mut message = vec![1u8, codec.id()];
    message.extend_from_slice(&T0.to_be_bytes());
    message.extend_from_slice(&(-1i32).to_be_bytes());
    message.extend_from_slice(&(compressed.len() as i32).to_be_bytes());
    message.extend_from_slice(&compressed);
    let mut out = Vec::new();
    out.extend_from_slice(&(first_offset + keys.len() as i64 - 1).to_be_bytes());
    out.extend_from_slice(&(message.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&message).to_be_bytes());
    out.extend_from_slice(&message);
    out
}

/// testClientHandlingOfCorruptMessageSet: such a set reads back with every record at its
/// absolute offset (taken from the wrapper, whatever the inner magic) and no timestamp.
#[test]
fn client_handling_of_corrupt_message_set() {
    let keys: Vec<i64> = (1..10).collect();
    let set = invalid_cleaned_message(50, &keys, CompressionType::Gzip);
    let recs = decode(&set);
    assert_eq!(recs.len(), keys.len());
    for (r, k) in recs.iter().zip(&keys) {
        assert_eq!(String::from_utf8_lossy(r.value.as_ref().unwrap()).parse::<i64>().unwrap(), r.offset);
        assert_eq!(r.key.as_deref(), Some(k.to_string().as_bytes()));
        assert_eq!(r.timestamp, -1, "magic 0 records have no timestamp");
    }
}

/// testCleanCorruptMessageSet: a log holding two KAFKA-4298 sets (one with duplicate keys, one
/// without) is cleaned into batches whose records all have the batch's magic (v2, as Kafka 4
/// rewrites every legacy batch it cleans) at their original offsets.
#[test]
fn clean_corrupt_message_set() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("compression.type", "gzip")]));
    // Offsets 25..28 with keys 0, 1, 0, 1; then a gap, and offsets 50, 51 with keys 3, 4.
    log.append_as_follower(&invalid_cleaned_message(25, &[0, 1, 0, 1], CompressionType::Gzip)).unwrap();
    log.append_as_follower(&invalid_cleaned_message(50, &[3, 4], CompressionType::Gzip)).unwrap();
    log.roll().unwrap();
    let mut cleaner = make_cleaner(&fx, 10 * BYTES_PER_ENTRY, 64 * 1024);
    do_clean(&mut cleaner, &log, 0, active_base(&log), NOW).unwrap();
    let batches = all_batches(&log);
    assert!(!batches.is_empty());
    let mut offsets = Vec::new();
    for b in &batches {
        assert_eq!(b.magic, 2, "{b:?}");
        for r in &b.records {
            assert_eq!(String::from_utf8_lossy(r.3.as_ref().unwrap()).parse::<i64>().unwrap(), r.0);
            offsets.push(r.0);
        }
    }
    assert_eq!(offsets, vec![27, 28, 50, 51]);
    // The rebuilt batches are whole v2 batches (valid CRCs) that any client decodes.
    let bytes = std::fs::read(fx.dir.join(segment_file_name(0, ".log"))).unwrap();
    let recs = decode(&bytes);
    assert!(recs.iter().all(|r| r.timestamp == -1));
    assert_eq!(recs.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![27, 28, 50, 51]);
}
