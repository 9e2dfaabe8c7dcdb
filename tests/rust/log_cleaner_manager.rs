//! The cleaner's partition states, checkpoints and threads: Kafka's `LogCleanerManagerTest`,
//! the cleaner cases of `LogManagerTest`, and kafkalog's additions (dead threads restarted,
//! reconfiguration, uncleanable reasons and retries, on-demand compaction, status, metrics).
//! Everything runs on a manual clock; the thread tests wait for a state with a deadline, never
//! for a fixed time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafkalog::cleaner::cleaner_status::StatusFilter;
use kafkalog::cleaner::log_cleaner::{CleanStatus, LogCleaner, LogCleanerContext};
use kafkalog::cleaner::log_cleaner_manager::{LogCleanerManager, LogCleaningState, LogEntry, LogSource, PreCleanStats};
use kafkalog::cleaner::log_to_clean::{cleanable_offsets, LogToClean};
use kafkalog::error::Error;
use kafkalog::log::file_names::TopicPartition;
use kafkalog::log::log_dir_failure_channel::LogDirFailureChannel;
use kafkalog::log::unified_log::{LogOpenOptions, UnifiedLog};
use kafkalog::manager::config::CleanerConfig;
use kafkalog::manager::log_dir::{read_checkpoint_or_empty, CLEANER_OFFSET_CHECKPOINT_FILE};
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::record::CompressionType;
use kafkalog::util::clock::{Clock, ManualClock};
use kafkalog::LogManagerConfig;

use crate::common::{batch, config, scan_all, T0};

const HOUR: i64 = 3_600_000;

/// A log dir (or two), a manual clock and a partition map the manager reads.
struct Env {
    _tmp: tempfile::TempDir,
    dirs: Vec<PathBuf>,
    clock: Arc<ManualClock>,
    channel: Arc<LogDirFailureChannel>,
    logs: Arc<Mutex<Vec<LogEntry>>>,
}

impl Env {
    fn new() -> Self {
        Self::with_dirs(1)
    }

    fn with_dirs(n: usize) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..n).map(|i| tmp.path().join(format!("data{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        Env {
            _tmp: tmp,
            dirs,
            clock: ManualClock::new(T0),
            channel: Arc::new(LogDirFailureChannel::new()),
            logs: Arc::default(),
        }
    }

    fn dir(&self) -> &Path {
        &self.dirs[0]
    }

    fn source(&self) -> LogSource {
        let logs = self.logs.clone();
        Arc::new(move || logs.lock().unwrap().clone())
    }

    fn manager(&self) -> LogCleanerManager {
        LogCleanerManager::new(&self.dirs, self.source(), self.channel.clone(), self.clock.clone())
    }

    fn cleaner(&self, config: CleanerConfig) -> LogCleaner {
        let ctx = LogCleanerContext {
            log_dirs: self.dirs.clone(),
            logs: self.source(),
            failure_channel: self.channel.clone(),
            clock: self.clock.clone(),
            max_message_bytes: 1_048_588,
            producer_id_expiration_ms: 86_400_000,
        };
        LogCleaner::new(config, ctx)
    }

    /// Opens `<topic>-0` in the first dir with `props` and adds it to the partition map.
    fn log(&self, topic: &str, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        self.log_in(0, topic, props)
    }

    /// Closes `log` and opens it again in its place in the partition map.
    fn reopen(&self, log: &Arc<UnifiedLog>, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        log.close().unwrap();
        let topic = log.topic_partition().topic.clone();
        let index = self.dirs.iter().position(|d| d == log.log_dir()).unwrap();
        self.logs.lock().unwrap().retain(|(tp, _)| tp.topic != topic);
        self.log_in(index, &topic, props)
    }

    fn log_in(&self, dir: usize, topic: &str, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        let options = LogOpenOptions {
            clock: self.clock.clone(),
            log_dir_failure_channel: Some(self.channel.clone()),
            ..LogOpenOptions::default()
        };
        let path = self.dirs[dir].join(format!("{topic}-0"));
        let log = Arc::new(UnifiedLog::open(&path, config(props), options).unwrap());
        self.logs.lock().unwrap().push((log.topic_partition().clone(), log.clone()));
        log
    }
}

/// Compacted, small segments (about three one-record batches each), any dirty ratio cleans.
fn compact(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut p =
        vec![("cleanup.policy", "compact"), ("internal.segment.bytes", "300"), ("min.cleanable.dirty.ratio", "0.01")];
    p.extend_from_slice(extra);
    p
}

/// Appends `n` one-record batches, keys `key-(i % keys)`, timestamped `ts`.
fn fill(log: &UnifiedLog, n: usize, keys: usize, ts: i64) {
    for i in 0..n {
        let (k, v) = (format!("key-{}", i % keys), format!("value-{i}"));
        let mut b = batch(0, CompressionType::None, &[(Some(k.as_bytes()), Some(v.as_bytes()), ts)]);
        log.append_as_leader(&mut b, 0).unwrap();
    }
}

fn base(log: &UnifiedLog, segment: usize) -> i64 {
    log.segments()[segment].base_offset()
}

fn file_checkpoints(dir: &Path) -> std::collections::HashMap<TopicPartition, i64> {
    read_checkpoint_or_empty(dir, CLEANER_OFFSET_CHECKPOINT_FILE)
}

fn tp(topic: &str) -> TopicPartition {
    TopicPartition::new(topic, 0)
}

fn grab(m: &LogCleanerManager) -> Option<LogToClean> {
    m.grab_filthiest_compacted_log(&mut PreCleanStats::default())
}

fn grabbed(m: &LogCleanerManager) -> Option<String> {
    grab(m).map(|l| l.log.topic_partition().topic.clone())
}

/// Waits (with a deadline) until `cond` holds.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
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
        wait_until("the abort is requested", || m.is_cleaning_in_state(&tp("a"), LogCleaningState::Aborted));
        assert!(!returned.load(Ordering::SeqCst), "abort_and_pause returned while the work ran");
        assert!(m.check_cleaning_aborted(&tp("a")).is_err());
        m.done_deleting(&[tp("a")]).unwrap();
        waiter.join().unwrap();
    });
    assert!(returned.load(Ordering::SeqCst));
    assert_eq!(m.cleaning_state(&tp("a")), Some(LogCleaningState::Paused(1)));
}

fn manager_config(dirs: &[&Path], extra: &[(&str, &str)]) -> LogManagerConfig {
    let dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(",");
    let mut props = vec![
        ("log.dirs", dirs.as_str()),
        ("internal.segment.bytes", "300"),
        ("log.cleaner.dedupe.buffer.size", "2097152"),
        ("log.cleaner.io.buffer.size", "65536"),
    ];
    props.extend_from_slice(extra);
    LogManagerConfig::from_props(props).unwrap()
}

fn open_manager(dir: &Path, extra: &[(&str, &str)], clock: &Arc<ManualClock>, threads: bool) -> LogManager {
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: threads, ..LogManagerOptions::default() };
    LogManager::open(manager_config(&[dir], extra), options).unwrap()
}

fn managed(m: &LogManager, topic: &str, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
    m.get_or_create_log(&tp(topic), Some(config(props)), None).unwrap()
}

/// testConcurrentLogCleanupAndTopicDeletion: deleting a partition being cleaned waits for the
/// clean to stop, then forgets its state and its checkpoint line.
#[test]
fn deleting_a_partition_waits_for_its_clean_and_forgets_it() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    let log = managed(&m, "a", &compact(&[]));
    managed(&m, "b", &compact(&[]));
    fill(&log, 20, 20, T0);
    let cm = m.log_cleaner().unwrap().manager().clone();
    cm.update_checkpoints(tmp.path(), Some((&tp("b"), 0)), None);
    let ltc = grab(&cm).unwrap();
    assert_eq!(ltc.log.topic_partition(), &tp("a"));
    std::thread::scope(|s| {
        let deleter = s.spawn(|| m.delete_log(&tp("a")));
        wait_until("the clean is aborted", || cm.is_cleaning_in_state(&tp("a"), LogCleaningState::Aborted));
        cm.done_cleaning(&tp("a"), tmp.path(), 20).unwrap();
        deleter.join().unwrap().unwrap();
    });
    assert_eq!(cm.cleaning_state(&tp("a")), None);
    let file = file_checkpoints(tmp.path());
    assert!(!file.contains_key(&tp("a")) && file.contains_key(&tp("b")), "{file:?}");
    m.close(-1).unwrap();
}

/// testDoesntCleanLogsWithCompactDeletePolicy / testDoesntCleanLogsWithCompactPolicy: the
/// retention task leaves compacted logs to the cleaner, whose loop gives `compact,delete` logs
/// full retention and `compact` logs the log-start check only.
#[test]
fn compacted_logs_get_retention_from_the_cleaner_only() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[("log.segment.delete.delay.ms", "0")], &clock, false);
    let held_back =
        [("min.cleanable.dirty.ratio", "1.0"), ("retention.ms", "60000"), ("internal.segment.bytes", "300")];
    let cd = managed(&m, "cd", &[&[("cleanup.policy", "compact,delete")][..], &held_back[..]].concat());
    let c = managed(&m, "c", &[&[("cleanup.policy", "compact")][..], &held_back[..]].concat());
    fill(&cd, 20, 20, T0);
    fill(&c, 20, 20, T0);
    clock.advance(2 * HOUR);
    let (cd_segments, c_segments) = (cd.segments().len(), c.segments().len());
    let ran = m.run_retention(kafkalog::log::unified_log::RetentionOptions::default()).unwrap();
    assert!(ran.is_empty(), "{ran:?}");
    assert_eq!((cd.segments().len(), c.segments().len()), (cd_segments, c_segments));

    let new_start = c.delete_records(base(&c, 2)).unwrap();
    assert!(m.run_cleaner_once().unwrap().is_none(), "nothing dirty enough to clean");
    assert_eq!(cd.segments().len(), 1, "compact,delete: every expired segment went");
    assert_eq!(c.segments().len(), c_segments - 2, "compact: only the segments below the log start");
    assert_eq!(c.log_start_offset(), new_start);
    m.close(-1).unwrap();
}

/// testTopicConfigChangeStopCleaningIfCompactIsRemoved.
#[test]
fn removing_compact_from_the_policy_aborts_the_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    let log = managed(&m, "a", &compact(&[]));
    fill(&log, 20, 20, T0);
    let cm = m.log_cleaner().unwrap().manager().clone();
    assert!(grab(&cm).is_some());
    std::thread::scope(|s| {
        let updater = s.spawn(|| m.update_topic_config("a", config(&[("cleanup.policy", "delete")])));
        wait_until("the clean is aborted", || cm.is_cleaning_in_state(&tp("a"), LogCleaningState::Aborted));
        cm.done_cleaning(&tp("a"), tmp.path(), 0).unwrap();
        updater.join().unwrap().unwrap();
    });
    assert_eq!(cm.cleaning_state(&tp("a")), None, "aborted, then resumed");
    assert!(!log.config().compact());
    m.close(-1).unwrap();
}

fn small_cleaner(threads: i32) -> CleanerConfig {
    CleanerConfig {
        num_threads: threads,
        dedupe_buffer_size: i64::from(threads) * 2 * 1024 * 1024,
        io_buffer_size: 64 * 1024,
        backoff_ms: 5,
        ..CleanerConfig::default()
    }
}

/// A clean that panics does not take the process down: the thread is counted dead, the
/// partition marked uncleanable with the panic message, and the thread restarted.
#[test]
fn a_panicking_clean_kills_only_its_thread_which_is_restarted() {
    let env = Env::new();
    let cleaner = env.cleaner(small_cleaner(2));
    let log = env.log("boom", &compact(&[]));
    fill(&log, 20, 20, T0);
    cleaner.set_clean_hook(Some(Arc::new(|tp: &TopicPartition| {
        assert_ne!(tp.topic, "boom", "deliberate panic in the clean of {tp}");
        Ok(())
    })));
    cleaner.startup().unwrap();
    assert_eq!(cleaner.thread_names(), ["kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"]);
    wait_until("a thread died", || cleaner.dead_thread_count() == 1);
    let reason = cleaner.manager().uncleanable_reason(&tp("boom")).unwrap().reason;
    assert!(reason.contains("deliberate panic in the clean of boom-0"), "{reason}");
    assert_eq!(cleaner.manager().cleaning_state(&tp("boom")), None, "the partition was released");
    assert_eq!(cleaner.metrics().dead_thread_count, 1);
    assert_eq!(cleaner.maybe_restart_dead_threads().unwrap(), 1);
    assert_eq!((cleaner.dead_thread_count(), cleaner.dead_thread_restarts(), cleaner.thread_count()), (0, 1, 2));
    cleaner.shutdown();
    assert_eq!(cleaner.thread_count(), 0);
}

/// The LogManager's scheduler tick restarts dead cleaner threads.
#[test]
fn the_scheduler_tick_restarts_dead_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[("log.cleaner.backoff.ms", "5")], &clock, true);
    let log = managed(&m, "boom", &compact(&[]));
    let cleaner = m.log_cleaner().unwrap().clone();
    cleaner.set_clean_hook(Some(Arc::new(|_: &TopicPartition| panic!("deliberate panic"))));
    fill(&log, 20, 20, T0);
    wait_until("the thread died", || cleaner.dead_thread_count() == 1 || cleaner.dead_thread_restarts() == 1);
    m.tick();
    assert_eq!((cleaner.dead_thread_count(), cleaner.dead_thread_restarts()), (0, 1));
    let status = m.cleaner_status(&StatusFilter::default()).unwrap();
    assert!(status[0].uncleanable_reason.as_deref().unwrap().contains("deliberate panic"), "{status:?}");
    m.close(-1).unwrap();
    assert_eq!(cleaner.thread_count(), 0, "close stops the cleaner threads");
}

/// `run_once` reports a panicking clean instead of unwinding into the caller.
#[test]
fn run_once_reports_a_panic() {
    let env = Env::new();
    let cleaner = env.cleaner(small_cleaner(1));
    let log = env.log("boom", &compact(&[]));
    fill(&log, 20, 20, T0);
    cleaner.set_clean_hook(Some(Arc::new(|_: &TopicPartition| panic!("deliberate panic"))));
    let outcome = cleaner.run_once().unwrap();
    assert!(matches!(&outcome.status, CleanStatus::Panicked(p) if p.contains("deliberate panic")), "{outcome:?}");
    assert_eq!(outcome.end_offset, outcome.first_dirty_offset);
    assert!(cleaner.run_once().is_none(), "uncleanable now");
}

/// Reconfiguration changes the thread count (within half and double), the map sizes and the
/// throttle, and replaces dead threads.
#[test]
fn reconfigure_changes_threads_and_throttle() {
    let env = Env::new();
    let cleaner = env.cleaner(small_cleaner(2));
    cleaner.startup().unwrap();
    let mut four = small_cleaner(4);
    four.max_io_bytes_per_second = 1e6;
    cleaner.reconfigure(&four).unwrap();
    assert_eq!(cleaner.thread_count(), 4);
    assert!((cleaner.throttler().desired_rate_per_sec() - 1e6).abs() < 1e-6);
    for (threads, rule) in [(1, "less than half the current value 4"), (9, "more than double the current value 4")] {
        match cleaner.reconfigure(&small_cleaner(threads)) {
            Err(Error::InvalidConfig { key, value, reason }) => {
                assert_eq!((key.as_str(), value), ("log.cleaner.threads", threads.to_string()));
                assert!(reason.contains(rule), "{reason}");
            }
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }
    let starved = CleanerConfig { dedupe_buffer_size: 4 * 1024 * 1024, ..small_cleaner(4) };
    let err = cleaner.reconfigure(&starved).unwrap_err().to_string();
    assert!(err.contains("log.cleaner.dedupe.buffer.size"), "{err}");
    assert_eq!(cleaner.thread_count(), 4, "a rejected config changes nothing");

    let log = env.log("boom", &compact(&[]));
    cleaner.set_clean_hook(Some(Arc::new(|_: &TopicPartition| panic!("deliberate panic"))));
    fill(&log, 20, 20, T0);
    wait_until("a thread died", || cleaner.dead_thread_count() == 1);
    cleaner.reconfigure(&small_cleaner(3)).unwrap();
    assert_eq!((cleaner.thread_count(), cleaner.dead_thread_count()), (3, 0));
    cleaner.shutdown();
}

/// A clean failing with an error makes the partition uncleanable with that reason, visible in
/// the status and the gauges; a topic config change (or a request) retries it.
#[test]
fn an_uncleanable_partition_shows_why_and_is_retried_after_a_config_change() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    let log = managed(&m, "a", &compact(&[]));
    fill(&log, 20, 20, T0);
    let cleaner = m.log_cleaner().unwrap();
    cleaner.set_clean_hook(Some(Arc::new(|_: &TopicPartition| Err(Error::corrupt(42, "injected damage")))));
    let outcome = m.run_cleaner_once().unwrap().unwrap();
    assert!(matches!(&outcome.status, CleanStatus::Uncleanable(r) if r.contains("injected damage")), "{outcome:?}");
    let status = &m.cleaner_status(&StatusFilter::default()).unwrap()[0];
    assert!(status.uncleanable_reason.as_deref().unwrap().contains("injected damage"));
    assert_eq!(status.uncleanable_since_ms, Some(T0));
    let metrics = m.cleaner_metrics().unwrap();
    assert_eq!(metrics.uncleanable_partitions_count[tmp.path()], 1);
    assert_eq!(metrics.uncleanable_bytes[tmp.path()], status.cleanable_bytes);
    assert!(status.cleanable_bytes > 0);
    assert!(m.run_cleaner_once().unwrap().is_none(), "not retried on its own");

    m.update_topic_config("a", config(&compact(&[("min.cleanable.dirty.ratio", "0.02")]))).unwrap();
    assert!(m.cleaner_status(&StatusFilter::default()).unwrap()[0].uncleanable_reason.is_none());
    assert!(m.run_cleaner_once().unwrap().is_some(), "retried after the config change");
    assert_eq!(m.retry_uncleanable(Some(&tp("a"))).unwrap(), [tp("a")]);
    assert!(m.retry_uncleanable(None).unwrap().is_empty());

    // A config change made on the log itself retries it too.
    assert!(m.run_cleaner_once().unwrap().is_some());
    assert!(cleaner.manager().uncleanable_reason(&tp("a")).is_some());
    log.update_config(config(&compact(&[("min.cleanable.dirty.ratio", "0.03")]))).unwrap();
    assert!(m.run_cleaner_once().unwrap().is_some());
    m.close(-1).unwrap();
}

/// The gauges Kafka exports, on a manual clock.
#[test]
fn metrics_have_kafkas_gauges() {
    let env = Env::new();
    let cleaner = env.cleaner(small_cleaner(1));
    let m = cleaner.manager();
    let log = env.log("a", &compact(&[]));
    fill(&log, 20, 20, T0);
    env.clock.advance(500);
    assert_eq!(cleaner.metrics().time_since_last_run_ms, 500);
    assert!(grab(m).is_some());
    let metrics = cleaner.metrics();
    assert_eq!((metrics.max_dirty_percent, metrics.time_since_last_run_ms, metrics.dead_thread_count), (100, 0, 0));
    assert_eq!(metrics.uncleanable_partitions_count[env.dir()], 0);
    assert_eq!(metrics.threads, 0, "no thread before startup");
}

/// The status shows the sections, the state, and the passes a small map needs (an upper bound
/// from exact per-segment record counts).
#[test]
fn status_shows_sections_and_passes_needed() {
    let env = Env::new();
    let config = CleanerConfig { dedupe_buffer_size: 240, ..small_cleaner(1) }; // 10 slots, 9 keys a pass
    let cleaner = env.cleaner(config);
    let log = env.log("a", &compact(&[]));
    env.log("plain", &[("cleanup.policy", "delete")]);
    fill(&log, 30, 30, T0);
    let m = cleaner.manager();
    let first_dirty = base(&log, 2);
    m.update_checkpoints(env.dir(), Some((&tp("a"), first_dirty)), None);
    m.abort_and_pause_cleaning_for(&tp("a"), "maintenance");
    let all = cleaner.status(&StatusFilter::default());
    assert_eq!(all.len(), 1, "compacted partitions only");
    let s = &all[0];
    let active = log.active_segment().unwrap().base_offset();
    let records: u64 = log
        .segments()
        .iter()
        .filter(|g| g.base_offset() >= first_dirty && g.base_offset() < active)
        .map(|g| g.record_count().unwrap())
        .sum();
    assert_eq!((s.first_dirty_offset, s.first_uncleanable_offset), (first_dirty, active));
    assert_eq!((s.records_to_clean, s.map_capacity), (records, 9));
    assert_eq!(s.passes_needed, records.div_ceil(9));
    assert!(s.passes_needed > 1);
    assert_eq!(s.state, "paused(1)");
    assert_eq!(s.pause_reasons, ["maintenance"]);
    assert_eq!(s.clean_bytes + s.cleanable_bytes + s.uncleanable_bytes, log.size_in_bytes());
    assert!((s.dirty_ratio - s.cleanable_bytes as f64 / (s.clean_bytes + s.cleanable_bytes) as f64).abs() < 1e-9);
    assert!(s.last_clean_ms.is_none() && s.uncleanable_reason.is_none());
    let filtered = cleaner.status(&StatusFilter { topic: Some("other".into()), partition: None });
    assert!(filtered.is_empty());
}

/// compact_now refuses what it cannot do, naming the partition and why.
#[test]
fn compact_now_refuses_paused_unknown_and_non_compacted_partitions() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    managed(&m, "plain", &[("cleanup.policy", "delete")]);
    let log = managed(&m, "a", &compact(&[]));
    fill(&log, 20, 20, T0);
    match m.compact_now(&tp("plain")) {
        Err(Error::InvalidConfig { key, value, reason }) => {
            assert_eq!((key.as_str(), value.as_str()), ("cleanup.policy", "delete"));
            assert!(reason.contains("plain-0"), "{reason}");
        }
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
    assert!(m.compact_now(&tp("nope")).unwrap_err().to_string().contains("nope-0"));
    let cm = m.log_cleaner().unwrap().manager().clone();
    cm.abort_and_pause_cleaning_for(&tp("a"), "a test");
    let err = m.compact_now(&tp("a")).unwrap_err().to_string();
    assert!(err.contains("a-0") && err.contains("paused(1)") && err.contains("a test"), "{err}");
    m.close(-1).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let m = open_manager(tmp.path(), &[("log.cleaner.enable", "false")], &clock, false);
    let err = m.compact_now(&tp("a")).unwrap_err().to_string();
    assert!(err.contains("log.cleaner.enable"), "{err}");
    m.close(-1).unwrap();
}

/// Below a clean's end offset each key is left at most once, and records were removed
/// (`fill(.., 60, 5, ..)` wrote 60 records over 5 keys).
fn assert_compacted(log: &UnifiedLog, upto: i64) {
    let records = scan_all(log, 0).unwrap();
    let mut seen = std::collections::HashSet::new();
    for r in records.iter().filter(|r| r.offset < upto) {
        assert!(seen.insert(r.key.clone()), "key {:?} survives twice below {upto}", r.key);
    }
    assert!(records.len() < 60, "nothing was removed: {} records", records.len());
}

/// compact_now waits for a thread's clean of the partition, then cleans the whole cleanable
/// range and checkpoints it (needs the Cleaner).
#[test]
fn compact_now_waits_for_a_running_clean_then_compacts() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    let log = managed(&m, "a", &compact(&[]));
    fill(&log, 60, 5, T0);
    let cm = m.log_cleaner().unwrap().manager().clone();
    cm.set_cleaning_state(&tp("a"), Some(LogCleaningState::InProgress));
    let released = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let compactor = s.spawn(|| {
            let r = m.compact_now(&tp("a"));
            (r, released.load(Ordering::SeqCst))
        });
        released.store(true, Ordering::SeqCst);
        cm.done_cleaning(&tp("a"), tmp.path(), 0).unwrap();
        compactor.join().unwrap()
    });
    let (result, waited) = result;
    assert!(waited, "compact_now ran while a clean held the partition");
    let result = result.unwrap();
    assert_eq!(result.end_offset, log.active_segment().unwrap().base_offset());
    assert!(!result.passes.is_empty());
    assert_eq!(file_checkpoints(tmp.path())[&tp("a")], result.end_offset);
    assert_eq!(cm.cleaning_state(&tp("a")), None);
    assert_compacted(&log, result.end_offset);
    let status = &m.cleaner_status(&StatusFilter::default()).unwrap()[0];
    assert_eq!(status.last_clean_range, Some((0, result.end_offset)));
    assert_eq!(status.last_clean_ms, Some(T0));
    m.close(-1).unwrap();
}

/// Two cleaner threads clean two partitions (needs the Cleaner).
#[test]
fn a_thread_pool_cleans_two_partitions() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let extra =
        [("log.cleaner.threads", "2"), ("log.cleaner.backoff.ms", "5"), ("log.cleaner.dedupe.buffer.size", "4194304")];
    let m = open_manager(tmp.path(), &extra, &clock, true);
    let logs = ["a", "b"].map(|t| {
        let log = managed(&m, t, &compact(&[]));
        fill(&log, 60, 5, T0);
        log
    });
    let cleaner = m.log_cleaner().unwrap().clone();
    wait_until("both partitions were cleaned", || {
        let c = cleaner.manager().all_cleaner_checkpoints();
        logs.iter().all(|l| c.get(l.topic_partition()).copied().unwrap_or(0) > 0)
    });
    for log in &logs {
        let checkpoint = cleaner.manager().all_cleaner_checkpoints()[log.topic_partition()];
        assert_compacted(log, checkpoint);
    }
    let metrics = m.cleaner_metrics().unwrap();
    assert_eq!((metrics.dead_thread_count, metrics.threads), (0, 2));
    assert!(metrics.max_clean_time_secs >= 0 && metrics.cleaner_recopy_percent < 100, "{metrics:?}");
    m.close(-1).unwrap();
}

/// One iteration of the loop on the caller's thread cleans the filthiest log and records its
/// stats (needs the Cleaner).
#[test]
fn run_cleaner_once_cleans_and_checkpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &[], &clock, false);
    let log = managed(&m, "a", &compact(&[]));
    fill(&log, 60, 5, T0);
    let outcome = m.run_cleaner_once().unwrap().unwrap();
    let CleanStatus::Cleaned(stats) = &outcome.status else { panic!("{outcome:?}") };
    assert!(stats.messages_read > stats.messages_written, "{stats:?}");
    assert_eq!(file_checkpoints(tmp.path())[&tp("a")], outcome.end_offset);
    assert_compacted(&log, outcome.end_offset);
    // 5 keys in a 2 MiB map: Kafka's gauge truncates the percentage to an int.
    assert!(stats.buffer_utilization > 0.0);
    let metrics = m.cleaner_metrics().unwrap();
    assert_eq!(metrics.max_buffer_utilization_percent, (stats.buffer_utilization * 100.0) as i32);
    let expected_recopy = (100.0 * stats.bytes_written as f64 / stats.bytes_read as f64) as i32;
    assert_eq!(metrics.cleaner_recopy_percent, expected_recopy);
    assert!(expected_recopy < 100);
    let status = &m.cleaner_status(&StatusFilter::default()).unwrap()[0];
    assert_eq!(status.last_clean_stats.as_ref().map(|s| s.messages_written), Some(stats.messages_written));
    assert_eq!(status.first_dirty_offset, outcome.end_offset);
    m.close(-1).unwrap();
}
