//! The checks of the offsets and timestamps a caller hands to a `UnifiedLog`, run before
//! anything changes (Kafka's `IllegalArgumentException` / `OffsetOutOfRangeException` where
//! Kafka has a check, a named `InvalidArgument` otherwise). A log's offsets lie in
//! `[0, MAX_OFFSET]`: the log end offset is one past the last record, so the largest offset a
//! record can take is `MAX_OFFSET - 1`.
//!
//! Thread-safety: pure functions over the values given.

use std::io;
use std::path::Path;

use super::{UnifiedLog, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::error::{Error, Result};
use crate::file_names::{parse_dir_name, validate_partition_dir_name, TopicPartition};

/// The largest log end offset (and the largest offset a caller may name).
pub const MAX_OFFSET: i64 = i64::MAX;

/// The topic-partition of the partition directory `dir` a caller opens: a path that exists but
/// is not a directory is an I/O error saying what it is (`ENOTDIR`), a read-only or
/// `create=false` open of a missing one `ENOENT`, a name that is not `<topic>-<partition>` an
/// `InvalidArgument` saying why. A writable open that creates a missing directory must leave
/// room for its name on the file system. Also returns whether the directory exists (so an open
/// creates only a missing one).
pub(super) fn partition_dir(dir: &Path, read_only: bool, create: bool) -> Result<(TopicPartition, bool)> {
    let not_a_dir = |kind: &str| {
        let message = format!("it is {kind}, not a partition directory (<topic>-<partition>, e.g. orders-0)");
        Err(Error::io(dir, "open log directory", io::Error::new(io::ErrorKind::NotADirectory, message)))
    };
    let exists = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => true,
        Ok(m) if m.is_file() => return not_a_dir("a regular file"),
        Ok(_) => return not_a_dir("a special file (a device, FIFO or socket)"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io(dir, "open log directory", e)),
    };
    let tp = parse_dir_name(dir).map_err(|why| {
        Error::invalid_argument(
            "path",
            format_args!("'{}'", dir.display()),
            format!(
                "a partition directory is named <topic>-<partition> (e.g. orders-0), or \
                 <topic>-<partition>.<uuid>-delete, -future or -stray: {why}"
            ),
        )
    })?;
    if !exists {
        if read_only || !create {
            let message = if read_only {
                "no such partition directory (a read-only open creates nothing)"
            } else {
                "no such partition directory (an open with create=false creates nothing)"
            };
            return Err(Error::io(dir, "open log directory", io::Error::new(io::ErrorKind::NotFound, message)));
        }
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        validate_partition_dir_name(&tp, crate::util::file::name_max(parent))?;
    }
    Ok((tp, exists))
}

/// `offset` given as `argument` must not be negative: no offset is. `what` names the offset
/// in the message ("`what` must be an offset in [0, MAX_OFFSET]").
pub fn check_offset(argument: &str, offset: i64, what: impl std::fmt::Display) -> Result<()> {
    if offset < 0 {
        return Err(Error::invalid_argument(
            argument,
            offset,
            format!("{what} must be an offset in [0, {MAX_OFFSET}]"),
        ));
    }
    Ok(())
}

/// Kafka's `truncateTo` check: "Cannot truncate partition ... to a negative offset".
pub(super) fn check_truncation_offset(tp: &TopicPartition, target: i64) -> Result<()> {
    check_offset("offset", target, format_args!("cannot truncate partition {tp} to a negative offset; the target"))
}

/// Kafka's `fetchOffsetByTimestamp` takes a timestamp >= 0 or one of the special values.
pub(super) fn check_timestamp_query(timestamp: i64) -> Result<()> {
    if timestamp < 0 && ![EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP].contains(&timestamp) {
        return Err(Error::invalid_argument(
            "timestamp",
            timestamp,
            format!(
                "must be a timestamp in [0, {}] (ms), or {EARLIEST_TIMESTAMP} (earliest), {LATEST_TIMESTAMP} \
                 (latest) or {MAX_TIMESTAMP} (max timestamp)",
                i64::MAX
            ),
        ));
    }
    Ok(())
}

/// Kafka's `deleteRecords` (`Partition.deleteRecordsOnLeader`, `maybeIncrementLogStartOffset`):
/// a negative offset, or one past the high watermark, is out of range.
pub(super) fn check_new_log_start(offset: i64, log_start: i64, high_watermark: i64) -> Result<()> {
    if offset < 0 || offset > high_watermark {
        return Err(Error::OffsetOutOfRange { offset, log_start_offset: log_start, log_end_offset: high_watermark });
    }
    Ok(())
}

/// A leader's epoch is -1 (Kafka's `NO_PARTITION_LEADER_EPOCH`) or a non-negative int32.
pub(super) fn check_leader_epoch(leader_epoch: i32) -> Result<()> {
    if leader_epoch < -1 {
        return Err(Error::invalid_argument(
            "leader_epoch",
            leader_epoch,
            format!("must be in [-1, {}] (-1: no leader epoch)", i32::MAX),
        ));
    }
    Ok(())
}

/// A leader append of `records` records at `log_end` must leave a log end offset that fits.
pub(super) fn check_room_for(tp: &TopicPartition, log_end: i64, records: u64) -> Result<()> {
    let room = MAX_OFFSET - log_end;
    if i64::try_from(records).map_or(true, |n| n > room) {
        return Err(Error::invalid_offset(format!(
            "appending {records} records to {tp} at log end offset {log_end} would pass the largest log end \
             offset {MAX_OFFSET} (room for {room} more)"
        )));
    }
    Ok(())
}

/// A follower append must end below `MAX_OFFSET`, so that the log end offset after it fits.
pub(super) fn check_follower_last_offset(tp: &TopicPartition, last_offset: i64) -> Result<()> {
    if last_offset == MAX_OFFSET {
        return Err(Error::invalid_offset(format!(
            "the append to {tp} ends at offset {last_offset}; the last offset must be below {MAX_OFFSET}, \
             the largest log end offset"
        )));
    }
    Ok(())
}

/// A bulk read's range `[start, end)`: both ends must be offsets (the range is then cut to what
/// the log holds).
pub(super) fn check_range(start: i64, end: i64) -> Result<()> {
    check_offset("start", start, "the first offset of a range read")?;
    check_offset("end", end, "the end of a range read")
}

/// An explicit first dirty offset for an on-demand clean (`UnifiedLog.compact_now`) must lie in
/// `[0, log end]`. (A stored cleaner checkpoint outside the log is healed instead, as Kafka's
/// `cleanableOffsets` does: that is the cleaner's own state, not a caller's argument.)
pub fn check_first_dirty_offset(log: &UnifiedLog, offset: i64) -> Result<()> {
    let log_end = log.log_end_offset();
    if !(0..=log_end).contains(&offset) {
        return Err(Error::invalid_argument(
            "first_dirty_offset",
            offset,
            format!(
                "must be an offset in [0, {log_end}] (the log end offset of {}; an offset below the log start \
                 {} starts the clean at the log start)",
                log.topic_partition(),
                log.log_start_offset()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_argument_the_value_and_the_range() {
        let tp = TopicPartition::new("orders", 0);
        let e = check_truncation_offset(&tp, -1).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid value -1 for offset: cannot truncate partition orders-0 to a negative offset; the target \
             must be an offset in [0, 9223372036854775807]"
        );
        assert!(check_truncation_offset(&tp, 0).is_ok());
        let e = check_timestamp_query(-4).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid value -4 for timestamp: must be a timestamp in [0, 9223372036854775807]"),
            "{e}"
        );
        for ok in [-3, -2, -1, 0, i64::MAX] {
            assert!(check_timestamp_query(ok).is_ok(), "{ok}");
        }
        assert!(matches!(check_new_log_start(-1, 0, 5), Err(Error::OffsetOutOfRange { offset: -1, .. })));
        assert!(matches!(check_new_log_start(6, 0, 5), Err(Error::OffsetOutOfRange { offset: 6, .. })));
        assert!(check_new_log_start(5, 0, 5).is_ok());
        assert!(check_room_for(&tp, MAX_OFFSET - 3, 3).is_ok());
        assert!(matches!(check_room_for(&tp, MAX_OFFSET - 3, 4), Err(Error::InvalidOffset { .. })));
        assert!(check_room_for(&tp, 0, u64::MAX).is_err());
        assert!(check_follower_last_offset(&tp, MAX_OFFSET - 1).is_ok());
        assert!(check_follower_last_offset(&tp, MAX_OFFSET).is_err());
        let e = check_range(0, -5).unwrap_err().to_string();
        assert!(e.starts_with("invalid value -5 for end:"), "{e}");
        assert!(check_range(0, 0).is_ok());
        assert!(check_leader_epoch(-1).is_ok() && check_leader_epoch(i32::MAX).is_ok());
        let e = check_leader_epoch(-2).unwrap_err().to_string();
        assert_eq!(e, "invalid value -2 for leader_epoch: must be in [-1, 2147483647] (-1: no leader epoch)");
    }
}
