//! The selection of Kafka's `UnifiedLogTest` that applies without producer state, transactions
//! or a `LogManager`, against `kafkalog::UnifiedLog`.

use kafkalog::checkpoint::partition_metadata::TopicId;
use kafkalog::error::Error;
use kafkalog::log::unified_log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use kafkalog::record::records::{AnyBatch, BatchIter};
use kafkalog::record::CompressionType;
use kafkalog::record::TimestampType;
use kafkalog::util::clock::Clock;
use kafkalog::{FetchIsolation, UnifiedLog};

use crate::common::{
    append_values, batch, batches, config, decode, files_with_suffix, offsets, read_all, values_batch, Fixture, Rec,
    RecSpec, T0,
};

/// One batch with one keyed record, as `TestUtils.singletonRecords`.
fn singleton(value: &str, timestamp: i64) -> Vec<u8> {
    values_batch(0, timestamp, &[value])
}

/// Kafka's `LogTestUtils.readLog` (min_one_message = true, up to the log end).
fn read(log: &UnifiedLog, offset: i64, max_bytes: u64) -> Vec<u8> {
    log.read(offset, max_bytes, FetchIsolation::LogEnd, true).expect("read").records
}

fn codecs(bytes: &[u8]) -> Vec<CompressionType> {
    BatchIter::new(bytes).map(|b| b.unwrap().1.compression_type().unwrap()).collect()
}

#[test]
fn high_watermark_maintenance() {
    // testHighWatermarkMaintenance. A standalone log's high watermark follows its log end
    // until the caller sets one; from then on it is the caller's, clamped to [start, end].
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    assert_eq!(log.high_watermark(), 0);
    append_values(&log, T0, &["a", "b", "c"]);
    assert_eq!(log.high_watermark(), 3, "follows the log end until set");
    assert_eq!(log.set_high_watermark(1).unwrap(), 1);
    append_values(&log, T0, &["d"]);
    assert_eq!((log.high_watermark(), log.log_end_offset()), (1, 4), "no longer follows the log end");
    assert_eq!(log.set_high_watermark(10).unwrap(), 4, "cannot pass the log end offset");
    log.append_as_follower(&values_batch(4, T0, &["e", "f"])).unwrap();
    assert_eq!(log.set_high_watermark(6).unwrap(), 6);
    assert!(log.truncate_to(3).unwrap());
    assert_eq!(log.high_watermark(), 3, "truncation lowers the high watermark");
    append_values(&log, T0, &["g", "h", "i"]);
    assert_eq!((log.high_watermark(), log.log_end_offset(), log.log_start_offset()), (3, 6, 0));
    log.truncate_fully_and_start_at(4).unwrap();
    assert_eq!((log.high_watermark(), log.log_end_offset(), log.log_start_offset()), (4, 4, 4));
    assert_eq!(log.set_high_watermark(0).unwrap(), 4, "cannot go below the log start offset");
}

/// Kafka's `assertNonEmptyFetch`: the first batch holds `offset`, nothing passes `bound`.
fn assert_non_empty_fetch(log: &UnifiedLog, offset: i64, isolation: FetchIsolation, bound: i64) {
    let info = log.read(offset, u64::MAX, isolation, true).unwrap();
    assert_eq!(info.fetch_offset, offset);
    let first = batches(&info.records)[0];
    assert!(first.base_offset <= offset && offset <= first.last_offset, "{offset} in {first:?}");
    assert!(decode(&info.records).iter().all(|r| r.offset < bound), "read past {bound} at {offset}");
}

fn assert_empty_fetch(log: &UnifiedLog, offset: i64, isolation: FetchIsolation) {
    let info = log.read(offset, u64::MAX, isolation, true).unwrap();
    assert_eq!(info.fetch_offset, offset);
    assert!(info.records.is_empty(), "fetch at {offset} should be empty");
}

fn two_batches(log: &UnifiedLog) {
    append_values(log, T0, &["0", "1", "2"]);
    append_values(log, T0, &["3", "4"]);
}

#[test]
fn fetch_up_to_log_end_offset() {
    // testFetchUpToLogEndOffset.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    two_batches(&log);
    for offset in log.log_start_offset()..log.log_end_offset() {
        assert_non_empty_fetch(&log, offset, FetchIsolation::LogEnd, log.log_end_offset());
    }
    assert_empty_fetch(&log, log.log_end_offset(), FetchIsolation::LogEnd);
}

#[test]
fn fetch_up_to_high_watermark() {
    // testFetchUpToHighWatermark.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    two_batches(&log);
    for hw in [0, 3, 5] {
        assert_eq!(log.set_high_watermark(hw).unwrap(), hw);
        for offset in log.log_start_offset()..hw {
            assert_non_empty_fetch(&log, offset, FetchIsolation::HighWatermark, hw);
        }
        for offset in hw..=log.log_end_offset() {
            assert_empty_fetch(&log, offset, FetchIsolation::HighWatermark);
        }
    }
}

#[test]
fn read_at_log_gap() {
    // testReadAtLogGap: a segment truncated under the log leaves a gap; a read in the gap
    // returns the next segment's batch.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "300")]));
    while log.number_of_segments() == 1 {
        log.append_as_leader(&mut singleton("42", T0), 0).unwrap();
    }
    log.segments()[0].truncate_to(1).unwrap();
    let read_back = batches(&read(&log, 1, 200));
    assert_eq!(read_back[0].last_offset, log.log_end_offset() - 1);
}

#[test]
fn read_out_of_range() {
    // testReadOutOfRange: a log whose only (empty) segment starts at 1024.
    let fx = Fixture::new();
    std::fs::create_dir_all(&fx.dir).unwrap();
    std::fs::write(fx.dir.join("00000000000000001024.log"), b"").unwrap();
    std::fs::write(fx.dir.join("00000000000000001024.index"), b"").unwrap();
    let log = fx.open(&config(&[("internal.segment.bytes", "1024")]));
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (1024, 1024));
    log.append_as_leader(&mut singleton("42", T0), 0).unwrap();
    assert!(read(&log, 1025, 1000).is_empty(), "reading at the log end gives nothing");
    for offset in [0, 1023, 1026] {
        match log.read(offset, 1000, FetchIsolation::LogEnd, true) {
            Err(Error::OffsetOutOfRange { offset: o, log_start_offset: 1024, log_end_offset: 1025 }) => {
                assert_eq!(o, offset);
            }
            other => panic!("read at {offset}: expected OffsetOutOfRange, got {other:?}"),
        }
    }
}

/// Kafka's message ids for the min-message tests: 0..50 then every 7th up to 200.
fn sparse_ids() -> Vec<i64> {
    (0..50).chain((50..200).step_by(7)).collect()
}

fn sparse_log(fx: &Fixture) -> UnifiedLog {
    let log = fx.open(&config(&[("internal.segment.bytes", "72")]));
    for id in sparse_ids() {
        log.append_as_follower(&values_batch(id, T0, &[&id.to_string()])).unwrap();
    }
    log
}

#[test]
fn read_with_min_message() {
    // testReadWithMinMessage: min_one_message returns the batch even when max_bytes is smaller.
    let fx = Fixture::new();
    let log = sparse_log(&fx);
    let ids = sparse_ids();
    assert!(log.number_of_segments() > 50, "one batch per segment");
    for i in 50..*ids.last().unwrap() {
        let id = *ids.iter().find(|&&id| id >= i).unwrap();
        for max_bytes in [1, 100_000, 100] {
            let first = decode(&read(&log, i, max_bytes)).remove(0);
            assert_eq!(first.offset, id, "read at {i} with max {max_bytes}");
            assert_eq!(first.value.as_deref(), Some(id.to_string().as_bytes()));
        }
    }
}

#[test]
fn read_with_too_small_max_length_returns_nothing() {
    // testReadWithTooSmallMaxLength, except that reads never end in a partial batch: where Kafka
    // returns one byte of the batch, kafkalog returns nothing.
    let fx = Fixture::new();
    let log = sparse_log(&fx);
    for i in 50..*sparse_ids().last().unwrap() {
        for max_bytes in [0, 1] {
            let info = log.read(i, max_bytes, FetchIsolation::LogEnd, false).unwrap();
            assert!(info.records.is_empty(), "read at {i} with max {max_bytes}");
        }
    }
}

#[test]
fn time_based_log_roll_during_append() {
    // testTimeBasedLogRollDuringAppend (segment.ms = 3600 ms).
    let fx = Fixture::new();
    let segment_ms = 3600;
    let log = fx.open(&config(&[("segment.ms", "3600")]));
    assert_eq!(log.number_of_segments(), 1, "log begins with a single empty segment");
    // Records without timestamps: the wall clock since the segment was created decides.
    fx.clock.advance(segment_ms + 1);
    log.append_as_leader(&mut singleton("test", -1), 0).unwrap();
    assert_eq!(log.number_of_segments(), 1, "no roll into an empty segment");
    log.append_as_leader(&mut singleton("test", -1), 0).unwrap();
    assert_eq!(log.number_of_segments(), 2, "rolls on this append since time has expired");
    for n in 3..5 {
        fx.clock.advance(segment_ms + 1);
        log.append_as_leader(&mut singleton("test", -1), 0).unwrap();
        assert_eq!(log.number_of_segments(), n);
    }
    // A timestamped record into a segment whose first record has none: still the wall clock.
    let timestamp = fx.clock.milliseconds() + segment_ms + 1;
    log.append_as_leader(&mut singleton("test", timestamp), 0).unwrap();
    assert_eq!(log.number_of_segments(), 4, "the roll is based on the wall clock");
    fx.clock.advance(segment_ms + 1);
    log.append_as_leader(&mut singleton("test", timestamp), 0).unwrap();
    assert_eq!(log.number_of_segments(), 5, "a new segment after segment.ms of wall clock");
    // Now the segment's first record has a timestamp: record timestamps decide.
    fx.clock.advance(segment_ms + 1);
    log.append_as_leader(&mut singleton("test", timestamp), 0).unwrap();
    assert_eq!(log.number_of_segments(), 5, "the first message's timestamp decides, not the wall clock");
    log.append_as_leader(&mut singleton("test", fx.clock.milliseconds()), 0).unwrap();
    assert_eq!(log.number_of_segments(), 6, "a message timestamp segment.ms past the first rolls");
    fx.clock.advance(segment_ms + 1);
    let info = log.append_as_leader(&mut Vec::new(), 0).unwrap();
    assert_eq!((info.first_offset, info.record_count), (-1, 0));
    assert_eq!(log.number_of_segments(), 6, "an empty append never rolls");
}

#[test]
fn time_based_log_roll_jitter() {
    // testTimeBasedLogRollJitter: each segment rolls after segment.ms minus its own random
    // jitter in [0, segment.jitter.ms). Found by stepping the clock 1 ms at a time.
    let cfg = config(&[("segment.ms", "100"), ("segment.jitter.ms", "50")]);
    let mut roll_ages = Vec::new();
    for _ in 0..12 {
        let fx = Fixture::new();
        let log = fx.open(&cfg);
        log.append_as_leader(&mut singleton("test", fx.clock.milliseconds()), 0).unwrap();
        let mut age = 0;
        while log.number_of_segments() == 1 {
            age += 1;
            assert!(age <= 101, "no roll by segment.ms + 1");
            fx.clock.advance(1);
            log.append_as_leader(&mut singleton("test", fx.clock.milliseconds()), 0).unwrap();
        }
        assert!(age > 50, "rolled at age {age}, earlier than segment.ms - segment.jitter.ms");
        roll_ages.push(age);
    }
    roll_ages.sort_unstable();
    roll_ages.dedup();
    assert!(roll_ages.len() > 1, "every segment rolled at the same age {roll_ages:?}: no jitter");
}

#[test]
fn size_based_log_roll() {
    // testSizeBasedLogRoll: segment size 10 * (batch - 1) holds 9 batches.
    let fx = Fixture::new();
    let set_size = singleton("test", T0).len();
    let segment_size = 10 * (set_size - 1);
    let log = fx.open(&config(&[("internal.segment.bytes", &segment_size.to_string())]));
    for _ in 0..11 {
        log.append_as_leader(&mut singleton("test", T0), 0).unwrap();
    }
    let segments = log.segments();
    assert_eq!(segments.iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![0, 9]);
    assert_eq!(segments[0].size(), 9 * set_size as u64);
    assert!(segments.iter().all(|s| s.size() <= segment_size as u64));
}

#[test]
fn roll_segment_that_already_exists() {
    // testRollSegmentThatAlreadyExists.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("segment.ms", "3600")]));
    assert_eq!(log.roll().unwrap(), 0, "rolling an empty active segment recreates it");
    assert_eq!(log.number_of_segments(), 1);
    log.append_as_follower(&values_batch(0, T0, &["v1"])).unwrap();
    assert_eq!((log.number_of_segments(), log.segments()[0].base_offset()), (1, 0));
    log.append_as_follower(&values_batch(1, T0 + 10, &["v2"])).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(batches(&read(&log, 0, 1))[0].last_offset, 0);
    assert_eq!(batches(&read(&log, 1, 1))[0].last_offset, 1);
    assert_eq!(log.roll().unwrap(), 2, "active segment starts at the log end");
    assert_eq!(log.number_of_segments(), 2);
    // A full index on the empty active segment forces a roll onto the same base offset.
    log.segments()[1].offset_index().unwrap().get_mut().unwrap().resize(0).unwrap();
    log.append_as_follower(&values_batch(2, T0 + 12, &["v3"])).unwrap();
    assert!(log.segments()[1].offset_index().unwrap().get().unwrap().max_entries() > 1);
    assert_eq!(batches(&read(&log, 2, 1))[0].last_offset, 2);
    assert_eq!(log.number_of_segments(), 2);
}

#[test]
fn log_rolls_and_reads_every_message_back() {
    // testLogRolls: 100 single-record batches over many segments, read back one at a time.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "100")]));
    for i in 0..100 {
        fx.clock.advance(1);
        let ts = fx.clock.milliseconds();
        log.append_as_leader(&mut singleton(&i.to_string(), ts), 0).unwrap();
    }
    assert!(log.number_of_segments() > 1);
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), log.log_end_offset());
    let mut offset = 0;
    for i in 0..100 {
        let bytes = read(&log, offset, 1 << 20);
        let head = batches(&bytes)[0];
        assert_eq!(head.last_offset, offset);
        let rec = decode(&bytes).remove(0);
        let expected =
            Rec { offset, timestamp: T0 + 1 + i, key: Some(b"k".to_vec()), value: Some(i.to_string().into_bytes()) };
        assert_eq!(rec, expected);
        offset = head.last_offset + 1;
    }
    assert!(read(&log, 100, 1 << 20).is_empty(), "no more messages");
}

#[test]
fn append_with_out_of_order_offsets_is_rejected() {
    // testAppendWithOutOfOrderOffsetsThrowsException (follower).
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    let records: Vec<u8> = [0, 1, 3, 2, 4].iter().flat_map(|&o| values_batch(o, T0, &["value"])).collect();
    assert!(matches!(log.append_as_follower(&records), Err(Error::InvalidOffset { .. })));
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (0, 0), "nothing appended");
}

/// Kafka's `UnifiedLog.analyzeAndValidateRecords`: a producer's v2 batch must come at base
/// offset 0 (the leader assigns the offsets); any other base is an `InvalidRecordException`
/// naming the partition, and nothing of the append is written. A follower keeps its offsets.
#[test]
fn leader_append_refuses_a_batch_whose_base_offset_is_not_zero() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["0"]);
    let size = log.size_in_bytes();
    for (base, at) in [(5_i64, 0_usize), (3, values_batch(0, T0, &["a"]).len())] {
        let mut records = if at == 0 { Vec::new() } else { values_batch(0, T0, &["a"]) };
        records.extend(values_batch(base, T0, &["b"]));
        match log.append_as_leader(&mut records, 0) {
            Err(Error::InvalidRecord { reason }) => {
                let expected = format!(
                    "The baseOffset of the record batch in the append to {} should be 0, but it is {base} \
                     (batch at position {at} of the append)",
                    log.topic_partition()
                );
                assert_eq!(reason, expected);
            }
            other => panic!("base offset {base}: expected InvalidRecord, got {other:?}"),
        }
        assert_eq!((log.log_end_offset(), log.size_in_bytes()), (1, size), "nothing appended");
    }
    log.append_as_follower(&values_batch(1, T0, &["c"])).unwrap();
    assert_eq!(log.log_end_offset(), 2);
}

#[test]
fn follower_append_below_the_log_end_is_rejected() {
    // testAppendBelowExpectedOffsetThrowsException.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["0", "1"]);
    let size = log.size_in_bytes();
    assert!(matches!(log.append_as_follower(&values_batch(1, T0, &["x"])), Err(Error::InvalidOffset { .. })));
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (2, size));
    // A follower may leave a gap.
    log.append_as_follower(&values_batch(10, T0, &["y"])).unwrap();
    assert_eq!(log.log_end_offset(), 11);
}

#[test]
fn message_size_check() {
    // testMessageSizeCheck and testMessageSizeCheckInAppendAsFollower: max.message.bytes binds
    // producers, not followers copying what the leader already accepted.
    let first = values_batch(0, T0, &["You", "bethe"]);
    let second = values_batch(0, T0, &["change (I need more bytes)... blah blah blah.", "More padding boo hoo"]);
    let max = second.len() - 1;
    let fx = Fixture::new();
    let log = fx.open(&config(&[("max.message.bytes", &max.to_string())]));
    log.append_as_leader(&mut first.clone(), 0).unwrap();
    match log.append_as_leader(&mut second.clone(), 0) {
        Err(Error::RecordBatchTooLarge { size, max: m }) => assert_eq!((size, m), (second.len(), max)),
        other => panic!("expected RecordBatchTooLarge, got {other:?}"),
    }
    assert_eq!(log.log_end_offset(), 2, "the large batch was not appended");
    let mut follower_copy = second.clone();
    follower_copy[..8].copy_from_slice(&2i64.to_be_bytes());
    log.append_as_follower(&follower_copy).unwrap();
    assert_eq!(log.log_end_offset(), 4);
}

#[test]
fn message_size_is_checked_again_after_recompression() {
    // A batch that fits max.message.bytes as the producer compressed it, but not once the
    // topic's compression.type rewrites it uncompressed.
    let value = vec![b'x'; 500];
    let lz4 = batch(0, CompressionType::Lz4, &[(Some(b"k"), Some(&value), T0)]);
    let fx = Fixture::new();
    let log = fx.open(&config(&[("max.message.bytes", "200"), ("compression.type", "uncompressed")]));
    assert!(lz4.len() <= 200, "the producer's batch fits");
    assert!(matches!(log.append_as_leader(&mut lz4.clone(), 0), Err(Error::RecordBatchTooLarge { .. })));
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn batch_larger_than_the_segment_size_is_rejected() {
    // UnifiedLog.append: "Message batch size is N bytes ... exceeds the maximum configured
    // segment size" (RecordBatchTooLargeException), for leaders and followers alike.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "2048")]));
    let values: Vec<String> = (0..80).map(|i| format!("value number {i:04} padded to be long")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let big = values_batch(0, T0, &refs);
    assert!(big.len() > 2048);
    assert!(matches!(log.append_as_leader(&mut big.clone(), 0), Err(Error::RecordBatchTooLarge { .. })));
    assert!(matches!(log.append_as_follower(&big), Err(Error::RecordBatchTooLarge { .. })));
    assert_eq!((log.log_end_offset(), log.size_in_bytes(), log.number_of_segments()), (0, 0, 1));
    // What fits is still accepted.
    append_values(&log, T0, &refs[..10]);
    assert_eq!(log.log_end_offset(), 10);
}

#[test]
fn compacted_topic_requires_keys() {
    // testCompactedTopicConstraints.
    let keyed: RecSpec<'_> = (Some(b"and here it is"), Some(b"this message has a key"), T0);
    let another: RecSpec<'_> = (Some(b"another key"), Some(b"this message also has a key"), T0);
    let unkeyed: RecSpec<'_> = (None, Some(b"this message does not have a key"), T0);
    let fx = Fixture::new();
    let log = fx.open(&config(&[("cleanup.policy", "compact")]));
    let rejected = [
        batch(0, CompressionType::None, &[unkeyed, keyed]),
        batch(0, CompressionType::None, &[unkeyed]),
        batch(0, CompressionType::Gzip, &[keyed, unkeyed]),
    ];
    for mut b in rejected {
        match log.append_as_leader(&mut b, 0) {
            Err(Error::InvalidRecord { reason }) => {
                assert!(reason.starts_with("compacted topic cannot accept message without key"), "{reason}");
            }
            other => panic!("expected InvalidRecord, got {other:?}"),
        }
    }
    assert_eq!(log.log_end_offset(), 0);
    log.append_as_leader(&mut batch(0, CompressionType::None, &[keyed]), 0).unwrap();
    log.append_as_leader(&mut batch(0, CompressionType::None, &[keyed, another]), 0).unwrap();
    log.append_as_leader(&mut batch(0, CompressionType::Gzip, &[keyed]), 0).unwrap();
    assert_eq!(log.log_end_offset(), 4);
}

#[test]
fn create_time_outside_the_timestamp_bounds_is_rejected() {
    // message.timestamp.before.max.ms / after.max.ms (KIP-937); records without a timestamp
    // (-1) are exempt, as in Kafka's LogValidator.validateTimestamp.
    let fx = Fixture::new();
    let cfg = config(&[("message.timestamp.before.max.ms", "1000"), ("message.timestamp.after.max.ms", "2000")]);
    let log = fx.open(&cfg);
    for ts in [T0 - 1001, T0 + 2001] {
        match log.append_as_leader(&mut singleton("v", ts), 0) {
            Err(Error::InvalidRecord { reason }) => assert!(reason.contains(&ts.to_string()), "{reason}"),
            other => panic!("timestamp {ts}: expected InvalidRecord, got {other:?}"),
        }
    }
    // One bad record rejects the whole batch.
    let mixed = batch(0, CompressionType::None, &[(None, Some(b"ok"), T0), (None, Some(b"late"), T0 - 5000)]);
    assert!(matches!(log.append_as_leader(&mut mixed.clone(), 0), Err(Error::InvalidRecord { .. })));
    assert_eq!(log.log_end_offset(), 0);
    for ts in [T0 - 1000, T0 + 2000, T0, -1] {
        log.append_as_leader(&mut singleton("v", ts), 0).unwrap_or_else(|e| panic!("timestamp {ts}: {e}"));
    }
    assert_eq!(log.log_end_offset(), 4);
}

#[test]
fn log_append_time_is_stamped_by_the_broker() {
    // message.timestamp.type=LogAppendTime: the batch max timestamp becomes the clock's time and
    // every record reads back with it, whatever the producer wrote; in place and recompressed.
    for topic_codec in ["producer", "zstd"] {
        let fx = Fixture::new();
        let cfg = config(&[("message.timestamp.type", "LogAppendTime"), ("compression.type", topic_codec)]);
        let log = fx.open(&cfg);
        fx.clock.set(T0 + 12_345);
        for codec in [CompressionType::None, CompressionType::Lz4] {
            let mut b = batch(0, codec, &[(None, Some(b"a"), 1_000), (None, Some(b"b"), T0 + 50_000_000)]);
            let info = log.append_as_leader(&mut b, 0).unwrap();
            assert_eq!((info.log_append_time, info.max_timestamp), (T0 + 12_345, T0 + 12_345));
        }
        let bytes = read(&log, 0, 1 << 20);
        let mut count = 0;
        for item in BatchIter::new(&bytes) {
            let (_, AnyBatch::V2(b)) = item.unwrap() else { panic!("v2 expected") };
            b.ensure_valid().unwrap();
            assert_eq!((b.timestamp_type(), b.max_timestamp()), (TimestampType::LogAppendTime, T0 + 12_345));
            count += 1;
        }
        assert_eq!(count, 2);
        assert!(decode(&bytes).iter().all(|r| r.timestamp == T0 + 12_345), "{topic_codec}");
        assert_eq!(log.offset_for_timestamp(T0 + 12_345).unwrap().unwrap().offset, 0);
    }
}

#[test]
fn topic_compression_type_recompresses_producer_batches() {
    // compression.type=gzip: a producer's lz4 batch is stored gzip, with the same records.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("compression.type", "gzip")]));
    append_values(&log, T0, &["first"]);
    let recs: Vec<RecSpec<'_>> =
        vec![(Some(b"k1"), Some(b"v1"), T0), (None, None, T0 + 1), (Some(b"k3"), Some(&[0u8; 300]), T0 + 2)];
    let mut lz4 = batch(0, CompressionType::Lz4, &recs);
    let info = log.append_as_leader(&mut lz4, 0).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (1, 3));
    let bytes = read(&log, 0, 1 << 20);
    assert_eq!(codecs(&bytes), vec![CompressionType::Gzip, CompressionType::Gzip]);
    let got = decode(&bytes);
    let want: Vec<Rec> = recs
        .iter()
        .enumerate()
        .map(|(i, (k, v, ts))| Rec {
            offset: 1 + i as i64,
            timestamp: *ts,
            key: k.map(<[u8]>::to_vec),
            value: v.map(<[u8]>::to_vec),
        })
        .collect();
    assert_eq!(got[1..], want[..]);
    // With compression.type=producer the producer's codec is kept.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    log.append_as_leader(&mut batch(0, CompressionType::Lz4, &recs), 0).unwrap();
    assert_eq!(codecs(&read(&log, 0, 1 << 20)), vec![CompressionType::Lz4]);
}

#[test]
fn truncate_to() {
    // testTruncateTo.
    let fx = Fixture::new();
    let set_size = singleton("test", T0).len();
    let log = fx.open(&config(&[("internal.segment.bytes", &(10 * set_size).to_string())]));
    let append10 = |log: &UnifiedLog| {
        for _ in 0..10 {
            log.append_as_leader(&mut singleton("test", T0), 0).unwrap();
        }
    };
    append10(&log);
    assert_eq!((log.number_of_segments(), log.log_end_offset()), (1, 10));
    let size = log.size_in_bytes();
    assert!(!log.truncate_to(10).unwrap(), "truncating to the log end keeps everything");
    assert!(!log.truncate_to(11).unwrap(), "truncating past the log end keeps everything");
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (10, size));
    assert!(log.truncate_to(5).unwrap());
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(log.size_in_bytes(), 5 * set_size as u64);
    assert!(log.truncate_to(0).unwrap());
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (0, 0));
    append10(&log);
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (10, size));
    log.truncate_fully_and_start_at(1).unwrap();
    assert_eq!((log.log_end_offset(), log.size_in_bytes(), log.log_start_offset()), (1, 0, 1));
    append10(&log);
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (11, size));
    assert!(log.truncate_to(0).unwrap(), "truncating below the first segment empties the log");
    assert_eq!((log.log_end_offset(), log.size_in_bytes(), log.log_start_offset()), (0, 0, 0));
    assert!(matches!(log.truncate_to(-1), Err(Error::InvalidArgument { .. })));
}

#[test]
fn index_resizing_at_truncation() {
    // testIndexResizingAtTruncation: the surviving segment's indexes get their full size back.
    let fx = Fixture::new();
    let set_size = singleton("test", T0).len();
    let cfg = config(&[
        ("internal.segment.bytes", &(10 * set_size).to_string()),
        ("index.interval.bytes", &(set_size - 1).to_string()),
    ]);
    let log = fx.open(&cfg);
    let append10 = |log: &UnifiedLog| {
        for i in 1..=10 {
            let ts = fx.clock.milliseconds() + i;
            log.append_as_leader(&mut singleton("test", ts), 0).unwrap();
        }
    };
    append10(&log);
    assert_eq!(log.number_of_segments(), 1);
    fx.clock.advance(10);
    append10(&log);
    assert_eq!(log.number_of_segments(), 2);
    let first = &log.segments()[0];
    assert_eq!(first.offset_index().unwrap().get().unwrap().max_entries(), 9, "trimmed at roll");
    assert_eq!(first.time_index().unwrap().get().unwrap().max_entries(), 9, "trimmed at roll");
    assert!(log.truncate_to(0).unwrap());
    assert_eq!(log.number_of_segments(), 1);
    let only = &log.segments()[0];
    let max_index_size = cfg.segment_index_bytes as usize;
    assert_eq!(only.offset_index().unwrap().get().unwrap().max_entries(), max_index_size / 8);
    assert_eq!(only.time_index().unwrap().get().unwrap().max_entries(), max_index_size / 12);
    fx.clock.advance(10);
    append10(&log);
    assert_eq!(log.number_of_segments(), 1);
}

#[test]
fn truncate_fully_and_start_at() {
    // testTruncateFullyAndStart (without producer state).
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        append_values(&log, T0, &["0", "1", "2"]);
        append_values(&log, T0, &["3", "4"]);
        log.close().unwrap();
    }
    let log = fx.open(&cfg);
    log.truncate_fully_and_start_at(2).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.size_in_bytes()), (2, 2, 0));
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![2]);
    assert_eq!(append_values(&log, T0, &["x"]), 2);
    log.close().unwrap();
    let log = fx.open(&cfg);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (2, 3));
    assert_eq!(offsets(&read(&log, 2, 1000)), vec![2]);
}

#[test]
fn cannot_increment_log_start_offset_past_high_watermark() {
    // testCannotIncrementLogStartOffsetPastHighWatermark (deleteRecords).
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "512"), ("segment.index.bytes", "1000")]));
    for i in 0..100 {
        log.append_as_leader(&mut singleton(&format!("test{i}"), T0), 0).unwrap();
    }
    log.set_high_watermark(25).unwrap();
    assert!(matches!(log.delete_records(26), Err(Error::OffsetOutOfRange { offset: 26, .. })));
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.delete_records(25).unwrap(), 25);
    assert_eq!(log.delete_records(10).unwrap(), 25, "the log start offset never goes back");
    assert_eq!(log.log_start_offset(), 25);
    assert!(matches!(log.read(24, 1000, FetchIsolation::LogEnd, true), Err(Error::OffsetOutOfRange { .. })));
    assert_eq!(offsets(&read(&log, 25, 1)), vec![25]);
    assert_eq!(log.offset_for_timestamp(EARLIEST_TIMESTAMP).unwrap().unwrap().offset, 25);
}

#[test]
fn load_empty_log() {
    // testLoadEmptyLog and testLoadPartitionDirWithNoSegmentsShouldNotThrow.
    let fx = Fixture::new();
    std::fs::create_dir_all(&fx.dir).unwrap();
    std::fs::write(fx.dir.join("00000000000000000000.log"), b"").unwrap();
    std::fs::write(fx.dir.join("00000000000000000000.index"), b"").unwrap();
    let log = fx.open(&config(&[]));
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(append_values(&log, T0, &["test"]), 0);
    let fx = Fixture::new();
    std::fs::create_dir_all(&fx.dir).unwrap();
    let log = fx.open(&config(&[]));
    assert_eq!((log.number_of_segments(), log.log_end_offset()), (1, 0));
}

#[test]
fn flushing_empty_active_segments() {
    // testFlushingEmptyActiveSegments: an empty active segment after a roll is flushed without
    // error and survives a reopen.
    let fx = Fixture::new();
    let cfg = config(&[]);
    let log = fx.open(&cfg);
    append_values(&log, T0, &["Test"]);
    log.roll().unwrap();
    assert_eq!(files_with_suffix(&fx.dir, ".log").len(), 2);
    assert_eq!(files_with_suffix(&fx.dir, ".index").len(), 1, "the new segment's index is created lazily");
    assert_eq!(log.segments()[1].size(), 0);
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), 1);
    assert_eq!(files_with_suffix(&fx.dir, ".log").len(), 2);
    drop(log);
    let log = fx.open(&cfg);
    assert_eq!(log.segments().iter().map(|s| s.base_offset()).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(log.log_end_offset(), 1);
}

#[test]
fn append_message_with_null_payload() {
    // testAppendMessageWithNullPayload.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    log.append_as_leader(&mut batch(0, CompressionType::None, &[(None, None, T0)]), 0).unwrap();
    let head = decode(&read(&log, 0, 4096)).remove(0);
    assert_eq!((head.offset, head.key, head.value), (0, None, None));
}

#[test]
fn log_recovers_topic_id() {
    // testLogRecoversTopicId; partition.metadata is Kafka's two-line file.
    let fx = Fixture::new();
    let cfg = config(&[]);
    let id = TopicId::random();
    {
        let log = fx.open(&cfg);
        assert_eq!(log.topic_id(), None);
        log.assign_topic_id(id).unwrap();
        log.assign_topic_id(id).unwrap();
        log.close().unwrap();
    }
    let text = std::fs::read_to_string(fx.dir.join("partition.metadata")).unwrap();
    assert_eq!(text, format!("version: 0\ntopic_id: {id}"));
    let log = fx.open(&cfg);
    assert_eq!(log.topic_id(), Some(id));
}

#[test]
fn log_fails_when_inconsistent_topic_id_set() {
    // testLogFailsWhenInconsistentTopicIdSet.
    let fx = Fixture::new();
    let cfg = config(&[]);
    let id = TopicId::random();
    {
        let log = fx.open(&cfg);
        log.assign_topic_id(id).unwrap();
        log.close().unwrap();
    }
    let log = fx.open(&cfg);
    let other = TopicId::random();
    match log.assign_topic_id(other) {
        Err(Error::InconsistentTopicId { stored, given, .. }) => {
            assert_eq!((stored, given), (id.to_string(), other.to_string()));
        }
        res => panic!("expected InconsistentTopicId, got {res:?}"),
    }
    assert_eq!(log.topic_id(), Some(id), "the stored id stays");
}

#[test]
fn offset_for_timestamp() {
    // fetchOffsetByTimestamp: -2 log start, -1 log end, -3 the record with the largest
    // timestamp, and real timestamps across segments.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "200")]));
    let ts = |d: i64| T0 - 100_000 + d;
    let b = |t: &[i64]| {
        let specs: Vec<RecSpec<'_>> = t.iter().map(|&t| (Some(&b"k"[..]), Some(&b"v"[..]), t)).collect();
        batch(0, CompressionType::None, &specs)
    };
    for timestamps in [&[10, 20][..], &[15, 90, 30], &[40], &[50, 60]] {
        let mut bytes = b(&timestamps.iter().map(|&d| ts(d)).collect::<Vec<_>>());
        log.append_as_leader(&mut bytes, 3).unwrap();
    }
    assert!(log.number_of_segments() > 1);
    let find = |t: i64| log.offset_for_timestamp(t).unwrap().map(|r| (r.offset, r.timestamp));
    assert_eq!(find(EARLIEST_TIMESTAMP), Some((0, -1)));
    assert_eq!(find(LATEST_TIMESTAMP), Some((8, -1)));
    assert_eq!(find(MAX_TIMESTAMP), Some((3, ts(90))), "the first record with the largest timestamp");
    assert_eq!(log.offset_for_timestamp(MAX_TIMESTAMP).unwrap().unwrap().leader_epoch, 3);
    assert_eq!(find(0), Some((0, ts(10))), "before every timestamp");
    assert_eq!(find(ts(10)), Some((0, ts(10))));
    assert_eq!(find(ts(11)), Some((1, ts(20))));
    assert_eq!(find(ts(21)), Some((3, ts(90))), "the first record at or after it, by offset");
    assert_eq!(find(ts(31)), Some((3, ts(90))));
    assert_eq!(find(ts(45)), Some((3, ts(90))));
    assert_eq!(find(ts(60)), Some((3, ts(90))));
    assert_eq!(find(ts(91)), None, "after every timestamp");
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.delete_records(2).unwrap();
    assert_eq!(find(EARLIEST_TIMESTAMP), Some((2, -1)));
    assert_eq!(find(ts(10)), Some((2, ts(15))), "not below the log start offset");
    assert!(log.offset_for_timestamp(-4).is_err(), "unsupported special timestamp");
}

#[test]
fn flush_advances_the_recovery_point() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a", "b"]);
    assert_eq!(log.recovery_point(), 0, "nothing flushed yet");
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), 2);
    append_values(&log, T0, &["c"]);
    assert_eq!(log.recovery_point(), 2);
    // flush.messages=1: every append is flushed.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("flush.messages", "1")]));
    for i in 1..=3 {
        append_values(&log, T0, &["x"]);
        assert_eq!(log.recovery_point(), i);
    }
}

#[test]
fn operations_after_close_fail() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a"]);
    log.close().unwrap();
    log.close().unwrap();
    assert!(matches!(log.append_as_leader(&mut singleton("b", T0), 0), Err(Error::LogClosed { .. })));
    assert!(matches!(log.read(0, 100, FetchIsolation::LogEnd, true), Err(Error::LogClosed { .. })));
    let log = fx.open(&config(&[]));
    assert_eq!(read_all(&log, 0).len(), 1);
}

#[test]
fn a_second_writer_is_refused_until_the_first_closes() {
    // One writer per partition directory: a second writable open (same process here; another
    // process gets the same flock answer) fails with LogDirLocked, a read-only open does not.
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a"]);
    let second = UnifiedLog::open(&fx.dir, config(&[]), fx.options());
    assert!(matches!(second, Err(Error::LogDirLocked { .. })), "{second:?}");
    let reader = fx.open_read_only(&config(&[]));
    assert_eq!(reader.log_end_offset(), 1);
    log.close().unwrap();
    let reopened = fx.open(&config(&[]));
    assert_eq!(reopened.log_end_offset(), 1);
    drop(reopened);
    // Dropping without close releases the lock too (a crashed writer's lock dies with it).
    fx.open(&config(&[]));
}

#[test]
fn a_batch_larger_than_a_segment_is_refused_before_anything_is_written() {
    // Kafka checks every batch of an append against the segment size before writing; a run of
    // batches whose last one is too large leaves the log untouched.
    let fx = Fixture::new();
    let log = fx.open(&config(&[("internal.segment.bytes", "1024"), ("max.message.bytes", "100000")]));
    let mut run = values_batch(0, T0, &["small"]);
    run.extend(values_batch(0, T0, &[&"x".repeat(2000)]));
    let err = log.append_as_leader(&mut run, 0).unwrap_err();
    assert!(matches!(err, Error::RecordBatchTooLarge { max: 1024, .. }), "{err}");
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size_in_bytes(), 0);
}
