//! The cleaner threads and the `LogManager`'s use of them: the cleaner cases of Kafka's
//! `LogManagerTest` (and the two `LogCleanerManagerTest` cases that go through the manager),
//! then kafkalog's additions: dead threads counted and restarted, reconfiguration, uncleanable
//! reasons and retries, on-demand compaction, status and metrics. Manual clock throughout; the
//! thread tests wait for a state with a deadline, never for a fixed time.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafkalog::cleaner::cleaner_status::StatusFilter;
use kafkalog::cleaner::log_cleaner::CleanStatus;
use kafkalog::cleaner::log_cleaner_manager::LogCleaningState;
use kafkalog::config::CleanerConfig;
use kafkalog::error::Error;
use kafkalog::file_names::TopicPartition;
use kafkalog::log::unified_log::UnifiedLog;
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::clock::ManualClock;
use kafkalog::LogManagerConfig;

use crate::common::cleaner_manager::{base, compact, file_checkpoints, fill, grab, tp, Env, HANG_GUARD, HOUR};
use crate::common::{config, manager_config, scan_all, T0};

/// A broker config over `dirs` with 300-byte segments, a 2 MiB dedupe buffer, 64 KiB cleaner
/// I/O buffers and the keys `extra`.
fn cleaner_manager_config(dirs: &[&Path], extra: &[(&str, &str)]) -> LogManagerConfig {
    let mut props = vec![
        ("internal.segment.bytes", "300"),
        ("log.cleaner.dedupe.buffer.size", "2097152"),
        ("log.cleaner.io.buffer.size", "65536"),
    ];
    props.extend_from_slice(extra);
    manager_config(dirs, &props)
}

fn open_manager(dir: &Path, extra: &[(&str, &str)], clock: &Arc<ManualClock>, threads: bool) -> LogManager {
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: threads, ..LogManagerOptions::default() };
    LogManager::open(cleaner_manager_config(&[dir], extra), options).unwrap()
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
        assert!(cm.wait_for_cleaning_state(&tp("a"), LogCleaningState::Aborted, HANG_GUARD), "the clean is aborted");
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
        assert!(cm.wait_for_cleaning_state(&tp("a"), LogCleaningState::Aborted, HANG_GUARD), "the clean is aborted");
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
    assert!(cleaner.wait_for_deaths(1, HANG_GUARD), "a thread died");
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
    assert!(cleaner.wait_for_deaths(1, HANG_GUARD), "the thread died");
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
    assert!(cleaner.wait_for_deaths(1, HANG_GUARD), "a thread died");
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
    // Cleaned up to the active segment: the threads may clean a prefix while the logs fill (a
    // first segment of distinct keys keeps every byte), so wait for the last clean of each,
    // after which nothing is dirty and the recopy gauge shows a clean that dropped records.
    let ends = logs.clone().map(|l| (l.topic_partition().clone(), l.segments().last().unwrap().base_offset()));
    let cleaned = cleaner
        .manager()
        .wait_for_checkpoints(HANG_GUARD, |c| ends.iter().all(|(tp, end)| c.get(tp).copied().unwrap_or(0) >= *end));
    assert!(cleaned, "both partitions were cleaned up to their active segment");
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
