//! Disk failures on purpose, through the fault-injection seam (`kafkalog::util::fault`): EIO and
//! ENOSPC on write, a failed fsync, one-shot faults, faults confined to one directory, failed
//! rolls and checkpoint writes. The seam is process-global and the tests run in parallel, so
//! every rule is scoped to the test's own temporary directory and removed through its handle;
//! no test calls `clear_all`.

use std::path::Path;

use kafkalog::checkpoint::partition_metadata::TopicId;
use kafkalog::error::Error;
use kafkalog::file_names::{log_file, with_suffix, PARTITION_METADATA_FILE, TMP_FILE_SUFFIX};
use kafkalog::util::fault::{inject, FaultOp};
use kafkalog::UnifiedLog;

use crate::common::{append_values, config, scan_all, values_batch, Fixture, T0};

/// Appends one batch holding `value`, returning the error instead of panicking.
fn try_append(log: &UnifiedLog, value: &str) -> kafkalog::Result<i64> {
    let mut records = values_batch(0, T0, &[value]);
    log.append_as_leader(&mut records, 0).map(|info| info.first_offset)
}

/// Asserts `err` is an I/O error on `path` during `op` with `errno`, and that its message
/// names the file and the operation.
fn assert_io(err: &Error, path: &Path, op: &str, errno: i32) {
    match err {
        Error::Io { path: p, op: o, source } => {
            assert_eq!((p.as_path(), *o), (path, op), "{err}");
            assert_eq!(source.raw_os_error(), Some(errno), "{err}");
        }
        other => panic!("expected an I/O error on {} during {op}, got {other:?}", path.display()),
    }
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains(op), "{message}");
}

fn values(log: &UnifiedLog) -> Vec<String> {
    let recs = scan_all(log, 0).expect("scan");
    recs.into_iter().map(|r| String::from_utf8(r.value.expect("value")).expect("utf-8")).collect()
}

#[test]
fn eio_on_append_names_the_segment_and_leaves_the_log_unchanged() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a"]);
    let size = log.size_in_bytes();

    let handle = inject(&fx.dir, FaultOp::Write, libc::EIO, None);
    for _ in 0..2 {
        let err = try_append(&log, "b").expect_err("the write fails");
        assert_io(&err, &log_file(&fx.dir, 0), "append", libc::EIO);
    }
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (1, size), "nothing was appended");

    drop(handle);
    assert_eq!(try_append(&log, "c").expect("appends again once the fault is gone"), 1);
    assert_eq!(values(&log), ["a", "c"]);
}

#[test]
fn enospc_on_write_is_storage_full() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    // The segment file: the append's first write is the leader-epoch-checkpoint (epoch 0 is new).
    let handle = inject(&log_file(&fx.dir, 0), FaultOp::Write, libc::ENOSPC, None);
    let err = try_append(&log, "a").expect_err("disk full");
    assert_io(&err, &log_file(&fx.dir, 0), "append", libc::ENOSPC);
    let Error::Io { source, .. } = &err else { unreachable!() };
    assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
    handle.clear();
    assert_eq!(try_append(&log, "a").expect("space again"), 0);
}

#[test]
fn failed_fsync_does_not_advance_the_recovery_point() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a", "b"]);
    assert_eq!(log.recovery_point(), 0);

    let handle = inject(&fx.dir, FaultOp::Fsync, libc::EIO, None);
    let err = log.flush().expect_err("fsync fails");
    assert_io(&err, &log_file(&fx.dir, 0), "fsync", libc::EIO);
    assert_eq!(log.recovery_point(), 0, "nothing is known durable");

    drop(handle);
    log.flush().expect("flush once the fault is gone");
    assert_eq!(log.recovery_point(), 2);
}

#[test]
fn a_counted_fault_fires_that_many_times() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    let _handle = inject(&log_file(&fx.dir, 0), FaultOp::Write, libc::EIO, Some(1));
    assert_io(&try_append(&log, "a").expect_err("first write fails"), &log_file(&fx.dir, 0), "append", libc::EIO);
    assert_eq!(try_append(&log, "b").expect("the second write succeeds"), 0);
    assert_eq!(try_append(&log, "c").expect("and every later one"), 1);
    assert_eq!(values(&log), ["b", "c"]);
}

#[test]
fn a_fault_in_one_dir_leaves_another_alone() {
    let (a, b) = (Fixture::new(), Fixture::new());
    let (log_a, log_b) = (a.open(&config(&[])), b.open(&config(&[])));
    let _handle = inject(&a.dir, FaultOp::Write, libc::EIO, None);
    assert!(try_append(&log_a, "x").is_err());
    assert_eq!(try_append(&log_b, "y").expect("dir B is healthy"), 0);
    log_b.flush().expect("and flushes");
    assert_eq!(values(&log_b), ["y"]);
}

#[test]
fn a_failed_roll_leaves_the_log_appendable() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a"]);
    let next = log_file(&fx.dir, 1);
    let handle = inject(&next, FaultOp::Open, libc::EIO, None);
    assert_io(&log.roll().expect_err("the new segment cannot be created"), &next, "open", libc::EIO);
    assert_eq!(log.number_of_segments(), 1);

    drop(handle);
    assert_eq!(try_append(&log, "b").expect("append after the failed roll"), 1);
    assert_eq!(log.roll().expect("roll once the fault is gone"), 2);
    assert_eq!(try_append(&log, "c").expect("append to the new segment"), 2);
    assert_eq!(values(&log), ["a", "b", "c"]);
}

#[test]
fn checkpoint_writes_fail_atomically() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    let metadata = fx.dir.join(PARTITION_METADATA_FILE);
    let tmp = with_suffix(&metadata, TMP_FILE_SUFFIX);
    let id = TopicId::random();

    let handle = inject(&tmp, FaultOp::Write, libc::ENOSPC, None);
    assert_io(&log.assign_topic_id(id).expect_err("no space for the tmp file"), &tmp, "write", libc::ENOSPC);
    drop(handle);
    let handle = inject(&metadata, FaultOp::Rename, libc::EIO, None);
    assert_io(&log.assign_topic_id(id).expect_err("the rename fails"), &metadata, "rename", libc::EIO);
    assert!(!metadata.exists(), "a failed atomic write leaves no partial file");
    drop(handle);

    log.assign_topic_id(id).expect("write once the faults are gone");
    assert_eq!(log.topic_id(), Some(id));
}
