//! A segment's `.txnindex` through its life with the log (Kafka's `LogSegment` and `LocalLog`
//! keep their `TransactionIndex` with the other files): created on the first aborted
//! transaction, renamed `.deleted` and unlinked with its segment, cut by truncation and by
//! recovery, and read across segments by `collect_aborted_transactions` (Kafka's
//! `LocalLog.collectAbortedTransactions`).

use kafkalog::index::transaction_index::{AbortedTxn, ENTRY_SIZE};
use kafkalog::log::unified_log::{LogOpenOptions, UnifiedLog};
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::BatchHeader;
use kafkalog::Error;

use crate::common::cleaner::{
    active_base, big_cleaner, compact_config, do_clean, open_shared, put_batch, put_int, put_marker,
};
use crate::common::{append_values, config, segment_file_name, Fixture, T0};

const TEN: [&str; 10] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

/// One `.txnindex` entry's bytes.
fn entry(producer_id: i64, first_offset: i64, last_offset: i64) -> Vec<u8> {
    let mut out = Vec::new();
    AbortedTxn::new(producer_id, first_offset, last_offset, last_offset + 1).write_to(&mut out);
    out
}

fn abort(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn::new(producer_id, first, last, lso)
}

/// Indexes `txn` in the segment at `base` (what producer state will do at the ABORT marker).
fn index_in(log: &UnifiedLog, base: i64, txn: AbortedTxn) {
    let segment = log.segments().into_iter().find(|s| s.base_offset() == base).expect("segment");
    segment.update_txn_index(txn).unwrap();
}

/// Transactional data of producer 7 (first sequence `seq`) or 8, `n` records, as leader.
fn put_txn_leader(log: &UnifiedLog, producer_id: i64, seq: i32, n: usize) {
    let header = BatchHeader {
        producer_id,
        producer_epoch: 0,
        base_sequence: seq,
        is_transactional: true,
        ..BatchHeader::default()
    };
    let mut b = kafkalog::record::builder::BatchBuilder::new(header);
    for _ in 0..n {
        b.append_next(T0, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    log.append_as_leader(&mut b.build().unwrap(), 0).unwrap();
}

/// One segment whose producers abort three transactions, as a broker writes them: the ABORT
/// markers at 5, 15 and 25 index `entry(7, 0, 5)`, `entry(8, 11, 15)` and `entry(7, 20, 25)`;
/// the log ends at 26, after the last marker.
fn three_aborted_transactions(log: &UnifiedLog) {
    put_txn_leader(log, 7, 0, 5); // 0..=4
    log.append_txn_marker(7, 0, false, 0, None).unwrap(); // 5
    append_values(log, T0, &TEN[..5]); // 6..=10
    put_txn_leader(log, 8, 0, 4); // 11..=14
    log.append_txn_marker(8, 0, false, 0, None).unwrap(); // 15
    append_values(log, T0, &TEN[..4]); // 16..=19
    put_txn_leader(log, 7, 5, 5); // 20..=24
    log.append_txn_marker(7, 0, false, 0, None).unwrap(); // 25
}

/// Three segments of ten records each: bases 0, 10 and 20, the log end at 30.
fn three_segments(fx: &Fixture) -> UnifiedLog {
    let log = fx.open(&config(&[("file.delete.delay.ms", "1000")]));
    for n in 0..3 {
        append_values(&log, T0, &TEN);
        if n < 2 {
            log.roll().unwrap();
        }
    }
    log
}

#[test]
fn truncation_cuts_the_aborted_transactions_at_or_above_the_new_end() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    let txn_index = fx.dir.join(format!("{:020}.txnindex", 0));
    {
        let log = fx.open(&cfg);
        three_aborted_transactions(&log);
        log.close().unwrap();
    }
    assert_eq!(std::fs::read(&txn_index).unwrap(), [entry(7, 0, 5), entry(8, 11, 15), entry(7, 20, 25)].concat());
    let log = fx.open(&cfg);
    assert!(log.truncate_to(20).unwrap());
    assert_eq!(std::fs::read(&txn_index).unwrap(), [entry(7, 0, 5), entry(8, 11, 15)].concat());
    // Kafka cuts at the first entry whose marker is at or above the offset: 15 goes with 10.
    assert!(log.truncate_to(10).unwrap());
    assert_eq!(std::fs::read(&txn_index).unwrap(), entry(7, 0, 5));
    assert!(log.truncate_to(0).unwrap());
    assert_eq!(std::fs::metadata(&txn_index).unwrap().len(), 0);
    assert_eq!(ENTRY_SIZE, 34);
}

/// The index is created by the first aborted transaction only (Kafka's lazily created file),
/// stays with its segment at roll, and goes `.deleted` then away with it; truncation into an
/// earlier segment deletes the later segments' indexes and cuts the kept one's.
#[test]
fn the_index_lives_and_dies_with_its_segment() {
    let fx = Fixture::new();
    let log = three_segments(&fx);
    let file = |base: i64, suffix: &str| fx.dir.join(segment_file_name(base, suffix));
    assert!(!file(0, ".txnindex").exists(), "no aborted transaction: no file");
    index_in(&log, 0, abort(1, 2, 5, 6));
    index_in(&log, 10, abort(2, 12, 15, 16));
    index_in(&log, 20, abort(3, 21, 25, 26));
    log.flush().unwrap();
    for base in [0, 10, 20] {
        assert_eq!(std::fs::metadata(file(base, ".txnindex")).unwrap().len(), 34, "segment {base}");
    }
    // An out-of-order entry is refused, naming the file, and nothing is written.
    let err = log.segments()[2].update_txn_index(abort(4, 20, 25, 26)).unwrap_err();
    assert!(
        matches!(err, Error::InvalidOffset { .. }) && err.to_string().contains(&segment_file_name(20, ".txnindex"))
    );

    // Truncation into segment 10: segment 20 goes, segment 10 loses its entry at 15.
    assert!(log.truncate_to(14).unwrap());
    assert_eq!(std::fs::metadata(file(10, ".txnindex")).unwrap().len(), 0);
    assert!(file(20, ".txnindex.deleted").exists() && !file(20, ".txnindex").exists());
    assert_eq!(log.aborted_transactions(0, 14).unwrap(), vec![abort(1, 2, 5, 6)]);

    // Retention takes segment 0 with its index: `.deleted` first, unlinked after the delay.
    log.roll().unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.delete_records(10).unwrap();
    log.delete_old_segments().unwrap();
    assert!(file(0, ".txnindex.deleted").exists() && !file(0, ".txnindex").exists());
    fx.clock.advance(1000);
    log.delete_due_files().unwrap();
    assert!(!file(0, ".txnindex.deleted").exists() && !file(20, ".txnindex.deleted").exists());
    assert!(file(10, ".txnindex").exists());
}

/// `truncate_fully_and_start_at` at the base of an existing segment: its index is renamed
/// `.deleted` before the new segment takes the name, and the new segment starts without one.
#[test]
fn a_segment_replaced_at_its_own_base_takes_its_index_along() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[("file.delete.delay.ms", "1000")]));
    append_values(&log, T0, &TEN);
    index_in(&log, 0, abort(1, 2, 5, 6));
    log.truncate_fully_and_start_at(0).unwrap();
    assert_eq!(std::fs::read(fx.dir.join(segment_file_name(0, ".txnindex.deleted"))).unwrap(), entry(1, 2, 5));
    assert!(!fx.dir.join(segment_file_name(0, ".txnindex")).exists());
    assert_eq!(log.aborted_transactions(0, 100).unwrap(), vec![]);
}

/// Kafka's `LocalLog.collectAbortedTransactions`: from the segment holding the start offset,
/// segment after segment, until an entry's last stable offset reaches the upper bound. The
/// cleaner's form (`collect_aborted_transactions`) takes the log start offset as the fetch
/// offset; a fetch's (`aborted_transactions`) takes its own start.
#[test]
fn collect_aborted_transactions_walks_segments_until_the_search_completes() {
    let fx = Fixture::new();
    let log = three_segments(&fx);
    let (t1, t2, t3) = (abort(1, 2, 5, 6), abort(2, 8, 12, 11), abort(3, 11, 15, 16));
    // Not data producer state would write (its transaction overlaps [13, 16) although the
    // search of segment 10 completes there): it shows the walk stops at a complete segment.
    let t4 = abort(4, 14, 25, 26);
    index_in(&log, 0, t1);
    index_in(&log, 10, t2);
    index_in(&log, 10, t3);
    index_in(&log, 20, t4);

    assert_eq!(log.aborted_transactions(0, 30).unwrap(), vec![t1, t2, t3, t4]);
    assert_eq!(log.aborted_transactions(13, 16).unwrap(), vec![t3], "complete in segment 10: 20 is not read");
    assert_eq!(log.aborted_transactions(13, 17).unwrap(), vec![t3, t4]);
    assert_eq!(log.aborted_transactions(9, 11).unwrap(), vec![t2], "t1 ended before 9; t2's LSO completes");
    assert_eq!(log.aborted_transactions(6, 8).unwrap(), vec![], "t1 ended before 6; t2 starts at 8");
    assert_eq!(log.aborted_transactions(20, 20).unwrap(), vec![], "an empty range");

    // The cleaner's form: every transaction ending at or after the log start, from the
    // segment holding 10 on (segment 0's t1 is not read, as in Kafka).
    assert_eq!(log.collect_aborted_transactions(10, 30).unwrap(), vec![t2, t3, t4]);
    assert_eq!(log.collect_aborted_transactions(0, 30).unwrap(), vec![t1, t2, t3, t4]);
    log.set_high_watermark(30).unwrap();
    log.delete_records(13).unwrap();
    assert_eq!(log.collect_aborted_transactions(13, 30).unwrap(), vec![t3, t4], "t2 ended below the log start");

    let err = log.aborted_transactions(-1, 5).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }) && err.to_string().contains("start_offset"), "{err}");
}

/// A read-only open reads the indexes of a live log (here as Kafka's broker wrote them: every
/// segment has one, most empty), and an entry of an unknown version is an error naming the
/// file and position, not a silent skip.
#[test]
fn a_read_only_open_reads_indexes_written_elsewhere() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    drop(three_segments(&fx));
    std::fs::write(fx.dir.join(segment_file_name(0, ".txnindex")), []).unwrap();
    std::fs::write(fx.dir.join(segment_file_name(10, ".txnindex")), [entry(5, 3, 11), entry(6, 12, 14)].concat())
        .unwrap();
    let log = fx.open_read_only(&cfg);
    assert_eq!(log.aborted_transactions(0, 30).unwrap(), vec![abort(5, 3, 11, 12), abort(6, 12, 14, 15)]);
    let mut bad = entry(5, 3, 11);
    bad[1] = 7;
    std::fs::write(fx.dir.join(segment_file_name(20, ".txnindex")), bad).unwrap();
    let err = log.aborted_transactions(20, 30).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::CorruptIndex { .. }), "{msg}");
    assert!(msg.contains(&segment_file_name(20, ".txnindex")) && msg.contains("version 7 at position 0"), "{msg}");
}

/// Recovery cuts the index to the markers that survive: a torn last batch takes its
/// transaction's entry with it (before, the entry stayed and named an offset the log no longer
/// had).
#[test]
fn recovery_cuts_the_entries_of_markers_it_cuts() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        three_aborted_transactions(&log);
        log.close().unwrap();
    }
    let txn_index = fx.dir.join(segment_file_name(0, ".txnindex"));
    // The last ABORT marker is torn.
    let log_file = fx.dir.join(segment_file_name(0, ".log"));
    let len = std::fs::metadata(&log_file).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&log_file).unwrap().set_len(len - 5).unwrap();
    let log = UnifiedLog::open(&fx.dir, cfg, LogOpenOptions { had_clean_shutdown: false, ..fx.options() }).unwrap();
    assert_eq!(log.log_end_offset(), 25);
    assert_eq!(std::fs::read(&txn_index).unwrap(), [entry(7, 0, 5), entry(8, 11, 15)].concat());
    assert_eq!(log.ongoing_transactions(), vec![(7, 20)], "the torn marker's transaction is open again");
}

/// Kafka's `LogSegment.recover` with producer state: the index is reset, then rebuilt from
/// what producer state returns for each batch (here: the ABORT marker's transaction).
#[test]
fn recovery_with_producer_state_rebuilds_the_index() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &TEN);
    let marker = put_marker(&log, 9, ControlRecordType::Abort);
    append_values(&log, T0, &TEN);
    index_in(&log, 0, abort(1, 0, 3, 4)); // stale: producer state says otherwise
    let segment = log.segments().pop().unwrap();
    let mut seen = Vec::new();
    segment
        .recover_rebuilding_txn_index(
            &mut |batch| {
                seen.push(batch.last_offset());
                Ok((batch.last_offset() == marker).then(|| abort(9, 2, marker, marker + 1)))
            },
            kafkalog::segment::log_segment::IndexWrite::Atomic,
        )
        .unwrap();
    assert_eq!(seen, vec![9, marker, marker + 10], "every batch, in order");
    assert_eq!(log.aborted_transactions(0, 100).unwrap(), vec![abort(9, 2, marker, marker + 1)]);
}

/// The cleaner's replace keeps the index of the segments it rewrites (Kafka's
/// `cleanedIndex.append` into the `.cleaned` segment, then `.swap` and live with it): the
/// aborted transaction whose marker stays is still collected, and no `.cleaned` / `.swap`
/// index is left behind.
#[test]
fn a_clean_carries_the_index_into_the_segment_it_writes() {
    let fx = Fixture::new();
    let log = open_shared(&fx, &compact_config(&[("delete.retention.ms", "1000")]));
    let header = BatchHeader { producer_id: 1, is_transactional: true, ..BatchHeader::default() };
    let (k1, k2): (&[u8], &[u8]) = (b"1", b"2");
    put_batch(&log, header, &[(Some(k1), Some(k1), T0), (Some(k2), Some(k2), T0)]); // 0, 1
    let marker = put_marker(&log, 1, ControlRecordType::Abort); // 2
    put_int(&log, 3, 3);
    put_int(&log, 4, 4);
    log.roll().unwrap();
    // Producer state indexed the aborted transaction at its marker, as the follower wrote it.
    assert_eq!(log.aborted_transactions(0, log.log_end_offset()).unwrap(), vec![abort(1, 0, marker, marker + 1)]);
    let now = T0 + 2 * 86_400_000;
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), now).unwrap();
    assert_eq!(log.aborted_transactions(0, log.log_end_offset()).unwrap(), vec![abort(1, 0, marker, marker + 1)]);
    let leftovers: Vec<String> = [".txnindex.cleaned", ".txnindex.swap"]
        .iter()
        .flat_map(|suffix| crate::common::files_with_suffix(&fx.dir, suffix))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
    // Once the marker's horizon has passed it goes, and its entry with it.
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), now).unwrap();
    do_clean(&mut big_cleaner(&fx), &log, 0, active_base(&log), now + 1000).unwrap();
    assert_eq!(log.aborted_transactions(0, log.log_end_offset()).unwrap(), vec![]);
}
