//! `read_committed` reads: `FetchIsolation::TxnCommitted` stops at the last stable offset and
//! returns the aborted transactions overlapping what it read (Kafka's `UnifiedLog.read` with
//! `FetchIsolation.TXN_COMMITTED` and `LocalLog.addAbortedTransactions`), and
//! `CommittedFilter` leaves out what a `read_committed` Kafka consumer leaves out (the cases of
//! Kafka's `FetcherTest`: `testSkippingAbortedTransactions`, `testReturnCommittedTransactions`,
//! `testReadCommittedWithCommittedAndAbortedTransactions`, `testMultipleAbortMarkers`,
//! `testReadCommittedAbortMarkerWithNoData`, `testReadCommittedWithCompactedTopic`,
//! `testEmptyControlBatch`, `testConsumerPositionUpdatedWhenSkippingAbortedTransactions`).
//!
//! The logs are built as a broker's follower would receive them: transactional batches and
//! COMMIT/ABORT control batches appended with `append_as_follower`. The appends index each
//! aborted transaction themselves (producer state, at the ABORT marker); every test checks that
//! the segment holding the marker has the entry the broker would have written there, with the
//! last stable offset of that moment.

use std::collections::{BTreeMap, BTreeSet};

use kafkalog::index::transaction_index::AbortedTxn;
use kafkalog::log::unified_log::{CommittedFilter, FetchIsolation, UnifiedLog};
use kafkalog::record::builder::{write_empty_header, write_end_txn_marker, BatchBuilder, BatchHeader};
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::records::BatchIter;
use kafkalog::record::timestamp_type::TimestampType;

use crate::common::{config, Fixture, T0};

/// A log written as a broker's follower receives it, with the model of what a
/// `read_committed` consumer must see: the offsets of committed and non-transactional records.
struct TxnLog {
    log: UnifiedLog,
    /// Open transactions: producer id -> first offset.
    open: BTreeMap<i64, i64>,
    /// Records of open transactions, by producer, until their marker decides them.
    pending: BTreeMap<i64, Vec<i64>>,
    /// The model: offsets a `read_committed` consumer returns.
    visible: BTreeSet<i64>,
    /// Every aborted transaction, as indexed.
    aborted: Vec<AbortedTxn>,
}

impl TxnLog {
    fn new(fx: &Fixture, props: &[(&str, &str)]) -> Self {
        let log = fx.open(&config(props));
        TxnLog { log, open: BTreeMap::new(), pending: BTreeMap::new(), visible: BTreeSet::new(), aborted: Vec::new() }
    }

    /// One batch of `n` records of `producer_id` (-1: a plain producer); transactional ones
    /// open or extend the producer's transaction.
    fn data(&mut self, producer_id: i64, transactional: bool, n: usize) {
        let base = self.log.log_end_offset();
        let header = BatchHeader {
            base_offset: base,
            producer_id,
            producer_epoch: if producer_id >= 0 { 0 } else { -1 },
            base_sequence: if producer_id >= 0 { 0 } else { -1 },
            is_transactional: transactional,
            ..BatchHeader::default()
        };
        let mut b = BatchBuilder::new(header);
        for i in 0..n {
            let key = format!("{producer_id}-{}", base + i as i64);
            b.append_next(T0, Some(key.as_bytes()), Some(b"v"), &[]).unwrap();
        }
        self.log.append_as_follower(&b.build().unwrap()).unwrap();
        let offsets = base..base + n as i64;
        if transactional {
            self.open.entry(producer_id).or_insert(base);
            self.pending.entry(producer_id).or_default().extend(offsets);
        } else {
            self.visible.extend(offsets);
        }
    }

    /// A COMMIT or ABORT marker of `producer_id`; an ABORT of an open transaction is indexed in
    /// the active segment as the broker does, with the last stable offset then.
    fn marker(&mut self, producer_id: i64, marker: ControlRecordType) {
        let offset = self.log.log_end_offset();
        let mut out = Vec::new();
        write_end_txn_marker(&mut out, offset, T0, 0, producer_id, 0, marker, 0).unwrap();
        self.log.append_as_follower(&out).unwrap();
        let first = self.open.remove(&producer_id);
        let records = self.pending.remove(&producer_id).unwrap_or_default();
        if marker == ControlRecordType::Commit {
            self.visible.extend(records);
        } else if let Some(first) = first {
            let lso = self.open.values().min().copied().unwrap_or(offset + 1);
            let txn = AbortedTxn::new(producer_id, first, offset, lso);
            let segment = self.log.active_segment().unwrap();
            let indexed = segment.txn_index().all_aborted_txns().unwrap();
            assert!(indexed.contains(&txn), "the append indexed {txn:?} (has {indexed:?})");
            self.aborted.push(txn);
        }
    }

    fn commit(&mut self, producer_id: i64) {
        self.marker(producer_id, ControlRecordType::Commit);
    }

    fn abort(&mut self, producer_id: i64) {
        self.marker(producer_id, ControlRecordType::Abort);
    }

    /// The model's visible offsets in `[start, end)`.
    fn expected(&self, start: i64, end: i64) -> Vec<i64> {
        self.visible.range(start..end).copied().collect()
    }

    /// Makes everything appended readable (the high watermark is the last stable offset until
    /// producer state is wired).
    fn publish(&self) {
        self.log.set_high_watermark(self.log.log_end_offset()).unwrap();
    }
}

/// Offsets a consumer returns reading `[start, end)` with fetches of `max_bytes`: each fetch's
/// batches through a filter of that fetch's aborted transactions, as Kafka's `CompletedFetch`.
fn fetch_all(log: &UnifiedLog, start: i64, end: i64, max_bytes: u64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut offset = start;
    while offset < end {
        let info = log.read(offset, max_bytes, FetchIsolation::TxnCommitted, true).unwrap();
        let aborted =
            info.aborted_transactions.clone().expect("a read_committed fetch returns its aborted transactions");
        let mut filter = CommittedFilter::new(aborted);
        let mut next = offset;
        let mut scratch = Vec::new();
        for item in BatchIter::new(&info.records) {
            let batch = item.unwrap().1;
            next = batch.next_offset();
            if filter.is_visible(&batch).unwrap() {
                batch
                    .for_each_record(&mut scratch, |r| {
                        if r.offset >= offset && r.offset < end {
                            out.push(r.offset);
                        }
                        Ok(())
                    })
                    .unwrap();
            }
        }
        if next == offset {
            break;
        }
        offset = next;
    }
    out
}

/// Offsets `scan_visible` shows visible in `[start, end)` (the `to_arrow` path).
fn scan_all(log: &UnifiedLog, start: i64, end: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    log.scan_visible(start, end, FetchIsolation::TxnCommitted, |batch, visible| {
        if visible {
            batch.for_each_record(&mut scratch, |r| {
                if r.offset >= start && r.offset < end {
                    out.push(r.offset);
                }
                Ok(())
            })?;
        }
        Ok(true)
    })
    .unwrap();
    out
}

/// Both read paths agree with the model from every start offset, with whole and one-batch
/// fetches.
fn check_every_start(t: &TxnLog, end: i64) {
    for start in 0..end {
        let want = t.expected(start, end);
        assert_eq!(scan_all(&t.log, start, end), want, "scan from {start}");
        assert_eq!(fetch_all(&t.log, start, end, 1 << 20), want, "whole fetches from {start}");
        assert_eq!(fetch_all(&t.log, start, end, 1), want, "one-batch fetches from {start}");
    }
}

/// `testReadCommittedWithCommittedAndAbortedTransactions`: two producers interleaved, each
/// with a committed and an aborted transaction.
#[test]
fn interleaved_producers_committed_and_aborted() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    t.data(1, true, 2); // 0-1, committed
    t.data(2, true, 1); // 2, aborted
    t.commit(1); // 3
    t.data(2, true, 1); // 4
    t.abort(2); // 5
    t.data(1, true, 1); // 6, aborted
    t.data(2, true, 1); // 7, committed
    t.data(1, true, 1); // 8
    t.abort(1); // 9
    t.commit(2); // 10
    t.publish();
    assert_eq!(t.expected(0, 11), vec![0, 1, 7]);
    assert_eq!(t.aborted, vec![AbortedTxn::new(2, 2, 5, 6), AbortedTxn::new(1, 6, 9, 7)]);
    check_every_start(&t, 11);
}

/// `testMultipleAbortMarkers` and `testReadCommittedAbortMarkerWithNoData`: a second ABORT
/// with no transaction open, and an aborted transaction whose data lies before the fetch
/// range, are ignored; a later committed transaction of the same producer is returned.
#[test]
fn duplicate_abort_and_abort_with_no_data_in_range() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    t.data(1, true, 2); // 0-1
    t.abort(1); // 2
    t.abort(1); // 3: nothing open, nothing indexed
    t.data(1, true, 2); // 4-5
    t.commit(1); // 6
    t.data(-1, false, 1); // 7
    t.publish();
    assert_eq!(t.aborted, vec![AbortedTxn::new(1, 0, 2, 3)]);
    check_every_start(&t, 8);
    // A fetch from the marker on: the aborted transaction is returned (its marker is in
    // range), though none of its data is.
    let info = t.log.read(2, 1 << 20, FetchIsolation::TxnCommitted, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(vec![AbortedTxn::new(1, 0, 2, 3)]));
    let info = t.log.read(3, 1 << 20, FetchIsolation::TxnCommitted, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(vec![]));
}

/// Aborted transactions whose data and markers span segments, with a plain producer and an
/// idempotent one interleaved: the fetch and the scan collect them from the right segments.
#[test]
fn aborted_across_segments() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    t.data(1, true, 3); // 0-2: aborted in the third segment
    t.data(-1, false, 2); // 3-4
    t.log.roll().unwrap();
    t.data(2, true, 2); // 5-6: committed
    t.data(1, true, 1); // 7
    t.data(7, false, 2); // 8-9: idempotent, not transactional
    t.log.roll().unwrap();
    t.data(3, true, 1); // 10: aborted
    t.abort(1); // 11
    t.commit(2); // 12
    t.data(1, true, 1); // 13: a new transaction of 1, committed
    t.abort(3); // 14
    t.commit(1); // 15
    t.data(-1, false, 1); // 16
    t.publish();
    assert_eq!(t.log.number_of_segments(), 3);
    assert_eq!(t.expected(0, 17), vec![3, 4, 5, 6, 8, 9, 13, 16]);
    check_every_start(&t, 17);
    // A fetch from the second segment returns the transaction begun in the first.
    let info = t.log.read(5, 1 << 20, FetchIsolation::TxnCommitted, true).unwrap();
    assert_eq!(info.aborted_transactions, Some(vec![AbortedTxn::new(1, 0, 11, 5)]));
    // Other isolations return none.
    assert_eq!(t.log.read(5, 1 << 20, FetchIsolation::HighWatermark, true).unwrap().aborted_transactions, None);
}

/// Control records only: nothing is returned, and the scan still moves past them.
#[test]
fn control_records_only() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    t.commit(1);
    t.abort(2);
    t.commit(3);
    t.publish();
    check_every_start(&t, 3);
    let mut seen = Vec::new();
    t.log
        .scan_visible(0, 3, FetchIsolation::TxnCommitted, |b, visible| {
            seen.push((b.base_offset()?, visible));
            Ok(true)
        })
        .unwrap();
    assert_eq!(seen, vec![(0, false), (1, false), (2, false)]);
}

/// `testReadCommittedWithCompactedTopic` and `testEmptyControlBatch`: batches the cleaner
/// emptied (a transactional data batch and a control batch with no records) are skipped, and
/// what follows them is filtered as before.
#[test]
fn empty_batches_left_by_the_cleaner() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    // 0-1, aborted; then at 2 an empty control batch of producer 1 (a marker whose records
    // were cleaned away): not an ABORT marker, so producer 1 stays aborted.
    t.data(1, true, 2);
    empty_batch(&t.log, 1, true);
    t.data(1, true, 1); // 3, still in the aborted transaction
    t.abort(1); // 4
    empty_batch(&t.log, 2, false); // 5: an empty transactional data batch of producer 2
    t.data(2, true, 1); // 6, committed
    t.commit(2); // 7
    t.publish();
    assert_eq!(t.aborted, vec![AbortedTxn::new(1, 0, 4, 5)]);
    assert_eq!(t.expected(0, 8), vec![6]);
    check_every_start(&t, 8);
}

/// A v2 batch with no records at the log end (what the cleaner keeps of a producer's last
/// batch), as a follower receives it.
fn empty_batch(log: &UnifiedLog, producer_id: i64, control: bool) {
    let base = log.log_end_offset();
    let mut bytes = Vec::new();
    let ts = TimestampType::CreateTime;
    write_empty_header(&mut bytes, base, base, producer_id, 0, 0, 0, ts, T0, true, control).unwrap();
    log.append_as_follower(&bytes).unwrap();
}

/// `TxnCommitted` reads stop at the last stable offset (today's: the high watermark), and a
/// read at it is empty with no aborted transactions; the other isolations keep their bounds.
#[test]
fn reads_stop_at_the_last_stable_offset() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    t.data(1, true, 2); // 0-1
    t.abort(1); // 2
    for _ in 0..3 {
        t.data(-1, false, 1); // 3, 4, 5
    }
    t.log.set_high_watermark(4).unwrap();
    let lso = t.log.last_stable_offset();
    assert_eq!(t.log.fetch_upper_bound(FetchIsolation::TxnCommitted), lso);
    assert_eq!(t.log.fetch_upper_bound(FetchIsolation::HighWatermark), 4);
    assert_eq!(t.log.fetch_upper_bound(FetchIsolation::LogEnd), 6);
    assert_eq!(scan_all(&t.log, 0, i64::MAX), t.expected(0, lso));
    let info = t.log.read(0, 1 << 20, FetchIsolation::TxnCommitted, true).unwrap();
    let last = BatchIter::new(&info.records).map(|b| b.unwrap().1.last_offset()).max().unwrap();
    assert!(last < lso, "read past the last stable offset {lso}: {last}");
    assert_eq!(info.aborted_transactions, Some(vec![AbortedTxn::new(1, 0, 2, 3)]));
    let at_bound = t.log.read(lso, 1 << 20, FetchIsolation::TxnCommitted, true).unwrap();
    assert!(at_bound.records.is_empty());
    assert_eq!(at_bound.aborted_transactions, Some(vec![]));
}

/// A log of several producers and segments built from a fixed seed: every start offset reads
/// what the model says (aborted transactions across rolls, markers with nothing open).
#[test]
fn seeded_workload_matches_the_model() {
    let fx = Fixture::new();
    let mut t = TxnLog::new(&fx, &[]);
    let mut state: u64 = 0x5eed;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    for step in 0..120 {
        if step % 25 == 24 {
            t.log.roll().unwrap();
        }
        let producer = (next() % 4) as i64;
        match next() % 6 {
            0 => t.commit(producer),
            1 => t.abort(producer),
            2 => t.data(-1, false, 1 + next() % 3),
            _ => t.data(producer, true, 1 + next() % 3),
        }
    }
    for producer in 0..4 {
        t.commit(producer);
    }
    t.publish();
    assert!(t.log.number_of_segments() > 3, "the workload spans segments");
    assert!(t.aborted.len() > 5);
    let end = t.log.log_end_offset();
    for start in (0..end).step_by(7) {
        let want = t.expected(start, end);
        assert_eq!(scan_all(&t.log, start, end), want, "scan from {start}");
        assert_eq!(fetch_all(&t.log, start, end, 200), want, "fetches from {start}");
    }
}
