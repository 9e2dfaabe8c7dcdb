//! The sliced decision mode (`cleaner::sliced`, `log.cleaner.kafkalog.sliced.decisions`)
//! against Kafka's rounds run to convergence: the same records, offsets, keys, values,
//! timestamps, the same empty batches and transaction markers, and the same end offset (the
//! new `cleaner-offset-checkpoint` entry), on logs whose keys need several rounds, with
//! tombstones (fresh, and stamped by an earlier clean, before and past their horizon),
//! committed and aborted transactions, unkeyed records and several segments. kafkalog's own;
//! the rounds side is `LogCleanerTest`'s multi-pass behaviour (`testCleaningWithDeletes`,
//! `testCleanSegmentsWithAbort`, `testAbortMarkerRetentionWithEmptyBatch`).

use std::sync::Arc;

use proptest::prelude::*;

use kafkalog::cleaner::{compact_log, Cleaner, CleanerParams, CompactOptions, DecisionMode};
use kafkalog::record::control::ControlRecordType;
use kafkalog::record::BatchHeader;
use kafkalog::UnifiedLog;

use crate::common::cleaner::{all_batches, compact_config, new_cleaner, open_shared, put_batch, put_marker, BatchView};
use crate::common::{proptest_config, Fixture, RecSpec, T0};

const RETENTION_MS: i64 = 1000;

/// One step of building a log.
#[derive(Debug, Clone)]
enum Op {
    /// A batch of (key, tombstone?) records; key `None` = unkeyed.
    Batch(Vec<(Option<u8>, bool)>),
    /// A transaction of producer `pid`: one data batch, one plain batch written meanwhile,
    /// then its COMMIT (true) or ABORT marker.
    Txn { pid: i64, records: Vec<(Option<u8>, bool)>, commit: bool },
    /// Rolls a new segment.
    Roll,
}

fn record(keys: u8) -> impl Strategy<Value = (Option<u8>, bool)> {
    (prop::option::weighted(0.97, 0..keys), prop::bool::weighted(0.15))
}

fn op(keys: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(record(keys), 1..6).prop_map(Op::Batch),
        2 => (1i64..4, prop::collection::vec(record(keys), 1..4), any::<bool>())
            .prop_map(|(pid, records, commit)| Op::Txn { pid, records, commit }),
        1 => Just(Op::Roll),
    ]
}

/// Appends `ops` to `log`; `seq` holds each producer's next sequence.
fn build(log: &UnifiedLog, ops: &[Op], seq: &mut [i32; 8], tag: &str) {
    let values: Vec<String> = (0..ops.len() * 8).map(|i| format!("{tag}{i}")).collect();
    let mut v = 0;
    let mut batch = |log: &UnifiedLog, header: BatchHeader, records: &[(Option<u8>, bool)]| {
        let keys: Vec<Option<Vec<u8>>> = records.iter().map(|(k, _)| k.map(|k| vec![b'k', k])).collect();
        let specs: Vec<RecSpec<'_>> = records
            .iter()
            .zip(&keys)
            .map(|((_, tomb), k)| {
                v += 1;
                (k.as_deref(), (!tomb).then(|| values[v].as_bytes()), T0)
            })
            .collect();
        put_batch(log, header, &specs);
    };
    for op in ops {
        match op {
            Op::Batch(records) => batch(log, BatchHeader::default(), records),
            Op::Txn { pid, records, commit } => {
                let s = &mut seq[*pid as usize];
                let header = BatchHeader {
                    producer_id: *pid,
                    producer_epoch: 0,
                    base_sequence: *s,
                    is_transactional: true,
                    ..BatchHeader::default()
                };
                *s += records.len() as i32;
                batch(log, header, records);
                batch(log, BatchHeader::default(), &[(Some(0), false)]);
                let kind = if *commit { ControlRecordType::Commit } else { ControlRecordType::Abort };
                put_marker(log, *pid, kind);
            }
            Op::Roll => {
                log.roll().expect("roll");
            }
        }
    }
    log.roll().expect("roll");
}

fn cleaner(fx: &Fixture, slots: usize, mode: DecisionMode) -> Cleaner {
    let params = CleanerParams { io_buffer_size: 1024, decision_mode: mode, ..CleanerParams::default() };
    new_cleaner(fx, slots * 24, params)
}

/// A batch as the comparison sees it: everything but the delete-horizon stamp (which the
/// modes may set on different batches; see `cleaner::sliced`).
fn without_horizons(batches: Vec<BatchView>) -> Vec<BatchView> {
    batches.into_iter().map(|b| BatchView { horizon: None, ..b }).collect()
}

/// What one mode leaves: the batches, each clean's end offset, and the number of passes of
/// the second clean (or whether the sliced passes ran).
struct Outcome {
    batches: Vec<BatchView>,
    ends: (i64, i64),
    passes: usize,
    sliced: bool,
    /// Slices halved because the map filled.
    splits: u32,
    /// Decision passes (reads of the dirty section) of the sliced mode.
    decision_passes: u32,
}

/// Builds `first` then cleans it in rounds at `T0`, appends `second`, cleans again at `now`
/// in `mode`.
fn run(first: &[Op], second: &[Op], slots: usize, now: i64, retention: i64, mode: DecisionMode) -> Outcome {
    let fx = Fixture::new();
    let retention = retention.to_string();
    let log: Arc<UnifiedLog> = open_shared(&fx, &compact_config(&[("delete.retention.ms", retention.as_str())]));
    let mut seq = [0i32; 8];
    build(&log, first, &mut seq, "a");
    let mut rounds = cleaner(&fx, slots, DecisionMode::Rounds);
    let options = CompactOptions { first_dirty_offset: None, now_ms: Some(T0) };
    let one = compact_log(&mut rounds, &log, &options, &|| Ok(())).expect("first clean");
    build(&log, second, &mut seq, "b");
    let mut c = cleaner(&fx, slots, mode);
    let options = CompactOptions { first_dirty_offset: Some(one.end_offset), now_ms: Some(now) };
    let two = compact_log(&mut c, &log, &options, &|| Ok(())).expect("second clean");
    let report = c.sliced_report();
    let (sliced, splits, decision_passes) =
        (report.is_some(), report.map_or(0, |r| r.splits), report.map_or(0, |r| r.passes));
    let ends = (one.end_offset, two.end_offset);
    Outcome { batches: all_batches(&log), ends, passes: two.passes.len(), sliced, splits, decision_passes }
}

/// Runs both modes and compares them; returns the rounds' number of passes, whether the
/// sliced passes ran, how many slices were halved, and the sliced mode's decision passes.
fn compare(first: &[Op], second: &[Op], slots: usize, now: i64, retention: i64) -> (usize, bool, u32, u32) {
    let rounds = run(first, second, slots, now, retention, DecisionMode::Rounds);
    let sliced = run(first, second, slots, now, retention, DecisionMode::Sliced);
    assert_eq!(sliced.ends, rounds.ends, "end offsets");
    assert_eq!(without_horizons(sliced.batches), without_horizons(rounds.batches));
    assert!(!rounds.sliced);
    if sliced.sliced {
        assert_eq!(sliced.passes, 1, "one rewrite");
    } else if retention > 0 {
        assert!(rounds.passes <= 1, "the sliced passes ran whenever rounds needed several");
    }
    (rounds.passes, sliced.sliced, sliced.splits, sliced.decision_passes)
}

/// Random logs over 40 keys with maps of 6 to 20 slots (several rounds each), 48 cases from
/// the fixed seed; some of them must overflow a slice (split and scanned again).
#[test]
fn sliced_decisions_keep_what_converged_rounds_keep() {
    let strategy = (
        prop::collection::vec(op(40), 0..30),
        prop::collection::vec(op(40), 1..60),
        6usize..20,
        any::<bool>(),
        prop_oneof![4 => Just(RETENTION_MS), 1 => Just(0i64)],
    );
    let splits = std::cell::Cell::new(0u32);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: 48, ..proptest_config() });
    runner
        .run(&strategy, |(first, second, slots, late, retention)| {
            let now = if late { T0 + retention + 1 } else { T0 };
            let (_, _, split, _) = compare(&first, &second, slots, now, retention);
            splits.set(splits.get() + split);
            Ok(())
        })
        .expect("the sliced mode keeps what the rounds keep");
    assert!(splits.get() > 0, "test set-up: no slice was halved");
}

/// Fixed logs needing 2, 3 and 5 rounds: the sliced mode runs (it does not fall back), keeps
/// the same records, and reads the dirty section no more often than the rounds do (its first
/// pass, which halves its slice as the map fills, is also the first slice's).
#[test]
fn two_three_and_five_rounds_become_one_rewrite() {
    // 12 slots at 0.9 = 10 keys a round; every other key written twice (every fourth deleted),
    // a committed and an aborted transaction in the middle.
    for (keys, want) in [(12u8, 2usize), (16, 3), (30, 5)] {
        let mut ops: Vec<Op> = (0..keys).map(|k| Op::Batch(vec![(Some(k), false)])).collect();
        ops.push(Op::Txn { pid: 1, records: vec![(Some(1), false), (Some(2), true)], commit: true });
        ops.push(Op::Roll);
        ops.push(Op::Txn { pid: 2, records: vec![(Some(3), false)], commit: false });
        ops.extend((0..keys).step_by(2).map(|k| Op::Batch(vec![(Some(k), k % 4 == 0)])));
        let (passes, sliced, _, reads) = compare(&[], &ops, 12, T0, RETENTION_MS);
        assert_eq!(passes, want, "{keys} keys");
        assert!(sliced, "{keys} keys: the sliced passes ran");
        assert!(reads as usize <= want, "{keys} keys: {reads} decision passes for {want} rounds");
    }
}

/// A `delete.retention.ms` of 0 falls back to rounds (a second round at the same time would
/// remove the tombstones the first stamped), with the same result.
#[test]
fn zero_delete_retention_falls_back_to_rounds() {
    let ops: Vec<Op> = (0..30u8).map(|k| Op::Batch(vec![(Some(k), k % 3 == 0)])).collect();
    let (passes, sliced, _, _) = compare(&[], &ops, 12, T0, 0);
    assert!(passes >= 3);
    assert!(!sliced);
}
