//! `ProducerStateManagerTest`'s snapshot cases (taken, loaded, recovered from corruption,
//! deleted, truncated, stray) and the byte format, checked against bytes Kafka 4.3.1 wrote.

use std::collections::BTreeSet;
use std::path::Path;

use super::append_info::{TV_0, TV_2};
use super::entry::ProducerStateEntry;
use super::manager::ProducerStateManager;
use super::manager_tests::{client, fixture, manager, marker, replication, Fixture, EPOCH, PID};
use super::snapshot::{decode_snapshot, encode_snapshot, list_snapshot_files, read_snapshot, write_snapshot};
use crate::error::Error;
use crate::file_names::{producer_snapshot_file, DELETED_FILE_SUFFIX};
use crate::record::control::ControlRecordType;
use crate::util::clock::Clock;

const COMMIT: ControlRecordType = ControlRecordType::Commit;
const ABORT: ControlRecordType = ControlRecordType::Abort;

/// The offsets of the files in `dir` (every file there is a snapshot in these tests).
fn files(dir: &Path) -> BTreeSet<i64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| crate::file_names::offset_from_file_name(&e.unwrap().file_name().to_string_lossy()).unwrap())
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The snapshot Kafka 4.3.1's own `ProducerStateManager.takeSnapshot` wrote (a throwaway Java
/// program against the jars in `tests/kit/jvm/.cache`, the same appends as
/// `snapshot_bytes_equal_kafkas` below): `00000000000000000009.snapshot`.
const KAFKA_4_3_1_SNAPSHOT: &str = "00019d8f80f6000000040000000000000001000000000003000000000000000300000000000000000000\
03e9ffffffffffffffffffffffff000000000000000200050000000100000000000000050000000100000000000003eaffffffff0000000000000004\
000000000000000300010000000000000000000000060000000000000000000003ec00000007ffffffffffffffff00000000000000040009ffffffff\
ffffffffffffffff0000000000000000000003ed00000002ffffffffffffffff";

/// Golden bytes: the same appends as the Java program (an idempotent producer, an open
/// transaction, a committed one, a TV2 marker alone) give Kafka's snapshot byte for byte.
#[test]
fn snapshot_bytes_equal_kafkas() {
    let Fixture { mut psm, dir, .. } = fixture();
    let data = |psm: &mut ProducerStateManager, pid, epoch, seqs: (i32, i32), ts, offs: (i64, i64), txn| {
        let mut info = psm.prepare_update(pid, crate::log::log_validator::AppendOrigin::Client);
        let first = super::txn_metadata::LogOffsetMetadata::offset_only(offs.0);
        info.append_data_batch(epoch, seqs.0, seqs.1, ts, first, offs.1, txn).unwrap();
        psm.update(info).unwrap();
        psm.update_map_end_offset(offs.1 + 1);
    };
    data(&mut psm, 1, 0, (0, 2), 1000, (0, 2), false);
    data(&mut psm, 1, 0, (3, 3), 1001, (3, 3), false);
    data(&mut psm, 2, 5, (0, 1), 1002, (4, 5), true);
    data(&mut psm, 3, 1, (0, 0), 1003, (6, 6), true);
    marker(&mut psm, 3, 1, COMMIT, 7, 7, 1004, TV_0).unwrap();
    marker(&mut psm, 4, 9, ABORT, 8, 2, 1005, TV_2).unwrap();
    let path = psm.take_snapshot(true).unwrap().unwrap();
    assert_eq!(path, producer_snapshot_file(dir.path(), 9));
    assert_eq!(std::fs::read(&path).unwrap(), hex(KAFKA_4_3_1_SNAPSHOT));
    // And Kafka's bytes read back as the same table.
    let mut read = decode_snapshot(&hex(KAFKA_4_3_1_SNAPSHOT), &path).unwrap();
    read.sort_by_key(ProducerStateEntry::producer_id);
    let e = |pid| *psm.last_entry(pid).unwrap();
    assert_eq!(read[0].last_seq(), e(1).last_seq());
    assert_eq!((read[1].current_txn_first_offset(), read[1].last_offset_delta()), (Some(4), 1));
    assert_eq!((read[2].coordinator_epoch(), read[2].last_timestamp(), read[2].last_data_offset()), (7, 1004, 6));
    assert_eq!((read[3].producer_epoch(), read[3].is_empty()), (9, true));
}

/// The format from the schema (`ProducerSnapshot.json`), by hand: version, CRC-32C of the rest,
/// count, then the 46-byte entry in field order.
#[test]
fn snapshot_layout_by_hand() {
    let mut e = ProducerStateEntry::new(0x0102_0304_0506_0708, 0x0a0b, 0x1112_1314, 0, Some(0x21));
    e.add_batch(0x0a0b, 0x3132_3334, 0x4142_4344_4546_4748, 0x5152_5354, 0x6162_6364_6566_6768);
    let bytes = encode_snapshot([e].iter());
    let mut body = vec![0, 0, 0, 1];
    body.extend([1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x31, 0x32, 0x33, 0x34]);
    body.extend([0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x51, 0x52, 0x53, 0x54]);
    body.extend([0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x11, 0x12, 0x13, 0x14]);
    body.extend([0, 0, 0, 0, 0, 0, 0, 0x21]);
    let mut expected = vec![0, 1];
    expected.extend(crate::record::batch::crc32c(&body).to_be_bytes());
    expected.extend(body);
    assert_eq!(bytes, expected);
    assert_eq!(bytes.len(), 10 + 46);
    assert_eq!(encode_snapshot(std::iter::empty()).len(), 10);
}

/// ProducerStateManagerTest.testReadWriteSnapshot.
#[test]
fn read_write_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = ProducerStateEntry::new(1, 2, 3, -1, Some(100));
    a.add_batch(2, 1, 2, 3, -1);
    let b = ProducerStateEntry::new(11, 12, 13, 123_456, None);
    let file = dir.path().join("testReadWriteSnapshot");
    write_snapshot(&file, [a, b].iter(), true).unwrap();
    assert_eq!(read_snapshot(&file).unwrap(), [a, b]);
}

/// Bad snapshot bytes are `CorruptSnapshot` naming the file and what is wrong, never a panic.
#[test]
fn corrupt_snapshot_bytes_are_named() {
    let good = encode_snapshot([ProducerStateEntry::new(1, 0, 0, 0, None)].iter());
    let path = Path::new("/data/t-0/00000000000000000001.snapshot");
    let reason = |bytes: &[u8]| match decode_snapshot(bytes, path) {
        Err(e @ Error::CorruptSnapshot { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(reason(&[]).contains("no version"));
    assert!(reason(&[0, 2]).contains("unknown file version 2"));
    assert!(reason(&good[..8]).contains("cut off"));
    assert!(reason(&good[..30]).contains("do not fit"));
    let mut negative = good.clone();
    negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(reason(&negative).contains("negative"));
    let mut flipped = good.clone();
    flipped[20] ^= 1;
    assert!(reason(&flipped).contains("CRC"));
    let mut trailing = good;
    trailing.push(0);
    assert!(reason(&trailing).contains("CRC"), "trailing bytes break the CRC, as in Kafka");
    assert!(reason(&[]).contains("00000000000000000001.snapshot"));
}

/// ProducerStateManagerTest.testTakeSnapshot and testSkipSnapshotIfOffsetUnchanged.
#[test]
fn take_snapshot_and_skip_if_offset_unchanged() {
    let Fixture { mut psm, dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
    client(&mut psm, PID, EPOCH, 1, 1, 1, false).unwrap();
    assert!(psm.take_snapshot(true).unwrap().is_some());
    assert_eq!(files(dir.path()), BTreeSet::from([2]));
    assert!(std::fs::metadata(producer_snapshot_file(dir.path(), 2)).unwrap().len() > 0);
    assert_eq!(psm.take_snapshot(true).unwrap(), None, "nothing changed");
    assert_eq!(files(dir.path()), BTreeSet::from([2]));
}

/// ProducerStateManagerTest.testDeleteSnapshotsBefore.
#[test]
fn delete_snapshots_before() {
    let Fixture { mut psm, dir, .. } = fixture();
    for seq in 0..2 {
        client(&mut psm, PID, EPOCH, seq, i64::from(seq), 0, false).unwrap();
    }
    psm.take_snapshot(true).unwrap();
    client(&mut psm, PID, EPOCH, 2, 2, 0, false).unwrap();
    psm.take_snapshot(false).unwrap();
    assert_eq!(files(dir.path()), BTreeSet::from([2, 3]));
    psm.delete_snapshots_before(3).unwrap();
    assert_eq!(files(dir.path()), BTreeSet::from([3]));
    psm.delete_snapshots_before(4).unwrap();
    assert!(files(dir.path()).is_empty());
    assert_eq!(psm.latest_snapshot_offset(), None);
}

/// ProducerStateManagerTest.testTruncateFullyAndStartAt.
#[test]
fn truncate_fully_and_start_at() {
    let Fixture { mut psm, dir, .. } = fixture();
    for seq in 0..3 {
        client(&mut psm, PID, EPOCH, seq, i64::from(seq), 0, false).unwrap();
        psm.take_snapshot(true).unwrap();
    }
    assert_eq!(files(dir.path()), BTreeSet::from([1, 2, 3]));
    psm.truncate_fully_and_start_at(0).unwrap();
    assert!(files(dir.path()).is_empty());
    assert!(psm.is_empty());
    client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
    psm.take_snapshot(true).unwrap();
    assert_eq!(files(dir.path()), BTreeSet::from([1]));
}

/// ProducerStateManagerTest.testReloadSnapshots.
#[test]
fn reload_snapshots() {
    let Fixture { mut psm, dir, clock } = fixture();
    client(&mut psm, PID, EPOCH, 1, 1, 0, false).unwrap();
    client(&mut psm, PID, EPOCH, 2, 2, 0, false).unwrap();
    psm.take_snapshot(true).unwrap();
    let saved = std::fs::read(producer_snapshot_file(dir.path(), 3)).unwrap();
    client(&mut psm, PID, EPOCH, 3, 3, 0, false).unwrap();
    client(&mut psm, PID, EPOCH, 4, 4, 0, false).unwrap();
    psm.take_snapshot(true).unwrap();
    assert_eq!(files(dir.path()), BTreeSet::from([3, 5]));
    psm.truncate_and_reload(3, 5, clock.milliseconds()).unwrap();
    assert_eq!(files(dir.path()), BTreeSet::from([5]));
    std::fs::write(producer_snapshot_file(dir.path(), 3), saved).unwrap();
    psm.truncate_fully_and_reload_snapshots().unwrap();
    assert_eq!(psm.latest_snapshot_offset(), Some(3));
    assert_eq!(files(dir.path()), BTreeSet::from([3]));
}

/// ProducerStateManagerTest.testTruncateAndReloadRemovesOutOfRangeSnapshots.
#[test]
fn truncate_and_reload_removes_out_of_range_snapshots() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    for seq in 0..5 {
        client(&mut psm, PID, EPOCH, seq, i64::from(seq), 0, false).unwrap();
        psm.take_snapshot(true).unwrap();
    }
    psm.truncate_and_reload(1, 3, clock.milliseconds()).unwrap();
    assert_eq!((psm.oldest_snapshot_offset(), psm.latest_snapshot_offset()), (Some(2), Some(3)));
    assert_eq!(psm.map_end_offset(), 3);
}

/// ProducerStateManagerTest.testRecoverFromSnapshotUnfinishedTransaction, …FinishedTransaction
/// and …EmptyTransaction.
#[test]
fn recover_from_snapshot_transactions() {
    for (finish, empty) in [(false, false), (true, false), (true, true)] {
        let Fixture { mut psm, dir, clock } = fixture();
        let end = if empty {
            marker(&mut psm, PID, EPOCH, ABORT, 0, 0, clock.milliseconds() - 1, TV_0).unwrap();
            1
        } else {
            let now = clock.milliseconds();
            client(&mut psm, PID, EPOCH, 0, 0, now, true).unwrap();
            client(&mut psm, PID, EPOCH, 1, 1, now, true).unwrap();
            if finish {
                marker(&mut psm, PID, EPOCH, ABORT, 2, 0, now, TV_0).unwrap();
            }
            if finish {
                3
            } else {
                2
            }
        };
        psm.take_snapshot(true).unwrap();
        let mut recovered = manager(dir.path(), &clock);
        recovered.truncate_and_reload(0, end, clock.milliseconds()).unwrap();
        let e = *recovered.last_entry(PID).unwrap();
        if empty {
            assert_eq!((e.last_timestamp(), e.current_txn_first_offset()), (clock.milliseconds() - 1, None));
            continue;
        }
        // Only the last batch's metadata is persisted.
        assert_eq!((e.first_data_offset(), e.first_seq(), e.last_data_offset(), e.last_seq()), (1, 1, 1, 1));
        assert_eq!(e.current_txn_first_offset(), (!finish).then_some(0));
        if !finish {
            assert_eq!(recovered.first_undecided_offset(), Some(0));
            client(&mut recovered, PID, EPOCH, 2, 2, 0, true).unwrap();
        }
    }
}

/// ProducerStateManagerTest.testRemoveExpiredPidsOnReload and
/// testAcceptAppendWithoutProducerStateOnReplica.
#[test]
fn reload_without_the_producer() {
    for on_replica in [false, true] {
        let Fixture { mut psm, dir, clock } = fixture();
        client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
        client(&mut psm, PID, EPOCH, 1, 1, 1, false).unwrap();
        psm.take_snapshot(true).unwrap();
        let mut recovered = manager(dir.path(), &clock);
        recovered.truncate_and_reload(0, 1, 70_000).unwrap();
        assert!(recovered.last_entry(PID).is_none());
        if on_replica {
            replication(&mut recovered, EPOCH, 2, 2, 70_001).unwrap();
        } else {
            client(&mut recovered, PID, EPOCH, 2, 2, 70_001, false).unwrap();
        }
        let e = *recovered.last_entry(PID).unwrap();
        assert_eq!((recovered.active_producers().len(), e.first_seq(), e.last_seq()), (1, 2, 2));
        assert_eq!(recovered.map_end_offset(), 3);
    }
}

/// ProducerStateManagerTest.testFirstUnstableOffsetAfterTruncation.
#[test]
fn first_unstable_offset_after_truncation() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    let fuo = |psm: &ProducerStateManager| psm.first_unstable_offset().map(|m| m.message_offset);
    client(&mut psm, PID, EPOCH, 0, 99, 0, true).unwrap();
    assert_eq!(fuo(&psm), Some(99));
    psm.take_snapshot(true).unwrap();
    marker(&mut psm, PID, EPOCH, COMMIT, 105, 0, 0, TV_0).unwrap();
    psm.on_high_watermark_updated(106);
    assert_eq!(fuo(&psm), None);
    psm.take_snapshot(true).unwrap();
    client(&mut psm, PID, EPOCH, 1, 106, 0, false).unwrap();
    psm.truncate_and_reload(0, 106, clock.milliseconds()).unwrap();
    assert_eq!(fuo(&psm), None);
    psm.truncate_and_reload(0, 100, clock.milliseconds()).unwrap();
    assert_eq!(fuo(&psm), Some(99));
}

/// ProducerStateManagerTest.testLoadFromSnapshotRetainsNonExpiredProducers.
#[test]
fn load_from_snapshot_retains_non_expired_producers() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    client(&mut psm, 1, EPOCH, 0, 0, clock.milliseconds(), false).unwrap();
    client(&mut psm, 2, EPOCH, 0, 1, clock.milliseconds(), false).unwrap();
    psm.take_snapshot(true).unwrap();
    psm.truncate_and_reload(1, 2, clock.milliseconds()).unwrap();
    assert_eq!(psm.active_producers().len(), 2);
    assert_eq!(psm.last_entry(1).map(|e| (e.last_seq(), e.last_data_offset())), Some((0, 0)));
    assert_eq!(psm.last_entry(2).map(|e| (e.last_seq(), e.last_data_offset())), Some((0, 1)));
    // A producer idle for producer.id.expiration.ms is dropped at load.
    let mut later = manager(psm_dir(&psm), &clock);
    let expiry = i64::from(psm.config().producer_id_expiration_ms);
    later.truncate_and_reload(0, 2, clock.milliseconds() + expiry).unwrap();
    assert!(later.active_producers().is_empty());
}

fn psm_dir(psm: &ProducerStateManager) -> &Path {
    psm.fetch_snapshot(psm.latest_snapshot_offset().unwrap()).unwrap().parent().unwrap()
}

/// ProducerStateManagerTest.testCoordinatorFencedAfterReload and
/// testHasLateTransactionInitializedAfterReload.
#[test]
fn fencing_and_late_transactions_survive_a_reload() {
    let Fixture { mut psm, dir, clock } = fixture();
    client(&mut psm, PID, EPOCH, 0, 99, clock.milliseconds(), true).unwrap();
    marker(&mut psm, PID, EPOCH, COMMIT, 100, 1, clock.milliseconds(), TV_0).unwrap();
    client(&mut psm, 39, 2, 0, 101, clock.milliseconds(), true).unwrap();
    psm.take_snapshot(true).unwrap();
    clock.advance(i64::from(super::manager_tests::MAX_TXN_TIMEOUT_MS) + super::manager::LATE_TRANSACTION_BUFFER_MS + 1);
    let mut recovered = manager(dir.path(), &clock);
    recovered.truncate_and_reload(0, psm.map_end_offset(), clock.milliseconds()).unwrap();
    assert!(recovered.has_late_transaction(clock.milliseconds()));
    let err = marker(&mut recovered, PID, EPOCH, COMMIT, 102, 0, 0, TV_0).unwrap_err();
    assert!(matches!(err, Error::TransactionCoordinatorFenced { current_coordinator_epoch: 1, .. }), "{err}");
}

/// ProducerStateManagerTest.testLoadFromEmptySnapshotFile, testLoadFromTruncatedSnapshotFile
/// and testLoadFromCorruptSnapshotFile: the damaged latest snapshot is deleted and the older
/// one loaded.
#[test]
fn load_from_corrupt_snapshot_falls_back() {
    type Damage = fn(&Path);
    let damages: [Damage; 3] = [
        |p| std::fs::write(p, b"").unwrap(),
        |p| {
            let bytes = std::fs::read(p).unwrap();
            std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
        },
        |p| {
            let mut bytes = std::fs::read(p).unwrap();
            let n = bytes.len().min(37);
            bytes[..n].fill(0);
            std::fs::write(p, bytes).unwrap();
        },
    ];
    for damage in damages {
        let Fixture { mut psm, dir, clock } = fixture();
        client(&mut psm, PID, EPOCH, 0, 0, clock.milliseconds(), false).unwrap();
        psm.take_snapshot(true).unwrap();
        client(&mut psm, PID, EPOCH, 1, 1, clock.milliseconds(), false).unwrap();
        psm.take_snapshot(true).unwrap();
        assert_eq!(psm.latest_snapshot_offset(), Some(2));
        let latest = producer_snapshot_file(dir.path(), 2);
        damage(&latest);
        let mut reloaded = manager(dir.path(), &clock);
        reloaded.truncate_and_reload(0, 20, clock.milliseconds()).unwrap();
        assert!(!latest.exists(), "the corrupt snapshot is deleted");
        assert_eq!(reloaded.last_entry(PID).map(ProducerStateEntry::last_data_offset), Some(0));
        assert_eq!(reloaded.map_end_offset(), 1, "the log replays from the older snapshot");
    }
}

/// ProducerStateManagerTest.testRemoveStraySnapshotsKeepCleanShutdownSnapshot and
/// testRemoveAllStraySnapshots (and the `.snapshot.tmp` a crash leaves).
#[test]
fn remove_stray_snapshots() {
    for (bases, kept) in [(vec![5], vec![5, 42]), (vec![42], vec![42])] {
        let Fixture { mut psm, dir, .. } = fixture();
        for o in [5, 2, 42] {
            std::fs::write(producer_snapshot_file(dir.path(), o), b"").unwrap();
        }
        let tmp = crate::file_names::with_suffix(&producer_snapshot_file(dir.path(), 7), ".tmp");
        std::fs::write(&tmp, b"x").unwrap();
        psm.remove_stray_snapshots(&bases).unwrap();
        let mut on_disk: Vec<i64> = list_snapshot_files(dir.path()).unwrap().iter().map(|s| s.offset).collect();
        on_disk.sort_unstable();
        assert_eq!(on_disk, kept);
        assert_eq!(
            (psm.oldest_snapshot_offset(), psm.latest_snapshot_offset()),
            (kept.first().copied(), kept.last().copied())
        );
        assert!(!tmp.exists());
    }
}

/// ProducerStateManagerTest.testRemoveAndMarkSnapshotForDeletion (+ …AlreadyDeleted) and
/// testFetchSnapshotEmptySnapShot.
#[test]
fn remove_and_mark_snapshot_for_deletion() {
    let Fixture { dir, clock, .. } = fixture();
    let file = producer_snapshot_file(dir.path(), 5);
    std::fs::write(&file, b"").unwrap();
    let mut psm = manager(dir.path(), &clock);
    assert_eq!(psm.fetch_snapshot(1), None);
    assert_eq!(psm.latest_snapshot_offset(), Some(5));
    let marked = psm.remove_and_mark_snapshot_for_deletion(5).unwrap().unwrap();
    assert!(marked.file().to_string_lossy().ends_with(DELETED_FILE_SUFFIX) && marked.file().exists());
    assert_eq!(psm.latest_snapshot_offset(), None);
    std::fs::write(&file, b"").unwrap();
    let mut psm = manager(dir.path(), &clock);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(psm.remove_and_mark_snapshot_for_deletion(5).unwrap(), None);
    assert_eq!(psm.latest_snapshot_offset(), None);
}
