//! The cleaner's partition states and checkpoints: Kafka's `LogCleanerManagerTest` against
//! `LogCleanerManager` (the threads and the `LogManager` side are in `cleaner_threads.rs`; the
//! helpers both use are in `common/cleaner_manager.rs`). Everything runs on a manual clock; a test that needs another
//! thread waits for a state with a deadline, never for a fixed time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafkalog::cleaner::log_cleaner_manager::{LogCleanerManager, LogCleaningState};
use kafkalog::cleaner::log_to_clean::{cleanable_offsets, LogToClean};
use kafkalog::file_names::CLEANER_OFFSET_CHECKPOINT_FILE;
use kafkalog::log::unified_log::UnifiedLog;
use kafkalog::util::clock::Clock;

use crate::common::cleaner_manager::{base, compact, file_checkpoints, fill, grab, tp, Env, HANG_GUARD, HOUR};
use crate::common::{config, T0};

fn grabbed(m: &LogCleanerManager) -> Option<String> {
    grab(m).map(|l| l.log.topic_partition().topic.clone())
}

/// Three compacted logs whose dirty ratios are about 1.0, 0.5 and 0.2.
fn three_logs(env: &Env, m: &LogCleanerManager) -> [Arc<UnifiedLog>; 3] {
    let logs = ["a", "b", "c"].map(|t| {
        let log = env.log(t, &compact(&[]));
        fill(&log, 30, 30, T0);
        log
    });
    let n = logs[1].segments().len();
    m.update_checkpoints(env.dir(), Some((&tp("b"), base(&logs[1], n / 2))), None);
    m.update_checkpoints(env.dir(), Some((&tp("c"), base(&logs[2], n * 4 / 5))), None);
    logs
}

/// testGrabFilthiestCompactedLogReturnsLogWithDirtiestRatio and the three "ignores" cases.
#[test]
fn grab_filthiest_picks_the_dirtiest_eligible_log() {
    let env = Env::new();
    let m = env.manager();
    three_logs(&env, &m);
    let first = grab(&m).unwrap();
    assert_eq!(first.log.topic_partition(), &tp("a"));
    assert!(first.cleanable_ratio > 0.99, "{}", first.cleanable_ratio);
    assert_eq!(m.cleaning_state(&tp("a")), Some(LogCleaningState::InProgress));
    assert_eq!(m.max_dirty_percent(), 100);
    // a is in progress now: b is next, then c; then nothing.
    assert_eq!(grabbed(&m).as_deref(), Some("b"));
    assert_eq!(grabbed(&m).as_deref(), Some("c"));
    assert_eq!(grabbed(&m), None);

    // Uncleanable a: b wins. Uncleanable a and in-progress b: c wins.
    let m = env.manager();
    m.mark_partition_uncleanable(env.dir(), &tp("a"), "test");
    assert_eq!(grabbed(&m).as_deref(), Some("b"));
    m.set_cleaning_state(&tp("b"), None);
    m.set_cleaning_state(&tp("b"), Some(LogCleaningState::InProgress));
    assert_eq!(grabbed(&m).as_deref(), Some("c"));
}

/// The ratio must be strictly above min.cleanable.dirty.ratio; empty logs are skipped.
#[test]
fn grab_requires_a_ratio_above_the_minimum_and_bytes() {
    let env = Env::new();
    let m = env.manager();
    let log = env.log("a", &compact(&[("min.cleanable.dirty.ratio", "0.5")]));
    env.log("empty", &compact(&[]));
    fill(&log, 30, 30, T0);
    let active = log.segments().len() - 1;
    // Choose a checkpoint whose ratio is at most 0.5: not eligible.
    let mut cut = 0;
    for i in 0..active {
        let ltc = LogToClean::new(log.clone(), base(&log, i), base(&log, active), false);
        if ltc.cleanable_ratio <= 0.5 {
            cut = i;
            break;
        }
    }
    assert!(cut > 0);
    m.update_checkpoints(env.dir(), Some((&tp("a"), base(&log, cut))), None);
    assert_eq!(grabbed(&m), None);
    m.update_checkpoints(env.dir(), Some((&tp("a"), base(&log, cut - 1))), None);
    let ltc = LogToClean::new(log.clone(), base(&log, cut - 1), base(&log, active), false);
    assert_eq!(grabbed(&m).is_some(), ltc.cleanable_ratio > 0.5);
}

/// testGrabFilthiestCompactedLogThrowsException: a failure computing a log's stats marks that
/// partition uncleanable, with the reason, and the others are still considered.
#[test]
fn a_stats_failure_marks_the_partition_uncleanable() {
    let env = Env::new();
    let m = env.manager();
    let bad = env.log("bad", &compact(&[]));
    let good = env.log("good", &compact(&[]));
    fill(&bad, 20, 20, T0);
    fill(&good, 20, 20, T0);
    // Reopened, so that no segment has its first batch's timestamp cached.
    let bad = env.reopen(&bad, &compact(&[]));
    let _fault = kafkalog::util::fault::inject(bad.dir(), kafkalog::util::fault::FaultOp::Read, libc::EIO, None);
    assert_eq!(grabbed(&m).as_deref(), Some("good"));
    let reason = m.uncleanable_reason(&tp("bad")).expect("marked uncleanable").reason;
    assert!(reason.contains("failed to calculate log cleaning stats for partition bad-0"), "{reason}");
}

/// testDirtyOffsetResetIfLargerThanEndOffset / ...SmallerThanStartOffset, and
/// testCheckpointUpdatedForInvalidOffsetNoCleaning / ...NotSelected: the checkpoint is reset to
/// the log start and rewritten even when the log is not chosen.
#[test]
fn an_invalid_checkpoint_is_reset_and_rewritten_even_if_not_selected() {
    let env = Env::new();
    let m = env.manager();
    let past_end = env.log("past", &compact(&[]));
    fill(&past_end, 20, 20, T0);
    m.update_checkpoints(env.dir(), Some((&tp("past"), past_end.log_end_offset() + 5)), None);
    let ltc = grab(&m).unwrap();
    assert_eq!(ltc.first_dirty_offset, 0);
    assert_eq!(file_checkpoints(env.dir())[&tp("past")], 0);

    // Below the log start, and not selected: a dirtier log wins, the checkpoint still heals.
    let env = Env::new();
    let m = env.manager();
    let dirtiest = env.log("dirtiest", &compact(&[]));
    let below = env.log("below", &compact(&[]));
    fill(&dirtiest, 20, 20, T0);
    fill(&below, 20, 20, T0);
    let start = below.delete_records(base(&below, 3)).unwrap();
    m.update_checkpoints(env.dir(), Some((&tp("below"), 1)), None);
    assert_eq!(grabbed(&m).as_deref(), Some("dirtiest"));
    assert_eq!(file_checkpoints(env.dir())[&tp("below")], start);

    // Not cleaned at all (ratio under the minimum): still rewritten.
    let env = Env::new();
    let m = env.manager();
    let log = env.log("quiet", &compact(&[("min.cleanable.dirty.ratio", "1.0")]));
    fill(&log, 20, 20, T0);
    m.update_checkpoints(env.dir(), Some((&tp("quiet"), 10_000)), None);
    assert_eq!(grabbed(&m), None);
    assert_eq!(file_checkpoints(env.dir())[&tp("quiet")], 0);
}

/// testLogStartOffsetLargerThanActiveSegmentBaseOffset and
/// testDirtyOffsetLargerThanActiveSegmentBaseOffset: nothing is cleanable.
#[test]
fn nothing_is_cleanable_past_the_active_segment_base() {
    let env = Env::new();
    let log = env.log("a", &compact(&[]));
    fill(&log, 20, 20, T0);
    log.roll().unwrap();
    fill(&log, 3, 3, T0);
    let active = log.active_segment().unwrap().base_offset();
    let now = env.clock.milliseconds();
    let o = cleanable_offsets(&log, Some(active + 1), now).unwrap();
    assert_eq!((o.first_dirty_offset, o.first_uncleanable_dirty_offset), (active + 1, active + 1));
    assert!(!o.force_update_checkpoint);
    log.delete_records(active + 2).unwrap();
    let o = cleanable_offsets(&log, None, now).unwrap();
    assert_eq!((o.first_dirty_offset, o.first_uncleanable_dirty_offset), (active + 2, active + 2));
}

/// testCleanableOffsetsForNone / ForActiveSegment / ForTime / ForShortTime and
/// testCleanableOffsetsNeedsCheckpointReset.
#[test]
fn cleanable_offsets_follow_the_active_segment_and_the_min_lag() {
    let env = Env::new();
    let now = env.clock.milliseconds();
    let log = env.log("none", &compact(&[]));
    fill(&log, 20, 20, T0);
    let active = log.active_segment().unwrap().base_offset();
    let o = cleanable_offsets(&log, None, now).unwrap();
    assert_eq!((o.first_dirty_offset, o.first_uncleanable_dirty_offset, o.force_update_checkpoint), (0, active, false));
    assert!(cleanable_offsets(&log, Some(log.log_end_offset() + 1), now).unwrap().force_update_checkpoint);

    let only_active = env.log("active", &compact(&[]));
    fill(&only_active, 2, 2, T0);
    assert_eq!(only_active.segments().len(), 1);
    assert_eq!(cleanable_offsets(&only_active, None, now).unwrap().first_uncleanable_dirty_offset, 0);

    // Old records, then (after a roll) records inside the one-hour lag.
    let timed = env.log("timed", &compact(&[("min.compaction.lag.ms", "3600000")]));
    fill(&timed, 10, 10, T0 - 3 * HOUR);
    timed.roll().unwrap();
    let first_young = timed.log_end_offset();
    fill(&timed, 10, 10, T0 - HOUR / 2);
    let o = cleanable_offsets(&timed, None, now).unwrap();
    assert_eq!(o.first_uncleanable_dirty_offset, first_young);

    // Every record older than the lag: only the active segment is held back.
    let short = env.log("short", &compact(&[("min.compaction.lag.ms", "60000")]));
    fill(&short, 20, 20, T0 - HOUR);
    let o = cleanable_offsets(&short, None, now).unwrap();
    assert_eq!(o.first_uncleanable_dirty_offset, short.active_segment().unwrap().base_offset());
}

/// testUndecidedTransactionalDataNotCleanable, with the last stable offset = the high watermark.
#[test]
fn nothing_at_or_past_the_last_stable_offset_is_cleanable() {
    let env = Env::new();
    let m = env.manager();
    let log = env.log("a", &compact(&[]));
    fill(&log, 30, 30, T0);
    let lso = base(&log, 3) + 1;
    log.set_high_watermark(lso).unwrap();
    let o = cleanable_offsets(&log, None, env.clock.milliseconds()).unwrap();
    assert_eq!(o.first_uncleanable_dirty_offset, lso);
    let ltc = grab(&m).unwrap();
    assert_eq!(ltc.first_uncleanable_offset, base(&log, 3), "aligned down to the segment holding the LSO");
}

/// testLogsWithSegmentsToDeleteShouldNot... (delete, compact,delete, compact, uncleanable) and
/// testDoneDeleting.
#[test]
fn the_cleaner_runs_retention_on_idle_compacted_logs_only() {
    let env = Env::new();
    let m = env.manager();
    env.log("delete", &[("cleanup.policy", "delete")]);
    env.log("compactdelete", &[("cleanup.policy", "compact,delete")]);
    env.log("compact", &[("cleanup.policy", "compact")]);
    env.log("uncleanable", &[("cleanup.policy", "compact")]);
    env.log("busy", &[("cleanup.policy", "compact")]);
    m.mark_partition_uncleanable(env.dir(), &tp("uncleanable"), "test");
    m.set_cleaning_state(&tp("busy"), Some(LogCleaningState::Paused(1)));
    let mut got: Vec<String> = m.deletable_logs().into_iter().map(|(tp, _)| tp.topic).collect();
    got.sort();
    assert_eq!(got, ["compact", "compactdelete"]);
    assert_eq!(m.cleaning_state(&tp("compact")), Some(LogCleaningState::InProgress));
    assert!(m.deletable_logs().is_empty(), "in progress now");
    m.set_cleaning_state(&tp("compact"), Some(LogCleaningState::Aborted));
    m.done_deleting(&[tp("compact"), tp("compactdelete")]).unwrap();
    assert_eq!(m.cleaning_state(&tp("compactdelete")), None);
    assert_eq!(m.cleaning_state(&tp("compact")), Some(LogCleaningState::Paused(1)));
    let err = m.done_deleting(&[tp("delete")]).unwrap_err().to_string();
    assert!(err.contains("delete-0") && err.contains("none"), "{err}");
}

/// testLogsUnderCleanupIneligibleForCompaction.
#[test]
fn logs_under_retention_are_not_compacted() {
    let env = Env::new();
    let m = env.manager();
    let log = env.log("a", &[("cleanup.policy", "delete"), ("internal.segment.bytes", "300")]);
    fill(&log, 20, 20, T0);
    let paused = m.pause_cleaning_for_non_compacted_partitions();
    assert_eq!(paused.len(), 1);
    assert_eq!(m.cleaning_state(&tp("a")), Some(LogCleaningState::Paused(1)));
    log.update_config(config(&compact(&[]))).unwrap();
    assert_eq!(grabbed(&m), None);
    assert!(m.deletable_logs().is_empty());
    m.resume_cleaning(&[tp("a")]).unwrap();
    assert_eq!(grabbed(&m).as_deref(), Some("a"));
}

/// testUpdateCheckpointsShouldAddOffsetToPartition / ...RemovePartitionData,
/// testHandleLogDirFailureShouldRemoveDirAndData, testMaybeTruncateCheckpointShouldTruncateData.
#[test]
fn checkpoints_are_added_removed_truncated_and_dropped_with_their_dir() {
    let env = Env::new();
    let m = env.manager();
    env.log("a", &compact(&[]));
    env.log("b", &compact(&[]));
    m.update_checkpoints(env.dir(), Some((&tp("a"), 20)), None);
    m.update_checkpoints(env.dir(), Some((&tp("b"), 7)), None);
    assert_eq!(m.all_cleaner_checkpoints()[&tp("a")], 20);
    let text = std::fs::read_to_string(env.dir().join(CLEANER_OFFSET_CHECKPOINT_FILE)).unwrap();
    assert_eq!(text, "0\n2\na 0 20\nb 0 7\n");
    m.maybe_truncate_checkpoint(env.dir(), &tp("a"), 10);
    assert_eq!(file_checkpoints(env.dir())[&tp("a")], 10);
    m.maybe_truncate_checkpoint(env.dir(), &tp("a"), 15);
    assert_eq!(file_checkpoints(env.dir())[&tp("a")], 10, "never raised");
    m.update_checkpoints(env.dir(), None, Some(&tp("b")));
    assert!(!file_checkpoints(env.dir()).contains_key(&tp("b")));
    // Entries of partitions without a log are dropped at the next write.
    env.logs.lock().unwrap().retain(|(t, _)| t.topic != "a");
    m.update_checkpoints(env.dir(), Some((&tp("b"), 3)), None);
    assert_eq!(file_checkpoints(env.dir()).len(), 1);

    m.handle_log_dir_failure(env.dir());
    assert!(m.all_cleaner_checkpoints().is_empty());
    m.update_checkpoints(env.dir(), Some((&tp("b"), 9)), None);
    assert_eq!(file_checkpoints(env.dir())[&tp("b")], 3, "a failed dir is never written again");
}

/// testAlterCheckpointDirShouldRemoveDataInSrcDirAndAddInNewDir: the uncleanable mark moves too.
#[test]
fn alter_checkpoint_dir_moves_the_entry_and_the_mark() {
    let env = Env::with_dirs(2);
    let m = env.manager();
    env.log_in(0, "a", &compact(&[]));
    m.update_checkpoints(&env.dirs[0], Some((&tp("a"), 5)), None);
    m.mark_partition_uncleanable(&env.dirs[0], &tp("a"), "test");
    m.alter_checkpoint_dir(&tp("a"), &env.dirs[0], &env.dirs[1]);
    assert!(!file_checkpoints(&env.dirs[0]).contains_key(&tp("a")));
    assert_eq!(file_checkpoints(&env.dirs[1])[&tp("a")], 5);
    assert!(m.uncleanable_partitions(&env.dirs[0]).is_empty());
    assert!(m.uncleanable_partitions(&env.dirs[1]).contains_key(&tp("a")));
}

/// A truncation of the log lowers its checkpoint (Kafka's maybeTruncateCheckpoint after
/// truncateTo), seen through `take_truncation`.
#[test]
fn a_truncated_log_lowers_its_checkpoint() {
    let env = Env::new();
    let m = env.manager();
    let log = env.log("a", &compact(&[]));
    fill(&log, 30, 30, T0);
    m.update_checkpoints(env.dir(), Some((&tp("a"), 25)), None);
    log.truncate_to(12).unwrap();
    fill(&log, 20, 20, T0);
    let ltc = grab(&m).unwrap();
    assert_eq!(ltc.first_dirty_offset, 12);
    assert_eq!(file_checkpoints(env.dir())[&tp("a")], 12);
}

/// testDoneCleaning.
#[test]
fn done_cleaning_checkpoints_or_turns_an_abort_into_a_pause() {
    let env = Env::new();
    let m = env.manager();
    env.log("a", &compact(&[]));
    let err = m.done_cleaning(&tp("a"), env.dir(), 10).unwrap_err();
    assert!(err.to_string().contains("a-0"), "{err}");
    m.set_cleaning_state(&tp("a"), Some(LogCleaningState::InProgress));
    m.done_cleaning(&tp("a"), env.dir(), 10).unwrap();
    assert_eq!(m.cleaning_state(&tp("a")), None);
    assert_eq!(file_checkpoints(env.dir())[&tp("a")], 10);
    m.set_cleaning_state(&tp("a"), Some(LogCleaningState::Aborted));
    m.done_cleaning(&tp("a"), env.dir(), 15).unwrap();
    assert_eq!(m.cleaning_state(&tp("a")), Some(LogCleaningState::Paused(1)));
    assert_eq!(file_checkpoints(env.dir())[&tp("a")], 10, "an aborted clean does not checkpoint");
    assert!(m.done_cleaning(&tp("a"), env.dir(), 15).is_err());
}

/// Pauses nest; resume undoes one; resuming what is not paused is an error naming it.
#[test]
fn pauses_are_reentrant() {
    let env = Env::new();
    let m = env.manager();
    m.abort_and_pause_cleaning(&tp("a"));
    m.abort_and_pause_cleaning(&tp("a"));
    assert!(m.is_cleaning_in_state(&tp("a"), LogCleaningState::Paused(2)));
    m.resume_cleaning(&[tp("a")]).unwrap();
    assert!(m.is_cleaning_in_state(&tp("a"), LogCleaningState::Paused(1)));
    m.resume_cleaning(&[tp("a")]).unwrap();
    assert_eq!(m.cleaning_state(&tp("a")), None);
    let err = m.resume_cleaning(&[tp("a")]).unwrap_err().to_string();
    assert!(err.contains("a-0") && err.contains("none"), "{err}");
    m.abort_cleaning(&tp("a"));
    assert_eq!(m.cleaning_state(&tp("a")), None, "abort_cleaning leaves no pause");
}

/// testConcurrentLogCleanupAndLogTruncation: abort-and-pause waits for the cleaner thread's
/// retention run to end, then holds the partition paused.
#[test]
fn abort_and_pause_waits_for_the_running_work() {
    let env = Env::new();
    let m = env.manager();
    env.log("a", &compact(&[]));
    assert_eq!(m.deletable_logs().len(), 1);
    let returned = AtomicBool::new(false);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            m.abort_and_pause_cleaning(&tp("a"));
            returned.store(true, Ordering::SeqCst);
        });
        assert!(m.wait_for_cleaning_state(&tp("a"), LogCleaningState::Aborted, HANG_GUARD), "the abort is requested");
        assert!(!returned.load(Ordering::SeqCst), "abort_and_pause returned while the work ran");
        assert!(m.check_cleaning_aborted(&tp("a")).is_err());
        m.done_deleting(&[tp("a")]).unwrap();
        waiter.join().unwrap();
    });
    assert!(returned.load(Ordering::SeqCst));
    assert_eq!(m.cleaning_state(&tp("a")), Some(LogCleaningState::Paused(1)));
}

/// LogCleanerManagerTest.testUndecidedTransactionalDataNotCleanable with the log's real last
/// stable offset: an open transaction holds it at the transaction's first offset, the
/// manager's range stops at the segment holding it, and once cleaned up to there the log is
/// not picked again at every backoff; the COMMIT marker makes it cleanable again.
#[test]
fn an_open_transaction_bounds_the_range_and_the_log_is_not_picked_again() {
    use kafkalog::record::builder::{BatchBuilder, BatchHeader};
    let env = Env::new();
    let m = env.manager();
    let log = env.log("a", &compact(&[]));
    fill(&log, 9, 3, T0);
    let txn_first = log.log_end_offset();
    let header = BatchHeader {
        producer_id: 7,
        producer_epoch: 0,
        base_sequence: 0,
        is_transactional: true,
        ..BatchHeader::default()
    };
    let mut b = BatchBuilder::new(header);
    b.append_next(T0, Some(b"key-0"), Some(b"txn"), &[]).unwrap();
    log.append_as_leader(&mut b.build().unwrap(), 0).unwrap();
    fill(&log, 9, 3, T0);
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (Some(txn_first), txn_first));
    let o = cleanable_offsets(&log, None, env.clock.milliseconds()).unwrap();
    assert_eq!(o.first_uncleanable_dirty_offset, txn_first);
    let ltc = grab(&m).expect("the data below the transaction is dirty");
    assert!(ltc.first_uncleanable_offset <= txn_first, "{}", ltc.first_uncleanable_offset);
    m.done_cleaning(&tp("a"), env.dir(), ltc.first_uncleanable_offset).unwrap();
    assert!(grab(&m).is_none(), "nothing cleanable below the open transaction: the log is not picked again");
    log.append_txn_marker(7, 0, true, 0, None).unwrap();
    fill(&log, 6, 3, T0);
    assert_eq!(log.first_unstable_offset(), None);
    assert!(grab(&m).is_some(), "committed: the rest of the log is cleanable");
}
