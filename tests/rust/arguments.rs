//! Hostile arguments through the Rust API (issue 12, section 4): every offset a caller hands
//! to a `UnifiedLog` is checked before anything changes (Kafka's error where Kafka has one), an
//! append cannot push offsets past `i64::MAX`, a path that is no partition directory says what
//! it is, and a `LogManager` refuses a name the file system cannot hold as the caller's error,
//! keeping the log dir online.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kafkalog::error::Error;
use kafkalog::file_names::TopicPartition;
use kafkalog::log::unified_log::{check_first_dirty_offset, LogOpenOptions, MAX_OFFSET};
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::clock::ManualClock;
use kafkalog::{FetchIsolation, UnifiedLog};

use crate::common::{append_values, config, manager_config, read_all, values_batch, Fixture, T0};

/// Every file under `dir` with its bytes: what "unchanged" means.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.insert(path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap());
    }
    out
}

/// (log start, high watermark, log end, recovery point).
fn log_offsets(log: &UnifiedLog) -> (i64, i64, i64, i64) {
    (log.log_start_offset(), log.high_watermark(), log.log_end_offset(), log.recovery_point())
}

/// The message of an `InvalidArgument` naming `argument`, `value` and the range `[0, MAX]`.
fn assert_invalid_argument<T: std::fmt::Debug>(result: kafkalog::Result<T>, argument: &str, value: i64, call: &str) {
    match result {
        Err(e @ Error::InvalidArgument { .. }) => {
            let text = e.to_string();
            assert!(text.starts_with(&format!("invalid value {value} for {argument}:")), "{call}: {text}");
        }
        other => panic!("{call}: expected InvalidArgument for {argument}={value}, got {other:?}"),
    }
}

/// A log of three segments holding offsets 0..9, with the log start raised to 2 and the high
/// watermark set to 8.
fn trimmed_three_segments(fx: &Fixture) -> UnifiedLog {
    let log = fx.open(&config(&[]));
    for round in 0..3 {
        append_values(&log, T0, &["a", "b", "c"]);
        if round < 2 {
            log.roll().unwrap();
        }
    }
    assert_eq!(log.delete_records(2).unwrap(), 2);
    assert_eq!(log.set_high_watermark(8).unwrap(), 8);
    log.flush().unwrap();
    log
}

#[test]
fn refused_offsets_change_nothing() {
    let fx = Fixture::new();
    let log = trimmed_three_segments(&fx);
    let (files, before) = (snapshot(&fx.dir), log_offsets(&log));
    let max = format!("[0, {MAX_OFFSET}]");

    // The defect of issue 12: -1 was accepted, the log restarted at -1 and lost the next record.
    for bad in [-1, i64::MIN] {
        let refused = log.truncate_fully_and_start_at(bad);
        assert_invalid_argument(refused, "offset", bad, "truncate_fully_and_start_at");
    }
    let text = log.truncate_fully_and_start_at(-1).unwrap_err().to_string();
    assert!(text.contains("topic-0") && text.contains(&max), "{text}");
    // Kafka's truncateTo: IllegalArgumentException("Cannot truncate partition ... to a negative offset").
    let text = log.truncate_to(-1).unwrap_err().to_string();
    assert!(text.contains("cannot truncate partition topic-0 to a negative offset") && text.contains(&max), "{text}");
    assert_invalid_argument(log.truncate_to(-5), "offset", -5, "truncate_to");
    assert_invalid_argument(log.set_high_watermark(-1), "offset", -1, "set_high_watermark");
    assert_invalid_argument(log.offset_for_timestamp(-4), "timestamp", -4, "offset_for_timestamp");
    assert_invalid_argument(log.offset_for_timestamp(i64::MIN), "timestamp", i64::MIN, "offset_for_timestamp");
    assert_invalid_argument(log.scan(-1, 5, FetchIsolation::LogEnd, |_| Ok(true)), "start", -1, "scan");
    assert_invalid_argument(log.scan(0, -1, FetchIsolation::LogEnd, |_| Ok(true)), "end", -1, "scan");
    let mut batch = values_batch(0, T0, &["x"]);
    assert_invalid_argument(log.append_as_leader(&mut batch, -2), "leader_epoch", -2, "append_as_leader");
    // Kafka's DeleteRecords: a negative offset, or one past the high watermark, is out of range.
    for bad in [-1, i64::MIN, 9] {
        match log.delete_records(bad) {
            Err(Error::OffsetOutOfRange { offset, log_start_offset: 2, log_end_offset: 8 }) => assert_eq!(offset, bad),
            other => panic!("delete_records({bad}): {other:?}"),
        }
    }
    // Kafka's read: OffsetOutOfRange outside [log start, log end].
    for bad in [-1, 1, 10, i64::MAX] {
        let refused = log.read(bad, 1 << 20, FetchIsolation::LogEnd, true);
        assert!(matches!(refused, Err(Error::OffsetOutOfRange { offset, .. }) if offset == bad), "read({bad})");
    }

    assert_eq!(log_offsets(&log), before, "a refused call moved an offset");
    assert_eq!(snapshot(&fx.dir), files, "a refused call changed a file");
    // The log still works: the next record gets the next offset, and survives a reopen.
    assert_eq!(append_values(&log, T0, &["d"]), 9);
    log.close().unwrap();
    let log = fx.open(&config(&[]));
    let got: Vec<i64> = read_all(&log, 0).iter().map(|r| r.offset).collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
}

#[test]
fn accepted_edges_still_work() {
    let fx = Fixture::new();
    let log = trimmed_three_segments(&fx);
    assert_eq!(log.delete_records(1).unwrap(), 2, "below the log start: nothing changes (Kafka)");
    assert_eq!(log.delete_records(8).unwrap(), 8, "up to the high watermark");
    assert_eq!(log.set_high_watermark(0).unwrap(), 8, "clamped to the log start");
    assert!(!log.truncate_to(i64::MAX).unwrap(), "past the log end: nothing to truncate (Kafka)");
    let mut seen = 0;
    log.scan(0, i64::MAX, FetchIsolation::LogEnd, |_| {
        seen += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen, 1, "the batch holding the log start, once");
    log.scan(100, 5, FetchIsolation::LogEnd, |_| panic!("an empty range visits nothing")).unwrap();
    assert!(log.offset_for_timestamp(i64::MAX).unwrap().is_none());
    log.truncate_fully_and_start_at(0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
}

/// A log end offset is at most `i64::MAX`: the last record an append may write is at
/// `i64::MAX - 1`. Offsets past it used to wrap around (to negative log end offsets).
#[test]
fn appends_stop_at_the_largest_offset() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    log.truncate_fully_and_start_at(MAX_OFFSET - 2).unwrap();
    assert_eq!(append_values(&log, T0, &["a", "b"]), MAX_OFFSET - 2);
    assert_eq!(log.log_end_offset(), MAX_OFFSET);
    let files = snapshot(&fx.dir);
    let mut more = values_batch(0, T0, &["c"]);
    let refused = log.append_as_leader(&mut more, 0);
    assert!(
        matches!(&refused, Err(Error::InvalidOffset { reason }) if reason.contains("room for 0 more")),
        "{refused:?}"
    );
    assert_eq!(snapshot(&fx.dir), files);

    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    log.truncate_fully_and_start_at(MAX_OFFSET - 3).unwrap();
    let mut two = values_batch(0, T0, &["a", "b", "c", "d"]);
    assert!(matches!(log.append_as_leader(&mut two, 0), Err(Error::InvalidOffset { .. })), "4 records, room for 3");
    // A follower batch ending at i64::MAX would leave no log end offset.
    let refused = log.append_as_follower(&values_batch(MAX_OFFSET - 3, T0, &["a", "b", "c", "d"]));
    assert!(matches!(refused, Err(Error::InvalidOffset { .. })), "{refused:?}");
    log.append_as_follower(&values_batch(MAX_OFFSET - 3, T0, &["a", "b", "c"])).unwrap();
    assert_eq!(log.log_end_offset(), MAX_OFFSET);
    log.close().unwrap();
    let log = fx.open(&config(&[]));
    assert_eq!(read_all(&log, MAX_OFFSET - 3).len(), 3);
}

#[test]
fn first_dirty_offset_must_lie_in_the_log() {
    let fx = Fixture::new();
    let log = trimmed_three_segments(&fx);
    for ok in [0, 2, 9] {
        check_first_dirty_offset(&log, ok).unwrap();
    }
    for bad in [-1, 10, i64::MAX] {
        let e = check_first_dirty_offset(&log, bad).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains("for first_dirty_offset: must be an offset in [0, 9]"), "{e}");
    }
}

#[test]
fn opening_what_is_not_a_partition_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let open = |path: &Path, read_only: bool| {
        UnifiedLog::open(path, config(&[]), LogOpenOptions { read_only, ..LogOpenOptions::default() })
    };
    let file = tmp.path().join("s1.py");
    std::fs::write(&file, "print()").unwrap();
    for read_only in [false, true] {
        match open(&file, read_only) {
            Err(Error::Io { path, source, .. }) => {
                assert_eq!(path, file);
                assert_eq!(source.kind(), std::io::ErrorKind::NotADirectory);
                assert!(source.to_string().contains("is a regular file, not a partition directory"), "{source}");
            }
            other => panic!("read_only={read_only}: {other:?}"),
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "print()");
    match open(&tmp.path().join("missing-0"), true) {
        Err(Error::Io { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    for bad in ["orders", "orders-x", "-3"] {
        match open(&tmp.path().join(bad), false) {
            Err(e @ Error::InvalidArgument { .. }) => {
                assert!(e.to_string().contains("<topic>-<partition>"), "{e}");
            }
            other => panic!("{bad}: {other:?}"),
        }
        assert!(!tmp.path().join(bad).exists(), "{bad}: created");
    }
    // A name the file system cannot hold is refused before anything is created.
    let long = tmp.path().join("sub").join(format!("{}-0", "t".repeat(300)));
    assert!(matches!(open(&long, false), Err(Error::InvalidTopic { .. })));
    assert!(!tmp.path().join("sub").exists());
}

/// A `LogManager` over `dir` with the broker defaults, on a manual clock, no scheduler thread.
fn open_default_manager(dir: &Path) -> LogManager {
    let options =
        LogManagerOptions { clock: ManualClock::new(T0), start_scheduler: false, ..LogManagerOptions::default() };
    LogManager::open(manager_config(&[dir], &[]), options).unwrap()
}

/// The case: `create_log("a" * 249, 2147483647)` failed with ENAMETOOLONG, took the
/// only log dir offline, and every later call failed with `AllLogDirsOffline`.
#[test]
fn a_name_the_file_system_cannot_hold_keeps_the_dir_online() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let m = open_default_manager(&dir);
    let longest = "a".repeat(249);
    for (topic, partition) in [(longest.as_str(), i32::MAX), (longest.as_str(), 100_000)] {
        let e = m.get_or_create_log(&TopicPartition::new(topic, partition), None, None).unwrap_err();
        assert!(matches!(&e, Error::InvalidTopic { .. }), "{e:?}");
        let text = e.to_string();
        let name = format!("{topic}-{partition}");
        assert!(text.contains(&format!("'{name}' is {} bytes long", name.len())) && text.contains("255"), "{text}");
    }
    let e = m.get_or_create_log(&TopicPartition::new("orders", -1), None, None).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument { .. }) && e.to_string().contains("negative"), "{e}");
    let dirs = m.log_dirs();
    assert!(dirs[0].online && dirs[0].offline_reason.is_none(), "{dirs:?}");
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(entries.iter().all(|n| !n.to_string_lossy().starts_with('a')), "{entries:?}");
    // Later calls work, and Kafka's longest topic still fits with a 5-digit partition.
    let log: Arc<UnifiedLog> = m.get_or_create_log(&TopicPartition::new(&longest, 99_999), None, None).unwrap();
    append_values(&log, T0, &["x"]);
    m.get_or_create_log(&TopicPartition::new("orders", 0), None, None).unwrap();
    assert_eq!(m.logs().unwrap().len(), 2);
    let renamed = m.delete_log(&TopicPartition::new(&longest, 99_999)).unwrap();
    assert!(renamed.file_name().unwrap().len() <= 255);
    m.close(-1).unwrap();
}
