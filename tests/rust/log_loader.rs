//! Kafka's `LogLoaderTest` against `log_loader::load` (through `UnifiedLog::open`): leftover
//! files, missing and corrupt indexes, the clean-shutdown shortcut, torn and corrupt data, the
//! log-start wipe, interrupted replaces (`.cleaned` / `.swap`, fabricated from real segments and
//! produced by failing each rename of a real split), and the split of a segment whose offsets
//! span more than `i32::MAX`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kafkalog::error::Error;
use kafkalog::file_names::LEADER_EPOCH_CHECKPOINT_FILE;
use kafkalog::log::unified_log::{LogOpenOptions, RecoveryProgressFn};
use kafkalog::util::fault::{inject, FaultOp};
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};

use crate::common::{
    append_values, batches, capture_log, config, expected_records, files_with_suffix, lines_at, listing, read_all,
    scan_all, segment_bases, segment_file_name, values_batch, write_nonsense, Fixture, Rec, XorShift, T0,
};

/// Every index entry kept: lookups after a rebuild are exact, not just close.
fn dense_config() -> LogConfig {
    config(&[("index.interval.bytes", "1")])
}

/// Writes and closes a log of `segments` segments of five single-record batches, `v0`.. at
/// `T0 + offset`.
fn write_log(fx: &Fixture, cfg: &LogConfig, segments: i64) {
    let log = fx.open(cfg);
    for i in 0..5 * segments {
        if i > 0 && i % 5 == 0 {
            log.roll().unwrap();
        }
        append_values(&log, T0 + i, &[&format!("v{i}")]);
    }
    log.close().unwrap();
}

/// Three segments of [`dense_config`] written in `fx`; returns the config.
fn write_dense_log(fx: &Fixture) -> LogConfig {
    let cfg = dense_config();
    write_log(fx, &cfg, 3);
    cfg
}

fn rec(offset: i64, value: &str) -> Rec {
    Rec { offset, timestamp: T0 + offset, key: Some(b"k".to_vec()), value: Some(value.as_bytes().to_vec()) }
}

fn open_with(fx: &Fixture, cfg: &LogConfig, options: LogOpenOptions) -> UnifiedLog {
    UnifiedLog::open(&fx.dir, cfg.clone(), options).expect("open log")
}

/// The log opened as after a clean shutdown.
fn open_clean(fx: &Fixture, cfg: &LogConfig) -> UnifiedLog {
    open_with(fx, cfg, LogOpenOptions { had_clean_shutdown: true, ..fx.options() })
}

fn file_names(dir: &Path) -> Vec<String> {
    listing(dir).into_iter().map(|(n, _, _)| n).collect()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// Every offset in `range` is read back by `read` and found by `offset_for_timestamp`.
fn assert_lookups(log: &UnifiedLog, range: std::ops::Range<i64>) {
    for i in range {
        let info = log.read(i, 1, FetchIsolation::LogEnd, true).unwrap();
        assert_eq!(batches(&info.records)[0].base_offset, i, "read at {i}");
        assert_eq!(log.offset_for_timestamp(T0 + i).unwrap().unwrap().offset, i, "timestamp of {i}");
    }
}

/// A directory holding one segment at `base` with one single-record batch per `(offset, value)`
/// (timestamps `T0 + offset`), written by a real log: what a cleaner or a split would leave.
fn scratch_segment(fx: &Fixture, base: i64, records: &[(i64, &str)]) -> PathBuf {
    let dir = fx._tmp.path().join(format!("scratch{base}-0"));
    let options =
        LogOpenOptions { log_start_offset: Some(base), clock: fx.shared_clock(), ..LogOpenOptions::default() };
    let log = UnifiedLog::open(&dir, dense_config(), options).unwrap();
    for (offset, value) in records {
        log.append_as_follower(&values_batch(*offset, T0 + offset, &[value])).unwrap();
    }
    log.close().unwrap();
    assert_eq!(segment_bases(&log), vec![base]);
    dir
}

/// Copies the `.log`, `.index` and `.timeindex` of segment `base` from `from` into `to`, with
/// `suffix` appended to each name.
fn copy_segment(from: &Path, base: i64, to: &Path, suffix: &str) {
    for ext in [".log", ".index", ".timeindex"] {
        std::fs::copy(
            from.join(segment_file_name(base, ext)),
            to.join(segment_file_name(base, &format!("{ext}{suffix}"))),
        )
        .unwrap();
    }
}

/// Renames the three files of segment `base` in `dir` by appending `suffix`.
fn rename_segment(dir: &Path, base: i64, suffix: &str) {
    for ext in [".log", ".index", ".timeindex"] {
        std::fs::rename(
            dir.join(segment_file_name(base, ext)),
            dir.join(segment_file_name(base, &format!("{ext}{suffix}"))),
        )
        .unwrap();
    }
}

/// Inverts one byte of `path` (inside a batch's CRC-covered bytes, a CRC mismatch).
fn flip_byte(path: &Path, position: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, position).unwrap();
    f.write_all_at(&[!b[0]], position).unwrap();
}

fn assert_no_temp_files(dir: &Path) {
    assert_no_swap_files(dir);
    assert!(files_with_suffix(dir, ".deleted").is_empty(), ".deleted files left: {:?}", file_names(dir));
}

fn assert_no_swap_files(dir: &Path) {
    for suffix in [".swap", ".cleaned"] {
        assert!(files_with_suffix(dir, suffix).is_empty(), "{suffix} files left: {:?}", file_names(dir));
    }
}

/// testOpenDeletesObsoleteFiles: `.deleted` files (segments and snapshots) are removed at
/// open; a KRaft snapshot marked `.checkpoint.deleted` is left to the metadata log.
#[test]
fn open_deletes_obsolete_files() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    for leftover in [".log.deleted", ".index.deleted", ".timeindex.deleted", ".snapshot.deleted"] {
        std::fs::write(fx.dir.join(segment_file_name(99, leftover)), b"old").unwrap();
    }
    let kraft = "00000000000000000010-0000000001.checkpoint.deleted";
    std::fs::write(fx.dir.join(kraft), b"kraft").unwrap();
    let log = open_clean(&fx, &cfg);
    assert_eq!(files_with_suffix(&fx.dir, ".deleted"), vec![kraft]);
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

/// testBogusIndexSegmentsAreRemoved: index files whose `.log` is missing are deleted and
/// counted; the segments around them keep theirs.
#[test]
fn bogus_index_segments_are_removed() {
    let fx = Fixture::new();
    let cfg = dense_config();
    write_log(&fx, &cfg, 2);
    for orphan in [".index", ".timeindex", ".txnindex"] {
        std::fs::write(fx.dir.join(segment_file_name(3, orphan)), b"").unwrap();
    }
    std::fs::write(fx.dir.join(segment_file_name(77, ".index")), [0u8; 16]).unwrap();
    let log = open_clean(&fx, &cfg);
    assert_eq!(log.load_result().orphan_files_deleted, 4);
    let mut want: Vec<String> =
        [0, 5].iter().flat_map(|b| [".index", ".log", ".timeindex"].map(|s| segment_file_name(*b, s))).collect();
    want.push(LEADER_EPOCH_CHECKPOINT_FILE.to_string());
    // A clean shutdown without producer snapshots: Kafka's rebuildProducerState skips the scan
    // and snapshots the last segment's base and the log end.
    want.extend([5, 10].map(|b| segment_file_name(b, ".snapshot")));
    want.sort();
    assert_eq!(file_names(&fx.dir), want);
    assert_eq!(read_all(&log, 0), expected_records(0..10));
    assert_eq!(append_values(&log, T0 + 10, &["v10"]), 10, "the log takes appends");
}

/// testIndexRebuild: with both index files of every segment deleted, every segment is
/// recovered and its indexes rebuilt from the data, even after a clean shutdown.
#[test]
fn index_rebuild() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let index_lens: Vec<u64> = [0, 5].iter().map(|b| file_len(&fx.dir.join(segment_file_name(*b, ".index")))).collect();
    for base in [0, 5, 10] {
        std::fs::remove_file(fx.dir.join(segment_file_name(base, ".index"))).unwrap();
        std::fs::remove_file(fx.dir.join(segment_file_name(base, ".timeindex"))).unwrap();
    }
    let log = open_clean(&fx, &cfg);
    let load = log.load_result();
    assert_eq!((load.segments_recovered, load.bytes_truncated), (3, 0));
    assert_eq!(index_lens, vec![32, 32], "four entries per closed segment (the first batch is never indexed)");
    for base in [0, 5] {
        assert_eq!(file_len(&fx.dir.join(segment_file_name(base, ".index"))), 32, "rebuilt and trimmed");
        assert_eq!(file_len(&fx.dir.join(segment_file_name(base, ".timeindex"))), 48);
    }
    assert_lookups(&log, 0..15);
}

/// A log of three dense segments written in `fx` with the two damaged offset indexes of
/// [`corrupt_index_rebuild`]: segment 0's is cut to a length that is not a multiple of 8,
/// segment 5's last entry is negative. Returns its config and the two indexes' paths.
fn log_with_two_damaged_indexes(fx: &Fixture) -> (LogConfig, PathBuf, PathBuf) {
    use std::os::unix::fs::FileExt;
    let cfg = write_dense_log(fx);
    let ragged = fx.dir.join(segment_file_name(0, ".index"));
    std::fs::OpenOptions::new().write(true).open(&ragged).unwrap().set_len(29).unwrap();
    let negative = fx.dir.join(segment_file_name(5, ".index"));
    let f = std::fs::OpenOptions::new().write(true).open(&negative).unwrap();
    f.write_all_at(&(-3i32).to_be_bytes(), 24).unwrap();
    (cfg, ragged, negative)
}

/// testCorruptIndexRebuild: an offset index whose length is not a multiple of 8, or whose last
/// entry is negative, is rebuilt by the load (here without a clean shutdown, so the load checks
/// every segment below the recovery point); an intact one is not touched.
#[test]
fn corrupt_index_rebuild() {
    let fx = Fixture::new();
    let (cfg, ragged, negative) = log_with_two_damaged_indexes(&fx);
    let unclean = LogOpenOptions { had_clean_shutdown: false, recovery_point: Some(15), ..fx.options() };
    let log = open_with(&fx, &cfg, unclean);
    let load = log.load_result();
    // The two damaged ones, and the last (it holds the recovery point, as after any crash).
    assert_eq!((load.segments_recovered, load.bytes_truncated), (3, 0));
    assert_eq!((file_len(&ragged), file_len(&negative)), (32, 32));
    assert_lookups(&log, 0..15);
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

/// After a clean shutdown the load opens no index of an inactive segment (Kafka's loader checks
/// none): the same damaged indexes are found at their first use and rebuilt there from the
/// segment's data, with the data untouched; the last segment is checked by the load.
#[test]
fn corrupt_index_rebuilt_at_first_use_after_a_clean_shutdown() {
    let fx = Fixture::new();
    let (cfg, ragged, negative) = log_with_two_damaged_indexes(&fx);
    let log = open_clean(&fx, &cfg);
    let load = log.load_result();
    assert_eq!((load.segments_recovered, load.bytes_truncated), (0, 0));
    assert_eq!((file_len(&ragged), file_len(&negative)), (29, 32), "nothing read or written yet");
    let pending: Vec<bool> = log.segments().iter().map(|s| s.index_check_pending()).collect();
    assert_eq!(pending, [true, true, false], "the last segment is checked at load");
    assert_lookups(&log, 0..15);
    assert_eq!(log.segments().iter().filter(|s| s.index_check_pending()).count(), 0);
    assert_eq!(file_len(&ragged), 32, "rebuilt and trimmed");
    let rebuilt = std::fs::read(&negative).unwrap();
    assert_eq!(&rebuilt[24..28], &4i32.to_be_bytes(), "the last entry is offset 5 + 4 again");
    assert_eq!(read_all(&log, 0), expected_records(0..15));
    log.close().unwrap();
    let log = open_clean(&fx, &cfg);
    assert_lookups(&log, 0..15);
    assert_eq!((file_len(&ragged), std::fs::read(&negative).unwrap()), (32, rebuilt), "an intact index stays");
}

/// The first users of a segment whose index check was left to its first use wait for one
/// check: readers on four threads at once all find every record, and each damaged index is
/// rebuilt once (one warning per segment, whichever thread ran its check).
#[test]
fn first_use_check_under_concurrent_readers() {
    let fx = Fixture::new();
    let (cfg, ragged, _) = log_with_two_damaged_indexes(&fx);
    let log = open_clean(&fx, &cfg);
    assert!(log.segments()[0].index_check_pending());
    let warnings: Vec<String> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..4).map(|_| scope.spawn(|| capture_log(|| assert_lookups(&log, 0..15)).1)).collect();
        readers.into_iter().flat_map(|r| r.join().unwrap()).map(|(_, line)| line).collect()
    });
    let rebuilt: Vec<&String> = warnings.iter().filter(|w| w.contains("Found a corrupted index file")).collect();
    assert_eq!(rebuilt.len(), 2, "{warnings:?}");
    assert!(log.segments().iter().all(|s| !s.index_check_pending()));
    assert_eq!(file_len(&ragged), 32);
}

/// The other damage the load's checks find, found at first use: a time index whose length is
/// not a whole number of entries, and an offset index with a preallocated tail of zeros never
/// trimmed. Each is rebuilt, with a warning naming the file.
#[test]
fn time_index_and_untrimmed_damage_found_at_first_use() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let time_index = fx.dir.join(segment_file_name(0, ".timeindex"));
    std::fs::OpenOptions::new().write(true).open(&time_index).unwrap().set_len(50).unwrap();
    let untrimmed = fx.dir.join(segment_file_name(5, ".index"));
    std::fs::OpenOptions::new().write(true).open(&untrimmed).unwrap().set_len(48).unwrap();
    let log = open_clean(&fx, &cfg);
    let (_, lines) = capture_log(|| assert_lookups(&log, 0..15));
    let warnings = lines_at(&lines, ::log::Level::Warn);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains(&format!("time index file {} has a length of 50 bytes", time_index.display())));
    assert!(warnings[1].contains(&format!("index file {} ends with an entry of zeros", untrimmed.display())));
    assert_eq!((file_len(&time_index), file_len(&untrimmed)), (48, 32));
}

/// A rebuild at first use that cannot be written fails the lookup and leaves the check
/// pending: the next lookup checks again and rebuilds. One that cannot be built (here more
/// entries than a lowered `segment.index.bytes` holds) leaves both indexes empty, with a
/// warning, and lookups scan the segment.
#[test]
fn failed_rebuild_at_first_use() {
    let fx = Fixture::new();
    let (cfg, ragged, negative) = log_with_two_damaged_indexes(&fx);
    let log = open_clean(&fx, &cfg);
    {
        let _fault = inject(&ragged, FaultOp::Rename, libc::EIO, None);
        assert!(log.read(0, 1, FetchIsolation::LogEnd, true).is_err());
        assert!(log.segments()[0].index_check_pending(), "the check is tried again");
        assert_eq!(file_len(&ragged), 29, "left as it was");
    }
    assert_lookups(&log, 0..5);
    assert_eq!(file_len(&ragged), 32);
    log.roll().unwrap(); // an empty active segment, whose indexes fit the smaller size
    log.close().unwrap();
    let small = config(&[("index.interval.bytes", "1"), ("segment.index.bytes", "16")]);
    let log = open_clean(&fx, &small);
    let (_, lines) = capture_log(|| assert_lookups(&log, 5..10));
    assert!(lines_at(&lines, ::log::Level::Warn).iter().any(|w| w.contains("they are left empty")), "{lines:?}");
    assert_eq!(file_len(&negative), 0);
}

/// testRebuildTimeIndexForOldMessages: a deleted time index of a segment below the recovery
/// point comes back as an empty file and is not rebuilt (only a missing or corrupt offset
/// index makes the loader recover a segment there); lookups by time still find the records by
/// scanning.
#[test]
fn missing_time_index_below_the_recovery_point_comes_back_empty() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let time_index = fx.dir.join(segment_file_name(0, ".timeindex"));
    std::fs::remove_file(&time_index).unwrap();
    let log = open_clean(&fx, &cfg);
    assert_eq!(log.load_result().segments_recovered, 0);
    assert_eq!(file_len(&time_index), 0);
    assert_eq!(file_len(&fx.dir.join(segment_file_name(0, ".index"))), 32, "the offset index is kept");
    assert_lookups(&log, 0..15);
    log.close().unwrap();
}

/// testCleanShutdownFile: after a clean shutdown nothing is recovered and the recovery point is
/// the log end; without one, every segment from the recovery point on is.
#[test]
fn clean_shutdown_skips_recovery() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let clean = LogOpenOptions { had_clean_shutdown: true, recovery_point: Some(0), ..fx.options() };
    let log = open_with(&fx, &cfg, clean);
    let load = log.load_result();
    assert_eq!((load.segments_loaded, load.segments_recovered), (3, 0));
    assert_eq!((load.recovery_point, log.recovery_point(), log.log_end_offset()), (15, 15, 15));
    log.close().unwrap();

    let unclean = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    let log = open_with(&fx, &cfg, unclean);
    let load = log.load_result();
    assert_eq!((load.segments_loaded, load.segments_recovered, load.bytes_truncated), (3, 3, 0));
    assert_eq!((load.recovery_point, log.recovery_point(), log.log_end_offset()), (0, 0, 15));
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

/// Better than Kafka: a torn tail in a log that was shut down cleanly (damaged afterwards) is
/// recovered at open instead of failing it; every complete batch survives.
#[test]
fn torn_tail_after_a_clean_shutdown_is_recovered() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let active = fx.dir.join(segment_file_name(10, ".log"));
    let clean_len = file_len(&active);
    write_nonsense(&active, clean_len, 30, 5);
    let clean = LogOpenOptions { had_clean_shutdown: true, recovery_point: Some(15), ..fx.options() };
    let log = open_with(&fx, &cfg, clean);
    let load = log.load_result();
    assert_eq!((load.segments_recovered, load.bytes_truncated), (1, 30));
    assert_eq!(file_len(&active), clean_len);
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

/// testCorruptLog: random garbage after the last batch is cut back to the last valid batch,
/// whatever its bytes; every record survives.
#[test]
fn corrupt_log_tail_is_truncated() {
    let cfg = dense_config();
    let mut rng = XorShift(17);
    for seed in 1..=8u64 {
        let fx = Fixture::new();
        write_log(&fx, &cfg, 3);
        let active = fx.dir.join(segment_file_name(10, ".log"));
        let clean_len = file_len(&active);
        let garbage = 1 + rng.below(200) as usize;
        write_nonsense(&active, clean_len, garbage, seed);
        let log = fx.open(&cfg);
        let load = log.load_result();
        assert_eq!((load.segments_recovered, load.bytes_truncated), (1, garbage as u64), "seed {seed}");
        assert_eq!(file_len(&active), clean_len, "seed {seed}");
        assert_eq!(read_all(&log, 0), expected_records(0..15), "seed {seed}");
        assert_eq!(append_values(&log, T0 + 15, &["v15"]), 15, "seed {seed}");
    }
}

/// testCorruptLog (middle segment): during unclean recovery from offset 0, a corrupt batch in
/// the second segment truncates it there and deletes every later segment.
#[test]
fn corruption_in_a_middle_segment_deletes_the_later_segments() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let middle = fx.dir.join(segment_file_name(5, ".log"));
    let b = batches(&std::fs::read(&middle).unwrap());
    let third_at: usize = b[..2].iter().map(|b| b.size).sum();
    flip_byte(&middle, third_at as u64 + 40);
    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    let load = log.load_result();
    assert_eq!((load.segments_recovered, load.segments_deleted), (2, 1));
    assert_eq!(load.bytes_truncated, b[2..].iter().map(|b| b.size as u64).sum::<u64>());
    assert_eq!((log.log_end_offset(), segment_bases(&log)), (7, vec![0, 5]));
    assert_eq!(read_all(&log, 0), expected_records(0..7));
    assert_eq!(
        files_with_suffix(&fx.dir, ".deleted"),
        [".index.deleted", ".log.deleted", ".timeindex.deleted"].map(|s| segment_file_name(10, s)),
        "renamed, to be unlinked after file.delete.delay.ms"
    );
}

/// testLogEndLessThanStartAfterReopen: one segment is overwritten with garbage; recovery cuts it
/// to empty and deletes the later segments, which leaves the log end below the log start
/// checkpoint, so every segment goes (with a warning) and the log restarts empty there.
#[test]
fn log_end_less_than_start_after_reopen() {
    let fx = Fixture::new();
    let cfg = dense_config();
    {
        let log = fx.open(&cfg);
        for i in 0..5 {
            append_values(&log, T0 + i, &[&format!("v{i}")]);
            log.roll().unwrap();
        }
        assert_eq!(segment_bases(&log), vec![0, 1, 2, 3, 4, 5]);
        log.close().unwrap();
    }
    std::fs::write(fx.dir.join(segment_file_name(1, ".log")), b"corruptRecord").unwrap();
    let options = LogOpenOptions { log_start_offset: Some(4), recovery_point: Some(0), ..fx.options() };
    let (log, lines) = capture_log(|| open_with(&fx, &cfg, options));
    let load = log.load_result();
    assert!(load.log_start_wiped);
    assert_eq!((load.bytes_truncated, load.segments_deleted), (13, 6));
    let warnings = lines_at(&lines, ::log::Level::Warn);
    assert!(
        warnings.iter().any(|w| w.contains("because logEndOffset (1) is smaller than logStartOffset 4")),
        "{warnings:?}"
    );
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.high_watermark()), (4, 4, 4));
    assert_eq!(segment_bases(&log), vec![4]);
    assert_eq!(files_with_suffix(&fx.dir, ".log.deleted").len(), 6);
    fx.clock.advance(cfg.file_delete_delay_ms);
    log.delete_due_files().unwrap();
    let mut want: Vec<String> = [".index", ".log", ".timeindex"].map(|s| segment_file_name(4, s)).into();
    want.push(LEADER_EPOCH_CHECKPOINT_FILE.to_string());
    assert_eq!(file_names(&fx.dir), want);
    assert_eq!(std::fs::read_to_string(fx.dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap(), "0\n0\n", "cleared");
    assert_eq!(append_values(&log, T0, &["x"]), 4);
}

/// testRecoveryAfterCrashDuringSplitPhase1/2: a `.cleaned` segment means the replace never
/// reached its point of no return: it and every `.swap` at or above it are dropped and the old
/// segments stay.
#[test]
fn interrupted_clean_is_rolled_back() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let cleaned = scratch_segment(&fx, 0, &[(0, "c0"), (4, "c4"), (9, "c9")]);
    copy_segment(&cleaned, 0, &fx.dir, ".cleaned");
    let swapped = scratch_segment(&fx, 10, &[(10, "c10"), (14, "c14")]);
    copy_segment(&swapped, 10, &fx.dir, ".swap");
    let log = fx.open(&cfg);
    let load = log.load_result();
    assert_eq!((load.temp_files_dropped, load.swaps_completed), (6, 0));
    assert_no_temp_files(&fx.dir);
    assert_eq!(segment_bases(&log), vec![0, 5, 10]);
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

/// A compacted replacement for segments 0 and 5 (offsets 0..=8), as the cleaner writes it.
fn compacted_0_to_8(fx: &Fixture) -> PathBuf {
    scratch_segment(fx, 0, &[(0, "c0"), (2, "c2"), (4, "c4"), (6, "c6"), (8, "c8")])
}

fn compacted_expected() -> Vec<Rec> {
    let mut want: Vec<Rec> = [0, 2, 4, 6, 8].iter().map(|&o| rec(o, &format!("c{o}"))).collect();
    want.extend(expected_records(10..15));
    want
}

/// testRecoveryAfterCrashDuringSplitPhase3: only `.swap` files, old segments still live: the
/// replace is completed. Every file named in [min swap base, max swap next offset) goes, the
/// swap files are renamed into place.
#[test]
fn interrupted_swap_is_completed() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    copy_segment(&compacted_0_to_8(&fx), 0, &fx.dir, ".swap");
    let log = fx.open(&cfg);
    let load = log.load_result();
    assert_eq!((load.swaps_completed, load.temp_files_dropped), (3, 0));
    assert_no_temp_files(&fx.dir);
    assert_eq!(segment_bases(&log), vec![0, 10]);
    assert!(!fx.dir.join(segment_file_name(5, ".log")).exists());
    assert_eq!(read_all(&log, 0), compacted_expected());
    assert_eq!(log.offset_for_timestamp(T0 + 5).unwrap().unwrap().offset, 6);
}

/// testRecoveryAfterCrashDuringSplitPhase4: `.swap` files with the old segments partly renamed
/// `.deleted` already: the replace is completed the same way.
#[test]
fn interrupted_swap_with_old_segments_partly_deleted_is_completed() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    copy_segment(&compacted_0_to_8(&fx), 0, &fx.dir, ".swap");
    rename_segment(&fx.dir, 0, ".deleted");
    let log = fx.open(&cfg);
    assert_eq!(log.load_result().swaps_completed, 3);
    assert_no_temp_files(&fx.dir);
    assert_eq!(segment_bases(&log), vec![0, 10]);
    assert_eq!(read_all(&log, 0), compacted_expected());
}

/// LogLoader's KAFKA-6264 rule: a `.swap` below the smallest `.cleaned` offset belongs to an
/// earlier, finished-but-not-renamed replace and is completed; `.swap` files at or above it are
/// dropped with the `.cleaned` ones.
#[test]
fn swap_below_a_cleaned_segment_is_kept() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    copy_segment(&scratch_segment(&fx, 0, &[(1, "c1"), (3, "c3")]), 0, &fx.dir, ".swap");
    copy_segment(&scratch_segment(&fx, 5, &[(9, "c9")]), 5, &fx.dir, ".cleaned");
    copy_segment(&scratch_segment(&fx, 10, &[(14, "c14")]), 10, &fx.dir, ".swap");
    let log = fx.open(&cfg);
    let load = log.load_result();
    assert_eq!((load.swaps_completed, load.temp_files_dropped), (3, 6));
    assert_no_temp_files(&fx.dir);
    assert_eq!(segment_bases(&log), vec![0, 5, 10]);
    let mut want = vec![rec(1, "c1"), rec(3, "c3")];
    want.extend(expected_records(5..15));
    assert_eq!(read_all(&log, 0), want);
}

/// A read-only open of a directory with a pending replace (only `.swap` files) reads the swap
/// segments in place of the ones they supersede, and changes nothing on disk.
#[test]
fn read_only_open_reads_a_pending_swap() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    copy_segment(&compacted_0_to_8(&fx), 0, &fx.dir, ".swap");
    let before = listing(&fx.dir);
    let log = fx.open_read_only(&cfg);
    assert_eq!(segment_bases(&log), vec![0, 10]);
    assert_eq!(read_all(&log, 0), compacted_expected());
    assert_eq!(log.offset_for_timestamp(T0 + 3).unwrap().unwrap().offset, 4);
    log.close().unwrap();
    assert_eq!(listing(&fx.dir), before);
}

/// A read-only open sees what a writable open would: a `.swap` below a `.cleaned` segment
/// stands in for the segment it replaces, the ones at or above are ignored.
#[test]
fn read_only_open_applies_the_cleaned_rule_to_swaps() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    copy_segment(&scratch_segment(&fx, 0, &[(1, "c1"), (3, "c3")]), 0, &fx.dir, ".swap");
    copy_segment(&scratch_segment(&fx, 5, &[(9, "c9")]), 5, &fx.dir, ".cleaned");
    copy_segment(&scratch_segment(&fx, 10, &[(14, "c14")]), 10, &fx.dir, ".swap");
    let before = listing(&fx.dir);
    let mut want = vec![rec(1, "c1"), rec(3, "c3")];
    want.extend(expected_records(5..15));
    let ro = fx.open_read_only(&cfg);
    assert_eq!(read_all(&ro, 0), want);
    ro.close().unwrap();
    assert_eq!(listing(&fx.dir), before);
    assert_eq!(read_all(&fx.open(&cfg), 0), want, "the writer agrees");
}

/// One batch at offset 0 and one at 3_000_000_000 in a single segment file, as a cleaner
/// before KAFKA-6264 could leave them, followed (when `with_next`) by a normal segment.
const FAR: i64 = 3_000_000_000;

fn write_overflowed_segment(fx: &Fixture, with_next: bool) {
    std::fs::create_dir_all(&fx.dir).unwrap();
    let mut bytes = values_batch(0, T0, &["a", "b"]);
    bytes.extend(values_batch(FAR, T0 + 1, &["c", "d"]));
    std::fs::write(fx.dir.join(segment_file_name(0, ".log")), bytes).unwrap();
    if with_next {
        std::fs::write(fx.dir.join(segment_file_name(FAR + 2, ".log")), values_batch(FAR + 2, T0 + 2, &["e"])).unwrap();
    }
}

fn overflowed_records(with_next: bool) -> Vec<Rec> {
    let r = |offset: i64, ts: i64, v: &str| Rec {
        offset,
        timestamp: ts,
        key: Some(b"k".to_vec()),
        value: Some(v.as_bytes().to_vec()),
    };
    let mut want = vec![r(0, T0, "a"), r(1, T0, "b"), r(FAR, T0 + 1, "c"), r(FAR + 1, T0 + 1, "d")];
    if with_next {
        want.push(r(FAR + 2, T0 + 2, "e"));
    }
    want
}

/// testOverCompactedLogRecovery: a segment whose batches lie more than `i32::MAX` offsets
/// apart is split into one segment per reachable range; every record stays readable and
/// indexed, and no temporary file is left.
#[test]
fn over_compacted_log_recovery() {
    let fx = Fixture::new();
    let cfg = dense_config();
    write_overflowed_segment(&fx, false);
    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    let load = log.load_result();
    assert_eq!((load.segments_split, load.bytes_truncated), (1, 0));
    assert_eq!(segment_bases(&log), vec![0, FAR]);
    assert_eq!(log.log_end_offset(), FAR + 2);
    assert_no_swap_files(&fx.dir);
    assert_eq!(files_with_suffix(&fx.dir, ".deleted").len(), 3, "the old segment, unlinked after the delay");
    fx.clock.advance(cfg.file_delete_delay_ms);
    log.delete_due_files().unwrap();
    assert_no_temp_files(&fx.dir);
    assert_eq!(scan_all(&log, 0).unwrap(), overflowed_records(false));
    for (offset, base) in [(0, 0), (1, 0), (2, FAR), (FAR, FAR), (FAR + 1, FAR)] {
        let info = log.read(offset, 1 << 20, FetchIsolation::LogEnd, true).unwrap();
        assert_eq!(batches(&info.records)[0].base_offset, base, "read at {offset}");
    }
    assert_eq!(log.offset_for_timestamp(T0).unwrap().unwrap().offset, 0);
    assert_eq!(log.offset_for_timestamp(T0 + 1).unwrap().unwrap().offset, FAR);
    assert_eq!(append_values(&log, T0 + 2, &["e"]), FAR + 2);
    log.close().unwrap();
    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    assert_eq!((log.load_result().segments_split, log.load_result().bytes_truncated), (0, 0), "valid indexes");
    assert_eq!(scan_all(&log, 0).unwrap(), overflowed_records(true));
}

/// testSplitOnOffsetOverflow: a split part that is not the active segment is left as a
/// rolled segment is: its indexes trimmed to their entries, its time index ending with the
/// largest timestamp (Kafka calls `onBecomeInactiveSegment` on every part), and every part
/// keeps the old file's modification time (retention's clock for data without timestamps).
#[test]
fn split_parts_are_finished_like_rolled_segments() {
    let fx = Fixture::new();
    let cfg = dense_config();
    write_overflowed_segment(&fx, true);
    let day_ago = T0 - 86_400_000;
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_millis(day_ago as u64);
    std::fs::File::options()
        .write(true)
        .open(fx.dir.join(segment_file_name(0, ".log")))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // A clean shutdown: only the missing offset index makes the loader recover (and split).
    let log = open_clean(&fx, &cfg);
    assert_eq!(log.load_result().segments_split, 1);
    assert_eq!(segment_bases(&log), vec![0, FAR, FAR + 2]);
    for base in [0, FAR] {
        assert_eq!(file_len(&fx.dir.join(segment_file_name(base, ".index"))), 0, "segment {base}: one batch, no entry");
        assert_eq!(
            file_len(&fx.dir.join(segment_file_name(base, ".timeindex"))),
            12,
            "segment {base}: the final entry"
        );
    }
    let parts = log.segments();
    assert_eq!((parts[0].last_modified().unwrap(), parts[1].last_modified().unwrap()), (day_ago, day_ago));
    log.close().unwrap();
    let log = open_clean(&fx, &cfg);
    assert_eq!(log.load_result().segments_recovered, 0);
    assert_eq!(scan_all(&log, 0).unwrap(), overflowed_records(true));
    assert_eq!(log.offset_for_timestamp(T0 + 1).unwrap().unwrap().offset, FAR);
}

/// An overflowed segment with a torn tail after its last batch: the split keeps both parts and
/// the torn bytes are cut; only segments after the split ones may be deleted.
#[test]
fn split_of_a_segment_with_a_torn_tail_keeps_every_part() {
    let fx = Fixture::new();
    let cfg = dense_config();
    write_overflowed_segment(&fx, false);
    let log_file = fx.dir.join(segment_file_name(0, ".log"));
    let size = file_len(&log_file);
    write_nonsense(&log_file, size, 30, 7);
    // Index files present: the segment is split during recovery from the recovery point.
    std::fs::write(fx.dir.join(segment_file_name(0, ".index")), b"").unwrap();
    std::fs::write(fx.dir.join(segment_file_name(0, ".timeindex")), b"").unwrap();
    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    let load = log.load_result();
    assert_eq!((load.segments_split, load.bytes_truncated), (1, 30));
    assert_eq!(segment_bases(&log), vec![0, FAR]);
    assert_eq!(scan_all(&log, 0).unwrap(), overflowed_records(false));
    assert_eq!(log.log_end_offset(), FAR + 2);
}

/// testRecoveryAfterCrashDuringSplitPhase1..5 with the real split: each rename of the replace
/// fails once (a crash at that point), then a reopen finishes or rolls back the split and
/// every record is there, in two segments, with no temporary file left.
#[test]
fn split_interrupted_at_each_rename_recovers() {
    let cfg = dense_config();
    // The file whose rename fails, in the order the replace renames them, and the reopen's
    // (temp_files_dropped, swaps_completed): each split part has three files.
    let steps = [
        (segment_file_name(FAR, ".log.cleaned"), (6, 0)), // phase 1: every new segment still .cleaned
        (segment_file_name(0, ".log.cleaned"), (6, 0)),   // phase 2: the higher new segment is .swap already
        (segment_file_name(0, ".log"), (0, 6)),           // phase 3: all new segments .swap, the old one live
        (segment_file_name(0, ".index"), (0, 6)),         // phase 4: the old segment half renamed .deleted
        (segment_file_name(0, ".log.swap"), (0, 6)),      // phase 4': old segment .deleted, new ones all .swap
        (segment_file_name(FAR, ".log.swap"), (0, 3)),    // phase 5: the lower new segment is live
    ];
    for (i, (file, counts)) in steps.iter().enumerate() {
        let fx = Fixture::new();
        write_overflowed_segment(&fx, false);
        let target = fx.dir.join(file);
        let fault = inject(&target, FaultOp::Rename, libc::EIO, Some(1));
        let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
        match UnifiedLog::open(&fx.dir, cfg.clone(), options.clone()) {
            Err(Error::Io { path, .. }) => assert_eq!(path, target, "step {i}"),
            other => panic!("step {i}: expected the rename of {file} to fail, got {other:?}"),
        }
        drop(fault);
        let log = open_with(&fx, &cfg, options);
        let load = log.load_result();
        assert_eq!((load.temp_files_dropped, load.swaps_completed), *counts, "step {i}");
        let resplit = usize::from(counts.1 == 0);
        assert_eq!(load.segments_split, resplit, "step {i}: rolled back and split again, or completed");
        assert_no_swap_files(&fx.dir);
        fx.clock.advance(cfg.file_delete_delay_ms);
        log.delete_due_files().unwrap();
        assert_no_temp_files(&fx.dir);
        assert_eq!(segment_bases(&log), vec![0, FAR], "step {i}");
        assert_eq!(scan_all(&log, 0).unwrap(), overflowed_records(false), "step {i}");
        assert_eq!(log.log_end_offset(), FAR + 2, "step {i}");
    }
}

/// Recovery progress: during unclean recovery the callback hears how many segments are left,
/// counting down to 0.
#[test]
fn recovery_reports_progress() {
    let fx = Fixture::new();
    let cfg = write_dense_log(&fx);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let progress = RecoveryProgressFn(Arc::new(move |left| sink.lock().unwrap().push(left)));
    let options = LogOpenOptions { recovery_point: Some(0), progress: Some(progress.clone()), ..fx.options() };
    let log = open_with(&fx, &cfg, options);
    assert_eq!(log.load_result().segments_recovered, 3);
    assert_eq!(*heard.lock().unwrap(), vec![3, 2, 1, 0]);
    log.close().unwrap();

    heard.lock().unwrap().clear();
    let options = LogOpenOptions { had_clean_shutdown: true, progress: Some(progress), ..fx.options() };
    open_with(&fx, &cfg, options);
    assert!(heard.lock().unwrap().is_empty(), "nothing to recover after a clean shutdown");
}

/// The files a crash recovery would only write again with the same bytes are left as they are
/// (no write, no replaced inode), and the same set of files with Kafka's bytes remains: an
/// index with a damaged byte is still rewritten, a snapshot with other content is replaced, a
/// snapshot past the first recovered segment that no segment end rewrites is deleted (Kafka's
/// first `truncateAndReload` deletes every snapshot past it).
#[test]
fn crash_recovery_keeps_identical_files_and_rewrites_the_others() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fixture::new();
    let cfg = dense_config();
    write_log(&fx, &cfg, 4);
    let path = |base: i64, suffix: &str| fx.dir.join(segment_file_name(base, suffix));
    let kept: Vec<PathBuf> = [0, 5, 10]
        .iter()
        .flat_map(|&b| [path(b, ".index"), path(b, ".timeindex")])
        .chain([5, 10, 15, 20].iter().map(|&o| path(o, ".snapshot")))
        .collect();
    let before: Vec<(Vec<u8>, u64)> =
        kept.iter().map(|p| (std::fs::read(p).unwrap(), std::fs::metadata(p).unwrap().ino())).collect();
    let (damaged_index, other_snapshot, stray) = (path(5, ".index"), path(10, ".snapshot"), path(12, ".snapshot"));
    flip_byte(&damaged_index, 7);
    std::fs::write(&other_snapshot, b"not this snapshot").unwrap();
    std::fs::write(&stray, &before[7].0).unwrap();
    crate::common::backdate_files(&fx.dir);
    let stamps: Vec<std::time::SystemTime> =
        kept.iter().map(|p| std::fs::metadata(p).unwrap().modified().unwrap()).collect();

    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    assert_eq!(log.load_result().segments_recovered, 4);
    for (i, p) in kept.iter().enumerate() {
        assert_eq!(std::fs::read(p).unwrap(), before[i].0, "{} holds the rebuilt bytes", p.display());
        let meta = std::fs::metadata(p).unwrap();
        if *p == damaged_index || *p == other_snapshot {
            assert_ne!(meta.modified().unwrap(), stamps[i], "{} is rewritten", p.display());
        } else {
            assert_eq!((meta.ino(), meta.modified().unwrap()), (before[i].1, stamps[i]), "{} is kept", p.display());
        }
    }
    assert!(!stray.exists(), "a snapshot no segment end rewrites is deleted");
    assert_eq!(files_with_suffix(&fx.dir, ".snapshot").len(), 4, "{:?}", file_names(&fx.dir));
    assert_no_temp_files(&fx.dir);
    assert_lookups(&log, 0..20);
}

/// A recovery that truncates a segment deletes the deferred snapshots past the new log end
/// with the later segments, and the snapshot at the truncated segment's end is written.
#[test]
fn crash_recovery_truncation_drops_the_deferred_snapshots_past_it() {
    let fx = Fixture::new();
    let cfg = dense_config();
    write_log(&fx, &cfg, 4);
    let log_file = fx.dir.join(segment_file_name(5, ".log"));
    let size = file_len(&log_file);
    flip_byte(&log_file, size - 3);
    let log = open_with(&fx, &cfg, LogOpenOptions { recovery_point: Some(0), ..fx.options() });
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(
        files_with_suffix(&fx.dir, ".snapshot"),
        vec![segment_file_name(5, ".snapshot"), segment_file_name(9, ".snapshot")]
    );
    assert_no_swap_files(&fx.dir);
}
