//! Kafka's `UnifiedLogTest` retention cases against `UnifiedLog::delete_old_segments`: the
//! log-start, `retention.bytes` and `retention.ms` checks, the high-watermark guard, the roll when
//! every segment goes, future timestamps, producer snapshots, and readers of deleted segments.
//! Time comes from the fixture's `ManualClock`; nothing sleeps.

use kafkalog::error::Error;
use kafkalog::log::unified_log::{DeletedSegment, LogOpenOptions, RetentionReason};
use kafkalog::{FetchIsolation, LogConfig, UnifiedLog};

use crate::common::{
    append_values, config, decode, files_with_suffix, scan_all, segment_bases, segment_file_name, values_batch,
    Fixture, Rec, T0,
};

use RetentionReason::{LogStartOffsetBreach, RetentionMsBreach, RetentionSizeBreach};

/// A log with one segment per entry of `segments`, each holding one single-record batch per
/// timestamp (appended as a follower, so any timestamp goes), values `v<offset>`.
fn log_with_segments(fx: &Fixture, cfg: &LogConfig, segments: &[&[i64]]) -> UnifiedLog {
    let log = fx.open(cfg);
    for (i, timestamps) in segments.iter().enumerate() {
        if i > 0 {
            log.roll().unwrap();
        }
        for ts in *timestamps {
            let offset = log.log_end_offset();
            log.append_as_follower(&values_batch(offset, *ts, &[&format!("v{offset}")])).unwrap();
        }
    }
    assert_eq!(log.number_of_segments(), segments.len());
    log
}

fn sizes(log: &UnifiedLog) -> Vec<u64> {
    log.segments().iter().map(|s| s.size()).collect()
}

/// (base, next offset, reason) of each deleted segment.
fn summary(deleted: &[DeletedSegment]) -> Vec<(i64, i64, RetentionReason)> {
    deleted.iter().map(|d| (d.base_offset, d.next_offset, d.reason)).collect()
}

fn segment_files(bases: &[i64], suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = bases
        .iter()
        .flat_map(|b| [".index", ".log", ".timeindex"].map(|e| segment_file_name(*b, &format!("{e}{suffix}"))))
        // Every roll snapshots producer state at the new segment's base (none at 0).
        .chain(bases.iter().filter(|b| **b > 0).map(|b| segment_file_name(*b, &format!(".snapshot{suffix}"))))
        .collect();
    out.sort();
    out
}

/// testDeleteOldSegments: `retention.ms` deletes the oldest segments first, strictly older
/// than the limit, and stops at the first one that must stay (an old segment after it
/// survives). The log start moves to the first kept segment; the files are renamed `.deleted`
/// and unlinked once `file.delete.delay.ms` has passed.
#[test]
fn delete_old_segments_by_retention_ms() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "10000"), ("file.delete.delay.ms", "1000")]);
    let young = T0 + 20_000;
    let log = log_with_segments(&fx, &cfg, &[&[T0, T0], &[T0 + 1000], &[young], &[T0], &[young]]);
    assert_eq!(segment_bases(&log), vec![0, 2, 3, 4, 5]);
    let first_size = log.segments()[0].size();

    fx.clock.set(T0 + 11_000);
    let result = log.delete_old_segments().unwrap();
    assert_eq!(
        result.deleted,
        vec![DeletedSegment {
            base_offset: 0,
            next_offset: 2,
            size: first_size,
            largest_timestamp: T0,
            reason: RetentionMsBreach
        }],
        "segment 2 is exactly 10000 ms old: not older than retention.ms"
    );
    assert_eq!((result.log_start_offset, log.log_start_offset()), (2, 2));
    assert_eq!(files_with_suffix(&fx.dir, ".deleted"), segment_files(&[0], ".deleted"));

    fx.clock.set(T0 + 25_000);
    let result = log.delete_old_segments().unwrap();
    assert_eq!(summary(&result.deleted), vec![(2, 3, RetentionMsBreach)]);
    assert!(result.warnings.is_empty());
    assert_eq!(segment_bases(&log), vec![3, 4, 5], "the old segment 4 stays behind the young segment 3");
    assert_eq!(log.log_start_offset(), 3);
    assert!(matches!(
        log.read(2, 1 << 20, FetchIsolation::LogEnd, true),
        Err(Error::OffsetOutOfRange { offset: 2, log_start_offset: 3, .. })
    ));
    assert_eq!(scan_all(&log, 0).unwrap().first().map(|r| r.offset), Some(3));

    assert_eq!(
        files_with_suffix(&fx.dir, ".deleted"),
        segment_files(&[2], ".deleted"),
        "segment 0 was due: unlinked by this run"
    );
    fx.clock.advance(999);
    log.delete_due_files().unwrap();
    assert_eq!(files_with_suffix(&fx.dir, ".deleted"), segment_files(&[2], ".deleted"), "1 ms early");
    fx.clock.advance(1);
    log.delete_due_files().unwrap();
    assert!(files_with_suffix(&fx.dir, ".deleted").is_empty());
    assert_eq!(files_with_suffix(&fx.dir, ".log"), [3, 4, 5].map(|b| segment_file_name(b, ".log")));
}

/// testRetentionIdempotency: raising the log start offset unblocks time retention behind it
/// (one segment goes by log start, the next by time), and a second run deletes nothing.
#[test]
fn retention_idempotency() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "900"), ("retention.bytes", "-1"), ("file.delete.delay.ms", "0")]);
    let log = fx.open(&cfg);
    append_values(&log, T0 + 100, &["test"]);
    log.roll().unwrap();
    append_values(&log, T0, &["test"]);
    log.roll().unwrap();
    append_values(&log, T0 + 100, &["test"]);
    fx.clock.advance(901);
    log.delete_records(1).unwrap();
    let result = log.delete_old_segments().unwrap();
    assert_eq!(summary(&result.deleted), vec![(0, 1, LogStartOffsetBreach), (1, 2, RetentionMsBreach)]);
    assert_eq!(segment_bases(&log), vec![2]);
    assert!(log.delete_old_segments().unwrap().deleted.is_empty());
    assert_eq!(files_with_suffix(&fx.dir, ".deleted"), Vec::<String>::new(), "no delay: unlinked at once");
}

/// Size retention (Kafka's `deleteRetentionSizeBreachedSegments`): nothing below the limit or
/// with `retention.bytes = -1`; otherwise `diff = size - retention.bytes` and segments go
/// oldest first while `diff - segment size >= 0`, so the log may stay above the limit.
#[test]
fn delete_old_segments_by_retention_bytes() {
    let fx = Fixture::new();
    let base_cfg = [("retention.ms", "-1"), ("file.delete.delay.ms", "0")];
    let log = log_with_segments(&fx, &config(&base_cfg), &[&[T0], &[T0], &[T0], &[T0]]);
    let s = log.segments()[0].size();
    assert_eq!(sizes(&log), vec![s; 4]);
    let retain = |bytes: String| {
        let mut props = base_cfg.to_vec();
        props.push(("retention.bytes", &bytes));
        log.update_config(config(&props)).unwrap();
        summary(&log.delete_old_segments().unwrap().deleted)
    };
    assert_eq!(retain("-1".into()), vec![], "disabled");
    assert_eq!(retain((4 * s + 1).to_string()), vec![], "below the limit");
    assert_eq!(retain((2 * s + 1).to_string()), vec![(0, 1, RetentionSizeBreach)], "diff 2S-1 fits one segment");
    assert_eq!(log.size_in_bytes(), 3 * s, "still above 2S+1");
    assert_eq!(
        retain(s.to_string()),
        vec![(1, 2, RetentionSizeBreach), (2, 3, RetentionSizeBreach)],
        "diff 2S: two segments, then the active one would overshoot"
    );
    assert_eq!((segment_bases(&log), log.log_start_offset()), (vec![3], 3));
}

/// Size retention when the log is exactly `retention.bytes`: diff is 0, so only a leading
/// 0-byte segment can go (`0 - 0 >= 0`), and the walk stops at the first segment with data.
#[test]
fn size_retention_at_exactly_the_limit_deletes_a_leading_empty_segment() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "-1"), ("file.delete.delay.ms", "0")]);
    {
        // A log that starts at 3, then an empty segment file at 0 before it.
        let options = LogOpenOptions { log_start_offset: Some(3), ..fx.options() };
        let log = UnifiedLog::open(&fx.dir, cfg.clone(), options).unwrap();
        append_values(&log, T0, &["v3"]);
        log.roll().unwrap();
        append_values(&log, T0, &["v4"]);
        log.close().unwrap();
        std::fs::write(fx.dir.join(segment_file_name(0, ".log")), b"").unwrap();
    }
    let log = fx.open(&cfg);
    assert_eq!((segment_bases(&log), log.log_start_offset()), (vec![0, 3, 4], 0));
    let size = log.size_in_bytes();
    let with_retention = |bytes: u64| {
        config(&[("retention.ms", "-1"), ("file.delete.delay.ms", "0"), ("retention.bytes", &bytes.to_string())])
    };
    log.update_config(with_retention(size + 1)).unwrap();
    assert!(log.delete_old_segments().unwrap().deleted.is_empty(), "below the limit");
    log.update_config(with_retention(size)).unwrap();
    let result = log.delete_old_segments().unwrap();
    assert_eq!(summary(&result.deleted), vec![(0, 3, RetentionSizeBreach)]);
    assert_eq!(result.deleted[0].size, 0);
    assert_eq!((segment_bases(&log), log.log_start_offset(), log.size_in_bytes()), (vec![3, 4], 3, size));
}

/// testCannotDeleteSegmentsAtOrAboveHighWatermark: a segment goes only once the high watermark
/// has reached its end (the next segment's base, or the log end for the last one).
#[test]
fn cannot_delete_segments_at_or_above_high_watermark() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "0")]);
    let log = log_with_segments(&fx, &cfg, &[&[T0, T0, T0], &[T0, T0, T0], &[T0, T0, T0]]);
    fx.clock.advance(10_000);
    let deleted_at_hw = |hw: i64| {
        assert_eq!(log.set_high_watermark(hw).unwrap(), hw);
        summary(&log.delete_old_segments().unwrap().deleted)
    };
    assert_eq!(deleted_at_hw(0), vec![]);
    assert_eq!(deleted_at_hw(2), vec![], "inside the first segment");
    assert_eq!(deleted_at_hw(3), vec![(0, 3, RetentionMsBreach)]);
    assert_eq!(log.log_start_offset(), 3);
    assert_eq!(deleted_at_hw(5), vec![]);
    assert_eq!(deleted_at_hw(9), vec![(3, 6, RetentionMsBreach), (6, 9, RetentionMsBreach)]);
    assert_eq!((segment_bases(&log), log.log_start_offset(), log.log_end_offset()), (vec![9], 9, 9));
}

/// testThatGarbageCollectingSegmentsDoesntChangeOffset: when every segment is deletable the log
/// rolls first and keeps one empty segment at the log end; the log end offset does not move, a
/// second run deletes nothing, and appends continue at the same offset.
#[test]
fn garbage_collecting_segments_doesnt_change_offset() {
    for messages in [0, 1, 25] {
        let fx = Fixture::new();
        let cfg = config(&[("internal.segment.bytes", "100"), ("retention.ms", "0"), ("file.delete.delay.ms", "0")]);
        let log = fx.open(&cfg);
        for i in 0..messages {
            append_values(&log, T0 - 10, &[&i.to_string()]);
        }
        assert_eq!((log.log_end_offset(), log.number_of_segments()), (messages, messages.max(1) as usize));
        let result = log.delete_old_segments().unwrap();
        assert_eq!(result.deleted.len(), messages as usize, "{messages} messages");
        assert_eq!(log.log_end_offset(), messages);
        assert_eq!(
            (segment_bases(&log), log.log_start_offset(), log.segments()[0].size()),
            (vec![messages], messages, 0)
        );
        assert!(log.delete_old_segments().unwrap().deleted.is_empty(), "an empty last segment never goes");
        assert_eq!(log.log_end_offset(), messages);
        assert_eq!(append_values(&log, T0, &["next"]), messages);
    }
}

/// testLogDeletionAfterDeleteRecords: after `delete_records(o)`, segments wholly below `o` go
/// (the next segment's base <= o), never the last one. With `cleanup.policy=compact` this is the
/// only check that runs: an aggressive `retention.ms` and `retention.bytes` delete nothing more.
#[test]
fn log_deletion_after_delete_records() {
    let aggressive = [("retention.ms", "1"), ("retention.bytes", "1")];
    for (policy, retention) in [("delete", &[][..]), ("compact", &aggressive[..])] {
        let fx = Fixture::new();
        let mut props = vec![("cleanup.policy", policy), ("file.delete.delay.ms", "0")];
        props.extend_from_slice(retention);
        let cfg = config(&props);
        let five = [T0; 5];
        let log = log_with_segments(&fx, &cfg, &[&five, &five, &five]);
        fx.clock.advance(1000);
        let after_delete_records = |offset: i64| {
            log.delete_records(offset).unwrap();
            let result = log.delete_old_segments().unwrap();
            assert_eq!(result.log_start_offset, offset, "{policy}: the log start stays where delete_records put it");
            summary(&result.deleted)
        };
        assert_eq!(after_delete_records(1), vec![], "{policy}");
        assert_eq!(after_delete_records(6), vec![(0, 5, LogStartOffsetBreach)], "{policy}");
        assert_eq!(after_delete_records(15), vec![(5, 10, LogStartOffsetBreach)], "{policy}");
        assert_eq!(segment_bases(&log), vec![10], "{policy}: the last segment stays");
        assert_eq!(log.log_end_offset(), 15, "{policy}");
    }
}

/// LogFutureTimestampLogger: a segment whose largest timestamp is in the future is not deleted;
/// the walk stops there, so an old segment after it stays too. Every such segment gets a
/// warning naming it (Kafka warns only where its walk stops).
#[test]
fn segment_with_future_timestamps_is_kept_with_a_warning() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "0")]);
    let hour = 3_600_000;
    let log = log_with_segments(&fx, &cfg, &[&[T0 + hour], &[T0 - 100_000], &[T0 + hour + 500]]);
    let result = log.delete_old_segments().unwrap();
    assert!(result.deleted.is_empty());
    assert_eq!(result.warnings.len(), 2, "{:?}", result.warnings);
    assert!(
        result.warnings[0].starts_with("segment 0 of topic-0 contains future timestamps"),
        "{}",
        result.warnings[0]
    );
    assert!(result.warnings[0].contains(&format!("{hour} ms ahead")), "{}", result.warnings[0]);
    assert!(result.warnings[1].starts_with("segment 2 of topic-0"), "{}", result.warnings[1]);

    fx.clock.set(T0 + hour + 1001);
    let result = log.delete_old_segments().unwrap();
    assert_eq!(summary(&result.deleted), vec![(0, 1, RetentionMsBreach), (1, 2, RetentionMsBreach)]);
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert_eq!(segment_bases(&log), vec![2]);
}

/// kafkalog's opt-in cap: a segment with future timestamps is judged by its file's mtime.
#[test]
fn cap_future_timestamps_judges_by_mtime() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "0")]);
    let hour = 3_600_000;
    let log = log_with_segments(&fx, &cfg, &[&[T0 + hour], &[T0 + hour]]);
    let written = std::time::UNIX_EPOCH + std::time::Duration::from_millis((T0 - 10_000) as u64);
    for segment in log.segments() {
        std::fs::File::options().write(true).open(segment.path()).unwrap().set_modified(written).unwrap();
    }
    fx.clock.set(T0);
    let options = kafkalog::log::unified_log::RetentionOptions { cap_future_timestamps: true };
    let result = log.delete_old_segments_with(options).unwrap();
    assert_eq!(summary(&result.deleted), vec![(0, 1, RetentionMsBreach), (1, 2, RetentionMsBreach)]);
    assert_eq!(result.warnings.len(), 2, "{:?}", result.warnings);
    assert!(result.warnings[0].contains("cap_future_timestamps"), "{}", result.warnings[0]);
    let plain = log_with_segments(&Fixture::new(), &cfg, &[&[T0 + hour]]);
    assert!(plain.delete_old_segments().unwrap().deleted.is_empty(), "without the cap nothing goes");
}

/// testRetentionDeletesProducerStateSnapshots: the producer snapshots of deleted segments (taken
/// at their rolls; none at offset 0, where the state was empty) are renamed `.snapshot.deleted`
/// and unlinked after `file.delete.delay.ms`; the others stay.
#[test]
fn retention_deletes_producer_snapshots_after_the_delay() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "500")]);
    let log = log_with_segments(&fx, &cfg, &[&[T0, T0, T0], &[T0, T0, T0], &[T0 + 9_500]]);
    assert_eq!(
        files_with_suffix(&fx.dir, ".snapshot"),
        [segment_file_name(3, ".snapshot"), segment_file_name(6, ".snapshot")]
    );
    fx.clock.advance(10_000);
    assert_eq!(summary(&log.delete_old_segments().unwrap().deleted).len(), 2);
    assert_eq!(files_with_suffix(&fx.dir, ".snapshot.deleted"), [segment_file_name(3, ".snapshot.deleted")]);
    assert_eq!(files_with_suffix(&fx.dir, ".snapshot"), [segment_file_name(6, ".snapshot")]);
    fx.clock.advance(499);
    log.delete_due_files().unwrap();
    assert_eq!(files_with_suffix(&fx.dir, ".snapshot.deleted").len(), 1);
    fx.clock.advance(1);
    log.delete_due_files().unwrap();
    assert!(files_with_suffix(&fx.dir, ".deleted").is_empty());
    assert_eq!(files_with_suffix(&fx.dir, ".snapshot"), [segment_file_name(6, ".snapshot")]);
}

/// testAsyncDelete: deleted segments are renamed `.deleted` at once and their original names
/// are gone, but a reader holding them still reads every record until the files are unlinked
/// after `file.delete.delay.ms`.
#[test]
fn async_delete_keeps_held_segments_readable() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "1000")]);
    let log = log_with_segments(&fx, &cfg, &[&[T0, T0], &[T0, T0], &[T0 + 5_000]]);
    let held = log.segments();
    let old_paths: Vec<_> = held.iter().map(|s| s.path()).collect();
    fx.clock.advance(5_000);
    assert_eq!(log.delete_old_segments().unwrap().deleted.len(), 2);
    assert_eq!(log.number_of_segments(), 1);
    for (segment, old) in held[..2].iter().zip(&old_paths) {
        assert!(!old.exists());
        assert!(segment.path().to_string_lossy().ends_with(".log.deleted") && segment.path().exists());
        let slice = segment.read(segment.base_offset(), 1 << 20, segment.size(), true).unwrap().unwrap();
        let mut bytes = Vec::new();
        segment.log().read_into(slice.position, slice.size as usize, &mut bytes).unwrap();
        let offsets: Vec<i64> = decode(&bytes).iter().map(|r| r.offset).collect();
        let base = segment.base_offset();
        assert_eq!(offsets, vec![base, base + 1]);
    }
    fx.clock.advance(1000);
    log.delete_due_files().unwrap();
    assert!(held[..2].iter().all(|s| !s.path().exists()), "unlinked after the delay");
}

/// A scan that started before retention ran keeps reading the segments it started with: it
/// sees every record even though retention deletes them half way through.
#[test]
fn scan_started_before_retention_reads_every_record() {
    let fx = Fixture::new();
    let cfg = config(&[("retention.ms", "1000"), ("file.delete.delay.ms", "1000")]);
    let log = log_with_segments(&fx, &cfg, &[&[T0, T0], &[T0, T0], &[T0 + 5_000]]);
    fx.clock.advance(5_000);
    let mut seen: Vec<Rec> = Vec::new();
    let mut scratch = Vec::new();
    log.scan(0, i64::MAX, FetchIsolation::LogEnd, |batch| {
        if seen.is_empty() {
            assert_eq!(log.delete_old_segments().unwrap().deleted.len(), 2);
        }
        batch.for_each_record(&mut scratch, |r| {
            seen.push(Rec::of(&r));
            Ok(())
        })?;
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    assert_eq!((log.log_start_offset(), scan_all(&log, 0).unwrap().len()), (4, 1));
}
