//! The leader epoch cache: Kafka's `LeaderEpochFileCacheTest` against `LeaderEpochFileCache`,
//! and the epoch cases of `UnifiedLogTest`, `LogLoaderTest` and `LogSegmentTest` against
//! `UnifiedLog` (appends, truncations, log-start moves, recovery, the checkpoint file).

use std::path::{Path, PathBuf};

use kafkalog::file_names::{TopicPartition, LEADER_EPOCH_CHECKPOINT_FILE};
use kafkalog::log::leader_epoch_cache::{EpochEntry, LeaderEpochFileCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use kafkalog::log::unified_log::{LogOpenOptions, OffsetAndEpoch};
use kafkalog::record::legacy::write_legacy_entry;
use kafkalog::record::{BatchBuilder, BatchHeader, TimestampType};
use kafkalog::{Error, UnifiedLog};

use crate::common::{config, segment_file_name, Fixture, T0};

fn e(epoch: i32, start_offset: i64) -> EpochEntry {
    EpochEntry { epoch, start_offset }
}

/// A cache writing `leader-epoch-checkpoint` in a temporary directory (Kafka's test fixture).
struct CacheFixture {
    _tmp: tempfile::TempDir,
    path: PathBuf,
    cache: LeaderEpochFileCache,
}

fn cache() -> CacheFixture {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
    let cache = LeaderEpochFileCache::new(TopicPartition::new("TestTopic", 5), Some(path.clone()));
    CacheFixture { _tmp: tmp, path, cache }
}

fn read_checkpoint(path: &Path) -> Vec<EpochEntry> {
    kafkalog::checkpoint::checkpoint_file::read_leader_epoch_checkpoint(path).unwrap()
}

/// LeaderEpochFileCacheTest.testPreviousEpoch
#[test]
fn previous_epoch() {
    let f = cache();
    let c = &f.cache;
    assert_eq!(c.previous_epoch(), None);
    c.assign(2, 10).unwrap();
    assert_eq!(c.previous_epoch(), None);
    c.assign(4, 15).unwrap();
    assert_eq!(c.previous_epoch(), Some(2));
    c.assign(10, 20).unwrap();
    assert_eq!(c.previous_epoch(), Some(4));
    c.truncate_from_end(18).unwrap();
    assert_eq!(c.previous_epoch(), Some(2));
}

/// LeaderEpochFileCacheTest.shouldAddEpochAndMessageOffsetToCache
#[test]
fn add_epoch_and_offset() {
    let f = cache();
    let c = &f.cache;
    c.assign(2, 10).unwrap();
    assert_eq!(c.latest_epoch(), Some(2));
    assert_eq!(c.epoch_entries(), vec![e(2, 10)]);
    assert_eq!(c.end_offset_for(2, 11), (2, 11));
}

/// LeaderEpochFileCacheTest.shouldReturnLogEndOffsetIfLatestEpochRequested
#[test]
fn log_end_offset_for_latest_epoch() {
    let f = cache();
    let c = &f.cache;
    c.assign(2, 11).unwrap();
    c.assign(2, 12).unwrap();
    assert_eq!(c.end_offset_for(2, 14), (2, 14));
}

/// LeaderEpochFileCacheTest.shouldReturnUndefinedOffsetIfUndefinedEpochRequested and
/// shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested
#[test]
fn undefined_epoch_requested() {
    let f = cache();
    let c = &f.cache;
    assert_eq!(c.end_offset_for(UNDEFINED_EPOCH, 73), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
    c.assign(2, 11).unwrap();
    c.assign(3, 12).unwrap();
    assert_eq!(c.end_offset_for(UNDEFINED_EPOCH, 0), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
}

/// LeaderEpochFileCacheTest.shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned,
/// shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned and
/// shouldNotUpdateEpochAndStartOffsetIfItDidNotChange
#[test]
fn assigned_epoch_keeps_its_start_offset() {
    let f = cache();
    let c = &f.cache;
    assert!(c.assign(2, 9).unwrap());
    assert!(!c.assign(2, 10).unwrap());
    assert_eq!(c.epoch_entries(), vec![e(2, 9)]);
}

/// LeaderEpochFileCacheTest.shouldEnforceMonotonicallyIncreasingStartOffsets
#[test]
fn new_epoch_at_same_offset_replaces_it() {
    let f = cache();
    let c = &f.cache;
    c.assign(2, 9).unwrap();
    c.assign(3, 9).unwrap();
    assert_eq!(c.epoch_entries(), vec![e(3, 9)]);
}

/// LeaderEpochFileCacheTest.shouldReturnUnsupportedIfNoEpochRecorded and
/// shouldFetchEndOffsetOfEmptyCache, shouldFetchLatestEpochOfEmptyCache
#[test]
fn empty_cache() {
    let f = cache();
    let c = &f.cache;
    assert_eq!(c.end_offset_for(0, 0), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
    assert_eq!(c.end_offset_for(7, 0), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
    assert_eq!(c.latest_epoch(), None);
    assert_eq!(c.latest_entry(), None);
    assert_eq!(c.earliest_entry(), None);
}

/// LeaderEpochFileCacheTest.shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch
#[test]
fn requested_epoch_below_first() {
    let f = cache();
    let c = &f.cache;
    c.assign(5, 11).unwrap();
    c.assign(6, 12).unwrap();
    c.assign(7, 13).unwrap();
    assert_eq!(c.end_offset_for(4, 0), (4, 11));
}

/// LeaderEpochFileCacheTest.shouldTruncateIfMatchingEpochButEarlierStartingOffset
#[test]
fn latest_epoch_at_earlier_offset_truncates() {
    let f = cache();
    let c = &f.cache;
    c.assign(5, 11).unwrap();
    c.assign(6, 12).unwrap();
    c.assign(7, 13).unwrap();
    c.assign(7, 12).unwrap();
    assert_eq!(c.end_offset_for(5, 0), (5, 12));
    assert_eq!(c.end_offset_for(6, 0), (5, 12));
}

/// LeaderEpochFileCacheTest.shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch
#[test]
fn end_of_previous_epoch_is_start_of_next() {
    let f = cache();
    let c = &f.cache;
    for (epoch, offset) in [(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)] {
        c.assign(epoch, offset).unwrap();
    }
    assert_eq!(c.end_offset_for(2, 17), (2, 15));
}

/// LeaderEpochFileCacheTest.shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
#[test]
fn gap_in_epochs() {
    let f = cache();
    let c = &f.cache;
    c.assign(0, 10).unwrap();
    c.assign(2, 13).unwrap();
    c.assign(4, 17).unwrap();
    assert_eq!(c.end_offset_for(1, 0), (0, 13));
    assert_eq!(c.end_offset_for(2, 0), (2, 17));
    assert_eq!(c.end_offset_for(3, 0), (2, 17));
}

/// LeaderEpochFileCacheTest.shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked
/// and shouldSupportEpochsThatDoNotStartFromZero
#[test]
fn epoch_above_latest_is_undefined() {
    let f = cache();
    let c = &f.cache;
    c.assign(2, 100).unwrap();
    assert_eq!(c.end_offset_for(3, 100), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
    assert_eq!(c.end_offset_for(2, 107), (2, 107));
}

/// LeaderEpochFileCacheTest.shouldPersistEpochsBetweenInstances
#[test]
fn persists_between_instances() {
    let f = cache();
    f.cache.assign(2, 6).unwrap();
    assert_eq!(std::fs::read_to_string(&f.path).unwrap(), "0\n1\n2 6\n");
    let (again, stored) =
        LeaderEpochFileCache::load(f.path.parent().unwrap(), TopicPartition::new("TestTopic", 5)).unwrap();
    assert_eq!(again.epoch_entries(), vec![e(2, 6)]);
    assert_eq!(stored, vec![e(2, 6)]);
}

/// LeaderEpochFileCacheTest.shouldEnforceMonotonicallyIncreasingEpochs: an older epoch at a later
/// offset removes the later epochs (Kafka's choice over refusing or ignoring it).
#[test]
fn older_epoch_truncates_later_ones() {
    let f = cache();
    let c = &f.cache;
    c.assign(1, 5).unwrap();
    c.assign(2, 6).unwrap();
    c.assign(1, 7).unwrap();
    assert_eq!(c.latest_epoch(), Some(1));
    assert_eq!(c.end_offset_for(1, 8), (1, 8));
    assert_eq!(c.end_offset_for(2, 8), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET));
    assert_eq!(c.epoch_entries(), vec![e(1, 7)]);
}

/// LeaderEpochFileCacheTest.shouldEnforceOffsetsIncreaseMonotonically
#[test]
fn later_epoch_at_lower_offset_wins() {
    let f = cache();
    let c = &f.cache;
    c.assign(2, 6).unwrap();
    c.assign(3, 5).unwrap();
    assert_eq!(c.epoch_entries(), vec![e(3, 5)]);
}

/// LeaderEpochFileCacheTest.shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes
#[test]
fn leaders_change_many_times() {
    let f = cache();
    let c = &f.cache;
    c.assign(0, 0).unwrap();
    c.assign(1, 0).unwrap();
    assert_eq!(c.latest_epoch(), Some(1));
    assert_eq!(c.end_offset_for(1, 0), (1, 0));
    assert_eq!(c.end_offset_for(0, 0), (0, 0));
    assert_eq!(c.end_offset_for(1, 5), (1, 5));
    assert_eq!(c.end_offset_for(0, 5), (0, 0));
    c.assign(2, 5).unwrap();
    assert_eq!(c.end_offset_for(2, 10), (2, 10));
    assert_eq!(c.end_offset_for(1, 10), (1, 5));
    assert_eq!(c.end_offset_for(0, 10), (0, 0));
}

/// LeaderEpochFileCacheTest.shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages
#[test]
fn follower_receives_many_messages() {
    let f = cache();
    let c = &f.cache;
    for epoch in 0..3 {
        for i in 0..3 {
            c.assign(epoch, i64::from(epoch) * 3 + i).unwrap();
        }
        let leo = i64::from(epoch) * 3 + 3;
        assert_eq!(c.latest_epoch(), Some(epoch));
        assert_eq!(c.end_offset_for(epoch, leo), (epoch, leo));
    }
    assert_eq!(c.end_offset_for(0, 9), (0, 3));
    assert_eq!(c.end_offset_for(1, 9), (1, 6));
}

fn three_epochs() -> CacheFixture {
    let f = cache();
    f.cache.assign(2, 6).unwrap();
    f.cache.assign(3, 8).unwrap();
    f.cache.assign(4, 11).unwrap();
    f
}

/// LeaderEpochFileCacheTest.shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries and
/// shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest
#[test]
fn truncate_from_end() {
    let f = three_epochs();
    f.cache.truncate_from_end(9).unwrap();
    assert_eq!(f.cache.latest_epoch(), Some(3));
    assert_eq!(f.cache.epoch_entries(), vec![e(2, 6), e(3, 8)]);
    f.cache.truncate_from_end(8).unwrap();
    assert_eq!(f.cache.epoch_entries(), vec![e(2, 6)]);
    assert_eq!(read_checkpoint(&f.path), vec![e(2, 6)]);
}

/// LeaderEpochFileCacheTest.shouldPreserveResetOffsetOnClearEarliestIfOneExists,
/// shouldUpdateSavedOffsetWhenOffsetToClearToIsBetweenEpochs, shouldNotClearAnythingIfOffsetToEarly,
/// shouldNotClearAnythingIfOffsetToFirstOffset, shouldRetainLatestEpochOnClearAllEarliest,
/// shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest and
/// shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset
#[test]
fn truncate_from_start() {
    for (start, expected) in [
        (8, vec![e(3, 8), e(4, 11)]),
        (9, vec![e(3, 9), e(4, 11)]),
        (1, vec![e(2, 6), e(3, 8), e(4, 11)]),
        (6, vec![e(2, 6), e(3, 8), e(4, 11)]),
        (11, vec![e(4, 11)]),
        (15, vec![e(4, 15)]),
    ] {
        let f = three_epochs();
        f.cache.truncate_from_start(start).unwrap();
        assert_eq!(f.cache.epoch_entries(), expected, "truncate_from_start({start})");
        assert_eq!(read_checkpoint(&f.path), expected, "the checkpoint after truncate_from_start({start})");
    }
}

/// LeaderEpochFileCacheTest.shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest2
#[test]
fn truncate_from_start_inside_first_epoch() {
    let f = cache();
    let c = &f.cache;
    c.assign(0, 0).unwrap();
    c.assign(1, 7).unwrap();
    c.assign(2, 10).unwrap();
    c.truncate_from_start(5).unwrap();
    assert_eq!(c.epoch_entries(), vec![e(0, 5), e(1, 7), e(2, 10)]);
}

/// LeaderEpochFileCacheTest.shouldClearAllEntries
#[test]
fn clear_and_flush() {
    let f = three_epochs();
    f.cache.clear_and_flush().unwrap();
    assert!(f.cache.epoch_entries().is_empty());
    assert_eq!(std::fs::read_to_string(&f.path).unwrap(), "0\n0\n");
}

/// LeaderEpochFileCacheTest.shouldNotResetEpochHistoryHeadIfUndefinedPassed and
/// shouldNotResetEpochHistoryTailIfUndefinedPassed
#[test]
fn undefined_offsets_truncate_nothing() {
    let f = three_epochs();
    assert!(!f.cache.truncate_from_start(UNDEFINED_EPOCH_OFFSET).unwrap());
    assert!(!f.cache.truncate_from_end(UNDEFINED_EPOCH_OFFSET).unwrap());
    assert_eq!(f.cache.epoch_entries().len(), 3);
}

/// LeaderEpochFileCacheTest.shouldClearEarliestOnEmptyCache and shouldClearLatestOnEmptyCache
#[test]
fn truncating_an_empty_cache() {
    let f = cache();
    assert!(!f.cache.truncate_from_start(7).unwrap());
    assert!(!f.cache.truncate_from_end(7).unwrap());
    assert!(!f.path.exists(), "nothing changed, nothing written");
}

/// LeaderEpochFileCacheTest.testFindPreviousEpoch and testFindPreviousEntry
#[test]
fn previous_epoch_and_entry_of() {
    let f = cache();
    let c = &f.cache;
    assert_eq!(c.previous_epoch_of(2), None);
    c.assign(2, 10).unwrap();
    assert_eq!(c.previous_entry(2), None);
    c.assign(4, 15).unwrap();
    assert_eq!(c.previous_epoch_of(4), Some(2));
    assert_eq!(c.previous_entry(4), Some(e(2, 10)));
    c.assign(10, 20).unwrap();
    assert_eq!(c.previous_entry(10), Some(e(4, 15)));
    c.truncate_from_end(18).unwrap();
    assert_eq!(c.previous_epoch_of(c.latest_epoch().unwrap()), Some(2));
}

/// LeaderEpochFileCacheTest.testFindNextEpoch and testGetEpochEntry
#[test]
fn next_epoch_and_entry() {
    let f = cache();
    let c = &f.cache;
    c.assign(0, 0).unwrap();
    c.assign(1, 100).unwrap();
    c.assign(2, 200).unwrap();
    assert_eq!(c.next_epoch(-1), Some(0));
    assert_eq!(c.next_epoch(0), Some(1));
    assert_eq!(c.next_epoch(1), Some(2));
    assert_eq!(c.next_epoch(2), None);
    assert_eq!(c.next_epoch(100), None);
    assert_eq!(c.epoch_entry(1), Some(e(1, 100)));
    assert_eq!(c.epoch_entry(3), None);
}

/// LeaderEpochFileCacheTest.shouldFetchEpochForGivenOffset
#[test]
fn epoch_for_offset() {
    let f = cache();
    let c = &f.cache;
    c.assign(0, 10).unwrap();
    c.assign(1, 20).unwrap();
    c.assign(5, 30).unwrap();
    assert_eq!(c.epoch_for_offset(25), Some(1));
    assert_eq!(c.epoch_for_offset(20), Some(1));
    assert_eq!(c.epoch_for_offset(30), Some(5));
    assert_eq!(c.epoch_for_offset(50), Some(5));
    assert_eq!(c.epoch_for_offset(5), None);
}

/// LeaderEpochFileCacheTest.shouldWriteCheckpointOnTruncation
#[test]
fn checkpoint_follows_truncations() {
    let f = three_epochs();
    f.cache.truncate_from_end(11).unwrap();
    f.cache.truncate_from_start(8).unwrap();
    assert_eq!(read_checkpoint(&f.path), vec![e(3, 8)]);
}

/// Kafka's `epochEntriesInRange` (used by tiered storage): the cache is unchanged.
#[test]
fn entries_in_range() {
    let f = three_epochs();
    assert_eq!(f.cache.epoch_entries_in_range(7, 11), vec![e(2, 7), e(3, 8)]);
    assert_eq!(f.cache.epoch_entries().len(), 3);
}

/// Kafka's `assign` refuses a negative epoch or start offset (`IllegalArgumentException`).
#[test]
fn negative_entries_are_refused() {
    let f = cache();
    for (epoch, offset) in [(-1, 0), (0, -1)] {
        let err = f.cache.assign(epoch, offset).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    }
    assert!(!f.path.exists());
}

// ---- UnifiedLog ----

/// A v2 batch at `base` with `count` records, stamped with `epoch` (as a leader would).
fn epoch_batch(base: i64, epoch: i32, count: usize) -> Vec<u8> {
    let header = BatchHeader { base_offset: base, partition_leader_epoch: epoch, ..BatchHeader::default() };
    let mut b = BatchBuilder::new(header);
    for i in 0..count {
        let value = format!("v{:06}", base + i as i64);
        b.append_next(T0, Some(b"k"), Some(value.as_bytes()), &[]).unwrap();
    }
    b.build().unwrap()
}

fn leader_append(log: &UnifiedLog, epoch: i32, count: usize) -> kafkalog::Result<i64> {
    let mut records = epoch_batch(0, -1, count);
    log.append_as_leader(&mut records, epoch).map(|i| i.first_offset)
}

fn checkpoint_of(log: &UnifiedLog) -> Vec<EpochEntry> {
    read_checkpoint(&log.dir().join(LEADER_EPOCH_CHECKPOINT_FILE))
}

/// UnifiedLogTest.testTruncateToEndOffsetClearsEpochCache: an epoch a new leader assigned at the
/// log end goes with a truncation to (or past) the log end.
#[test]
fn truncate_to_log_end_clears_trivial_epoch() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    log.truncate_fully_and_start_at(27).unwrap();
    log.append_as_follower(&epoch_batch(27, 19, 2)).unwrap();
    assert_eq!(log.leader_epoch_cache().latest_entry(), Some(e(19, 27)));
    assert_eq!(log.log_end_offset(), 29);
    for (epoch, target) in [(20, 29), (24, 30)] {
        log.maybe_assign_epoch_start_offset(epoch, log.log_end_offset()).unwrap();
        assert_eq!(log.leader_epoch_cache().latest_entry(), Some(e(epoch, 29)));
        assert!(!log.truncate_to(target).unwrap());
        assert_eq!(log.leader_epoch_cache().latest_entry(), Some(e(19, 27)));
        assert_eq!(checkpoint_of(&log), vec![e(19, 27)]);
        assert_eq!(log.log_end_offset(), 29);
    }
}

/// UnifiedLogTest.followerShouldSaveEpochInformationFromReplicatedMessagesToTheEpochCache
#[test]
fn follower_appends_assign_epochs() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    for i in 0..50 {
        log.append_as_follower(&epoch_batch(i, 42, 1)).unwrap();
    }
    assert_eq!(log.latest_epoch(), Some(42));
    assert_eq!(log.epoch_entries(), vec![e(42, 0)]);
}

/// UnifiedLogTest.testWriteLeaderEpochCheckpointAfterDirectoryRename (the part without the
/// rename): leader appends stamp and assign their epoch, written to the checkpoint.
#[test]
fn leader_appends_assign_epochs() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 5, 1).unwrap();
    assert_eq!(log.latest_epoch(), Some(5));
    leader_append(&log, 5, 2).unwrap();
    leader_append(&log, 10, 1).unwrap();
    assert_eq!(log.latest_epoch(), Some(10));
    assert_eq!(checkpoint_of(&log), vec![e(5, 0), e(10, 3)]);
    assert_eq!(log.end_offset_for_epoch(5), Some(OffsetAndEpoch { offset: 3, leader_epoch: 5 }));
    assert_eq!(log.end_offset_for_epoch(10), Some(OffsetAndEpoch { offset: 4, leader_epoch: 10 }));
    assert_eq!(log.end_offset_for_epoch(11), None);
    assert_eq!(log.end_offset_for_epoch(-1), None);
}

/// The rule: a leader append in an epoch older than the latest is refused
/// (`FencedLeaderEpoch`, Kafka's `FencedLeaderEpochException` for a stale leader) and writes
/// nothing; the latest epoch and newer ones are accepted, and -1 (no epoch) assigns nothing.
#[test]
fn leader_append_in_older_epoch_is_refused() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 3, 2).unwrap();
    let size = log.size_in_bytes();
    let err = leader_append(&log, 2, 1).unwrap_err();
    assert!(matches!(err, Error::FencedLeaderEpoch { leader_epoch: 2, latest_epoch: 3, .. }), "{err}");
    assert!(err.to_string().contains("topic-0"), "{err}");
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (2, size));
    leader_append(&log, 3, 1).unwrap();
    leader_append(&log, -1, 1).unwrap();
    leader_append(&log, 4, 1).unwrap();
    assert_eq!(log.epoch_entries(), vec![e(3, 0), e(4, 4)]);
}

/// UnifiedLogTest.shouldTruncateLeaderEpochCheckpointFileWhenTruncatingLog
#[test]
fn truncation_truncates_the_checkpoint() {
    let f = Fixture::new();
    let one = epoch_batch(0, 0, 1).len();
    let log = f.open(&config(&[("internal.segment.bytes", &(10 * one).to_string())]));
    let append = |epoch: i32, start: i64, count: i64| {
        for i in 0..count {
            log.append_as_follower(&epoch_batch(start + i, epoch, 1)).unwrap();
        }
    };
    append(0, 0, 10);
    append(1, 10, 6);
    append(2, 16, 4);
    assert_eq!((log.number_of_segments(), log.log_end_offset()), (2, 20));
    log.truncate_to(log.log_end_offset()).unwrap();
    assert_eq!(log.epoch_entries().len(), 3);
    log.truncate_to(11).unwrap();
    assert_eq!(checkpoint_of(&log), vec![e(0, 0), e(1, 10)]);
    log.truncate_to(10).unwrap();
    assert_eq!(checkpoint_of(&log), vec![e(0, 0)]);
    log.truncate_to(0).unwrap();
    assert!(log.epoch_entries().is_empty());
    assert!(checkpoint_of(&log).is_empty());
}

/// UnifiedLogTest.shouldTruncateLeaderEpochsWhenDeletingSegments and
/// shouldUpdateOffsetForLeaderEpochsWhenDeletingSegments: retention moves the first entry up to
/// the new log start.
#[test]
fn retention_moves_the_first_entry() {
    for (second_start, expected) in [(5, vec![e(1, 5), e(2, 10)]), (7, vec![e(0, 5), e(1, 7), e(2, 10)])] {
        let f = Fixture::new();
        let one = epoch_batch(0, 0, 1).len();
        let cfg =
            config(&[("internal.segment.bytes", &(5 * one).to_string()), ("retention.bytes", &(10 * one).to_string())]);
        let log = f.open(&cfg);
        for i in 0..15 {
            let epoch = if i >= 10 {
                2
            } else if i >= second_start {
                1
            } else {
                0
            };
            log.append_as_follower(&epoch_batch(i, epoch, 1)).unwrap();
        }
        assert_eq!(log.number_of_segments(), 3);
        log.delete_old_segments().unwrap();
        assert_eq!(log.log_start_offset(), 5);
        assert_eq!(log.epoch_entries(), expected);
        assert_eq!(checkpoint_of(&log), expected);
    }
}

/// UnifiedLogTest.testLogDeletionAfterDeleteRecords, for the cache: `delete_records` (Kafka's
/// `maybeIncrementLogStartOffset`) moves the first entry to the new log start.
#[test]
fn delete_records_moves_the_first_entry() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 0, 5).unwrap();
    leader_append(&log, 1, 5).unwrap();
    log.delete_records(3).unwrap();
    assert_eq!(checkpoint_of(&log), vec![e(0, 3), e(1, 5)]);
    log.delete_records(7).unwrap();
    assert_eq!(checkpoint_of(&log), vec![e(1, 7)]);
    assert_eq!(log.end_offset_for_epoch(0), Some(OffsetAndEpoch { offset: 7, leader_epoch: 0 }));
}

/// UnifiedLogTest.testLogDeletionAfterClose / `truncateFullyAndStartAt`: the cache is cleared
/// and the empty checkpoint written.
#[test]
fn truncate_fully_clears_the_cache() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 4, 3).unwrap();
    log.truncate_fully_and_start_at(100).unwrap();
    assert!(log.epoch_entries().is_empty());
    assert_eq!(std::fs::read_to_string(log.dir().join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap(), "0\n0\n");
}

/// UnifiedLogTest.testLeaderEpochCacheClearedAfterDowngradeInAppendedMessages: a legacy batch
/// clears the cache.
#[test]
fn legacy_batch_clears_the_cache() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 5, 1).unwrap();
    assert_eq!(log.latest_epoch(), Some(5));
    let mut legacy = Vec::new();
    write_legacy_entry(&mut legacy, 1, 1, T0, TimestampType::CreateTime, Some(b"k"), Some(b"foo")).unwrap();
    log.append_as_follower(&legacy).unwrap();
    assert_eq!(log.latest_epoch(), None);
    assert!(checkpoint_of(&log).is_empty());
}

fn reopen_unclean(f: &Fixture, recovery_point: i64) -> UnifiedLog {
    let options = LogOpenOptions { recovery_point: Some(recovery_point), ..f.options() };
    UnifiedLog::open(&f.dir, config(&[]), options).unwrap()
}

/// LogLoaderTest.testLogRecoversForLeaderEpoch: entries lost from the checkpoint come back from
/// the batches when the log is recovered from the start.
#[test]
fn recovery_restores_lost_entries() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    for (offset, epoch) in [(0, 1), (1, 2), (2, 2), (3, 3)] {
        log.append_as_follower(&epoch_batch(offset, epoch, 1)).unwrap();
    }
    assert_eq!(log.epoch_entries(), vec![e(1, 0), e(2, 1), e(3, 3)]);
    log.leader_epoch_cache().truncate_from_end(2).unwrap();
    assert_eq!(checkpoint_of(&log), vec![e(1, 0), e(2, 1)]);
    log.close().unwrap();
    let log = reopen_unclean(&f, 0);
    assert_eq!(log.epoch_entries(), vec![e(1, 0), e(2, 1), e(3, 3)]);
    assert_eq!(checkpoint_of(&log), vec![e(1, 0), e(2, 1), e(3, 3)]);
}

/// LogSegmentTest.testRecoveryRebuildsEpochCache, through the loader: a deleted checkpoint and
/// a segment recovered for its missing index rebuild the cache from the batch headers.
#[test]
fn deleted_checkpoint_is_rebuilt_by_recovery() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    log.truncate_fully_and_start_at(104).unwrap();
    for (offset, epoch) in [(104, 0), (106, 1), (108, 1), (110, 2)] {
        log.append_as_follower(&epoch_batch(offset, epoch, 2)).unwrap();
    }
    log.close().unwrap();
    std::fs::remove_file(f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
    std::fs::remove_file(f.dir.join(segment_file_name(104, ".index"))).unwrap();
    let options = LogOpenOptions { had_clean_shutdown: true, ..f.options() };
    let log = UnifiedLog::open(&f.dir, config(&[]), options).unwrap();
    let expected = vec![e(0, 104), e(1, 106), e(2, 110)];
    assert_eq!(log.epoch_entries(), expected);
    assert_eq!(checkpoint_of(&log), expected);
}

/// After an unclean shutdown whose recovery cuts a torn tail, the cache equals a rebuild from
/// scratch of the same bytes: the entry of the lost batch's epoch goes.
#[test]
fn recovery_after_torn_tail_equals_a_rebuild() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 1, 3).unwrap();
    leader_append(&log, 2, 3).unwrap();
    leader_append(&log, 3, 3).unwrap();
    log.close().unwrap();
    let seg = f.dir.join(segment_file_name(0, ".log"));
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&seg).unwrap().set_len(len - 10).unwrap();
    let log = reopen_unclean(&f, 0);
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.epoch_entries(), vec![e(1, 0), e(2, 3)]);
    assert_eq!(checkpoint_of(&log), vec![e(1, 0), e(2, 3)]);
    log.close().unwrap();
    std::fs::remove_file(f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
    let rebuilt = reopen_unclean(&f, 0);
    assert_eq!(rebuilt.epoch_entries(), vec![e(1, 0), e(2, 3)]);
}

/// Kafka's `LogLoader.load` truncations: a stale checkpoint (entries past the log end, a first
/// entry below the checkpointed log start) is brought in line at open and rewritten.
#[test]
fn stale_checkpoint_is_repaired_at_open() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 1, 10).unwrap();
    log.close().unwrap();
    let path = f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    std::fs::write(&path, "0\n3\n1 0\n2 10\n3 12\n").unwrap();
    let options = LogOpenOptions { had_clean_shutdown: true, log_start_offset: Some(4), ..f.options() };
    let log = UnifiedLog::open(&f.dir, config(&[]), options).unwrap();
    assert_eq!(log.epoch_entries(), vec![e(1, 4)]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n1\n1 4\n");
}

/// A read-only open shows the cache brought in line with what it loaded, and writes nothing.
#[test]
fn read_only_open_writes_no_checkpoint() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 1, 10).unwrap();
    log.close().unwrap();
    let path = f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    let stale = "0\n2\n1 0\n2 10\n";
    std::fs::write(&path, stale).unwrap();
    let reader = f.open_read_only(&config(&[]));
    assert_eq!(reader.epoch_entries(), vec![e(1, 0)]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), stale);
    std::fs::remove_file(&path).unwrap();
    let reader = f.open_read_only(&config(&[]));
    assert!(reader.epoch_entries().is_empty());
    assert!(!path.exists());
}

/// A malformed checkpoint is an error naming the file and the line, and the log is not opened.
#[test]
fn malformed_checkpoint_names_file_and_line() {
    let f = Fixture::new();
    f.open(&config(&[])).close().unwrap();
    let path = f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    for (text, line) in [("0\n2\n1 0\nx 5\n", "line 4"), ("0\n1\n-1 0\n", "line 3"), ("7\n0\n", "line 1")] {
        std::fs::write(&path, text).unwrap();
        let err = UnifiedLog::open(&f.dir, config(&[]), f.options()).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains(line), "{text:?}: {err}");
    }
}

/// A log start checkpoint past the log end wipes the log (Kafka's rule) and clears the cache.
#[test]
fn wiped_log_clears_the_cache() {
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 1, 5).unwrap();
    log.close().unwrap();
    let options = LogOpenOptions { log_start_offset: Some(50), ..f.options() };
    let log = UnifiedLog::open(&f.dir, config(&[]), options).unwrap();
    assert!(log.load_result().log_start_wiped);
    assert!(log.epoch_entries().is_empty());
    assert!(checkpoint_of(&log).is_empty());
}

/// A write of the checkpoint that fails (a full disk) fails the append before any record is
/// written, and leaves the cache as it was.
#[test]
fn failed_checkpoint_write_fails_the_append() {
    use kafkalog::util::fault::{self, FaultOp};
    let f = Fixture::new();
    let log = f.open(&config(&[]));
    leader_append(&log, 1, 2).unwrap();
    let prefix = f.dir.join(format!("{LEADER_EPOCH_CHECKPOINT_FILE}.tmp"));
    let _rule = fault::inject(&prefix, FaultOp::Open, libc::ENOSPC, None);
    assert!(leader_append(&log, 2, 2).is_err());
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.epoch_entries(), vec![e(1, 0)]);
}
