//! The active segment's indexes after a crash recovery: rebuilt in memory and opened once at
//! their full size (`segment.index.bytes`), written only when the file does not already start
//! with the rebuilt entries followed by a zero entry; appends, a read-only reader and the
//! close's trim see exactly the rebuilt entries.

use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use kafkalog::log::unified_log::LogOpenOptions;
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};

use crate::common::{append_values, backdate_files, batches, config, segment_file_name, Fixture, T0};

const INDEX_BYTES: u64 = 4096;

/// Every batch indexed; small preallocated indexes.
fn cfg() -> LogConfig {
    config(&[("index.interval.bytes", "1"), ("segment.index.bytes", "4096")])
}

/// Two closed segments of five batches and an active one of three (two index entries: a
/// segment's first batch is not indexed), then the state a crash leaves: the active segment's
/// indexes at their preallocated size.
fn crashed_log(fx: &Fixture) -> (PathBuf, PathBuf) {
    let log = fx.open(&cfg());
    for i in 0..13 {
        if i > 0 && i % 5 == 0 {
            log.roll().unwrap();
        }
        append_values(&log, T0 + i, &[&format!("v{i}")]);
    }
    log.close().unwrap();
    let index = fx.dir.join(segment_file_name(10, ".index"));
    let time_index = fx.dir.join(segment_file_name(10, ".timeindex"));
    assert_eq!((len(&index), len(&time_index)), (16, 24));
    std::fs::OpenOptions::new().write(true).open(&index).unwrap().set_len(INDEX_BYTES).unwrap();
    std::fs::OpenOptions::new().write(true).open(&time_index).unwrap().set_len(INDEX_BYTES / 12 * 12).unwrap();
    (index, time_index)
}

fn recover(fx: &Fixture) -> UnifiedLog {
    let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    UnifiedLog::open(&fx.dir, cfg(), options).unwrap()
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn stamp(path: &Path) -> (u64, std::time::SystemTime) {
    let meta = std::fs::metadata(path).unwrap();
    (meta.ino(), meta.modified().unwrap())
}

fn assert_reads(log: &UnifiedLog, range: std::ops::Range<i64>) {
    for i in range {
        let info = log.read(i, 1, FetchIsolation::LogEnd, true).unwrap();
        assert_eq!(batches(&info.records)[0].base_offset, i, "read at {i}");
        assert_eq!(log.offset_for_timestamp(T0 + i).unwrap().unwrap().offset, i, "timestamp of {i}");
    }
}

/// Indexes already holding the rebuilt entries are not written; they stay at full size, take
/// appends, and the close trims them to their entries.
#[test]
fn a_matching_active_index_is_opened_at_full_size_without_a_write() {
    let fx = Fixture::new();
    let (index, time_index) = crashed_log(&fx);
    let entries = std::fs::read(&index).unwrap()[..16].to_vec();
    backdate_files(&fx.dir);
    let before = (stamp(&index), stamp(&time_index));
    let log = recover(&fx);
    assert_eq!(log.load_result().segments_recovered, 3);
    assert_eq!((stamp(&index), stamp(&time_index)), before, "neither index is written");
    assert_eq!((len(&index), len(&time_index)), (INDEX_BYTES, INDEX_BYTES / 12 * 12));
    assert_eq!(&std::fs::read(&index).unwrap()[..16], &entries[..]);
    assert_reads(&log, 0..13);
    append_values(&log, T0 + 13, &["v13"]);
    assert_reads(&log, 0..14);
    log.close().unwrap();
    assert_eq!((len(&index), len(&time_index)), (24, 36), "trimmed to their three entries at close");
}

/// A stale entry right after the rebuilt ones (the index of a longer log whose tail a crash
/// lost) is cleared: the file is written, cut to the entries and extended with zeros, so a
/// read-only reader takes exactly the rebuilt entries.
#[test]
fn a_stale_entry_after_the_rebuilt_ones_is_cleared() {
    let fx = Fixture::new();
    let (index, time_index) = crashed_log(&fx);
    let file = std::fs::OpenOptions::new().write(true).open(&index).unwrap();
    // Relative offset 3, position 10_000 (past the data), then stale bytes further on.
    file.write_all_at(&[0, 0, 0, 3, 0, 0, 0x27, 0x10], 16).unwrap();
    file.write_all_at(&[7; 8], 800).unwrap();
    backdate_files(&fx.dir);
    let before = stamp(&time_index);
    let log = recover(&fx);
    let bytes = std::fs::read(&index).unwrap();
    assert_eq!(bytes.len() as u64, INDEX_BYTES);
    assert!(bytes[16..].iter().all(|&b| b == 0), "nothing follows the rebuilt entries");
    assert_eq!(stamp(&time_index), before, "the matching time index is not written");
    assert_reads(&log, 0..13);
    let reader = fx.open_read_only(&cfg());
    assert_reads(&reader, 0..13);
    drop(reader);
    log.close().unwrap();
    assert_eq!(len(&index), 16);
}

/// A crash recovery leaves the active segment's indexes unmapped: the log end comes from the
/// recovery's own scan, and the first use maps each index at its full size holding exactly the
/// rebuilt entries.
#[test]
fn the_recovered_active_indexes_are_mapped_at_their_first_use() {
    let fx = Fixture::new();
    let (index, time_index) = crashed_log(&fx);
    let log = recover(&fx);
    assert_eq!(log.log_end_offset(), 13);
    let active = log.active_segment().unwrap();
    assert!(!active.offset_index().unwrap().is_loaded(), "the offset index is not mapped by the load");
    assert!(!active.time_index().unwrap().is_loaded(), "the time index is not mapped by the load");
    assert_eq!((len(&index), len(&time_index)), (INDEX_BYTES, INDEX_BYTES / 12 * 12));
    assert_reads(&log, 0..13);
    assert!(active.offset_index().unwrap().is_loaded() && active.time_index().unwrap().is_loaded());
    assert_eq!(active.offset_index().unwrap().get().unwrap().entries(), 2);
    assert_eq!(active.offset_index().unwrap().get().unwrap().file_len() as u64, INDEX_BYTES);
    append_values(&log, T0 + 13, &["v13"]);
    assert_reads(&log, 0..14);
    log.close().unwrap();
    assert_eq!((len(&index), len(&time_index)), (24, 36));
}

/// An active index file shortened behind the log's back between the recovery and its first use
/// is refused with an error naming the file, rather than read from the wrong bytes.
#[test]
fn an_active_index_changed_after_the_recovery_is_refused_at_its_first_use() {
    let fx = Fixture::new();
    let (index, _) = crashed_log(&fx);
    let log = recover(&fx);
    std::fs::OpenOptions::new().write(true).open(&index).unwrap().set_len(16).unwrap();
    let err = log.read(10, 1, FetchIsolation::LogEnd, true).unwrap_err().to_string();
    assert!(err.contains(&index.display().to_string()) && err.contains("16 bytes long"), "{err}");
}

/// A close that finds the recovered active indexes never used cuts each file to its entries
/// without mapping it, so the next open does not take the preallocated zeros for entries.
#[test]
fn a_close_trims_recovered_active_indexes_never_used() {
    let fx = Fixture::new();
    let (index, time_index) = crashed_log(&fx);
    let log = recover(&fx);
    log.close().unwrap();
    assert_eq!(len(&index), 16, "the offset index cut to its two entries");
    assert_eq!(len(&time_index) % 12, 0);
    assert!(len(&time_index) <= 36);
    let log = fx.open(&cfg());
    assert_eq!(log.active_segment().unwrap().offset_index().unwrap().get().unwrap().entries(), 2);
    assert_reads(&log, 0..13);
}

/// A roll right after the recovery (an append too small for an index entry) trims the recovered
/// segment's indexes, which were never mapped, through the flush after the roll.
#[test]
fn a_roll_trims_recovered_active_indexes_never_used() {
    let fx = Fixture::new();
    let (index, _) = crashed_log(&fx);
    let log = recover(&fx);
    log.roll().unwrap();
    log.flush().unwrap();
    assert_eq!(len(&index), 16);
    append_values(&log, T0 + 13, &["v13"]);
    assert_reads(&log, 0..14);
    log.close().unwrap();
    let log = fx.open(&cfg());
    assert_reads(&log, 0..14);
}
