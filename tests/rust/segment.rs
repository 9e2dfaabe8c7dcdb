//! Kafka's `LogSegmentTest`, against `kafkalog::segment::log_segment::LogSegment`.

use std::path::Path;

use kafkalog::error::Error;
use kafkalog::segment::log_segment::{LogSegment, RollParams};
use kafkalog::util::clock::{system_clock, Clock, ManualClock, SharedClock};
use kafkalog::LogConfig;

use crate::common::{batches, config, decode, offsets, values_batch, write_nonsense, XorShift};

/// Kafka's `LogTestUtils.createSegment`: index entries every 10 bytes, small indexes.
fn seg_config(index_interval: usize) -> LogConfig {
    config(&[("index.interval.bytes", &index_interval.to_string()), ("segment.index.bytes", "1500")])
}

fn create(dir: &Path, base: i64, index_interval: usize, clock: SharedClock) -> LogSegment {
    LogSegment::open(dir, base, &seg_config(index_interval), clock, "", false, false).expect("open segment")
}

/// Kafka's `records(offset, values...)`: one batch at `offset`, every record timestamped
/// `offset * 10`.
fn batch_at(offset: i64, values: &[&str]) -> Vec<u8> {
    values_batch(offset, offset * 10, values)
}

/// Appends `bytes` (one batch) the way `UnifiedLog` does; the segment takes the max timestamp
/// from the batch header.
fn segment_append(seg: &LogSegment, bytes: &[u8]) {
    let b = batches(bytes)[0];
    let count = (b.last_offset - b.base_offset + 1) as u64;
    seg.append(b.last_offset, bytes, count).expect("segment append");
}

/// The bytes `LogSegment::read` selects, bounded by the segment size.
fn segment_read(seg: &LogSegment, start: i64, max_size: u64, min_one: bool) -> Option<Vec<u8>> {
    let slice = seg.read(start, max_size, seg.size(), min_one).expect("segment read")?;
    let mut out = Vec::new();
    seg.log().read_into(slice.position, slice.size as usize, &mut out).expect("read slice");
    Some(out)
}

#[test]
fn append_for_log_segment_offset_overflow_is_rejected() {
    // testAppendForLogSegmentOffsetOverflowException: largest - base outside [0, i32::MAX].
    let dir = tempfile::tempdir().unwrap();
    let cases: [(i64, i64); 6] = [
        (0, -2_147_483_648),
        (0, 2_147_483_648),
        (1, 0),
        (100, 10),
        (2_147_483_648, 0),
        (2_147_483_648, 4_294_967_296),
    ];
    for (base, largest) in cases {
        let seg = create(dir.path(), base, 10, system_clock());
        let bytes = batch_at(0, &["hello"]);
        let err = seg.append(largest, &bytes, 1).unwrap_err();
        assert!(
            matches!(err, Error::OffsetOverflow { base_offset, offset } if base_offset == base && offset == largest)
        );
        assert_eq!(seg.size(), 0, "nothing written for base {base}, largest {largest}");
        seg.delete_if_exists().unwrap();
    }
}

#[test]
fn read_before_first_offset_returns_the_first_batch() {
    // testReadBeforeFirstOffset.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    let ms = batch_at(50, &["hello", "there", "little", "bee"]);
    segment_append(&seg, &ms);
    assert_eq!(segment_read(&seg, 41, 300, false).unwrap(), ms);
}

#[test]
fn read_after_last_offset_is_none() {
    // testReadAfterLast and testReadOnEmptySegment.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    assert!(segment_read(&seg, 40, 300, false).is_none(), "empty segment");
    segment_append(&seg, &batch_at(50, &["hello", "there"]));
    assert!(segment_read(&seg, 52, 200, false).is_none());
    assert!(segment_read(&seg, 51, 200, false).is_some(), "the last offset itself is readable");
}

#[test]
fn read_from_gap_returns_the_next_batch() {
    // testReadFromGap.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    segment_append(&seg, &batch_at(50, &["hello", "there"]));
    let ms2 = batch_at(60, &["alpha", "beta"]);
    segment_append(&seg, &ms2);
    assert_eq!(segment_read(&seg, 55, 200, false).unwrap(), ms2);
}

#[test]
fn read_respects_max_size_and_min_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 0, 10, system_clock());
    let first = batch_at(0, &["a", "b"]);
    let second = batch_at(2, &["c"]);
    segment_append(&seg, &first);
    segment_append(&seg, &second);
    // A budget smaller than the first batch: nothing, unless min_one_message.
    assert_eq!(segment_read(&seg, 0, 1, false).unwrap(), Vec::<u8>::new());
    assert_eq!(segment_read(&seg, 0, 1, true).unwrap(), first);
    // Whole batches only: one byte short of both batches gives the first.
    let both = (first.len() + second.len()) as u64;
    assert_eq!(segment_read(&seg, 0, both - 1, false).unwrap(), first);
    assert_eq!(segment_read(&seg, 1, both, false).unwrap(), [first.clone(), second].concat());
    // max_position bounds the read at a batch boundary.
    let slice = seg.read(0, 10_000, first.len() as u64, false).unwrap().unwrap();
    assert_eq!((slice.position, slice.size), (0, first.len() as u64));
}

#[test]
fn truncate_removes_the_batches_at_and_after_the_offset() {
    // testTruncate: append two batches, truncate the second, repeatedly.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    for offset in 40..70 {
        let ms1 = batch_at(offset, &["hello"]);
        segment_append(&seg, &ms1);
        let ms2 = batch_at(offset + 1, &["hello"]);
        segment_append(&seg, &ms2);
        assert_eq!(offsets(&segment_read(&seg, offset, 10_000, false).unwrap()), vec![offset, offset + 1]);
        let truncated = seg.truncate_to(offset + 1).unwrap();
        assert_eq!(truncated, ms2.len() as u64);
        assert_eq!(segment_read(&seg, offset, 10_000, false).unwrap(), ms1);
        assert_eq!(seg.read_next_offset().unwrap(), offset + 1);
    }
}

#[test]
fn truncate_to_an_offset_in_a_gap_removes_the_later_batch() {
    // shouldTruncateEvenIfOffsetPointsToAGapInTheLog.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    segment_append(&seg, &batch_at(40, &["first message"]));
    segment_append(&seg, &batch_at(43, &["message after gap"]));
    seg.truncate_to(41).unwrap();
    let left = batches(&segment_read(&seg, 40, 10_000, false).unwrap());
    assert_eq!(left.iter().map(|b| b.base_offset).collect::<Vec<_>>(), vec![40]);
}

#[test]
fn truncate_full_resets_creation_time_and_allows_reappending() {
    // testTruncateFull.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let seg = create(dir.path(), 40, 10, clock.clone());
    // Records without timestamps: the roll clock runs from the segment's creation.
    segment_append(&seg, &values_batch(40, -1, &["hello", "there"]));
    clock.advance(500);
    assert_eq!(seg.time_waited_for_roll(clock.milliseconds(), -1).unwrap(), 500);
    seg.truncate_to(0).unwrap();
    assert_eq!(seg.size(), 0);
    assert_eq!(seg.time_waited_for_roll(clock.milliseconds(), -1).unwrap(), 0);
    assert!(!seg.time_index().unwrap().get().unwrap().is_full());
    assert!(!seg.offset_index().unwrap().get().unwrap().is_full());
    assert!(segment_read(&seg, 0, 1024, false).is_none(), "segment should be empty");
    segment_append(&seg, &batch_at(40, &["hello", "there"]));
    assert_eq!(seg.read_next_offset().unwrap(), 42);
}

#[test]
fn truncate_empty_segment_resizes_indexes_and_does_not_roll() {
    // testTruncateEmptySegment: a follower truncating to an empty segment whose indexes were
    // trimmed to zero length must not roll on a "full" index, and the creation time restarts.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let max_segment_ms = 300_000;
    {
        let seg = create(dir.path(), 0, 10, clock.clone());
        drop(seg.time_index().unwrap().get().unwrap());
        drop(seg.offset_index().unwrap().get().unwrap());
        seg.close().unwrap();
    }
    let reopened = create(dir.path(), 0, 10, clock.clone());
    assert_eq!(reopened.time_index().unwrap().get().unwrap().file_len(), 0);
    assert_eq!(reopened.offset_index().unwrap().get().unwrap().file_len(), 0);
    clock.advance(500);
    reopened.truncate_to(57).unwrap();
    assert_eq!(reopened.time_waited_for_roll(clock.milliseconds(), -1).unwrap(), 0);
    assert!(!reopened.time_index().unwrap().get().unwrap().is_full());
    assert!(!reopened.offset_index().unwrap().get().unwrap().is_full());
    let params = |max_offset: i64, now: i64| RollParams {
        max_segment_ms,
        max_segment_bytes: i32::MAX as u64,
        max_timestamp_in_messages: -1,
        max_offset_in_messages: max_offset,
        messages_size: 1024,
        now,
    };
    assert!(!reopened.should_roll(&params(100, clock.milliseconds())).unwrap());
    // Not even once segment.ms has passed: the segment is empty.
    clock.advance(max_segment_ms + 1);
    assert_eq!(reopened.time_waited_for_roll(clock.milliseconds(), -1).unwrap(), max_segment_ms + 1);
    assert!(!reopened.should_roll(&params(100, clock.milliseconds())).unwrap());
    // But an offset that cannot be stored relative to the base forces a roll.
    assert!(reopened.should_roll(&params(i64::from(i32::MAX) + 200, clock.milliseconds())).unwrap());
}

#[test]
fn reload_largest_timestamp_and_next_offset_after_truncation() {
    // testReloadLargestTimestampAndNextOffsetAfterTruncation: the caller passes the offset as
    // the timestamp, but the batches hold offset * 10; truncation re-reads the data.
    let dir = tempfile::tempdir().unwrap();
    let interval = 2 * batch_at(0, &["hello"]).len() - 1;
    let seg = create(dir.path(), 40, interval, system_clock());
    for offset in 40..70 {
        segment_append(&seg, &batch_at(offset, &["hello"]));
    }
    assert_eq!(seg.read_next_offset().unwrap(), 70);
    assert_eq!(seg.time_index().unwrap().get().unwrap().entries(), 30 / 2 - 1);
    seg.truncate_to(41).unwrap();
    assert_eq!(seg.time_index().unwrap().get().unwrap().entries(), 0);
    assert_eq!(seg.largest_timestamp().unwrap(), 400);
    assert_eq!(seg.read_next_offset().unwrap(), 41);
}

#[test]
fn find_offset_by_timestamp() {
    // testFindOffsetByTimestamp.
    let dir = tempfile::tempdir().unwrap();
    let interval = batch_at(0, &["msg00"]).len() * 2 - 1;
    let seg = create(dir.path(), 40, interval, system_clock());
    for i in 40..50 {
        segment_append(&seg, &batch_at(i, &[&format!("msg{i}")]));
    }
    assert_eq!(seg.largest_timestamp().unwrap(), 490);
    let find = |ts: i64| seg.find_offset_by_timestamp(ts, 0).unwrap().map(|t| (t.offset, t.timestamp));
    assert_eq!(find(420), Some((42, 420)), "indexed timestamp");
    assert_eq!(find(421), Some((43, 430)));
    assert_eq!(find(430), Some((43, 430)), "unindexed timestamp");
    assert_eq!(find(431), Some((44, 440)));
    assert_eq!(find(491), None, "beyond the last timestamp");
    assert_eq!(find(401), Some((41, 410)), "before the first indexed timestamp");
    assert_eq!(find(399), Some((40, 400)), "before the first timestamp");
    // The starting offset bounds the search.
    assert_eq!(seg.find_offset_by_timestamp(399, 45).unwrap().map(|t| t.offset), Some(45));
}

#[test]
fn next_offset_calculation() {
    // testNextOffsetCalculation.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    assert_eq!(seg.read_next_offset().unwrap(), 40);
    segment_append(&seg, &batch_at(50, &["hello", "there", "you"]));
    assert_eq!(seg.read_next_offset().unwrap(), 53);
}

#[test]
fn change_file_suffixes_renames_lazily_created_indexes() {
    // testChangeFileSuffixes.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 40, 10, system_clock());
    let log_file = seg.path();
    let index_file = dir.path().join("00000000000000000040.index");
    let time_index_file = dir.path().join("00000000000000000040.timeindex");
    assert!(log_file.exists());
    assert!(!index_file.exists() && !time_index_file.exists(), "indexes are not created eagerly");
    seg.change_file_suffixes("", ".deleted").unwrap();
    let deleted = |p: &Path| p.with_file_name(format!("{}.deleted", p.file_name().unwrap().to_string_lossy()));
    assert_eq!(seg.path(), deleted(&log_file));
    assert!(seg.path().exists() && !log_file.exists());
    assert!(!deleted(&index_file).exists() && !deleted(&time_index_file).exists(), "renaming creates nothing");
    assert_eq!(seg.offset_index().unwrap().get().unwrap().path(), deleted(&index_file));
    assert!(deleted(&index_file).exists(), "created on first use, under the new name");
    assert_eq!(seg.time_index().unwrap().get().unwrap().path(), deleted(&time_index_file));
    assert!(deleted(&time_index_file).exists());
    assert!(!index_file.exists() && !time_index_file.exists());
}

#[test]
fn first_batch_timestamp() {
    // testGetFirstBatchTimestamp (Kafka returns Long.MAX_VALUE for an empty segment; we return None).
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 1, 10, system_clock());
    assert_eq!(seg.first_batch_timestamp().unwrap(), None);
    segment_append(&seg, &values_batch(1, 1000, &["one"]));
    assert_eq!(seg.first_batch_timestamp().unwrap(), Some(1000));
    segment_append(&seg, &values_batch(2, 5000, &["two"]));
    assert_eq!(seg.first_batch_timestamp().unwrap(), Some(1000), "the first batch decides");
}

#[test]
fn recovery_fixes_corrupt_index() {
    // testRecoveryFixesCorruptIndex.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 0, 10, system_clock());
    for i in 0..100 {
        segment_append(&seg, &batch_at(i, &[&i.to_string()]));
    }
    let index = dir.path().join("00000000000000000000.index");
    let len = std::fs::metadata(&index).unwrap().len();
    write_nonsense(&index, 5, (len - 5) as usize, 7);
    assert_eq!(seg.recover().unwrap(), 0, "the data was fine");
    for i in 0..100 {
        let bytes = segment_read(&seg, i, 1, true).unwrap();
        assert_eq!(offsets(&bytes)[0], i);
    }
}

#[test]
fn recovery_fixes_corrupt_time_index() {
    // testRecoveryFixesCorruptTimeIndex.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 0, 10, system_clock());
    for i in 0..100 {
        segment_append(&seg, &batch_at(i, &[&i.to_string()]));
    }
    let index = dir.path().join("00000000000000000000.timeindex");
    let len = std::fs::metadata(&index).unwrap().len();
    write_nonsense(&index, 5, (len - 5) as usize, 11);
    seg.recover().unwrap();
    for i in 0..100 {
        assert_eq!(seg.find_offset_by_timestamp(i * 10, 0).unwrap().unwrap().offset, i);
        if i < 99 {
            assert_eq!(seg.find_offset_by_timestamp(i * 10 + 1, 0).unwrap().unwrap().offset, i + 1);
        }
    }
}

#[test]
fn recovery_with_corrupt_message_truncates_from_that_batch() {
    // testRecoveryWithCorruptMessage: nonsense from somewhere in the first 15 bytes of a batch to
    // the end of the file; recovery keeps exactly the batches before it.
    let mut rng = XorShift(0x5eed);
    for round in 0..12 {
        let dir = tempfile::tempdir().unwrap();
        let seg = create(dir.path(), 0, 10, system_clock());
        for i in 0..20 {
            segment_append(&seg, &batch_at(i, &[&i.to_string()]));
        }
        let corrupt_from = rng.below(20) as i64;
        let at = seg.log().search_for_offset_with_size(corrupt_from, 0).unwrap().0.unwrap().position;
        let position = at + rng.below(15);
        let size = seg.size();
        write_nonsense(&seg.path(), position, (size - position) as usize, round + 1);
        let truncated = seg.recover().unwrap();
        assert_eq!(truncated, size - at, "round {round}: bytes truncated");
        assert_eq!(seg.size(), at);
        let mut all = Vec::new();
        seg.log().read_into(0, seg.size() as usize, &mut all).unwrap();
        let lasts: Vec<i64> = batches(&all).iter().map(|b| b.last_offset).collect();
        assert_eq!(lasts, (0..corrupt_from).collect::<Vec<_>>(), "round {round}");
        assert_eq!(seg.read_next_offset().unwrap(), corrupt_from);
    }
}

#[test]
fn recovery_after_a_flipped_byte_mid_file_reports_the_bytes_cut() {
    // One byte flipped inside the CRC-covered part of a middle batch.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 0, 10, system_clock());
    for i in 0..10 {
        segment_append(&seg, &batch_at(i, &["some value"]));
    }
    let hit = seg.log().search_for_offset_with_size(5, 0).unwrap().0.unwrap();
    let size = seg.size();
    let target = hit.position + 40;
    let mut byte = [0u8; 1];
    seg.log().read_at(target, &mut byte).unwrap();
    write_bytes(&seg.path(), target, &[byte[0] ^ 0x01]);
    assert_eq!(seg.recover().unwrap(), size - hit.position);
    assert_eq!(seg.read_next_offset().unwrap(), 5);
    assert_eq!(seg.largest_timestamp().unwrap(), 40, "max timestamp rebuilt from what survived");
    assert_eq!(seg.find_offset_by_timestamp(45, 0).unwrap(), None);
}

fn write_bytes(path: &Path, position: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, position).unwrap();
}

fn prealloc_config() -> LogConfig {
    config(&[
        ("index.interval.bytes", "10"),
        ("segment.index.bytes", "1000"),
        ("segment.jitter.ms", "0"),
        ("segment.bytes", "1048576"),
        ("preallocate", "true"),
    ])
}

#[test]
fn create_with_init_file_size_append_message() {
    // testCreateWithInitFileSizeAppendMessage.
    let dir = tempfile::tempdir().unwrap();
    let cfg = prealloc_config();
    let seg = LogSegment::open(dir.path(), 40, &cfg, system_clock(), "", true, false).unwrap();
    assert_eq!(seg.log().file_len().unwrap(), 1_048_576, "preallocated");
    assert_eq!(seg.size(), 0);
    segment_append(&seg, &batch_at(50, &["hello", "there"]));
    let ms2 = batch_at(60, &["alpha", "beta"]);
    segment_append(&seg, &ms2);
    assert_eq!(segment_read(&seg, 55, 200, false).unwrap(), ms2);
    assert_eq!(seg.read_next_offset().unwrap(), 62, "the zeros after the data are not batches");
}

#[test]
fn create_with_init_file_size_clear_shutdown() {
    // testCreateWithInitFileSizeClearShutdown: close trims the file; reopening keeps it as is.
    let dir = tempfile::tempdir().unwrap();
    let cfg = prealloc_config();
    let ms2 = batch_at(60, &["alpha", "beta"]);
    let old_size;
    {
        let seg = LogSegment::open(dir.path(), 40, &cfg, system_clock(), "", true, false).unwrap();
        segment_append(&seg, &batch_at(50, &["hello", "there"]));
        segment_append(&seg, &ms2);
        assert_eq!(segment_read(&seg, 55, 200, false).unwrap(), ms2);
        old_size = seg.size();
        assert_eq!(seg.log().file_len().unwrap(), 1_048_576);
        seg.close().unwrap();
        assert_eq!(seg.log().file_len().unwrap(), old_size, "trimmed on close");
        assert_eq!(std::fs::metadata(seg.path()).unwrap().len(), old_size);
    }
    let reopened = LogSegment::open(dir.path(), 40, &cfg, system_clock(), "", true, false).unwrap();
    assert_eq!(segment_read(&reopened, 55, 200, false).unwrap(), ms2);
    assert_eq!(reopened.size(), old_size);
    assert_eq!(reopened.log().file_len().unwrap(), old_size, "an existing file is not preallocated again");
    assert_eq!(decode(&segment_read(&reopened, 0, 10_000, false).unwrap()).len(), 4);
}

#[test]
fn read_only_segment_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let seg = create(dir.path(), 0, 10, system_clock());
        segment_append(&seg, &batch_at(0, &["a"]));
        seg.close().unwrap();
    }
    let before = std::fs::read(dir.path().join("00000000000000000000.log")).unwrap();
    let cfg = seg_config(10);
    let seg = LogSegment::open(dir.path(), 0, &cfg, system_clock(), "", false, true).unwrap();
    assert!(matches!(seg.append(1, &batch_at(1, &["b"]), 1), Err(Error::ReadOnly { .. })));
    assert!(matches!(seg.recover(), Err(Error::ReadOnly { .. })));
    assert_eq!(seg.read_next_offset().unwrap(), 1);
    assert_eq!(std::fs::read(dir.path().join("00000000000000000000.log")).unwrap(), before);
}

#[test]
fn scans_read_at_the_files_alignment_and_see_every_batch_from_any_position() {
    use kafkalog::segment::file_records::aligned_read_offset;
    // The offset a read lands at: below 64, its address equal to the file position modulo 64.
    let buf = vec![0u8; 256];
    for pos in 0..300u64 {
        let off = aligned_read_offset(&buf, pos);
        assert!(off < 64);
        assert_eq!((buf.as_ptr() as usize + off) % 64, (pos % 64) as usize, "position {pos}");
    }
    // Batches of 1 to 40 values (sizes, so positions, of every alignment), scanned from each
    // batch's position with a reused scratch buffer and a fresh one.
    let dir = tempfile::tempdir().unwrap();
    let seg = create(dir.path(), 0, 4096, system_clock());
    let mut expected = Vec::new();
    let mut offset = 0;
    for n in 1..=40 {
        let values: Vec<String> = (0..n).map(|i| "v".repeat(i % 7)).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        expected.push((seg.size(), offset));
        segment_append(&seg, &batch_at(offset, &refs));
        offset += n as i64;
    }
    let mut reused = Vec::new();
    for (i, &(position, _)) in expected.iter().enumerate() {
        for buf in [&mut reused, &mut Vec::new()] {
            let mut seen = Vec::new();
            let end = seg
                .log()
                .for_each_batch(position, seg.size(), buf, |at, b| {
                    seen.push((at, b.base_offset().unwrap()));
                    Ok(true)
                })
                .unwrap();
            assert_eq!(seen, expected[i..], "from position {position}");
            assert!(!end.torn_tail && end.position == seg.size());
        }
    }
}
