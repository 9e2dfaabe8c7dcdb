//! Opening a partition directory that another handle is writing (read-only mode), and reopening
//! one after a crash (recovery), in the style "write, drop without close, damage, reopen, assert".

use std::os::unix::fs::FileExt;

use kafkalog::error::Error;
use kafkalog::log::unified_log::{LogOpenOptions, MAX_TIMESTAMP};
use kafkalog::record::CompressionType;
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};

use crate::common::{
    append_values, backdate_files, batch, batches, config, expected_records, files_with_suffix, listing, read_all,
    values_batch, write_nonsense, Fixture, Rec, T0,
};

/// A log with three segments of five single-record batches each, records `v0`..`v14`.
fn fifteen_records_in_three_segments(fx: &Fixture, cfg: &LogConfig) -> UnifiedLog {
    let log = fx.open(cfg);
    for i in 0..15 {
        if i > 0 && i % 5 == 0 {
            log.roll().unwrap();
        }
        append_values(&log, T0 + i, &[&format!("v{i}")]);
    }
    assert_eq!(log.number_of_segments(), 3);
    log
}

fn active_log_file(log: &UnifiedLog) -> std::path::PathBuf {
    log.segments().last().unwrap().path()
}

fn append_raw(path: &std::path::Path, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all_at(bytes, f.metadata().unwrap().len()).unwrap();
}

#[test]
fn read_only_log_rejects_every_write() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    fifteen_records_in_three_segments(&fx, &cfg).close().unwrap();
    let log = fx.open_read_only(&cfg);
    assert!(log.read_only());
    let ro = |r: kafkalog::Result<()>, what: &str| {
        assert!(matches!(r, Err(Error::ReadOnly { .. })), "{what}: {r:?}");
    };
    ro(log.append_as_leader(&mut values_batch(0, T0, &["x"]), 0).map(drop), "append_as_leader");
    ro(log.append_as_follower(&values_batch(15, T0, &["x"])).map(drop), "append_as_follower");
    ro(log.roll().map(drop), "roll");
    ro(log.flush(), "flush");
    ro(log.truncate_to(3).map(drop), "truncate_to");
    ro(log.truncate_fully_and_start_at(100), "truncate_fully_and_start_at");
    ro(log.delete_records(2).map(drop), "delete_records");
    ro(log.assign_topic_id(kafkalog::checkpoint::partition_metadata::TopicId::random()), "assign_topic_id");
    assert_eq!(read_all(&log, 0), expected_records(0..15), "reads still work");
}

#[test]
fn read_only_open_changes_nothing_in_the_directory() {
    let fx = Fixture::new();
    let cfg = config(&[("index.interval.bytes", "1")]);
    let log = fifteen_records_in_three_segments(&fx, &cfg);
    log.assign_topic_id(kafkalog::checkpoint::partition_metadata::TopicId::random()).unwrap();
    log.close().unwrap();
    // Leftovers a writable open would clean up: a `.deleted` file and an orphan index.
    std::fs::write(fx.dir.join("00000000000000000099.log.deleted"), b"old").unwrap();
    std::fs::write(fx.dir.join("00000000000000000077.index"), [0u8; 16]).unwrap();
    backdate_files(&fx.dir);
    let before = listing(&fx.dir);
    {
        let log = fx.open_read_only(&cfg);
        assert_eq!(log.log_end_offset(), 15);
        assert_eq!(read_all(&log, 0), expected_records(0..15));
        assert_eq!(log.offset_for_timestamp(T0 + 7).unwrap().unwrap().offset, 7);
        assert_eq!(log.segment_infos().unwrap().len(), 3);
        log.close().unwrap();
    }
    assert_eq!(listing(&fx.dir), before, "names, sizes and mtimes are unchanged");
}

#[test]
fn read_only_log_ends_at_the_last_complete_batch() {
    // A torn tail: half of a batch, or garbage, after the last complete batch of a live log.
    let cfg = config(&[("index.interval.bytes", "1")]);
    let half = values_batch(15, T0, &["torn"]);
    let half = &half[..half.len() / 2];
    let garbage: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
    for tail in [half, &garbage[..], &[0u8; 100][..]] {
        let fx = Fixture::new();
        let log = fifteen_records_in_three_segments(&fx, &cfg);
        log.flush().unwrap();
        append_raw(&active_log_file(&log), tail);
        let before = listing(&fx.dir);
        let ro = fx.open_read_only(&cfg);
        assert_eq!((ro.log_start_offset(), ro.log_end_offset(), ro.high_watermark()), (0, 15, 15));
        assert_eq!(read_all(&ro, 0), expected_records(0..15));
        assert!(ro.read(15, 1 << 20, FetchIsolation::LogEnd, true).unwrap().records.is_empty());
        assert_eq!(ro.offset_for_timestamp(T0 + 14).unwrap().unwrap().offset, 14);
        assert_eq!(ro.offset_for_timestamp(MAX_TIMESTAMP).unwrap().unwrap().offset, 14);
        let infos = ro.segment_infos().unwrap();
        assert_eq!(infos.iter().map(|s| s.record_count).sum::<u64>(), 15);
        assert_eq!(listing(&fx.dir), before, "the torn tail is left for the writer's recovery");
        drop(ro);
        drop(log);
    }
}

#[test]
fn read_only_log_reads_a_live_preallocated_segment() {
    // preallocate=true: the writer's active segment is a 1 MiB file of data then zeros until
    // it is rolled or closed.
    let fx = Fixture::new();
    let cfg = config(&[("preallocate", "true"), ("segment.bytes", "1048576"), ("index.interval.bytes", "100")]);
    let writer = fx.open(&cfg);
    for i in 0..20 {
        append_values(&writer, T0 + i, &[&format!("v{i}")]);
    }
    writer.flush().unwrap();
    assert_eq!(std::fs::metadata(active_log_file(&writer)).unwrap().len(), 1_048_576, "preallocated");
    let ro = fx.open_read_only(&cfg);
    assert_eq!(ro.log_end_offset(), 20);
    assert_eq!(read_all(&ro, 0), expected_records(0..20));
    assert_eq!(ro.offset_for_timestamp(T0 + 11).unwrap().unwrap().offset, 11);
    assert_eq!(ro.offset_for_timestamp(T0 + 19).unwrap().unwrap().offset, 19, "after the last index entry");
    assert_eq!(ro.offset_for_timestamp(T0 + 100).unwrap(), None);
    assert_eq!(ro.offset_for_timestamp(MAX_TIMESTAMP).unwrap().unwrap().offset, 19);
    let infos = ro.segment_infos().unwrap();
    assert_eq!((infos.len(), infos[0].record_count, infos[0].max_timestamp), (1, 20, T0 + 19));
    let mut seen = 0;
    ro.scan(0, i64::MAX, FetchIsolation::LogEnd, |_| {
        seen += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen, 20);
    // The writer keeps going; the reader's view is the snapshot it opened.
    append_values(&writer, T0 + 20, &["v20"]);
    assert_eq!(ro.log_end_offset(), 20);
    writer.close().unwrap();
    assert!(std::fs::metadata(active_log_file(&writer)).unwrap().len() < 1_048_576, "trimmed on close");
}

#[test]
fn read_only_open_of_a_missing_directory_fails_without_creating_it() {
    let fx = Fixture::new();
    let options = LogOpenOptions { read_only: true, ..fx.options() };
    assert!(UnifiedLog::open(&fx.dir, config(&[]), options).is_err());
    assert!(!fx.dir.exists());
}

#[test]
fn writable_open_without_create_refuses_a_missing_directory_and_creates_nothing() {
    let fx = Fixture::new();
    let options = LogOpenOptions { create: false, ..fx.options() };
    let Err(err) = UnifiedLog::open(&fx.dir, config(&[]), options) else { panic!("opened a missing directory") };
    match &err {
        Error::Io { path, source, .. } => {
            assert_eq!(path, &fx.dir);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Error::Io(NotFound), got {other:?}"),
    }
    assert!(err.to_string().contains("create=false") && err.to_string().contains(&*fx.dir.to_string_lossy()), "{err}");
    assert!(!fx.dir.exists());
    // An existing directory opens as before (and the default still creates).
    fx.open(&config(&[])).close().unwrap();
    let log = UnifiedLog::open(&fx.dir, config(&[]), LogOpenOptions { create: false, ..fx.options() }).unwrap();
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn reopen_after_crash_truncates_a_torn_tail() {
    // Append, drop without close, tear the last batch, reopen read-write: the torn batch is
    // cut, everything before it survives, and the load result reports the bytes.
    for tear in ["truncate", "flip", "garbage"] {
        let fx = Fixture::new();
        let cfg = config(&[("index.interval.bytes", "50")]);
        let (path, size, last) = {
            let log = fifteen_records_in_three_segments(&fx, &cfg);
            let path = active_log_file(&log);
            let size = std::fs::metadata(&path).unwrap().len();
            let last = batches(&std::fs::read(&path).unwrap()).last().copied().unwrap();
            (path, size, last)
        };
        let last_start = size - last.size as u64;
        let expected_cut = match tear {
            "truncate" => {
                std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(size - 7).unwrap();
                last.size as u64 - 7
            }
            "flip" => {
                let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
                let mut b = [0u8; 1];
                f.read_exact_at(&mut b, size - 3).unwrap();
                f.write_all_at(&[b[0] ^ 0x80], size - 3).unwrap();
                last.size as u64
            }
            _ => {
                append_raw(&path, &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                20
            }
        };
        let log = fx.open(&cfg);
        let load = log.load_result();
        assert_eq!(load.bytes_truncated, expected_cut, "{tear}");
        let survivors = if tear == "garbage" { 15 } else { 14 };
        assert_eq!(log.log_end_offset(), survivors, "{tear}");
        assert_eq!(read_all(&log, 0), expected_records(0..survivors), "{tear}");
        let expected_len = if tear == "garbage" { size } else { last_start };
        assert_eq!(std::fs::metadata(&path).unwrap().len(), expected_len, "{tear}");
        assert_eq!(append_values(&log, T0 + survivors, &[&format!("v{survivors}")]), survivors);
        log.close().unwrap();
        let log = fx.open(&cfg);
        assert_eq!(log.load_result().bytes_truncated, 0, "{tear}: a clean log needs no repair");
        assert_eq!(read_all(&log, 0), expected_records(0..survivors + 1), "{tear}");
    }
}

#[test]
fn reopen_after_crash_of_a_preallocated_log() {
    let fx = Fixture::new();
    let cfg = config(&[("preallocate", "true"), ("segment.bytes", "1048576")]);
    let data_len = {
        let log = fx.open(&cfg);
        for i in 0..5 {
            append_values(&log, T0 + i, &[&format!("v{i}")]);
        }
        log.segments()[0].size()
    };
    let log = fx.open(&cfg);
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(read_all(&log, 0), expected_records(0..5));
    assert_eq!(log.load_result().bytes_truncated, 1_048_576 - data_len, "the zeros are cut");
    assert_eq!(append_values(&log, T0 + 5, &["v5"]), 5);
    assert_eq!(read_all(&log, 0), expected_records(0..6));
}

#[test]
fn recovery_deletes_the_segments_after_a_truncated_one() {
    // LogLoader.recoverLog: once bytes are cut from a segment, the later ones are deleted.
    let fx = Fixture::new();
    let cfg = config(&[]);
    let first = {
        let log = fifteen_records_in_three_segments(&fx, &cfg);
        log.segments()[0].path()
    };
    let b = batches(&std::fs::read(&first).unwrap());
    let third_batch_at: u64 = b[..2].iter().map(|b| b.size as u64).sum();
    write_nonsense(&first, third_batch_at + 30, 1, 3);
    let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
    assert_eq!(log.load_result().segments_recovered, 1);
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(read_all(&log, 0), expected_records(0..2));
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![0]);
    assert_eq!(files_with_suffix(&fx.dir, ".log"), vec!["00000000000000000000.log"]);
    assert_eq!(append_values(&log, T0 + 2, &["v2"]), 2);
}

#[test]
fn recovery_rebuilds_missing_and_corrupt_indexes() {
    // testIndexRebuild / testCorruptIndexRebuild: a deleted index is rebuilt; garbage in the
    // indexes is rebuilt when the segment is recovered.
    let fx = Fixture::new();
    let cfg = config(&[("index.interval.bytes", "1")]);
    fifteen_records_in_three_segments(&fx, &cfg).close().unwrap();
    std::fs::remove_file(fx.dir.join("00000000000000000000.index")).unwrap();
    std::fs::remove_file(fx.dir.join("00000000000000000000.timeindex")).unwrap();
    write_nonsense(&fx.dir.join("00000000000000000005.index"), 0, 24, 9);
    write_nonsense(&fx.dir.join("00000000000000000005.timeindex"), 0, 24, 10);
    let options = LogOpenOptions { recovery_point: Some(5), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
    assert_eq!(log.load_result().segments_recovered, 3);
    assert_eq!(log.load_result().bytes_truncated, 0);
    for i in 0..15 {
        let info = log.read(i, 1, FetchIsolation::LogEnd, true).unwrap();
        assert_eq!(batches(&info.records)[0].last_offset, i);
        assert_eq!(log.offset_for_timestamp(T0 + i).unwrap().unwrap().offset, i);
    }
    assert!(log.segments()[0].offset_index().unwrap().get().unwrap().entries() > 0, "rebuilt");
}

#[test]
fn writable_open_removes_leftover_files() {
    // testOpenDeletesObsoleteFiles and testBogusIndexSegmentsAreRemoved.
    let fx = Fixture::new();
    let cfg = config(&[]);
    fifteen_records_in_three_segments(&fx, &cfg).close().unwrap();
    std::fs::write(fx.dir.join("00000000000000000099.log.deleted"), b"old").unwrap();
    std::fs::write(fx.dir.join("00000000000000000077.index"), [0u8; 16]).unwrap();
    std::fs::write(fx.dir.join("00000000000000000077.timeindex"), [0u8; 24]).unwrap();
    let log = fx.open(&cfg);
    assert!(files_with_suffix(&fx.dir, ".deleted").is_empty());
    assert!(!fx.dir.join("00000000000000000077.index").exists());
    assert!(!fx.dir.join("00000000000000000077.timeindex").exists());
    assert_eq!(read_all(&log, 0), expected_records(0..15));
}

#[test]
fn log_start_checkpoint_beyond_the_log_end_wipes_the_log() {
    // LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd: a log start offset checkpoint past
    // the recovered log end deletes every segment and starts an empty log at the checkpoint.
    let fx = Fixture::new();
    let cfg = config(&[]);
    fifteen_records_in_three_segments(&fx, &cfg).close().unwrap();
    let options = LogOpenOptions { log_start_offset: Some(40), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.high_watermark()), (40, 40, 40));
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![40]);
    assert!(read_all(&log, 40).is_empty());
    assert_eq!(append_values(&log, T0, &["x"]), 40);
    // A checkpoint inside the log just moves the log start.
    let fx = Fixture::new();
    fifteen_records_in_three_segments(&fx, &cfg).close().unwrap();
    let options = LogOpenOptions { log_start_offset: Some(7), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.number_of_segments()), (7, 15, 3));
    assert_eq!(read_all(&log, 7), expected_records(7..15));
}

#[test]
fn recovery_of_a_segment_with_offsets_going_backwards_keeps_the_prefix() {
    // Kafka's LogLoader empties such a segment when its index append throws
    // InvalidOffsetException (and only if an index entry falls there). kafkalog ends the valid
    // prefix at the first batch whose base offset goes back (the base offset is outside the
    // CRC), keeps the batches before it, and, as after any truncation, drops the later segments.
    let fx = Fixture::new();
    let cfg = config(&[("index.interval.bytes", "1")]);
    {
        let log = fx.open(&cfg);
        for i in 0..4 {
            append_values(&log, T0 + i, &[&format!("v{i}")]);
        }
        log.roll().unwrap();
        append_values(&log, T0 + 4, &["v4"]);
        log.close().unwrap();
    }
    // Rewrite the base offset of the third batch (outside the CRC) to go back to 1.
    let first = fx.dir.join("00000000000000000000.log");
    let b = batches(&std::fs::read(&first).unwrap());
    let third_at: u64 = b[..2].iter().map(|b| b.size as u64).sum();
    std::fs::OpenOptions::new().write(true).open(&first).unwrap().write_all_at(&1i64.to_be_bytes(), third_at).unwrap();
    let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![0]);
    assert_eq!(log.load_result().bytes_truncated, b[2..].iter().map(|b| b.size as u64).sum::<u64>());
    assert_eq!(read_all(&log, 0), expected_records(0..2));
    assert_eq!(append_values(&log, T0, &["again"]), 2);
}

#[test]
fn compressed_batches_survive_a_crash() {
    // Every codec recovers: the CRC covers the compressed bytes.
    let fx = Fixture::new();
    let cfg = config(&[]);
    let mut want = Vec::new();
    {
        let log = fx.open(&cfg);
        for (i, codec) in CompressionType::ALL.iter().enumerate() {
            let v = format!("value-{i}").repeat(20);
            let mut b = batch(0, *codec, &[(Some(b"a"), Some(v.as_bytes()), T0), (None, None, T0 + 1)]);
            log.append_as_leader(&mut b, 0).unwrap();
            want.push(Rec {
                offset: 2 * i as i64,
                timestamp: T0,
                key: Some(b"a".to_vec()),
                value: Some(v.into_bytes()),
            });
            want.push(Rec { offset: 2 * i as i64 + 1, timestamp: T0 + 1, key: None, value: None });
        }
    }
    let log = fx.open(&cfg);
    assert_eq!(log.load_result().bytes_truncated, 0);
    assert_eq!(read_all(&log, 0), want);
}
