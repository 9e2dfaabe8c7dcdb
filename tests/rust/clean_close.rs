//! A standalone log's clean close (`kafkalog-clean-close`, `unified_log/clean_close.rs`): the
//! next open of the log alone skips recovery while the record still describes the directory,
//! and recovers as after a crash otherwise. Write, close or drop, change, reopen, assert.

use std::os::unix::fs::FileExt;

use kafkalog::file_names::CLEAN_CLOSE_FILE;
use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::{LogConfig, UnifiedLog};

use crate::common::{append_values, capture_log, config, expected_records, read_all, values_batch, Fixture, T0};

/// A standalone open (the Python `UnifiedLog.open`): records its clean close.
fn open_standalone(fx: &Fixture, cfg: &LogConfig) -> UnifiedLog {
    let options = LogOpenOptions { standalone_clean_close: true, ..fx.options() };
    UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap()
}

/// Fifteen single-record batches in three segments, closed cleanly by a standalone log.
fn closed_log(fx: &Fixture, cfg: &LogConfig) {
    let log = open_standalone(fx, cfg);
    for i in 0..15 {
        if i > 0 && i % 5 == 0 {
            log.roll().unwrap();
        }
        append_values(&log, T0 + i, &[&format!("v{i}")]);
    }
    log.close().unwrap();
}

fn marker(fx: &Fixture) -> std::path::PathBuf {
    fx.dir.join(CLEAN_CLOSE_FILE)
}

fn active_log_file(fx: &Fixture) -> std::path::PathBuf {
    fx.dir.join("00000000000000000010.log")
}

#[test]
fn a_standalone_reopen_after_a_clean_close_recovers_nothing() {
    let fx = Fixture::new();
    let cfg = config(&[("index.interval.bytes", "1")]);
    closed_log(&fx, &cfg);
    let size = std::fs::metadata(active_log_file(&fx)).unwrap().len();
    assert_eq!(std::fs::read_to_string(marker(&fx)).unwrap(), format!("0\n10 {size} 15\n"));

    let log = open_standalone(&fx, &cfg);
    assert_eq!(log.load_result().segments_recovered, 0);
    assert_eq!((log.log_end_offset(), log.recovery_point()), (15, 15));
    assert!(!marker(&fx).exists(), "a writable open takes the record before it changes anything");
    assert_eq!(read_all(&log, 0), expected_records(0..15));
    assert_eq!(log.offset_for_timestamp(T0 + 12).unwrap().unwrap().offset, 12, "the indexes serve as they were");
    append_values(&log, T0 + 15, &["v15"]);
    log.close().unwrap();
    assert!(marker(&fx).exists());

    // A log opened without the option (as a LogManager opens its logs) recovers its active
    // segment, and removes the record it does not keep.
    let managed = UnifiedLog::open(&fx.dir, cfg.clone(), fx.options()).unwrap();
    assert_eq!(managed.load_result().segments_recovered, 1);
    assert!(!marker(&fx).exists());
    managed.close().unwrap();
    assert!(!marker(&fx).exists(), "only a standalone log records its close");
    assert_eq!(open_standalone(&fx, &cfg).load_result().segments_recovered, 1);
}

#[test]
fn a_crash_after_the_reopen_is_recovered() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    closed_log(&fx, &cfg);
    {
        let log = open_standalone(&fx, &cfg);
        append_values(&log, T0 + 15, &["v15"]);
        // Crash: dropped without close, the last batch torn.
        let torn = values_batch(16, T0, &["torn"]);
        let f = std::fs::OpenOptions::new().append(true).open(active_log_file(&fx)).unwrap();
        f.write_all_at(&torn[..torn.len() / 2], f.metadata().unwrap().len()).unwrap();
        drop(log); // no close: nothing flushed, no record written
    }
    let log = open_standalone(&fx, &cfg);
    let loaded = log.load_result();
    assert_eq!(loaded.segments_recovered, 1);
    assert!(loaded.bytes_truncated > 0);
    assert_eq!(log.log_end_offset(), 16);
    assert_eq!(read_all(&log, 0), expected_records(0..16));
}

#[test]
fn a_record_that_no_longer_describes_the_directory_is_not_trusted() {
    let cfg = config(&[]);
    // Another writer changed the active segment's size (here: a torn append), or rolled.
    for change in ["grown", "rolled", "wrong log end"] {
        let fx = Fixture::new();
        closed_log(&fx, &cfg);
        let size = std::fs::metadata(active_log_file(&fx)).unwrap().len();
        let lines = match change {
            "grown" => {
                let f = std::fs::OpenOptions::new().append(true).open(active_log_file(&fx)).unwrap();
                f.write_all_at(&[0x5a; 40], size).unwrap();
                None
            }
            "rolled" => {
                std::fs::write(fx.dir.join("00000000000000000015.log"), b"").unwrap();
                None
            }
            _ => Some(format!("0\n10 {size} 14\n")),
        };
        if let Some(text) = lines {
            std::fs::write(marker(&fx), text).unwrap();
        }
        let (log, logged) = capture_log(|| open_standalone(&fx, &cfg));
        assert_eq!(log.load_result().segments_recovered, 1, "{change}");
        assert_eq!(log.log_end_offset(), 15, "{change}");
        assert_eq!(read_all(&log, 0), expected_records(0..15), "{change}");
        assert!(!marker(&fx).exists());
        if change == "wrong log end" {
            assert!(logged.iter().any(|(_, m)| m.contains("not the 14 its clean close recorded")), "{logged:?}");
        }
    }
}

#[test]
fn a_read_only_open_leaves_the_record() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    closed_log(&fx, &cfg);
    let before = std::fs::read(marker(&fx)).unwrap();
    let ro = fx.open_read_only(&cfg);
    assert_eq!(ro.log_end_offset(), 15);
    drop(ro);
    assert_eq!(std::fs::read(marker(&fx)).unwrap(), before);
    assert_eq!(open_standalone(&fx, &cfg).load_result().segments_recovered, 0);
}
